"""ipc.py's links for Numba's CUDA simulator, so that device='cuda' across processes runs
without a GPU (tests under mpiexec in `make test`).

The simulator has neither CUDA IPC nor stream memory operations, but it runs every launch
and copy at once, in order, so a stream wait is a host wait. Here the segments live in an
MPI shared-memory window over the node (transport/shm.py's, the host device's analogue of
IPC), wrapped as simulated device arrays so the kernels read and write them directly, and a
counter wait spins on the host under the call's deadline. Everything above the memory and
the counters (backend.py, enqueue.py's per-chunk code, the ends' slot arithmetic) is the
code that runs on a GPU; what only a GPU checks is the driver calls in ipc.py.
"""

from __future__ import annotations

from mpi4py import MPI
from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

from ..wait import Waiter
from .ipc import ACKED, HEADER, POSTED
from .shm import ShmWindow


class HostCounter:
    """A counter in the shared window: 'wait' polls it, 'write' stores it."""

    def __init__(self, window: ShmWindow, owner: int, index: int, waiter: Waiter, name: str):
        self.window, self.cell, self.index = window, window.header(owner), index
        self.waiter, self.name = waiter, name

    def wait_geq(self, stream, value: int) -> None:
        self.waiter.until(lambda: int(self.cell[self.index]) >= value,
                          lambda: f"waiting for {self.name} to reach {value} "
                                  f"(at {int(self.cell[self.index])})")
        self.window.sync()  # observe the slot after the counter

    def write(self, stream, value: int) -> None:
        self.window.sync()  # publish the slot before the counter
        self.cell[self.index] = value


class _Memory:
    def __init__(self, window: ShmWindow, owner: int, waiter: Waiter, who: str):
        self.window, self.owner, self.waiter, self.who = window, owner, waiter, who

    def slots(self) -> list:
        return [FakeCUDAArray(s) for s in self.window.slots(self.owner)]

    def header(self):
        return FakeCUDAArray(self.window.header(self.owner))

    def region(self):
        return FakeCUDAArray(self.window.region(self.owner))

    def counter(self, offset: int) -> HostCounter:
        name = {POSTED: f"the chunks posted to {self.who}",
                ACKED: f"the chunks of {self.who} that its successor consumed"}[offset]
        # ipc.py's byte offsets (128 apart) are transport/shm.py's int64 indices x 8
        return HostCounter(self.window, self.owner, offset // 8, self.waiter, name)

    def close(self) -> None:
        pass


class Segment(_Memory):
    """Collective over comm (one node): every rank's segment in one shared window."""

    def __init__(self, comm: MPI.Comm, nslots: int, slot_bytes: int, waiter: Waiter):
        super().__init__(ShmWindow(comm, nslots, slot_bytes, True, HEADER), comm.rank, waiter,
                         f"rank {comm.rank}")
        # the slots too, as ipc.zeroed does on a GPU (the window zeroes its header only):
        # MPI may hand back a freed window's memory, whose LL words an LL wait would take
        # for this link's chunks; every rank zeroes its own before anyone writes
        self.window.region(comm.rank)[:] = 0
        self.window.sync()
        comm.Barrier()

    def handle(self) -> int:
        return self.owner

    def open(self, handle: int) -> _Memory:
        return _Memory(self.window, handle, self.waiter, f"rank {handle}")

    def close(self) -> None:
        self.window.close()


# -- registered user buffers (registry.py) under the simulator --------------------------
# A simulated device array lives in its process's private memory, which no other process
# can map. Arrays made by shared_array() live in a node-shared window instead: the
# simulator's stand-in for cudaMalloc'd memory that CUDA IPC can map. describe / export /
# open answer for them as the driver does on a GPU (ipc.py): the allocation holding a
# pointer with an ident of its own, a handle that names it, the owner's memory from it.
_IDENTS = iter(range(1, 1 << 62))
_OWN: dict[int, tuple] = {}  # my allocations: base -> (Allocation, handle)
_OPENABLE: dict[tuple, tuple] = {}  # handle -> (window, the owner's rank in it)


class SharedArray:
    """A simulated device array in a node-shared window, made by every rank of comm at
    once (collective); free() is collective too."""

    def __init__(self, comm: MPI.Comm, count: int, dtype):
        import numpy as np
        from .registry import Allocation
        dtype = np.dtype(dtype)
        nbytes = max(count * dtype.itemsize, 1)
        self.window = ShmWindow(comm, 1, nbytes, True, 0)
        region = self.window.region(comm.rank)
        base = region.__array_interface__["data"][0]
        me = (MPI.COMM_WORLD.rank, base)
        self.handles = comm.allgather(me)
        for q, h in enumerate(self.handles):
            _OPENABLE[h] = (self.window, q)
        self.alloc = Allocation(base, nbytes, next(_IDENTS))
        _OWN[base] = (self.alloc, me)
        self.array = FakeCUDAArray(region[:count * dtype.itemsize].view(dtype))

    def free(self) -> None:
        _OWN.pop(self.alloc.base, None)
        for h in self.handles:
            _OPENABLE.pop(h, None)
        self.window.close()


def shared_array(comm: MPI.Comm, count: int, dtype) -> SharedArray:
    return SharedArray(comm, count, dtype)


def describe(ptr: int):
    return next((a for a, _ in _OWN.values() if a.holds(ptr, 1)), None)


def export(alloc):
    return _OWN[alloc.base][1]


def open_mapping(handle):
    """(nothing to close, the owner's memory as a byte array)"""
    window, q = _OPENABLE[handle]
    return None, FakeCUDAArray(window.region(q))


def close_mapping(mem) -> None:
    """Nothing to unmap: the window is the owner's."""


def whole(alloc):
    """This rank's own allocation as a byte array."""
    return open_mapping(export(alloc))[1]
