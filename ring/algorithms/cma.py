"""cma: oneshot's recipe (ring/recipe.py) read straight out of the peers' arrays, by
cross-memory attach (transport/cma.py): one copy from a peer's x into this rank's out, the
single-copy path MPICH takes for large messages within a node, where the ring copies each
chunk twice (into the successor's slot, out of it) and oneshot's window holds 1 MiB.

    host, one node   every rank that sends posts x's address (and out's) in the round
                     that carries the agreement record (transport/exchange.py); each rank
                     then reads what the recipe says of the peers' x into its out (a copy:
                     straight in; a fold: in pieces of PIECE_BYTES into scratch, folded in
                     the recipe's order, so the bits are oneshot's and the ring's); then one
                     more round, so that no rank returns (and lets its caller write x)
                     while a peer still reads it. Two rounds a call, whatever the size.
                     An all-reduce or a reduce from in_halves' size on goes in two phases
                     (recipe.halves): each rank folds its block of every x into its out (a
                     reduce's other ranks: into a buffer they post), a round, then each (a
                     reduce: its root) copies the other blocks out of their owners'; three
                     rounds.
    elsewhere        refused: across nodes (no shared memory, other kernels) and where the
                     ranks' processes may not read each other's memory (the exchange's probe
                     at creation: another user, a ptrace policy); on the cuda device (its
                     arrays are not in the processes' memory).

In place, where this rank writes what it posts and a peer reads it (a one-phase all-reduce,
an all-to-all), it posts a copy of what the peers read of x instead (its own reads come
from x itself, copied into scratch where they would be overwritten first). A read that
fails (it should not, after the probe) fails the call on every rank, by a flag in the round
that follows it.
"""

from __future__ import annotations

import numpy as np

from ..call import Call
from ..context import Context
from ..host.reduce import fold
from ..recipe import halves, posts, recipe
from ..schedule import Collective
from ..transport import cma
from ..transport.cma import PARTIAL, PARTS, POSTED
from ..transport.messages import own
from .base import EVERY, Algorithm
from .oneshot import ONE_NODE

PIECE_BYTES = 1 << 18  # a fold's piece of each source: read into scratch, folded in cache
HALVES_BYTES = 1 << 16  # from 4 ranks: where an all-reduce goes in two phases (in_halves)
TWO_PHASES = (Collective.ALLREDUCE, Collective.REDUCE)


def in_halves(ctx: Context, c: Call) -> bool:
    """Whether call c runs in two phases (recipe.halves): an all-reduce of HALVES_BYTES or
    more from 4 ranks, 4 and 16 times that at 3 and 2 (64 KiB, 256 KiB, 1 MiB); in place,
    where one phase would post a copy of x first, a sixteenth of that, but 16 KiB at least
    (64 KiB at 2 ranks, 16 KiB from 3): where the two phases overtook one on the CI
    machine (results/host-cma.md). Each rank then reads 2 (K - 1) / K of x's bytes instead
    of (K - 1) x's, folds 1 / K of them, and posts x itself in place (the peers read its
    other blocks only before it writes them, in the second phase); one round more."""
    k = ctx.size
    if c.collective not in TWO_PHASES or k < 2:
        return False
    limit = HALVES_BYTES << 2 * max(0, 4 - k)
    if c.in_place and c.collective is Collective.ALLREDUCE:  # (a reduce's: the root's alone)
        limit = max(limit >> 4, HALVES_BYTES >> 2)
    return c.count * c.dtype.itemsize >= limit


def posted(ctx: Context, c: Call) -> np.ndarray:
    """What this rank posts of call c (transport/cma.posted)."""
    return cma.posted(c.x, lambda: ctx.scratch.get(POSTED, c.x), c.collective,
                      c.in_place and not in_halves(ctx, c), ctx.rank, ctx.size)


def target(ctx: Context, c: Call) -> np.ndarray | None:
    """Where this rank's recipe writes: c's out; in two phases, on a rank of a reduce that
    is not its root, a buffer of x's size (its block of the first phase, read from there
    by the root; an out given there is not touched)."""
    if c.collective is Collective.REDUCE and ctx.rank != c.root and in_halves(ctx, c):
        return ctx.scratch.get(PARTIAL, c.x)
    return c.out


class Cma(Algorithm):
    name = "cma"
    serves = {"host": EVERY, "cuda": frozenset()}

    def why_not(self, ctx: Context, collective: Collective, nbytes: int) -> str | None:
        why = super().why_not(ctx, collective, nbytes)
        if why:
            return why
        if ctx.exchange is None:
            return ONE_NODE
        return ctx.exchange.cma

    def rides(self, ctx: Context) -> bool:
        return True

    def posts(self, ctx: Context, c: Call):
        if not (c.count and posts(c.collective, ctx.rank, c.root)):
            return None
        out = target(ctx, c)
        return np.array([posted(ctx, c).ctypes.data, 0 if out is None else out.ctypes.data],
                        np.int64)

    def run(self, ctx: Context, c: Call, defer: bool = False):
        ex = ctx.exchange
        seq, me = ex.seq, ex.rank  # the agreement's round carried the addresses

        def at(field: int) -> list[int]:
            """Every peer's posted address: its x's (field 0) or its out's (1)."""
            return [int(ex.data(q, seq, np.int64, 2)[field])
                    if q != me and posts(c.collective, q, c.root) else 0 for q in range(ex.size)]

        out = target(ctx, c)
        if in_halves(ctx, c):
            root = c.root if c.collective is Collective.REDUCE else None
            mine, others = halves(ex.size, me, c.count, root)
            # every rank's block reduced into its out before any is read from there
            self._round(ctx, self._follow(ctx, c, out, at(0), mine), cma.REDUCED)
            self._round(ctx, self._follow(ctx, c, out, at(1), others), cma.CLOSING)
        else:
            segments = recipe(c.collective, ex.size, me, c.root, c.count)
            self._round(ctx, self._follow(ctx, c, out, at(0), segments), cma.CLOSING)

    @staticmethod
    def _round(ctx: Context, err: int, what: str) -> None:
        """One more round of the window, carrying this rank's read status err (0: every
        read done; nobody lets go of what it posted before every peer has read it):
        RingError on every rank where any rank's read failed."""
        ex = ctx.exchange
        done = ex.next_round()
        ex.record(ex.rank, done)[0] = err
        ex.post(done)
        ex.wait(done, what=what)
        cma.raise_failures(ex, done)

    @staticmethod
    def _follow(ctx: Context, c: Call, out, at: list[int], segments) -> int:
        """c's segments of a recipe into out, their sources read from the peers' memory
        (at[q]: rank q's posted address) and from this rank's x (never from its posted
        copy): 0, or the errno of the first read that failed (-1: a short one)."""
        ex, mine = ctx.exchange, c.x
        me, item = ex.rank, out.dtype.itemsize

        def peer(q: int, lo: int, into: np.ndarray) -> np.ndarray:
            """Rank q's posted elements from lo, as many as into holds, read into into."""
            cma.read(ex.pids[q], at[q] + lo * item, into)
            return into

        try:
            for lo, n, sources in segments:
                if len(sources) == 1:
                    q, start = sources[0]
                    dst, here = out[lo:lo + n], mine[start:start + n]
                    if q != me:
                        peer(q, start, dst)
                    elif not np.may_share_memory(here, dst):  # (the same memory: there already)
                        np.copyto(dst, here)
                    continue
                step = max(1, PIECE_BYTES // item)
                for a in range(0, n, step):
                    m = min(step, n - a)
                    piece = out[lo + a:lo + a + m]
                    parts = [own(ctx.scratch, PARTS + i, mine[start + a:start + a + m], piece)
                             if q == me else
                             peer(q, start + a, ctx.scratch.get(PARTS + i, out, m))
                             for i, (q, start) in enumerate(sources)]
                    with np.errstate(over="ignore", invalid="ignore"):
                        fold(parts.__getitem__, c.op, len(parts), piece)
        except OSError as e:
            return e.errno or -1
        return 0


ALGORITHM = Cma()
