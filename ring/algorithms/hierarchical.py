"""Two-level collectives: rings inside each node over shared memory, rings across nodes
over MPI, so that only a node's share of the data crosses the slower inter-node links.

With N nodes of L ranks each, rank r = node a * L + local index j:

  all-reduce     1. reduce-scatter inside the node: local rank j holds block j (of L) summed
                    over its node;
                 2. all-reduce of block j across the nodes, among the N ranks of index j;
                 3. all-gather inside the node.
                 Each rank sends 2(N-1)/N of 1/L of the array between nodes, where the flat
                 ring sends 2(K-1)/K of all of it over the links that cross nodes.
  reduce-scatter the input seen as [N][L][b]; transposed to [L][N][b] so that local rank j's
                 share (block (a, j) of every node a) is contiguous; reduce-scatter inside
                 the node, then across nodes: rank (a, j) ends with block a*L + j.
  all-gather     the reverse: across nodes, inside the node, transpose back.

Reduction order differs from the flat ring's but is fixed, so results are still bitwise the
same on every rank and from run to run. avg divides once, by the whole job's size, at the
last reduction. Needs equal node sizes and consecutive ranks per node (mpiexec's default
block placement); `applies()` says whether they hold, and "auto" falls back to the flat ring.
The rings are made on the first call that runs here (collectively: every rank agreed on
that call) and kept until the communicator closes.
"""

from __future__ import annotations

from mpi4py import MPI

from ringtypes import Op
from ..call import Call
from ..context import Context
from ..schedule import Collective, plan, plan_blocks, split
from ..topology import Topology
from .base import DEVICES, Algorithm

C = Collective


def applies(topo: Topology, size: int) -> str | None:
    """None if the two-level algorithm can run on this layout, else why not."""
    nodes = topo.nnodes
    if nodes < 2:
        return "one node: nothing to gain over the flat ring"
    per = size // nodes
    if per * nodes != size or any(topo.node_of[r] != r // per for r in range(size)):
        return ("needs the same number of ranks on every node, consecutive in rank order "
                f"(nodes of ranks {topo.node_of})")
    if per == 1:
        return "one rank per node: the flat ring is already the inter-node ring"
    return None


class Hierarchical:
    def __init__(self, comm: MPI.Comm, topo: Topology, make_backend):
        """Collective over comm. make_backend(comm, topo) builds a device backend (links,
        executor) for a sub-communicator."""
        self.size, self.nodes = comm.size, topo.nnodes
        self.per = comm.size // self.nodes
        self.node, self.local = divmod(comm.rank, self.per)
        node_comm = topo.node_comm.Dup()
        here = (topo.machine_ranks, topo.machine_rank)  # the GPU stays the rank's own
        self._local_topo = Topology(node_comm, [0] * self.per, list(range(self.per)), *here)
        self.inner = make_backend(node_comm, self._local_topo)
        col = comm.Split(self.local, key=self.node)
        self._cross_topo = Topology(MPI.COMM_SELF.Dup(), list(range(self.nodes)),
                                    [0] * self.nodes, *here)
        self._col = col
        self.cross = make_backend(col, self._cross_topo)

    def close(self) -> None:
        self.inner.close()
        self.cross.close()
        self._local_topo.close()
        self._cross_topo.close()
        self._col.Free()

    # -- the three collectives ---------------------------------------------------------
    def run(self, collective: Collective, op: Op, x, out, itemsize: int, chunk_bytes: int,
            logical=None, wire=None) -> None:
        """x, out: 1-D views as the device backend takes them; logical: the data's dtype
        where it differs from the storage's (bfloat16 in uint16 on a GPU). wire (all-reduce,
        host device): the 16-bit type the ring across nodes carries float32 data in; the
        rings inside a node move float32 (their links are memory)."""
        if collective is Collective.ALLREDUCE:
            self._allreduce(op, x, out, itemsize, chunk_bytes, logical, wire)
        elif collective is Collective.REDUCE_SCATTER:
            self._reduce_scatter(op, x, out, itemsize, chunk_bytes, logical)
        else:
            self._allgather(x, out, itemsize, chunk_bytes, logical)

    def _allreduce(self, op, x, out, itemsize, chunk_bytes, logical, wire=None):
        n, L, j = x.size, self.per, self.local
        blocks = tuple(split(n, L))
        mine = out[blocks[j]:blocks[j + 1]]
        partial = Op.SUM if op is Op.AVG else op
        self.inner.run(plan_blocks(Collective.REDUCE_SCATTER, L, j, blocks, itemsize, chunk_bytes),
                       partial, x, mine, logical=logical)
        item = itemsize if wire is None else wire.itemsize  # the plan cut for what is sent
        self.cross.run(plan(Collective.ALLREDUCE, self.nodes, self.node, mine.size, item,
                            chunk_bytes), op, mine, mine, divisor=self.size, logical=logical,
                       **({} if wire is None else {"wire": wire}))
        self.inner.run(plan_blocks(Collective.ALLGATHER, L, j, blocks, itemsize, chunk_bytes),
                       op, mine, out, logical=logical)

    def _reduce_scatter(self, op, x, out, itemsize, chunk_bytes, logical):
        N, L, dev = self.nodes, self.per, self.inner
        b = out.size
        staged = dev.scratch(x.size, x.dtype)  # [L][N][b]
        dev.swap_blocks(x, staged, N, L, b)
        share = dev.scratch(N * b, x.dtype)
        partial = Op.SUM if op is Op.AVG else op
        dev.run(plan(Collective.REDUCE_SCATTER, L, self.local, staged.size, itemsize, chunk_bytes),
                partial, staged, share, logical=logical)
        self.cross.run(plan(Collective.REDUCE_SCATTER, N, self.node, share.size, itemsize,
                            chunk_bytes), op, share, out, divisor=self.size, logical=logical)

    def _allgather(self, x, out, itemsize, chunk_bytes, logical):
        N, L, dev = self.nodes, self.per, self.inner
        b = x.size
        column = dev.scratch(N * b, x.dtype)  # [N][b]: this index's block of every node
        self.cross.run(plan(Collective.ALLGATHER, N, self.node, column.size, itemsize, chunk_bytes),
                       Op.SUM, x, column, logical=logical)
        gathered = dev.scratch(L * N * b, x.dtype)  # [L][N][b]
        dev.run(plan(Collective.ALLGATHER, L, self.local, gathered.size, itemsize, chunk_bytes),
                Op.SUM, column, gathered, logical=logical)
        dev.swap_blocks(gathered, out, L, N, b)
        dev.finish()


class TwoLevel(Algorithm):
    name = "hierarchical"
    walks_ring = True
    serves = {d: frozenset({C.ALLREDUCE, C.REDUCE_SCATTER, C.ALLGATHER}) for d in DEVICES}

    def why_not(self, ctx: Context, collective: Collective, nbytes: int) -> str | None:
        if collective.rooted:
            return f"{collective} runs as a chain along the flat ring only"
        if collective is C.ALLTOALL:
            return "alltoall runs on the flat ring only"
        if "hierarchical.why" not in ctx.kept:  # the layout's answer, kept: it cannot change
            ctx.kept["hierarchical.why"] = applies(ctx.topo, ctx.size)
        return ctx.kept["hierarchical.why"]

    def why_not_compressed(self, ctx: Context, collective: Collective,
                           nbytes: int) -> str | None:
        """The all-reduce only, where the two-level algorithm runs: its ring across nodes
        carries the 16-bit wire, the rings inside nodes float32 (their links are memory)."""
        if collective is C.ALLREDUCE and self.why_not(ctx, collective, nbytes) is None:
            return None
        return super().why_not_compressed(ctx, collective, nbytes)

    def run(self, ctx: Context, c: Call, defer: bool = False):
        rings = ctx.kept.get(self.name)
        if rings is None:  # collective: every rank agreed on this call
            ctx.everyone_here("make the two-level rings (hierarchical)")
            rings = ctx.kept[self.name] = Hierarchical(ctx.comm, ctx.topo, ctx.make_backend)
        rings.run(c.collective, c.op, c.x, c.out, c.dtype.itemsize, c.chunk_bytes, c.dtype,
                  wire=c.wire)


ALGORITHM = TwoLevel()
