"""The all-reduce algorithms of the cuda device that do not walk the ring.

oneshot and twoshot (ring/oneshot.py's, on the GPU): every rank has an area in its GPU's
memory that every other rank maps through CUDA IPC (under Numba's simulator: MPI shared
memory, simipc.py), and the rounds go through the host's exchange window
(transport/exchange.py), as the agreement's do:

    oneshot   copy x into my area; post a round; after it, fold the K areas into out, in
              rank order, with one launch (kernels.fold)
    twoshot   the same copy and round; fold block r (schedule.split) of the K areas into my
              result area; post the round's second counter; after it, copy block q of every
              rank q's result area into out

The area, 2 call parities x [data][result] of EXCHANGE_BYTES each, is made on a rank's first
such call, collectively (every rank agreed on the call before it runs; a barrier under the
timeout first, so a rank lost meanwhile costs a TimeoutError), and kept until close.
So the data cannot ride in the agreement's round, as they do on the host: that round is
posted before the call is agreed, when the area may not exist yet. A cuda oneshot costs the
agreement's round and its own (only its own with check=False).

A rank writes its area of parity p at round s only after every rank has posted round s-1,
and a rank posts s-1 only after its kernels have finished reading round s-2's areas: every
call here waits for its GPU work before it returns, async_op included (the Work it returns
is complete).

naive, ps and tree (p2p.py's MPI messages) run on copies in host memory: x comes to the
host, the host algorithm runs, the result goes back. The mpich wheel cannot read GPU memory,
so this is MPI through host memory, the baseline the harness's "mpi" implementation measures
too, kept so that every algorithm runs on every device.
"""

from __future__ import annotations

import numpy as np

from kernels.reduce import fold_args
from ringtypes import Op

from .. import p2p
from ..schedule import split
from ..transport.exchange import ROUND2
from .arrays import SIMULATED, storage_of
from .enqueue import _copy

DATA, RESULT = 0, 1
SLOTS = 4  # [data, result] x call parity


class Areas:
    """Every rank's area: this rank's own (allocated) and the others' (mapped)."""

    def __init__(self, comm, cap: int, device: int, waiter):
        from . import ipc
        if SIMULATED:  # collective over comm, every rank on one node
            from .simipc import Segment
            self.mine = Segment(comm, SLOTS, cap, waiter)
        else:
            self.mine = ipc.Segment(SLOTS, cap)
        everyone = comm.allgather((device, self.mine.handle()))
        ipc.enable_peer_access(device, [d for d, _ in everyone])
        self.mapped = [self.mine.open(h) for q, (_, h) in enumerate(everyone) if q != comm.rank]
        segments = list(self.mapped)
        segments.insert(comm.rank, self.mine)
        self.slots = [s.slots() for s in segments]

    def view(self, q: int, seq: int, which: int, storage, lo: int, hi: int):
        return self.slots[q][2 * (seq % 2) + which].view(storage)[lo:hi]

    def close(self) -> None:
        for m in self.mapped:
            m.close()
        self.mine.close()
        self.mapped, self.slots = [], []


def fold(parts, op: Op, k: int, out, dtype_name: str, stream) -> None:
    """out = ((parts(0) op parts(1)) op ...) op parts(k-1) on stream, in one launch; avg
    adds and divides by k in the last step (the kernels' AVG: the sum rounded to the dtype,
    then divided)."""
    if k == 1:
        _copy(out, parts(0), stream)
        return
    launch = fold_args(out, [parts(q) for q in range(k)], op, nranks=k, dtype=dtype_name)
    if launch is not None:
        kernel, blocks, threads, args = launch
        kernel[blocks, threads, stream](*args)


def run(comm, c) -> None:
    """c's all-reduce by c.algorithm (oneshot or twoshot) on the cuda device. comm: the
    Communicator (its backend, exchange window and round counter)."""
    backend, ex = comm._backend, comm._exchange
    if backend.areas is None:
        # every rank arrives first, under the timeout: the making is collective and would
        # wait forever on a rank lost between the agreement and here
        comm._everyone_here("make its GPU area (oneshot / twoshot)")
        backend.areas = Areas(comm._comm, ex.cap, backend.device, comm._waiter)
    areas, stream = backend.areas, backend.rank.stream
    storage, name = storage_of(c.dtype), np.dtype(c.dtype).name
    k, me, n = ex.size, ex.rank, c.count
    comm._xseq += 1
    seq = comm._xseq
    _copy(areas.view(me, seq, DATA, storage, 0, n), c.x, stream)
    backend.finish()  # x is in my area before the round says so
    ex.post(seq)
    comm._wait_round(seq)
    if c.algorithm == "oneshot":
        fold(lambda q: areas.view(q, seq, DATA, storage, 0, n), c.op, k, c.out, name, stream)
        backend.finish()
        return
    b = split(n, k)
    lo, hi = b[me], b[me + 1]
    fold(lambda q: areas.view(q, seq, DATA, storage, lo, hi), c.op, k,
         areas.view(me, seq, RESULT, storage, 0, hi - lo), name, stream)
    backend.finish()
    ex.post(seq, ROUND2)
    ex.wait(seq, ROUND2, "to post its reduced block (twoshot)")
    for q in range(k):
        _copy(c.out[b[q]:b[q + 1]], areas.view(q, seq, RESULT, storage, 0, b[q + 1] - b[q]),
              stream)
    backend.finish()


def staged(comm, c) -> None:
    """c's all-reduce by c.algorithm (naive, ps or tree: MPI messages) on host copies."""
    backend = comm._backend
    backend.finish()  # x as the calls before this one left it
    x = c.x.copy_to_host().view(c.dtype)
    out = np.empty_like(x)
    getattr(p2p, c.algorithm)(comm._comm, comm._waiter, c.op, x, out, scratch=comm._scratch)
    c.out.copy_to_device(out.view(storage_of(c.dtype)))
