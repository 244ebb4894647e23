"""oneshot: every rank reads every other rank's x directly, in one round, for the messages
where the ring's 2(K-1) synchronised steps cost more than its bytes.

    host, one node   every rank that sends posts its x in the round that carries the
                     agreement record (transport/exchange.py), then reads what it needs of
                     the posted arrays into its out by ring/recipe.py's recipe: one round
                     trip per call, for every collective. The host's repeated calls
                     (ring/host/repeated.py) do the same in one compiled call.
    host, across     an all-reduce only: every rank's x by one MPI allgather or, up to
    nodes            RIDE_BYTES, inside the agreement's own allgather, then the fold.
    cuda, one node   an all-reduce only. Where the kernel path runs and the call fits the
                     inboxes (ring/cuda/oneshot_kernel.py): one launch on the caller's stream
                     that writes x into every peer's inbox as flagged words, waits for the
                     peers' and folds them (stream-ordered, kept for repeated calls). Else:
                     x is copied into this rank's GPU area, which every rank maps
                     (ring/cuda/areas.py); a round of the host's window says it is there;
                     then one launch folds the K areas into out.

An all-reduce reduces element e as ((x[0] op x[1]) op x[2]) ... op x[K-1], in the dtype, and
avg divides once by K: the same bits on every rank, and the same as naive and ps. A
reduce-scatter or a reduce folds in the flat ring's order (ring/recipe.py). Up to
EXCHANGE_BYTES per rank.
"""

from __future__ import annotations

import numpy as np

from ..call import Call
from ..context import Context
from ..host.reduce import fold, follow
from ..options import EXCHANGE_BYTES, RIDE_BYTES
from ..recipe import posted, posts, recipe
from ..schedule import Collective
from ..transport.messages import every_x
from .base import ALLREDUCE, EVERY, Algorithm

ONE_NODE = "it needs every rank of the communicator on one node"


def too_big(collective: Collective, nbytes: int, k: int) -> str | None:
    """Why a call of nbytes per rank does not fit the exchange's areas (None: it does)."""
    sent = posted(collective, nbytes, k)
    if sent > EXCHANGE_BYTES:
        return f"it carries at most {EXCHANGE_BYTES} bytes per rank, got {sent}"
    return None


def allgathered(ctx: Context, c: Call) -> None:
    """Across nodes: c.rode, every rank's x as it came with the agreement (a row of bytes
    per rank), or else one allgather of x; then c.out = the rank-order fold."""
    x = c.x
    rows = every_x(ctx.comm, ctx.waiter, x, ctx.scratch) if c.rode is None \
        else c.rode[:, :x.nbytes]
    parts = [row.view(x.dtype) for row in rows]
    with np.errstate(over="ignore", invalid="ignore"):
        fold(parts.__getitem__, c.op, ctx.size, c.out)


def on_gpu(ctx: Context, c: Call, seq: int):
    """This rank's x into its GPU area for round seq, and the round posted and waited for:
    (the areas, the storage dtype). The cuda device's first half of oneshot and twoshot."""
    dev, ex = ctx.backend, ctx.exchange
    areas = dev.areas(ex.cap, lambda: ctx.everyone_here("make its GPU area (oneshot / twoshot)"))
    storage = dev.storage(c.dtype)
    dev.copy(areas.view(ex.rank, seq, areas.DATA, storage, 0, c.count), c.x)
    dev.finish()  # x is in my area before the round says so
    ex.post(seq)
    ctx.wait_round(seq)
    return areas, storage


class Oneshot(Algorithm):
    name = "oneshot"
    serves = {"host": EVERY, "cuda": ALLREDUCE}

    def why_not(self, ctx: Context, collective: Collective, nbytes: int) -> str | None:
        why = super().why_not(ctx, collective, nbytes)
        if why:
            return why
        # across nodes, the host's all-reduce goes by MPI (allgathered)
        if ctx.exchange is None and not (collective is Collective.ALLREDUCE
                                         and ctx.device == "host"):
            return ONE_NODE
        if ctx.device == "cuda" and ctx.exchange is not None:
            why = ctx.backend.no_peer_access()
            if why:
                return why
        return too_big(collective, nbytes, ctx.size)

    def rides(self, ctx: Context) -> bool:
        return ctx.device == "host"

    def posts(self, ctx: Context, c: Call):
        if ctx.exchange is None:  # up to RIDE_BYTES in the agreement's allgather
            return c.x if c.count * c.dtype.itemsize <= RIDE_BYTES else None
        return c.x if c.count and posts(c.collective, ctx.rank, c.root) else None

    def run(self, ctx: Context, c: Call, defer: bool = False):
        ex = ctx.exchange
        if ctx.device == "cuda":
            ran, pending = ctx.backend.one_launch(
                "oneshot", c, lambda: ctx.everyone_here("make its one-shot inbox (oneshot)"),
                defer)
            if ran:
                return pending
            seq = ex.next_round()
            areas, storage = on_gpu(ctx, c, seq)
            ctx.backend.fold(lambda q: areas.view(q, seq, areas.DATA, storage, 0, c.count),
                             c.op, ex.size, c.out, c.dtype)
            ctx.backend.finish()
            return
        if ex is None:
            allgathered(ctx, c)
            return
        seq, dt = ex.seq, c.out.dtype  # the agreement's round carried the data
        cap = ex.cap // dt.itemsize
        follow(recipe(c.collective, ex.size, ex.rank, c.root, c.count),
               lambda q: ex.data(q, seq, dt, cap), c.op, c.out)


ALGORITHM = Oneshot()
