"""cma: oneshot's recipe (ring/recipe.py) read straight out of the peers' arrays, by
cross-memory attach (transport/cma.py): one copy from a peer's x into this rank's out, the
single-copy path MPICH takes for large messages within a node, where the ring copies each
chunk twice (into the successor's slot, out of it) and oneshot's window holds 1 MiB.

    host, one node   every rank that sends posts x's address in the round that carries
                     the agreement record (transport/exchange.py); each rank then reads
                     what the recipe says of the peers' x into its out (a copy: straight
                     in; a fold: in pieces of PIECE_BYTES into scratch, folded in the
                     recipe's order, so the bits are oneshot's and the ring's); then one
                     more round, so that no rank returns (and lets its caller write x)
                     while a peer still reads it. Two rounds a call, whatever the size.
    elsewhere        refused: across nodes (no shared memory, other kernels) and where the
                     ranks' processes may not read each other's memory (the exchange's probe
                     at creation: another user, a ptrace policy); on the cuda device (its
                     arrays are not in the processes' memory).

In place, where this rank writes what it posts (an all-reduce, a reduce's root, an
all-to-all), it posts a copy of what the peers read of x instead (its own reads come from x
itself, copied into scratch where they would be overwritten first). A read that fails (it
should not, after the probe) fails the call on every rank, by a flag in the closing round.
"""

from __future__ import annotations

import numpy as np

from ..call import Call
from ..context import Context
from ..host.reduce import fold
from ..recipe import posts, recipe
from ..schedule import Collective
from ..transport import cma
from ..transport.messages import own
from .base import EVERY, Algorithm
from .oneshot import ONE_NODE

PIECE_BYTES = 1 << 18  # a fold's piece of each source: read into scratch, folded in cache
POSTED, PARTS = 0, 1  # ctx.scratch's buffers: the posted copy, then one per source


def posted(ctx: Context, c: Call) -> np.ndarray:
    """What this rank posts of call c (transport/cma.posted)."""
    return cma.posted(c.x, lambda: ctx.scratch.get(POSTED, c.x), c.collective, c.in_place,
                      ctx.rank, ctx.size)


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
        return np.array([posted(ctx, c).ctypes.data], np.int64)

    def run(self, ctx: Context, c: Call, defer: bool = False):
        ex = ctx.exchange
        seq, me = ex.seq, ex.rank  # the agreement's round carried the addresses
        at = [int(ex.data(q, seq, np.int64, 1)[0]) if q != me and posts(c.collective, q, c.root)
              else 0 for q in range(ex.size)]
        err = 0
        try:
            self._follow(ctx, c, at)
        except OSError as e:
            err = e.errno or -1
        done = ex.next_round()  # nobody lets go of its x before every peer has read it
        ex.record(me, done)[0] = err
        ex.post(done)
        ex.wait(done, what=cma.CLOSING)
        cma.raise_failures(ex, done)

    @staticmethod
    def _follow(ctx: Context, c: Call, at: list[int]) -> None:
        """c's recipe, its sources read from the peers' memory (at[q]: rank q's posted
        address) and from this rank's x (never from its posted copy)."""
        ex, out, mine = ctx.exchange, c.out, c.x
        me, item = ex.rank, out.dtype.itemsize

        def peer(q: int, lo: int, into: np.ndarray) -> np.ndarray:
            """Rank q's posted elements from lo, as many as into holds, read into into."""
            cma.read(ex.pids[q], at[q] + lo * item, into)
            return into

        for lo, n, sources in recipe(c.collective, ex.size, me, c.root, c.count):
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
                         if q == me else peer(q, start + a, ctx.scratch.get(PARTS + i, out, m))
                         for i, (q, start) in enumerate(sources)]
                with np.errstate(over="ignore", invalid="ignore"):
                    fold(parts.__getitem__, c.op, len(parts), piece)


ALGORITHM = Cma()
