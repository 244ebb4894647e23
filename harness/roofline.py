"""The copy bandwidths a sweep is read against, measured in the same run.

  d2d  device-to-device copy on the GPU, the faster of the driver's memcpy and a copy
       kernel (kernels/copy.py; both kept): the memory roofline of a collective whose ranks
       share the GPU (every byte a ring step moves is read and written there);
  h2d / d2h  pinned host <-> device copies: the roofline of chunks staged through host
       memory between (emulated) nodes;
  host  memcpy between two NumPy buffers, for the host device;
  link  across nodes (real, or emulated by RING_NODES): MPI between rank 0 and the first
        rank of the next node, one message each way at once (MPI_Sendrecv of host
        buffers, at most LINK_BYTES): the roofline of the bytes a collective moves between
        nodes. Emulated nodes' links are MPI's shared memory unless MPI is told otherwise
        (README: TCP over loopback), which is why it is measured, not assumed.

Rank 0 measures alone while the others wait (ranks sharing a GPU would split it; the link:
rank 0 and its partner), then broadcasts. Copies of `nbytes`, in GB/s (1e9 bytes), as the sweep's algbw / busbw: on the
host the best of `reps`; on a GPU kernels.timing.stream_ms (median of event-timed means of
asynchronous copies on a stream: back to back, as a collective's kernels run).
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

NBYTES = 256 << 20
LINK_BYTES = 64 << 20  # a slow link (TCP, 0.5 GB/s) takes 0.13 s a message


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

    from ring.cuda.arrays import SIMULATED
    if SIMULATED:  # Numba's simulator times nothing (it has no events): no rooflines
        return {}
    from kernels.copy import d2d_gbps
    from kernels.timing import stream_ms
    dev_a = nb.device_array(nbytes, np.uint8)
    pinned = nb.pinned_array(nbytes, np.uint8)

    def gbps(copy) -> float:
        return nbytes / stream_ms(copy, reps=reps) / 1e6

    d2d = d2d_gbps(nbytes, reps)  # bytes read + written: half of them are the copy's size
    return {"d2d_GBps": max(d2d.values()) / 2, "d2d_memcpy_GBps": d2d["memcpy"] / 2,
            "d2d_kernel_GBps": d2d["kernel"] / 2,
            "h2d_GBps": gbps(lambda s: dev_a.copy_to_device(pinned, stream=s)),
            "d2h_GBps": gbps(lambda s: dev_a.copy_to_host(pinned, stream=s))}


def link(world: MPI.Comm, partner: int, nbytes: int, reps: int = 3) -> float | None:
    """Collective over world: GB/s one way between rank 0 and `partner` (best of reps, one
    message each way at once) on rank 0; None elsewhere. The others wait at the barrier."""
    if world.rank not in (0, partner):
        world.Barrier()
        return None
    other = partner if world.rank == 0 else 0
    a, b = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    world.Sendrecv(a, other, 0, b, other, 0)  # the first pays for the connection
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        world.Sendrecv(a, other, 0, b, other, 0)
        best = min(best, time.perf_counter() - t0)
    world.Barrier()
    return nbytes / best / 1e9 if world.rank == 0 else None


def next_node(world: MPI.Comm) -> int | None:
    """Collective over world: the lowest rank outside rank 0's node (None: one node)."""
    from ring import topology
    topo = topology.discover(world)
    try:
        return next((r for r in range(world.size) if not topo.same_node(0, r)), None)
    finally:
        topo.close()


def measure(world: MPI.Comm, device: str, nbytes: int = NBYTES) -> dict[str, float]:
    """Collective over world: rank 0's figures on every rank."""
    partner = next_node(world)
    world.Barrier()
    figures = None
    if world.rank == 0:
        figures = cuda(nbytes) if device == "cuda" else host(nbytes)
        figures["nbytes"] = nbytes
    if partner is not None:
        gbps = link(world, partner, min(nbytes, LINK_BYTES))
        if world.rank == 0:
            figures["link_GBps"] = gbps
            figures["link_ranks"] = [0, partner]
    return world.bcast(figures, root=0)


def hbm_rate(figures: dict[str, float]) -> float | None:
    """Bytes per second the GPU's memory reads and writes together, from the copy roofline
    (d2d_GBps is the copy's size over its time: every byte read and written once, so the
    traffic is twice it); None without one (the host, Numba's simulator)."""
    d2d = figures.get("d2d_GBps")
    return 2 * d2d * 1e9 if d2d else None


def vs_min(coll, nbytes: int, itemsize: int, nranks: int, time_us: float, hbm: float) -> float:
    """The fraction of the memory bound a case reached, every rank on one GPU: the bytes
    every rank must read and write (coll.min_bytes, all-reduce 2 K N) over the time, over
    the HBM rate (hbm_rate)."""
    i, o = coll.counts(nbytes, itemsize, nranks)
    return coll.min_bytes(i, o, itemsize, nranks) / (time_us * 1e-6) / hbm


def describe(figures: dict[str, float]) -> str:
    parts = [f"{k[:-5]} {v:.1f} GB/s" for k, v in figures.items()
             if k.endswith("_GBps") and k != "link_GBps"]
    line = f"# copy rooflines ({figures['nbytes'] >> 20} MiB, rank 0 alone): " + (
        ", ".join(parts) or "none (Numba's simulator times nothing)")
    if "link_GBps" in figures:
        line += (f"\n# link between nodes (ranks {figures['link_ranks'][0]} and "
                 f"{figures['link_ranks'][1]}, {min(figures['nbytes'], LINK_BYTES) >> 20} MiB "
                 f"each way at once): {figures['link_GBps']:.2f} GB/s")
    return line
