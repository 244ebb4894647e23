"""Best of several harness runs, point by point: ring's time against another
implementation's, as issue 16's acceptance reads them (best of interleaved runs).

    python benchmarks/best_of.py results/host-auto-vs-mpi-2ranks-run*.json [--against mpi]

For every (collective, dtype, op, size, in place) the fastest time of each implementation
over the files, and other / ring (above 1: ring is faster). Prints a table; the lowest
ratio last. A row with wrong results (`wrong` above 0) or no time is no figure: it is left
out, and the files' count of such rows printed; if any, the exit status is 1. (`error` is
a lossy wire's measured error, not a failure.)
"""

import argparse
import json
import sys
from collections import defaultdict


def best(files, impl):
    """({key: the fastest time}, {key: how many runs timed it}, rows left out: wrong results
    or no time); key: (collective, dtype, op, nbytes, in place)."""
    times, bad = defaultdict(list), 0
    for f in files:
        for r in json.load(open(f))["results"]:
            if r["impl"] != impl or r.get("skipped"):
                continue
            t = r.get("time_us")
            if (r.get("wrong") or 0) > 0 or t is None or t != t:  # (t != t: NaN)
                bad += 1
                continue
            key = (r["collective"], r.get("dtype"), r.get("op"), r["nbytes"], r["in_place"])
            times[key].append(t)
    return {k: min(v) for k, v in times.items()}, {k: len(v) for k, v in times.items()}, bad


def size(n: int) -> str:
    for unit, b in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= b:
            return f"{n / b:g} {unit}"
    return f"{n} B"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--impl", default="ring")
    ap.add_argument("--against", default="mpi")
    a = ap.parse_args()
    mine, runs, bad_mine = best(a.files, a.impl)
    other, _, bad_other = best(a.files, a.against)
    print(f"# best of {max(runs.values(), default=0)} runs: {a.impl} and {a.against} time (us),"
          f" {a.against} / {a.impl}")
    print(f"{'collective':<16}{'dtype':>10}{'op':>5}{'size':>10}{'in place':>10}{a.impl:>12}"
          f"{a.against:>12}{'ratio':>8}")
    worst = None
    for k in sorted(mine, key=lambda k: (k[0], str(k[1]), str(k[2]), k[4], k[3])):
        if k not in other:
            continue
        ratio = other[k] / mine[k]
        worst = min(worst or (ratio, k), (ratio, k))
        coll, dtype, op, nbytes, in_place = k
        print(f"{coll:<16}{str(dtype):>10}{str(op):>5}{size(nbytes):>10}{str(in_place):>10}"
              f"{mine[k]:12.1f}{other[k]:12.1f}{ratio:8.2f}")
    if worst:
        coll, dtype, op, nbytes, in_place = worst[1]
        print(f"# lowest ratio: {worst[0]:.2f} at {coll} {dtype} {op} {size(nbytes)}"
              f"{' in place' if in_place else ''}")
    if bad_mine or bad_other:
        print(f"# left out, wrong results or no time: {bad_mine} rows of {a.impl}, "
              f"{bad_other} of {a.against}: not figures to quote")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
