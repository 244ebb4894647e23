"""Does training converge with Top-K sparsified gradients? The data-parallel example's model
(examples/mlp.py: an MLP, momentum SGD, its synthetic data) trained for the same steps with
dense float32 gradient all-reduces and with compression="topk" at each density, with and
without error feedback, and with error feedback and the momentum in the buckets (the
optimizer then steps without it; ring/training/topk.py): "global" (each rank owes its share
of m x the last result) and "corrected" (Deep Gradient Compression's momentum correction:
each rank's own velocity, masked); the loss over the whole data set after the last step,
and its ratio to the dense run's. Also each wire's bytes per step (what one rank sends),
against dense float32's ring and bf16's. --bucket-bytes 131072 puts the whole model in one
bucket (one selection over all of it, where 16 KiB buckets each send their own share).

    mpiexec -n K python benchmarks/topk_convergence.py [--steps 200] [--batch 64]
        [--densities 0.1,0.01,0.001] [--report-at 30,200,1000] [--samples N] [--oracle]
        [--json out.json]

--oracle adds, per density d, one process that knows the global batch's exact gradient and
applies its K x d largest entries each step (with global momentum and error feedback): an
idealised top-k of as many values as the K ranks send, to tell what the selection itself
costs at a horizon from what the ranks' partial knowledge costs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import mlp  # noqa: E402

import ring  # noqa: E402
from harness.sizes import at_least  # noqa: E402
from ring.buckets import GradientBuckets  # noqa: E402


def density_at(step: int, target: float, warmup: int, start: float = 0.25) -> float:
    """Deep Gradient Compression's sparsity warm-up: from `start` down to `target`,
    exponentially, over the first `warmup` steps (DGC: 25%, 6.25%, ... over 4 epochs)."""
    if step >= warmup or target >= start:
        return target
    return start * (target / start) ** (step / warmup)


def train(comm, x, y, batch: int, steps: int, bucket_bytes: int, sgd_momentum: float,
          warmup: int = 0, report_at=(), **options):
    """(parameters after `steps`, bytes one rank sent per step, the mean over the steps,
    {step: loss over the whole data set after it} for the steps in report_at) for one
    configuration."""
    k, r = comm.size, comm.rank
    params = mlp.init()
    grads = [np.empty_like(p) for p in params]
    buckets = GradientBuckets(comm, grads, bucket_bytes=bucket_bytes,
                              first_bucket_bytes=bucket_bytes // 4, op="sum", **options)
    # momentum in the buckets (global or DGC's correction): the optimizer none
    opt = mlp.Momentum(np, params, mu=0.0 if options.get("momentum") else sgd_momentum)
    share = batch // k
    densities = []  # each step's (the warm-up's change)
    losses = {}
    for s in range(steps):
        if warmup and options.get("compression") == "topk":
            densities.append(density_at(s, options["density"], warmup))
            buckets.set_density(densities[-1])
        lo = (s * batch) % len(x) + r * share
        mlp.backward(np, params, x[lo:lo + share], y[lo:lo + share], 1.0 / batch, grads,
                     buckets.ready)
        buckets.wait()
        opt.step(params, grads)
        if s + 1 in report_at:
            losses[s + 1] = loss(params, x, y)
    sizes = [len(b) for b in buckets._flats]
    if options.get("compression") == "topk":  # the mean over the steps (warm-up sends more)
        from ring.training.topk import k_of
        densities = densities or [options["density"]]
        sent = sum((k - 1) * 8 * k_of(n, d) for n in sizes for d in densities) \
            // len(densities)
    else:  # the ring's 2 (K - 1) / K of each bucket, 4 bytes a value (bf16: 2)
        width = 2 if options.get("compression") == "bf16" else 4
        sent = sum(2 * (k - 1) * n * width // k for n in sizes)
    return params, sent, losses


def oracle(x, y, batch: int, steps: int, fraction: float, momentum: float, report_at=()):
    """The parameters and {step: loss} of one process that knows the global batch's exact
    gradient g and applies, each step, the `fraction` x n entries of v = g + m R' + e
    largest in magnitude (R' the last update, e what was not applied: global momentum
    with error feedback), the rest kept in e. K ranks sending k pairs each apply at most
    K k values a step, each only its own rank's share of the sum: with fraction K x
    density this is what their top-k could reach with every rank's knowledge."""
    params = mlp.init()
    grads = [np.empty_like(p) for p in params]
    n = sum(p.size for p in params)
    k = max(1, int(round(fraction * n)))
    owed, last = np.zeros(n, np.float32), np.zeros(n, np.float32)
    m = np.float32(momentum)
    opt = mlp.Momentum(np, params, mu=0.0)  # (the momentum is in v: the example's lr alone)
    losses = {}
    for s in range(steps):
        lo = (s * batch) % len(x)
        mlp.backward(np, params, x[lo:lo + batch], y[lo:lo + batch], 1.0 / batch, grads)
        v = np.concatenate([g.reshape(-1) for g in grads]) + m * last + owed
        top = np.argpartition(-np.abs(v), k - 1)[:k]
        last = np.zeros(n, np.float32)
        last[top] = v[top]
        owed = v - last
        at = 0
        for g in grads:  # the update, laid out as the parameters
            g[...] = last[at:at + g.size].reshape(g.shape)
            at += g.size
        opt.step(params, grads)
        if s + 1 in report_at:
            losses[s + 1] = loss(params, x, y)
    return params, losses


def loss(params, x, y) -> float:
    """Mean squared error over the whole data set (the backward pass's own value)."""
    grads = [np.empty_like(p) for p in params]
    return mlp.backward(np, params, x, y, 1.0 / len(x), grads) * 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=at_least(1), default=200)
    ap.add_argument("--batch", type=at_least(1), default=64)
    ap.add_argument("--bucket-bytes", type=int, default=16 << 10)
    ap.add_argument("--densities", default="0.1,0.01,0.001")
    ap.add_argument("--momentum", type=float, default=0.9, help="SGD's (the examples': 0.9)")
    ap.add_argument("--warmup", type=int, default=0,
                    help="the momentum runs again with DGC's sparsity warm-up over this many "
                         "steps (from 25%% down to the density)")
    ap.add_argument("--report-at", default="",
                    help="steps after which the loss is reported too (comma-separated, each "
                         "at most --steps): how the ratio to dense changes with the horizon")
    ap.add_argument("--samples", type=int, default=0,
                    help="the data set's size (default 16 x --batch; examples/data_parallel.py "
                         "trains on 4 x --batch)")
    ap.add_argument("--oracle", action="store_true",
                    help="also a row per density for one process applying the ranks x density "
                         "largest entries of the exact global gradient, global momentum and "
                         "error feedback (oracle()): what any top-k of that many values could "
                         "reach")
    ap.add_argument("--json")
    a = ap.parse_args()
    report_at = sorted({int(s) for s in a.report_at.split(",") if s})
    if any(not 0 < s <= a.steps for s in report_at):
        ap.error(f"--report-at: steps between 1 and --steps ({a.steps}), got {report_at}")
    world = MPI.COMM_WORLD
    x, y = mlp.data(a.samples or 16 * a.batch)
    runs = [("float32", {}), ("bf16", {"compression": "bf16"})]
    for d in (float(s) for s in a.densities.split(",")):
        for kind, name in (("global", "global"), ("local", "corrected")) if a.momentum else ():
            # error feedback with the momentum in the buckets
            runs.append((f"topk {d:g} {name}", {"compression": "topk", "density": d,
                                                "error_feedback": True, "momentum": a.momentum,
                                                "momentum_kind": kind}))
            if a.warmup:
                runs.append((f"topk {d:g} {name}, warm-up {a.warmup}",
                             {"compression": "topk", "density": d, "error_feedback": True,
                              "momentum": a.momentum, "momentum_kind": kind,
                              "warmup": a.warmup}))
        for feedback in (True, False):
            runs.append((f"topk {d:g}{' feedback' if feedback else ''}",
                         {"compression": "topk", "density": d, "error_feedback": feedback}))
    rows = []
    with ring.Communicator(device="host") as comm:
        for name, options in runs:
            params, sent, losses = train(comm, x, y, a.batch, a.steps, a.bucket_bytes,
                                         a.momentum, report_at=report_at, **options)
            rows.append({"wire": name, "final_loss": loss(params, x, y),
                         "bytes_sent_per_rank_per_step": sent, "loss_at": losses})
    for d in (float(s) for s in a.densities.split(",")) if a.oracle else ():
        fraction = min(1.0, world.size * d)
        params, losses = oracle(x, y, a.batch, a.steps, fraction, a.momentum, report_at)
        rows.append({"wire": f"oracle top-{fraction:g} global", "final_loss": loss(params, x, y),
                     "bytes_sent_per_rank_per_step": 0, "loss_at": losses})  # (no wire)
    dense = rows[0]
    for row in rows:
        row["loss_vs_dense"] = row["final_loss"] / dense["final_loss"]
        row["loss_vs_dense_at"] = {s: row["loss_at"][s] / dense["loss_at"][s]
                                   for s in report_at}
        row["bytes_vs_dense"] = row["bytes_sent_per_rank_per_step"] / \
            max(1, dense["bytes_sent_per_rank_per_step"])
    if world.rank:
        return
    print(f"{world.size} ranks, {a.steps} steps of {a.batch} of {len(x)} samples, "
          f"momentum {a.momentum:g}, "
          f"{sum(p.size for p in mlp.init())} parameters; loss over the whole data set")
    print(f"{'wire':>34} {'final loss':>11} {'vs dense':>9} {'bytes/step':>11} {'vs dense':>9}"
          + "".join(f" {'@' + str(s):>9}" for s in report_at))
    for r in rows:
        print(f"{r['wire']:>34} {r['final_loss']:11.5f} {r['loss_vs_dense']:9.3f} "
              f"{r['bytes_sent_per_rank_per_step']:11d} {r['bytes_vs_dense']:9.4f}"
              + "".join(f" {r['loss_vs_dense_at'][s]:9.3f}" for s in report_at))
    if report_at:
        print("(@N: the loss after N steps over dense float32's after N)")
    if a.json:
        from harness.meta import describe
        with open(a.json, "w") as f:
            json.dump({"meta": describe(["mpiexec", "-n", str(world.size), "python", *sys.argv]),
                       "ranks": world.size, "steps": a.steps, "batch": a.batch,
                       "samples": len(x),
                       "momentum": a.momentum, "warmup": a.warmup, "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
