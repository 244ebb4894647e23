"""The host device: NumPy arrays in, ring links over shared memory or MPI."""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ringtypes import Op, parse_dtype
from ..schedule import Plan, alltoall_overwritten
from ..topology import Topology
from ..transport import Kind, ends
from ..transport.mpi import MpiRecv, MpiSend
from ..transport.shm import CALLS, ShmRecv, ShmSend, ShmWindow
from ..wait import Waiter
from . import executor
from .reduce import walk_compiles


class HostBackend:
    name = "host"
    path = "stream"  # the sender reduces straight into the successor's slot, as the GPU's
    #                  stream path does: the host's only path

    def __init__(self, comm: MPI.Comm, topo: Topology, nslots: int, slot_bytes: int,
                 waiter: Waiter):
        self.comm, self.topo, self.waiter = comm, topo, waiter
        self.slot_bytes = slot_bytes
        size, rank = comm.size, comm.rank
        self.window = None
        self.send = self.recv = None
        self._my_header = None  # where entered() notes this rank's call number
        self._shm = False  # both links in node-shared memory: the walk may be compiled
        self._link = None  # then compiled_walk's link array (made on first use: Numba's import)
        if size == 1:
            return
        me, local = topo.local_of[rank], topo.local_of
        # Collective over the node, so every rank takes part even if it needs no slots.
        self.window = win = ShmWindow(topo.node_comm, nslots, slot_bytes,
                                      topo.same_node((rank - 1) % size, rank))
        self._my_header = win.header(me)
        near = Kind(lambda q: ShmRecv(win, me, local[q], waiter, f"rank {q}"),
                    lambda q: ShmSend(win, me, local[q], waiter, f"rank {q}"))
        far = Kind(lambda q: MpiRecv(comm, q, nslots, slot_bytes, waiter, f"rank {q}"),
                   lambda q: MpiSend(comm, q, nslots, slot_bytes, waiter, f"rank {q}"))
        self.recv, self.send = ends(topo, rank, size, near, far)
        self._shm = isinstance(self.send, ShmSend) and isinstance(self.recv, ShmRecv)
        waiter.add_progress(self.send, self.recv)

    def _shm_link(self) -> np.ndarray:
        """Both ends in shared memory: compiled_walk's link array (slot and counter addresses)."""
        from .compiled_walk import link
        s, r = self.send, self.recv
        return link(r.slots.raw[0].ctypes.data, s.slots.raw[0].ctypes.data, self.window.nslots,
                    self.window.slot_bytes, r.posted.ctypes.data, r.acked.ctypes.data,
                    s.acked.ctypes.data, s.posted.ctypes.data)

    # -- arrays -----------------------------------------------------------------------
    @staticmethod
    def flat(a, arg: str, writeable: bool = False, dtype=None):
        """(the array as a 1-D view, its dtype), or a TypeError / ValueError naming `arg`."""
        if not isinstance(a, np.ndarray):
            if hasattr(a, "__cuda_array_interface__"):
                raise TypeError(f"{arg}: a GPU array was passed to a communicator on the "
                                "'host' device; pass a NumPy array")
            raise TypeError(f"{arg}: expected a NumPy array, got {type(a).__name__}")
        dt = parse_dtype(a.dtype, arg)
        if dtype is not None and parse_dtype(dtype, "dtype") != dt:
            raise TypeError(f"dtype: {dtype} does not match {arg}'s {dt}")
        if not a.flags.c_contiguous:
            raise ValueError(f"{arg}: the array must be contiguous (got strides {a.strides})")
        if writeable and not a.flags.writeable:
            raise ValueError(f"{arg}: the array is read-only")
        return a.reshape(-1), dt

    @staticmethod
    def empty_like(x, shape, dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    @staticmethod
    def align(collective, itemsize: int) -> int:
        return 1

    may_overlap = staticmethod(np.may_share_memory)  # bounds only: cheap
    compiles = staticmethod(walk_compiles)  # (dtype, op, wire): the walk is compiled

    @staticmethod
    def through_host(c, fn) -> None:
        """fn(x, out) on the call's host arrays: they are host arrays already."""
        fn(c.x, c.out)

    @staticmethod
    def scratch(n: int, dtype) -> np.ndarray:
        return np.empty(n, dtype)

    @staticmethod
    def copy_of(a: np.ndarray) -> np.ndarray:
        return a.copy()

    @staticmethod
    def swap_blocks(src: np.ndarray, dst: np.ndarray, rows: int, cols: int, b: int) -> None:
        """dst as [cols][rows][b] := src as [rows][cols][b], transposed by blocks of b."""
        dst.reshape(cols, rows, b)[...] = src.reshape(rows, cols, b).transpose(1, 0, 2)

    @staticmethod
    def address(a: np.ndarray) -> int:
        return a.__array_interface__["data"][0]

    # -- who has arrived -----------------------------------------------------------------
    def entered(self, call: int) -> None:
        """Note that this rank entered collective call number `call`."""
        if self._my_header is not None:
            self._my_header[CALLS] = call

    def entered_address(self) -> int:
        """Where entered() writes (for compiled code; 0: nowhere)."""
        if self._my_header is None:
            return 0
        return self._my_header.ctypes.data + CALLS * self._my_header.itemsize

    def behind(self, call: int) -> list[int]:
        """Ranks on this node known not to have entered call `call` yet (for messages)."""
        if self.window is None:
            return []
        me = self.comm.rank
        return [r for r in range(self.comm.size) if r != me and self.topo.same_node(r, me)
                and self.window.header(self.topo.local_of[r])[CALLS] < call]

    # -- running ----------------------------------------------------------------------
    def run(self, plan: Plan, op: Op, x: np.ndarray, out: np.ndarray,
            divisor: int | None = None, logical=None, defer: bool = False,
            wire: np.dtype | None = None, from_out: tuple[int, ...] = ()) -> None:
        """Run the plan to completion (NumPy has nothing to leave in flight: defer or not,
        nothing is pending afterwards). wire, from_out: executor.run's. With both links in
        shared memory, the walk is compiled (compiled_walk.py) for the dtypes and ops it takes."""
        if self._shm and walk_compiles(out.dtype, op, wire):
            return self._walk(plan, op, x, out, divisor, from_out)
        executor.run(plan, op, x, out, self.send, self.recv, self.waiter, divisor, wire,
                     from_out)

    def alltoall_in_place(self, plan: Plan, op: Op, a: np.ndarray, logical=None,
                          defer: bool = False) -> None:
        """An all-to-all whose output is its input `a`. From K = 3 some blocks of a would
        be written over before they are sent (schedule.alltoall_overwritten): with both
        links in shared memory only those are kept aside, and the walk reads the others
        from a itself (executor.in_place); over MPI links (which may receive into a
        early) it runs from a copy of a. At K <= 2 none would: the walk runs on a as it
        is (each chunk's steps in order)."""
        if not alltoall_overwritten(plan.size):
            return self.run(plan, op, a, a)
        if not self._shm:
            return self.run(plan, op, a.copy(), a)
        held, from_out = executor.in_place(plan, a)
        self.run(plan, op, held, a, from_out=from_out)

    def _walk(self, plan: Plan, op: Op, x, out, divisor, from_out=()) -> None:
        """compiled_walk.walk to the end; its waits past the spins go to the transport ends'
        bounded ones (the communicator's timeout, which names the late peer)."""
        from . import compiled_walk
        if self._link is None:
            self._link = self._shm_link()
        units, link, send, recv, w = compiled_walk.encode(plan, from_out), self._link, self.send, \
            self.recv, self.waiter
        link[compiled_walk.RECEIVED], link[compiled_walk.SENT], link[compiled_walk.UNIT] = \
            recv.received, send.sent, 0
        divisor = plan.size if divisor is None else divisor
        try:
            while True:
                status = compiled_walk.walk(units, x, out, link, int(op), divisor, w.spins, w.yields)
                if status == compiled_walk.DONE:
                    return
                recv.received, send.sent = int(link[compiled_walk.RECEIVED]), int(link[compiled_walk.SENT])
                w.at = divmod(int(link[compiled_walk.UNIT]), len(plan.steps))
                if status == compiled_walk.WAIT_RECV:
                    recv.wait(out.dtype)
                else:
                    send.acquire(out.dtype)
        finally:
            recv.received, send.sent = int(link[compiled_walk.RECEIVED]), int(link[compiled_walk.SENT])

    def finish(self) -> None:
        """Everything is done when run() returns."""

    synchronize = finish

    @staticmethod
    def stream_for(stream, x) -> None:
        """The host device has no streams: its calls are synchronous."""
        if stream is not None:
            raise TypeError("stream: the host device has no CUDA streams (its calls are "
                            "synchronous); pass stream only on device='cuda'")

    @staticmethod
    def order(h, one_launch: bool) -> None:
        """Nothing to order on the host."""

    @staticmethod
    def in_place(c) -> bool:
        """No buffer is registered on the host (comm.register: the cuda device's)."""
        return False

    def close(self) -> None:
        for end in (self.send, self.recv):
            if end is not None:
                end.close()
        if self.window is not None:
            self.window.close()
        self.send = self.recv = self.window = self._my_header = self._link = None
        self._shm = False
