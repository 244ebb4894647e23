"""Collectives in one or two rounds through node-shared memory (transport/exchange.py), for
the messages where the ring's synchronised steps cost more than its bytes.

    oneshot   every rank that sends posts its x in the round that carries the agreement
              record, then reads what it needs of the posted arrays into its own out: one
              round trip per call, for every collective (`recipe` says what each rank
              reads: a pure function of the agreed call).
    twoshot   (all-reduce) the same post; then rank r reduces block r (schedule.split(n, K))
              of all K into its result slot, a second round, and every rank copies the K
              blocks. Each rank reads 2n elements instead of oneshot's K n.

An all-reduce reduces element e as ((x[0] op x[1]) op x[2]) ... op x[K-1], in the dtype, and
avg divides once by K: the same bits on every rank, and the same as naive and ps (p2p.py).
A reduce-scatter or a reduce folds in the flat ring's order (schedule.py: block r as
x[r+1] op ... op x[r], the root's as x[root+1] op ... op x[root]), so the same call gives
the same bits by either algorithm. The other collectives only copy.
This is the host device's; the cuda device's keeps its data in GPU memory (cuda/shared.py,
all-reduce only).
"""

from __future__ import annotations

import numpy as np

from ringtypes import Op

from .host.reduce import combine, divide
from .schedule import Collective, split
from .transport.exchange import ROUND2, Exchange


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


def post(ex: Exchange, seq: int, x: np.ndarray) -> None:
    """Put x where the peers read it (before the round is posted)."""
    ex.data(ex.rank, seq, x.dtype, x.size)[...] = x


def fold(parts, op: Op, k: int, out: np.ndarray) -> None:
    """out = ((parts(0) op parts(1)) op ...) op parts(k-1), avg divided by k."""
    np.copyto(out, parts(0))
    for q in range(1, k):
        combine(op, out, parts(q), out)
    if op is Op.AVG:
        divide(out, k)


def follow(segments, parts, op: Op, out: np.ndarray) -> None:
    """Do a recipe: parts(q) is rank q's posted array (out's dtype)."""
    for lo, n, sources in segments:
        if len(sources) == 1:
            q, at = sources[0]
            out[lo:lo + n] = parts(q)[at:at + n]
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            fold(lambda i: parts(sources[i][0])[sources[i][1]:sources[i][1] + n], op,
                 len(sources), out[lo:lo + n])


def run(ex: Exchange, seq: int, collective: Collective, op: Op, root: int, count: int,
        out: np.ndarray) -> None:
    """After the round of call `seq`: this rank's part of any collective (recipe)."""
    dt, cap = out.dtype, ex.cap // out.dtype.itemsize
    follow(recipe(collective, ex.size, ex.rank, root, count),
           lambda q: ex.data(q, seq, dt, cap), op, out)


def twoshot(ex: Exchange, seq: int, op: Op, out: np.ndarray) -> None:
    n, dt, k, me = out.size, out.dtype, ex.size, ex.rank
    b = split(n, k)
    lo, hi = b[me], b[me + 1]
    mine = ex.result(me, seq, dt, hi - lo)
    with np.errstate(over="ignore", invalid="ignore"):
        fold(lambda q: ex.data(q, seq, dt, n)[lo:hi], op, k, mine)
    ex.post(seq, ROUND2)
    ex.wait(seq, ROUND2, "to post its reduced block (twoshot)")
    for q in range(k):
        out[b[q]:b[q + 1]] = ex.result(q, seq, dt, b[q + 1] - b[q])
