"""Markers for tests that need a real GPU, and helpers shared by kernel tests."""

import numpy as np
import pytest
from numba import config, cuda

SIMULATED = bool(config.ENABLE_CUDASIM)
HAVE_GPU = (not SIMULATED) and cuda.is_available()

def needs_gpu(fn):
    """Marked `gpu` (select with -m gpu) and skipped without a real GPU."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAVE_GPU, reason="needs a real NVIDIA GPU")(fn))


# A test of the cuda device that runs on a GPU or under Numba's simulator: marked `cuda`,
# which the GPU suite selects by name (tools/gpu-session.sh: -k "... or cuda" matches a
# test's marks as well as its name), whatever the test is called. `marks=CUDA_OR_SIM` in a
# pytest.param, @cuda_or_sim on a test.
CUDA_OR_SIM = (pytest.mark.cuda,
               pytest.mark.skipif(not (HAVE_GPU or SIMULATED), reason="needs a GPU or Numba's simulator"))


def cuda_or_sim(fn):
    for mark in CUDA_OR_SIM:
        fn = mark(fn)
    return fn


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
