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

Parameters and gradients live in one flat vector per layer each (padded to a multiple of
the number of ranks), the model's arrays being views into them: nothing is packed or
unpacked. Each layer's gradient is reduce-scattered as soon as the backward pass has
finished it (async_op), overlapping the layers still to come; the example also times the
same steps with every reduce-scatter started after the backward pass, and prints both.
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


def train(comm, xp, x, y, batch: int, steps: int, overlap: bool, compression: bool = False):
    """Per layer (its weight and bias), flat vectors of parameters and gradients padded to a
    multiple of the ranks, as FSDP's flat parameters: each layer's gradient is
    reduce-scattered by itself, so it can start (async_op) as soon as the backward pass has
    finished that layer (overlap), or all after the backward pass (not overlap)."""
    k, r = comm.size, comm.rank
    init = mlp.init()
    shapes = [p.shape for p in init]
    players = [flat_views(xp, shapes[i:i + 2], k) for i in range(0, len(shapes), 2)]
    glayers = [flat_views(xp, shapes[i:i + 2], k) for i in range(0, len(shapes), 2)]
    params = [v for _, views in players for v in views]
    grads = [v for _, views in glayers for v in views]
    for p, v in zip(params, init):
        p[...] = xp.asarray(v)
    m = [flat.size // k for flat, _ in players]
    mine = [flat[r * n:(r + 1) * n] for (flat, _), n in zip(players, m)]  # my shard of each
    opt = mlp.Momentum(xp, mine)  # ... and the only optimizer state this rank keeps
    gshards = [xp.empty(n, np.float32) for n in m]
    share = batch // k
    started = []

    def start(layer: int) -> None:
        gflat = glayers[layer][0]
        if compression and comm.device == "host":  # bfloat16 on the wire, float32 sums
            w = comm.reduce_scatter(gflat, out=gshards[layer], op="sum", compression="bf16",
                                    async_op=True)
            started.append((w, None, layer))
        elif compression:  # bfloat16 on the wire, summed in bfloat16, widened after
            started.append((comm.reduce_scatter(to_bf16(gflat), op="sum", dtype="bfloat16",
                                                async_op=True), True, layer))
        else:
            w = comm.reduce_scatter(gflat, out=gshards[layer], op="sum", async_op=True)
            started.append((w, None, layer))

    def ready(i: int) -> None:
        if i % 2 == 0:  # a layer's weight: its last gradient (the bias comes first)
            start(i // 2)

    t0 = None
    for s in range(steps):
        if s == 1:  # the first step loads what the rest reuse (compiled loops): untimed
            comm.barrier()
            t0 = time.perf_counter()
        lo = (s * batch) % len(x) + r * share
        mlp.backward(xp, params, xp.asarray(x[lo:lo + share]), xp.asarray(y[lo:lo + share]),
                     1.0 / batch, grads, ready if overlap else None)
        if not overlap:
            for layer in reversed(range(len(glayers))):
                start(layer)
        for w, widen, layer in started:
            got = w.wait()
            if widen:
                from_bf16(got, gshards[layer])
        started.clear()
        opt.step(mine, gshards)
        for (pflat, _), shard in zip(players, mine):
            comm.allgather(shard.copy(), out=pflat)
    return params, (time.perf_counter() - t0) / (steps - 1) if t0 is not None else float("nan")


def main() -> int:
    args, comm, xp = mlp.start(__doc__)
    x, y = mlp.data(4 * args.batch)
    want = mlp.reference(x, y, args.batch, args.steps)
    step, diff = {}, 0.0
    for overlap in (True, False):
        params, step[overlap] = train(comm, xp, x, y, args.batch, args.steps, overlap)
        got = mlp.host(xp, params)
        diff = max(diff, mlp.largest_relative_difference(got, want))
    params, step["bf16"] = train(comm, xp, x, y, args.batch, args.steps, True, True)
    bf16_diff = mlp.largest_relative_difference(mlp.host(xp, params), want)
    n = sum(p.size for p in got)
    shard = sum(-(-(w.size + b.size) // comm.size) for w, b in zip(got[::2], got[1::2]))
    return mlp.finish(
        comm, xp, f"zero: {comm.size} ranks ({comm.device}), global batch {args.batch}, "
              f"{args.steps} steps, {n} parameters, about {shard} per shard",
        diff,
        f"{step[True] * 1e3:.2f} ms with overlap (each layer's reduce-scatter started as the "
        f"backward pass finishes it), {step[False] * 1e3:.2f} ms without (after the backward "
        f"pass), {step['bf16'] * 1e3:.2f} ms with overlap and bfloat16 on the wire (largest "
        f"relative difference {bf16_diff:.1e}, not held to 1e-5)")


if __name__ == "__main__":
    sys.exit(main())
