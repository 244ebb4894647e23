"""Cost of a small all-reduce per call (--bytes, default 8): ring with and without the agreement check, in
place and not, and MPI_Allreduce, in interleaved blocks (each block: `calls` calls back to
back after a barrier, the slowest rank's mean); the best and the median block of each.
--algorithms adds two rows per algorithm named (check on and off), beside "auto"'s.

    mpiexec -n 2 python benchmarks/agreement_cost.py [--blocks 15] [--calls 2000]
        [--algorithms ring,oneshot] [--bytes 1024]
"""

import argparse
import time

import numpy as np
from mpi4py import MPI

import ring
from harness.sizes import at_least


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=at_least(1), default=15)
    ap.add_argument("--calls", type=at_least(1), default=2000)
    ap.add_argument("--algorithms", default="", help="comma list: rows for each (check on, off)")
    ap.add_argument("--bytes", type=int, default=8, help="float32 bytes per call (a multiple of 4)")
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    x = np.ones(max(1, a.bytes // 4), np.float32)
    out = np.empty_like(x)
    checked = ring.Communicator(device="host")
    unchecked = ring.Communicator(device="host", check=False)
    rows = {
        "ring, check on": lambda: checked.allreduce(x, out=out),
        "ring, check on, in place": lambda: checked.allreduce(x, out=x),
        "ring, check off": lambda: unchecked.allreduce(x, out=out),
        "MPI_Allreduce": lambda: world.Allreduce(x, out),
    }
    for algo in filter(None, a.algorithms.split(",")):
        for check, comm in (("on", checked), ("off", unchecked)):
            rows[f"ring, check {check}, {algo}"] = \
                (lambda comm, algo: lambda: comm.allreduce(x, out=out, algorithm=algo))(comm, algo)
    for fn in rows.values():
        for _ in range(200):
            fn()
    times = {name: [] for name in rows}
    for _ in range(a.blocks):
        for name, fn in rows.items():
            world.Barrier()
            t = time.perf_counter()
            for _ in range(a.calls):
                fn()
            times[name].append(world.allreduce((time.perf_counter() - t) / a.calls * 1e6,
                                               op=MPI.MAX))
    if world.rank == 0:
        print(f"# {world.size} ranks, {x.nbytes}-byte float32 all-reduce, us per call, "
              f"{a.blocks} interleaved blocks of {a.calls} calls")
        print(f"{'':<32}{'best':>8}{'median':>8}")
        for name, t in times.items():
            t.sort()
            print(f"{name:<32}{t[0]:8.2f}{t[len(t) // 2]:8.2f}")
    checked.close()
    unchecked.close()


if __name__ == "__main__":
    main()
