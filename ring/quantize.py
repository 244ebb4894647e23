"""int8 wire compression of float32 gradients: a scale per block, error feedback
(GradientBuckets(compression="int8"); host device, one compiled pass each way, Numba; on a
GPU the same rules and message by kernels/quantize.py, bit for bit).

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
its residual is zeroed so that later steps are not poisoned. A block whose largest |v| is
under 127 x 2^-150 (about 1.3e-43) has a scale that rounds to 0: it is sent as zeros (with
error feedback its values stay in the residual); below about 1.5e-36 the scale is subnormal
and coarser than 1/127 of the largest value, which then saturates at +-127.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ringtypes import QUANT_BLOCK as BLOCK  # values per scale
from ringtypes import packed_bytes, quant_blocks

__all__ = ["BLOCK", "packed_bytes", "quantize", "dequantize_sum", "warm"]


def _parts(packed: np.ndarray, n: int):
    nb = quant_blocks(n)
    return packed[:4 * nb].view(np.float32), packed[4 * nb:4 * nb + n].view(np.int8)


@njit(nogil=True, cache=True, error_model="numpy")  # x / 0 is inf, not ZeroDivisionError
def _quantize(v, residual, feedback, scales, q):
    one27 = np.float32(127)
    for b in range(scales.size):
        lo, hi = b * BLOCK, min((b + 1) * BLOCK, v.size)
        amax, bad = np.float32(0), False
        for i in range(lo, hi):
            w = v[i] + residual[i] if feedback else v[i]
            a = abs(w)
            if not np.isfinite(a):
                bad = True
            elif a > amax:
                amax = a
        scale = np.float32(np.nan) if bad else (np.float32(1) if amax == 0 else amax / one27)
        scales[b] = scale
        for i in range(lo, hi):
            w = v[i] + residual[i] if feedback else v[i]
            r = np.rint(w / scale)
            if not np.isfinite(r):
                r = np.float32(0)
            r = min(max(r, -one27), one27)
            q[i] = np.int8(r)
            if feedback:
                lost = w - r * scale
                residual[i] = lost if np.isfinite(lost) else np.float32(0)


@njit(nogil=True, cache=True)
def _accumulate(scales, q, out, first):
    for b in range(scales.size):
        scale = scales[b]
        for i in range(b * BLOCK, min((b + 1) * BLOCK, out.size)):
            part = np.float32(q[i]) * scale
            out[i] = part if first else out[i] + part


def warm() -> None:
    """Compile (or load from Numba's cache) both loops now, not in a first training step."""
    v = np.ones(3, np.float32)
    p = np.empty((1, packed_bytes(3)), np.uint8)
    quantize(v, p[0], v.copy())
    quantize(v, p[0])
    dequantize_sum(p, 3, v, False)


def quantize(v: np.ndarray, packed: np.ndarray, residual: np.ndarray | None = None) -> None:
    """Round float32 v (1-D) into packed (uint8, packed_bytes(v.size)). With residual
    (float32, v's size): v + residual is rounded, and residual becomes what was lost."""
    scales, q = _parts(packed, v.size)
    packed[4 * quant_blocks(v.size) + v.size:] = 0  # the padding
    _quantize(v, v if residual is None else residual, residual is not None, scales, q)


def dequantize_sum(gathered: np.ndarray, n: int, out: np.ndarray, avg: bool) -> None:
    """out (float32, n) = the sum over ranks, in rank order, of each rank's widened values;
    gathered: (K, packed_bytes(n)) uint8, row r rank r's message. avg: divided by K once."""
    k = gathered.shape[0]
    for r in range(k):
        scales, q = _parts(gathered[r], n)
        _accumulate(scales, q, out, r == 0)
    if avg:
        np.divide(out, np.float32(k), out=out)
