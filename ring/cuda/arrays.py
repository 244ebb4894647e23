"""Device arrays in and out: anything with __cuda_array_interface__ (Numba device arrays,
CuPy arrays, PyTorch CUDA tensors) goes in as a 1-D Numba view; results come back as the
same kind of object that was passed in.

bfloat16 and float8: CuPy has no such dtypes and PyTorch does not export them through the
interface, so they travel as unsigned integer bits of their width (BITS): pass
dtype="bfloat16" with uint16 arrays, dtype="float8_e4m3fn" with uint8 arrays. PyTorch
bfloat16 and float8 tensors are viewed as their bits automatically.
"""

from __future__ import annotations

import numpy as np
from numba import config, cuda

from kernels.arrays import address as _address
from ringtypes import bfloat16, float8_e4m3fn, float8_e5m2, parse_dtype

SIMULATED = bool(config.ENABLE_CUDASIM)

# logical dtype -> the integer dtype a GPU array holds its bits in
BITS = {bfloat16: np.dtype(np.uint16), float8_e4m3fn: np.dtype(np.uint8),
        float8_e5m2: np.dtype(np.uint8)}


def storage_of(logical) -> np.dtype:
    """The dtype of a GPU array that holds `logical` data."""
    return BITS.get(np.dtype(logical), np.dtype(logical))


def _torch_bits(x):
    """A PyTorch bfloat16 / float8 tensor as its integer bits (same memory) and its dtype."""
    mod = type(x).__module__
    name = str(getattr(x, "dtype", "")).removeprefix("torch.")
    if mod.startswith("torch") and name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        import torch
        return x.view(torch.int16 if name == "bfloat16" else torch.uint8), name
    return x, None


def as_device(x, arg: str, dtype=None):
    """(1-D Numba device view of x, logical dtype). TypeError / ValueError name `arg`."""
    x, torch_bits = _torch_bits(x)
    d = device_view(x, arg)
    storage = np.dtype(d.dtype)
    asked = torch_bits if torch_bits is not None else dtype
    wanted = None if asked is None else parse_dtype(asked, "dtype")
    if wanted in BITS:
        bits = BITS[wanted]
        if storage.itemsize != bits.itemsize or storage.kind not in "iu":
            raise TypeError(f"{arg}: {wanted} travels as {8 * bits.itemsize}-bit integer bits, "
                            f"got {storage}")
        logical = wanted
        d = d.view(bits)
    else:
        logical = parse_dtype(storage, arg)
        if dtype is not None and parse_dtype(dtype, "dtype") != logical:
            raise TypeError(f"dtype: {dtype} does not match {arg}'s {storage}")
    return d, logical


def any_device(x, arg: str):
    """A contiguous device array of any dtype (PyTorch's bfloat16 / float8 too) as a 1-D
    Numba device view (comm.register: its bytes are what matter)."""
    return device_view(_torch_bits(x)[0], arg)


def device_view(x, arg: str):
    """A contiguous device array x as a 1-D Numba device view of its own dtype (any), its
    address a multiple of its element size (a misaligned load is an error that ends the
    CUDA context: refused here, as a bad argument, on every rank)."""
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
    d = d.reshape(d.size)
    at, size = _address(d), d.dtype.itemsize
    if d.size and at % size:  # (a view at an odd byte offset of another dtype's memory)
        raise ValueError(f"{arg}: its address {at:#x} is not a multiple of its element size "
                         f"({size} bytes): no GPU kernel can load it")
    return d


def empty_like_kind(x, n: int, logical):
    """A new 1-D array of n elements, of the same kind as x (CuPy, PyTorch, Numba)."""
    storage = storage_of(logical)
    mod = type(x).__module__
    if mod.startswith("cupy"):
        import cupy
        with cupy.cuda.Device(x.device.id):
            return cupy.empty(n, storage)
    if mod.startswith("torch"):
        import torch
        tdt = getattr(torch, np.dtype(logical).name)
        return torch.empty(n, dtype=tdt, device=x.device)
    return cuda.device_array(n, storage)


class DeviceArrays:
    """The array side of the cuda device, as ring/call.py takes it from a backend (shared by
    the Communicator's cuda backend and ring.Group)."""

    @staticmethod
    def flat(a, arg: str, writeable: bool = False, dtype=None):
        return as_device(a, arg, dtype)

    @staticmethod
    def empty_like(x, shape, logical):
        n = int(np.prod(shape))
        out = empty_like_kind(x, n, logical)
        return out.reshape(shape) if len(shape) != 1 and hasattr(out, "reshape") else out

    address = staticmethod(_address)

    @staticmethod
    def may_overlap(a, b) -> bool:
        if not a.size or not b.size:
            return False
        ab, bb = _address(a), _address(b)
        return ab < bb + b.nbytes and bb < ab + a.nbytes
