"""Best of several harness runs, point by point: ring's time against another
implementation's, as issue 16's acceptance reads them (best of interleaved runs).

    python benchmarks/best_of.py results/host-auto-vs-mpi-2ranks-run*.json [--against mpi]

For every (size, in place) the fastest time of each implementation over the files, and
other / ring (above 1: ring is faster). Prints a table; the lowest ratio last.
"""

import argparse
import json
from collections import defaultdict


def best(files, impl):
    times = defaultdict(list)
    for f in files:
        for r in json.load(open(f))["results"]:
            if r["impl"] == impl and not r.get("skipped"):
                times[(r["collective"], r["nbytes"], r["in_place"])].append(r["time_us"])
    return {k: min(v) for k, v in times.items()}, {k: len(v) for k, v in times.items()}


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
    mine, runs = best(a.files, a.impl)
    other, _ = best(a.files, a.against)
    print(f"# best of {max(runs.values())} runs: {a.impl} and {a.against} time (us), "
          f"{a.against} / {a.impl}")
    print(f"{'collective':<16}{'size':>10}{'in place':>10}{a.impl:>12}{a.against:>12}{'ratio':>8}")
    worst = None
    for k in sorted(mine, key=lambda k: (k[0], k[2], k[1])):
        if k not in other:
            continue
        ratio = other[k] / mine[k]
        worst = min(worst or (ratio, k), (ratio, k))
        print(f"{k[0]:<16}{size(k[1]):>10}{str(k[2]):>10}{mine[k]:12.1f}{other[k]:12.1f}{ratio:8.2f}")
    if worst:
        print(f"# lowest ratio: {worst[0]:.2f} at {size(worst[1][1])}"
              f"{' in place' if worst[1][2] else ''}")


if __name__ == "__main__":
    main()
