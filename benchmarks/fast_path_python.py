"""The Python of a kept host call (ring/host/repeated.py), without its round.

    mpiexec -n 2 python benchmarks/fast_path_python.py [--count 2] [--calls 200000]

Every rank makes a few calls of each case below, so that their signatures are kept (the fast
path); then rank 0 alone replaces the compiled round (compiled_round.call, and cma's
compiled_cma.whole) with a Python stub that answers DONE at once and times, with timeit
(best of 5), each whole call and the pieces the call is made of. What is left is what the
fast path costs before and after its one compiled call, the Numba dispatch of that call
apart (timed on its own: `dispatch`: a compiled function of the same arguments that does
nothing). The results written are not the collectives' (the stub writes nothing): a
measurement of cost, not of results. The other ranks wait in MPI's barrier meanwhile, and
rank 0's call counters are put back after.
"""

import argparse
import timeit
import types

import numpy as np
from mpi4py import MPI
from numba import njit

import ring
from harness.sizes import at_least
from ring.host import compiled_cma, compiled_round, repeated, repeated_cma
from ring.schedule import Collective


@njit(nogil=True)
def nothing(plan, x, out, number, seq, spins, yields, memory):
    """compiled_round.call's arguments, and nothing done: its dispatch alone."""
    return plan[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=2, help="float32 elements a rank")
    ap.add_argument("--calls", type=at_least(1), default=200_000)
    args = ap.parse_args()
    comm = ring.Communicator(device="host")
    k, r, n = comm.size, comm.rank, args.count
    y, x = np.ones(n * k, np.float32), np.ones(n, np.float32)
    out = np.empty_like(y)
    whole = np.ones(n * k, np.float32)  # the all-gather in place, as the harness places it
    block, joined = whole[r * n:(r + 1) * n], whole[:]
    cases = {
        "allreduce": lambda: comm.allreduce(y, out),
        "allreduce in place": lambda: comm.allreduce(y, y),
        "allgather": lambda: comm.allgather(x, out),
        "allgather in place": lambda: comm.allgather(block, joined),
        "allgather, options named": lambda: comm.allgather(x, out, algorithm="auto",
                                                           dtype="float32"),
        "allgather in place, cma": lambda: comm.allgather(block, joined, algorithm="cma"),
    }
    for _ in range(20):
        for case in cases.values():
            case()
    comm.barrier()
    if r == 0 and comm._fast:
        ctx = comm._ctx
        counted = ctx.calls, ctx.exchange.seq  # (the stubbed calls count, and post nothing)
        stub = types.SimpleNamespace(**vars(compiled_round))
        stub.call = lambda *a: compiled_round.DONE
        repeated.compiled_round = stub
        stub_cma = types.SimpleNamespace(**vars(compiled_cma))  # (its one dispatch: whole)
        stub_cma.whole = lambda *a: compiled_round.DONE
        repeated_cma.compiled_cma = stub_cma

        def us(f) -> float:
            return min(timeit.repeat(f, number=args.calls, repeat=5)) / args.calls * 1e6

        ag = Collective.ALLGATHER
        k_ar = repeated.key(y, out, "sum")
        k_ag = repeated.key_of(ag, x, out, "sum", 0)
        s_ar = comm._fast[k_ar]
        plan, spins = s_ar.plan, comm._ctx.waiter.spins
        print(f"# {k} ranks, {n} float32 a rank; µs a call, rank 0, the round stubbed out")
        for name, case in cases.items():
            print(f"{name:28s} {us(case):6.3f}")
        pieces = {
            "key (all-reduce)": lambda: repeated.key(y, out, "sum"),
            "key_of (all-gather)": lambda: repeated.key_of(ag, x, out, "sum", 0),
            "key_of, in place": lambda: repeated.key_of(ag, block, joined, "sum", 0),
            "lookup": lambda: comm._fast.get(k_ar),
            "repeated.run": lambda: repeated.run(comm._ctx, s_ar, y, out),
            "_fast_call (all-gather)": lambda: comm._fast_call(k_ag, x, out),
            "dispatch": lambda: nothing(plan, y, out, 1, 2, spins, 3, 0),
            "empty lambda": lambda: None,
        }
        for name, piece in pieces.items():
            print(f"  {name:26s} {us(piece):6.3f}")
        repeated.compiled_round = compiled_round
        repeated_cma.compiled_cma = compiled_cma
        ctx.calls, ctx.exchange.seq = counted
    MPI.COMM_WORLD.Barrier()  # (MPI's: the communicator's would time out meanwhile)
    comm.barrier()
    comm.close()


if __name__ == "__main__":
    main()
