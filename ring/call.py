"""One collective call's arguments, checked on the calling rank, and what they make: the 1-D
views the executor walks, the plan's count, in place or not, and the small integer record
that ranks compare before any data moves (agreement.py).

Shapes, for K ranks and an input x of n elements (schedule.sizes):
    allreduce, reduce     out: x's shape            broadcast: x itself, in place
    reduce_scatter        out: n / K elements, rank r's block of the reduction
    allgather             out: K * n elements, rank r's x at block r
    gather                the root's out: K * n elements; the others return None
    scatter               out: n / K elements, block r of the root's x (read at the root only)
    alltoall              out: n elements, block i from rank i (block j of x goes to rank j)
In place, as MPI and NCCL place it: out is x (allreduce, reduce, alltoall), out is x's
block r (reduce_scatter, scatter at the root), x is out's block r (allgather, gather at
the root). Any other overlap of x and out is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ringtypes import DTYPE_CODE, Op, check_op_dtype, parse_dtype, parse_op

from .options import ALGORITHMS, COMPRESSIONS, check_compression, whole_number
from .schedule import Collective, sizes

C = Collective
# What a call returns, as the repeated calls keep it (ring/host/repeated.py,
# ring/cuda/repeated.py): out (or a new array), x itself (broadcast), nothing (None)
OUT, X, NOTHING = 0, 1, 2
SAME_SHAPE = (C.ALLREDUCE, C.REDUCE)  # the result has x's shape; the others are 1-D


@dataclass
class Call:
    collective: Collective
    x: object  # 1-D view of the input (a stand-in where the rank reads none)
    out: object  # 1-D view of the output (a stand-in where the rank writes none)
    result: object  # what the call returns
    dtype: object  # the data's dtype (bfloat16 and float8 travel as integer bits on a GPU)
    op: Op
    count: int  # elements of the full array of the plan
    in_place: bool
    chunk_bytes: int
    algorithm: str  # "ring" or "hierarchical", resolved
    root: int = 0  # rooted collectives
    compression: str | None = None  # a key of options.COMPRESSIONS
    wire: np.dtype | None = None  # what the slots carry, when compressed
    rode: np.ndarray | None = None  # oneshot across nodes: every rank's x, as it rode in
    #                                 the agreement (K rows of bytes; agreement.agree)

    def record(self) -> dict[str, int]:
        rec = {"collective": self.collective.value, "count": self.count,
               "dtype": DTYPE_CODE[self.dtype], "op": int(self.op),
               "chunk_bytes": self.chunk_bytes, "algorithm": ALGORITHMS.index(self.algorithm),
               "compression": compression_code(self.compression)}
        if self.collective.rooted:
            rec["root"] = self.root  # in place is the root's own business there
        else:
            rec["in_place"] = int(self.in_place)
        return rec


def compression_code(compression: str | None) -> int:
    return 0 if compression is None else list(COMPRESSIONS).index(compression) + 1


def check_wire(collective: Collective, compression, op: Op, dtype: np.dtype, xn: str):
    """The wire dtype of a compressed call (None: not compressed), or the error."""
    check_compression(compression)
    if compression is None:
        return None
    if collective not in (C.ALLREDUCE, C.REDUCE_SCATTER):
        raise ValueError(f"compression: all-reduce and reduce-scatter only, not {collective}")
    if dtype != np.float32:
        raise TypeError(f"compression: {xn} must be float32 (the wire carries it as 16 bits), "
                        f"got {dtype}")
    if op not in (Op.SUM, Op.AVG):
        raise ValueError(f"compression: op must be sum or avg, got {op}")
    return parse_dtype(COMPRESSIONS[compression])


def check_root(root, size: int) -> int:
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root < size:
        raise ValueError(f"root: must be a rank of the communicator (0..{size - 1}), got {root!r}")
    return int(root)


def check_chunk(chunk_bytes, slot_bytes: int) -> int:
    if chunk_bytes is None:
        return slot_bytes
    if not whole_number(chunk_bytes) or not 0 < chunk_bytes <= slot_bytes:
        raise ValueError(f"chunk_bytes: must be in 1..{slot_bytes} (the slot size this "
                         f"communicator was built with), got {chunk_bytes!r}")
    return int(chunk_bytes)


def prepare(backend, size: int, rank: int, collective: Collective, x, out, op, chunk_bytes: int,
            algorithm: str, dtype=None, root: int = 0, names=("x", "out"),
            compression: str | None = None) -> Call:
    """Check one call's arguments on this rank: TypeError / ValueError naming the argument
    (as `names` calls x and out: ring.Group says xs[r], outs[r]). chunk_bytes and
    algorithm come checked; root and compression are checked here."""
    xn, on = names
    b = backend
    root = check_root(root, size) if collective.rooted else 0
    is_root = rank == root
    if collective is C.SCATTER and not is_root and x is None:
        if out is None:
            raise ValueError(f"{xn}: scatter needs {xn} or {on} on every rank ({xn} is read at "
                             f"the root only; elsewhere {on} gives the size and dtype of the block)")
        xf, xdt = b.flat(out, on, writeable=True, dtype=dtype)  # a stand-in, never read
        n = xf.size * size
    else:
        xf, xdt = b.flat(x, xn, writeable=collective is C.BROADCAST, dtype=dtype)
        n = xf.size
    op = parse_op(op)
    check_op_dtype(op, xdt, collective.reduces)
    wire = check_wire(collective, compression, op, xdt, xn)
    if collective.divides and n % size:
        raise ValueError(f"{xn}: {collective} needs {xn}.size divisible by {size} ranks, got {n}")
    count, out_n = sizes(collective, n, size)

    def call(x_, out_, result, in_place):
        return Call(collective, x_, out_, result, xdt, op, count, in_place, chunk_bytes,
                    algorithm, root, compression, wire)

    if collective is C.BROADCAST:
        return call(xf, xf, x, True)
    if collective in (C.REDUCE, C.GATHER) and not is_root:
        return call(xf, xf, None, False)  # only the root writes; out is not even looked at
    as_bits = xdt.name if xf.dtype != xdt else None  # the logical dtype of integer bits
    if out is None:
        result = b.empty_like(x if x is not None else out, x.shape if collective in SAME_SHAPE
                              else (out_n,), xdt)
        of, _ = b.flat(result, on, dtype=as_bits)
        return call(xf, of, result, False)
    of, odt = b.flat(out, on, writeable=True, dtype=as_bits)
    if odt != xdt:
        raise TypeError(f"{on}: dtype {odt} differs from {xn}'s {xdt}")
    if of.size != out_n:
        raise ValueError(f"{on}: needs {out_n} elements for {collective} over {size} ranks of "
                         f"{xn}.size {n}, got {of.size}")
    reads_x = not (collective is C.SCATTER and not is_root)  # elsewhere x is not read
    in_place = reads_x and in_place_position(b, collective, rank, xf, of, on)
    return call(xf, of, out, in_place)


def in_place_position(b, collective: Collective, rank: int, xf, of, on: str = "out") -> bool:
    """Whether out is the in-place position for x (module docstring); False when they do
    not overlap; ValueError for any other overlap."""
    item = xf.dtype.itemsize
    if not b.may_overlap(xf, of):
        return False
    xa, oa = b.address(xf), b.address(of)
    xb, ob = xf.size * item, of.size * item
    if xb == 0 or ob == 0 or xa + xb <= oa or oa + ob <= xa:
        return False
    if collective in (C.ALLREDUCE, C.REDUCE, C.ALLTOALL) and xa == oa:
        return True
    if collective in (C.REDUCE_SCATTER, C.SCATTER) and oa == xa + rank * ob:
        return True
    if collective in (C.ALLGATHER, C.GATHER) and xa == oa + rank * xb:
        return True
    raise ValueError(f"{on}: overlaps x but is not the in-place position for {collective}")
