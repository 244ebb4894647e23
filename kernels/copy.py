"""A copy kernel: the device-to-device roofline as the multiprocessors reach it.

The ring's kernels run on the multiprocessors, and a driver memcpy between two device
arrays may not reach what they can: on an H200 (HBM3e rated 4.8 TB/s) Numba's
copy_to_device read 2445-2579 GB/s, bytes read + written (results/h200/README.md). The
benchmarks read their collectives against the faster of this kernel and the memcpy,
measured in the same run (d2d_gbps).
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from .launch import grid


@cuda.jit
def _copy(dst, src):
    """dst[:] = src, four loads in flight per thread before its stores (grid-stride)."""
    i, s = cuda.grid(1), cuda.gridsize(1)
    n = dst.size
    while i + 3 * s < n:
        a0, a1, a2, a3 = src[i], src[i + s], src[i + 2 * s], src[i + 3 * s]
        dst[i], dst[i + s], dst[i + 2 * s], dst[i + 3 * s] = a0, a1, a2, a3
        i += 4 * s
    while i < n:
        dst[i] = src[i]
        i += s


def copy(dst, src, stream=0) -> None:
    """dst[:] = src for two device uint8 arrays of one size, a multiple of 8 bytes (copied
    as 8-byte words)."""
    if dst.size != src.size or dst.size % 8:
        raise ValueError(f"copy: two arrays of one size, a multiple of 8 bytes, got "
                         f"{dst.size} and {src.size}")
    d, s = dst.view(np.uint64), src.view(np.uint64)
    if d.size:
        blocks, threads = grid(d.size, 4)
        _copy[blocks, threads, stream](d, s)


def d2d_gbps(nbytes: int, reps: int = 20) -> dict[str, float]:
    """Device-to-device copies of nbytes back to back on a stream (kernels.timing.stream_ms),
    GB/s of bytes read + written: "memcpy" (the driver's) and "kernel" (this module's)."""
    from .timing import stream_ms
    a, b = cuda.device_array(nbytes, np.uint8), cuda.device_array(nbytes, np.uint8)
    ms = {"memcpy": stream_ms(lambda s: b.copy_to_device(a, stream=s), reps=reps),
          "kernel": stream_ms(lambda s: copy(b, a, stream=s), reps=reps)}
    return {k: 2 * nbytes / v / 1e6 for k, v in ms.items()}
