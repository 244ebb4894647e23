"""MPI point-to-point between ring neighbours on different nodes.

The sender fills a local staging slot and Isends it; the receiver keeps up to `nslots`
Irecvs posted into its own slots. MPI matches messages between one pair in order, so the
slot sequence needs no tags. Every wait polls with Test() under the call's deadline.

Both ends are `direct`: a chunk that already sits in the caller's array (an input block,
or an output block once written) is sent from there (`post_from`), and a chunk that only
lands in the output is received straight into it (`begin(into=...)`), as MPI itself would:
no staging copy on either side. At most `nslots` messages are in flight each way, staged
or not; `flush` waits for every send before a call returns.

MPI moves a message only while its ranks call MPI, so both ends have a `progress()` that
the communicator's waits call whatever they wait for (ring/wait.py), and a call ends only
once its peer has taken every message: a rank back in its own code, calling no MPI, would
otherwise hold its successor's call (or lose the message to close()'s cancel).
"""

from __future__ import annotations

from collections import deque

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


def reap(reqs: list) -> None:
    """Test each send in reqs still in flight (MPI moves it on meanwhile); None for those
    done (their buffers free)."""
    for i, req in enumerate(reqs):
        if req is not None and req.Test():
            reqs[i] = None


def poke(reqs) -> None:
    """Ask MPI about the first request in reqs not yet complete (None: none there), without
    completing it: MPI moves the messages on meanwhile. Not simply the first: MPICH asks its
    progress engine only for a request not yet complete, and a receive may have landed long
    before its rank takes it, while later ones wait (tests/mpi/check_progress.py)."""
    for req in reqs:
        if req is not None and not req.Get_status():
            return


def _wait(req: MPI.Request, waiter: Waiter, what: str) -> None:
    waiter.until(req.Test, lambda: what)


def _bytes(view: np.ndarray) -> np.ndarray:
    """A contiguous 1-D array as bytes (ml_dtypes' types have no buffer format of their own)."""
    return view.view(np.uint8)


class MpiSend:
    direct = True

    def __init__(self, comm: MPI.Comm, dest: int, nslots: int, slot_bytes: int, waiter: Waiter,
                 peer_name: str):
        self.comm, self.dest, self.waiter, self.peer = comm, dest, waiter, peer_name
        self.raw = [np.empty(slot_bytes, np.uint8) for _ in range(nslots)]
        self.slots = Typed(self.raw)
        self.reqs: list[MPI.Request | None] = [None] * nslots
        self.sent = 0

    def _free(self) -> int:
        """The next message's place in the ring of requests, once its last use is done."""
        i = self.sent % len(self.raw)
        if self.reqs[i] is not None:
            _wait(self.reqs[i], self.waiter, f"waiting for {self.peer} to take a message")
            self.reqs[i] = None
        return i

    def acquire(self, dtype) -> np.ndarray:
        return self.slots.get(dtype)[self._free()]

    def post(self, nbytes: int) -> None:
        i = self.sent % len(self.raw)
        self.reqs[i] = self.comm.Isend([self.raw[i][:nbytes], MPI.BYTE], self.dest, TAG)
        self.sent += 1

    def post_from(self, view: np.ndarray) -> None:
        """Send `view` (contiguous, 1-D) as the next message, from where it is. It must not
        be written until flush()."""
        i = self._free()
        self.reqs[i] = self.comm.Isend([_bytes(view), MPI.BYTE], self.dest, TAG)
        self.sent += 1

    def progress(self) -> None:
        reap(self.reqs)

    def flush(self) -> None:
        """Wait until MPI is done with every send (before a call returns): then none reads
        the caller's arrays, and none waits for this rank's next MPI call."""
        for i, req in enumerate(self.reqs):
            if req is not None:
                _wait(req, self.waiter, f"waiting for {self.peer} to take a message")
                self.reqs[i] = None

    def close(self) -> None:
        cancel(self.reqs)


class MpiRecv:
    direct = True

    def __init__(self, comm: MPI.Comm, source: int, nslots: int, slot_bytes: int,
                 waiter: Waiter, peer_name: str):
        self.comm, self.source, self.waiter, self.peer = comm, source, waiter, peer_name
        self.raw = [np.empty(slot_bytes, np.uint8) for _ in range(nslots)]
        self.slots = Typed(self.raw)
        self.planned: deque = deque()  # agreed receives not yet posted: (array or None, gate)
        self.pending: deque = deque()  # posted, not yet released: (request, slot or -1)
        self.staged = 0  # receives posted into slots so far
        self.unit = 0  # the unit of the call the executor is at (for the gates)

    def _post_ahead(self) -> None:
        # At most nslots pending, released in order: slot `staged % nslots` is free (the
        # message that used it last is nslots slot-messages back, released).
        planned, pending, n = self.planned, self.pending, len(self.raw)
        while planned and len(pending) < n:
            into, gate = planned[0]
            if gate >= self.unit:  # the executor still reads that memory
                return
            planned.popleft()
            if into is None:
                i = self.staged % n
                self.staged += 1
                pending.append((self.comm.Irecv([self.raw[i], MPI.BYTE], self.source, TAG), i))
            else:
                pending.append((self.comm.Irecv([_bytes(into), MPI.BYTE], self.source, TAG), -1))

    def progress(self) -> None:
        """Ask MPI about the oldest receive not yet complete: MPI moves the messages on."""
        poke(req for req, _ in self.pending)

    def begin(self, nchunks: int, into=None) -> None:
        """This call receives nchunks messages. into (executor.receives_into): for each,
        (the caller's array it lands in, contiguous and exactly its size, or None for a
        slot; the unit of the call after which its receive may be posted, or -1)."""
        self.unit = 0
        self.planned.extend([(None, -1)] * nchunks if into is None else into)
        self._post_ahead()

    def wait(self, dtype, unit: int = 0) -> np.ndarray | None:
        """The next message, for the call's unit `unit`: its slot, or None when it landed
        in the caller's array."""
        self.unit = unit
        self._post_ahead()
        req, i = self.pending[0]
        _wait(req, self.waiter, f"waiting for data from {self.peer}")
        return None if i < 0 else self.slots.get(dtype)[i]

    def release(self) -> None:
        self.pending.popleft()
        self._post_ahead()

    def abandon(self) -> None:
        """A call failed: cancel the receives into the caller's arrays, so that no message
        arriving later writes into them (the communicator is broken by then)."""
        for req, i in self.pending:
            if i < 0 and not req.Test():
                req.Cancel()

    def close(self) -> None:
        cancel([req for req, _ in self.pending])
        self.pending.clear()
