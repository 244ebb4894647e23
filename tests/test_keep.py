"""ring/transport/keep.py: IPC memory kept for the process's lifetime (segments reused, the
neighbours' kept mapped), checked with stand-ins for the driver; and ipc.Segment on it
under Numba's simulator."""

import numpy as np
import pytest

from ring.cuda.arrays import SIMULATED
from ring.transport.keep import Opened, Spares


class Memory:
    def __init__(self, nbytes):
        self.nbytes, self.cleared = nbytes, 0


def spares():
    made = []

    def allocate(n):
        made.append(Memory(n))
        return made[-1]

    def clear(mem):
        mem.cleared += 1
    return Spares(allocate, clear), made


def test_a_given_back_block_is_taken_again_cleared_with_its_handle():
    s, made = spares()
    a = s.take(0, 4096)
    a.handle = "exported once"
    s.give(a)
    assert s.held() == 4096
    b = s.take(0, 4096)
    assert b is a and b.handle == "exported once" and b.mem.cleared == 1
    assert len(made) == 1 and s.held() == 0


def test_blocks_are_reused_only_for_their_size_and_device():
    s, made = spares()
    a = s.take(0, 4096)
    s.give(a)
    assert s.take(1, 4096) is not a  # another GPU's memory is no use here
    assert s.take(0, 8192) is not a
    assert s.take(0, 4096) is a
    assert s.take(0, 4096) is not a  # a is taken: a block serves one segment at a time
    assert len(made) == 4


def test_a_block_never_given_back_is_not_freed_either():
    """A broken communicator's segment is not given back (a stuck kernel may still write
    into it) and must not be freed: its address, handed to a new segment, is what the
    driver refused to map under MPS."""
    s, made = spares()
    lost = s.take(0, 64)
    assert s.made == [lost]
    assert s.take(0, 64) is not lost and len(s.made) == 2


def test_as_many_blocks_as_were_out_at_once():
    s, made = spares()
    for _ in range(50):
        blocks = [s.take(0, 64) for _ in range(3)]
        for b in blocks:
            s.give(b)
    assert len(made) == 3 and s.held() == 3 * 64


class Handle:
    """Pickles to its key, as an IPC handle travels over MPI (a new object each time)."""
    opened = []

    def __init__(self, key):
        self.key = key

    def open(self):
        Handle.opened.append(self.key)
        return f"mapping of {self.key}"


def test_a_handle_is_opened_once_however_often_it_arrives():
    Handle.opened = []
    o = Opened()
    assert o.open(Handle("a")) == "mapping of a"
    assert o.open(Handle("a")) == "mapping of a"  # the same memory, sent again
    assert o.open(Handle("b")) == "mapping of b"
    assert Handle.opened == ["a", "b"] and len(o) == 2


def test_segments_take_whole_pages_on_a_gpu():
    from ring.transport import ipc
    assert ipc.whole_pages(0) == 0 and ipc.whole_pages(ipc.PAGE) == ipc.PAGE
    assert ipc.whole_pages(ipc.PAGE + 1) == 2 * ipc.PAGE
    assert ipc.PAGE == (1 if SIMULATED else 2 << 20)


@pytest.mark.skipif(not SIMULATED, reason="Numba's simulator (a GPU runs it in tests/mpi)")
def test_a_closed_segments_memory_comes_back_zero_to_the_next():
    """ipc.Segment takes its memory from ipc.SPARES and gives it back at close: the next
    segment of its size gets the same memory, zeroed (a closed link's LL words and
    counters gone), not memory freed and allocated again."""
    from ring.transport import ipc
    first = ipc.Segment(3, 4096)
    mem = first.mem
    mem.copy_to_device(np.full(mem.size, 0xAB, np.uint8))
    first.close()
    first.close()  # twice: given back once
    second, third = ipc.Segment(3, 4096), ipc.Segment(3, 4096)
    assert second.mem is mem and third.mem is not mem
    assert not second.mem.copy_to_host().any()
    second.close()
    third.close()


def test_a_segments_slots_follow_its_header_one_after_another():
    """The stream path's slots on a GPU (ipc.InEnd / OutEnd take them from the segment and
    the neighbour's mapping alike): nslots views of slot_bytes each, from the byte after
    the counters' header, one after another, none overlapping; region() covers them all."""
    from kernels.arrays import address
    from ring.transport import ipc
    seg = ipc.Segment(3, 4096)
    try:
        base = address(seg.mem)
        slots = seg.slots()
        assert [s.size for s in slots] == [4096] * 3
        assert [address(s) - base for s in slots] == [ipc.HEADER + i * 4096 for i in range(3)]
        assert address(seg.region()) - base == ipc.HEADER and seg.region().size == 3 * 4096
        assert seg.header().size * 8 == ipc.HEADER
    finally:
        seg.close()
