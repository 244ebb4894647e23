"""mpiexec -n K python -m harness COLLECTIVE [options]
    COLLECTIVE: allreduce reduce_scatter allgather broadcast reduce gather scatter alltoall
    (nccl-tests' names work too: all_reduce, all_gather_perf, alltoall_perf, ...)
python -m harness plot FILE... --out PNG
python -m harness model FILE... [--min-bytes B] [--segments N] [--predict SIZE --ranks K --link-GBps B]
mpiexec -n K python -m harness tune --out TABLE      (the table algorithm="auto" reads)

Flags follow nccl-tests: -b/-e/-f sizes (K/M/G suffixes), -n iterations, -w warm-up,
-c check, -d dtype, -o op, -r root (-G, CUDA-graph replay, is refused: not built here);
plus -a/--also (sizes besides the grid: -b 8 -f 4 steps over 64M and 1G), --device,
--impl, --json, --plot. Exit status 1 when any element was wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

from mpi4py import MPI

from ring.options import ALGORITHMS
from ringtypes import DATA_ONLY, DTYPES, FLOATING, parse_dtype, parse_op

from . import buffers, meta, roofline, table
from .collectives import ALIASES, COLLECTIVES
from .impls import IMPLS, Ring
from .sizes import at_least, parse_size, parse_sizes, sizes, with_also
from .sweep import run_case

DTYPE_ALIASES = {"float": "float32", "half": "float16", "double": "float64", "int": "int32",
                 "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2",  # nccl-tests' names
                 "bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


REGISTERED = "+R"  # an --impl name's suffix: that ring implementation's buffers registered


def registered(name: str) -> tuple[str, bool]:
    """(the implementation, whether its buffers are registered) of an --impl name."""
    return (name[:-len(REGISTERED)], True) if name.endswith(REGISTERED) else (name, False)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("collective", metavar="COLLECTIVE", help=", ".join(COLLECTIVES),
                   choices=sorted(COLLECTIVES) + sorted(set(ALIASES) - set(COLLECTIVES)))
    p.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("32M"))
    p.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("32M"))
    p.add_argument("-f", "--stepfactor", type=float, default=1.0)
    p.add_argument("-i", "--stepbytes", type=parse_size, default=parse_size("1M"))
    p.add_argument("-a", "--also", metavar="SIZES", type=parse_sizes,
                   help="sizes to measure besides the -b/-e/-f grid, a comma list (64M,1G)")
    p.add_argument("-n", "--iters", type=at_least(1), default=20)
    p.add_argument("-w", "--warmup_iters", type=at_least(0), default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("-d", "--datatype", default="float32", help="a dtype, or 'all'")
    p.add_argument("-o", "--op", default="sum", help="sum, prod, min, max, avg, or 'all'")
    p.add_argument("-r", "--root", type=int, default=0,
                   help="(broadcast, reduce, gather, scatter)")
    p.add_argument("-G", "--cudagraph", type=int, default=0,
                   help="CUDA-graph replays: not built in the harness (refused); a graph "
                        "of a collective: ring.Group.capture, benchmarks/group_bench.py")
    p.add_argument("--device", choices=["auto", "cuda", "host"], default="auto")
    p.add_argument("--impl", default="ring,mpi",
                   help="comma list of: " + ",".join(IMPLS) + "; a ring implementation with "
                        f"{REGISTERED} (ring-twoshot{REGISTERED}) registers its buffers as -R "
                        "does, beside the same one staged")
    p.add_argument("--algo", metavar="LIST",
                   help="ring's algorithms side by side, in place of ring in --impl: a comma "
                        "list of " + ",".join(ALGORITHMS))
    p.add_argument("--json", metavar="PATH", help="write every result and the run's metadata")
    p.add_argument("--plot", metavar="PNG", help="draw the sweep (needs --json)")
    p.add_argument("--blocking", action="store_true",
                   help="ring's cuda calls wait for their result (Communicator(blocking=True)); "
                        "by default they are stream-ordered and timed as nccl-tests times NCCL: "
                        "n calls enqueued, one synchronisation")
    p.add_argument("-R", "--register", action="store_true",
                   help="ring's cuda buffers registered (comm.register) before each case's "
                        "calls, as nccl-tests' -R 1: the two-shot kernel then reads and writes "
                        "them in place")
    p.add_argument("--nccl-hostid", action="store_true",
                   help="ranks sharing a GPU: run NCCL with a distinct NCCL_HOSTID per rank "
                        "(its socket transport), labelled so")
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "plot":
        from . import plot
        return plot.main(argv[1:])
    if argv and argv[0] == "model":
        from . import model
        return model.main(argv[1:])
    if argv and argv[0] == "tune":
        from . import tune
        return tune.main(argv[1:])
    args = parser().parse_args(argv)
    try:
        grid = with_also(sizes(args.minbytes, args.maxbytes, args.stepfactor, args.stepbytes),
                         args.also)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    if args.plot and not args.json:
        raise SystemExit("--plot draws from the results file: give --json too")
    if args.plot:
        from . import plot
        plot.require()
    world = MPI.COMM_WORLD
    rank0 = world.rank == 0
    coll = COLLECTIVES[ALIASES.get(args.collective, args.collective)]
    names = [n.strip() for n in args.impl.split(",") if n.strip()]
    if args.algo:
        algos = [a.strip() for a in args.algo.split(",") if a.strip()]
        if any(a not in ALGORITHMS for a in algos):
            raise SystemExit(f"--algo: choose from {ALGORITHMS}, got {algos}")
        ring_impls = [Ring.NAMES.get(a, f"ring-{a}") for a in algos]
        names = [n for n in names if not n.startswith("ring") or registered(n)[1]] + ring_impls
        names = ring_impls + [n for n in names if n not in ring_impls]
    names = list(dict.fromkeys(names))  # each once: a column per implementation
    bad = [n for n in names if registered(n)[0] not in IMPLS]
    if bad:
        raise SystemExit(f"--impl: unknown {bad}; choose from {sorted(IMPLS)}")
    bad = [n for n in names if registered(n)[1] and not n.startswith("ring")]
    if bad:
        raise SystemExit(f"--impl: {REGISTERED} (registered buffers) is for ring's "
                         f"implementations, got {bad}")
    if args.cudagraph:
        raise SystemExit("-G: the harness does not replay CUDA graphs (it times plain calls); "
                         "ring.Group.capture does, timed by benchmarks/group_bench.py")
    try:
        dtypes = list(DTYPES) if args.datatype == "all" else \
            [parse_dtype(DTYPE_ALIASES.get(d, d), "-d") for d in args.datatype.split(",")]
    except TypeError as e:
        raise SystemExit(str(e)) from None
    if coll.reduces and any(d in DATA_ONLY for d in dtypes):
        if world.rank == 0:
            print(f"# {', '.join(d.name for d in dtypes if d in DATA_ONLY)}: not run: "
                  f"{coll.name} reduces, and float8 is carried by the data-moving collectives "
                  "only", flush=True)
        dtypes = [d for d in dtypes if d not in DATA_ONLY]
    try:  # (nccl-tests' names, in any case)
        ops = ["sum", "prod", "max", "min", "avg"] if args.op.lower() == "all" else \
            [str(parse_op(o.strip())) for o in args.op.split(",")]
    except ValueError as e:
        raise SystemExit(f"-o: {e} (or 'all')") from None
    if not coll.reduces:
        ops = ["none"]
    integers = [d.name for d in dtypes if d not in FLOATING]
    if "avg" in ops and integers and world.rank == 0:
        print(f"# avg: not run for {', '.join(integers)}: it is for floating-point dtypes",
              flush=True)
    if not any(op != "avg" or d in FLOATING for d in dtypes for op in ops):
        raise SystemExit(f"-d {args.datatype} -o {args.op}: nothing to run for {coll.name}")
    if args.device != "host":  # small sizes launch small grids on purpose: no warning a call
        from numba import config
        config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    bufs = buffers.for_rank(args.device, world)
    impls = []
    for n in names:
        base, reg = registered(n)
        impls.append(IMPLS[base](world, bufs, **(
            {"hostid": True} if n == "nccl" and args.nccl_hostid else
            {**({"blocking": True} if args.blocking else {}),
             **({"register": True} if args.register or reg else {})}
            if n.startswith("ring") else {})))
        if reg:
            impls[-1].name = n
    if coll.rooted and not 0 <= args.root < world.size:
        raise SystemExit(f"-r: the root must be a rank (0..{world.size - 1}), got {args.root}")
    for i in impls:
        if hasattr(i, "runs"):
            i.runs(coll.name)
    # An implementation that cannot run here at all gets a line, not a column of n/a.
    dropped = [i for i in impls if i.unavailable]
    impls = [i for i in impls if not i.unavailable]
    if rank0:
        for i in dropped:
            print(f"# {i.name}: not run: {i.unavailable}", flush=True)
    for i in dropped:
        i.close()
    if not impls:
        raise SystemExit("no implementation can run here: " + "; ".join(i.unavailable for i in dropped))
    device = bufs.name
    results = []
    # The copy bandwidths to read the sweep against, from the same run (rank 0 alone).
    roof = roofline.measure(world, device, min(roofline.NBYTES, max(args.maxbytes, 16 << 20)))
    # every rank on one GPU: each figure also against the bytes the collective must move
    gpus = world.allgather((MPI.Get_processor_name(), getattr(bufs, "gpu", None)))
    hbm = roofline.hbm_rate(roof) if device == "cuda" and len(set(gpus)) == 1 else None
    if rank0:
        print(table.header(impls, world.size, device, minimum=hbm is not None), flush=True)
        print(roofline.describe(roof), flush=True)
    about = {**meta.collect(world, impls, sys.argv, device), "rooflines": roof,
             "vs_min": None if hbm is None else
             "every rank on one GPU: vs_min = the bytes each rank must read (its input) "
             "and write (its output) once, summed over ranks (all-reduce: 2 K N) / time / "
             f"the HBM rate read + written ({hbm / 1e9:.1f} GB/s: twice d2d_GBps)",
             "timing": "each size: warm-up calls, then -n calls back to back and one "
                       "synchronisation (the buffers' stream; ring: comm.synchronize()), the "
                       "mean per call, averaged over ranks; ring's cuda calls "
                       + ("blocking (each waits for its result)" if args.blocking else
                          "stream-ordered (enqueued; as nccl-tests times NCCL)")
                       + ("; ring's buffers registered (comm.register) before each case, "
                          "NCCL's not" if args.register else
                          f"; the buffers of the implementations named with {REGISTERED} "
                          "registered (comm.register) before each case"
                          if any(registered(n)[1] for n in names) else "")}

    def save(complete: bool) -> None:
        """The JSON as it stands: rewritten after every size, so that a sweep stopped by a
        time limit leaves the sizes it finished ("complete": false says it was cut short)."""
        if any(getattr(i, "register", False) for i in impls):  # how many cases' buffers
            # every rank could register
            about["registration"] = {i.name: dict(i.registration) for i in impls
                                     if getattr(i, "register", False)}
        if rank0 and args.json:
            with open(args.json + ".part", "w") as f:
                json.dump({"meta": about, "complete": complete,
                           "results": [asdict(r) for r in results]}, f, indent=1)
            os.replace(args.json + ".part", args.json)
    for dtype in dtypes:
        dt = dtype.name
        for op in ops:
            if op == "avg" and dtype not in FLOATING:
                continue
            for nbytes in grid:
                if rank0:
                    print(f"[{coll.name} {dt} {op} {nbytes} B]", file=sys.stderr, flush=True)
                case = {}
                for impl in impls:
                    for in_place in (False, True):
                        r = run_case(impl, coll, world, bufs, nbytes, dtype,
                                     "sum" if op == "none" else op, in_place,
                                     args.iters, args.warmup_iters, bool(args.check),
                                     args.root)
                        r.op = op
                        if hbm is not None and r.time_us > 0:  # (NaN: not run, stays None)
                            r.vs_min = roofline.vs_min(coll, nbytes, dtype.itemsize,
                                                       world.size, r.time_us, hbm)
                        case[(impl.name, in_place)] = r
                        results.append(r)
                if rank0:
                    print(table.row(case, impls, minimum=hbm is not None), flush=True)
                save(complete=False)
    save(complete=True)
    if rank0:
        print(table.footer(results, impls), flush=True)
        if args.json:
            print(f"# wrote {args.json}", flush=True)
            if args.plot:
                from . import plot
                plot.draw([args.json], args.plot)
                print(f"# wrote {args.plot}", flush=True)
    for impl in impls:
        impl.close()
    wrong = sum(r.wrong for r in results if r.wrong > 0)
    return 1 if wrong else 0


def run() -> int:
    """main(), but an exception on any rank aborts the whole MPI job (as `python -m mpi4py`
    does), so no rank is left waiting in a collective for one that died."""
    try:
        return main()
    except SystemExit:
        raise
    except BaseException:
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
        if MPI.COMM_WORLD.size > 1:
            MPI.COMM_WORLD.Abort(1)
        raise


if __name__ == "__main__":
    sys.exit(run())
