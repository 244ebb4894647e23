"""Markers for tests that need a real GPU, and helpers shared by kernel tests."""

import numpy as np
import pytest
from numba import config, cuda

SIMULATED = bool(config.ENABLE_CUDASIM)
HAVE_GPU = (not SIMULATED) and cuda.is_available()

def needs_gpu(fn):
    """Marked `gpu` (select with -m gpu) and skipped without a real GPU."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAVE_GPU, reason="needs a real NVIDIA GPU")(fn))


# Device memory a lifetime test lets grow after its baseline: a leak of every communicator
# or group over its cycles is well above it (a communicator's slots and mappings: ~32 KiB)
DEVICE_GROWTH_LIMIT = 16 << 20


def free_device_bytes(world=None) -> int:
    """Free memory on this process's GPU after Numba's deferred frees. With world (an MPI
    communicator of processes sharing the GPU, whose memory the count includes): once every
    one of them has flushed its own."""
    ctx = cuda.current_context()
    ctx.deallocations.clear()  # Numba frees lazily: flush first
    if world is not None:
        world.Barrier()
    return ctx.get_memory_info()[0]


def dev(a: np.ndarray):
    return cuda.to_device(a)


def host(d) -> np.ndarray:
    return d.copy_to_host()
