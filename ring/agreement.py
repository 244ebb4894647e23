"""Ranks agree on a call before any data moves.

Each rank checks its own arguments, then all ranks exchange one small integer record with a
non-blocking allgather, polled under the call's deadline (on one node: through node-shared
memory instead, agree_shared, or its compiled twin ring/host/repeated.py's Agreement where the
record travels alone). A small all-reduce's data may ride in the same message. A
rank whose own arguments were bad raises its TypeError / ValueError; the others raise
MismatchError naming it. If the records differ, every rank raises the same MismatchError.
Nothing has moved yet, so no rank is left waiting.
"""

from __future__ import annotations

import zlib

import numpy as np
from mpi4py import MPI

from ringtypes import DTYPES, Op

from .errors import MismatchError
from .options import ALGORITHMS, COMPRESSIONS, RIDE_BYTES
from .schedule import Collective
from .transport.exchange import RECORD
from .wait import Waiter

FIELDS = ("call", "collective", "count", "dtype", "op", "root", "in_place", "chunk_bytes",
          "algorithm", "compression")
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
    if field == "compression":
        return (None, *COMPRESSIONS)[value] or "none"
    return str(value)


def mine(record: dict[str, int], error: Exception | None) -> np.ndarray:
    """This rank's record as the row every rank compares."""
    return np.array([record.get(f, NONE) for f in FIELDS] + [int(error is not None)], np.int64)


def record_hash(record: dict[str, int]) -> int:
    """32 bits of a call's record (mine's row, its call number left out): what every rank's
    word on the cuda device's call board must show for the same call (ring/cuda/board.py)."""
    row = mine(record, None)
    row[0] = 0  # FIELDS[0]: the call number (the board's flag says it)
    return zlib.crc32(row.tobytes()) or 1  # (never 0: the board's REFUSED)


def padded(row: np.ndarray) -> np.ndarray:
    """The message of agree(): row, padded to RECORD int64s, then RIDE_BYTES for data."""
    message = np.zeros(RECORD + RIDE_BYTES // 8, np.int64)
    message[:row.size] = row
    return message


def agree(comm: MPI.Comm, record: dict[str, int], error: Exception | None, waiter: Waiter,
          name: str, ride: np.ndarray | None = None) -> np.ndarray:
    """Collective over comm: one small non-blocking allgather of every rank's record, with
    RIDE_BYTES beside it that carry `ride` (up to that many bytes of data, 1-D contiguous)
    when this rank's arguments are good. Raises on every rank, or returns on every rank
    what rode: a row of RIDE_BYTES bytes per rank."""
    row = mine(record, error)
    message = padded(row)
    if ride is not None and error is None:
        message[RECORD:].view(np.uint8)[:ride.nbytes] = ride.view(np.uint8)
    everyone = np.empty((comm.size, message.size), np.int64)
    req = comm.Iallgather([message, MPI.INT64_T], [everyone, MPI.INT64_T])
    waiter.until(req.Test, lambda: "waiting for every rank to join the call")
    verdict(everyone[:, :row.size], row, error, name)
    return everyone[:, RECORD:].view(np.uint8)


def agree_shared(exchange, seq: int, record: dict[str, int], error: Exception | None,
                 name: str, before_posting=None, wait=None) -> None:
    """The same check through node-shared memory (transport/exchange.py): every rank's
    row in its own slot, one round. before_posting() writes what else rides in the round
    (the one-shot algorithms' data); it is called only when this rank's arguments are good.
    wait(seq): how to wait for the round (default: exchange.wait)."""
    row = mine(record, error)
    exchange.record(exchange.rank, seq)[:row.size] = row
    if error is None and before_posting is not None:
        before_posting()
    exchange.post(seq)
    (wait or exchange.wait)(seq)
    everyone = np.stack([exchange.record(q, seq)[:row.size] for q in range(exchange.size)])
    verdict(everyone, row, error, name)


def verdict(everyone: np.ndarray, row: np.ndarray, error: Exception | None, name: str) -> None:
    """Every rank's row in hand: this rank's own error, or MismatchError naming the bad
    ranks or the field the ranks disagree on, or nothing when all rows are the same."""
    if error is not None:
        raise error
    if (everyone == row).all():
        return
    bad = [r for r in range(everyone.shape[0]) if everyone[r, BAD]]
    if bad:
        raise MismatchError(f"{name}: rank(s) {bad} passed bad arguments (see their errors)")
    # the algorithm last: "auto" resolves it from the other fields, which say more
    for i in sorted(range(len(FIELDS)), key=lambda i: FIELDS[i] == "algorithm"):
        field = FIELDS[i]
        column = everyone[:, i]
        if (column != column[0]).any():
            values = ", ".join(f"rank {r}: {_describe(field, int(v))}" for r, v in enumerate(column))
            what = "the collective" if field in ("call", "collective") else field
            raise MismatchError(f"{name}: ranks disagree on {what} ({values})")


def refusal(error: Exception | None) -> str | None:
    """A rank's bad argument as the others are told of it."""
    return None if error is None else f"{type(error).__name__}: {error}"


def raise_refused(said: list, error: Exception | None, what: str) -> None:
    """After an allgather of every rank's refusal(): raise this rank's own bad argument,
    or MismatchError naming the first rank that had one; return where none had."""
    if error is not None:
        raise error
    bad = next((q for q, e in enumerate(said) if e is not None), None)
    if bad is not None:
        raise MismatchError(f"{what}: rank {bad}'s argument was refused: {said[bad]}")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _differ(field: str, said: list) -> str:
    """Where ranks' values of one field differ, as a MismatchError says it: a list's first
    differing item (a gradient's size, say), not the whole list."""
    if all(isinstance(v, (list, tuple)) for v in said) and len({len(v) for v in said}) == 1:
        i = next(i for i in range(len(said[0])) if len({repr(v[i]) for v in said}) > 1)
        field, said = f"{field}[{i}]", [v[i] for v in said]
    return f"{field} (" + ", ".join(f"rank {r}: {_shown(v)}" for r, v in enumerate(said)) + ")"


def agree_setup(comm: MPI.Comm, fields: tuple, values: dict, error: Exception | None,
                waiter: Waiter, name: str) -> None:
    """A set-up that moves no data but must be the same on every rank (GradientBuckets'
    layout and options, as DDP verifies its parameters across processes): every rank's
    error and a 32-bit hash of each field's value exchanged in one non-blocking allgather,
    polled under waiter's deadline. Raises this rank's own error, or MismatchError naming the
    bad ranks or the first field the ranks disagree on (its values fetched then: every rank
    sees the same hashes, so every rank takes that second, blocking allgather); or returns,
    on every rank. values: field -> a value whose repr() says it (missing: None)."""
    row = np.array([int(error is not None)] +
                   [zlib.crc32(repr(values.get(f)).encode()) for f in fields], np.int64)
    everyone = np.empty((comm.size, row.size), np.int64)
    req = comm.Iallgather([row, MPI.INT64_T], [everyone, MPI.INT64_T])
    waiter.until(req.Test, lambda: f"waiting for every rank to make its {name}")
    if error is not None:
        raise error
    bad = [r for r in range(comm.size) if everyone[r, 0]]
    if bad:
        raise MismatchError(f"{name}: rank(s) {bad} passed bad arguments (see their errors)")
    if (everyone == row).all():
        return
    said = comm.allgather([values.get(f) for f in fields])  # (every rank is here)
    i = next(i for i in range(len(fields)) if (everyone[:, 1 + i] != everyone[0, 1 + i]).any())
    raise MismatchError(f"{name}: ranks disagree on {_differ(fields[i], [s[i] for s in said])}")
