"""Host all-reduce (ring) against MPI_Allreduce of the MPI library mpi4py loaded, on the
same buffers, interleaved, best of several rounds. Also sweeps the chunk size.

    mpiexec -n 2 python benchmarks/host_vs_mpi.py [--sizes 16,64] [--chunks 524288,1048576]
        [--in-place] [--staged]

Prints one line per (size, chunk): best time of each and ring's speed-up over MPI.
Timing: barrier, `iters` calls back to back, the slowest rank's mean; best of `rounds`.
--staged (across nodes, RING_NODES): also the ring with its MPI links made to copy every
chunk through their staging slots (their `direct` off), as before they sent from and
received into the arrays (transport/mpi.py), interleaved with the rest.
"""

import argparse
import time

import numpy as np
from mpi4py import MPI

import ring
from harness.sizes import at_least
from ring.options import DEFAULT_CHUNK_BYTES, DEFAULT_SLOTS
from ring.transport.mpi import MpiRecv, MpiSend


def timed(fn, iters, comm):
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    return comm.allreduce((time.perf_counter() - t) / iters, op=MPI.MAX)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16,64", help="MB (2^20 bytes) per rank, float32")
    ap.add_argument("--chunks", default=str(DEFAULT_CHUNK_BYTES["host"]),
                    help="comma list of chunk_bytes to try (default: the library default)")
    ap.add_argument("--slots", type=int, default=DEFAULT_SLOTS)
    ap.add_argument("--rounds", type=at_least(1), default=7)
    ap.add_argument("--iters", type=at_least(1), default=5)
    ap.add_argument("--in-place", action="store_true", help="out is x (MPI: MPI.IN_PLACE)")
    ap.add_argument("--staged", action="store_true")
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    chunks = [int(c) for c in a.chunks.split(",")]
    comms = {c: ring.Communicator(device="host", chunk_bytes=c, nslots=a.slots) for c in chunks}
    if a.staged:
        for c in chunks:
            comms[("staged", c)] = ring.Communicator(device="host", chunk_bytes=c, nslots=a.slots)
    if world.rank == 0:
        print(f"# {world.size} ranks, float32 sum, {'in place' if a.in_place else 'out of place'}"
              f", {MPI.Get_library_version().splitlines()[0]}")
        print(f"# best of {a.rounds} interleaved rounds of {a.iters} calls; times in ms")
        print(f"{'MB':>4} {'chunk':>8} {'slots':>5} {'ring':>8} "
              + (f"{'staged':>8} " if a.staged else "") + f"{'mpi':>8} {'speedup':>8}")
    for mb in [int(s) for s in a.sizes.split(",")]:
        n = mb * 2**20 // 4
        x = np.random.default_rng(world.rank).random(n, dtype=np.float32)
        out = x if a.in_place else np.empty_like(x)
        send = MPI.IN_PLACE if a.in_place else x
        best = {}
        for _ in range(a.rounds):  # in place: the data grow each call; the time does not
            for c, comm in comms.items():
                MpiSend.direct = MpiRecv.direct = not isinstance(c, tuple)  # tuple: staged
                t = timed(lambda: comm.allreduce(x, out=out), a.iters, world)
                best[c] = min(best.get(c, t), t)
            MpiSend.direct = MpiRecv.direct = True
            t = timed(lambda: world.Allreduce(send, out), a.iters, world)
            best["mpi"] = min(best.get("mpi", t), t)
        x[...] = np.random.default_rng(world.rank).random(n, dtype=np.float32)
        expect = np.empty_like(x)
        world.Allreduce(x, expect)
        comms[chunks[0]].allreduce(x, out=out)
        assert np.allclose(out, expect, rtol=1e-6), "ring result differs from MPI's"
        if world.rank == 0:
            for c in chunks:
                staged = f"{best[('staged', c)]*1e3:>8.2f} " if a.staged else ""
                print(f"{mb:>4} {c:>8} {a.slots:>5} {best[c]*1e3:>8.2f} {staged}"
                      f"{best['mpi']*1e3:>8.2f} {best['mpi'] / best[c]:>8.2f}")
    for comm in comms.values():
        comm.close()


if __name__ == "__main__":
    main()
