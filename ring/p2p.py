"""All-reduce by whole-buffer messages over MPI: the two patterns the seeds compare the ring
with, kept as baselines and for the sizes where they win.

    naive   every rank sends its whole x to every other rank and reduces all K: K-1 sends
            and receives of S bytes per rank, (K-1) S on every rank's links.
    ps      the parameter-server pattern: rank 0 receives every x, reduces, and sends the
            result back to each: 2 (K-1) S through rank 0's link, S elsewhere.

and oneshot where the ranks share no node (on one node it goes through shared memory,
oneshot.py): every rank's x by one MPI allgather, or, up to RIDE_BYTES, inside the
agreement's own allgather (agreement.agree), then the same fold as there.

Both reduce element e as ((x[0] op x[1]) op ...) op x[K-1], in the dtype (avg: one division
by K), so every rank ends with the same bits, and the same as oneshot / twoshot. Every wait
is bounded by the call's deadline; a lost peer costs a ring.TimeoutError.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ringtypes import Op

from .host.reduce import divide
from .oneshot import fold
from .wait import Waiter

TAG = 23  # the communicator is a private Dup; the ring's links use 17


def _bytes(a: np.ndarray):
    return [a.view(np.uint8), MPI.BYTE]


def _wait_all(reqs: list, waiter: Waiter, what: str) -> None:
    waiter.until(lambda: MPI.Request.Testall(reqs), lambda: what)


class Scratch:
    """Buffers kept from call to call (a Communicator holds one), grown as needed, so that
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


def _buffer(scratch: Scratch | None, i: int, like: np.ndarray, n: int | None = None):
    if scratch is None:
        return np.empty(like.size if n is None else n, like.dtype)
    return scratch.get(i, like, n)


def _own(scratch: Scratch | None, i: int, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """x as a part to fold: itself, or a copy where out is x's memory (written first)."""
    if not np.may_share_memory(x, out):
        return x
    mine = _buffer(scratch, i, x)
    np.copyto(mine, x)
    return mine


def _waiting_data() -> str:
    return "waiting for every rank's data (oneshot)"


def every_x(comm: MPI.Comm, waiter: Waiter, x: np.ndarray,
            scratch: Scratch | None = None) -> np.ndarray:
    """Every rank's x (contiguous) by one allgather: K rows of x.nbytes bytes, rank q's at
    row q (in scratch's buffer 0: valid until the next call)."""
    data = x.reshape(-1).view(np.uint8)
    rows = _buffer(scratch, 0, data, comm.size * data.size).reshape(comm.size, data.size)
    req = comm.Iallgather([data, MPI.BYTE], [rows, MPI.BYTE])  # bytes already
    waiter.until(req.Test, _waiting_data)  # one request: Test, cheaper than Testall
    return rows


def allgathered(comm: MPI.Comm, waiter: Waiter, op: Op, x: np.ndarray, out: np.ndarray,
                rode: np.ndarray | None = None, scratch: Scratch | None = None) -> None:
    """oneshot across nodes: rode, every rank's x as it came with the agreement (a row of
    bytes per rank), or else one allgather of x (every_x); then out = the rank-order fold."""
    rows = every_x(comm, waiter, x, scratch) if rode is None else rode[:, :x.nbytes]
    parts = [row.view(x.dtype) for row in rows]
    with np.errstate(over="ignore", invalid="ignore"):
        fold(parts.__getitem__, op, comm.size, out)


def naive(comm: MPI.Comm, waiter: Waiter, op: Op, x: np.ndarray, out: np.ndarray,
          scratch: Scratch | None = None) -> None:
    k, me = comm.size, comm.rank
    got = [_own(scratch, q, x, out) if q == me else _buffer(scratch, q, x) for q in range(k)]
    reqs = [comm.Irecv(_bytes(got[q]), q, TAG) for q in range(k) if q != me]
    reqs += [comm.Isend(_bytes(got[me]), q, TAG) for q in range(k) if q != me]
    _wait_all(reqs, waiter, "waiting for every rank's data (naive)")
    with np.errstate(over="ignore", invalid="ignore"):
        fold(lambda q: got[q], op, k, out)


def ps(comm: MPI.Comm, waiter: Waiter, op: Op, x: np.ndarray, out: np.ndarray,
       root: int = 0, scratch: Scratch | None = None) -> None:
    k, me = comm.size, comm.rank
    if me != root:
        mine = comm.Isend(_bytes(x), root, TAG)
        back = comm.Irecv(_bytes(out), root, TAG)
        _wait_all([mine, back], waiter, f"waiting for the result from rank {root} (ps)")
        return
    got = [_own(scratch, q, x, out) if q == me else _buffer(scratch, q, x) for q in range(k)]
    _wait_all([comm.Irecv(_bytes(got[q]), q, TAG) for q in range(k) if q != me], waiter,
              "waiting for every rank's data at the root (ps)")
    with np.errstate(over="ignore", invalid="ignore"):
        fold(lambda q: got[q], op, k, out)
    _wait_all([comm.Isend(_bytes(out), q, TAG) for q in range(k) if q != me], waiter,
              "sending the result to every rank (ps)")


# -- tree -------------------------------------------------------------------------------------
# Two binary trees over the ranks, each carrying half of the array, as NCCL's double binary
# tree: tree 0 is the heap 0 <- 1, 2; 1 <- 3, 4; ... and tree 1 the same heap over the ranks
# in reverse (rank K-1 at its root), so that a rank near the leaves of one is near the root
# of the other and both halves' work spreads over every rank. Each half is reduced up its
# tree, a rank's partial being (own op left subtree) op right subtree, and the root's result
# sent back down: every rank gets the root's bits.

def tree_links(k: int, rank: int, mirrored: bool) -> tuple[int | None, list[int]]:
    """(parent, children) of `rank` in tree 0 (mirrored=False) or tree 1 (mirrored=True)."""
    to_pos = (lambda r: k - 1 - r) if mirrored else (lambda r: r)
    pos = to_pos(rank)
    parent = None if pos == 0 else to_pos((pos - 1) // 2)
    children = [to_pos(c) for c in (2 * pos + 1, 2 * pos + 2) if c < k]
    return parent, children


def tree(comm: MPI.Comm, waiter: Waiter, op: Op, x: np.ndarray, out: np.ndarray,
         scratch: Scratch | None = None) -> None:
    """Phases in the same order on every rank: up tree 0, up tree 1, down tree 0, down tree
    1. A phase waits only on the same phase of other ranks (a rank can be the child of its
    own child in the other tree, so waiting on both trees at once could deadlock)."""
    k, me, n = comm.size, comm.rank, x.size
    halves = [(0, n // 2), (n // 2, n)]
    mine = _own(scratch, 0, x, out)
    partial = Op.SUM if op is Op.AVG else op
    up_sends = []
    for t, (lo, hi) in enumerate(halves):
        parent, children = tree_links(k, me, bool(t))
        got = [_buffer(scratch, 1 + 2 * t + j, x, hi - lo) for j in range(len(children))]
        _wait_all([comm.Irecv(_bytes(g), c, TAG + 1 + t) for g, c in zip(got, children)], waiter,
                  f"waiting for the children's partial sums (tree {t})")
        parts = [mine[lo:hi]] + got
        with np.errstate(over="ignore", invalid="ignore"):
            fold(lambda q: parts[q], partial, len(parts), out[lo:hi])
        if parent is not None:
            up_sends.append(comm.Isend(_bytes(out[lo:hi]), parent, TAG + 1 + t))
        elif op is Op.AVG:
            divide(out[lo:hi], k)
    _wait_all(up_sends, waiter, "sending the partial sums up (tree)")
    down_sends = []
    for t, (lo, hi) in enumerate(halves):  # the root's bits, from the parent, to the children
        parent, children = tree_links(k, me, bool(t))
        if parent is not None:
            _wait_all([comm.Irecv(_bytes(out[lo:hi]), parent, TAG + 3 + t)], waiter,
                      f"waiting for the result from the parent (tree {t})")
        down_sends += [comm.Isend(_bytes(out[lo:hi]), c, TAG + 3 + t) for c in children]
    _wait_all(down_sends, waiter, "sending the result down (tree)")
