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


def reference(collective: str, inputs: list[np.ndarray], op: str) -> list[np.ndarray]:
    """Plain NumPy reference per rank (order of the reduction unspecified)."""
    stack = np.stack(inputs).astype(np.float64 if inputs[0].dtype in FLOATING else inputs[0].dtype)
    k = len(inputs)
    if collective == "allgather":
        full = np.concatenate(inputs)
        return [full] * k
    fn = {"sum": np.add, "avg": np.add, "prod": np.multiply, "min": np.minimum,
          "max": np.maximum}[op]
    red = fn.reduce(stack, axis=0) if k else stack
    if op == "avg":
        red = red / k
    red = red.astype(inputs[0].dtype)
    if collective == "allreduce":
        return [red] * k
    n = red.size // k
    return [red[r * n:(r + 1) * n] for r in range(k)]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
