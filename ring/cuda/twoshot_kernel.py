"""The two-shot all-reduce as one kernel: each rank reduces its own block of the K inputs
and writes it into every rank's output (a push two-shot: reduce-scatter, then all-gather,
with flag barriers at their ends and none in between).

Every rank's arrays the others read or write are mapped in every rank (CUDA IPC; under
Numba's simulator MPI shared memory, as ring/cuda/areas.py). Here they are the
communicator's own areas (x staged into them, the result copied out of them: "staged");
registered user buffers (issue 53) will be passed in their place, and the two copies go.
The call runs in rounds of at most CAP elements; in each, thread block b of every rank
takes sub-slice b of every rank's block (part(): the blocks K-th of the round, the
sub-slices G-th of a block), so that each wait is between the blocks of one index:

  1. stage: x's sub-slices b of every block into this rank's input area; fence; flag
     STAGED[me][b] = seq in every peer's flags
  2. reduce: wait for STAGED[q][b] = seq from every peer (bounded: the error word); fold
     sub-slice b of this rank's block from the K input areas in rank order, ((x0 op x1) op
     x2) ... op x(K-1), avg dividing once at the end: the same bits on every rank; write it
     into every rank's output area; fence; flag WRITTEN[me][b] = seq in every peer's flags
  3. gather: wait for WRITTEN[q][b] = seq from every peer; copy sub-slice b of every block
     from this rank's output area into out.

Single buffers suffice: a rank's block b overwrites its input area's sub-slices b (round
s + 1, step 1) only after its step 3 of round s saw every peer's WRITTEN[.][b], which each
peer's block b wrote after it had read them (step 2); a peer writes this rank's output area
(round s + 1, step 2) only after this rank's STAGED of round s + 1, set after its step 3 of
round s. The sequence numbers live on the GPU (`seqs`, per block): the launch never
changes (kept for repeated calls, capturable in a graph).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types

from kernels.dtypes import kernel_dtype
from kernels.reduce import OPS
from kernels.spin import sync
from ringtypes import Op

from .arrays import SIMULATED
from .persistent import fail, part

# Elements of a round at most, in bytes of the areas (each rank: an input area, an output
# area, and its flags): on a GPU 32 MiB each; under the simulator 1 KiB, so that a call of
# a few hundred elements runs in several rounds.
CAP_BYTES = 1 << 10 if SIMULATED else 32 << 20
SHAPE = (2, 4) if SIMULATED else (16, 512)  # blocks x threads at most (cut by residency)
WAIT_STAGED, WAIT_WRITTEN = 5, 6  # the error word's codes (ERR_UNIT: the peer)
STAGED, WRITTEN = 0, 1  # the two kinds of flag


@lru_cache(maxsize=None)
def twoshot_kernel(op: Op, dtype_name: str, k: int):
    """The compiled kernel for (op, dtype, K ranks): kernel(x, out, ins, outs, flags, seqs,
    n, me, cap, timeout_ns, div, err); ins / outs / flags: every rank's input area, output
    area and flags (this rank's at `me`)."""
    kd = kernel_dtype(dtype_name)
    if op is Op.AVG and not kd.floating:
        raise TypeError(f"op avg needs a floating-point dtype, got {dtype_name}")
    last = OPS[op](kd)
    mid = OPS[Op.SUM](kd) if op is Op.AVG else last  # avg: sums, then the dividing sum
    hand = sync("sys")
    store, fence, wait_geq = hand.store, hand.fence, hand.wait_geq

    @cuda.jit(device=True, inline=True)
    def sub(rn, q, b, nb):
        """[lo, hi) of the round's elements: sub-slice b of block q."""
        qlo, qhi = part(rn, q, k)
        lo, hi = part(qhi - qlo, b, nb)
        return qlo + lo, qlo + hi

    @cuda.jit(device=True, inline=True)
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
                    fail(err, WAIT_STAGED if kind == STAGED else WAIT_WRITTEN, b, q, j, kind,
                         seq, seen)
                    return 0
        fence()  # acquire: what the peers wrote before their flags
        return 1

    def kernel(x, out, ins, outs, flags, seqs, n, me, cap, timeout_ns, div, err):
        b, nb = cuda.blockIdx.x, cuda.gridDim.x
        t, nt = cuda.threadIdx.x, cuda.blockDim.x
        ok = cuda.shared.array(1, types.int64)
        seq = seqs[b]
        rounds = (n + cap - 1) // cap
        for j in range(rounds):
            seq += 1
            r0 = j * cap
            rn = min(cap, n - r0)
            for q in range(k):  # 1. stage sub-slice b of every block
                lo, hi = sub(rn, q, b, nb)
                for e in range(lo + t, hi, nt):
                    ins[me][e] = x[r0 + e]
            cuda.syncthreads()
            if t == 0:
                ok[0] = barrier(flags, me, STAGED, b, nb, seq, timeout_ns, err, j)
            cuda.syncthreads()
            if ok[0] == 0:
                break
            lo, hi = sub(rn, me, b, nb)  # 2. reduce sub-slice b of this rank's block
            for e in range(lo + t, hi, nt):
                acc = ins[0][e]
                for q in range(1, k):
                    acc = last(acc, ins[q][e], div) if q == k - 1 else mid(acc, ins[q][e], div)
                for p in range(k):
                    outs[p][e] = acc
            cuda.syncthreads()
            if t == 0:
                ok[0] = barrier(flags, me, WRITTEN, b, nb, seq, timeout_ns, err, j)
            cuda.syncthreads()
            if ok[0] == 0:
                break
            for q in range(k):  # 3. every block's sub-slice b into out
                lo, hi = sub(rn, q, b, nb)
                for e in range(lo + t, hi, nt):
                    out[r0 + e] = outs[me][e]
        cuda.syncthreads()
        if t == 0:
            seqs[b] = seq

    arr = kd.numba_type[::1]
    words = types.int64[::1]
    sig = types.void(arr, arr, types.UniTuple(arr, k), types.UniTuple(arr, k),
                     types.UniTuple(words, k), words, types.int64, types.int64, types.int64,
                     types.int64, types.float64, words)
    return cuda.jit(sig)(kernel)


class TwoShot:
    """A communicator's two-shot areas and the kernel's state: made on the first call that
    goes through it, by every rank of the node at once (collective; every rank agreed on
    that call), kept until close."""

    SHAPE = SHAPE

    def __init__(self, comm, device: int, waiter, err, blocks: int, threads: int, stream):
        from .areas import Areas
        self.k, self.me, self.err = comm.size, comm.rank, err
        self.blocks, self.threads, self.stream = blocks, threads, stream
        self.areas = Areas(comm, CAP_BYTES, device, waiter, slots=3)
        self.flags = tuple(s[2].view(np.int64) for s in self.areas.slots)
        # no stale flag: zeroed before anyone writes
        self.flags[self.me].copy_to_device(np.zeros(self.flags[self.me].size, np.int64))
        self.seqs = cuda.to_device(np.zeros(blocks, np.int64))
        cuda.synchronize()
        comm.Barrier()

    def bind(self, op: Op, dtype_name: str, x, out, n: int, divisor: int, timeout_s: float):
        """The call as one launch, ready to fire (kernels.bound_launch.BoundLaunch)."""
        from kernels.bound_launch import BoundLaunch
        kd = kernel_dtype(dtype_name)
        kernel = twoshot_kernel(op, dtype_name, self.k)
        x, out = x.view(kd.storage), out.view(kd.storage)
        ins = tuple(s[0].view(kd.storage) for s in self.areas.slots)
        outs = tuple(s[1].view(kd.storage) for s in self.areas.slots)
        cap = CAP_BYTES // kd.storage.itemsize
        args = (x, out, ins, outs, self.flags, self.seqs, n, self.me, cap,
                int(timeout_s * 1e9), float(divisor), self.err)
        keep = (None, None, ins, outs, self.flags, self.seqs, self.err)
        return BoundLaunch(kernel, args, self.blocks, self.threads, self.stream, keep)

    def close(self) -> None:
        self.areas.close()
