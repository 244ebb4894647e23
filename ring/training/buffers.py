"""Buffers on either device alike: NumPy arrays on the host, Numba device arrays on a GPU
(GradientBuckets' buckets and ring/int8_reduce.py's messages)."""

from __future__ import annotations

import numpy as np


def empty(like, n: int, dtype=None):
    """n elements of dtype (like's by default) where like lives: NumPy or the GPU."""
    dtype = like.dtype if dtype is None else dtype
    if isinstance(like, np.ndarray):
        return np.empty(n, dtype)
    from numba import cuda
    return cuda.device_array(n, dtype)


def zero(a) -> None:
    """Zero a NumPy or Numba device array (or a slice of one)."""
    if isinstance(a, np.ndarray):
        a[...] = 0
    else:
        a.copy_to_device(np.zeros(a.shape, a.dtype))


def on_host(a) -> np.ndarray:
    """A NumPy copy of a NumPy or Numba device array."""
    return a.copy() if isinstance(a, np.ndarray) else a.copy_to_host()


def copy(dst, src) -> None:
    """dst = src, of the same size; a 1-D stretch of a buffer on either side, the other
    side maybe shaped (a gradient's view: the contiguous side is reshaped, a view). Either
    may be on the GPU (from the GPU to the host: dst contiguous)."""
    if not isinstance(dst, np.ndarray):
        dst.copy_to_device(src)
    elif not isinstance(src, np.ndarray):
        src.copy_to_host(dst.reshape(src.shape))
    elif dst.flags.c_contiguous:
        np.copyto(dst.reshape(src.shape), src)
    else:
        np.copyto(dst, src.reshape(dst.shape))
