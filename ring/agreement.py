"""Ranks agree on a call before any data moves.

Each rank checks its own arguments, then all ranks exchange one small integer record with a
non-blocking allgather, polled under the call's deadline. A rank whose own arguments were
bad raises its TypeError / ValueError; the others raise MismatchError naming it. If the
records differ, every rank raises the same MismatchError. Nothing has moved yet, so no rank
is left waiting.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ringtypes import DTYPES, Op

from .errors import MismatchError
from .options import ALGORITHMS
from .schedule import Collective
from .wait import Waiter

FIELDS = ("call", "collective", "count", "dtype", "op", "root", "in_place", "chunk_bytes",
          "algorithm")
BAD = len(FIELDS)  # extra field: 1 where the rank's own arguments were bad
NONE = -1


def _describe(field: str, value: int) -> str:
    if value == NONE:
        return "-"
    if field == "dtype":
        return DTYPES[value].name
    if field == "op":
        return str(Op(value))
    if field == "in_place":
        return "in place" if value else "out of place"
    if field == "collective":
        return str(Collective(value))
    if field == "algorithm":
        return ALGORITHMS[value]
    return str(value)


def agree(comm: MPI.Comm, record: dict[str, int], error: Exception | None, waiter: Waiter,
          name: str) -> None:
    """Collective over comm. Raises on every rank, or returns on every rank."""
    mine = np.array([record.get(f, NONE) for f in FIELDS] + [int(error is not None)], np.int64)
    everyone = np.empty((comm.size, mine.size), np.int64)
    req = comm.Iallgather([mine, MPI.INT64_T], [everyone, MPI.INT64_T])
    waiter.until(req.Test, lambda: "waiting for every rank to join the call")
    if error is not None:
        raise error
    if (everyone == mine).all():
        return
    bad = [r for r in range(comm.size) if everyone[r, BAD]]
    if bad:
        raise MismatchError(f"{name}: rank(s) {bad} passed bad arguments (see their errors)")
    for i, field in enumerate(FIELDS):
        column = everyone[:, i]
        if (column != column[0]).any():
            values = ", ".join(f"rank {r}: {_describe(field, int(v))}" for r, v in enumerate(column))
            what = "the collective" if field in ("call", "collective") else field
            raise MismatchError(f"{name}: ranks disagree on {what} ({values})")
