"""Reduction kernels: the "receive, reduce, forward" steps of the ring.

    reduce_copy(out, a, b, op)          out = a op b
    reduce_copy(out, a, b, op, out2=o2) out = o2 = a op b   (reduce, copy to the output
                                                             and to the next rank's slot)
    reduce_into(dst, src, op)           dst = dst op src
    fold(out, parts, op)                out = ((parts[0] op parts[1]) op ...) op parts[K-1]:
                                        K inputs in one launch, each partial result rounded
                                        to the dtype as K-1 reduce_copy launches would
    op AVG: a + b rounded to the dtype, then divided by `nranks` (the final step of an
    average, fused: no extra pass; the same two roundings as the host's add-then-divide)

One grid-stride kernel per (op, dtype, outputs), compiled for its explicit signature on
first use and kept (kernel_for). Measured on an H100 (kernels/README.md, kernels/explore.py):
- 4- and 8-byte types: one element per thread per pass, 8 blocks of 256 per SM. Unrolling
  four or eight elements per thread did not help (87-88% of copy bandwidth against 91%):
  the loads of neighbouring threads are independent already.
- float16 / bfloat16: one element per thread means 2-byte loads and 46% of copy bandwidth.
  These kernels load two elements with one 4-byte load (the uint16 bits viewed as uint32)
  and reach 90%; thread 0 handles an odd last element. Arrays not 4-byte aligned fall back
  to the one-element kernel.
min / max select one input's bits (NaN wins, as np.minimum / np.maximum): the result is an
input element exactly, NaN payload included.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types, uint32

from ringtypes import Op

from .arrays import address, as_device
from .dtypes import KernelDtype, kernel_dtype
from .inline import inline_ir
from .launch import grid


@inline_ir
def _add(a, b):
    return a + b


@inline_ir
def _mul(a, b):
    return a * b


@inline_ir
def _take_min(a, b):  # keep a?  NaN propagates, as np.minimum
    return a != a or (b == b and a <= b)


@inline_ir
def _take_max(a, b):
    return a != a or (b == b and a >= b)


def _arith(combine, load, store, divide: bool):
    @inline_ir
    def f(x, y, div):
        v = store(combine(load(x), load(y)))
        if divide:  # round the sum to the dtype first, as the host does (add, then divide)
            v = store(load(v) / div)
        return v
    return f


def _select(take_a, load):
    @inline_ir
    def f(x, y, div):
        return x if take_a(load(x), load(y)) else y
    return f


def _single(f, two_outputs: bool):
    """One element per thread per pass."""
    if two_outputs:
        def k(out, out2, a, b, div):
            i, s = cuda.grid(1), cuda.gridsize(1)
            while i < out.size:
                v = f(a[i], b[i], div)
                out[i] = v
                out2[i] = v
                i += s
    else:
        def k(out, a, b, div):
            i, s = cuda.grid(1), cuda.gridsize(1)
            while i < out.size:
                out[i] = f(a[i], b[i], div)
                i += s
    return k


def _paired(f, two_outputs: bool):
    """16-bit types, two elements per 4-byte load. The *32 arrays are the *16 arrays'
    bits viewed as uint32 (n // 2 pairs); thread 0 takes an odd last element."""
    lo_mask = uint32(0xFFFF)

    @inline_ir
    def pair(x, y, div):
        lo = uint32(f(x & lo_mask, y & lo_mask, div))
        hi = uint32(f(x >> 16, y >> 16, div))
        return lo | (hi << 16)

    if two_outputs:
        def k(out32, out232, a32, b32, out, out2, a, b, div):
            i, s = cuda.grid(1), cuda.gridsize(1)
            while i < out32.size:
                v = pair(a32[i], b32[i], div)
                out32[i] = v
                out232[i] = v
                i += s
            if cuda.grid(1) == 0 and out.size % 2 == 1:
                j = out.size - 1
                v = f(a[j], b[j], div)
                out[j] = v
                out2[j] = v
    else:
        def k(out32, a32, b32, out, a, b, div):
            i, s = cuda.grid(1), cuda.gridsize(1)
            while i < out32.size:
                out32[i] = pair(a32[i], b32[i], div)
                i += s
            if cuda.grid(1) == 0 and out.size % 2 == 1:
                j = out.size - 1
                out[j] = f(a[j], b[j], div)
    return k


# The table: op -> how to build its element function. Adding an op is one entry here
# (and one in ringtypes.Op). Arithmetic ops compute in the dtype's compute type; selecting
# ops copy one input's bits.
OPS = {
    Op.SUM: lambda kd: _arith(_add, kd.load, kd.store, False),
    Op.AVG: lambda kd: _arith(_add, kd.load, kd.store, True),
    Op.PROD: lambda kd: _arith(_mul, kd.load, kd.store, False),
    Op.MIN: lambda kd: _select(_take_min, kd.load),
    Op.MAX: lambda kd: _select(_take_max, kd.load),
}


def _signature(kd: KernelDtype, two_outputs: bool, paired: bool):
    arr = kd.numba_type[::1]
    nout = 2 if two_outputs else 1
    arrays = [arr] * (nout + 2)
    if paired:
        arrays = [types.uint32[::1]] * (nout + 2) + arrays
    return types.void(*arrays, types.float64)


@lru_cache(maxsize=None)
def kernel_for(op: Op, dtype_name: str, two_outputs: bool, paired: bool = False):
    """The compiled kernel for (op, dtype, one or two outputs, paired 16-bit loads);
    compiled on first request and kept."""
    kd = kernel_dtype(dtype_name)
    if op is Op.AVG and not kd.floating:
        raise TypeError(f"op avg needs a floating-point dtype, got {dtype_name}")
    if paired and not kd.bits16:
        raise TypeError(f"paired loads are for 16-bit floating types, not {dtype_name}")
    f = OPS[op](kd)
    py = _paired(f, two_outputs) if paired else _single(f, two_outputs)
    return cuda.jit(_signature(kd, two_outputs, paired))(py)


def _fold(f_mid, f_last, k: int):
    """out = parts[0] op ... op parts[k-1] per element, left to right; f_last for the last
    step (AVG's divide), f_mid before it."""
    def kern(out, parts, div):
        i, s = cuda.grid(1), cuda.gridsize(1)
        while i < out.size:
            v = parts[0][i]
            for j in range(1, k):
                if j == k - 1:
                    v = f_last(v, parts[j][i], div)
                else:
                    v = f_mid(v, parts[j][i], div)
            out[i] = v
            i += s
    return kern


@lru_cache(maxsize=None)
def fold_kernel_for(op: Op, dtype_name: str, k: int):
    """The compiled K-input fold for (op, dtype, k >= 2); compiled on first request, kept."""
    kd = kernel_dtype(dtype_name)
    if op is Op.AVG and not kd.floating:
        raise TypeError(f"op avg needs a floating-point dtype, got {dtype_name}")
    last = OPS[op](kd)
    mid = OPS[Op.SUM](kd) if op is Op.AVG else last  # avg: sums, then the dividing sum
    arr = kd.numba_type[::1]
    sig = types.void(arr, types.UniTuple(arr, k), types.float64)
    return cuda.jit(sig)(_fold(mid, last, k))


def _as_device(a, kd: KernelDtype, what: str):
    """a as a device array of kd's storage: of that dtype, or of kd's own (float16 as
    uint16 bits); another dtype is refused (its bits would be read as kd's: int32 as
    float32, say, and the sum silently wrong)."""
    a = as_device(a)
    if a.dtype == kd.storage:
        return a
    if np.dtype(a.dtype).name != kd.name:
        storage = np.dtype(kd.storage).name
        takes = kd.name if storage == kd.name else f"{kd.name}, or its bits as {storage}"
        raise TypeError(f"{what}: an array of {np.dtype(a.dtype).name} in a call on "
                        f"{kd.name} (it takes {takes})")
    return a.view(kd.storage)


def _aligned4(*arrays) -> bool:
    return all(address(a) % 4 == 0 for a in arrays if a.size)


def launch_args(op, out, a, b, out2=None, nranks: int = 1, dtype=None):
    """(kernel, grid, block, args) for one reduce_copy call; BoundLaunch binds them once."""
    op = op if isinstance(op, Op) else Op(op)
    kd = kernel_dtype(dtype if dtype is not None else out.dtype)
    outs = (out,) if out2 is None else (out, out2)
    arrays = [_as_device(x, kd, "reduce_copy") for x in (*outs, a, b)]
    n = arrays[0].size
    if any(x.size != n for x in arrays):
        raise ValueError(f"reduce_copy: arrays differ in length: {[x.size for x in arrays]}")
    paired = kd.bits16 and n >= 2 and _aligned4(*arrays)
    k = kernel_for(op, kd.name, out2 is not None, bool(paired))
    if paired:
        halves = [x[:n - n % 2].view(np.uint32) for x in arrays]
        args = (*halves, *arrays, float(nranks))
        blocks, threads = grid(n // 2)
    else:
        args = (*arrays, float(nranks))
        blocks, threads = grid(n)
    return k, blocks, threads, args


def reduce_copy(out, a, b, op=Op.SUM, *, out2=None, nranks: int = 1, dtype=None, stream=0):
    """out (and out2) = a op b, elementwise, on `stream`. 1-D contiguous device arrays (Numba,
    CuPy, anything with __cuda_array_interface__) of one dtype; for bfloat16 pass uint16
    arrays and dtype='bfloat16'."""
    k, blocks, threads, args = launch_args(op, out, a, b, out2, nranks, dtype)
    k[blocks, threads, stream](*args)


def fold_args(out, parts, op=Op.SUM, *, nranks: int | None = None, dtype=None):
    """(kernel, grid, block, args) of one fold; None for no elements."""
    if len(parts) < 2:
        raise ValueError(f"fold: at least two parts, got {len(parts)}")
    op = op if isinstance(op, Op) else Op(op)
    kd = kernel_dtype(dtype if dtype is not None else out.dtype)
    out = _as_device(out, kd, "fold")
    parts = tuple(_as_device(p, kd, "fold") for p in parts)
    if any(p.size != out.size for p in parts):
        raise ValueError(f"fold: arrays differ in length: {[out.size] + [p.size for p in parts]}")
    if out.size == 0:
        return None
    blocks, threads = grid(out.size)
    div = float(len(parts) if nranks is None else nranks)
    return fold_kernel_for(op, kd.name, len(parts)), blocks, threads, (out, parts, div)


def fold(out, parts, op=Op.SUM, *, nranks: int | None = None, dtype=None, stream=0):
    """out = ((parts[0] op parts[1]) op ...) op parts[-1], elementwise, in one launch; avg
    sums and divides by nranks (default: the number of parts) in the last step. At least
    two parts; bit for bit what len(parts) - 1 reduce_copy launches give."""
    launch = fold_args(out, parts, op, nranks=nranks, dtype=dtype)
    if launch is not None:
        k, blocks, threads, args = launch
        k[blocks, threads, stream](*args)


def reduce_into(dst, src, op=Op.SUM, *, nranks: int = 1, dtype=None, stream=0):
    """dst = dst op src."""
    reduce_copy(dst, dst, src, op, nranks=nranks, dtype=dtype, stream=stream)
