"""Cost of the agreement check: an 8-byte all-reduce with and without it, and the same
call through MPI_Allreduce, per call (mean of 2000 after 200 warm-up, slowest rank).

    mpiexec -n 2 python benchmarks/agreement_cost.py
"""

import time

import numpy as np
from mpi4py import MPI

import ring

world = MPI.COMM_WORLD
x = np.ones(2, np.float32)
out = np.empty_like(x)


def per_call_us(fn, n=2000):
    for _ in range(200):
        fn()
    world.Barrier()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return world.allreduce((time.perf_counter() - t) / n * 1e6, op=MPI.MAX)


rows = []
for check in (True, False):
    with ring.Communicator(device="host", check=check) as c:
        rows.append((f"ring, check={check}", per_call_us(lambda: c.allreduce(x, out=out))))
rows.append(("MPI_Allreduce", per_call_us(lambda: world.Allreduce(x, out))))
if world.rank == 0:
    print(f"# {world.size} ranks, 8-byte float32 all-reduce, us per call")
    for name, t in rows:
        print(f"{name:<22} {t:8.1f}")
    print(f"{'agreement costs':<22} {rows[0][1] - rows[1][1]:8.1f}")
