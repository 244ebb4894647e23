"""Where the host time of one small all-reduce goes, function by function (cProfile).

    python3 benchmarks/profile_call.py --group 4            # ring.Group, 4 ranks, one process
    mpiexec -n 2 python3 benchmarks/profile_call.py         # Communicator(device="cuda")
    ... --path kernel                                       # the persistent kernel's path

Profiles `calls` all-reduces of --count float32 (default 2: 8 bytes) after warm-up and prints rank 0's top functions by
own time, and, without the profiler, the host time to enqueue a call (the calls back to
back, before the wait: a stream-ordered call's cost to its caller; the median over bursts
of at most --burst calls, each waited for after it: past about a thousand launches not yet
run, a launch waits for the GPU's queue, and the time would be the kernel's) and the wall
time per call (all the calls and the one wait after them, as nccl-tests times NCCL).
--blocking: Communicator(blocking=True), every call waiting for its result.
--no-launch: after the warm-up, bound launches do nothing (their results are then wrong):
the host's own work per call without the launch, beside a run with it (the launch's share);
without a GPU, the Python of a kept call under the simulator.
--json PATH: rank 0 writes the figures with the run's meta (GPU, versions, commit,
command, RING_LAUNCH): tools/acceptance.py reads it for issue 52's enqueue_us_comm_k2.
"""

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import time

import numpy as np
from numba import cuda

import ring
from harness.sizes import at_least
from kernels.bound_launch import BoundLaunch, launcher


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", type=int, default=0, help="ranks of a ring.Group (else: Communicator)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--calls", type=at_least(1), default=200)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--count", type=int, default=2, help="float32 elements per call")
    ap.add_argument("--algorithm", default="auto", help="Communicator's algorithm")
    ap.add_argument("--path", default="stream", help="data path: stream, copy or kernel")
    ap.add_argument("--blocking", action="store_true", help="Communicator(blocking=True)")
    ap.add_argument("--burst", type=at_least(1), default=200,
                    help="calls a burst, for the enqueue time")
    ap.add_argument("--no-launch", action="store_true",
                    help="after the warm-up, bound launches do nothing: the host's work alone")
    ap.add_argument("--json", help="rank 0 writes the figures and the run's meta here")
    a = ap.parse_args()
    if a.group:
        g = ring.Group(a.group, path=a.path)
        xs = [cuda.to_device(np.ones(a.count, np.float32)) for _ in range(a.group)]
        outs = [cuda.device_array(a.count, np.float32) for _ in range(a.group)]
        call, rank, what = (lambda: g.allreduce(xs, outs=outs)), 0, f"Group({a.group}, path={a.path})"
        sync = cuda.synchronize
    else:
        comm = ring.Communicator(device=a.device, algorithm=a.algorithm, blocking=a.blocking,
                                 **({"path": a.path} if a.device == "cuda" else {}))
        x = cuda.to_device(np.ones(a.count, np.float32)) if a.device == "cuda" else np.ones(a.count, np.float32)
        out = cuda.device_array(a.count, np.float32) if a.device == "cuda" else np.empty(a.count, np.float32)
        call, rank, what = (lambda: comm.allreduce(x, out=out)), comm.rank, f"Communicator({a.device}, {comm.size} ranks, path={a.path})"
        sync = comm.synchronize
    for _ in range(20):
        call()
    sync()
    if a.no_launch:
        BoundLaunch.__call__ = lambda self, stream=None: None
        what += ", launches not fired"
    bursts = []
    for start in range(0, a.calls, a.burst):
        n = min(a.burst, a.calls - start)
        t = time.perf_counter()
        for _ in range(n):
            call()
        bursts.append((time.perf_counter() - t) / n * 1e6)
        sync()
    enqueue = statistics.median(bursts)
    t = time.perf_counter()
    for _ in range(a.calls):
        call()
    sync()
    wall = (time.perf_counter() - t) / a.calls * 1e6
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(a.calls):
        call()
    sync()
    prof.disable()
    if rank == 0:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(a.top)
        print(f"# {what}: {4 * a.count}-byte all-reduce ({a.algorithm}), {enqueue:.1f} us to "
              f"enqueue a call (median of {len(bursts)} bursts of <= {a.burst}), {wall:.1f} us per call with the wait after them (no profiler); "
              f"kept launches via {launcher()} (RING_LAUNCH)")
        print("\n".join(s.getvalue().splitlines()[:a.top + 12]))
        if a.json:
            from harness.meta import describe
            ranks = a.group or comm.size
            with open(a.json, "w") as f:
                json.dump({"meta": describe(["python", *sys.argv], cuda=a.device == "cuda"),
                           "what": what, "api": "group" if a.group else "communicator",
                           "device": a.device, "ranks": ranks, "path": a.path,
                           "algorithm": a.algorithm, "nbytes": 4 * a.count,
                           "launch": launcher(), "no_launch": a.no_launch,
                           "blocking": a.blocking, "enqueue_us": round(enqueue, 2),
                           "wall_us": round(wall, 2), "bursts_us": [round(b, 2) for b in bursts],
                           "burst": a.burst, "calls": a.calls}, f, indent=1)


if __name__ == "__main__":
    main()
