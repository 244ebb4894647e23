"""int8 wire compression of float32 gradients: a scale per block, error feedback
(GradientBuckets(compression="int8"); host device, NumPy).

Each rank rounds its bucket to int8 with one float32 scale per block of BLOCK values
(scale = largest |v| in the block / 127, so the block's largest value maps to +-127; 1 for
a block of zeros) and all-gathers the values with the scales as one uint8 message. Every
rank then widens all K parts and sums them in rank order in float32 (avg divides the sum by
K once), so every rank holds the same bits. A rank's values reach the sum within half a
step (scale / 2) of what it sent.

Error feedback (EF-SGD; 1-bit SGD's residual): what the rounding lost, v - q * scale, is
kept per rank and added to the next step's gradient before it is rounded, so rounding
errors do not pile up over steps: the sum of what a rank sent over T steps stays within
half a step of the sum of its gradients, instead of drifting by up to T half steps (a
value under half a step is sent as zero every time without it).

Bytes each rank receives for N values: (K-1) (N + 4 N / BLOCK), against the float32 ring's
2 (K-1) / K * 4 N: 4x fewer at K = 2, 2x at 4, even at 8, more beyond (an all-gather's
bytes grow with K, a ring all-reduce's do not). A block holding inf or NaN gets a NaN scale:
its values come out NaN on every rank (a float32 sum would give inf or NaN there too), and
its residual is zeroed so that later steps are not poisoned.
"""

from __future__ import annotations

import numpy as np

BLOCK = 4096  # values per scale


def _blocks(n: int) -> int:
    return -(-n // BLOCK)


def packed_bytes(n: int) -> int:
    """Bytes of one rank's message for n values: the blocks' float32 scales, then n int8."""
    return 4 * _blocks(n) + n


def _parts(packed: np.ndarray, n: int):
    nb = _blocks(n)
    return packed[:4 * nb].view(np.float32), packed[4 * nb:4 * nb + n].view(np.int8)


def _per_value(scales: np.ndarray, n: int) -> np.ndarray:
    """Each value's scale (the last block may be short)."""
    return np.repeat(scales, BLOCK)[:n]


def quantize(v: np.ndarray, packed: np.ndarray, residual: np.ndarray | None = None) -> None:
    """Round float32 v (1-D) into packed (uint8, packed_bytes(v.size)). With residual
    (float32, v's size): v + residual is rounded, and residual becomes what was lost."""
    n = v.size
    scales, q = _parts(packed, n)
    if n == 0:
        return
    w = v if residual is None else v + residual
    with np.errstate(invalid="ignore", over="ignore"):
        amax = np.maximum.reduceat(np.abs(w), np.arange(0, n, BLOCK))  # NaN propagates
        np.divide(amax, np.float32(127), out=scales)
        scales[amax == 0] = 1
        scales[~np.isfinite(amax)] = np.nan
        each = _per_value(scales, n)
        r = np.rint(w / each)
        np.nan_to_num(r, copy=False, nan=0.0)
        np.clip(r, -127, 127, out=r)
        q[...] = r
        if residual is not None:
            np.subtract(w, r * each, out=residual)
            residual[~np.isfinite(residual)] = 0


def dequantize_sum(gathered: np.ndarray, n: int, out: np.ndarray, avg: bool) -> None:
    """out (float32, n) = the sum over ranks, in rank order, of each rank's widened values;
    gathered: (K, packed_bytes(n)) uint8, row r rank r's message. avg: divided by K once."""
    k = gathered.shape[0]
    out[...] = 0
    for r in range(k):
        scales, q = _parts(gathered[r], n)
        out += q.astype(np.float32) * _per_value(scales, n)
    if avg:
        np.divide(out, np.float32(k), out=out)
