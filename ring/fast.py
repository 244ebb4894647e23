"""The per-call fast path of a repeated small host all-reduce on one node.

A training loop calls all-reduce with the same dtype, shape and op thousands of times. The
first call of a signature goes the whole way (call.py's checks, agreement.py, the tuning
table); when it ran oneshot through the exchange window (transport/exchange.py), what it
worked out is kept here, and the next calls of that signature do only what depends on the
arrays themselves:

    checks     the arrays are NumPy, contiguous, of the signature's dtype and shape, and
               out is new, x (or another view of x's memory), or a writeable array that
               does not overlap x;
    agreement  the signature's record, with this call's number, written into this rank's
               slot beside x; after the round every peer's record compared with this one
               as bytes. Any difference goes to agreement.verdict, which names it, on
               every rank, exactly as the full path does;
    data       the reduction over the posted arrays, in rank order (oneshot.fold).

The signature is every argument but the arrays' contents and identities: x's dtype and
shape, op, the kind of out, chunk_bytes, algorithm and dtype as passed. Anything else
(another algorithm than oneshot, async_op, a broken communicator) takes the full path.
RING_DEBUG=INFO logs fast calls too, with "path": "fast". What the fast path skips is work
whose result is the same for the same signature, so its errors and results are the full
path's.
"""

from __future__ import annotations

import numpy as np

from ringtypes import FLOATING, Op

from .agreement import mine, verdict
from .oneshot import fold
from .schedule import Collective


class Signature:
    """What a call of one (dtype, shape, op, out kind) worked out, and the window's views
    for it: records and data of every rank, by call parity."""

    __slots__ = ("op", "row", "records", "data", "quiet", "name", "log")

    def __init__(self, ex, record: dict, op: Op, n: int, dtype: np.dtype, rank: int):
        self.op = op
        self.row = mine(record, None)
        width = self.row.size
        self.records = [[ex.record(q, p)[:width] for q in range(ex.size)] for p in (0, 1)]
        self.data = [[ex.data(q, p, dtype, n) for q in range(ex.size)] for p in (0, 1)]
        # floating sums may overflow to inf; the full path says nothing of it either
        self.quiet = dtype in FLOATING or op is Op.AVG
        self.name = f"{Collective.ALLREDUCE} (call %d, rank {rank})"
        # RING_DEBUG=INFO's line for a call, as the full path writes it, marked fast
        self.log = {"rank": rank, "call": 0, "collective": str(Collective.ALLREDUCE),
                    "algorithm": "oneshot", "count": n, "dtype": dtype.name, "op": str(op),
                    "path": "fast"}


LIMIT = 64  # signatures kept per communicator (a loop has a few; a sweep starts over)
PLAIN = (str, int, type(None))  # options whose value is the signature's (op, chunk_bytes, ...)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def key(x, out, op, chunk_bytes=None, algorithm=None, dtype=None):
    """The signature of a call, or None where the fast path cannot take it (arrays not
    plain contiguous NumPy; out overlapping x other than in place)."""
    if (type(x) is not np.ndarray or not x.flags.c_contiguous or not isinstance(op, (str, Op))
            or type(chunk_bytes) not in PLAIN or type(algorithm) not in PLAIN
            or type(dtype) not in PLAIN):
        return None
    if out is None:
        kind = 0
    elif out is x:
        kind = 1
    elif (type(out) is np.ndarray and out.dtype == x.dtype and out.shape == x.shape
          and out.flags.c_contiguous and out.flags.writeable):
        if not np.may_share_memory(x, out):
            kind = 2
        elif _address(out) == _address(x):  # another view of x's memory: in place
            kind = 1
        else:
            return None
    else:
        return None
    return x.dtype, x.shape, op, kind, chunk_bytes, algorithm, dtype


def run(comm, s: Signature, x, out):
    """One call of a known signature (comm: the Communicator, usable, every rank on one
    node); the result, or the full path's error."""
    ex = comm._exchange
    comm._calls += 1
    call = comm._calls
    result = np.empty(x.shape, x.dtype) if out is None else out
    flat_out = result.reshape(-1)
    comm._waiter.start(s.name % call)
    comm._backend.entered(call)
    comm._xseq += 1
    seq = comm._xseq
    p = seq & 1
    row = s.row
    row[0] = call  # agreement.FIELDS[0]
    records = s.records[p]
    me = ex.rank
    records[me][:] = row
    data = s.data[p]
    data[me][:] = x.reshape(-1)
    ex.post(seq)
    comm._wait_round(seq)
    mine_bytes = row.tobytes()
    for q in range(ex.size):
        if q != me and records[q].tobytes() != mine_bytes:
            verdict(np.stack([r.copy() for r in records]), row, None, comm._waiter.context)
    if s.quiet:
        with np.errstate(over="ignore", invalid="ignore"):
            fold(data.__getitem__, s.op, ex.size, flat_out)
    else:
        fold(data.__getitem__, s.op, ex.size, flat_out)
    return result
