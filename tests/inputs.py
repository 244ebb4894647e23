"""Deterministic test inputs: every rank can build every other rank's input locally."""

import os

import numpy as np
from hypothesis import HealthCheck, seed, settings

from ringtypes import DATA_ONLY, DTYPES, FLOATING, REDUCIBLE, parse_dtype

# RING_TEST_CROSS_SECTION=1 (test_mpi.py's 6-rank jobs, whose point is the layout of ranks on
# nodes): every test, but over a cross-section of the dtypes and (dtype, op) cases: each op,
# each element width, floating and integer; the whole lists run at 1-4 ranks
CROSS_SECTION = os.environ.get("RING_TEST_CROSS_SECTION") == "1"
CROSS_CASES = [("float32", "sum"), ("bfloat16", "avg"), ("float16", "prod"), ("int8", "prod"),
               ("float64", "max"), ("uint64", "min"), ("int32", "sum")]
CROSS_DTYPES = ["float32", "bfloat16", "int8", "float64", "float8_e4m3fn"]
DTYPE_NAMES = CROSS_DTYPES if CROSS_SECTION else [d.name for d in DTYPES]
REDUCIBLE_NAMES = [d.name for d in DTYPES if d in REDUCIBLE and d.name in DTYPE_NAMES]


def make(rank: int, n: int, dtype, seed: int = 0, op: str = "sum") -> np.ndarray:
    dtype = parse_dtype(dtype, "dtype")
    rng = np.random.default_rng([seed, rank, n])
    if dtype in FLOATING and op == "prod":
        # near 1, so that products of many ranks stay far from overflow in float16
        return (rng.uniform(0.5, 2.0, n) * rng.choice([-1, 1], n)).astype(dtype)
    if dtype in FLOATING or dtype in DATA_ONLY:
        # Mixed signs and magnitudes so that the order of a sum shows in its rounding.
        vals = rng.standard_normal(n) * np.exp2(rng.integers(-4, 5, n))
        return vals.astype(dtype)
    if dtype.itemsize == 1 or dtype == np.int16:  # the whole range: sums and products wrap
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max + 1, n).astype(dtype)
    if dtype.kind == "u":
        return rng.integers(0, 2000, n).astype(dtype)
    return rng.integers(-1000, 1000, n).astype(dtype)


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit for bit, except that a NaN matches any NaN where both are NaN: which NaN an
    operation on two NaNs gives (its sign and payload) is the hardware's pick by operand
    order, which LLVM may swap in the compiled loop (seen: -0 * -inf * NaN, float32, NumPy
    0x7fc00000, compiled 0xffc00000), and a GPU makes its own NaN (an H100: 0x7fffffff).
    Every rank runs the same code in the same order, so ranks still agree bit for bit; only
    the comparison with NumPy's loops is loosened."""
    if got.dtype.kind != "f":
        return got.tobytes() == want.tobytes()
    nan = np.isnan(got) & np.isnan(want)
    return got.tobytes() == np.where(nan, got, want).tobytes()


def drawn(examples: int):
    """Hypothesis settings for a test whose ranks must draw the same examples, so that they
    run, fail and shrink together: derandomized, no database, and after a first failure no
    hunt for others (it runs for 10 s of each rank's own clock, and the ranks would part).
    RING_TEST_EXAMPLES sets how many (a deep run: thousands); RING_TEST_SEED=N draws another
    set, the same on every rank, so that a second deep run is not the first one again (a
    failure it finds is reproduced with the same N)."""
    configured = settings(max_examples=int(os.environ.get("RING_TEST_EXAMPLES", examples)),
                          derandomize=True, database=None, deadline=None,
                          report_multiple_bugs=False, suppress_health_check=list(HealthCheck))
    chosen = os.environ.get("RING_TEST_SEED")

    def apply(test):
        test = configured(test)
        return seed(int(chosen))(test) if chosen else test  # a seed outranks derandomize
    return apply
