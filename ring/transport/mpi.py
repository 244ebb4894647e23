"""MPI point-to-point between staging slots, for ring neighbours on different nodes.

The sender fills a local staging slot and Isends it; the receiver keeps up to `nslots`
Irecvs posted into its own slots. MPI matches messages between one pair in order, so the
slot sequence needs no tags. Every wait polls with Test() under the call's deadline.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ..wait import Waiter
from .shm import Typed

TAG = 17  # the communicator is a private Dup, so no user message can match it


def cancel(reqs) -> None:
    """Cancel the requests still pending (closing a link whose peer may be gone)."""
    for r in reqs:
        if r is not None and not r.Test():
            r.Cancel()
            r.Wait()


def _wait(req: MPI.Request, waiter: Waiter, what: str) -> None:
    waiter.until(req.Test, lambda: what)


class MpiSend:
    def __init__(self, comm: MPI.Comm, dest: int, nslots: int, slot_bytes: int, waiter: Waiter,
                 peer_name: str):
        self.comm, self.dest, self.waiter, self.peer = comm, dest, waiter, peer_name
        self.raw = [np.empty(slot_bytes, np.uint8) for _ in range(nslots)]
        self.slots = Typed(self.raw)
        self.reqs: list[MPI.Request | None] = [None] * nslots
        self.sent = 0

    def acquire(self, dtype) -> np.ndarray:
        i = self.sent % len(self.raw)
        if self.reqs[i] is not None:
            _wait(self.reqs[i], self.waiter, f"waiting for {self.peer} to take a message")
            self.reqs[i] = None
        return self.slots.get(dtype)[i]

    def post(self, nbytes: int) -> None:
        i = self.sent % len(self.raw)
        self.reqs[i] = self.comm.Isend([self.raw[i][:nbytes], MPI.BYTE], self.dest, TAG)
        self.sent += 1

    def close(self) -> None:
        cancel(self.reqs)


class MpiRecv:
    def __init__(self, comm: MPI.Comm, source: int, nslots: int, slot_bytes: int,
                 waiter: Waiter, peer_name: str):
        self.comm, self.source, self.waiter, self.peer = comm, source, waiter, peer_name
        self.raw = [np.empty(slot_bytes, np.uint8) for _ in range(nslots)]
        self.slots = Typed(self.raw)
        self.reqs: list[MPI.Request | None] = [None] * nslots
        self.received = 0
        self.planned = 0  # chunks this rank has agreed to receive so far
        self.posted = 0

    def _post_ahead(self) -> None:
        while self.posted < self.planned and self.posted - self.received < len(self.raw):
            i = self.posted % len(self.raw)
            self.reqs[i] = self.comm.Irecv([self.raw[i], MPI.BYTE], self.source, TAG)
            self.posted += 1

    def begin(self, nchunks: int) -> None:
        self.planned += nchunks
        self._post_ahead()

    def wait(self, dtype) -> np.ndarray:
        i = self.received % len(self.raw)
        _wait(self.reqs[i], self.waiter, f"waiting for data from {self.peer}")
        self.reqs[i] = None
        return self.slots.get(dtype)[i]

    def release(self) -> None:
        self.received += 1
        self._post_ahead()

    def close(self) -> None:
        cancel(self.reqs)
