"""cma's all-reduce (or reduce) in one phase against two (ring/algorithms/cma.py,
recipe.halves), beside the flat ring, on the same buffers: where the two phases overtake one
(cma.in_halves).

    mpiexec -n K python benchmarks/cma_phases.py [--rounds 5] [--in-place]
        [--collective reduce] [--json out.json]

Float32 sum, out of place (--in-place: out is x; an all-reduce in one phase then posts a
copy of x), a reduce to rank 0, sizes 4 KiB to 64 MiB by 4. Each point: the slowest rank's
mean per call of back-to-back calls (about 2 MB of x in all, 2 to 200 calls; the fast path
after two warm-up calls), best of `rounds`; one phase and two forced by cma.HALVES_BYTES.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # noqa: E402 (harness)
import ring  # noqa: E402
from harness.sizes import at_least  # noqa: E402
from harness import meta  # noqa: E402
from ring.algorithms import cma  # noqa: E402

MODES = (("one phase", 1 << 62, "cma"), ("two phases", 1, "cma"), ("flat ring", 0, "ring"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=at_least(1), default=5)
    ap.add_argument("--in-place", action="store_true")
    ap.add_argument("--collective", choices=("allreduce", "reduce"), default="allreduce")
    ap.add_argument("--json")
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    reduce = a.collective == "reduce"
    sizes = [1 << s for s in range(12, 27, 2)]
    best: dict[str, dict[int, float]] = {}
    for mode, halves_bytes, algorithm in MODES:
        cma.HALVES_BYTES = halves_bytes
        with ring.Communicator(device="host") as comm:  # (a new one: no kept signature)
            for nbytes in sizes:
                x = np.ones(nbytes // 4, np.float32)
                out = x if a.in_place else np.empty_like(x)
                call = getattr(comm, a.collective)
                kw = {"root": 0} if reduce else {}
                calls = max(2, min(200, int(2e6 / nbytes)))
                for _ in range(a.rounds):
                    for _ in range(2):
                        call(x, out, algorithm=algorithm, **kw)
                    world.Barrier()
                    t = time.perf_counter()
                    for _ in range(calls):
                        call(x, out, algorithm=algorithm, **kw)
                    dt = world.allreduce((time.perf_counter() - t) / calls, op=MPI.MAX) * 1e6
                    mine = best.setdefault(mode, {})
                    mine[nbytes] = min(mine.get(nbytes, dt), dt)
    if world.rank:
        return
    print(f"# {a.collective}, {world.size} ranks, float32 sum"
          f"{', in place' if a.in_place else ''}, "
          f"µs per call (best of {a.rounds})")
    print(f"{'bytes':>10}" + "".join(f"{m:>12}" for m, _, _ in MODES))
    for nbytes in sizes:
        print(f"{nbytes:>10}" + "".join(f"{best[m][nbytes]:12.1f}" for m, _, _ in MODES))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta.describe(["mpiexec", "-n", str(world.size), "python",
                                              *sys.argv], cuda=False),
                       "collective": a.collective, "ranks": world.size,
                       "in_place": a.in_place,
                       "us_per_call": {m: {str(s): round(t, 2) for s, t in v.items()}
                                       for m, v in best.items()}}, f, indent=1)

if __name__ == "__main__":
    main()
