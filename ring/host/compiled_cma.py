"""cma's kept calls (ring/host/repeated_cma.py), compiled: the agreement round that carries
x's address (call), then the reads out of the peers' memory by Linux's process_vm_readv,
the folds and the closing round (rest): one call from Python (whole: both, where every
peer is there in call's poll), where the full path (ring/algorithms/cma.py) makes dozens,
as compiled_round.py does for oneshot.

    post     compiled_round's: the call's record and, where this rank sends, the addresses
             of what it posts (x, or its in-place copy) and of out in the data of its slot
    poll,    compiled_round's settle on a plan without a fold (FOLD 0): every peer's
    compare  record compared with this one (WAITING, MISMATCH: Python takes over, as for
             oneshot)
    read     the recipe (ring/recipe.py, in the plan): a copy straight from the peer's
             memory into out; a fold in pieces of `piece` bytes, each source read into its
             row of `parts` (this rank's own straight from x, or copied there where out's
             piece is x's memory), folded in the recipe's order by compiled_round's fold:
             the bits of the full path (ring/algorithms/cma.py) and of oneshot
    close    round seq + 1: this rank's read status (0, an errno, or -1 for a short read) in
             its record's first field, posted; every peer's polled for (LATE: Python waits
             for it, naming who is late), then their statuses looked at (FAILED: a peer, or
             this rank, could not read; Python says which, on every rank)

An all-reduce in two phases (recipe.halves) reads and closes twice: its block from every x,
round seq + 1, then the other blocks from their owners' out, round seq + 2.

The C library's process_vm_readv and errno are called by name from the compiled code (the
process has libc loaded; LLVM resolves them as it does atomic.py's sched_yield), so that
Numba caches these functions as it does the others.
"""

from __future__ import annotations

import os

import numpy as np
from llvmlite import ir
from numba import carray, njit
from numba.core import cgutils, types
from numba.extending import intrinsic

from ringtypes import DTYPES, Op

from ..recipe import recipe
from ..schedule import Collective
from ..transport.atomic import pointer, poll, store_release
from ..transport.exchange import HEADER, RECORD, ROUND1
from .compiled_round import (ANY, BASES, DONE, K, ME, NROW, NSEG, OP, WIDTH, fold_at,
                             memory_status, plan, post, settle, slot_of, wire)

LATE, FAILED = 6, 7  # (after compiled_round's statuses)
SHORT = -1  # a read's status where the kernel copied nothing and said no error


@intrinsic
def _readv(typingctx, pid, iov):
    """process_vm_readv(pid, iov, 1, iov + 16, 1, 0): iov holds the local (address, length)
    then the remote one, as two struct iovec."""
    def codegen(context, builder, sig, args):
        i64, i8p = ir.IntType(64), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(i64, [ir.IntType(32), i8p, i64, i8p, i64, i64])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "process_vm_readv")
        local = builder.inttoptr(args[1], i8p)
        remote = builder.inttoptr(builder.add(args[1], ir.Constant(i64, 16)), i8p)
        one = ir.Constant(i64, 1)
        return builder.call(fn, [builder.trunc(args[0], ir.IntType(32)), local, one, remote,
                                 one, ir.Constant(i64, 0)])
    return types.int64(types.int64, types.int64), codegen


@intrinsic
def _errno(typingctx):
    """The calling thread's errno (glibc's __errno_location)."""
    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module,
                                            ir.FunctionType(i32.as_pointer(), []),
                                            "__errno_location")
        return builder.sext(builder.load(builder.call(fn, [])), ir.IntType(64))
    return types.int64(), codegen


@njit(nogil=True, cache=True)
def read(pid, here, there, nbytes, iov):
    """nbytes at address `there` in process pid into address `here` of this one (iov: 4
    int64s of room): 0, the errno of a refusal, or SHORT. The kernel may copy less than
    asked; the rest is asked for again."""
    done = 0
    while done < nbytes:
        iov[0], iov[1] = here + done, nbytes - done
        iov[2], iov[3] = there + done, nbytes - done
        got = _readv(pid, iov.ctypes.data)
        if got <= 0:
            return _errno() if got < 0 else SHORT
        done += got
    return 0


@intrinsic
def _copy(typingctx, dst, src, nbytes):
    """nbytes from address src to address dst (LLVM's memmove: they may overlap)."""
    def codegen(context, builder, sig, args):
        i8p = ir.IntType(8).as_pointer()
        cgutils.raw_memmove(builder, builder.inttoptr(args[0], i8p),
                            builder.inttoptr(args[1], i8p), args[2], 1)
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64), codegen


@njit(nogil=True, cache=True)
def follow(plan, x, out, seq, field, pids, parts, piece):
    """The plan's recipe, its peers' sources read from their memory at the addresses their
    data of round seq carry (field 0: what they posted of x; 1: their out), this rank's
    from x: 0, or the first read's failure."""
    k, me, op, item = plan[K], plan[ME], plan[OP], out.itemsize
    slot = slot_of(plan, seq)
    at = np.zeros(k, np.int64)
    for q in range(k):
        if q != me:
            at[q] = carray(pointer(plan[BASES + q] + slot + RECORD * 8), 2, np.int64)[field]
    xa, oa = np.int64(x.ctypes.data), np.int64(out.ctypes.data)
    rows = np.int64(parts.ctypes.data)
    iov = np.empty(4, np.int64)
    start = BASES + k + plan[NROW]
    width = plan[WIDTH]
    nsources = (width - 2) // 2
    step = max(1, piece // item)
    for s in range(plan[NSEG]):
        seg = plan[start + s * width:start + (s + 1) * width]
        lo, n = seg[0], seg[1]
        if nsources == 1:
            q, there = seg[2], seg[3] * item
            if q != me:
                err = read(pids[q], oa + lo * item, at[q] + there, n * item, iov)
                if err:
                    return err
            elif oa + lo * item != xa + there:  # (x's own memory: there already)
                _copy(oa + lo * item, xa + there, n * item)
            continue
        starts = np.empty(nsources, np.int64)
        for a in range(0, n, step):
            m = min(step, n - a)
            dst, nbytes = oa + (lo + a) * item, m * item
            for i in range(nsources):
                q, there = seg[2 + 2 * i], (seg[3 + 2 * i] + a) * item
                row = rows + i * piece
                if q != me:
                    err = read(pids[q], row, at[q] + there, nbytes, iov)
                    if err:
                        return err
                    starts[i] = row
                elif xa + there < dst + nbytes and dst < xa + there + nbytes:
                    _copy(row, xa + there, nbytes)  # out's piece is x's: written first
                    starts[i] = row
                else:
                    starts[i] = xa + there
            fold_at(out[lo + a:lo + a + m], op, starts)
    return 0


@njit(nogil=True, cache=True)
def close(plan, status, seq, spins, yields):
    """Post round seq with this rank's read status, poll for every peer's: DONE, LATE (a
    peer not there in the poll: Python waits) or FAILED (a status not 0, this rank's or a
    peer's)."""
    k, me = plan[K], plan[ME]
    slot = slot_of(plan, seq)
    mine = plan[BASES + me]
    carray(pointer(mine + slot), 1, np.int64)[0] = status
    store_release(mine + ROUND1 * 8, seq)
    for q in range(k):
        if q != me:
            spins, yields = poll(plan[BASES + q] + ROUND1 * 8, seq, spins, yields)
            if spins < 0:
                return LATE
    return statuses(plan, seq)


@njit(nogil=True, cache=True)
def statuses(plan, seq):
    """After every rank posted closing round seq: DONE, or FAILED where any read failed."""
    slot = slot_of(plan, seq)
    for q in range(plan[K]):
        if carray(pointer(plan[BASES + q] + slot), 1, np.int64)[0] != 0:
            return FAILED
    return DONE


@njit(nogil=True, cache=True)
def rest(plan, x, out, seq, field, pids, parts, piece, spins, yields, then):
    """What follows call()'s agreement round seq once every record matched: the plan's
    reads (follow's, field its addresses), then round `then` (close's status). One phase:
    the recipe's, then the closing round seq + 1. Two (an all-reduce's, recipe.halves):
    the reduce-scatter's plan from x (field 0), round seq + 1; then the all-gather's from
    the peers' out (field 1), the closing round seq + 2."""
    return close(plan, follow(plan, x, out, seq, field, pids, parts, piece), then, spins,
                 yields)


@njit(nogil=True, cache=True)
def call(plan, x, out, sent, number, seq, spins, yields, memory):
    """Call `number`: out's memory checked against what the signature says (as
    compiled_round.call: ALIASED, APART, OVERLAP, nothing posted), then the agreement round
    seq posted with the addresses of `sent` (what this rank posts: x, or its copy) and of
    out, and settled: DONE, WAITING or MISMATCH, as compiled_round's. rest() follows."""
    status = memory_status(plan, x, out, memory)
    if status != DONE:
        return status
    address = np.empty(2, np.int64)
    address[0], address[1] = sent.ctypes.data, out.ctypes.data
    post(plan, address, number, seq)
    return settle(plan, address[:0], seq, spins, yields)


@njit(nogil=True, cache=True)
def whole(plan, x, out, sent, number, seq, spins, yields, memory, pids, parts, piece):
    """call() and, where its round is DONE, rest()'s first phase (field 0, then round
    seq + 1), in one dispatch: a kept call whose peers are there in the poll is this one
    call from Python. Where call() is not DONE, its status, nothing read (WAITING,
    MISMATCH: Python settles the round, then calls rest; ALIASED, APART, OVERLAP: nothing
    posted); else rest's (DONE, LATE, FAILED: none of call's)."""
    status = call(plan, x, out, sent, number, seq, spins, yields, memory)
    if status != DONE:
        return status
    return rest(plan, x, out, seq, 0, pids, parts, piece, spins, yields, seq + 1)


def warm() -> None:
    """Compile (or load from Numba's cache) cma's calls for every dtype as the compiled code
    sees it (compiled_round.wire), on a private buffer laid out as one rank's segment,
    reading this process's own memory."""
    seg = np.zeros(HEADER + 2 * (RECORD * 8 + 64), np.uint8)
    pids = np.array([os.getpid()], np.int64)
    p, _ = plan(0, RECORD * 8 + 64, Op.SUM, False, np.array([seg.ctypes.data]),
                np.zeros(4, np.int64), segments=recipe(Collective.ALLREDUCE, 1, 0, 0, 2))
    for dt in {wire(d) for d in DTYPES}:
        x = np.zeros(2, dt)
        call(p, x, x.copy(), x, 1, 1, 0, 0, ANY)
        rest(p, x, x.copy(), 1, 0, pids, np.empty(0, np.uint8), 64, 0, 0, 2)
        whole(p, x, x.copy(), x, 3, 3, 0, 0, ANY, pids, np.empty(0, np.uint8), 64)
        statuses(p, 4)
