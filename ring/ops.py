"""Reduction ops and supported dtypes: the tables every device shares.

An op and a dtype each get a small integer code so that ranks can compare calls in one
fixed-size integer exchange (see agreement.py).
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

bfloat16 = np.dtype(ml_dtypes.bfloat16)

# Code -> dtype. The order is part of the wire format of the agreement check.
DTYPES: tuple[np.dtype, ...] = (
    np.dtype(np.float16),
    bfloat16,
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.int32),
    np.dtype(np.int64),
    np.dtype(np.uint8),
)
DTYPE_CODE = {dt: i for i, dt in enumerate(DTYPES)}
FLOATING = frozenset({np.dtype(np.float16), bfloat16, np.dtype(np.float32), np.dtype(np.float64)})


def parse_op(op) -> Op:
    """Op from a name ("sum"), an Op, or raise ValueError naming the argument."""
    if isinstance(op, Op):
        return op
    if isinstance(op, str):
        try:
            return Op[op.upper()]
        except KeyError:
            pass
    names = ", ".join(repr(str(o)) for o in Op)
    raise ValueError(f"op: unknown op {op!r}; expected one of {names}")


def parse_dtype(dtype, arg: str = "x") -> np.dtype:
    """A supported dtype, or raise TypeError naming the argument."""
    dt = np.dtype(dtype)
    if dt.byteorder == ">" or dt not in DTYPE_CODE:
        names = ", ".join(d.name for d in DTYPES)
        raise TypeError(f"{arg}: unsupported dtype {dt}; supported: {names}")
    return dt


def check_op_dtype(op: Op, dtype: np.dtype) -> None:
    if op is Op.AVG and dtype not in FLOATING:
        raise ValueError(f"op: 'avg' needs a floating-point dtype, got {dtype}")
