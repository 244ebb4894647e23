"""ZeRO-style data-parallel training with ring (stage 2: gradients and optimizer state
sharded): every rank computes the gradient of its share of the batch, a reduce-scatter
leaves each rank the summed gradient of its shard of the parameters only, each rank updates
its shard and keeps the optimizer state (momentum) for it alone, and an all-gather puts the
updated shards back together on every rank. The parameters end as single-process training
with the whole global batch would leave them (and as examples/data_parallel.py's).

    mpiexec -n 4 python examples/zero.py [--steps 30] [--batch 64] [--device host|cuda]

Parameters and gradients live in one flat vector each (padded to a multiple of the number
of ranks), the model's arrays being views into it: nothing is packed or unpacked.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import mlp


def flat_views(xp, shapes, k: int):
    """(flat vector padded to a multiple of k, views into it shaped as `shapes`)."""
    n = sum(int(np.prod(s)) for s in shapes)
    flat = xp.zeros(-(-n // k) * k, np.float32)
    views, at = [], 0
    for s in shapes:
        size = int(np.prod(s))
        views.append(flat[at:at + size].reshape(s))
        at += size
    return flat, views


def train(comm, xp, x, y, batch: int, steps: int):
    k, r = comm.size, comm.rank
    init = mlp.init()
    shapes = [p.shape for p in init]
    pflat, params = flat_views(xp, shapes, k)
    gflat, grads = flat_views(xp, shapes, k)
    for p, v in zip(params, init):
        p[...] = xp.asarray(v)
    m = pflat.size // k
    mine = pflat[r * m:(r + 1) * m]  # this rank's shard of the parameters
    opt = mlp.Momentum(xp, [mine])   # ... and the only optimizer state it keeps
    gshard = xp.empty(m, np.float32)
    share = batch // k
    for s in range(steps):
        lo = (s * batch) % len(x) + r * share
        mlp.backward(xp, params, xp.asarray(x[lo:lo + share]), xp.asarray(y[lo:lo + share]),
                     1.0 / batch, grads)
        comm.reduce_scatter(gflat, out=gshard, op="sum")
        opt.step([mine], [gshard])
        comm.allgather(mine.copy(), out=pflat)
    return params


def main() -> int:
    args, comm, xp = mlp.start(__doc__)
    x, y = mlp.data(4 * args.batch)
    comm.barrier()
    t0 = time.perf_counter()
    params = train(comm, xp, x, y, args.batch, args.steps)
    step = (time.perf_counter() - t0) / args.steps
    got = mlp.host(xp, params)
    n = sum(p.size for p in got)
    return mlp.finish(
        comm, f"zero: {comm.size} ranks ({comm.device}), global batch {args.batch}, "
              f"{args.steps} steps, {n} parameters, {-(-n // comm.size)} per shard",
        mlp.largest_relative_difference(got, mlp.reference(x, y, args.batch, args.steps)),
        f"{step * 1e3:.2f} ms (reduce-scatter after the backward pass; no overlap yet)")


if __name__ == "__main__":
    sys.exit(main())
