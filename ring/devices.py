"""Which device a communicator runs on, and the backend that serves it."""

from __future__ import annotations

DEVICES = ("auto", "cuda", "host")


def gpu_usable() -> bool:
    """A real NVIDIA GPU that Numba can use (never under the simulator)."""
    from numba import config, cuda
    if config.ENABLE_CUDASIM:
        return False
    try:
        return cuda.is_available() and len(cuda.gpus) > 0
    except Exception:  # a driver that cannot start counts as no GPU
        return False


def resolve(device: str) -> str:
    """'auto' -> 'cuda' when a usable GPU is visible, else 'host'."""
    if device not in DEVICES:
        raise ValueError(f"device: expected one of {DEVICES}, got {device!r}")
    if device == "host":
        return "host"
    usable = gpu_usable()
    if device == "cuda" and not usable:
        raise ValueError("device: 'cuda' needs a usable NVIDIA GPU (CUDA IPC and stream memory "
                         "operations are not in Numba's simulator); use 'host'")
    return "cuda" if usable else "host"


def backend(device: str, comm, topo, nslots: int, slot_bytes: int, waiter):
    if device == "cuda":
        from .cuda.backend import CudaBackend
        return CudaBackend(comm, topo, nslots, slot_bytes, waiter)
    from .host.backend import HostBackend
    return HostBackend(comm, topo, nslots, slot_bytes, waiter)
