"""transport/messages.py's buffers kept between calls (Scratch): naive, ps and tree receive into memory a
communicator keeps, so a call's time is its messages' and its fold's, not page faults."""

import numpy as np

from ring.transport.messages import Scratch, buffer, own


def test_a_buffer_is_kept_and_grows_only_when_it_must():
    s = Scratch()
    like = np.zeros(100, np.float32)
    a = s.get(0, like)
    assert a.dtype == np.float32 and a.size == 100
    a[:] = 7
    b = s.get(0, np.zeros(10, np.float64))  # fewer bytes: the same memory, another view
    assert b.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    assert b.dtype == np.float64 and b.size == 10
    c = s.get(0, like, 1000)  # more: a new buffer, kept from now on
    assert c.size == 1000 and s.get(0, like, 1000).__array_interface__["data"][0] == \
        c.__array_interface__["data"][0]
    d = s.get(3, like)  # slots are separate memory
    assert not np.may_share_memory(d, c) and len(s.bufs) == 4


def test_without_scratch_each_call_allocates():
    like = np.zeros(5, np.int16)
    assert buffer(None, 0, like).size == 5 and buffer(None, 0, like, 2).dtype == np.int16


def test_own_input_is_copied_only_when_out_is_its_memory():
    s = Scratch()
    x = np.arange(6.0)
    assert own(s, 0, x, np.empty(6)) is x  # apart: read in place
    mine = own(s, 0, x, x)  # in place: out is written while x is read
    assert not np.may_share_memory(mine, x) and mine.tolist() == x.tolist()
