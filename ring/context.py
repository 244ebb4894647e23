"""What an algorithm and a fast path see of the communicator they run for: a narrow view,
not the API object (ring/communicator.py owns one and hands it down).

    comm      the communicator's own MPI communicator (a private duplicate)
    topo      which ranks share a node (topology.py)
    device    "host" or "cuda"; backend: that device's executor and ring links
    waiter    the call's deadline: every wait of a call is bounded by it (wait.py)
    exchange  the node-shared window of one-round calls when every rank is on one node
              (transport/exchange.py), else None; it counts its rounds
    scratch   host buffers kept from call to call for whole-buffer MPI messages
    calls     collective calls so far: the agreement's call number
    posted    a kept kernel-path call's exchange round, posted and not yet read back
              (ring/host/repeated.py's post_kept), or None
    kept      what an algorithm makes on its first call and keeps until close (the
              two-level rings, say), by name; whatever has a close() is closed with it
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from mpi4py import MPI

from .errors import TimeoutError
from .topology import Topology
from .transport.exchange import Exchange
from .transport.messages import Scratch
from .wait import Waiter


@dataclass(eq=False)
class Context:
    comm: MPI.Comm
    topo: Topology
    device: str
    backend: Any
    waiter: Waiter
    exchange: Exchange | None
    make_backend: Callable  # make_backend(comm, topo): a backend for a sub-communicator
    scratch: Scratch = field(default_factory=Scratch)
    calls: int = 0
    kept: dict = field(default_factory=dict)
    posted: Any = None

    @property
    def rank(self) -> int:
        return self.comm.rank

    @property
    def size(self) -> int:
        return self.comm.size

    def everyone_here(self, what: str) -> None:
        """A barrier under the call's deadline, before a set-up that a call makes on first
        use (collective MPI calls, unbounded): a rank lost since the agreement costs a
        TimeoutError here instead of a hang there."""
        done = self.comm.Ibarrier()
        self.waiter.until(done.Test, lambda: f"waiting for every rank to {what}")

    def wait_round(self, seq: int) -> None:
        """Until every rank has posted exchange round seq; a timeout names who has not."""
        try:
            self.exchange.wait(seq)
        except TimeoutError as e:
            behind = self.exchange.behind(seq)
            raise TimeoutError(f"{e}; rank(s) {behind} have not reached this call") \
                if behind else e from None

    def close_kept(self) -> None:
        for thing in self.kept.values():
            if hasattr(thing, "close"):
                thing.close()
        self.kept.clear()
