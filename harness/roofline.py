"""The copy bandwidths a sweep is read against, measured in the same run.

  d2d  device-to-device copy (cudaMemcpy) on the GPU: the memory roofline of a collective
       whose ranks share the GPU (every byte a ring step moves is read and written there);
  h2d / d2h  pinned host <-> device copies: the roofline of chunks staged through host
       memory between (emulated) nodes;
  host  memcpy between two NumPy buffers, for the host device.

Rank 0 measures alone while the others wait (ranks sharing a GPU would split it), then
broadcasts. Copies of `nbytes`, in GB/s (1e9 bytes), as the sweep's algbw / busbw: on the
host the best of `reps`; on a GPU kernels.timing.device_ms (median of event-timed means),
as the kernel benchmarks read their copy roofline.
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

NBYTES = 256 << 20


def host(nbytes: int, reps: int = 5) -> dict[str, float]:
    a, b = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    np.copyto(b, a)  # warm: pages touched
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t0)
    return {"host_copy_GBps": nbytes / best / 1e9}


def cuda(nbytes: int, reps: int = 5) -> dict[str, float]:
    from numba import cuda as nb

    from kernels.timing import device_ms
    dev_a, dev_b = nb.device_array(nbytes, np.uint8), nb.device_array(nbytes, np.uint8)
    pinned = nb.pinned_array(nbytes, np.uint8)

    def gbps(copy) -> float:
        return nbytes / device_ms(copy, reps=reps) / 1e6

    return {"d2d_GBps": gbps(lambda: dev_b.copy_to_device(dev_a)),
            "h2d_GBps": gbps(lambda: dev_a.copy_to_device(pinned)),
            "d2h_GBps": gbps(lambda: dev_a.copy_to_host(pinned))}


def measure(world: MPI.Comm, device: str, nbytes: int = NBYTES) -> dict[str, float]:
    """Collective over world: rank 0's figures on every rank."""
    world.Barrier()
    figures = None
    if world.rank == 0:
        figures = cuda(nbytes) if device == "cuda" else host(nbytes)
        figures["nbytes"] = nbytes
    return world.bcast(figures, root=0)


def describe(figures: dict[str, float]) -> str:
    parts = [f"{k[:-5]} {v:.1f} GB/s" for k, v in figures.items() if k.endswith("_GBps")]
    return f"# copy rooflines ({figures['nbytes'] >> 20} MiB, rank 0 alone): " + ", ".join(parts)
