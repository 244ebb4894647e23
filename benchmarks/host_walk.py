"""The host ring's walk, compiled (ring/host/compiled_walk.py) at several chunk sizes, against
the same walk in Python (host/executor.py, 1 MiB chunks: the path before the compiled one,
and the one links through MPI still take) and MPI_Allreduce: float32 sum all-reduce, out
of place, algorithm="ring". Interleaved blocks (each: `calls` calls back to back after a
barrier, the slowest rank's mean); the best block of each, µs per call.

    mpiexec -n 2 python benchmarks/host_walk.py [--sizes 1M,2M,8M,16M]
        [--chunks 64K,256K,1M] [--blocks 7] [--json results/host-walk-2ranks.json]
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
from harness.sizes import at_least, human, parse_size  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1M,2M,8M,16M")
    ap.add_argument("--chunks", default="64K,256K,1M")
    ap.add_argument("--blocks", type=at_least(1), default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    comms = {f"compiled {c}": ring.Communicator(device="host", chunk_bytes=parse_size(c))
             for c in a.chunks.split(",")}
    python = ring.Communicator(device="host", chunk_bytes=1 << 20)
    python._ctx.backend._shm = False  # executor.py's walk, as before the compiled one
    comms["python 1M"] = python
    rows = []
    for nbytes in (parse_size(s) for s in a.sizes.split(",")):
        x = np.ones(nbytes // 4, np.float32)
        out = np.empty_like(x)
        fns = {k: (lambda c=c: c.allreduce(x, out=out, algorithm="ring"))
               for k, c in comms.items()}
        fns["MPI_Allreduce"] = lambda: world.Allreduce(x, out)
        for fn in fns.values():
            for _ in range(3):
                fn()
        calls = max(3, int(20e6 // nbytes))
        times = {k: [] for k in fns}
        for _ in range(a.blocks):
            for k, fn in fns.items():
                world.Barrier()
                t = time.perf_counter()
                for _ in range(calls):
                    fn()
                times[k].append(world.allreduce((time.perf_counter() - t) / calls * 1e6,
                                                op=MPI.MAX))
        rows.append({"bytes": nbytes, "us": {k: min(v) for k, v in times.items()},
                     "median_us": {k: sorted(v)[len(v) // 2] for k, v in times.items()}})
        if world.rank == 0:
            best = rows[-1]["us"]
            print(f"{human(nbytes):>7} " + "  ".join(f"{k} {v:8.0f}" for k, v in best.items())
                  + f"   MPI / best compiled {best['MPI_Allreduce'] / min(v for k, v in best.items() if k.startswith('compiled')):.2f}",
                  flush=True)
    for c in comms.values():
        c.close()
    if world.rank == 0 and a.json:
        from harness.meta import describe
        argv = ["mpiexec", "-n", str(world.size), "python", *sys.argv]
        with open(a.json, "w") as f:
            json.dump({"meta": describe(argv, cuda=False), "ranks": world.size,
                       "blocks": a.blocks, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
