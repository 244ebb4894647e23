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

from ..host.half import as_f32, as_u32

__all__ = ["BLOCK", "packed_bytes", "quantize", "dequantize_sum", "warm"]


def _parts(packed: np.ndarray, n: int):
    nb = quant_blocks(n)
    return packed[:4 * nb].view(np.float32), packed[4 * nb:4 * nb + n].view(np.int8)


# The loops walk a block at a time through slices of it: a loop over range(lo, hi) inside
# the loop over blocks does not vectorise in Numba (the whole pass ran 5-8x slower), one
# over range(block.size) does. The largest |value| is found on the bits (|v|'s bits are
# ordered as |v| is; inf and NaN are the largest), a select per element, no branch.
U = np.uint32
INF = np.float32(np.inf)


@njit(inline="always")
def _largest(w):
    """The bits of the block's largest |value| (>= 0x7F800000: inf or NaN among them)."""
    top = U(0)
    for i in range(w.size):
        a = as_u32(w[i]) & U(0x7FFFFFFF)
        top = a if a > top else top
    return top


@njit(inline="always", error_model="numpy")  # x / 0 is inf, not ZeroDivisionError
def _scale(top):
    if top >= U(0x7F800000):
        return np.float32(np.nan)
    return np.float32(1) if top == U(0) else as_f32(top) / np.float32(127)


@njit(inline="always", error_model="numpy")
def _round(w, scale):
    """w / scale to the nearest integer in [-127, 127]; 0 where that is not finite."""
    one27 = np.float32(127)
    r = np.rint(w / scale)
    finite = abs(r) < INF
    r = min(max(r, -one27), one27)
    return r if finite else np.float32(0)


@njit(nogil=True, cache=True, error_model="numpy")
def _quantize(v, scales, q):
    for b in range(scales.size):
        vb, qb = v[b * BLOCK:(b + 1) * BLOCK], q[b * BLOCK:(b + 1) * BLOCK]
        scale = _scale(_largest(vb))
        scales[b] = scale
        for i in range(vb.size):
            qb[i] = np.int8(_round(vb[i], scale))


@njit(nogil=True, cache=True, error_model="numpy")
def _quantize_feedback(v, residual, scales, q, w):
    """As _quantize for v + residual (w: a block's room for it); residual = what was lost."""
    for b in range(scales.size):
        lo, hi = b * BLOCK, (b + 1) * BLOCK
        vb, rb, qb = v[lo:hi], residual[lo:hi], q[lo:hi]
        wb = w[:vb.size]
        for i in range(vb.size):
            wb[i] = vb[i] + rb[i]
        scale = _scale(_largest(wb))
        scales[b] = scale
        for i in range(vb.size):
            r = _round(wb[i], scale)
            qb[i] = np.int8(r)
            lost = wb[i] - r * scale
            rb[i] = lost if abs(lost) < INF else np.float32(0)


@njit(nogil=True, cache=True)
def _sum(words, values, blocks, out, avg):
    """out = the rows' widened values summed in row order (avg: / rows), a block at a time
    while it sits in cache. words / values: the gathered messages as float32 / int8 rows;
    a row's scales are its first `blocks` words, its values start at byte 4 * blocks."""
    k, at = words.shape[0], 4 * blocks
    for b in range(blocks):
        ob = out[b * BLOCK:(b + 1) * BLOCK]
        lo, hi = at + b * BLOCK, at + b * BLOCK + ob.size
        scale, qb = words[0, b], values[0, lo:hi]
        for i in range(ob.size):
            ob[i] = np.float32(qb[i]) * scale
        for r in range(1, k):
            scale, qb = words[r, b], values[r, lo:hi]
            for i in range(ob.size):
                ob[i] = ob[i] + np.float32(qb[i]) * scale
        if avg:
            d = np.float32(k)
            for i in range(ob.size):
                ob[i] = ob[i] / d


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
    if residual is None:
        _quantize(v, scales, q)
    else:
        _quantize_feedback(v, residual, scales, q, np.empty(BLOCK, np.float32))


def dequantize_sum(gathered: np.ndarray, n: int, out: np.ndarray, avg: bool) -> None:
    """out (float32, n) = the sum over ranks, in rank order, of each rank's widened values;
    gathered: (K, packed_bytes(n)) uint8, row r rank r's message. avg: divided by K once."""
    if n:
        _sum(gathered.view(np.float32), gathered.view(np.int8), quant_blocks(n), out, avg)
