"""ZeRO-style data-parallel training with ring (stage 2: gradients and optimizer state
sharded): every rank computes the gradient of its share of the batch, a reduce-scatter
leaves each rank the summed gradient of its shard of the parameters only, each rank updates
its shard and keeps the optimizer state (momentum) for it alone, and an all-gather puts the
updated shards back together on every rank. The parameters end as single-process training
with the whole global batch would leave them (and as examples/data_parallel.py's).

    mpiexec -n 4 python examples/zero.py [--steps 30] [--batch 64] [--device host|cuda]

It also trains with the gradients reduce-scattered with bfloat16 on the wire and prints that
step time and its difference, which is not held to 1e-5: on the host through the
communicator's compression="bf16" (each hop sums in float32, the wire carries 16 bits), on
a GPU cast to bfloat16 and summed in bfloat16 at each hop.

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


def to_bf16(a):
    """float32 -> bfloat16 on a GPU, as uint16 bits (CuPy has no bfloat16)."""
    import cupy
    from kernels import cast
    out = cupy.empty(a.size, np.uint16)
    cast(out, a, dst="bfloat16")
    return out


def from_bf16(h, out):
    from kernels import cast
    cast(out, h, src="bfloat16")


def train(comm, xp, x, y, batch: int, steps: int, compression: bool = False):
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
    t0 = None
    for s in range(steps):
        if s == 1:  # the first step loads what the rest reuse (compiled loops): untimed
            comm.barrier()
            t0 = time.perf_counter()
        lo = (s * batch) % len(x) + r * share
        mlp.backward(xp, params, xp.asarray(x[lo:lo + share]), xp.asarray(y[lo:lo + share]),
                     1.0 / batch, grads)
        if compression and comm.device == "host":  # bfloat16 on the wire, float32 sums
            comm.reduce_scatter(gflat, out=gshard, op="sum", compression="bf16")
        elif compression:  # bfloat16 on the wire, summed in bfloat16, widened for the update
            wire = comm.reduce_scatter(to_bf16(gflat), op="sum", dtype="bfloat16")
            from_bf16(wire, gshard)
        else:
            comm.reduce_scatter(gflat, out=gshard, op="sum")
        opt.step([mine], [gshard])
        comm.allgather(mine.copy(), out=pflat)
    return params, (time.perf_counter() - t0) / (steps - 1) if t0 is not None else 0.0


def main() -> int:
    args, comm, xp = mlp.start(__doc__)
    x, y = mlp.data(4 * args.batch)
    want = mlp.reference(x, y, args.batch, args.steps)
    step, got = {}, {}
    for compression in (False, True):
        params, step[compression] = train(comm, xp, x, y, args.batch, args.steps, compression)
        got[compression] = mlp.host(xp, params)
    n = sum(p.size for p in got[False])
    bf16_diff = mlp.largest_relative_difference(got[True], want)
    return mlp.finish(
        comm, f"zero: {comm.size} ranks ({comm.device}), global batch {args.batch}, "
              f"{args.steps} steps, {n} parameters, {-(-n // comm.size)} per shard",
        mlp.largest_relative_difference(got[False], want),
        f"{step[False] * 1e3:.2f} ms (reduce-scatter after the backward pass; no overlap "
        f"yet), {step[True] * 1e3:.2f} ms with bfloat16 on the wire (largest relative "
        f"difference {bf16_diff:.1e}, not held to 1e-5)")


if __name__ == "__main__":
    sys.exit(main())
