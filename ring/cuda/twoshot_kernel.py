"""The two-shot all-reduce as one kernel: each rank reduces its own block of the K inputs
and writes it into every rank's output (a push two-shot: reduce-scatter, then all-gather,
with flag barriers at their ends and none in between).

Every rank's arrays the others read or write are mapped in every rank (CUDA IPC; under
Numba's simulator MPI shared memory, as ring/cuda/areas.py): the communicator's own areas
(x staged into them, the result copied out of them), or, where every rank's x (out) lies in
the same registration (comm.register, ring/cuda/registered.py), the user's buffers
themselves, read (written) in place at each rank's own offset. The call runs in rounds of
at most CAP elements (one round where x and out are both in place); in each, thread block b
of every rank takes sub-slice b of every rank's block (part(): the blocks K-th of the
round, the sub-slices G-th of a block), so that each wait is between the blocks of one
index:

  0. the call board (board.py): every rank runs this call, else MISMATCH in the error
     word, on every rank, before the kernel writes anything into a peer's memory or reads
     any of its data (the host's agreement need not catch it); then the record (once per
     call): x's and out's registration and offset into every peer's flags; fence; flag
     RECORD[me][b]; wait for every peer's. x (out) is in place where every record names the
     same registration for it: the same decision on every rank.
  1. stage (x not in place): x's sub-slices b of every block into this rank's input area;
     fence; flag STAGED[me][b] = seq in every peer's flags, and wait for every peer's
     (bounded: the error word). With x in place, only the flags (the next round's output
     areas are free once every rank has passed them; with out in place too, no step 1).
  2. reduce: fold sub-slice b of this rank's block from the K inputs (areas, or the
     registered x of every rank) in rank order, ((x0 op x1) op x2) ... op x(K-1), avg
     dividing once at the end: the same bits on every rank; write it into every rank's
     output area (or registered out); fence; flag WRITTEN[me][b] = seq in every peer's flags
  3. gather (out not in place): wait for WRITTEN[q][b] = seq from every peer; copy
     sub-slice b of every block from this rank's output area into out.

Single buffers suffice: a rank's block b overwrites its input area's sub-slices b (round
s + 1, step 1) only after its step 3 of round s saw every peer's WRITTEN[.][b], which each
peer's block b wrote after it had read them (step 2); a peer writes this rank's output area
(round s + 1, step 2) only after this rank's STAGED of round s + 1, set after its step 3 of
round s. In place, the same two barriers guard the user's buffers: a peer reads this rank's
x and writes its out only between this rank's RECORD (its kernel started: the stream's
earlier work on them done) and its WRITTEN (after which nothing of the call touches them).
The sequence numbers live on the GPU (`seqs`, per block): the launch never changes (kept
for repeated calls, capturable in a graph).

The same steps make the two halves alone (reduce_scatter, all_gather below; a kernel each):
the reduce-scatter stages x's blocks (block q of the round at q cap of the input area: cap
is then a block's share of the area), folds block me of the K inputs straight into its own
out and waits at WRITTEN (every peer has read its area, or its x in place, before anyone
stages again or leaves); the all-gather pushes x into block me of every rank's output area
(or registered out), WRITTEN, and copies the K blocks out (STAGED before every round after
the first: the areas read out). In place, x is read (out written) by the peers between the
same two barriers.

Data moves in 16-byte vectors (kernels/vector.py) wherever the arrays a step touches start
16-byte aligned: the areas always; x and out as each rank's record says (a staged x is
copied in vectors where this rank's is aligned, a registered one read in vectors where every
rank's is). The reduce keeps U vectors from each of the K ranks in flight a thread (all
loaded before the first sum; 1- and 2-byte types as 32-bit words, each lane shifted out to
compute and back in), the copies C (as words: no lane is split out). Sub-slices are cut in
whole vectors, so only a round's last few elements, and arrays that are not aligned, go an
element at a time. Within the 64 registers a thread the launch bounds allow, no innermost
vector loop spills, whatever the dtype (tools/compile_kernels.py checks the 16-byte loads
and stores, and reads the spills in the SASS; held as 8-16 separate lanes a vector, the 1-
and 2-byte types' did).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types

from kernels.arrays import address
from kernels.dtypes import kernel_dtype
from kernels.inline import inline_ir
from kernels.reduce import OPS
from kernels.spin import sync
from kernels.vector import aligned, lanes, load16, store16
from ringtypes import Op

from ..options import env_whole
from ..schedule import Collective

from .arrays import SIMULATED
from .board import hand as on_board
from .board import leave
from .error_word import fail, timeout_ns
from .kernel_cache import compiled
from .persistent import part
from .together import together

# Elements of a round at most, in bytes of the areas (each rank: an input area, an output
# area, and its flags): on a GPU 32 MiB each; under the simulator 1 KiB, so that a call of
# a few hundred elements runs in several rounds.
CAP_BYTES = 1 << 10 if SIMULATED else 32 << 20
SHAPE = (2, 4) if SIMULATED else (1024, 512)  # blocks x threads at most (TwoShot.blocks)
# the error word's codes (ERR_UNIT: the peer)
WAIT_STAGED, WAIT_WRITTEN, WAIT_RECORD = 5, 6, 8
STAGED, WRITTEN, RECORD = 0, 1, 2  # the kinds of flag: (kind, rank, block) at
# ((kind * K + rank) * blocks + block); then the records: (rank, block)'s PW words at
# 3 K blocks + (rank * blocks + block) * PW: [x's registration, x's offset in it, out's
# registration, out's offset, alignment (bit 0: x, bit 1: out)] (a registration's index, or
# -1: staged)
PW = 8
VECTORS = 4  # 16-byte vectors a thread keeps in flight (reduce: from every rank together)


# two blocks of SHAPE's threads per multiprocessor (at most 64 registers a thread), as
# kernel_path.room counts when TwoShot.blocks sizes the grid: unbounded, it took 70
# (tools/compile_kernels.py checks); None under the simulator (it takes no bounds)
BOUNDS = None if SIMULATED else (SHAPE[1], 1024 // SHAPE[1])


@lru_cache(maxsize=None)
def twoshot_kernel(op: Op, dtype_name: str, k: int, collective=Collective.ALLREDUCE):
    """The compiled kernel of twoshot_source (compiled on first request and kept; on a GPU
    also on disk for the next process, kernel_cache.py)."""
    fn, sig = twoshot_source(op, dtype_name, k, collective)
    return compiled(fn, sig, ("twoshot", op.name, dtype_name, k, collective.name), BOUNDS)


def twoshot_source(op: Op, dtype_name: str, k: int, collective=Collective.ALLREDUCE):
    """(the kernel's function, its signature) for (op, dtype, K ranks, the collective:
    all-reduce, or reduce-scatter / all-gather: the module's end): kernel(x, out, ins, outs, xs, ys,
    flags, seqs, n, me, cap, timeout_ns, div, err, rx, ox, ro, oo, al, board, state,
    record_hash) (reduce-scatter and all-gather: n a block's elements, cap a round's of a
    block); ins / outs /
    flags: every rank's input area, output area and flags (this rank's at `me`); xs / ys:
    every rank's allocation of the registration that holds this rank's x / out (rx / ro: its
    index, -1 for none: then the areas stand in), ox / oo: x's / out's element offset in it;
    al: bit 0 / 1 set where x / out starts 16-byte aligned (vectors); board, state,
    record_hash: the call board's (board.py)."""
    kd = kernel_dtype(dtype_name)
    if op is Op.AVG and not kd.floating:
        raise TypeError(f"op avg needs a floating-point dtype, got {dtype_name}")
    last = OPS[op](kd)
    mid = OPS[Op.SUM](kd) if op is Op.AVG else last  # avg: sums, then the dividing sum
    hand = sync("sys")
    enter = on_board("sys").enter
    store, fence, wait_geq = hand.store, hand.fence, hand.wait_geq
    storage, L = kd.numba_type, lanes(kd.storage)  # L: elements in a 16-byte vector
    U = max(1, VECTORS // k)  # a reduce's vectors in flight a thread: U from each rank
    C = 2  # a copy's (4: more spills around the loops)
    # 1- and 2-byte types keep a vector as its four 32-bit words, each lane shifted out to
    # compute and back in (held as 8-16 separate lanes, they spilled in the reduce loop)
    narrow = L > 4
    LW = 4 if narrow else L  # a vector's lanes in the local arrays, and their type
    lane_t = types.uint32 if narrow else storage
    V, W = k * U * LW, 4 * C  # the local arrays: a reduce's vectors, a copy's 32-bit words
    PER, BITS = 4 // kd.storage.itemsize, 8 * kd.storage.itemsize  # (narrow) lanes a word
    MASK = (1 << BITS) - 1

    @inline_ir
    def fold_lanes(vals, s, div):
        """Every rank's vector (rank q's at vals[q U L + s]) folded in rank order into rank
        0's, lane by lane."""
        for i in range(s, s + L):
            acc = vals[i]
            for q in range(1, k):
                v = vals[q * U * L + i]
                acc = last(acc, v, div) if q == k - 1 else mid(acc, v, div)
            vals[i] = acc

    @inline_ir
    def fold_words(vals, s, div):
        """The same for vectors held as four words: each lane shifted out and back in."""
        for w in range(s, s + 4):
            r = types.uint32(0)
            for i in range(PER):  # lane i of word w, of every rank's
                acc = storage((vals[w] >> (i * BITS)) & MASK)
                for q in range(1, k):
                    v = storage((vals[q * U * 4 + w] >> (i * BITS)) & MASK)
                    acc = last(acc, v, div) if q == k - 1 else mid(acc, v, div)
                r |= (types.uint32(acc) & MASK) << (i * BITS)
            vals[w] = r

    folds = fold_words if narrow else fold_lanes

    @inline_ir
    def sub(rn, q, b, nb):
        """[lo, hi) of the round's elements: sub-slice b of block q, cut in whole vectors of
        L (lo a multiple of L; hi too, but for the round's last element)."""
        qlo, qhi = part((rn + L - 1) // L, q, k)
        lo, hi = part(qhi - qlo, b, nb)
        return min(rn, (qlo + lo) * L), min(rn, (qlo + hi) * L)

    @inline_ir
    def copy(dst, do, src, so, lo, hi, vec, buf):
        """dst[do + e] = src[so + e] for e in [lo, hi) (lo a multiple of L), by the block's
        threads: with vec (both ends 16-byte aligned at e = 0), C vectors in flight a
        thread (as words, in buf), then single elements for what is left."""
        t, nt = cuda.threadIdx.x, cuda.blockDim.x
        full = lo + (hi - lo) // L * L if vec else lo
        e0 = lo + t * L  # (a while loop: range's trip count costs registers)
        while e0 < full:
            for u in range(C):
                e = e0 + u * nt * L
                if e < full:
                    load16(buf, u * 4, src, so + e)
            for u in range(C):
                e = e0 + u * nt * L
                if e < full:
                    store16(dst, do + e, buf, u * 4)
            e0 += nt * L * C
        for e in range(full + t, hi, nt):
            dst[do + e] = src[so + e]

    @inline_ir
    def barrier(flags, me, kind, b, nb, seq, timeout_ns, err, j):
        """Thread 0: flag (kind, me, b) = seq in every peer's flags, then wait for every
        peer's (kind, q, b): 1, or 0 with the error word written."""
        fence()  # release: what this block wrote before the flags
        for p in range(k):
            if p != me:
                store(flags[p], (kind * k + me) * nb + b, seq)
        mine = flags[me]
        for q in range(k):
            if q != me:
                seen = wait_geq(mine, (kind * k + q) * nb + b, seq, timeout_ns, err)
                if seen < seq:
                    fail(err, WAIT_RECORD if kind == RECORD else
                         WAIT_STAGED if kind == STAGED else WAIT_WRITTEN, b, q, j, kind, seq,
                         seen)
                    return 0
        fence()  # acquire: what the peers wrote before their flags
        return 1

    @inline_ir
    def passed(ok, flags, me, kind, b, nb, seq, timeout_ns, err, j):
        """Every thread of the block, its writes done: thread 0's barrier(), its verdict."""
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            ok[0] = barrier(flags, me, kind, b, nb, seq, timeout_ns, err, j)
        cuda.syncthreads()
        return ok[0]

    @inline_ir
    def record(ok, flags, me, b, nb, seq, timeout_ns, err, rx, ox, ro, oo, al, offx, offo):
        """Thread 0: this rank's record into every peer's flags (after the flags: which
        registration x and out are in and where, whether they are 16-byte aligned),
        flagged; every peer's read back. ok[0]: 1, or 0 with the error word written (a wait
        past the timeout); ok[1] / ok[2]: x / out in place (every record names
        the same registration for it); ok[3] / ok[4]: every rank's x / out aligned."""
        ok[0], ok[1], ok[2], ok[3], ok[4] = 0, 1 if rx >= 0 else 0, 1 if ro >= 0 else 0, al & 1, \
            (al >> 1) & 1
        for p in range(k):
            if p != me:
                pay = 3 * k * nb + ((me * nb + b) * PW)
                store(flags[p], pay, rx)
                store(flags[p], pay + 1, ox)
                store(flags[p], pay + 2, ro)
                store(flags[p], pay + 3, oo)
                store(flags[p], pay + 4, al)
        if barrier(flags, me, RECORD, b, nb, seq, timeout_ns, err, 0) == 0:
            return
        for q in range(k):
            pay = 3 * k * nb + ((q * nb + b) * PW)
            if q == me:
                offx[q], offo[q] = ox, oo
                continue
            offx[q], offo[q] = flags[me][pay + 1], flags[me][pay + 3]
            if flags[me][pay] != rx:
                ok[1] = 0
            if flags[me][pay + 2] != ro:
                ok[2] = 0
            theirs = flags[me][pay + 4]
            ok[3], ok[4] = ok[3] & theirs, ok[4] & (theirs >> 1)
        ok[0] = 1

    @inline_ir
    def begin(ok, offx, offo, flags, me, seq, timeout_ns, err, rx, ox, ro, oo, al, board,
              state, record_hash):
        """Step 0, every kernel's: thread 0 checks that every rank runs this call (the call
        board), then exchanges the records (where this rank's x and out are); ok, offx,
        offo as record() leaves them, for every thread of the block."""
        if cuda.threadIdx.x == 0:
            ok[0] = enter(board, state, me, k, record_hash, timeout_ns, err)
            if ok[0] == 1:
                record(ok, flags, me, cuda.blockIdx.x, cuda.gridDim.x, seq, timeout_ns, err,
                       rx, ox, ro, oo, al, offx, offo)
        cuda.syncthreads()

    @inline_ir
    def end(seqs, seq, state):
        """Every kernel's last step: the block's sequence number kept for the next launch,
        and the launch's leave() (board.py)."""
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            seqs[cuda.blockIdx.x] = seq
            leave(state)

    def kernel(x, out, ins, outs, xs, ys, flags, seqs, n, me, cap, timeout_ns, div, err,
               rx, ox, ro, oo, al, board, state, record_hash):
        b, nb = cuda.blockIdx.x, cuda.gridDim.x
        t, nt = cuda.threadIdx.x, cuda.blockDim.x
        # went well; x in place; out in place; every rank's x aligned; every rank's out aligned
        ok = cuda.shared.array(5, types.int64)
        offx = cuda.shared.array(k, types.int64)
        offo = cuda.shared.array(k, types.int64)
        vals = cuda.local.array(V, lane_t)  # the vectors in flight: (rank, u) at (q U + u) LW
        words = cuda.local.array(W, types.uint32)  # a copy's vectors, as 32-bit words
        seq = seqs[b] + 1
        begin(ok, offx, offo, flags, me, seq, timeout_ns, err, rx, ox, ro, oo, al, board,
              state, record_hash)
        inx, ino = ok[1] != 0, ok[2] != 0
        # vectors where every array the step reads or writes is aligned at element 0 of the
        # round (the areas always are; a round starts at a multiple of cap, itself of L)
        vstage, vgather = (al & 1) != 0, (al & 2) != 0
        vreduce = (ok[3] != 0 or not inx) and (ok[4] != 0 or not ino)
        step = max(n, 1) if inx and ino else cap  # in place both ways: no area, one round
        # at least one round, so at least one WRITTEN barrier: a peer must not leave (and
        # write its next call's record here) before every rank has read this call's
        rounds = 0 if ok[0] == 0 else max(1, (n + step - 1) // step)
        for j in range(rounds):
            r0 = j * step
            rn = min(step, n - r0)
            if not (inx and ino):
                if not inx:
                    for q in range(k):  # 1. stage sub-slice b of every block
                        lo, hi = sub(rn, q, b, nb)
                        copy(ins[me], 0, x, r0, lo, hi, vstage, words)
                seq += 1
                if passed(ok, flags, me, STAGED, b, nb, seq, timeout_ns, err, j) == 0:
                    break
            lo, hi = sub(rn, me, b, nb)  # 2. reduce sub-slice b of this rank's block
            full = lo + (hi - lo) // L * L if vreduce else lo
            e0 = lo + t * L
            while e0 < full:
                for u in range(U):  # every rank's U vectors in flight, then the sums
                    e = e0 + u * nt * L
                    if e < full:
                        for q in range(k):
                            if inx:
                                load16(vals, (q * U + u) * LW, xs[q], offx[q] + r0 + e)
                            else:
                                load16(vals, (q * U + u) * LW, ins[q], e)
                for u in range(U):
                    e = e0 + u * nt * L
                    if e < full:
                        folds(vals, u * LW, div)
                        for p in range(k):
                            if ino:
                                store16(ys[p], offo[p] + r0 + e, vals, u * LW)
                            else:
                                store16(outs[p], e, vals, u * LW)
                e0 += nt * L * U
            for e in range(full + t, hi, nt):  # what is left, an element a thread
                acc = xs[0][offx[0] + r0 + e] if inx else ins[0][e]
                for q in range(1, k):
                    v = xs[q][offx[q] + r0 + e] if inx else ins[q][e]
                    acc = last(acc, v, div) if q == k - 1 else mid(acc, v, div)
                for p in range(k):
                    if ino:
                        ys[p][offo[p] + r0 + e] = acc
                    else:
                        outs[p][e] = acc
            seq += 1
            if passed(ok, flags, me, WRITTEN, b, nb, seq, timeout_ns, err, j) == 0:
                break
            if not ino:
                for q in range(k):  # 3. every block's sub-slice b into out
                    lo, hi = sub(rn, q, b, nb)
                    copy(out, r0, outs[me], 0, lo, hi, vgather, words)
        end(seqs, seq, state)

    @inline_ir
    def piece(rn, b, nb):
        """[lo, hi) of a block's rn elements of the round: sub-slice b, cut in whole
        vectors of L (lo a multiple of L; hi too, but for the block's last element)."""
        lo, hi = part((rn + L - 1) // L, b, nb)
        return min(rn, lo * L), min(rn, hi * L)

    def reduce_scatter(x, out, ins, outs, xs, ys, flags, seqs, n, me, cap, timeout_ns, div,
                       err, rx, ox, ro, oo, al, board, state, record_hash):
        """Rank me's block of the reduced array: block me (n elements, x[me n:(me+1) n]) of
        every rank's x folded in rank order, into out (this rank's: never another's). In
        rounds of cap elements of every block: 1. x's blocks staged into this rank's input
        area (block q at q cap), STAGED; 2. the fold, from the areas or (x registered on
        every rank) from every rank's x in place; WRITTEN: every peer has read what it
        needs of this rank's area (or x) before anyone stages the next round or leaves."""
        b, nb = cuda.blockIdx.x, cuda.gridDim.x
        t, nt = cuda.threadIdx.x, cuda.blockDim.x
        ok = cuda.shared.array(5, types.int64)
        offx = cuda.shared.array(k, types.int64)
        offo = cuda.shared.array(k, types.int64)
        vals = cuda.local.array(V, lane_t)
        words = cuda.local.array(W, types.uint32)
        seq = seqs[b] + 1
        begin(ok, offx, offo, flags, me, seq, timeout_ns, err, rx, ox, ro, oo, al, board,
              state, record_hash)
        inx = ok[1] != 0
        vstage = (al & 1) != 0  # (bit 0: x aligned at every block's start; bit 1: out)
        vreduce = (ok[3] != 0 or not inx) and (al & 2) != 0
        step = max(n, 1) if inx else cap
        rounds = 0 if ok[0] == 0 else max(1, (n + step - 1) // step)
        for j in range(rounds):
            r0 = j * step
            rn = min(step, n - r0)
            lo, hi = piece(rn, b, nb)
            if not inx:
                for q in range(k):  # 1. stage sub-slice b of every block's round
                    copy(ins[me], q * cap, x, q * n + r0, lo, hi, vstage, words)
                seq += 1
                if passed(ok, flags, me, STAGED, b, nb, seq, timeout_ns, err, j) == 0:
                    break
            full = lo + (hi - lo) // L * L if vreduce else lo  # 2. fold block me
            e0 = lo + t * L
            while e0 < full:
                for u in range(U):
                    e = e0 + u * nt * L
                    if e < full:
                        for q in range(k):
                            if inx:
                                load16(vals, (q * U + u) * LW, xs[q], offx[q] + me * n + r0 + e)
                            else:
                                load16(vals, (q * U + u) * LW, ins[q], me * cap + e)
                for u in range(U):
                    e = e0 + u * nt * L
                    if e < full:
                        folds(vals, u * LW, div)
                        store16(out, r0 + e, vals, u * LW)
                e0 += nt * L * U
            for e in range(full + t, hi, nt):
                acc = xs[0][offx[0] + me * n + r0 + e] if inx else ins[0][me * cap + e]
                for q in range(1, k):
                    v = xs[q][offx[q] + me * n + r0 + e] if inx else ins[q][me * cap + e]
                    acc = last(acc, v, div) if q == k - 1 else mid(acc, v, div)
                out[r0 + e] = acc
            seq += 1
            if passed(ok, flags, me, WRITTEN, b, nb, seq, timeout_ns, err, j) == 0:
                break
        end(seqs, seq, state)

    P = k * U  # an all-gather's vectors in flight a thread (one source: x)

    def all_gather(x, out, ins, outs, xs, ys, flags, seqs, n, me, cap, timeout_ns, div,
                   err, rx, ox, ro, oo, al, board, state, record_hash):
        """x (n elements) into block me of every rank's out. In rounds of cap elements of
        every block: (after the first) STAGED: every peer has copied the last round out of
        its output area; 2. x pushed into block me of every rank's output area (at me cap)
        or, out registered on every rank, of every rank's out in place; WRITTEN; 3. (out not
        in place) every block of the round out of this rank's output area into out."""
        b, nb = cuda.blockIdx.x, cuda.gridDim.x
        t, nt = cuda.threadIdx.x, cuda.blockDim.x
        ok = cuda.shared.array(5, types.int64)
        offx = cuda.shared.array(k, types.int64)
        offo = cuda.shared.array(k, types.int64)
        vals = cuda.local.array(V, lane_t)
        words = cuda.local.array(W, types.uint32)
        seq = seqs[b] + 1
        begin(ok, offx, offo, flags, me, seq, timeout_ns, err, rx, ox, ro, oo, al, board,
              state, record_hash)
        ino = ok[2] != 0
        vpush = (al & 1) != 0 and (ok[4] != 0 or not ino)
        vgather = (al & 2) != 0  # (bit 1: out aligned at every block's start)
        step = max(n, 1) if ino else cap
        rounds = 0 if ok[0] == 0 else max(1, (n + step - 1) // step)
        for j in range(rounds):
            r0 = j * step
            rn = min(step, n - r0)
            lo, hi = piece(rn, b, nb)
            if j > 0:  # the output areas free again (the record's barrier: the first's)
                seq += 1
                if passed(ok, flags, me, STAGED, b, nb, seq, timeout_ns, err, j) == 0:
                    break
            full = lo + (hi - lo) // L * L if vpush else lo  # 2. push sub-slice b of x
            e0 = lo + t * L
            while e0 < full:
                for u in range(P):
                    e = e0 + u * nt * L
                    if e < full:
                        load16(vals, u * LW, x, r0 + e)
                for u in range(P):
                    e = e0 + u * nt * L
                    if e < full:
                        for p in range(k):
                            if ino:
                                store16(ys[p], offo[p] + me * n + r0 + e, vals, u * LW)
                            else:
                                store16(outs[p], me * cap + e, vals, u * LW)
                e0 += nt * L * P
            for e in range(full + t, hi, nt):
                v = x[r0 + e]
                for p in range(k):
                    if ino:
                        ys[p][offo[p] + me * n + r0 + e] = v
                    else:
                        outs[p][me * cap + e] = v
            seq += 1
            if passed(ok, flags, me, WRITTEN, b, nb, seq, timeout_ns, err, j) == 0:
                break
            if not ino:
                for q in range(k):  # 3. sub-slice b of every block into out
                    copy(out, q * n + r0, outs[me], q * cap, lo, hi, vgather, words)
        end(seqs, seq, state)

    body = {Collective.ALLREDUCE: kernel, Collective.REDUCE_SCATTER: reduce_scatter,
            Collective.ALLGATHER: all_gather}[collective]
    arr = kd.numba_type[::1]
    words = types.int64[::1]
    i64, ranks = types.int64, types.UniTuple(arr, k)
    sig = types.void(arr, arr, ranks, ranks, ranks, ranks, types.UniTuple(words, k), words,
                     i64, i64, i64, i64, types.float64, words, i64, i64, i64, i64, i64,
                     words, words, i64)
    return body, sig


def ranks(reg, storage):
    """Every rank's allocation of a registration, as arrays of storage."""
    size = np.dtype(storage).itemsize
    return tuple(v[:v.size - v.size % size].view(storage) for v in reg.views)


def index(reg) -> int:
    return -1 if reg[0] is None else reg[0].index


class TwoShot:
    """A communicator's two-shot areas and the kernel's state: made on the first call that
    goes through it, by every rank of the node at once (collective; every rank agreed on
    that call), kept until close."""

    SHAPE = SHAPE

    @staticmethod
    def blocks(channels: int, threads: int, ranks_per_gpu: int, room) -> int:
        """Its grid, sized by occupancy: this rank's share of the blocks of `threads` the
        GPU keeps resident (room(threads): kernel_path.room) when ranks_per_gpu ranks share
        it (all their kernels must be resident at once: their blocks wait for each other),
        not the ring's channels (at most 64): a bandwidth-bound kernel wants every SM.
        RING_TWOSHOT_BLOCKS sets it (at most the share). Under the simulator: SHAPE's."""
        if SIMULATED:
            return min(SHAPE[0], channels)
        share = max(1, room(threads) // max(1, ranks_per_gpu))
        asked = env_whole("RING_TWOSHOT_BLOCKS", share)
        if not 1 <= asked <= share:
            raise ValueError(f"RING_TWOSHOT_BLOCKS: need 1..{share} here (the GPU's resident "
                             f"blocks of {threads} threads over {ranks_per_gpu} ranks), "
                             f"got {asked}")
        return min(SHAPE[0], asked)

    def __init__(self, comm, device: int, waiter, err, board, blocks: int, threads: int,
                 stream):
        from .areas import Areas
        self.k, self.me, self.err, self.board = comm.size, comm.rank, err, board
        self.blocks, self.threads, self.stream = blocks, threads, stream
        self.areas = Areas(comm, CAP_BYTES, device, waiter, slots=3)
        self.flags = tuple(s[2].view(np.int64) for s in self.areas.slots)
        # no stale flag: zeroed before anyone writes
        with together(comm, "zero its two-shot flags", self.areas.close):
            self.flags[self.me].copy_to_device(np.zeros(self.flags[self.me].size, np.int64))
            self.seqs = cuda.to_device(np.zeros(blocks, np.int64))
            cuda.synchronize()

    def bind(self, op: Op, dtype_name: str, x, out, n: int, divisor: int, timeout_s: float,
             record: int, xreg=(None, -1), oreg=(None, -1), collective=Collective.ALLREDUCE):
        """The call as one launch, ready to fire (kernels.bound_launch.BoundLaunch);
        n: the plan's count (reduce-scatter: x's; all-gather: out's); record: its
        board.record_hash. xreg, oreg: (the registration holding x / out, its element
        offset in this rank's allocation), or (None, -1) (ring/cuda/registered.py's find;
        reduce-scatter reads only x in place, all-gather writes only out: the other stays
        (None, -1))."""
        from kernels.bound_launch import BoundLaunch
        kd = kernel_dtype(dtype_name)
        whole = collective is Collective.ALLREDUCE
        if collective is Collective.ALLGATHER:
            op = Op.SUM  # (none: one kernel whatever the call says)
        kernel = twoshot_kernel(op, dtype_name, self.k, collective)
        x, out = x.view(kd.storage), out.view(kd.storage)
        ins = tuple(s[0].view(kd.storage) for s in self.areas.slots)
        outs = tuple(s[1].view(kd.storage) for s in self.areas.slots)
        xs, ys = (ranks(r, kd.storage) if r is not None else a
                  for (r, _), a in ((xreg, ins), (oreg, outs)))
        cap, L = CAP_BYTES // kd.storage.itemsize, lanes(kd.storage)
        xa, oa = aligned(address(x)), aligned(address(out))
        if not whole:  # per block: the kernel's n and cap are a block's, and every block
            n //= self.k  # must start aligned for vectors
            cap = cap // self.k // L * L
            if collective is Collective.REDUCE_SCATTER:
                xa = xa and n % L == 0
            else:
                oa = oa and n % L == 0
        al = int(xa) | int(oa) << 1
        args = (x, out, ins, outs, xs, ys, self.flags, self.seqs, n, self.me, cap,
                timeout_ns(timeout_s), float(divisor), self.err, index(xreg), xreg[1],
                index(oreg), oreg[1], al, self.board.words, self.board.state, record)
        keep = (None, None, ins, outs, xs, ys, self.flags, self.seqs, self.err,
                self.board.words, self.board.state)
        bound = BoundLaunch(kernel, args, self.blocks, self.threads, self.stream, keep)
        bound.aligned = al  # (what this rank told the others: the tests look)
        return bound

    def close(self) -> None:
        self.areas.close()
