"""Pack and unpack: gather many arrays, or a strided view, into one contiguous buffer and
back. The basis of gradient bucketing: one collective over the packed buffer instead of
one per tensor.

    pack(buf, arrays)       buf[off_i : off_i + n_i] = arrays[i].ravel(), in order
    unpack(buf, arrays)     the reverse
    pack_strided(buf, v)    buf = v (any 2-D strided view), row-major
    unpack_strided(buf, v)  v = buf

pack / unpack launch one kernel for the whole list: the arrays go in as a tuple, one row
of blocks per array (blockIdx.y picks it). The kernel is compiled per (dtype, count of
arrays), so a training loop that packs the same bucket reuses it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, from_dtype, types

from .launch import grid


def _copy_rows(into: bool):
    def k(buf, arrays, offsets):
        j = cuda.blockIdx.y
        start = offsets[j]
        a = arrays[j]
        i, s = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x, cuda.blockDim.x * cuda.gridDim.x
        while i < a.size:
            if into:
                buf[start + i] = a[i]
            else:
                a[i] = buf[start + i]
            i += s
    return k


@lru_cache(maxsize=None)
def _list_kernel(dtype: np.dtype, count: int, into: bool):
    t = from_dtype(dtype)  # pure data movement: any storage dtype (bfloat16 as uint16)
    sig = types.void(t[::1], types.UniTuple(t[::1], count), types.int64[::1])
    return cuda.jit(sig)(_copy_rows(into))


@lru_cache(maxsize=64)
def _offsets(sizes: tuple[int, ...]):
    """Start of each array in the buffer, on the device; kept per layout, so packing the
    same bucket again copies nothing to the device."""
    return cuda.to_device(np.cumsum((0,) + sizes[:-1], dtype=np.int64))


def _one_dtype(what: str, buf, arrays) -> None:
    """Pure data movement: every array of the buffer's dtype (a GPU's compiled kernel refuses
    another one, the simulator would convert it: neither says why)."""
    for i, a in enumerate(arrays):
        if np.dtype(a.dtype) != np.dtype(buf.dtype):
            raise TypeError(f"{what}: array {i} is {np.dtype(a.dtype)}, the buffer "
                            f"{np.dtype(buf.dtype)}: one dtype (bfloat16 as uint16)")


def _run_list(buf, arrays, into: bool, stream):
    if not arrays:
        return
    _one_dtype("pack" if into else "unpack", buf, arrays)
    flat = tuple(a.reshape(a.size) for a in arrays)
    total = sum(a.size for a in flat)
    if total > buf.size:
        raise ValueError(f"pack: the arrays hold {total} elements, the buffer {buf.size}")
    offsets = _offsets(tuple(a.size for a in flat))
    blocks, threads = grid(max(a.size for a in flat))
    k = _list_kernel(np.dtype(buf.dtype), len(flat), into)
    k[(blocks, len(flat)), threads, stream](buf, flat, offsets)


def pack(buf, arrays, *, stream=0):
    _run_list(buf, list(arrays), True, stream)


def unpack(buf, arrays, *, stream=0):
    _run_list(buf, list(arrays), False, stream)


def _strided(into: bool):
    def k(buf, view):
        rows, cols = view.shape
        i, s = cuda.grid(1), cuda.gridsize(1)
        while i < rows * cols:
            r, c = i // cols, i % cols
            if into:
                buf[i] = view[r, c]
            else:
                view[r, c] = buf[i]
            i += s
    return k


@lru_cache(maxsize=None)
def _strided_kernel(dtype: np.dtype, into: bool):
    t = from_dtype(dtype)
    return cuda.jit(types.void(t[::1], types.Array(t, 2, "A")))(_strided(into))


def _check_strided(what: str, buf, view) -> None:
    """A 2-D view of the buffer's dtype that the buffer holds (a GPU's kernel checks no
    index: a short buffer would be written past its end)."""
    if len(view.shape) != 2:
        raise ValueError(f"{what}: a 2-D view, got {len(view.shape)}-D")
    _one_dtype(what, buf, [view])
    if view.size > buf.size:
        raise ValueError(f"{what}: the view holds {view.size} elements, the buffer {buf.size}")


def pack_strided(buf, view, *, stream=0):
    _check_strided("pack_strided", buf, view)
    blocks, threads = grid(view.size)
    _strided_kernel(np.dtype(buf.dtype), True)[blocks, threads, stream](buf, view)


def unpack_strided(buf, view, *, stream=0):
    _check_strided("unpack_strided", buf, view)
    blocks, threads = grid(view.size)
    _strided_kernel(np.dtype(buf.dtype), False)[blocks, threads, stream](buf, view)
