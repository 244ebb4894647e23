"""The flat ring: every collective as a pipelined walk around the ranks (ring/schedule.py).

All-reduce is reduce-scatter then all-gather, 2(K-1) steps of S/K, each cut into chunks that
travel through `nslots` slots per link, so each rank sends 2(K-1)/K of its data whatever K
is. Reduce-scatter and all-gather are its halves; broadcast, reduce, gather and scatter are
chains along the ring from or to the root; all-to-all carries every block around it.
Block b of a reduction is x[b+1] op ... op x[b]. Runs everywhere: it is "auto"'s fallback.
"""

from __future__ import annotations

from ..call import Call
from ..context import Context
from ..options import COMPILED_CHUNK_BYTES
from ..schedule import Collective, plan
from .base import Algorithm


class Ring(Algorithm):
    name = "ring"
    walks_ring = True

    def chunk_bytes(self, ctx: Context, c: Call, given: bool) -> int:
        """The communicator's chunk_bytes (the slot size), except on the host with every
        rank on one node, where the walk is compiled (host/compiled_walk.py) for c's dtype and
        op: there COMPILED_CHUNK_BYTES, unless the communicator was given chunk_bytes."""
        if given or ctx.topo.nnodes != 1 or not ctx.backend.compiles(c.dtype, c.op, c.wire):
            return c.chunk_bytes
        return min(COMPILED_CHUNK_BYTES, c.chunk_bytes)

    def why_not_compressed(self, ctx: Context, collective: Collective,
                           nbytes: int) -> str | None:
        return None  # its slots carry the 16-bit wire, every hop summing in float32

    def run(self, ctx: Context, c: Call, defer: bool = False):
        b = ctx.backend
        item = c.dtype.itemsize if c.wire is None else c.wire.itemsize
        p = plan(c.collective, ctx.size, ctx.rank, c.count, item, c.chunk_bytes,
                 b.align(c.collective, item), c.root)
        if c.wire is not None:  # the host backend's (the communicator refuses it elsewhere)
            return b.run(p, c.op, c.x, c.out, wire=c.wire)
        if c.collective is Collective.ALLTOALL and c.in_place:
            return b.alltoall_in_place(p, c.op, c.out, logical=c.dtype, defer=defer)
        return b.run(p, c.op, c.x, c.out, logical=c.dtype, defer=defer)


ALGORITHM = Ring()
