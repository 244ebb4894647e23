"""Markers for tests that need a real GPU, and helpers shared by kernel tests."""

import numpy as np
import pytest
from numba import config, cuda

SIMULATED = bool(config.ENABLE_CUDASIM)
HAVE_GPU = (not SIMULATED) and cuda.is_available()

def needs_gpu(fn):
    """Marked `gpu` (select with -m gpu) and skipped without a real GPU."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAVE_GPU, reason="needs a real NVIDIA GPU")(fn))


def dev(a: np.ndarray):
    return cuda.to_device(a)


def host(d) -> np.ndarray:
    return d.copy_to_host()
