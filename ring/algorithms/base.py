"""What every algorithm is: a name, the collectives it serves on each device, why it cannot
run a call somewhere, and how it runs one.

The communicator checks a call, resolves its algorithm (the one asked for, or "auto"'s
choice: ring/tuning.py), agrees on it across ranks (ring/agreement.py, whose record carries
the algorithm's wire code, options.ALGORITHMS.index(name)), then calls run() with the
Context (ring/context.py) and the checked Call (ring/call.py). An algorithm moves data with
its device's backend (ring/host/, ring/cuda/) and the transports below them; it never
reaches back into the communicator.
"""

from __future__ import annotations

from ..call import Call
from ..context import Context
from ..options import ALGORITHMS
from ..schedule import Collective

C = Collective
EVERY = frozenset(c for c in Collective if c is not C.BARRIER)
ALLREDUCE = frozenset({C.ALLREDUCE})
DEVICES = ("host", "cuda")


class Algorithm:
    """One way to run collectives. A subclass sets `name` and `serves` and defines run();
    why_not() where a call it serves may still not run (the layout, the size)."""

    name: str = ""
    # the collectives it runs, by device (the README's support matrix is made from these)
    serves: dict[str, frozenset] = {d: EVERY for d in DEVICES}
    # how it moves data where that is not the device's own memory, by device (labels)
    via: dict[str, str] = {}
    # whether it walks the ring's links (then the device's data path, path=, applies)
    walks_ring = False

    @property
    def code(self) -> int:
        """The algorithm's number in the agreement's record (its wire format)."""
        return ALGORITHMS.index(self.name)

    def why_not(self, ctx: Context, collective: Collective, nbytes: int) -> str | None:
        """Why this algorithm cannot run `collective` of `nbytes` per rank here (None: it
        can). A function of the layout and agreed arguments only: every rank answers alike."""
        if collective in self.serves[ctx.device]:
            return None
        for device in DEVICES:
            if collective in self.serves[device]:
                return f"{self.name} runs {collective} on the {device} device only"
        return f"it is an all-reduce algorithm; {collective} runs on the ring"

    def chunk_bytes(self, ctx: Context, c: Call, given: bool) -> int:
        """The chunk of a call that names none (given: whether the communicator was given
        chunk_bytes): the communicator's, unless the algorithm knows better. A function of
        agreed arguments only, so every rank cuts the same plan."""
        return c.chunk_bytes

    def why_not_compressed(self, ctx: Context, collective: Collective,
                           nbytes: int) -> str | None:
        """Why it cannot carry a compressed wire (compression="bf16" ...; None: it can)."""
        return ("the ring's slots carry the compressed wire: the flat ring, or the two-level "
                "all-reduce across nodes")

    def rides(self, ctx: Context) -> bool:
        """Whether its data travel with the call's agreement (then the ranks agree even with
        check=False)."""
        return False

    def posts(self, ctx: Context, c: Call):
        """What of this rank's data rides with the agreement (an array), or None."""
        return None

    def run(self, ctx: Context, c: Call, defer: bool = False):
        """Run the agreed call c (c.count > 0). With defer, what is still in flight on the
        device may be returned (a Pending for Work.wait(); None when nothing is)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<algorithm {self.name}>"


class ByMessages(Algorithm):
    """An all-reduce of whole buffers as MPI messages (naive, ps, tree): on the host
    device's arrays as they are; on cuda through host copies of the GPU arrays (the mpich
    wheel cannot read GPU memory: MPI through host memory, a baseline). A subclass sets
    `reduce`, a function (comm, waiter, op, x, out, scratch=None) over host arrays."""

    serves = {d: ALLREDUCE for d in DEVICES}
    via = {"cuda": "MPI on host copies"}

    @staticmethod
    def reduce(comm, waiter, op, x, out, scratch=None) -> None:
        raise NotImplementedError

    def run(self, ctx: Context, c: Call, defer: bool = False):
        ctx.backend.through_host(c, lambda x, out: self.reduce(ctx.comm, ctx.waiter, c.op, x, out,
                                                               scratch=ctx.scratch))
