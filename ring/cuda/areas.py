"""GPU memory every rank of a node can read: the areas of the cuda device's oneshot and
twoshot all-reduces (ring/algorithms/oneshot.py, twoshot.py).

Every rank has an area in its GPU's memory that every other rank maps through CUDA IPC
(under Numba's simulator: MPI shared memory, ring/transport/simipc.py): 2 call parities x
[data][result] of `cap` bytes each. It is made on a rank's first such call, collectively
(every rank agreed on the call before it runs; a barrier under the timeout first, so a
rank lost meanwhile costs a TimeoutError), and kept until close.

A rank writes its area of parity p at round s only after every rank has posted round s-1,
and a rank posts s-1 only after its kernels have finished reading round s-2's areas: every
call that uses them waits for its GPU work before it returns, async_op included.
"""

from __future__ import annotations

from kernels.reduce import fold_args
from ringtypes import Op

from ..transport import ipc
from .arrays import SIMULATED
from .enqueue import copy
from .together import together

SLOTS = 4  # [data, result] x call parity


class Areas:
    """Every rank's area: this rank's own (allocated) and the others' (mapped)."""

    DATA, RESULT = 0, 1

    def __init__(self, comm, cap: int, device: int, waiter, slots: int = SLOTS):
        """slots of cap bytes each (the one-shot kernel's inbox: one). Where a rank cannot
        allocate its area or map a peer's, every rank raises RingError (together.py)."""
        self.mine, self.mapped, self.slots = None, [], []
        if SIMULATED:  # collective over comm, every rank on one node
            from ..transport.simipc import Segment
            self.mine = Segment(comm, slots, cap, waiter)
        else:
            with together(comm, f"allocate its GPU area ({slots} x {cap} bytes)", self.close):
                self.mine = ipc.Segment(slots, cap)
        everyone = comm.allgather((device, self.mine.handle()))
        with together(comm, "map its peers' GPU areas", self.close):
            ipc.enable_peer_access(device, [d for d, _ in everyone])
            for q, (_, h) in enumerate(everyone):
                if q != comm.rank:
                    self.mapped.append(self.mine.open(h))
        segments = list(self.mapped)
        segments.insert(comm.rank, self.mine)
        self.slots = [s.slots() for s in segments]

    def view(self, q: int, seq: int, which: int, storage, lo: int, hi: int):
        """Rank q's data (DATA) or result (RESULT) of round seq's parity, [lo:hi]."""
        return self.slots[q][2 * (seq % 2) + which].view(storage)[lo:hi]

    def close(self) -> None:
        for m in self.mapped:
            m.close()
        if self.mine is not None:
            self.mine.close()
        self.mine, self.mapped, self.slots = None, [], []


def fold_launch(parts, op: Op, k: int, out, dtype_name: str, stream) -> None:
    """out = ((parts(0) op parts(1)) op ...) op parts(k-1) on stream, in one launch; avg
    adds and divides by k in the last step (the kernels' AVG: the sum rounded to the dtype,
    then divided)."""
    if k == 1:
        copy(out, parts(0), stream)
        return
    launch = fold_args(out, [parts(q) for q in range(k)], op, nranks=k, dtype=dtype_name)
    if launch is not None:
        kernel, blocks, threads, args = launch
        kernel[blocks, threads, stream](*args)
