"""Which device a communicator runs on, and the backend that serves it."""

from __future__ import annotations

DEVICES = ("auto", "cuda", "host")


def resolve(device: str) -> str:
    """'auto' -> 'host' for now; 'cuda' is refused until the CUDA backend exists."""
    if device not in DEVICES:
        raise ValueError(f"device: expected one of {DEVICES}, got {device!r}")
    if device == "cuda":
        raise ValueError("device: the 'cuda' device is not implemented yet; use 'host'")
    # "auto" will pick "cuda" when a usable GPU is visible once the CUDA backend exists.
    return "host"


def backend(device: str, comm, topo, nslots: int, slot_bytes: int, waiter):
    from .host.backend import HostBackend
    return HostBackend(comm, topo, nslots, slot_bytes, waiter)
