"""What a process pays for its first persistent kernel: compiled (RING_KERNEL_CACHE=0),
compiled and kept on disk (an empty cache), loaded from disk (the next process), each in a
fresh process, seconds to get ring_kernel(op, dtype) (ring/cuda/kernel_cache.py). GPU only
(under the simulator nothing compiles).

    python3 benchmarks/kernel_cache.py [--variants sum-float32,max-bfloat16] [--json FILE]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from harness.meta import describe

ROOT = Path(__file__).resolve().parent.parent
ONE = """
import sys, time
from ringtypes import Op
from ring.cuda.persistent import ring_kernel
op, dtype, ll = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
t = time.perf_counter()
ring_kernel(Op[op.upper()], dtype, ll=ll)
print(time.perf_counter() - t)
"""


def child_env(cache: bool, environ=os.environ) -> dict:
    """The measured process's environment: the repo ahead of, not instead of, the
    PYTHONPATH this one was given (a lent GPU machine's carried NumPy lives there:
    tools/gpu-env.sh)."""
    path = os.pathsep.join(filter(None, [str(ROOT), environ.get("PYTHONPATH")]))
    return dict(environ, PYTHONPATH=path, RING_KERNEL_CACHE="1" if cache else "0")


def seconds(op: str, dtype: str, ll: bool, cache: bool) -> float:
    p = subprocess.run([sys.executable, "-c", ONE, op, dtype, "1" if ll else "0"], cwd=ROOT,
                       env=child_env(cache), capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    return float(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="sum-float32,max-bfloat16",
                    help="op-dtype pairs, comma-separated (each as the counter and LL kernel)")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    shutil.rmtree(ROOT / "ring/cuda/__pycache__", ignore_errors=True)  # an empty cache
    rows = []
    for pair in a.variants.split(","):
        op, dtype = pair.split("-")
        for ll in (False, True):
            row = {"op": op, "dtype": dtype, "ll": ll,
                   "compiled_s": seconds(op, dtype, ll, cache=False),
                   "compiled_and_kept_s": seconds(op, dtype, ll, cache=True),
                   "loaded_s": seconds(op, dtype, ll, cache=True)}
            rows.append(row)
            print(f"{op:>4} {dtype:<9} {'LL' if ll else 'counters':<8}  compiled "
                  f"{row['compiled_s']:6.2f} s  kept {row['compiled_and_kept_s']:6.2f} s  "
                  f"loaded {row['loaded_s']:6.2f} s", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": describe(sys.argv), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
