"""Where the harness keeps its buffers: NumPy arrays on the host, CuPy arrays on a GPU.

Inputs and expected results are always made on the host (collectives.py); these helpers
move them to the device under test and back. bfloat16 and float8 live on the GPU as
integer bits of their width (CuPy has no such dtypes); NCCL and ring read those bits as
the logical dtype.
"""

from __future__ import annotations

import os

import numpy as np


class HostBuffers:
    name = "host"

    def put(self, a: np.ndarray) -> np.ndarray:
        return a

    def empty(self, n: int, dtype) -> np.ndarray:
        return np.empty(n, dtype)

    def get(self, a, dtype) -> np.ndarray:
        return np.asarray(a)

    def sync(self) -> None:
        pass


class CudaBuffers:
    name = "cuda"

    def __init__(self, local_rank: int):
        import cupy as cp
        self.cp = cp
        self.gpu = local_rank % cp.cuda.runtime.getDeviceCount()  # (ranks on one GPU: vs_min)
        cp.cuda.Device(self.gpu).use()

    @staticmethod
    def storage(dtype) -> np.dtype:
        from ring.cuda.arrays import storage_of  # bfloat16, float8: integer bits
        return storage_of(dtype)

    def put(self, a: np.ndarray):
        return self.cp.asarray(a.view(self.storage(a.dtype)))

    def empty(self, n: int, dtype):
        return self.cp.empty(n, self.storage(dtype))

    def get(self, a, dtype) -> np.ndarray:
        return self.cp.asnumpy(a).view(dtype)

    def sync(self) -> None:
        self.cp.cuda.get_current_stream().synchronize()


class SimulatedBuffers(CudaBuffers):
    """Numba's simulated device arrays (NUMBA_ENABLE_CUDASIM=1: no GPU, no CuPy), so that
    ring's cuda device runs in the harness on a machine without a GPU (correctness only:
    its times are the simulator's)."""

    def __init__(self, local_rank: int):
        from numba import cuda
        self.cuda = cuda

    def put(self, a: np.ndarray):
        return self.cuda.to_device(a.view(self.storage(a.dtype)))

    def empty(self, n: int, dtype):
        return self.cuda.device_array(n, self.storage(dtype))

    def get(self, a, dtype) -> np.ndarray:
        return a.copy_to_host().view(dtype)

    def sync(self) -> None:
        pass


def gpu_usable() -> bool:
    try:
        import cupy as cp
        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device: all mean "no GPU here"
        return False


def make(device: str, local_rank: int):
    if device == "auto":
        device = "cuda" if gpu_usable() else "host"
    if device != "cuda":
        return HostBuffers()
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return SimulatedBuffers(local_rank)
    if not gpu_usable():  # (every rank finds the same: each leaves with the reason)
        raise SystemExit("--device cuda: needs a usable NVIDIA GPU and CuPy (pip install "
                         ".[cuda12] or .[cuda13]; or, for tests, Numba's simulator: "
                         "NUMBA_ENABLE_CUDASIM=1); use --device host")
    return CudaBuffers(local_rank)


def for_rank(device: str, world):
    """make() for this rank of an MPI communicator: its rank on its node picks the GPU."""
    from mpi4py import MPI
    local = world.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return make(device, local.rank)
    finally:
        local.Free()
