"""The host ring's walk over a plan, compiled: one Numba call runs every chunk of every
step (executor.py's loop, without Python between chunks), for ranks whose both links are
node-shared memory (transport/shm.py).

The plan is encoded once as a table of units, one row each, in execution order:

    FLAGS   RECV | REDUCE | FINAL | OUT | SEND (schedule.Step's fields)
    N       elements in the chunk
    SRC     where the chunk starts in x (-1: the step reads no input of this rank's), or
            in out where FROM_OUT is set (an all-to-all in place: executor.in_place)
    DST     where it starts in out

and a link array holds what the two shared-memory ends need (slot addresses, the four
counters' addresses, and the chunks received and sent so far). Per unit, as executor.py:
wait until the predecessor has posted the chunk (its counter in my header), wait for a
free slot at the successor (my ACKED counter), apply the step (executor.py's apply_chunk,
the same values in the same order: partial-from-predecessor op own-input), acknowledge
the slot read, post the one written (store-release: the data is visible before the
counter). A peer that is not there within `spins` polls, then `yields` polls each after
sched_yield, leaves the wait to Python (WAIT_RECV / WAIT_SEND), whose waiter is bounded by
the communicator's timeout; the walk then resumes at the same unit.

Dtypes and ops whose values NumPy's own loops define (float16 / bfloat16; floating min
and max, whose NaN and signed-zero choices are NumPy's) keep the Python walk.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import carray, njit

from ringtypes import DTYPES, Op

from ..schedule import Plan, local_slices
from ..transport.atomic import pointer, poll, store_release
from .compiled_round import AVG, combine
from .reduce import walk_compiles

DONE, WAIT_RECV, WAIT_SEND = 0, 1, 2
RECV, REDUCE, FINAL, OUT, SEND, FROM_OUT = 1, 2, 4, 8, 16, 32
FLAGS, N, SRC, DST = range(4)
# the link array
MY_SLOTS, SUCC_SLOTS, NSLOTS, SLOT_BYTES, POSTED_IN, ACKED_OUT, ACKED_IN, POSTED_OUT, \
    RECEIVED, SENT, UNIT = range(11)


@lru_cache(maxsize=256)
def encode(plan: Plan, from_out: tuple[int, ...] = ()) -> np.ndarray:
    """plan.units as the walk's table (cached per plan: plans are cached and immutable).
    from_out: blocks whose input the walk reads from out (a collective that only moves
    data, with out at x's offsets: an all-to-all in place, executor.in_place)."""
    rows = np.empty((len(plan.units), 4), np.int64)
    for i, (_, step, lo, hi) in enumerate(plan.units):
        s_in, s_out = local_slices(plan, step.block, lo, hi)
        moved = s_in is not None and step.block in from_out
        assert not (moved and step.reduce), "from_out: for steps that only move data"
        rows[i] = (RECV * step.recv | REDUCE * step.reduce | FINAL * step.final
                   | OUT * step.out | SEND * step.send | FROM_OUT * moved, hi - lo,
                   -1 if s_in is None else s_in.start, s_out.start)
    rows.flags.writeable = False
    return rows


def link(my_slots: int, succ_slots: int, nslots: int, slot_bytes: int, posted_in: int,
         acked_out: int, acked_in: int, posted_out: int) -> np.ndarray:
    """The link array, from addresses: where my predecessor writes (my slots) and where I
    write (my successor's); the counters POSTED_IN (my header's POSTED, written by the
    predecessor), ACKED_OUT (the predecessor's ACKED, which I write), ACKED_IN (my
    header's ACKED, written by the successor), POSTED_OUT (the successor's POSTED)."""
    return np.array([my_slots, succ_slots, nslots, slot_bytes, posted_in, acked_out,
                     acked_in, posted_out, 0, 0, 0], np.int64)


@njit(inline="always")
def _reduce(op, t, rbuf, s, avg, divisor):
    """t = rbuf op s (avg: then / divisor). In place, the caller passes t as s: one array
    read and written, which LLVM vectorises; two views of the same memory fail its
    run-time overlap check and run element by element (measured: 2 MB in place, 2 ranks,
    404 against 331 us out of place)."""
    if avg:
        for i in range(t.size):
            t[i] = combine(op, rbuf[i], s[i])
            t[i] = t[i] / divisor
    else:
        for i in range(t.size):
            t[i] = combine(op, rbuf[i], s[i])


@njit(inline="always")
def _put(s, d, sbuf, flags):
    """A step that reads this rank's input s: into the output d and / or the slot sbuf."""
    if flags & OUT and d.ctypes.data != s.ctypes.data:
        for i in range(s.size):
            d[i] = s[i]
    if flags & SEND:
        for i in range(s.size):
            sbuf[i] = s[i]


@njit(nogil=True, cache=True)
def walk(units, x, out, link, op, divisor, spins, yields):
    """Run units[link[UNIT]:] (see the module's docstring): DONE, or WAIT_RECV / WAIT_SEND
    with link[UNIT] at the unit that waits."""
    nslots, slot_bytes, isz = link[NSLOTS], link[SLOT_BYTES], out.itemsize
    for u in range(link[UNIT], units.shape[0]):
        flags, n, src, dst = units[u, FLAGS], units[u, N], units[u, SRC], units[u, DST]
        link[UNIT] = u
        if flags & RECV:
            spins, yields = poll(link[POSTED_IN], link[RECEIVED] + 1, spins, yields)
            if spins < 0:
                return WAIT_RECV
        if flags & SEND:
            spins, yields = poll(link[ACKED_IN], link[SENT] - nslots + 1, spins, yields)
            if spins < 0:
                return WAIT_SEND
        slot = (link[SENT] % nslots) * slot_bytes if flags & SEND else 0
        sbuf = carray(pointer(link[SUCC_SLOTS] + slot), n * isz, np.uint8).view(out.dtype)
        d = out[dst:dst + n]
        if not flags & RECV:
            if flags & FROM_OUT:  # one call per array, each with its own view type
                _put(out[src:src + n], d, sbuf, flags)
            else:
                _put(x[src:src + n], d, sbuf, flags)
        else:
            rbuf = carray(pointer(link[MY_SLOTS] + (link[RECEIVED] % nslots) * slot_bytes),
                          n * isz, np.uint8).view(out.dtype)
            t = d if flags & OUT else sbuf
            if flags & REDUCE:
                s = x[src:src + n]
                avg = flags & FINAL and op == AVG
                if s.ctypes.data == t.ctypes.data:  # in place
                    _reduce(op, t, rbuf, t, avg, divisor)
                else:
                    _reduce(op, t, rbuf, s, avg, divisor)
            else:
                for i in range(n):
                    t[i] = rbuf[i]
            if flags & OUT and flags & SEND:
                for i in range(n):
                    sbuf[i] = d[i]
            link[RECEIVED] += 1
            store_release(link[ACKED_OUT], link[RECEIVED])
        if flags & SEND:
            link[SENT] += 1
            store_release(link[POSTED_OUT], link[SENT])
    link[UNIT] = units.shape[0]
    return DONE


def warm() -> None:
    """Compile (or load from Numba's cache) the walk of every dtype it takes, over a
    one-unit plan that touches no slot."""
    units = np.array([[OUT, 2, 0, 0]], np.int64)
    for dt in DTYPES:
        if walk_compiles(dt, Op.SUM):
            x = np.zeros(2, dt)
            walk(units, x, x.copy(), link(0, 0, 1, 0, 0, 0, 0, 0), int(Op.SUM), 1, 0, 0)
