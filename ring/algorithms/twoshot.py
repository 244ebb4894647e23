"""twoshot (all-reduce, one node): every rank posts x as oneshot does; then rank r reduces
block r (schedule.split(n, K)) of all K into its result area, a second round says so, and
every rank copies the K reduced blocks. Each rank reads 2n elements instead of oneshot's
K n.

On the host the posts ride in the agreement's round (transport/exchange.py's ROUND1, the
results in its ROUND2). On the cuda device, where the kernel path runs: one launch on the
caller's stream (ring/cuda/twoshot_kernel.py: x staged into an area every rank maps, each
rank's block reduced and pushed into every rank's output area, flag barriers between, any
size in rounds of the areas); elsewhere the data sit in the GPU areas every rank maps
(ring/cuda/areas.py) and the rounds go through the host's window. Element e is reduced in rank
order, ((x[0] op x[1]) op ...) op x[K-1]: the same bits as oneshot, naive and ps.

Reduce-scatter and all-gather are its two halves, and on the cuda device, where the kernel
path runs, it runs them too, as one launch each (the same kernel module): rank r folds
block r of every rank's x into its out (reading x in place where every rank registered it,
else through the areas), or pushes its x into block r of every rank's out (in place where
every rank registered out). A rank moves n elements of memory (plus the staging) where the
ring's K - 1 steps write and read every block again through its slots.
"""

from __future__ import annotations

import numpy as np

from ..call import Call
from ..context import Context
from ..host.reduce import fold
from ..schedule import Collective, split
from ..transport.exchange import ROUND2
from .base import ALLREDUCE, Algorithm
from .oneshot import ONE_NODE, on_gpu, too_big

WAITING = "to post its reduced block (twoshot)"
HALVES = frozenset({Collective.REDUCE_SCATTER, Collective.ALLGATHER})  # (its kernel's only)
KERNEL_ONLY = ("it runs reduce-scatter and all-gather as its kernel only, where the kernel "
               "path runs (path=\"kernel\": every rank of the node sharing GPU memory)")


class Twoshot(Algorithm):
    name = "twoshot"
    serves = {"host": ALLREDUCE, "cuda": ALLREDUCE | HALVES}

    def why_not(self, ctx: Context, collective: Collective, nbytes: int) -> str | None:
        why = super().why_not(ctx, collective, nbytes)
        if why:
            return why
        if ctx.exchange is None:
            return ONE_NODE
        if ctx.device == "cuda":
            why = ctx.backend.no_peer_access()
            if why:
                return why
        if ctx.device == "cuda" and ctx.backend.kernel is not None:
            return None  # the two-shot kernel: any size, in rounds of its areas
        if collective in HALVES:
            return KERNEL_ONLY
        return too_big(collective, nbytes, ctx.size)

    def rides(self, ctx: Context) -> bool:
        return ctx.device == "host"

    def posts(self, ctx: Context, c: Call):
        return c.x if c.count else None

    def run(self, ctx: Context, c: Call, defer: bool = False):
        ex = ctx.exchange
        n, k, me = c.count, ex.size, ex.rank
        b = split(n, k)
        lo, hi = b[me], b[me + 1]
        if ctx.device == "cuda":
            ran, pending = ctx.backend.one_launch(
                "twoshot", c, lambda: ctx.everyone_here("make its two-shot areas (twoshot)"),
                defer)
            if ran:
                return pending
            if c.collective in HALVES:  # one rank (why_not refuses them elsewhere)
                if not c.in_place:
                    ctx.backend.copy(c.out, c.x)
                    ctx.backend.finish()
                return None
            seq = ex.next_round()
            areas, storage = on_gpu(ctx, c, seq)
            dev = ctx.backend
            dev.fold(lambda q: areas.view(q, seq, areas.DATA, storage, lo, hi), c.op, k,
                     areas.view(me, seq, areas.RESULT, storage, 0, hi - lo), c.dtype)
            dev.finish()
            ex.post(seq, ROUND2)
            ex.wait(seq, ROUND2, WAITING)
            for q in range(k):
                dev.copy(c.out[b[q]:b[q + 1]],
                         areas.view(q, seq, areas.RESULT, storage, 0, b[q + 1] - b[q]))
            dev.finish()
            return
        seq, dt = ex.seq, c.out.dtype  # the agreement's round carried the data
        mine = ex.result(me, seq, dt, hi - lo)
        with np.errstate(over="ignore", invalid="ignore"):
            fold(lambda q: ex.data(q, seq, dt, n)[lo:hi], c.op, k, mine)
        ex.post(seq, ROUND2)
        ex.wait(seq, ROUND2, WAITING)
        for q in range(k):
            c.out[b[q]:b[q + 1]] = ex.result(q, seq, dt, b[q + 1] - b[q])


ALGORITHM = Twoshot()
