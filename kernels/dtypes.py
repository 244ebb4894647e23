"""How each supported dtype is stored on the device and computed in a kernel.

A kernel dtype has a storage type (what the kernel's arrays hold) and a compute type:
float16 and bfloat16 are loaded into float32, combined there, and rounded back to nearest
even, as NumPy and ml_dtypes do on the host, so host and device results agree bit for bit
(NaN payloads aside). Both 16-bit types are handed to kernels as uint16 bits: neither
Numba's arrays nor CuPy have a bfloat16 dtype, the simulator has no bfloat16 intrinsics,
and the same bits let a kernel load two elements with one 4-byte load (reduce.py).
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32, types, uint16, uint32

from . import bits
from .inline import inline_ir

float16 = types.float16


# Bit casts through a one-element local array: the simulator runs them as NumPy views, and
# on the GPU the compiler keeps the element in a register (checked in the PTX, see README).
@inline_ir
def as_f32(u):
    tmp = cuda.local.array(1, uint32)
    tmp[0] = u
    return tmp.view(np.float32)[0]


@inline_ir
def as_u32(f):
    tmp = cuda.local.array(1, float32)
    tmp[0] = f
    return tmp.view(np.uint32)[0]


_f32_to_bf16 = inline_ir(bits.f32_to_bf16)


@inline_ir
def identity(x):
    return x


@inline_ir
def as_f16(u):
    tmp = cuda.local.array(1, uint16)
    tmp[0] = u
    return tmp.view(np.float16)[0]


@inline_ir
def f16_bits(h):
    tmp = cuda.local.array(1, float16)
    tmp[0] = h
    return tmp.view(np.uint16)[0]


# 16-bit types: bits (in any unsigned integer) <-> float32. float16 uses the hardware
# conversions (round to nearest even); bfloat16 a shift one way and kernels/bits.py back.
@inline_ir
def load_f16(x):
    return float32(as_f16(uint16(x)))


@inline_ir
def store_f16(v):
    return f16_bits(float16(v))


@inline_ir
def load_bf16(x):
    return as_f32(uint32(x) << 16)


@inline_ir
def store_bf16(v):
    return uint16(_f32_to_bf16(as_u32(v)))


# float32's store rounds: AVG's divide takes a float64 divisor (reduce.py), and a store that
# passed its float64 quotient on would let Numba type a fold's running value float64 for
# the whole loop, so that the sums before it were no longer rounded to float32 (seen on an
# H100: fold of 3 float32 parts, avg, 1 ulp off; the simulator does not type the loop)
@inline_ir
def store_f32(v):
    return float32(v)


class KernelDtype:
    def __init__(self, name, storage, numba_type, load, store, floating):
        self.name, self.storage, self.numba_type = name, np.dtype(storage), numba_type
        self.load, self.store, self.floating = load, store, floating

    @property
    def bits16(self) -> bool:
        """Stored as uint16 bits and computed in float32 (float16, bfloat16)."""
        return self.floating and self.storage == np.uint16

    def __repr__(self) -> str:
        return f"KernelDtype({self.name})"


KERNEL_DTYPES = {d.name: d for d in (
    KernelDtype("float16", np.uint16, types.uint16, load_f16, store_f16, True),
    KernelDtype("bfloat16", np.uint16, types.uint16, load_bf16, store_bf16, True),
    KernelDtype("float32", np.float32, types.float32, identity, store_f32, True),
    KernelDtype("float64", np.float64, types.float64, identity, identity, True),
    KernelDtype("int32", np.int32, types.int32, identity, identity, False),
    KernelDtype("int64", np.int64, types.int64, identity, identity, False),
    KernelDtype("uint8", np.uint8, types.uint8, identity, identity, False),
    KernelDtype("int8", np.int8, types.int8, identity, identity, False),
    KernelDtype("int16", np.int16, types.int16, identity, identity, False),
    KernelDtype("uint32", np.uint32, types.uint32, identity, identity, False),
    KernelDtype("uint64", np.uint64, types.uint64, identity, identity, False),
)}
# float8 (ringtypes.DATA_ONLY) has no kernels: the collectives that carry it only copy bytes.


def kernel_dtype(dtype) -> KernelDtype:
    """The kernel dtype for a NumPy dtype or name ('bfloat16' accepts ml_dtypes' dtype)."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    try:
        return KERNEL_DTYPES[name]
    except KeyError:
        raise TypeError(f"no kernels for dtype {name}; supported: {', '.join(KERNEL_DTYPES)}") from None
