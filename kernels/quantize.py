"""int8 wire compression on a GPU: ring/quantize.py's rules and message, bit for bit.

    quantize(packed, v, residual=None)    packed = v (+ residual) rounded to int8, one float32
                                          scale per block of QUANT_BLOCK values; residual
                                          becomes what the rounding lost (error feedback)
    dequantize_sum(out, gathered, avg)    out = the K gathered messages widened and summed in
                                          rank order (avg: divided by K once)

The message (ringtypes.packed_bytes) is the blocks' scales, then the values, padded to 4
bytes: the kernels take each buffer twice, as bytes and as float32 (the scales), and every
message of a gathered buffer starts at a float32.

quantize runs one thread block per block of values (a grid-stride loop over blocks): its
threads find the largest |value| together (a tree in shared memory: max is exact in any
order), then each rounds its share. Every product q * scale is rounded on its own
(libdevice's fmul_rn, PTX mul.rn.f32): NVVM, or ptxas from a plain mul.f32, would otherwise
fuse it with the add or subtract after it into one FMA, and the bits would no longer be the
host's (tools/compile_kernels.py checks the PTX, in make test).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import boolean, cuda, float32, int32, int64, types, uint8

from ringtypes import QUANT_BLOCK, packed_bytes, quant_blocks

from .arrays import as_device
from .inline import inline
from .launch import grid, simulated

MAX_THREADS = 256  # the shared-memory tree's size: launch.THREADS, or fewer simulated

if simulated():
    @inline
    def mul_rn(a, b):
        return a * b  # NumPy float32: rounded on its own already
else:
    from numba.cuda import libdevice

    @inline
    def mul_rn(a, b):
        return libdevice.fmul_rn(a, b)


def _quantize(v, residual, feedback, packed, scales):
    n = v.size
    nb = (n + QUANT_BLOCK - 1) // QUANT_BLOCK
    top = cuda.shared.array(MAX_THREADS, float32)
    bad = cuda.shared.array(MAX_THREADS, int32)
    t, nt = cuda.threadIdx.x, cuda.blockDim.x
    one27 = float32(127)
    for b in range(cuda.blockIdx.x, nb, cuda.gridDim.x):
        lo = b * QUANT_BLOCK
        hi = min(lo + QUANT_BLOCK, n)
        amax, nonfinite = float32(0), 0
        for i in range(lo + t, hi, nt):
            w = v[i] + residual[i] if feedback else v[i]
            a = abs(w)
            if not math.isfinite(a):
                nonfinite = 1
            elif a > amax:
                amax = a
        top[t], bad[t] = amax, nonfinite
        cuda.syncthreads()
        half = nt // 2
        while half > 0:
            if t < half:
                top[t] = max(top[t], top[t + half])
                bad[t] = bad[t] | bad[t + half]
            cuda.syncthreads()
            half //= 2
        amax = top[0]
        if bad[0]:
            scale = float32(math.nan)
        elif amax == 0:
            scale = float32(1)
        else:
            scale = amax / one27
        cuda.syncthreads()  # everyone has read the tree before the next block refills it
        if t == 0:
            scales[b] = scale
            if b == nb - 1:
                for i in range(4 * nb + n, packed.size):  # the padding
                    packed[i] = 0
        base = 4 * nb
        for i in range(lo + t, hi, nt):
            w = v[i] + residual[i] if feedback else v[i]
            r = w / scale
            if not math.isfinite(r):
                r = float32(0)
            r = float32(round(min(max(r, -one27), one27)))  # half to even, as np.rint
            packed[base + i] = uint8(int32(r) & 0xFF)
            if feedback:
                lost = w - mul_rn(r, scale)
                residual[i] = lost if math.isfinite(lost) else float32(0)


def _dequantize_sum(out, gathered, scales, k, msg_bytes, avg):
    n = out.size
    base = 4 * ((n + QUANT_BLOCK - 1) // QUANT_BLOCK)
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < n:
        b = i // QUANT_BLOCK
        acc = float32(0)
        for r in range(k):
            row = r * msg_bytes
            q = int32(gathered[row + base + i])
            part = mul_rn(float32(q - 256 if q >= 128 else q), scales[row // 4 + b])
            acc = part if r == 0 else acc + part
        if avg:
            acc = acc / float32(k)
        out[i] = acc
        i += s


@lru_cache(maxsize=None)
def _kernels():
    f32, u8 = float32[::1], uint8[::1]
    return (cuda.jit(types.void(f32, f32, boolean, u8, f32))(_quantize),
            cuda.jit(types.void(f32, u8, f32, int64, int64, boolean))(_dequantize_sum))


def _check(a, dtype, what: str, size: int):
    if np.dtype(a.dtype) != dtype or a.ndim != 1 or a.size != size:
        raise ValueError(f"{what}: a 1-D {np.dtype(dtype)} array of {size} elements, got "
                         f"{np.dtype(a.dtype)} {tuple(a.shape)}")


def quantize(packed, v, residual=None, *, stream=0):
    """Round float32 v into packed (uint8, packed_bytes(v.size)); with residual (float32,
    v's size) v + residual is rounded and residual becomes what was lost."""
    v, packed = as_device(v), as_device(packed)
    _check(v, np.float32, "quantize: v", v.size)
    _check(packed, np.uint8, "quantize: packed", packed_bytes(v.size))
    if residual is not None:
        residual = as_device(residual)
        _check(residual, np.float32, "quantize: residual", v.size)
    threads = grid(1)[1]
    assert threads <= MAX_THREADS and threads & (threads - 1) == 0, threads  # the tree's shape
    blocks = grid(quant_blocks(v.size) * threads)[0]  # a thread block per block, or fewer
    _kernels()[0][blocks, threads, stream](v, v if residual is None else residual,
                                           residual is not None, packed, packed.view(np.float32))


def dequantize_sum(out, gathered, *, avg: bool, stream=0):
    """out (float32) = the sum over ranks, in rank order, of each message widened;
    gathered: the K messages back to back (uint8, K * packed_bytes(out.size), or (K, that))."""
    out, gathered = as_device(out), as_device(gathered)
    _check(out, np.float32, "dequantize_sum: out", out.size)
    msg = packed_bytes(out.size)
    flat = gathered.reshape(gathered.size) if gathered.ndim != 1 else gathered
    if out.size == 0:
        return
    k = flat.size // msg
    if k < 1:
        raise ValueError(f"dequantize_sum: gathered holds {flat.size} bytes, fewer than one "
                         f"message of {msg}")
    _check(flat, np.uint8, "dequantize_sum: gathered", k * msg)
    blocks, threads = grid(out.size)
    _kernels()[1][blocks, threads, stream](out, flat, flat.view(np.float32), k, msg, avg)
