"""Wire casts between float32 and the 16-bit formats, bit-exact with NumPy / ml_dtypes.

    cast(out, x)       x float32 -> out float16 or bfloat16 (uint16 bits), or back
    scale(a, factor)   a *= float32(factor) in place: avg's division once a 16-bit sum is
                       widened (GradientBuckets' "wire"), NumPy's a *= np.float32(f) bit for bit

Integer paths (kernels/bits.py): round to nearest even, subnormals, inf and NaN exactly as
the host does it, and the same code runs in the simulator.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types, uint16, uint32

from . import bits
from .arrays import as_device
from .dtypes import as_f32, as_u32, kernel_dtype
from .inline import inline_ir
from .launch import grid

_f32_to_f16 = inline_ir(bits.f32_to_f16)
_f16_to_f32 = inline_ir(bits.f16_to_f32)
_f32_to_bf16 = inline_ir(bits.f32_to_bf16)


@inline_ir
def _narrow_f16(v):
    return uint16(_f32_to_f16(as_u32(v)))


@inline_ir
def _narrow_bf16(v):
    return uint16(_f32_to_bf16(as_u32(v)))


@inline_ir
def _widen_f16(h):
    return as_f32(_f16_to_f32(uint32(h)))


@inline_ir
def _widen_bf16(h):
    return as_f32(uint32(h) << 16)


def _map_kernel(fn):
    def k(out, x):
        i, s = cuda.grid(1), cuda.gridsize(1)
        while i < out.size:
            out[i] = fn(x[i])
            i += s
    return k


# (from, to) -> (device function, input type, output type). float16 travels as its bits
# here too, so that a NaN payload survives the trip.
CASTS = {
    ("float32", "float16"): (_narrow_f16, types.float32, types.uint16),
    ("float32", "bfloat16"): (_narrow_bf16, types.float32, types.uint16),
    ("float16", "float32"): (_widen_f16, types.uint16, types.float32),
    ("bfloat16", "float32"): (_widen_bf16, types.uint16, types.float32),
}


@lru_cache(maxsize=None)
def cast_kernel(src: str, dst: str):
    try:
        fn, tin, tout = CASTS[(src, dst)]
    except KeyError:
        raise TypeError(f"no cast from {src} to {dst}; have {sorted(CASTS)}") from None
    return cuda.jit(types.void(tout[::1], tin[::1]))(_map_kernel(fn))


def _bits(a, name):
    """float16 arrays are handed to the kernels as their uint16 bits."""
    return a.view("uint16") if name == "float16" else a


def launch_args(out, x, *, src=None, dst=None):
    """(kernel, grid, block, args) of one cast; BoundLaunch binds them once."""
    out, x = as_device(out), as_device(x)
    src = kernel_dtype(src or x.dtype).name
    dst = kernel_dtype(dst or out.dtype).name
    if out.size != x.size:
        raise ValueError(f"cast: out has {out.size} elements, x has {x.size}")
    blocks, threads = grid(out.size)
    return cast_kernel(src, dst), blocks, threads, (_bits(out, dst), _bits(x, src))


def cast(out, x, *, src=None, dst=None, stream=0):
    """out = x converted; src/dst name the dtypes when bfloat16 travels as uint16."""
    k, blocks, threads, args = launch_args(out, x, src=src, dst=dst)
    k[blocks, threads, stream](*args)


def _scale(a, factor):
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < a.size:
        a[i] = a[i] * factor  # (float32 x float32: one rounding, as NumPy's)
        i += s


@lru_cache(maxsize=None)
def scale_kernel():
    return cuda.jit(types.void(types.float32[::1], types.float32))(_scale)


def scale(a, factor: float, *, stream=0) -> None:
    """a *= float32(factor), a float32 GPU array, in place."""
    a = as_device(a)
    if a.dtype != np.float32:
        raise TypeError(f"scale: float32 arrays only, got {a.dtype}")
    blocks, threads = grid(a.size)
    scale_kernel()[blocks, threads, stream](a, np.float32(factor))
