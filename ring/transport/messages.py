"""Whole buffers as MPI messages: what the naive, ps, tree and (across nodes) oneshot
all-reduces (ring/algorithms/) send, received into buffers kept from call to call.

Every wait is bounded by the call's deadline (the Waiter), so a lost peer costs a
ring.TimeoutError, never a hang.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ..wait import Waiter

TAG = 23  # the communicator is a private Dup; the ring's links use 17


def as_bytes(a: np.ndarray):
    """a's memory as an MPI buffer of bytes."""
    return [a.view(np.uint8), MPI.BYTE]


def wait_all(reqs: list, waiter: Waiter, what: str) -> None:
    waiter.until(lambda: MPI.Request.Testall(reqs), lambda: what)


class Scratch:
    """Buffers kept from call to call (a communicator holds one), grown as needed, so that
    the messages land in memory already mapped: a fresh allocation of several MiB costs its
    page faults on every call, and glibc's thresholds make that cost jump between sizes
    (naive at 2 ranks: 16 MB took 2.5x the time of 8 MB). None: allocate per call."""

    def __init__(self):
        self.bufs: list[np.ndarray] = []

    def get(self, i: int, like: np.ndarray, n: int | None = None) -> np.ndarray:
        """Buffer i, as n elements (default: like's size) of like's dtype."""
        n = like.size if n is None else n
        nbytes = n * like.itemsize
        while len(self.bufs) <= i:
            self.bufs.append(np.empty(0, np.uint8))
        if self.bufs[i].nbytes < nbytes:
            self.bufs[i] = np.empty(nbytes, np.uint8)
        return self.bufs[i][:nbytes].view(like.dtype)

    def clear(self) -> None:
        self.bufs.clear()


def buffer(scratch: Scratch | None, i: int, like: np.ndarray, n: int | None = None):
    """Scratch buffer i as n elements of like's dtype (a new array without scratch)."""
    if scratch is None:
        return np.empty(like.size if n is None else n, like.dtype)
    return scratch.get(i, like, n)


def own(scratch: Scratch | None, i: int, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """x as a part to fold: itself, or a copy where out is x's memory (written first)."""
    if not np.may_share_memory(x, out):
        return x
    mine = buffer(scratch, i, x)
    np.copyto(mine, x)
    return mine


def _waiting_data() -> str:
    return "waiting for every rank's data (oneshot)"


def every_x(comm: MPI.Comm, waiter: Waiter, x: np.ndarray,
            scratch: Scratch | None = None) -> np.ndarray:
    """Every rank's x (contiguous) by one allgather: K rows of x.nbytes bytes, rank q's at
    row q (in scratch's buffer 0: valid until the next call)."""
    data = x.reshape(-1).view(np.uint8)
    rows = buffer(scratch, 0, data, comm.size * data.size).reshape(comm.size, data.size)
    req = comm.Iallgather([data, MPI.BYTE], [rows, MPI.BYTE])  # bytes already
    waiter.until(req.Test, _waiting_data)  # one request: Test, cheaper than Testall
    return rows
