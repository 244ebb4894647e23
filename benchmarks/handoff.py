"""One hand-off between two blocks (or two warps) of a GPU, in each way the ring kernel
could hand a chunk over (kernels/handoff.py: counter and membar, counter and fence.acq_rel,
NCCL's LL words), µs per one-way hand-off timed inside the kernel. GPU only.

    python3 benchmarks/handoff.py [--trips 2000] [--threads 512] [--json FILE]
"""

import argparse
import json
import sys

from harness.meta import describe
from harness.sizes import at_least
from kernels.handoff import MODES, measure
from kernels.launch import simulated


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trips", type=at_least(1), default=2000)
    ap.add_argument("--threads", type=int, default=512,
                    help="threads per block with two blocks (barriers when > 32)")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = []
    for mode in MODES:
        for same_block, threads in ((True, 64), (False, 32), (False, a.threads)):
            if simulated() and not same_block:
                continue
            ns = measure(mode, same_block=same_block, threads=threads, trips=a.trips)
            where = "one block (2 warps)" if same_block else f"two blocks of {threads}"
            rows.append({"mode": mode, "placement": where, "threads": threads,
                         "ns_per_handoff": ns, "trips": a.trips})
            print(f"{mode:>7}  {where:<22} {ns / 1e3:8.3f} us per hand-off", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": describe(sys.argv), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
