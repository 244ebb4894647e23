"""The persistent ring kernel: one launch runs a rank's whole plan (program.py's table).

The grid is C channels of one thread block each. Channel c owns elements
[c q, (c+1) q) of every chunk of n elements (q = ceil(n / C) in whole 16-byte vectors,
vpart; ceil(n / C) for LL words, part), kept in sub-slot c of the slot (sub_slot(cap, C)
elements from c sub_slot(cap, C), where a slot's data holds cap elements, enough for
C x q, then its LL words: data_base, ll_base and kernel_path.layout), and
has its own pair of counters on each link: the channels are C independent rings over
disjoint parts of the same slots (NCCL's channels).
For every unit of the program, channel c:

    thread 0: wait until POSTED_c (mine) >= in_c + UIN + 1       the chunk has arrived
              wait until ACKED_c (mine) >= out_c + UOUT + 1 - S  the successor's slot is free
    all:      reduce or copy its part: received op own -> successor's slot and/or output
    thread 0: fence, then ACKED_c (pred) := .. + 1, POSTED_c (succ) := .. + 1

(the fences GPU- or system-scoped; the counters read and written relaxed with one
fence.acq_rel a side, as NCCL does, or with RING_KERNEL_SYNC=fence as atomics between
sequentially consistent fences). With ll (small calls, by default; never with
RING_KERNEL_PROTO=simple) a unit has no POSTED counter and no fences: each thread polls
the LL words of its own elements in the slot's LL area until they carry the chunk's flag
(in + 1), and writes its results into the successor's LL area as words flagged out + 1;
the credit (ACKED) is as above.
A unit in which channel c's part of the chunk is empty (n <= c q: a call smaller than the
channels) is the same on both ends of its link, and there the channel only moves its
counters on (fence, ACKED_c (pred) := in + 1, POSTED_c (succ) := out + 1): no wait, so that
an 8-byte call has one channel doing hand-offs instead of C.

POSTED counts chunks written into a rank's slots (written by its predecessor), ACKED the
chunks of a rank that its successor has consumed (written by the successor), as in ipc.py;
counters only grow over the communicator's life. in_c and out_c, the chunks channel c has
received and sent in earlier calls, live in this rank's own header: the channel reads them
when it starts and adds the call's counts when it ends, so the host keeps no count and a
captured launch replays correctly. A wait that outlasts `timeout_ns` writes the
error word (ERR_* below: the first failure wins) and the whole grid stops; the other
channels see the word and stop too.

Numba's simulator runs blocks one after another, which is fine across processes (channel c
of every rank only waits on channel c of its neighbours) and is how `make test` runs it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import config, cuda, types

from kernels.dtypes import kernel_dtype
from kernels.inline import inline
from kernels.reduce import OPS
from kernels.spin import fenced, sync
from kernels.vector import BYTES as VECTOR_BYTES
from kernels.vector import aligned16, load16, store16
from ringtypes import Op

from ..transport.ipc import KERNEL_ACKED, KERNEL_BASE, KERNEL_STRIDE, KERNEL_TOTALS
from .error_word import (ERR_CHANNEL, ERR_CHUNK, ERR_CODE, ERR_LEN, ERR_NEED,  # noqa: F401
                         ERR_SEEN, ERR_STEP, ERR_UNIT, fail)
from .kernel_cache import compiled
from .program import CHUNK, FINAL, FLAGS, N, OUT, RECV, REDUCE, SEND, STEP, UIN, UOUT, WRITE_OUT, X

# Counters of the kernel path in a segment's header (ipc.py): channel c's POSTED at
# BASE + STRIDE c, its ACKED ACKED_AT further, its totals (received, sent) TOTALS further
BASE, STRIDE, ACKED_AT, TOTALS = KERNEL_BASE, KERNEL_STRIDE, KERNEL_ACKED, KERNEL_TOTALS

WAIT_DATA, WAIT_CREDIT, WAIT_LL = 1, 2, 3  # ERR_CODE: what the kernel waited for
# (WAIT_LL: an LL word's flag; ERR_NEED / ERR_SEEN are flags then)


UNROLL = 4  # elements a thread loads before it stores any (bytes in flight per thread)
VECTORS = 2  # with vectors: 16-byte vectors of each array a thread loads before it stores

# The LL protocol (source's ll, a kernel of its own): each element of at most 4 bytes travels in one
# 64-bit word with its flag, the link's running chunk count + 1 (31 bits), stored and polled
# relaxed: no counter and no fence per chunk, NCCL's LL. A channel's LL words for a slot lie
# after the slot's data (kernel_path.slot_bytes), LL_WORDS of them: calls whose every chunk
# gives each channel at most LL_WORDS elements may go so (kernel_path.carries_ll).
LL_WORDS = 16
FLAG_MASK, LOW = (1 << 31) - 1, (1 << 32) - 1
UNSIGNED = {1: (types.uint8, np.uint8), 2: (types.uint16, np.uint16),
            4: (types.uint32, np.uint32), 8: (types.uint64, np.uint64)}


@lru_cache(maxsize=None)
def ring_kernel(op: Op, dtype_name: str, unroll: int = UNROLL, gpu_scope: bool = False,
                acqrel: bool = False, ll: bool = False, vectors: bool = True):
    """The compiled kernel for (op, dtype) (compiled on first request and kept; on a GPU
    also on disk for the next process, kernel_cache.py)."""
    variant = ("persistent", op.name, dtype_name, unroll, gpu_scope, acqrel, ll, vectors)
    return compiled(source(op, dtype_name, unroll, gpu_scope, acqrel, ll, vectors),
                    signature(dtype_name), variant, BOUNDS)


# Launch bounds: up to 1024 threads a block, so at most 64 registers a thread (ptxas spills
# past them), as kernel_path.room counts two blocks of 512 a multiprocessor: every rank's
# kernel must be resident at once, its blocks waiting on the others'. Unbounded, float64
# avg took 72 (before vectors too; tools/compile_kernels.py now compiles as launched).
# None under the simulator (it takes no bounds).
BOUNDS = None if config.ENABLE_CUDASIM else (1024, 1)


def signature(dtype_name: str):
    arr, i64 = kernel_dtype(dtype_name).numba_type[::1], types.int64[::1]
    return types.void(types.int64[:, ::1], arr, arr, arr, arr, i64, i64, i64, i64,
                      types.int64, types.int64, types.int64, types.int64, types.int64,
                      types.float64, i64, i64, types.int64, types.int64,
                      i64, i64, types.int64, types.int64, types.int64)


def source(op: Op, dtype_name: str, unroll: int = UNROLL, gpu_scope: bool = False,
           acqrel: bool = False, ll: bool = False, vectors: bool = True):
    """The kernel for (op, dtype), uncompiled: arguments (program, x, out, inslots, outslots,
    mine, pred, succ, err, recvs, sends, nslots, stride, timeout_ns, divisor, inll, outll,
    slot_words, data_words, board, state, me, k, record), where the slots are 1-D (nslots
    slots, `stride` elements or slot_words int64 words apart, the first data_words words of
    each its data and the rest its LL words: data_base / ll_base; inll / outll: the same
    slots as int64 words, for ll), mine / pred / succ the int64 headers of this rank's, its
    predecessor's and its successor's segments, recvs / sends the program's receives and
    sends (what the call adds to the channel's totals), and board .. record the call board's
    (board.py: every channel posts the call first, and checks that every rank runs it
    before it waits for anything it receives). unroll (1 or 4): the elements, nt apart, each thread loads before it
    stores any: a memory-bound loop runs at the bytes it keeps in flight. gpu_scope: the
    fences around the counters are GPU-scoped (every neighbour runs on this GPU, processes
    under MPS included), not system-scoped (needed across GPUs). acqrel: the counters are
    handed over as NCCL does (kernels.spin.sync: relaxed loads and stores, one fence.acq_rel
    on each side, a pause every 64 polls), not with atomics between sequentially consistent
    fences (kernels.spin.fenced). ll: every chunk goes as LL words (LL_WORDS above; a kernel
    of its own, so that the large calls' kernel keeps its registers). vectors: a channel's
    part moves in 16-byte vectors (kernels/vector.py; VECTORS of each array in flight a
    thread) wherever every array the step touches is 16-byte aligned at the part's start,
    else `unroll` elements at a time; the channel split (vpart) and the sub-slots
    (data_base) are in whole vectors either way, so both ends of a link agree whatever each
    one's alignment."""
    from .board import hand, leave
    kd = kernel_dtype(dtype_name)
    if op is Op.AVG and not kd.floating:
        raise TypeError(f"op avg needs a floating-point dtype, got {dtype_name}")
    if unroll not in (1, 4):
        raise ValueError(f"unroll: 1 or 4, got {unroll}")
    if ll and kd.storage.itemsize > 4:
        raise ValueError(f"ll: elements of at most 4 bytes, got {dtype_name}")
    final = OPS[op](kd)
    middle = OPS[Op.SUM if op is Op.AVG else op](kd)  # avg divides at the final step only
    wide = unroll == 4
    per_word = 8 // kd.storage.itemsize  # elements in an int64 word of a slot
    # an element's bits in an LL word and back (storage of at most 4 bytes: one a word)
    elem, bits_t = kd.storage.type, UNSIGNED[kd.storage.itemsize][0]
    scope = "gpu" if gpu_scope else "sys"
    post, check = hand(scope).post, hand(scope).check
    ll_wait, ll_store = sync(scope).wait_flag, sync(scope).store
    to_bits = bits_of(kd)
    storage, L = kd.numba_type, VECTOR_BYTES // kd.storage.itemsize  # L: lanes of a vector
    # vectors of each array in flight a thread (8-byte types: one; two took float64 max to
    # 72 registers). 1- and 2-byte types keep a vector as its four 32-bit words, each lane
    # shifted out to fold and back in (as 16 separate lanes, uint8 min's vector loop spilled).
    # Within BOUNDS' 64 registers no vector loop spills (tools/compile_kernels.py reads the SASS)
    U = 1 if L == 2 else VECTORS
    narrow = L > 4
    LW = 4 if narrow else L  # a vector's lanes in the local arrays, and their type
    lane_t = types.uint32 if narrow else kd.numba_type
    V = U * LW
    PER, BITS = 4 // kd.storage.itemsize, 8 * kd.storage.itemsize  # (narrow) lanes a word
    MASK = (1 << BITS) - 1

    @inline
    def from_bits(w):
        tmp = cuda.local.array(1, bits_t)
        tmp[0] = w & LOW
        return tmp.view(elem)[0]

    @inline
    def fold_lanes(f, va, vb, s, div):
        """The vector at va[s] folded with x's at vb[s], lane by lane."""
        for j in range(s, s + L):
            va[j] = fold(f, va[j], vb[j], div)

    @inline
    def fold_words(f, va, vb, s, div):
        """The same for a vector held as four words: each lane shifted out and back in."""
        for w in range(s, s + 4):
            r = types.uint32(0)
            for i in range(PER):
                a = storage((va[w] >> (i * BITS)) & MASK)
                b = storage((vb[w] >> (i * BITS)) & MASK)
                r |= (types.uint32(fold(f, a, b, div)) & MASK) << (i * BITS)
            va[w] = r

    folds = fold_words if narrow else fold_lanes
    hand = (sync if acqrel else fenced)(scope)
    fence, wait, publish = hand.fence, hand.wait_geq, hand.publish

    @inline
    def waited(counters, at, need, timeout_ns, err, code, c, i, prog):
        """Wait until counters[at] >= need: 1, or 0 with the grid's error word written."""
        seen = wait(counters, at, need, timeout_ns, err)
        if seen < need:
            fail(err, code, c, i, prog[i, CHUNK], prog[i, STEP], need, seen)
            return 0
        return 1

    @inline
    def fold(f, v, w, div):
        """A received element v folded with x's w: the final op at the last step."""
        if f & FINAL:
            return final(v, w, div)
        return middle(v, w, div)

    def kernel(prog, x, out, inslots, outslots, mine, pred, succ, err, recvs, sends,
               nslots, stride, timeout_ns, div, inll, outll, slot_words, data_words, board,
               state, me, k, record):
        c, nch = cuda.blockIdx.x, cuda.gridDim.x
        t, nt = cuda.threadIdx.x, cuda.blockDim.x
        # ok[0]: the unit may start (thread 0's waits); ok[1]: no LL word timed out. Two
        # words, so that a thread that fails in the LL loop cannot flip the start check
        # of a thread that has not read it yet (it would leave, and miss the barrier)
        ok = cuda.shared.array(2, types.int64)
        totals = cuda.shared.array(2, types.int64)
        # the call board's (board.py): this launch's number, and whether thread 0 has
        # checked every rank's word (before the first unit that receives: what this channel
        # sends before it lands in the successor's slots only, which the successor's kernel
        # reads after its own check). Shared, not registers: the vector loops have none spare
        called = cuda.shared.array(2, types.int64)
        va = cuda.local.array(V, lane_t)  # vectors in flight: received (or x's)
        vb = cuda.local.array(V, lane_t)  # x's, to fold with them
        p_in, a_out = BASE + STRIDE * c, BASE + STRIDE * c + ACKED_AT
        tot = BASE + STRIDE * c + TOTALS
        if t == 0:  # written by this rank's earlier launches only, on the same stream
            totals[0] = mine[tot]
            totals[1] = mine[tot + 1]
            called[0] = post(board, state, me, k, record)  # this rank's call, on the board
            called[1] = 0
        cuda.syncthreads()
        base_in, base_out = totals[0], totals[1]
        for i in range(prog.shape[0]):
            f, n = prog[i, FLAGS], prog[i, N]
            uin, uout = base_in + prog[i, UIN], base_out + prog[i, UOUT]
            lo, hi = part(n, c, nch) if ll else vpart(n, c, nch, L)
            if lo >= hi:  # none of the chunk is this channel's (a small call's other
                # channels), on either end of the link: no wait, only the counters moved on,
                # as if it had come and gone (ACKED: the sender's credit may wait for it)
                if t == 0:
                    fence()  # release, as after a unit's data
                    if f & RECV:
                        publish(pred, a_out, uin + 1)
                    if f & SEND and not ll:
                        publish(succ, p_in, uout + 1)
                continue
            if ll:  # the chunk as flagged words: each thread waits for its own elements
                if t == 0:
                    good = 1
                    if f & RECV and called[1] == 0:  # every rank's call, before its data
                        good = check(board, me, k, record, called[0], timeout_ns, err)
                        called[1] = 1
                    if good == 1 and f & SEND and uout >= nslots:
                        good = waited(mine, a_out, uout + 1 - nslots, timeout_ns, err,
                                      WAIT_CREDIT, c, i, prog)
                        fence()  # acquire: the successor's reads of the slot came first
                    ok[0] = good
                    ok[1] = 1
                cuda.syncthreads()
                if ok[0] == 0:
                    return
                wi = _ll_base(uin % nslots, c, slot_words, data_words) - lo
                wo = _ll_base(uout % nslots, c, slot_words, data_words) - lo
                fin, fout = (uin + 1) & FLAG_MASK, ((uout + 1) & FLAG_MASK) << 32
                xo, oo = prog[i, X], prog[i, OUT]
                e = lo + t
                while e < hi:
                    if f & RECV:
                        w = ll_wait(inll, wi + e, fin, timeout_ns, err)
                        if (w >> 32) != fin:
                            ok[1] = 0
                            fail(err, WAIT_LL, c, i, prog[i, CHUNK], prog[i, STEP],
                                  fin, w >> 32)
                            break
                        v = from_bits(w)
                        if f & REDUCE:
                            v = fold(f, v, x[xo + e], div)
                    else:
                        v = x[xo + e]
                    if f & WRITE_OUT:
                        out[oo + e] = v
                    if f & SEND:
                        ll_store(outll, wo + e, fout | to_bits(v))
                    e += nt
                cuda.syncthreads()
                if ok[1] == 0:
                    return
                if t == 0 and f & RECV:
                    publish(pred, a_out, uin + 1)  # the slot is free again
                continue
            if t == 0:
                good = 1
                if f & RECV and called[1] == 0:  # every rank's call, before its data
                    good = check(board, me, k, record, called[0], timeout_ns, err)
                    called[1] = 1
                if good == 1 and f & RECV:
                    good = waited(mine, p_in, uin + 1, timeout_ns, err, WAIT_DATA, c, i, prog)
                if good == 1 and f & SEND and uout >= nslots:
                    good = waited(mine, a_out, uout + 1 - nslots, timeout_ns, err,
                                  WAIT_CREDIT, c, i, prog)
                ok[0] = good
                fence()  # acquire: the slot is read after the counter
            cuda.syncthreads()
            if ok[0] == 0:
                return
            # this channel's part of the chunk, and where it sits in a slot: at the same
            # place for every chunk (a fixed sub-slot per channel), so that a channel that
            # runs ahead never writes where a slower channel still reads
            # data_base(s, ...) as s * stride + data_base(0, ...): 8 registers fewer
            at = _data_base(0, c, nch, stride, data_words * per_word, L) - lo
            rs, ss = (uin % nslots) * stride + at, (uout % nslots) * stride + at
            xo, oo = prog[i, X], prog[i, OUT]
            e = lo + t
            # 16-byte vectors where every array the step touches is aligned at lo (the
            # slots are, where the segment's base is: stride and sub-slots in whole vectors)
            if vectors and (not (f & RECV) or aligned16(inslots, rs + lo)) and \
                    (not (f & SEND) or aligned16(outslots, ss + lo)) and \
                    (xo < 0 or aligned16(x, xo + lo)) and \
                    (not (f & WRITE_OUT) or aligned16(out, oo + lo)):
                full = lo + (hi - lo) // L * L
                e0 = lo + t * L
                while e0 < full:
                    for u in range(U):  # every load in flight before the first store
                        ev = e0 + u * nt * L
                        if ev < full:
                            if f & RECV:
                                load16(va, u * LW, inslots, rs + ev)
                                if f & REDUCE:
                                    load16(vb, u * LW, x, xo + ev)
                            else:
                                load16(va, u * LW, x, xo + ev)
                    for u in range(U):
                        ev = e0 + u * nt * L
                        if ev < full:
                            if f & RECV and f & REDUCE:
                                folds(f, va, vb, u * LW, div)
                            if f & WRITE_OUT:
                                store16(out, oo + ev, va, u * LW)
                            if f & SEND:
                                store16(outslots, ss + ev, va, u * LW)
                    e0 += nt * L * U
                e = full + t  # the part's last few elements, one a thread
            if wide:  # four loads in flight before the first store
                while e + 3 * nt < hi:
                    e1, e2, e3 = e + nt, e + 2 * nt, e + 3 * nt
                    if f & RECV:
                        v0, v1 = inslots[rs + e], inslots[rs + e1]
                        v2, v3 = inslots[rs + e2], inslots[rs + e3]
                        if f & REDUCE:
                            w0, w1, w2, w3 = x[xo + e], x[xo + e1], x[xo + e2], x[xo + e3]
                            v0, v1 = fold(f, v0, w0, div), fold(f, v1, w1, div)
                            v2, v3 = fold(f, v2, w2, div), fold(f, v3, w3, div)
                    else:
                        v0, v1, v2, v3 = x[xo + e], x[xo + e1], x[xo + e2], x[xo + e3]
                    if f & WRITE_OUT:
                        out[oo + e], out[oo + e1], out[oo + e2], out[oo + e3] = v0, v1, v2, v3
                    if f & SEND:
                        outslots[ss + e], outslots[ss + e1] = v0, v1
                        outslots[ss + e2], outslots[ss + e3] = v2, v3
                    e += 4 * nt
            while e < hi:
                if f & RECV:
                    v = inslots[rs + e]
                    if f & REDUCE:
                        v = fold(f, v, x[xo + e], div)
                else:
                    v = x[xo + e]
                if f & WRITE_OUT:
                    out[oo + e] = v
                if f & SEND:
                    outslots[ss + e] = v
                e += nt
            cuda.syncthreads()
            if t == 0:
                fence()  # release: the data before the counter
                if f & RECV:
                    publish(pred, a_out, uin + 1)
                if f & SEND:
                    publish(succ, p_in, uout + 1)
        if t == 0:
            if called[1] == 0:  # (a channel that received nothing: checked here)
                if check(board, me, k, record, called[0], timeout_ns, err) == 0:
                    return
            mine[tot] = base_in + recvs
            mine[tot + 1] = base_out + sends
            leave(state)

    return kernel


def data_base(s, c, nch, stride, cap, lanes):
    """Where channel c's sub-slot of slot s begins, in elements of the slots' storage: slots
    `stride` elements apart (the whole slot, LL words included), each holding cap elements
    of data at its start, cut into nch sub-slots of sub_slot(cap, nch, lanes)."""
    return s * stride + c * (cap // nch // lanes * lanes)


def sub_slot(cap, nch, lanes):
    """A channel's sub-slot, in elements: cap // nch, cut to whole 16-byte vectors (of
    `lanes` elements), so that each starts 16-byte aligned where the slot does."""
    return cap // nch // lanes * lanes


def ll_base(s, c, slot_words, data_words):
    """Where channel c's LL words of slot s begin, in int64 words: after the slot's data."""
    return s * slot_words + data_words + c * LL_WORDS


_data_base = inline(data_base)
_ll_base = inline(ll_base)


def bits_of(kd):
    """A device function: a value of kd's storage as the int64 of its bits (zero-extended:
    an LL word's low bits)."""
    storage_t, bits_np = kd.numba_type, UNSIGNED[kd.storage.itemsize][1]

    @inline
    def to_bits(v):
        tmp = cuda.local.array(1, storage_t)
        tmp[0] = v
        return types.int64(tmp.view(bits_np)[0])
    return to_bits


@inline
def part(n, c, nch):
    """Channel c's elements [lo, hi) of a chunk of n, in nch channels of ceil(n / nch)."""
    q = (n + nch - 1) // nch
    lo = min(n, c * q)
    return lo, min(n, lo + q)


@cuda.jit(device=True)
def vpart(n, c, nch, lanes):
    """The simple protocol's split: channel c's elements [lo, hi) of a chunk of n, in nch
    channels of ceil(n / nch) rounded up to whole 16-byte vectors of `lanes` elements (a
    part starts where a vector does, whatever the channel)."""
    q = (n + nch - 1) // nch
    q = (q + lanes - 1) // lanes * lanes
    lo = min(n, c * q)
    return lo, min(n, lo + q)
