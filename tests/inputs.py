"""Deterministic test inputs: every rank can build every other rank's input locally."""

import numpy as np

from ring.ops import DTYPES, FLOATING

DTYPE_NAMES = [d.name for d in DTYPES]


def make(rank: int, n: int, dtype, seed: int = 0, op: str = "sum") -> np.ndarray:
    dtype = np.dtype(dtype)
    rng = np.random.default_rng([seed, rank, n])
    if dtype in FLOATING and op == "prod":
        # near 1, so that products of many ranks stay far from overflow in float16
        return (rng.uniform(0.5, 2.0, n) * rng.choice([-1, 1], n)).astype(dtype)
    if dtype in FLOATING:
        # Mixed signs and magnitudes so that the order of a sum shows in its rounding.
        vals = rng.standard_normal(n) * np.exp2(rng.integers(-4, 5, n))
        return vals.astype(dtype)
    if dtype == np.uint8:
        return rng.integers(0, 256, n).astype(dtype)
    return rng.integers(-1000, 1000, n).astype(dtype)
