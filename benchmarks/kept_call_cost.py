"""The host's work for one kept kernel-path call (issue 52's "a few microseconds"), without a
GPU: Numba's simulator runs the communicator, and the launch itself is replaced by nothing,
so what is timed is everything ring does around it: the signature's lookup, the stream,
the agreement round, the events, the bookkeeping. Also each of those parts alone: the
agreement both ways, as a blocking communicator waits for it and as a stream-ordered one
posts it (the kernels check every rank's call on the GPU, ring/cuda/board.py).

    NUMBA_ENABLE_CUDASIM=1 mpiexec -n 2 python benchmarks/kept_call_cost.py \
        [--algorithm ring,oneshot,twoshot] [--calls 3000] [--json out.json]

On a GPU the launch adds its own cost (kernels/README.md, an H100, 22 values: 4.1-4.7 us
as the driver's cuLaunchKernel on a table packed once, BoundLaunch's way since 2026-11-28;
7.9 us through cuda.core) and the arrays' addresses are read more cheaply than the
simulator's (no __array_interface__ dict): use benchmarks/profile_call.py there. The times
are this host's: compare runs on one machine only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402

import ring  # noqa: E402
from harness.sizes import at_least  # noqa: E402
from kernels import bound_launch  # noqa: E402
from ring.host import repeated  # noqa: E402
from ring.schedule import Collective  # noqa: E402


def per_call_us(fn, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def measure(c, algorithm: str, calls: int) -> dict:
    x, out = cuda.to_device(np.ones(64, np.float32)), cuda.device_array(64, np.float32)
    for _ in range(3):  # learnt, then kept
        c.allreduce(x, out=out, algorithm=algorithm)
    c.synchronize()
    real = bound_launch.BoundLaunch.__call__
    bound_launch.BoundLaunch.__call__ = lambda self, stream=None: None  # the launch: not timed
    try:
        per_call_us(lambda: c.allreduce(x, out=out, algorithm=algorithm), 200)  # warm (the
        c._ctx.comm.Barrier()  # first algorithm measured paid first uses: 2x, untimed now)
        whole = per_call_us(lambda: c.allreduce(x, out=out, algorithm=algorithm), calls)
        kept, ctx = c._kept, c._ctx
        key = kept.key(Collective.ALLREDUCE, x, out, "sum", 0, None, algorithm, None)
        known = c._kfast[key]
        ctx.waiter.start("parts")
        parts = {"signature key": per_call_us(lambda: kept.key(
                     Collective.ALLREDUCE, x, out, "sum", 0, None, algorithm, None), calls),
                 "stream lookup": per_call_us(lambda: kept.stream_of(None, x), calls),
                 "earlier launches polled": per_call_us(lambda: ctx.backend.entered(ctx.calls),
                                                        calls)}

        def fire():
            ctx.backend.caller = 0
            ctx.backend.replay(known.launch)
        parts["launch bookkeeping"] = per_call_us(fire, calls)
        c._ctx.comm.Barrier()
        first = ctx.calls

        def agree():
            ctx.calls += 1
            repeated.agree_compiled(ctx, known.agreement, ctx.calls)

        def post():
            ctx.calls += 1
            repeated.post_kept(ctx, known.agreement, ctx.calls)
        parts["agreement round (blocking=True)"] = per_call_us(agree, calls) \
            if known.agreement else None
        c._ctx.comm.Barrier()
        parts["agreement posted (stream-ordered)"] = per_call_us(post, calls) \
            if known.agreement else None
        repeated.read_back(ctx)
        assert ctx.calls >= first
    finally:
        bound_launch.BoundLaunch.__call__ = real
    c.synchronize()
    return {"algorithm": algorithm, "kept_call_us": round(whole, 2),
            "parts_us": {k: None if v is None else round(v, 2) for k, v in parts.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algorithm", default="ring,oneshot,twoshot")
    ap.add_argument("--calls", type=at_least(1), default=3000)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    with ring.Communicator(device="cuda", path="kernel", timeout=60) as c:
        for alg in a.algorithm.split(","):
            rows.append(measure(c, alg.strip(), a.calls))
        rank, size = c.rank, c.size
    if rank:
        return
    print(f"{size} processes, Numba's simulator, the launch itself not timed: µs per call")
    for r in rows:
        parts = ", ".join(f"{k} {v}" for k, v in r["parts_us"].items() if v is not None)
        print(f"{r['algorithm']:>8}: {r['kept_call_us']:6.1f}  ({parts})")
    if a.json:
        from harness.meta import describe
        with open(a.json, "w") as f:
            json.dump({"meta": describe(["mpiexec", "-n", str(size), "python", *sys.argv]),
                       "processes": size, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
