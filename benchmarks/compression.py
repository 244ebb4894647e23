"""Wire compression of a float32 gradient all-reduce (ring.buckets, compression="bf16" /
"fp16", both ways of accumulating: "float32" at each hop inside the all-reduce, "wire"
summed in the 16-bit type between casts; "int8" with a scale per block, all-gathered or
all-to-all'd and its sums all-gathered (ring/int8_reduce.py), and with error feedback (the
default exchange), whose error here is one step's after the previous steps' residual);
"topk" at a density (1%, 0.1%) with error feedback (ring/training/topk.py: each rank's k
largest as (index, value) pairs, all-gathered; lossy by design): time against the float32 all-reduce of the same bucket, and the error against
the float32 result. One bucket per size, of one gradient, so all-reduced where it lies
(no packing copy, as ring.buckets does since a73a4a9; before, a copy in and out of the
bucket was timed with each wire); op avg; every rank's gradient standard normal (its own
seed). Time: slowest rank, best of `--reps` after a warm-up, casts included ("wire": the
bucket rounded to 16 bits and widened back, around the call). Error: largest
|compressed - float32| / largest |float32|, and the RMS of the same.

The link, in the same run (interleaved with the all-reduces): the bytes a float32 ring
all-reduce sends to its successor, 2 (K - 1) / K x the bucket, sent as one MPI message
to the successor while one comes from the predecessor (MPI_Sendrecv; host only). Column
"1 msg": that time for each wire's bytes (the float32 all-reduce's, half of them for a
16-bit wire; int8, scales left out: K/8 all-gathered, (K + 2)/16 by the all-to-all). It is not a floor: the ring's stream of chunk-sized messages can beat one large
message (it does over TCP here). Across nodes it says what the links between them are,
and so what compression can save there. On one machine (README, "Across nodes"):
RING_NODES=N emulates nodes linked by MPI's shared memory; MPICH's MPIR_CVAR_NOLOCAL=1
makes every rank a node of its own, linked by the network module (TCP over loopback with
UCX_TLS=tcp,self, or MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp); MPIR_CVAR_NUM_CLIQUES=N
makes N nodes of several ranks, shared memory inside, the network module between. The
ranks are taken node by node (`node_major`), so that the two-level algorithm applies.

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
from harness.sizes import at_least, parse_size  # noqa: E402
from ring.buckets import GradientBuckets  # noqa: E402
from ring.training.int8_reduce import choose  # noqa: E402

WIRES = [(None, None), ("bf16", "float32"), ("bf16", "wire"), ("fp16", "float32"),
         ("fp16", "wire"), ("int8", "allgather"), ("int8", "alltoall"), ("int8", "feedback"),
         ("topk", "0.01"), ("topk", "0.001")]
# (compression, accumulate); int8: (compression, its exchange, or "feedback": the default
# exchange with error feedback)


def options(w) -> dict:
    if w[0] == "topk":  # the density; with error feedback, as it is trained
        return {"compression": "topk", "density": float(w[1]), "error_feedback": True}
    if w[0] == "int8":
        return {"compression": "int8", "error_feedback": w[1] == "feedback",
                "int8_exchange": None if w[1] == "feedback" else w[1]}
    return {"compression": w[0], "accumulate": w[1]}


def one_message_share(w, k: int, n: int) -> float:
    """The bytes a wire's all-reduce of n values sends on a link, as a share of float32's (2 (K - 1) / K
    x 4 bytes a value): half for 16 bits; int8 all-gathered: K - 1 buckets of a byte a
    value, K/8; int8 all-to-all then all-gathered shards: K (K - 1) / 2 shards (ring's
    all-to-all forwards) and K - 1, (K + 2)/16 (scales left out)."""
    if w[0] in ("bf16", "fp16"):
        return 0.5
    if w[0] == "topk":  # K - 1 messages of k (index, value) pairs: 8 k bytes each
        from ring.training.topk import k_of
        return (k - 1) * 8 * k_of(n, float(w[1])) / (2 * (k - 1) / k * 4 * n) if k > 1 else 0
    if w[0] == "int8":
        exchange = w[1] if w[1] != "feedback" else choose(None, n, k)
        return k / 8 if exchange == "allgather" else (k + 2) / 16
    return 1.0


def node_major(world: MPI.Comm) -> MPI.Comm:
    """world with each node's ranks consecutive (the two-level algorithm needs them so):
    the same order where they already are; MPICH's MPIR_CVAR_NUM_CLIQUES=N (N "nodes" on
    one machine, shared memory inside each, the network module between them) deals the
    ranks out round-robin."""
    shared = world.Split_type(MPI.COMM_TYPE_SHARED, key=world.rank)
    node = shared.allreduce(world.rank, op=MPI.MIN)  # a node is named by its lowest rank
    shared.Free()
    return world.Split(0, key=node * world.size + world.rank)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1M,16M,64M")
    ap.add_argument("--reps", type=at_least(1), default=8)
    ap.add_argument("--device", default="host", choices=["host", "cuda"])
    ap.add_argument("--chunk-bytes", help="the communicator's chunk_bytes (default: its own)")
    ap.add_argument("--slots", type=int, help="the communicator's nslots (default: its own)")
    ap.add_argument("--wires", help="only these wires, e.g. float32,bf16 (float32 always runs: "
                    "it is the reference)")
    ap.add_argument("--algorithm", default="auto",
                    help="the communicator's algorithm (auto: two-level across equal nodes of "
                    "two or more ranks, compressed or not; ring: the flat ring)")
    ap.add_argument("--json")
    a = ap.parse_args()
    world = node_major(MPI.COMM_WORLD)
    shape = {} if a.chunk_bytes is None else {"chunk_bytes": parse_size(a.chunk_bytes)}
    shape.update({} if a.slots is None else {"nslots": a.slots})
    comm = ring.Communicator(device=a.device, algorithm=a.algorithm, **shape)
    if a.device == "cuda":
        import cupy as xp
        wires = [w for w in WIRES if w[1] != "float32" and w[0] != "topk"]
        finish = xp.cuda.Device().synchronize
    else:
        xp, wires, finish = np, WIRES, (lambda: None)
    if a.wires:
        keep = set(a.wires.split(","))
        wires = [w for w in wires if w == WIRES[0] or (w[0] or "float32") in keep]
    rows = []
    for nbytes in (parse_size(s) for s in a.sizes.split(",")):
        n = nbytes // 4
        mine = xp.asarray(np.random.default_rng(world.rank).standard_normal(n).astype(np.float32))
        grad = [xp.empty(n, np.float32)]
        result, times = {}, {}
        moved = 2 * (world.size - 1) * nbytes // world.size
        shift = (np.ones(moved, np.uint8), np.empty(moved, np.uint8))
        link = None
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
            if world.size > 1 and xp is np:
                world.Barrier()
                t = time.perf_counter()
                world.Sendrecv(shift[0], (world.rank + 1) % world.size, 0,
                               shift[1], (world.rank - 1) % world.size, 0)
                dt = world.allreduce(time.perf_counter() - t, op=MPI.MAX)
                link = dt if rep and (link is None or dt < link) else link
        plain = WIRES[0]
        ref = result[plain].astype(np.float64)
        scale = np.abs(ref).max()
        for w in wires:
            err = np.abs(result[w] - ref)
            rows.append({"bytes": nbytes, "wire": w[0] or "float32", "accumulate": w[1],
                         "ms": times[w] * 1e3, "speedup_vs_float32": times[plain] / times[w],
                         # what one rank sends (and receives) a step, as the wire counts it
                         "wire_bytes_per_rank": int(one_message_share(w, world.size, n) * moved),
                         "link_one_message_ms": None if link is None else
                         link * 1e3 * one_message_share(w, world.size, n),
                         "link_GBps": None if link is None else moved / link / 1e9,
                         "max_rel_error": float(err.max() / scale),
                         "rms_rel_error": float(np.sqrt((err ** 2).mean()) / scale)})
    comm.close()
    if world.rank:
        return
    print(f"{world.size} ranks, {a.device}, float32 gradients averaged; error against the float32 "
          "all-reduce, relative to its largest magnitude")
    print("1 msg: the link's time for the bytes the wire's all-reduce sends, as one MPI "
          "message each way, same run (int8: K/8 of float32's bytes all-gathered, (K+2)/16 "
          "all-to-all)")
    print(f"{'bytes':>10} {'wire':>9} {'sums in':>8} {'ms':>8} {'vs f32':>7} {'1 msg':>7} "
          f"{'link GB/s':>9} {'max err':>9} {'rms err':>9}")
    for r in rows:
        one = "-" if r["link_one_message_ms"] is None else f"{r['link_one_message_ms']:.2f}"
        gbps = "-" if r["link_GBps"] is None else f"{r['link_GBps']:.2f}"
        print(f"{r['bytes']:>10} {r['wire']:>9} {r['accumulate'] or '-':>8} {r['ms']:8.2f} "
              f"{r['speedup_vs_float32']:6.2f}x {one:>7} {gbps:>9} "
              f"{r['max_rel_error']:9.2e} {r['rms_rel_error']:9.2e}")
    if a.json:
        from harness.meta import describe
        argv = ["mpiexec", "-n", str(world.size), "python", *sys.argv]
        with open(a.json, "w") as f:
            json.dump({"meta": describe(argv, cuda=a.device == "cuda"), "ranks": world.size, "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
