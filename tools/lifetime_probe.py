"""Device memory over create/close cycles, printed by rank 0 every `every` cycles
(mpiexec -n 2 python3 tools/lifetime_probe.py comm|ipc [cycles]). comm: a cuda
Communicator with one call per cycle; ipc: Numba's IPC alone (export, open, close, free)."""
import sys

import numpy as np
from mpi4py import MPI
from numba import cuda

import ring

what, cycles = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1000
w = MPI.COMM_WORLD
ctx = cuda.current_context()


def free_mib():
    ctx.deallocations.clear()
    w.Barrier()
    return ctx.get_memory_info()[0] / 2**20


x = cuda.to_device(np.ones(50, np.int32))
for i in range(cycles + 1):
    if what == "comm":
        with ring.Communicator(device="cuda", timeout=60, chunk_bytes=256) as c:
            c.allreduce(x)
    else:
        mem = cuda.device_array((1 << 20) + 64, np.uint8)
        h = w.sendrecv(mem.get_ipc_handle(), dest=1 - w.rank, source=1 - w.rank)
        peer = h.open(ctx)
        w.Barrier()
        h.close()
        del peer, mem
    if i % (cycles // 10) == 0:
        f = free_mib()
        if w.rank == 0:
            print(f"{what} cycle {i}: free {f:.0f} MiB", flush=True)
