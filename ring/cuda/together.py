"""Set-up steps that every rank of a communicator takes together (making its streams and
slots, mapping its peers' memory, zeroing what they will read): where one rank's step
fails, every rank hears of it, lets go of what it made and raises, so none is left waiting
in the collective that follows (an MPI allgather or barrier, which no deadline bounds)."""

from __future__ import annotations

from contextlib import contextmanager

from ..agreement import refusal
from ..errors import RingError


@contextmanager
def together(comm, what: str, let_go):
    """with together(comm, "map its peers' areas", self.close): <this rank's step>.
    Collective over comm, and a barrier (every rank's step is done when it returns). Where
    any rank's step raised, every rank calls let_go() and raises RingError naming the
    first rank that failed and its error."""
    mine = None
    try:
        yield
    except Exception as e:  # noqa: BLE001 - raised on every rank below
        mine = e
    said = comm.allgather(refusal(mine))
    failed = next((q for q, f in enumerate(said) if f is not None), None)
    if failed is not None:
        let_go()
        raise RingError(f"device='cuda': rank {failed} could not {what}: {said[failed]}") \
            from mine
