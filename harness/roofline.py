"""The copy bandwidths a sweep is read against, measured in the same run.

  d2d  device-to-device copy (cudaMemcpy) on the GPU: the memory roofline of a collective
       whose ranks share the GPU (every byte a ring step moves is read and written there);
  h2d / d2h  pinned host <-> device copies: the roofline of chunks staged through host
       memory between (emulated) nodes;
  host  memcpy between two NumPy buffers, for the host device.

Rank 0 measures alone while the others wait (ranks sharing a GPU would split it), then
broadcasts. Best of `reps` timed copies of `nbytes`, in GB/s (1e9 bytes), as the sweep's
algbw / busbw.
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

NBYTES = 256 << 20


def _best(run, reps: int) -> float:
    """Seconds of the fastest of reps calls of run() (run returns its own time or None)."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        took = run()
        best = min(best, took if took is not None else time.perf_counter() - t0)
    return best


def host(nbytes: int, reps: int = 5) -> dict[str, float]:
    a, b = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    np.copyto(b, a)
    return {"host_copy_GBps": nbytes / _best(lambda: np.copyto(b, a), reps) / 1e9}


def cuda(nbytes: int, reps: int = 5) -> dict[str, float]:
    import cupy as cp
    import cupyx
    dev_a, dev_b = cp.empty(nbytes, cp.uint8), cp.empty(nbytes, cp.uint8)
    pinned = cupyx.empty_pinned(nbytes, np.uint8)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    stream = cp.cuda.get_current_stream()

    def timed(copy):
        def run():
            start.record(stream)
            copy()
            stop.record(stream)
            stop.synchronize()
            return cp.cuda.get_elapsed_time(start, stop) / 1e3
        run()  # warm
        return nbytes / _best(run, reps) / 1e9

    return {
        "d2d_GBps": timed(lambda: dev_b.data.copy_from_device_async(dev_a.data, nbytes, stream)),
        "h2d_GBps": timed(lambda: dev_a.set(pinned, stream=stream)),
        "d2h_GBps": timed(lambda: dev_a.get(stream=stream, out=pinned)),
    }


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
