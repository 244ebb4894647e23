"""Plant known faults one at a time and show that the test suite catches each.

    .venv/bin/python tools/mutants.py [--only NAME ...] [--json results/mutants.json]
    .venv/bin/python tools/mutants.py --only two-level-avg-divisor --tests "tests/test_mpi.py -k cuda"

Each mutant is a one-place edit of the library, applied to a copy of the working tree (the
checkout itself is never touched); the copy then runs the same pytest command as `make
test` with -x, under the simulator when there is no GPU. A mutant is caught when the run
fails. A run of the unmodified copy comes first: if it fails, nothing else means anything.
The faults are the ones that once passed the whole suite (the tests issue): two-level
disabled, a wrong avg divisor, a precision loss, an off-by-one block boundary, a chunk
that is never written out; plus one in the GPU's per-chunk code.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name: (file, the text replaced (exactly once), its replacement, what the fault is)
MUTANTS = {
    "two-level-disabled": (
        "ring/hierarchical.py",
        '    nodes = topo.nnodes\n    if nodes < 2:',
        '    return "disabled (planted fault)"\n    nodes = topo.nnodes\n    if nodes < 2:',
        "hierarchical.applies() always refuses: 'auto' silently takes the flat ring"),
    "two-level-avg-divisor": (
        "ring/hierarchical.py",
        "op, mine, mine, divisor=self.size, logical=logical)",
        "op, mine, mine, divisor=self.nodes, logical=logical)",
        "the two-level all-reduce divides avg by the node count instead of the rank count"),
    "two-level-precision-loss": (
        "ring/hierarchical.py",
        "        self.inner.run(plan_blocks(Collective.ALLGATHER, L, j, blocks, itemsize, chunk_bytes),",
        "        if hasattr(mine, 'astype') and mine.dtype.kind == 'f' and mine.dtype.itemsize > 2:\n"
        "            mine[...] = mine.astype('float16')\n"
        "        self.inner.run(plan_blocks(Collective.ALLGATHER, L, j, blocks, itemsize, chunk_bytes),",
        "the two-level all-reduce rounds float32/float64 partial results through float16"),
    "block-boundary-off-by-one": (
        "ring/schedule.py",
        "    return [(units * i // parts) * align for i in range(parts)] + [count]",
        "    return [0] + [min(count, (units * i // parts) * align + 1) for i in range(1, parts)] + [count]",
        "every inner block boundary moves one element up: blocks still tile the array, only "
        "the order of reduction of the moved elements changes"),
    "host-chunk-not-written": (
        "ring/host/executor.py",
        "        apply_chunk(step, op, divisor, None if s_in is None else x[s_in], out[s_out],\n"
        "                    rbuf, sbuf)",
        "        if not (j == 1 and step.out and not step.send):\n"
        "            apply_chunk(step, op, divisor, None if s_in is None else x[s_in], out[s_out],\n"
        "                        rbuf, sbuf)",
        "the host executor skips the second chunk of every step that only writes the output"),
    "cuda-chunk-not-forwarded": (
        "ring/cuda/enqueue.py",
        "        else:\n            if step.out and n:\n                _copy(dst, rbuf, s)",
        "        else:\n            if step.out and n and lo:\n                _copy(dst, rbuf, s)",
        "the GPU's fused path never writes out the first chunk of the array that it receives "
        "and forwards (all-gather and broadcast steps)"),
}


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if (ROOT / f).is_file()]


def copy_tree(dest: Path) -> None:
    for f in tracked_files():
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, dest / f)


def plant(tree: Path, name: str) -> None:
    path, old, new, _ = MUTANTS[name]
    f = tree / path
    text = f.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"{name}: the text to replace occurs {text.count(old)} times in {path}; "
                         "update the mutant to the code")
    f.write_text(text.replace(old, new))


def run_suite(tree: Path, timeout: float, tests: list[str]) -> dict:
    env = dict(os.environ)
    if not shutil.which("nvidia-smi"):
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    env.pop("PYTHONPATH", None)
    env["COLUMNS"] = "400"  # pytest cuts its short summary lines to the terminal's width
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
           "-o", "truncation_limit_lines=0", "-o", "truncation_limit_chars=0", *tests]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True,
                              timeout=timeout)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        partial = e.stdout or ""
        rc, out = None, partial.decode(errors="replace") if isinstance(partial, bytes) else partial
    failed = re.findall(r"^FAILED (\S+)", out, re.M)
    summary = [ln for ln in out.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    # pytest's short summary of every failure, the inner mpiexec runs' included (their
    # output is nested in the outer assertion, behind "E" prefixes): test and message
    why = [re.sub(r"^(\s*E\s+)+", "", ln).strip()[:300] for ln in out.splitlines()
           if re.match(r"^(\s*E\s+)*FAILED \S+ - ", ln)]
    return {"rc": rc, "seconds": round(time.time() - t0, 1), "first_failure": failed[:1],
            "why": list(dict.fromkeys(why))[:6],  # the assertion that caught it
            "summary": summary[-1].strip("= ") if summary else None,
            "caught": rc is not None and rc != 0 and rc != 5}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="*", choices=sorted(MUTANTS), help="these mutants only")
    p.add_argument("--skip-baseline", action="store_true",
                   help="do not run the unmodified suite first")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per suite run")
    p.add_argument("--tests", default="", help="pytest arguments selecting part of the suite "
                   "(default: all of it, as make test)")
    p.add_argument("--json", metavar="PATH", help="write the results here")
    args = p.parse_args(argv)
    names = args.only or list(MUTANTS)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip())
    report = {"command": " ".join([Path(sys.executable).name, *sys.argv]),
              "git_commit": commit + (" (with uncommitted changes)" if dirty else ""),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": f"{platform.node()}, {os.cpu_count()} CPUs, "
                         + ("GPU" if shutil.which("nvidia-smi") else "no GPU (Numba simulator)"),
              "suite": "python -m pytest -x -q " + (args.tests or "(make test's tests)")
                       + ", stopping at the first failure",
              "baseline": None, "mutants": []}
    todo = ([] if args.skip_baseline else [None]) + names
    for name in todo:
        with tempfile.TemporaryDirectory(prefix="ring-mutant-") as tmp:
            tree = Path(tmp)
            copy_tree(tree)
            if name is not None:
                plant(tree, name)
            print(f"# {name or 'baseline (no fault)'} ...", file=sys.stderr, flush=True)
            res = run_suite(tree, args.timeout, args.tests.split())
        if name is None:
            report["baseline"] = res
            print(f"baseline: rc {res['rc']}, {res['summary']}, {res['seconds']} s", flush=True)
            if res["caught"] or res["rc"] is None:
                print("the unmodified suite fails: fix it before reading mutants", flush=True)
                break
            continue
        row = {"name": name, "file": MUTANTS[name][0], "fault": MUTANTS[name][3], **res}
        report["mutants"].append(row)
        verdict = "CAUGHT" if res["caught"] else "MISSED"
        print(f"{verdict:6} {name:28} {res['seconds']:7.1f} s  "
              f"{(res['first_failure'] or [res['summary']])[0]}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        print(f"# wrote {args.json}", flush=True)
    missed = [m["name"] for m in report["mutants"] if not m["caught"]]
    return 1 if missed or (report["baseline"] and report["baseline"]["caught"]) else 0


if __name__ == "__main__":
    sys.exit(main())
