"""Numba CUDA kernels every GPU collective is made of.

    reduce_copy / reduce_into   the ring's receive-reduce(-copy)-send step, all ops x dtypes
    fold                        K inputs reduced left to right in one launch (oneshot)
    cast                        float32 <-> float16 / bfloat16 wire casts, bit-exact
    scale                       a *= factor, float32 (avg after a widened 16-bit sum)
    pack / unpack               many arrays or a strided view <-> one contiguous buffer

Without a GPU they run under Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1), made to yield
the CPU while it waits for its threads (simulator.prepare(), called where launches are set
up; importing this package patches nothing).
See kernels/README.md for launch costs and measured bandwidth.
"""

from .casts import cast, scale
from .pack import pack, pack_strided, unpack, unpack_strided
from .reduce import fold, kernel_for, reduce_copy, reduce_into

__all__ = ["reduce_copy", "reduce_into", "fold", "kernel_for", "cast", "scale", "pack", "unpack",
           "pack_strided", "unpack_strided"]
