"""Which ranks share a node, and so which ring links can use shared memory.

Real nodes come from MPI (Split_type COMM_TYPE_SHARED). RING_NODES=N splits the ranks of
every real node further into N emulated nodes of consecutive ranks, which then talk only
through MPI, so one machine exercises every multi-node path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mpi4py import MPI


@dataclass
class Topology:
    node_comm: MPI.Comm
    node_of: list[int]  # node index of every rank of the communicator
    local_of: list[int]  # rank within its node, for every rank
    machine_ranks: int = 1  # ranks of this communicator on this machine (emulated nodes too)
    machine_rank: int = 0  # this rank's index among them: which of the machine's GPUs it takes

    @property
    def nnodes(self) -> int:
        return len(set(self.node_of))

    def same_node(self, a: int, b: int) -> bool:
        return self.node_of[a] == self.node_of[b]

    def close(self) -> None:
        if self.node_comm != MPI.COMM_NULL:
            self.node_comm.Free()


def emulated_nodes() -> int:
    raw = os.environ.get("RING_NODES", "").strip()
    if not raw:
        return 0
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"RING_NODES must be a positive integer, got {raw!r}") from None
    if n < 1:
        raise ValueError(f"RING_NODES must be a positive integer, got {raw!r}")
    return n


def discover(comm: MPI.Comm, emulated: int | None = None) -> Topology:
    """Collective over comm. emulated: the nodes to emulate (0: none; None: RING_NODES's),
    the same on every rank (the Communicator compares them first: a rank that splits beside
    one that does not waits for ever)."""
    shared = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    machine_ranks, machine_rank = shared.size, shared.rank
    n = emulated_nodes() if emulated is None else emulated
    if n:
        color = shared.rank * min(n, shared.size) // shared.size
        node_comm = shared.Split(color, key=shared.rank)
        shared.Free()
    else:
        node_comm = shared
    # A node is named by the lowest communicator rank in it.
    leader = node_comm.allreduce(comm.rank, op=MPI.MIN)
    pairs = comm.allgather((leader, node_comm.rank))
    leaders = sorted({p[0] for p in pairs})
    return Topology(node_comm, [leaders.index(p[0]) for p in pairs], [p[1] for p in pairs],
                    machine_ranks, machine_rank)
