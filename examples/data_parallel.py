"""Data-parallel training with ring: each rank takes its share of every global batch, and
the gradients are all-reduced in buckets that start while the backward pass is still
producing the next gradients (ring.buckets, as PyTorch DDP's Reducer; the gradients are
views of the buckets, DDP's gradient_as_bucket_view, so nothing is packed or unpacked). After N steps the
parameters equal single-process training with the whole global batch; the example checks
that and prints the largest relative difference (float32; only the order of the sums in
the matrix products differs).

    mpiexec -n 4 python examples/data_parallel.py [--steps 30] [--batch 64] [--device host|cuda]
        [--accumulate K]

--accumulate K: gradient accumulation, as DDP's no_sync(): each optimizer step takes K
micro-batches of --batch samples, the first K-1 added up locally with no communication, the
K-th all-reduced (buckets.no_sync()); the parameters then equal single-process training
with batches of K x --batch, and the example prints the all-reduces made per optimizer step.

At the end it prints the time per step with the buckets started during the backward pass
(overlap) and with every bucket started after it, and with bfloat16 on the wire
(compression="bf16", and "int8" with error feedback: their parameters are not held to
1e-5; their difference is printed). On the host device the buckets run on
the communicator's progress thread, which gains only where a core is free meanwhile.
"""

from __future__ import annotations

import contextlib
import sys
import time

import mlp
from ring.buckets import GradientBuckets


def train(comm, xp, x, y, batch: int, steps: int, overlap: bool, bucket_bytes: int,
          compression=None, error_feedback=False, accumulate: int = 1):
    k, r = comm.size, comm.rank
    params = [xp.asarray(p) for p in mlp.init()]
    buckets = GradientBuckets(comm, [xp.empty_like(p) for p in params],
                              bucket_bytes=bucket_bytes, first_bucket_bytes=bucket_bytes // 4,
                              op="sum", compression=compression, error_feedback=error_feedback,
                              gradient_as_bucket_view=True)
    grads = buckets.grads  # views of the buckets: computed into, all-reduced where they lie
    opt = mlp.Momentum(xp, params)
    share = batch // k
    t0 = None
    for s in range(steps):
        if s == 1:  # the first step compiles what the rest reuse (the GPU's kernels): untimed
            comm.barrier()
            t0 = time.perf_counter()
        step = batch * accumulate  # the samples of one optimizer step, every rank's
        for m in range(accumulate):  # micro-batches: the first accumulate - 1 not all-reduced
            lo = (s * step) % len(x) + m * batch + r * share
            xs, ys = xp.asarray(x[lo:lo + share]), xp.asarray(y[lo:lo + share])
            last = m == accumulate - 1
            with contextlib.nullcontext() if last else buckets.no_sync():
                # each rank's part of the global mean: its samples' gradient / the step's
                # samples, added to the micro-batches' before it
                mlp.backward(xp, params, xs, ys, 1.0 / step, grads,
                             buckets.ready if overlap else None, add=m > 0)
                if not overlap:
                    for i in reversed(range(len(grads))):
                        buckets.ready(i)
                buckets.wait()
        opt.step(params, grads)
    calls = buckets.allreduces / steps  # all-reduces per optimizer step, as counted
    per_step = (time.perf_counter() - t0) / (steps - 1) if t0 is not None else float("nan")
    return params, per_step, calls, len(buckets.buckets)


def main() -> int:
    def extra(ap):
        ap.add_argument("--bucket-bytes", type=mlp.at_least_one, default=16 << 10)
        ap.add_argument("--accumulate", type=mlp.at_least_one, default=1,
                        help="micro-batches per optimizer step (all-reduced once)")
    args, comm, xp = mlp.start(__doc__, extra)
    k = args.accumulate
    x, y = mlp.data(4 * args.batch * k)
    want = mlp.reference(x, y, args.batch * k, args.steps)
    times, diff, calls = {}, 0.0, set()
    for overlap in (True, False):
        params, times[overlap], per_step, nbuckets = train(
            comm, xp, x, y, args.batch, args.steps, overlap, args.bucket_bytes, accumulate=k)
        calls.add(per_step)
        got = mlp.host(xp, params)
        diff = max(diff, mlp.largest_relative_difference(got, want))
    # bfloat16 on the wire: not held to 1e-5 (8 bits of mantissa), its difference printed
    params, times["bf16"], _, _ = train(comm, xp, x, y, args.batch, args.steps, True,
                                        args.bucket_bytes, "bf16", accumulate=k)
    bf16_diff = mlp.largest_relative_difference(mlp.host(xp, params), want)
    # int8 with a scale per block and error feedback
    params, times["int8"], _, _ = train(comm, xp, x, y, args.batch, args.steps, True,
                                        args.bucket_bytes, "int8", error_feedback=True,
                                        accumulate=k)
    int8_diff = mlp.largest_relative_difference(mlp.host(xp, params), want)
    if comm.rank == 0:
        print(f"all-reduces per optimizer step: {' / '.join(f'{c:g}' for c in sorted(calls))} "
              f"({nbuckets} buckets, {k} micro-batch{'es' if k > 1 else ''} a step)")
    return mlp.finish(
        comm, xp, f"data parallel: {comm.size} ranks ({comm.device}), global batch "
              f"{args.batch}{f' x {k} micro-batches' if k > 1 else ''}, "
              f"{args.steps} steps, {sum(p.size for p in got)} parameters",
        diff, f"{times[True] * 1e3:.2f} ms with overlap, {times[False] * 1e3:.2f} ms without "
              f"(all-reduce after the backward pass), {times['bf16'] * 1e3:.2f} ms with overlap "
              f"and bfloat16 on the wire (largest relative difference {bf16_diff:.1e}), "
              f"{times['int8'] * 1e3:.2f} ms with int8 and error feedback ({int8_diff:.1e})")


if __name__ == "__main__":
    sys.exit(main())
