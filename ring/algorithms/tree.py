"""tree: NCCL's double binary tree, with whole halves as MPI messages.

Two binary trees over the ranks, each carrying half of the array: tree 0 is the heap
0 <- 1, 2; 1 <- 3, 4; ... and tree 1 the same heap over the ranks in reverse (rank K-1 at
its root), so that a rank near the leaves of one is near the root of the other and both
halves' work spreads over every rank. Each half is reduced up its tree, a rank's partial
being (own op left subtree) op right subtree, and the root's result sent back down: every
rank gets the root's bits. On the cuda device it runs on host copies of the GPU arrays.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ringtypes import Op
from ..host.reduce import divide, fold
from ..transport.messages import TAG, Scratch, as_bytes, buffer, own, wait_all
from ..wait import Waiter
from .base import ByMessages


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
    mine = own(scratch, 0, x, out)
    partial = Op.SUM if op is Op.AVG else op
    up_sends = []
    for t, (lo, hi) in enumerate(halves):
        parent, children = tree_links(k, me, bool(t))
        got = [buffer(scratch, 1 + 2 * t + j, x, hi - lo) for j in range(len(children))]
        wait_all([comm.Irecv(as_bytes(g), c, TAG + 1 + t) for g, c in zip(got, children)],
                 waiter, f"waiting for the children's partial sums (tree {t})")
        parts = [mine[lo:hi]] + got
        with np.errstate(over="ignore", invalid="ignore"):
            fold(lambda q: parts[q], partial, len(parts), out[lo:hi])
        if parent is not None:
            up_sends.append(comm.Isend(as_bytes(out[lo:hi]), parent, TAG + 1 + t))
        elif op is Op.AVG:
            divide(out[lo:hi], k)
    wait_all(up_sends, waiter, "sending the partial sums up (tree)")
    down_sends = []
    for t, (lo, hi) in enumerate(halves):  # the root's bits, from the parent, to the children
        parent, children = tree_links(k, me, bool(t))
        if parent is not None:
            wait_all([comm.Irecv(as_bytes(out[lo:hi]), parent, TAG + 3 + t)], waiter,
                     f"waiting for the result from the parent (tree {t})")
        down_sends += [comm.Isend(as_bytes(out[lo:hi]), c, TAG + 3 + t) for c in children]
    wait_all(down_sends, waiter, "sending the result down (tree)")


class Tree(ByMessages):
    name = "tree"
    reduce = staticmethod(tree)


ALGORITHM = Tree()
