"""Top-K sparsified gradients on a GPU: ring/training/topk.py's rules and message, bit for
bit (the same indices, the same values, the same sums).

    owe(v, flat, velocity, residual, m, carry)
                                         velocity = m velocity + flat (two roundings, as
                                         NumPy's two in-place ops), residual += it, then
                                         residual += carry: what the rank owes (any of the
                                         three may be absent)
    sample(v, step, out)                 out[i] = |v[i step]| as float64, NaN as inf: the
                                         strided sample the threshold is guessed from
    above(v, t, cand, count)             the indices of |v| >= t (or NaN) appended to cand
                                         (an atomic counter: in no order; the host sorts
                                         them), count[0] how many there were
    gather(v, idx, out)                  out[i] = v[idx[i]]
    pack(message, idx, v, residual, velocity)
                                         message = k indices, then k values' bits; the
                                         sent values cleared from residual and velocity
    combine(out, gathered, k, nranks, avg)
                                         out = the K contributions summed in rank order
                                         (zeros, then rank 0's values added at its indices,
                                         then rank 1's, ...), divided by K for avg
    scale(out, v, c)                     out = v c (global momentum's carry)

The only full passes over a bucket are owe and above, both on the GPU; the host sees the
sample (a few thousand values) and the candidates (about 1.25 k), as ring/training/topk.py
chooses them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, float64

from .launch import simulated
from .quantize import mul_rn

# threads a block, blocks at most (grid-stride loops do the rest); under the simulator,
# where every thread is a Python thread, a few
THREADS, BLOCKS = (8, 2) if simulated() else (256, 1024)


def _blocks(n: int) -> int:
    return max(1, min(BLOCKS, -(-n // THREADS)))


@cuda.jit
def _owe(flat, velocity, residual, carry, m, has_velocity, has_residual, has_carry):
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < flat.size:
        v = flat[i]
        if has_velocity:
            v = mul_rn(velocity[i], m) + v  # velocity *= m; velocity += flat
            velocity[i] = v
        if has_residual:
            r = residual[i] + v
            if has_carry:
                r = r + carry[i]  # (two roundings, as the host's two in-place adds)
            residual[i] = r
        i += s


def owe(flat, velocity, residual, m: float, carry=None) -> None:
    """velocity = m velocity + flat; residual += velocity (or flat); residual += carry:
    in place (a carry only with a residual)."""
    if flat.size == 0 or (velocity is None and residual is None):
        return
    dummy = flat[:0]
    _owe[_blocks(flat.size), THREADS](flat, dummy if velocity is None else velocity,
                                      dummy if residual is None else residual,
                                      dummy if carry is None else carry, float32(m),
                                      velocity is not None, residual is not None,
                                      carry is not None)


@cuda.jit
def _scale(out, v, c):
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < out.size:
        out[i] = mul_rn(v[i], c)
        i += s


def scale(out, v, c: float) -> None:
    """out = v c, elementwise (float32, one rounding)."""
    if out.size:
        _scale[_blocks(out.size), THREADS](out, v, float32(c))


@cuda.jit
def _sample(v, step, out):
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < out.size:
        a = float64(v[i * step])
        out[i] = math.inf if a != a else abs(a)
        i += s


def sample(v, step: int, size: int) -> np.ndarray:
    """|v[::step]| (the first `size`) on the host, float64, NaN as inf."""
    out = cuda.device_array(size, np.float64)
    if size:
        _sample[_blocks(size), THREADS](v, step, out)
    return out.copy_to_host()


@cuda.jit
def _above(v, t, cand, count):
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < v.size:
        if not abs(v[i]) < t:  # (NaN too)
            c = cuda.atomic.add(count, 0, 1)
            if c < cand.size:
                cand[c] = i
        i += s


def above(v, t: float, room: int) -> tuple[int, object]:
    """(how many |v| >= t, their indices on the device in no order, at most `room`)."""
    cand = cuda.device_array(max(room, 1), np.int64)
    count = cuda.to_device(np.zeros(1, np.int64))
    _above[_blocks(v.size), THREADS](v, float32(t), cand, count)
    return int(count.copy_to_host()[0]), cand


@cuda.jit
def _gather(v, idx, n, out):
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < n:
        out[i] = v[idx[i]]
        i += s


def gather(v, idx, n: int) -> np.ndarray:
    """v[idx[:n]] on the host."""
    out = cuda.device_array(max(n, 1), v.dtype)
    if n:
        _gather[_blocks(n), THREADS](v, idx, n, out)
    return out.copy_to_host()[:n]


@cuda.jit
def _pack(message, bits, idx, v, residual, velocity, has_residual, has_velocity):
    k = idx.size
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < k:
        j = idx[i]
        message[i] = j
        bits[k + i] = v[j]
        if has_residual:
            residual[j] = float32(0)
        if has_velocity:
            velocity[j] = float32(0)
        i += s


def pack(message, idx, v, residual, velocity) -> None:
    """message[:k] = idx, message[k:] = v[idx]'s bits; residual[idx] = velocity[idx] = 0."""
    k = idx.size
    if k == 0:
        return
    bits = message.view(np.float32)
    dummy = v[:0]
    _pack[_blocks(k), THREADS](message, bits, idx, v,
                               dummy if residual is None else residual,
                               dummy if velocity is None else velocity,
                               residual is not None, velocity is not None)


@cuda.jit
def _zero(out):
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < out.size:
        out[i] = float32(0)
        i += s


@cuda.jit
def _add_at(out, idx, bits, base, k):
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < k:
        j = idx[base + i]
        out[j] = out[j] + bits[base + k + i]  # a rank's indices are distinct
        i += s


@cuda.jit
def _divide(out, by):
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < out.size:
        out[i] = out[i] / by
        i += s


def combine(out, gathered, k: int, nranks: int, avg: bool) -> None:
    """out = the sum in rank order of the K messages in gathered (2k int32 words each: k
    indices, then k float32 values' bits); divided by K for avg. One launch per rank, in
    order on one stream: the same sums as the host's."""
    if out.size:
        _zero[_blocks(out.size), THREADS](out)
    bits = gathered.view(np.float32)
    for q in range(nranks):
        if k:
            _add_at[_blocks(k), THREADS](out, gathered, bits, q * 2 * k, k)
    if avg and out.size:
        _divide[_blocks(out.size), THREADS](out, float32(nranks))

