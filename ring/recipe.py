"""What each rank reads in a collective done in one round through node-shared memory (the
oneshot algorithm, ring/algorithms/oneshot.py, and the host's repeated calls,
ring/host/repeated.py): a pure function of the agreed call.

Every rank that sends (all of them; for broadcast and scatter the root) posts its x; then
each rank folds or copies what it needs of the posted arrays into its own out. An
all-reduce reduces element e as ((x[0] op x[1]) op x[2]) ... op x[K-1], in the dtype (avg:
one division by K). A reduce-scatter or a reduce folds in the flat ring's order
(schedule.py: block r as x[r+1] op ... op x[r], the root's as x[root+1] op ... op x[root]),
so the same call gives the same bits by either algorithm. The other collectives only copy.
"""

from __future__ import annotations

from .schedule import Collective, split

C = Collective


def posts(collective: Collective, rank: int, root: int) -> bool:
    """Whether this rank's x travels (broadcast and scatter: the root's only)."""
    return rank == root or collective not in (C.BROADCAST, C.SCATTER)


def posted(collective: Collective, count, k: int):
    """What each rank that sends posts, in elements or bytes as count is: x (an
    all-gather's or a gather's count is K of them)."""
    return count // k if collective in (C.ALLGATHER, C.GATHER) else count


def recipe(collective: Collective, k: int, rank: int, root: int, count: int):
    """What rank `rank` of k reads after the round, as segments (out_lo, n, sources):
    out[out_lo:out_lo + n] is the fold, in the order listed, of posted[q][lo:lo + n] for
    (q, lo) in sources (one source: a copy). count: the call's agreed count (call.Call's:
    the plan's full array). Ranks that write nothing (reduce, gather: not the root;
    broadcast: the root) get no segments."""
    if collective in (C.ALLGATHER, C.GATHER):
        if collective is C.GATHER and rank != root:
            return []
        n = posted(collective, count, k)
        return [(q * n, n, ((q, 0),)) for q in range(k)]
    if collective in (C.ALLREDUCE, C.REDUCE):
        if collective is C.REDUCE and rank != root:
            return []
        order = range(k) if collective is C.ALLREDUCE else ring_order(root, k)
        return [(0, count, tuple((q, 0) for q in order))]
    if collective is C.BROADCAST:
        return [] if rank == root else [(0, count, ((root, 0),))]
    b = count // k
    if collective is C.REDUCE_SCATTER:
        return [(0, b, tuple((q, rank * b) for q in ring_order(rank, k)))]
    if collective is C.SCATTER:
        return [(0, b, ((root, rank * b),))]
    if collective is C.ALLTOALL:
        return [(q * b, b, ((q, rank * b),)) for q in range(k)]
    raise ValueError(f"oneshot: no recipe for {collective}")


def ring_order(block: int, k: int) -> tuple[int, ...]:
    """The flat ring's order of reduction for `block` (schedule.py): block+1, ..., block."""
    return tuple((block + 1 + i) % k for i in range(k))


def halves(k: int, rank: int, count: int, root: int | None = None):
    """An all-reduce, or a reduce to `root`, in two phases (cma's from in_halves' size on,
    ring/algorithms/cma.py), as two recipes over different posted arrays: (the
    reduce-scatter's: this rank's block of schedule.split(count, k) folded from every
    rank's x, in rank order, a reduce's in the ring's order for its root; the gather's:
    every other block copied from its owner's out, where the first phase left it reduced:
    every rank's for an all-reduce, the root's alone for a reduce). Element e is folded in
    recipe()'s order: the same bits."""
    b = split(count, k)
    lo, n = b[rank], b[rank + 1] - b[rank]
    order = range(k) if root is None else ring_order(root, k)
    mine = [(lo, n, tuple((q, lo) for q in order))] if n else []
    if root is not None and rank != root:
        return mine, []
    return mine, [(b[q], b[q + 1] - b[q], ((q, b[q]),)) for q in range(k)
                  if q != rank and b[q + 1] > b[q]]
