"""The vocabulary every layer shares: reduction ops and the supported dtypes.

It sits below both the kernels and ring (it imports only NumPy and ml_dtypes), so that the
kernels never import ring, and the code, the harness and the docs all read one table:

    DTYPES        every supported dtype, in the order of its wire code (agreement.py)
    REDUCIBLE     those that every op reduces (all but float8)
    DATA_ONLY     float8: moved bit for bit by the collectives that only move data
                  (allgather, broadcast, gather, scatter, alltoall); no reductions
    FLOATING      those `avg` applies to
    OPS           every op, by name

float8 reductions are refused because NCCL rounds them in its own way (it converts to
half or float per step, with saturation rules of its own) and there is no GPU here to
check a bit-exact match against it; the data-movement collectives need no arithmetic.
"""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np


class Op(enum.IntEnum):
    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4  # sum, then divide by the number of ranks; floating-point dtypes only

    def __str__(self) -> str:
        return self.name.lower()


SUM, PROD, MIN, MAX, AVG = Op.SUM, Op.PROD, Op.MIN, Op.MAX, Op.AVG
OPS = {str(o): o for o in Op}

bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)

# Code -> dtype. The order is part of the wire format of the agreement check: append only.
DTYPES: tuple[np.dtype, ...] = (
    np.dtype(np.float16),
    bfloat16,
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.int32),
    np.dtype(np.int64),
    np.dtype(np.uint8),
    np.dtype(np.int8),
    np.dtype(np.int16),
    np.dtype(np.uint32),
    np.dtype(np.uint64),
    float8_e4m3fn,
    float8_e5m2,
)
DTYPE_CODE = {dt: i for i, dt in enumerate(DTYPES)}
BY_NAME = {dt.name: dt for dt in DTYPES}
FLOATING = frozenset({np.dtype(np.float16), bfloat16, np.dtype(np.float32),
                      np.dtype(np.float64)})
DATA_ONLY = frozenset({float8_e4m3fn, float8_e5m2})
REDUCIBLE = frozenset(DTYPES) - DATA_ONLY


def parse_op(op) -> Op:
    """Op from a name ("sum"), an Op, or raise ValueError naming the argument."""
    if isinstance(op, Op):
        return op
    if isinstance(op, str) and op.lower() in OPS:
        return OPS[op.lower()]
    names = ", ".join(repr(n) for n in OPS)
    raise ValueError(f"op: unknown op {op!r}; expected one of {names}")


def parse_dtype(dtype, arg: str = "x") -> np.dtype:
    """A supported dtype (a NumPy dtype or a name: "bfloat16", "float8_e4m3fn"), or raise
    TypeError naming the argument."""
    try:
        dt = BY_NAME[dtype] if isinstance(dtype, str) and dtype in BY_NAME else np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.byteorder == ">" or dt not in DTYPE_CODE:
        names = ", ".join(d.name for d in DTYPES)
        raise TypeError(f"{arg}: unsupported dtype {dtype if dt is None else dt}; "
                        f"supported: {names}")
    return dt


def check_op_dtype(op: Op, dtype: np.dtype, reduces: bool = True) -> None:
    """ValueError / TypeError naming the argument when `op` cannot reduce `dtype` (only
    checked for collectives that reduce)."""
    if not reduces:
        return
    if dtype in DATA_ONLY:
        raise TypeError(f"x: {dtype} is carried by the collectives that only move data "
                        "(allgather, broadcast, gather, scatter, alltoall); it has no "
                        "reductions")
    if op is Op.AVG and dtype not in FLOATING:
        raise ValueError(f"op: 'avg' needs a floating-point dtype, got {dtype}")


# The int8 wire format of GradientBuckets(compression="int8") (ring/quantize.py on the host,
# kernels/quantize.py on a GPU, one format): a rank's message for n float32 values is the
# float32 scales of its blocks of QUANT_BLOCK values, then the n int8 values, then zeros to a
# multiple of 4 bytes (so that every message of a gathered buffer starts 4-byte aligned).
QUANT_BLOCK = 4096


def quant_blocks(n: int) -> int:
    return -(-n // QUANT_BLOCK)


def packed_bytes(n: int) -> int:
    """Bytes of one rank's int8 message for n values: the blocks' scales, then the values
    (padded to a multiple of 4)."""
    return 4 * quant_blocks(n) + -(-n // 4) * 4
