"""The host all-to-all in place against out of place and against a plain copy of x, on the
same buffers, interleaved, best of several rounds.

    mpiexec -n K python benchmarks/alltoall_in_place.py [--mb 16] [--rounds 7] [--calls 3]

Prints one line: ms per call of each (the slowest rank's mean of `calls` back to back,
best of `rounds`). An in place all-to-all whose walk copied x whole costs about out of
place plus the copy; one that keeps only the blocks it overwrites, about out of place.
"""

import argparse
import time

import numpy as np
from mpi4py import MPI

import ring
from harness.sizes import at_least


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=16, help="MB of float32 per rank")
    ap.add_argument("--rounds", type=at_least(1), default=7)
    ap.add_argument("--calls", type=at_least(1), default=3)
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    k = world.size
    n = int(a.mb * 1e6) // 4 // k * k
    x = np.random.default_rng(world.rank).random(n, np.float32)
    out, y = np.empty_like(x), x.copy()
    best = {}
    with ring.Communicator(device="host", timeout=120) as comm:
        cases = {"out of place": lambda: comm.alltoall(x, out=out),
                 "in place": lambda: comm.alltoall(y, out=y),
                 "copy of x": lambda: np.copyto(out, x)}
        for _ in range(a.rounds):
            for name, call in cases.items():
                world.Barrier()
                t = time.perf_counter()
                for _ in range(a.calls):
                    call()
                dt = world.allreduce((time.perf_counter() - t) / a.calls, MPI.MAX)
                best[name] = min(best.get(name, dt), dt)
    if world.rank == 0:
        print(f"{k} ranks, {n * 4 / 1e6:g} MB: " +
              ", ".join(f"{name} {t * 1e3:.2f} ms" for name, t in best.items()), flush=True)


if __name__ == "__main__":
    main()
