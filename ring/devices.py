"""Which device a communicator runs on, and the backend that serves it."""

from __future__ import annotations

DEVICES = ("auto", "cuda", "host")


def gpu_usable() -> bool:
    """A real NVIDIA GPU that Numba can use (never under the simulator)."""
    from numba import cuda

    from kernels.launch import simulated
    if simulated():
        return False
    try:
        return cuda.is_available() and len(cuda.gpus) > 0
    except Exception:  # a driver that cannot start counts as no GPU
        return False


def resolve(device: str) -> str:
    """'auto' -> 'cuda' when a usable GPU is visible, else 'host'. An explicit 'cuda' also
    runs under Numba's simulator (NUMBA_ENABLE_CUDASIM=1), for tests: there CUDA IPC is
    emulated in MPI shared memory (ring/transport/simipc.py)."""
    if device not in DEVICES:
        raise ValueError(f"device: expected one of {DEVICES}, got {device!r}")
    if device == "host":
        return "host"
    from kernels.launch import simulated
    usable = gpu_usable()
    if device == "cuda" and not (usable or simulated()):
        raise ValueError("device: 'cuda' needs a usable NVIDIA GPU (or, for tests, Numba's "
                         "simulator: NUMBA_ENABLE_CUDASIM=1); use 'host'")
    return "cuda" if usable or device == "cuda" else "host"


def backend(device: str, comm, topo, nslots: int, slot_bytes: int, waiter, path: str = "stream"):
    if device == "cuda":
        from .cuda.backend import CudaBackend
        return CudaBackend(comm, topo, nslots, slot_bytes, waiter, path)
    from .host.backend import HostBackend
    return HostBackend(comm, topo, nslots, slot_bytes, waiter)
