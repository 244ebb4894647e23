"""Device arrays as the kernels take them, on a GPU and under the simulator alike."""

from __future__ import annotations

from numba import cuda

from .launch import simulated


def as_device(a):
    """A Numba device array for `a` (Numba device array, CuPy array, PyTorch tensor, any
    __cuda_array_interface__ object; NumPy arrays under the simulator)."""
    if hasattr(a, "copy_to_host") or simulated():
        return a
    return cuda.as_cuda_array(a)


def address(a) -> int:
    """Device address of the first element."""
    if simulated():
        host = getattr(a, "_ary", a)
        return host.__array_interface__["data"][0]
    return a.device_ctypes_pointer.value
