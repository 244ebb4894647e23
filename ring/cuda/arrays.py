"""Device arrays in and out: anything with __cuda_array_interface__ (Numba device arrays,
CuPy arrays, PyTorch CUDA tensors) goes in as a 1-D Numba view; results come back as the
same kind of object that was passed in.

bfloat16: CuPy has no bfloat16 dtype and PyTorch does not export bfloat16 through the
interface, so bfloat16 data travels as uint16 bits: pass dtype="bfloat16" with uint16 arrays
(PyTorch bfloat16 tensors are viewed as int16 bits automatically).
"""

from __future__ import annotations

import numpy as np
from numba import config, cuda

from ..ops import bfloat16, parse_dtype

SIMULATED = bool(config.ENABLE_CUDASIM)


def _torch_bits(x):
    """A PyTorch bfloat16 tensor as its 16-bit integer bits (same memory)."""
    mod = type(x).__module__
    if mod.startswith("torch") and str(getattr(x, "dtype", "")) == "torch.bfloat16":
        import torch
        return x.view(torch.int16), True
    return x, False


def as_device(x, arg: str, dtype=None):
    """(1-D Numba device view of x, logical dtype). TypeError / ValueError name `arg`."""
    x, was_bf16 = _torch_bits(x)
    if SIMULATED:
        if not hasattr(x, "copy_to_host"):
            raise TypeError(f"{arg}: expected a device array (under the simulator: "
                            f"numba.cuda.to_device), got {type(x).__name__}")
        d = x
    else:
        if not hasattr(x, "__cuda_array_interface__"):
            raise TypeError(f"{arg}: expected a GPU array (__cuda_array_interface__), got "
                            f"{type(x).__name__}; the 'host' device takes NumPy arrays")
        d = x if hasattr(x, "device_ctypes_pointer") else cuda.as_cuda_array(x)
    if not d.is_c_contiguous():
        raise ValueError(f"{arg}: the array must be contiguous (got strides {d.strides})")
    storage = np.dtype(d.dtype)
    if was_bf16 or (dtype is not None and np.dtype(parse_dtype(dtype, "dtype")) == bfloat16):
        if storage.itemsize != 2 or storage.kind not in "iu":
            raise TypeError(f"{arg}: bfloat16 travels as 16-bit integer bits, got {storage}")
        logical = bfloat16
        d = d.view(np.uint16)
    else:
        logical = parse_dtype(storage, arg)
        if dtype is not None and parse_dtype(dtype, "dtype") != logical:
            raise TypeError(f"dtype: {dtype} does not match {arg}'s {storage}")
    return d.reshape(d.size), logical


def empty_like_kind(x, n: int, logical):
    """A new 1-D array of n elements, of the same kind as x (CuPy, PyTorch, Numba)."""
    storage = np.dtype(np.uint16) if logical == bfloat16 else np.dtype(logical)
    mod = type(x).__module__
    if mod.startswith("cupy"):
        import cupy
        with cupy.cuda.Device(x.device.id):
            return cupy.empty(n, storage)
    if mod.startswith("torch"):
        import torch
        tdt = torch.bfloat16 if logical == bfloat16 else getattr(torch, storage.name)
        return torch.empty(n, dtype=tdt, device=x.device)
    return cuda.device_array(n, storage)
