"""The 'cuda' device of ring.Communicator: one rank per process, its ring links to the
neighbours on its node through CUDA IPC (ipc.py), to neighbours on other nodes over MPI
staged through pinned host memory (staged.py), its chunks put on its stream by the same
per-chunk code as ring.Group (enqueue.py). Between ranks of a node the order is kept on the
GPU; across nodes the host hands chunks to MPI as their copies finish.

A call returns when its work is done on the GPU: the host polls an event under the
communicator's timeout, so a lost peer costs a ring.TimeoutError, not a hang. (async_op=True
still returns a finished Work for now: letting the poll move into Work.wait() is next.)
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI
from numba import cuda

from kernels.arrays import address

from ringtypes import Op
from ..schedule import Collective, Plan
from ..topology import Topology
from ..wait import Waiter
from . import ipc, staged
from .arrays import SIMULATED, DeviceArrays
from .enqueue import Rank, Slots, _copy, _unit, event
from .group import ALIGNED, SLOT_PAD, _align


class CudaBackend(DeviceArrays):
    name = "cuda"

    def __init__(self, comm: MPI.Comm, topo: Topology, nslots: int, slot_bytes: int,
                 waiter: Waiter, path: str = "fused"):
        self.comm, self.waiter, self.path = comm, waiter, path
        self.device = topo.machine_rank % len(cuda.gpus)
        cuda.select_device(self.device)
        b = slot_bytes + SLOT_PAD
        self.rank = Rank(cuda.stream(), cuda.stream(), Slots(nslots, b), self.device)
        self.inbound = self.outbound = None
        self._mapped: list = []
        self.segment = None
        size, r = comm.size, comm.rank
        if size == 1:
            return
        pred, succ = (r - 1) % size, (r + 1) % size
        near_pred, near_succ = topo.same_node(pred, r), topo.same_node(r, succ)
        if SIMULATED:  # IPC emulated in MPI shared memory (simipc.py): collective per node
            from .simipc import Segment
            self.segment = Segment(topo.node_comm, nslots, b, waiter)
        elif near_pred or near_succ:
            self.segment = ipc.Segment(nslots, b)
        handle = self.segment.handle() if self.segment is not None else None
        everyone = comm.allgather((self.device, handle))
        ipc.enable_peer_access(self.device, [everyone[q][0] for q, near in
                                             ((pred, near_pred), (succ, near_succ)) if near])
        maps: dict = {}

        def mapped(q):
            if q not in maps:
                maps[q] = self.segment.open(everyone[q][1])
            return maps[q]

        direct = not (near_pred and near_succ) and staged.cuda_aware()
        if near_pred:
            self.inbound = ipc.InEnd(self.segment, mapped(pred))
        else:
            self.inbound = staged.StagedIn(comm, pred, nslots, b, waiter, direct)
        if near_succ:
            self.outbound = ipc.OutEnd(self.segment, mapped(succ))
        else:
            self.outbound = staged.StagedOut(comm, succ, nslots, b, waiter, direct)
        if not (near_pred or near_succ):  # each end keeps the other moving while it waits
            self.inbound.progress_too = self.outbound.progress
            self.outbound.progress_too = self.inbound.progress
        self._mapped = list(maps.values())
        cuda.synchronize()  # headers zeroed on every GPU before anyone maps and writes
        comm.Barrier()

    # -- arrays (and flat, empty_like, address, may_overlap from DeviceArrays) ----------
    @staticmethod
    def scratch(n: int, dtype):
        return cuda.device_array(n, dtype)

    def copy_of(self, a):
        """A copy of device array a, made on the rank's stream (ordered before the plan)."""
        dst = cuda.device_array(a.size, a.dtype)
        if a.size:
            _copy(dst, a, self.rank.stream)
        return dst

    def swap_blocks(self, src, dst, rows: int, cols: int, b: int) -> None:
        """dst as [cols][rows][b] := src as [rows][cols][b]: rows x cols copies of b
        elements on the rank's stream (a handful: rows x cols is the number of ranks)."""
        for i in range(rows):
            for j in range(cols):
                _copy(dst[(j * rows + i) * b:(j * rows + i + 1) * b],
                      src[(i * cols + j) * b:(i * cols + j + 1) * b], self.rank.stream)

    @staticmethod
    def align(collective: Collective, itemsize: int) -> int:
        return _align(itemsize) if collective in ALIGNED else 1

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
        if self.inbound is not None:  # None: a ring of one, which neither sends nor receives
            self.inbound.begin(plan.recvs)
        for _, step, lo, hi in plan.units:
            _unit(plan, step, lo, hi, op, x, out, self.rank, self.inbound, self.outbound,
                  name, storage, divisor, self.path)
        if self.outbound is not None:
            self.outbound.flush()
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
        for end in (self.inbound, self.outbound):
            if end is not None:
                end.close()
        for m in self._mapped:
            m.close()
        if self.segment is not None:
            self.segment.close()
        self._mapped, self.segment = [], None
        self.inbound = self.outbound = None
