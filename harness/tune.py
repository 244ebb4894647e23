"""Measure ring's algorithms on this machine and write the table "auto" reads.

    mpiexec -n K python -m harness tune [-b 8] [-e 64M] [-f 4] [--rounds 5]
        [--algos ring,hierarchical,naive,ps,oneshot,twoshot,tree] [--device host|cuda]
        [--collective allreduce|reduce_scatter|allgather|...] [--merge TABLE] [-R] [-I]
        --out TABLE

--collective (all-reduce by default) measures another collective: its sizes are the
harness's (the larger of input and output), its rules name it (ring/tuning.py).
-I measures the calls in place (out is x, or x's block where MPI places it, as the
harness's in-place column; a collective without a root): its rules say "in_place" and
decide the layout's in-place calls, the rules of a run without -I the others.

For every size and every algorithm that can run here: float32 sum with the agreement
check on (as users call it), interleaved rounds, each a barrier then enough calls for about
20 ms and one comm.synchronize() (on the cuda device the calls are stream-ordered: timed as
nccl-tests times NCCL), the best round's mean per call (the slowest rank's). The fastest algorithm at each
measured size wins it; consecutive winners make one rule, up to the last size it won.
Each algorithm's alpha-beta fit (harness/model.py) and the sizes where the fits cross are
written beside the rules, to read, not to decide: a fit that spans two regimes would
move a boundary that a measurement puts right. --merge keeps another table's rules for
the other layouts (rank and node counts) and their measurements, so one file can hold
K = 2, 3 and 4; each layout's entry under "measured" names its own command and commit.
--device cuda times GPU buffers (CuPy; under NUMBA_ENABLE_CUDASIM=1 Numba's simulated ones,
whose times mean nothing) for ring/tables/cuda.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from mpi4py import MPI

import ring
from ring.algorithms import BY_NAME

from . import buffers, meta
from .collectives import COLLECTIVES
from .model import fit
from .sizes import at_least, parse_size, sizes

ALL = tuple(BY_NAME)  # every algorithm; those that cannot run here are left out


def per_call_us(world: MPI.Comm, comm: ring.Communicator, x, out, algorithm: str,
                collective: str = "allreduce") -> float:
    """Mean µs per call of one timed round (slowest rank of world, comm's ranks), after
    one call to warm up."""
    if collective == "broadcast":
        def call():
            comm.broadcast(x, algorithm=algorithm)
    else:
        fn = getattr(comm, collective)

        def call():
            fn(x, out=out, algorithm=algorithm)
    call()
    comm.synchronize()  # (cuda: calls are stream-ordered; each timing ends with the wait)
    world.Barrier()
    t0 = time.perf_counter()
    call()
    comm.synchronize()
    one = world.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    n = int(min(500, max(3, 0.02 / max(one, 1e-6))))
    world.Barrier()
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    comm.synchronize()
    return world.allreduce((time.perf_counter() - t0) / n * 1e6, op=MPI.MAX)


def measure(world, comm, algos, byte_sizes, rounds: int, bufs=None,
            collective: str = "allreduce", register: bool = False,
            in_place: bool = False) -> dict[str, dict[int, float]]:
    """{algorithm: {bytes: best µs}} over interleaved rounds (bufs: where the arrays live,
    harness/buffers.py's; host memory by default). bytes: the call's larger array.
    register: x and out registered (comm.register) for their size's calls, as -R.
    in_place: x and out placed in one buffer as MPI places them (zeros: a sum in place
    stays what it was)."""
    bufs = bufs or buffers.HostBuffers()
    coll = COLLECTIVES[collective]
    which = ring.schedule.collective_named(collective)
    best: dict[str, dict[int, float]] = {a: {} for a in algos}
    for _ in range(rounds):
        for s in byte_sizes:
            whole = coll.layout == "same" and collective != "alltoall"  # else K blocks
            n_in, n_out = coll.counts(max(s, 4 if whole else 4 * comm.size), 4, comm.size)
            if in_place:
                buf = bufs.put(np.zeros(max(n_in, n_out), np.float32))
                x, out = coll.in_place_views(buf, comm.rank, n_in, n_out)
                both = (buf,)
            else:
                x, out = bufs.put(np.ones(n_in, np.float32)), bufs.empty(n_out, np.float32)
                both = (x, out)
            nbytes = coll.size_bytes(n_in, n_out, 4)
            held = [a for a in both if register and comm.register(a)]
            for a in algos:
                if comm.why_not(a, which, nbytes):
                    continue
                t = per_call_us(world, comm, x, out, a, collective)
                best[a][nbytes] = min(best[a].get(nbytes, float("inf")), t)
            for a in held:
                comm.deregister(a)
    return {a: times for a, times in best.items() if times}


def rules(best: dict[str, dict[int, float]], ranks: int, nodes: int,
          collective: str = "allreduce", registered: bool | None = None,
          in_place: bool = False) -> list[dict]:
    """Consecutive sizes with the same winner make one rule, up to the last it won.
    registered: the rules' condition on the calls' buffers (None: none; ring/tuning.py);
    in_place: rules for the calls in place only."""
    measured = sorted({s for times in best.values() for s in times})
    named = {} if collective == "allreduce" else {"collective": collective}
    if registered is not None:
        named["registered"] = registered
    if in_place:
        named["in_place"] = True
    out: list[dict] = []
    for s in measured:
        winner = min((t[s], a) for a, t in best.items() if s in t)[1]
        if out and out[-1]["algorithm"] == winner:
            out[-1]["max_bytes"] = s
        else:
            out.append({**named, "ranks": ranks, "nodes": nodes, "max_bytes": s,
                        "algorithm": winner})
    return out


def fits(best: dict[str, dict[int, float]]) -> dict[str, dict]:
    out = {}
    for a, times in best.items():
        if len(times) >= 2:
            s = np.array(sorted(times), float)
            t = np.array([times[int(v)] for v in s])
            alpha, beta = fit(s, t)
            worst = float(np.max(np.abs((alpha + beta * s) / t - 1)))
            out[a] = {"alpha_us": alpha, "us_per_byte": beta, "worst_error": worst,
                      "sizes": [int(s[0]), int(s[-1])]}
    return out


def crossovers(f: dict[str, dict]) -> list[dict]:
    """Where two fitted lines cross (alpha1 + beta1 S = alpha2 + beta2 S), inside both."""
    out, names = [], sorted(f)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            da, db = f[a]["alpha_us"] - f[b]["alpha_us"], f[b]["us_per_byte"] - f[a]["us_per_byte"]
            if db != 0 and da / db > 0:
                s = da / db
                lo = max(f[a]["sizes"][0], f[b]["sizes"][0])
                hi = min(f[a]["sizes"][1], f[b]["sizes"][1])
                if lo <= s <= hi:
                    out.append({"between": [a, b], "bytes": int(s)})
    return out


def _before(merge: str | None, out: str) -> tuple[dict | None, str | None]:
    """(the --merge table, why the run cannot write its table): a tuning run takes minutes,
    and a table it could not merge or write would be lost at its end."""
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        return None, f"--out {out}: no folder {folder}"
    if not merge:
        return None, None
    try:
        with open(merge) as f:
            old = json.load(f)
    except (OSError, ValueError) as e:
        return None, f"--merge {merge}: cannot read a tuning table: {e}"
    if not isinstance(old, dict) or not isinstance(old.get("rules"), list):
        return None, f"--merge {merge}: not a tuning table (no list of rules)"
    return old, None


def main(argv) -> int:
    p = argparse.ArgumentParser(prog="python -m harness tune", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-b", "--minbytes", type=parse_size, default=8)
    p.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("64M"))
    p.add_argument("-f", "--stepfactor", type=float, default=4)
    p.add_argument("--rounds", type=at_least(1), default=5)
    p.add_argument("--algos", default=",".join(ALL))
    p.add_argument("--device", choices=("host", "cuda"), default="host")
    p.add_argument("--collective", choices=sorted(COLLECTIVES), default="allreduce")
    p.add_argument("--merge", metavar="TABLE", help="keep this table's rules for other layouts")
    p.add_argument("--out", required=True, metavar="TABLE")
    p.add_argument("-R", "--register", action="store_true",
                   help="the buffers registered (comm.register) for their calls, as the "
                        "harness's -R: the two-shot reads and writes them in place")
    p.add_argument("-I", "--in-place", action="store_true",
                   help="the calls in place, for rules that decide the in-place calls")
    args = p.parse_args(argv)
    try:
        grid = sizes(args.minbytes, args.maxbytes, args.stepfactor, 0)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    if args.in_place and COLLECTIVES[args.collective].rooted:
        raise SystemExit(f"-I: {args.collective} has a root, whose in place is its own "
                         "business: no rule can depend on it")
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    if any(a not in ALL for a in algos):
        raise SystemExit(f"--algos: choose from {ALL}, got {algos}")
    world = MPI.COMM_WORLD
    old = None
    why = None  # rank 0 reads --merge and checks --out's folder before the rounds, not after
    if world.rank == 0:
        old, why = _before(args.merge, args.out)
    why = world.bcast(why)
    if why:
        raise SystemExit(why)
    bufs = buffers.for_rank(args.device, world)
    with ring.Communicator(world, device=args.device) as comm:
        nodes = comm.nodes
        best = measure(world, comm, algos, grid, args.rounds, bufs, args.collective,
                       args.register, args.in_place)
    if world.rank != 0:
        return 0
    # on the cuda device, where registration decides the two-shot's bytes, each rule says
    # which buffers it was measured on (-R: registered); the host's apply to every call
    reg = args.register if args.device == "cuda" else None
    mine = rules(best, world.size, nodes, args.collective, reg, args.in_place)
    kept = []
    if args.merge:
        this = (world.size, nodes, args.collective, reg, args.in_place)
        kept = [r for r in old["rules"] if (r["ranks"], r["nodes"], r.get("collective", "allreduce"),
                                            r.get("registered"), r.get("in_place", False)) != this]
    f = fits(best)
    emulated, commit = os.environ.get("RING_NODES"), meta.git_commit()
    command = (f"RING_NODES={emulated} " if emulated else "") + \
        f"mpiexec -n {world.size} python -m harness tune " + " ".join(argv)
    # each layout's entry names its own run: a merged table holds several
    table = {"device": args.device, "machine": meta.gpu().get("gpu") or "host",
             "host": __import__("platform").node(), "command": command,
             "git_commit": commit,
             "rules": sorted(kept + mine, key=lambda r: (r.get("collective", ""), r["nodes"],
                                                         r["ranks"], str(r.get("registered")),
                                                         r.get("in_place", False),
                                                         r["max_bytes"])),
             "measured": {f"{'' if args.collective == 'allreduce' else args.collective + ', '}"
                          f"{world.size} ranks, {nodes} node(s)"
                          f"{', registered' if reg else ''}"
                          f"{', in place' if args.in_place else ''}": {
                 "command": command, "git_commit": commit, "registered": args.register,
                 **({"in_place": True} if args.in_place else {}),
                 "us_per_call": {a: {str(s): round(t, 2) for s, t in sorted(v.items())}
                                 for a, v in best.items()},
                 "fits": f, "crossovers": crossovers(f)}}}
    if args.merge:
        table["measured"] = {**old.get("measured", {}), **table["measured"]}
    with open(args.out, "w") as fh:
        json.dump(table, fh, indent=1)
    print(f"# {args.collective}{', in place' if args.in_place else ''}, {world.size} ranks, "
          f"{nodes} node(s): µs per call (best of {args.rounds} rounds)")
    print("#" + "".join(f"{a:>13}" for a in best) + "     bytes  winner")
    for s in sorted({s for t in best.values() for s in t}):
        row = "".join(f"{best[a][s]:13.1f}" if s in best[a] else f"{'-':>13}" for a in best)
        winner = min((t[s], a) for a, t in best.items() if s in t)[1]
        print(f" {row} {s:9d}  {winner}")
    for c in crossovers(f):
        print(f"# fits cross: {c['between'][0]} / {c['between'][1]} at {c['bytes']} bytes")
    print(f"# wrote {args.out}: {len(mine)} rules for this layout")
    return 0
