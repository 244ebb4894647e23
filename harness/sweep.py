"""Time and check one (implementation, collective, size) case, as nccl-tests does.

Timing: barrier, `iters` calls back to back, wait for completion, divide; the time is the
average over ranks. Check: fresh inputs, one call, elements that differ from the exact
expected result counted on every rank and summed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import numpy as np
from mpi4py import MPI

from .collectives import Descriptor


@dataclass
class Result:
    impl: str
    collective: str
    nbytes: int
    count: int
    dtype: str
    op: str
    root: int
    in_place: bool
    time_us: float
    algbw: float  # GB/s, 1e9 bytes
    busbw: float
    wrong: int  # -1: not checked
    skipped: str | None = None  # why the case did not run
    algo: str | None = None  # the algorithm ring ran (auto picks per size); None: not ring
    error: float | None = None  # compressed wire: max |got - exact| / max |exact|, normal data
    # every rank on one GPU: the minimum bytes (Descriptor.min_bytes) / time / the run's HBM
    # rate (read + written, roofline.hbm_rate): the fraction of the memory bound reached
    vs_min: float | None = None


def compression_error(impl, coll: Descriptor, world: MPI.Comm, bufs, in_count: int,
                      out_count: int, op: str, root: int) -> float:
    """One call on standard normal float32 inputs (the check's small integers are exact on
    a 16-bit wire too): the largest error against the exact (float64) result, relative to
    its largest magnitude, over every rank."""
    k, rank = world.size, world.rank
    inputs = [np.random.default_rng(1000 + q).standard_normal(in_count).astype(np.float32)
              for q in range(k)]
    x, out = bufs.put(inputs[rank]), bufs.empty(out_count, np.float32)
    impl(coll.name, x, out, op, np.float32, root)
    impl.sync()
    exact = np.sum(np.array(inputs, np.float64), axis=0) / (k if op == "avg" else 1)
    if coll.name == "reduce_scatter":
        exact = exact[rank * out_count:(rank + 1) * out_count]
    got = bufs.get(out, np.float32).astype(np.float64)
    mine = float(np.abs(got - exact).max() / np.abs(exact).max()) if exact.size else 0.0
    return world.allreduce(mine, op=MPI.MAX)


def count_wrong(got: np.ndarray, want: np.ndarray) -> int:
    """Elements whose bits differ (exact, and NaN-safe)."""
    bits = np.dtype(f"u{got.dtype.itemsize}")
    return int(np.count_nonzero(got.reshape(-1).view(bits) != want.reshape(-1).view(bits)))


def _buffers(bufs, coll: Descriptor, rank, in_count, out_count, dtype, op, in_place, seed=0):
    x = coll.input(rank, in_count, dtype, op, seed)
    if not in_place:
        return bufs.put(x), bufs.empty(out_count, dtype)
    whole = np.empty(max(in_count, out_count), dtype)
    xv, _ = coll.in_place_views(whole, rank, in_count, out_count)
    xv[...] = x
    whole = bufs.put(whole)
    return coll.in_place_views(whole, rank, in_count, out_count)


def prepare(impl, x, out) -> None:
    """The implementation's own set-up of a case's buffers (ring's --register), if any."""
    if hasattr(impl, "prepare"):
        impl.release()
        impl.prepare(x, out)


def run_case(impl, coll: Descriptor, world: MPI.Comm, bufs, nbytes: int, dtype, op: str,
             in_place: bool, iters: int, warmup: int, check: bool, root: int = 0) -> Result:
    k, rank = world.size, world.rank
    itemsize = np.dtype(dtype).itemsize
    in_count, out_count = coll.counts(nbytes, itemsize, k)
    size = coll.size_bytes(in_count, out_count, itemsize)
    count = max(in_count, out_count)
    why = impl.available(coll.name, dtype, op, in_place, size)
    if why:
        return Result(impl.name, coll.name, size, count, np.dtype(dtype).name, op, -1, in_place,
                      float("nan"), float("nan"), float("nan"), -1, why)
    x, out = _buffers(bufs, coll, rank, in_count, out_count, dtype, op, in_place)
    prepare(impl, x, out)
    # what does not change from call to call, worked out before the clock (impls.py)
    call = impl.bind(coll.name, x, out, op, dtype, root) if hasattr(impl, "bind") else \
        partial(impl, coll.name, x, out, op, dtype, root)
    for _ in range(warmup):
        call()
    impl.sync()
    world.Barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        call()
    impl.sync()
    dt = time.perf_counter() - t0
    dt = world.allreduce(dt / max(iters, 1), op=MPI.SUM) / k
    wrong = -1
    if check:
        x, out = _buffers(bufs, coll, rank, in_count, out_count, dtype, op, in_place, seed=1)
        prepare(impl, x, out)
        impl(coll.name, x, out, op, dtype, root)
        impl.sync()
        want = (impl.expected(coll, rank, k, in_count, dtype, op, seed=1, root=root)
                if hasattr(impl, "expected") else  # a lossy wire's own rules (ring-int8)
                coll.expected(rank, k, in_count, dtype, op, seed=1, root=root))
        mine = 0 if want is None else count_wrong(bufs.get(out, dtype), want)
        wrong = world.allreduce(mine, op=MPI.SUM)
    if hasattr(impl, "release"):
        impl.release()
    algbw = size / dt / 1e9 if dt > 0 else 0.0
    algo = impl.last_algorithm() if hasattr(impl, "last_algorithm") else None
    error = compression_error(impl, coll, world, bufs, in_count, out_count, op, root) \
        if getattr(impl, "compression", None) else None
    return Result(impl.name, coll.name, size, count, np.dtype(dtype).name, op,
                  root if coll.rooted else -1, in_place, dt * 1e6, algbw,
                  algbw * coll.bus_factor(k), wrong, algo=algo, error=error)
