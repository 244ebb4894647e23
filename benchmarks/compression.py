"""Wire compression of a float32 gradient all-reduce (ring.buckets, compression="bf16" /
"fp16", both ways of accumulating: "float32" at each hop inside the all-reduce, "wire"
summed in the 16-bit type between casts; "int8" with a scale per block, all-gathered, with
and without error feedback, whose error here is one step's after the previous steps' residual): time against the float32 all-reduce of the same
bucket, and the error against the float32 result. One bucket per size; op avg; every
rank's gradient standard normal (its own seed). Time: slowest rank, best of `--reps` after
a warm-up, packing and casts included. Error: largest |compressed - float32| / largest
|float32|, and the RMS of the same.

    mpiexec -n 2 python benchmarks/compression.py [--sizes 1M,16M,64M] [--reps 8]
        [--device host|cuda] [--json results/host-compression-2ranks.json]

On the cuda device the gradients are CuPy arrays, the time ends when the GPU has finished,
and "sums in float32 at each hop" is absent (the communicator's compression= is host-only).
"""

import argparse
import json
import os
import sys
import time

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ring  # noqa: E402
from harness.sizes import parse_size  # noqa: E402
from ring.buckets import GradientBuckets  # noqa: E402

WIRES = [(None, None), ("bf16", "float32"), ("bf16", "wire"), ("fp16", "float32"),
         ("fp16", "wire"), ("int8", None), ("int8", "feedback")]
# (compression, accumulate); int8: (compression, whether with error feedback)


def options(w) -> dict:
    if w[0] == "int8":
        return {"compression": "int8", "error_feedback": w[1] == "feedback"}
    return {"compression": w[0], "accumulate": w[1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1M,16M,64M")
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--device", default="host", choices=["host", "cuda"])
    ap.add_argument("--json")
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    comm = ring.Communicator(device=a.device)
    if a.device == "cuda":
        import cupy as xp
        wires = [w for w in WIRES if w[1] != "float32"]
        finish = xp.cuda.Device().synchronize
    else:
        xp, wires, finish = np, WIRES, (lambda: None)
    rows = []
    for nbytes in (parse_size(s) for s in a.sizes.split(",")):
        n = nbytes // 4
        mine = xp.asarray(np.random.default_rng(world.rank).standard_normal(n).astype(np.float32))
        grad = [xp.empty(n, np.float32)]
        result, times = {}, {}
        buckets = {w: GradientBuckets(comm, grad, bucket_bytes=nbytes, first_bucket_bytes=nbytes,
                                      op="avg", **options(w))
                   for w in wires}
        for rep in range(a.reps + 1):
            for w in wires:  # interleaved
                grad[0][...] = mine
                finish()
                world.Barrier()
                t = time.perf_counter()
                buckets[w].ready(0)
                buckets[w].wait()
                finish()
                dt = world.allreduce(time.perf_counter() - t, op=MPI.MAX)
                if rep:
                    times[w] = min(times.get(w, 1e9), dt)
                result[w] = grad[0].copy() if xp is np else xp.asnumpy(grad[0])
        plain = WIRES[0]
        ref = result[plain].astype(np.float64)
        scale = np.abs(ref).max()
        for w in wires:
            err = np.abs(result[w] - ref)
            rows.append({"bytes": nbytes, "wire": w[0] or "float32", "accumulate": w[1],
                         "ms": times[w] * 1e3, "speedup_vs_float32": times[plain] / times[w],
                         "max_rel_error": float(err.max() / scale),
                         "rms_rel_error": float(np.sqrt((err ** 2).mean()) / scale)})
    comm.close()
    if world.rank:
        return
    print(f"{world.size} ranks, {a.device}, float32 gradients averaged; error against the float32 "
          "all-reduce, relative to its largest magnitude")
    print(f"{'bytes':>10} {'wire':>9} {'sums in':>8} {'ms':>8} {'vs f32':>7} {'max err':>9} "
          f"{'rms err':>9}")
    for r in rows:
        print(f"{r['bytes']:>10} {r['wire']:>9} {r['accumulate'] or '-':>8} {r['ms']:8.2f} "
              f"{r['speedup_vs_float32']:6.2f}x "
              f"{r['max_rel_error']:9.2e} {r['rms_rel_error']:9.2e}")
    if a.json:
        from harness.meta import describe
        argv = ["mpiexec", "-n", str(world.size), "python", *sys.argv]
        with open(a.json, "w") as f:
            json.dump({"meta": describe(argv, cuda=a.device == "cuda"), "ranks": world.size, "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
