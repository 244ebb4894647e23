"""The 'cuda' device of ring.Communicator: one rank per process, its ring links to the
neighbours through CUDA IPC (ipc.py), its chunks put on its stream by the same per-chunk
code as ring.Group (enqueue.py), the order between ranks kept on the GPU.

A call returns when its work is done on the GPU: the host polls an event under the
communicator's timeout, so a lost peer costs a ring.TimeoutError, not a hang. (async_op=True
still returns a finished Work for now: letting the poll move into Work.wait() is next.)
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI
from numba import cuda

from kernels.arrays import address

from ..ops import Op
from ..schedule import Collective, Plan
from ..topology import Topology
from ..wait import Waiter
from . import ipc
from .arrays import SIMULATED, as_device, empty_like_kind
from .enqueue import Rank, Slots, _unit, event
from .group import SLOT_PAD, _align


class CudaBackend:
    name = "cuda"

    def __init__(self, comm: MPI.Comm, topo: Topology, nslots: int, slot_bytes: int,
                 waiter: Waiter, path: str = "fused"):
        self.comm, self.waiter, self.path = comm, waiter, path
        ndev = len(cuda.gpus)
        self.device = topo.local_of[comm.rank] % ndev
        cuda.select_device(self.device)
        self.rank = Rank(cuda.stream(), cuda.stream(), Slots(nslots, slot_bytes + SLOT_PAD),
                         self.device)
        self.inbound = self.outbound = None
        self._mapped: list = []
        self.segment = None
        size, r = comm.size, comm.rank
        if topo.nnodes > 1:
            raise ValueError("device: 'cuda' across nodes (chunks staged through host memory "
                             "over MPI) is not built yet; use one node, or the 'host' device")
        if size == 1:
            return
        b = slot_bytes + SLOT_PAD
        if SIMULATED:  # IPC emulated in MPI shared memory (simipc.py)
            from .simipc import Segment
            self.segment = Segment(comm, nslots, b, waiter)
        else:
            self.segment = ipc.Segment(nslots, b)
        everyone = comm.allgather((self.device, self.segment.handle()))
        pred, succ = (r - 1) % size, (r + 1) % size
        ipc.enable_peer_access(self.device, [everyone[pred][0], everyone[succ][0]])
        pred_map = self.segment.open(everyone[pred][1])
        succ_map = pred_map if succ == pred else self.segment.open(everyone[succ][1])
        self._mapped = [pred_map] if succ == pred else [pred_map, succ_map]
        self.inbound = ipc.InEnd(self.segment, pred_map)
        self.outbound = ipc.OutEnd(self.segment, succ_map)
        cuda.synchronize()  # headers zeroed on every GPU before anyone maps and writes
        comm.Barrier()

    # -- arrays -----------------------------------------------------------------------
    @staticmethod
    def flat(a, arg: str, writeable: bool = False, dtype=None):
        return as_device(a, arg, dtype)

    @staticmethod
    def empty_like(x, shape, logical):
        n = int(np.prod(shape))
        out = empty_like_kind(x, n, logical)
        return out.reshape(shape) if len(shape) != 1 and hasattr(out, "reshape") else out

    address = staticmethod(address)

    def may_overlap(self, a, b) -> bool:
        if not a.size or not b.size:
            return False
        ab, bb = self.address(a), self.address(b)
        return ab < bb + b.nbytes and bb < ab + a.nbytes

    @staticmethod
    def align(collective: Collective, itemsize: int) -> int:
        return _align(itemsize) if collective is Collective.ALLREDUCE else 1

    # -- who has arrived (host shared memory only) ---------------------------------------
    def entered(self, call: int) -> None:
        pass

    def behind(self, call: int) -> list[int]:
        return []

    # -- running ----------------------------------------------------------------------
    def run(self, plan: Plan, op: Op, x, out, divisor: int | None = None, logical=None) -> None:
        divisor = plan.size if divisor is None else divisor
        storage = np.dtype(x.dtype)
        name = (logical or storage).name
        for _, step, lo, hi in plan.units:
            _unit(plan, step, lo, hi, op, x, out, self.rank, self.inbound, self.outbound,
                  name, storage, divisor, self.path)
        self.finish()

    def finish(self) -> None:
        """Wait, under the timeout, until the GPU has done everything queued so far."""
        if SIMULATED:  # the simulator has run it all already
            return
        marks = []
        for s in (self.rank.stream, self.rank.copy_stream):
            ev = event()
            ev.record(s)
            marks.append(ev)
        self.waiter.until(lambda: all(e.query() for e in marks),
                          lambda: "waiting for the GPU to finish the call (a peer's stream "
                                  "may be stuck)")

    def close(self) -> None:
        self.rank.stream.synchronize()
        self.rank.copy_stream.synchronize()
        for m in self._mapped:
            m.close()
        if self.segment is not None:
            self.segment.close()
        self._mapped, self.segment = [], None
        self.inbound = self.outbound = None
