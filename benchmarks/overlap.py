"""Overlap on the host device: a synthetic backward pass (one matrix product per layer,
then that layer's gradient is ready) with the gradient all-reduces in buckets started as
the gradients become ready (ring.buckets, async_op on the communicator's progress thread),
against the same buckets all-reduced after the backward pass. Per step: the slowest
rank's time, best and median over `--steps` steps, the two ways interleaved.

    mpiexec -n 2 python benchmarks/overlap.py [--layers 8] [--grad-mb 4] [--compute 384]
        [--bucket-mb 8] [--steps 15] [--json results/host-overlap-2ranks.json]

Also printed: the backward pass alone and the all-reduces alone (the sum is what no
overlap costs; the smaller of the two is what perfect overlap would save). BLAS runs one
thread per rank, so that the ranks do not fight over the cores for the products.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ring  # noqa: E402
from harness.sizes import at_least  # noqa: E402
from ring.buckets import GradientBuckets  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=at_least(1), default=8)
    ap.add_argument("--grad-mb", type=float, default=4.0, help="gradient per layer (float32)")
    ap.add_argument("--compute", type=int, default=384, help="n of the n x n product per layer")
    ap.add_argument("--sleep-ms", type=float, default=0.0,
                    help="instead of the products, sleep this long per layer: compute done "
                         "elsewhere (an accelerator), the host's cores free meanwhile")
    ap.add_argument("--bucket-mb", type=float, default=8.0)
    ap.add_argument("--steps", type=at_least(1), default=15)
    ap.add_argument("--json")
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    comm = ring.Communicator(device="host")
    n = int(a.grad_mb * (1 << 20)) // 4
    grads = [np.zeros(n, np.float32) for _ in range(a.layers)]
    rng = np.random.default_rng(comm.rank)
    m = rng.standard_normal((a.compute, a.compute)).astype(np.float32)
    bucket = int(a.bucket_mb * (1 << 20))
    buckets = GradientBuckets(comm, grads, bucket_bytes=bucket, first_bucket_bytes=bucket,
                              op="avg")

    def layer(i):  # the layer's backward compute, then its gradient
        if a.sleep_ms:
            time.sleep(a.sleep_ms / 1e3)
            grads[i][:1] = i
            return
        acc = m
        for _ in range(4):
            acc = acc @ m
            acc *= 1.0 / a.compute
        grads[i][:] = acc[0, 0]

    def step(mode):
        for i in reversed(range(a.layers)):
            if mode != "allreduce only":
                layer(i)
            if mode == "overlap":
                buckets.ready(i)
        if mode in ("after", "allreduce only"):
            for i in reversed(range(a.layers)):
                buckets.ready(i)
        if mode != "backward only":
            buckets.wait()

    modes = ["overlap", "after", "backward only", "allreduce only"]
    times = {mode: [] for mode in modes}
    for s in range(a.steps + 2):  # two warm-up rounds
        for mode in modes:
            world.Barrier()
            t = time.perf_counter()
            step(mode)
            dt = world.allreduce(time.perf_counter() - t, op=MPI.MAX)
            if s >= 2:
                times[mode].append(dt * 1e3)
    rows = {mode: {"best_ms": min(v), "median_ms": statistics.median(v)}
            for mode, v in times.items()}
    comm.close()
    if world.rank:
        return
    print(f"{world.size} ranks, {a.layers} layers x {a.grad_mb:g} MB of gradient, "
          f"buckets of {a.bucket_mb:g} MB, {a.steps} steps")
    print(f"{'step':>16} {'best ms':>9} {'median ms':>10}")
    for mode, r in rows.items():
        print(f"{mode:>16} {r['best_ms']:9.1f} {r['median_ms']:10.1f}")
    gain = rows["after"]["median_ms"] / rows["overlap"]["median_ms"]
    print(f"overlap: {gain:.2f}x the speed of all-reduce after the backward pass (median)")
    if a.json:
        from harness.meta import describe
        argv = ["mpiexec", "-n", str(world.size), "python", *sys.argv]
        doc = {"meta": describe(argv, cuda=False), "ranks": world.size, "args": vars(a), "steps": rows,
               "per_step_ms": times, "overlap_speedup_median": gain}
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
