"""tools/gpu-session.sh, the one command of a GPU session, checked without a GPU: a GPU
session is lent by chance and its minutes are few, so a step whose command no longer parses
(a benchmark's flag renamed) or whose test selection no longer selects anything must fail
here, not there. DRY=1 makes the script print every step's command; each is then checked
the way it would start: pytest collects its selection (at least one test), a script or
module parses its arguments with its own argparse (and stops there, before any work), and
a command without argparse must at least exist."""

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "gpu-session.sh"


def steps() -> list[str]:
    """Every step the script's header lists."""
    lines = SCRIPT.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("# Steps:"))
    names = lines[at].split(":", 1)[1].split()
    for line in lines[at + 1:]:
        if not line.startswith("#        "):  # the list's continuation lines
            break
        names += line[1:].split()
    return names


def commands(tmp_path, names) -> list[tuple[str, list[str]]]:
    out = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, DRY="1", OUT=str(tmp_path),
                                              STEPS=" ".join(names)))
    assert out.returncode == 0, out.stdout + out.stderr
    found = []
    for line in out.stdout.splitlines():
        if line.startswith("STEP "):
            _, name, rest = line.split(" ", 2)
            found.append((name, shlex.split(rest)))
    return found


def argv_of(cmd: list[str]) -> list[str]:
    """The python3 command line inside an `mpiexec -n K` one."""
    if cmd[0] == "mpiexec":
        assert cmd[1] == "-n" and cmd[2].isdigit(), cmd
        cmd = cmd[3:]
    assert cmd[0] == "python3", cmd
    return cmd[1:]


# Runs each (kind, target, argv) with argparse stopped right after a successful parse.
PARSE_ONLY = r"""
import argparse, json, runpy, sys
class Parsed(Exception):
    pass
parse = argparse.ArgumentParser.parse_args
def parse_only(self, args=None, namespace=None):
    self.allow_abbrev = False  # a flag as the script spells it, not a prefix of it
    parse(self, args, namespace)
    raise Parsed
argparse.ArgumentParser.parse_args = parse_only
failed = []
for kind, target, argv in json.loads(sys.argv[1]):
    sys.argv = [target, *argv]
    try:
        if kind == "module":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
        failed.append(f"{target} {argv}: ran without parsing arguments")
    except Parsed:
        pass
    except SystemExit as e:
        failed.append(f"{target} {argv}: exit {e.code}")
print(json.dumps(failed))
"""


# Collects each (step, pytest arguments) in one process (the test modules imported once):
# pytest.main's exit status, 5 for an empty selection, 4 for an unknown option, 2 for errors.
COLLECT = r"""
import contextlib, io, json, sys
import pytest
failed = []
for name, args in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            rc = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *args])
        except SystemExit as e:
            rc = e.code
    if rc != 0:
        failed.append(f"{name}: {args}: exit {int(rc)}: {out.getvalue()[-1500:]}")
print(json.dumps(failed))
"""


def test_every_step_is_listed_and_prints_commands(tmp_path):
    names = steps()
    assert {"kernelpath", "kernelsweep", "training", "cross", "all"} <= set(names)
    cases = re.findall(r"^  (\w+)\)", SCRIPT.read_text(), re.M)  # the case's labels
    assert sorted(cases) == sorted(names), "the header's list of steps and the script's differ"
    for name in names:  # each step alone prints at least one command
        assert commands(tmp_path, [name]), f"step {name} printed no command"


def collect_env() -> dict:
    """The environment of a process that collects tests as the GPU session would, under
    the simulator: not an xdist worker's (pytest-benchmark, finding PYTEST_XDIST_WORKER,
    disables benchmarks and then refuses --benchmark-only)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    return {**env, "PYTHONPATH": str(ROOT), "NUMBA_ENABLE_CUDASIM": "1"}


def test_every_command_of_every_step_would_start(tmp_path):
    """One process parses every benchmark's and the harness's arguments, and another has
    pytest collect each test step's selection (at least one test each)."""
    cmds = commands(tmp_path, [s for s in steps() if s != "all"])
    parse, collect = [], []
    for name, cmd in cmds:
        argv = argv_of(cmd)
        if argv[:2] == ["-m", "pytest"]:
            collect.append((name, argv[2:]))
        elif argv[0] == "-m":
            spec = importlib.util.find_spec(argv[1])
            assert spec is not None, f"{name}: no module {argv[1]}"
            if "parse_args" in Path(spec.origin).read_text() or \
                    (Path(spec.origin).parent / "__main__.py").exists():
                parse.append(("module", argv[1], argv[2:]))
        else:
            path = ROOT / argv[0]
            assert path.exists(), f"{name}: no file {argv[0]}"
            if "parse_args" in path.read_text():
                parse.append(("path", str(path), argv[1:]))
    env = collect_env()
    p = subprocess.run([sys.executable, "-c", PARSE_ONLY, json.dumps(parse)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [], p.stdout + p.stderr
    assert len(parse) >= 15  # the benchmarks, the harness sweeps and tunes
    p = subprocess.run([sys.executable, "-c", COLLECT, json.dumps(collect)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    assert len(collect) >= 8 and json.loads(p.stdout.strip().splitlines()[-1]) == [], \
        p.stdout[-6000:] + p.stderr[-2000:]


# The node ids each (step, pytest arguments) would run, collected in one process.
SELECTED = r"""
import contextlib, io, json, sys
import pytest
class Keep:
    ids = []
    def pytest_collection_finish(self, session):
        self.ids = [item.nodeid for item in session.items]
found = {}
for name, args in json.loads(sys.argv[1]):
    keep = Keep()
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *args], plugins=[keep])
    found[name] = keep.ids
print(json.dumps(found))
"""


def without_xdist(args: list[str]) -> list[str]:
    """pytest's arguments less -n N and --dist D (collected here in one process)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-n", "--dist"):
            skip = True
        else:
            out.append(a)
    return out


def test_the_suite_and_alone_run_every_test_of_the_cuda_device(tmp_path):
    """Issue 13's "whole suite on a GPU": steps suite and alone, between them, select every
    test marked `cuda` (the cuda device, GPU or simulator: tests/gpu.py's CUDA_OR_SIM) or
    `gpu` (a real GPU only), whatever the test is called. A fault test of the kernel path
    whose name said neither had been left out of the suite of 2026-11-27."""
    runs = [(name, without_xdist(argv_of(cmd)[2:]))
            for name, cmd in commands(tmp_path, ["suite", "alone"])]
    runs.append(("marked", ["tests", "-m", "cuda or gpu"]))
    env = collect_env()
    p = subprocess.run([sys.executable, "-c", SELECTED, json.dumps(runs)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    found = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(found["marked"]) > 150 and found["suite"] and found["alone"], \
        {k: len(v) for k, v in found.items()}
    left_out = set(found["marked"]) - set(found["suite"]) - set(found["alone"])
    assert not left_out, sorted(left_out)


def test_acceptance_reads_the_h200_comparison_as_the_results_say():
    """tools/acceptance.py on the committed H200 run (NCCL 2.30.7, commit 39d2af7): the
    figures results/h200/README.md quotes, and every point failing as it did then."""
    import subprocess
    import sys
    runs = [f"results/h200/allreduce-{k}ranks-nccl230-mps.json" for k in (2, 4)]
    out = subprocess.run([sys.executable, "tools/acceptance.py", *runs], capture_output=True,
                         text=True, check=True).stdout
    assert "52: ring vs NCCL, 8 B - 1 MiB: worst 0.21x at 512 KiB (need 1.0x) FAILS" in out
    assert "53: ring vs NCCL, 8 MiB - 256 MiB: worst 0.64x at 256 MiB (need 1.3x) FAILS" in out
    assert "52: ring's 8 B at 2 processes 49.4 us (need <= 12) FAILS" in out
    assert "the ring alone vs NCCL, 32 MiB - 256 MiB: not run" in out
    assert "HOLDS" not in out and out.count("#wrong 0") == 2


def test_acceptance_updates_the_summary_keys(tmp_path):
    import json
    import subprocess
    import sys
    summary = tmp_path / "s.json"
    summary.write_text(json.dumps({"kept": 1}))
    run = "results/h200/allreduce-2ranks-nccl230-mps.json"
    subprocess.run([sys.executable, "tools/acceptance.py", run, "--update", str(summary)],
                   capture_output=True, text=True, check=True)
    s = json.loads(summary.read_text())
    assert s["kept"] == 1 and s["allreduce_8B_us_k2"] == {"ring": 49.4, "nccl": 17.0, "mpi": 30.0}
    assert s["allreduce_8B_us_comm_k2"] == 49.4 and s["nccl_version"] == "2.30.7"
    assert s["allreduce_k2_vs_nccl"]["256MB"] == 0.64 and s["git_commit"].startswith("39d2af7")


def test_acceptance_holds_no_point_of_a_run_with_wrong_results(tmp_path):
    """The H200 run with ring made 100x faster holds issue 52's points; one wrong result
    anywhere in it (here MPI's, which no point reads) and every point fails, --update refused."""
    data = json.loads(Path("results/h200/allreduce-2ranks-nccl230-mps.json").read_text())
    for r in data["results"]:
        if r["impl"] == "ring":
            r["time_us"] /= 100
    fast = tmp_path / "fast.json"
    fast.write_text(json.dumps(data))
    out = subprocess.run([sys.executable, "tools/acceptance.py", str(fast)],
                         capture_output=True, text=True, check=True).stdout
    assert "52: ring vs NCCL, 8 B - 1 MiB: worst" in out and "HOLDS" in out, out
    odd = next(r for r in data["results"] if r["impl"] == "mpi")
    odd["wrong"] = 1
    fast.write_text(json.dumps(data))
    summary = tmp_path / "s.json"
    summary.write_text("{}")
    p = subprocess.run([sys.executable, "tools/acceptance.py", str(fast), "--update",
                        str(summary)], capture_output=True, text=True)
    assert p.returncode == 1 and "HOLDS" not in p.stdout, p.stdout
    assert "FAILS (#wrong 1 in this run)" in p.stdout and "not updated" in p.stdout
    assert summary.read_text() == "{}"


def _comparison(path: Path, k: int, ratios: dict, vs_min=None, extra=()) -> str:
    """A harness JSON of k processes: per (impl, size) NCCL's time over impl's (ring's time
    100 us, NCCL's 100 x the ratio: exact in binary at the thresholds), vs_min at 256 MiB."""
    rows = []
    for (impl, n), ratio in ratios.items():
        base = {"collective": "allreduce", "dtype": "float32", "op": "sum", "in_place": False,
                "nbytes": n, "wrong": 0, "skipped": None, "algo": "twoshot"}
        rows.append({**base, "impl": impl, "time_us": 100.0,
                     "vs_min": vs_min if (impl, n) == ("ring", 256 << 20) else None})
        if impl == "ring":
            rows.append({**base, "impl": "nccl", "time_us": 100.0 * ratio, "vs_min": None})
        else:  # (ring-flat: NCCL's row is ring's, which has the same size)
            rows[-1]["time_us"] = next(r["time_us"] for r in rows
                                       if (r["impl"], r["nbytes"]) == ("nccl", n)) / ratio
    rows += [dict(r) for r in extra]
    path.write_text(json.dumps({"meta": {"ranks": k, "command": "mpiexec ..."},
                                "results": rows}))
    return str(path)


def test_acceptance_reads_each_point_at_its_sizes_and_threshold(tmp_path):
    """Every point of issues 52 and 53 on made-up runs, at its thresholds exactly: a ratio
    equal to what is needed holds, one below fails, sizes outside a point's range and rows
    of another dtype or in place are not read; the ring alone needs 1.0x at 2 processes
    and 0.95x at 4; 256 MiB at 4 processes 0.75 of the 2N minimum."""
    MIB = 1 << 20
    small = {("ring", n): 1.0 for n in (8, 1024, MIB)}
    mid = {("ring", n): 1.0 for n in (2 * MIB, 4 * MIB)}
    large = {("ring", 8 * MIB): 1.3, ("ring", 64 * MIB): 1.29, ("ring", 256 * MIB): 1.4}
    alone = {("ring-flat", 16 * MIB): 0.5, ("ring-flat", 32 * MIB): 0.95,
             ("ring-flat", 256 * MIB): 1.0}
    ring16 = {("ring", 16 * MIB): 2.0, ("ring", 32 * MIB): 2.0}
    odd = [{"collective": "allreduce", "dtype": dt, "op": "sum", "in_place": ip,
            "nbytes": 1024, "wrong": 0, "skipped": None, "impl": "ring", "time_us": 1e6,
            "algo": "ring"} for dt, ip in (("float16", False), ("float32", True))]
    four = _comparison(tmp_path / "k4.json", 4, {**small, **mid, **large, **ring16, **alone},
                       vs_min=0.74, extra=odd)
    two = _comparison(tmp_path / "k2.json", 2, {**small, **mid, **large, **ring16, **alone},
                      vs_min=0.74)
    out = subprocess.run([sys.executable, "tools/acceptance.py", two, four],
                         capture_output=True, text=True, check=True).stdout
    k2, k4 = out.split("== 4 processes")
    for part in (k2, k4):
        assert "52: ring vs NCCL, 8 B - 1 MiB: worst 1.00x at 8 B (need 1.0x) HOLDS" in part
        assert "53: ring vs NCCL, 1 MiB - 8 MiB: worst 1.00x at 1 MiB (need 1.0x) HOLDS" in part
        assert "53: ring vs NCCL, 8 MiB - 256 MiB: worst 1.29x at 64 MiB (need 1.3x) FAILS" \
            in part
    assert "the ring alone vs NCCL, 32 MiB - 256 MiB: worst 0.95x at 32 MiB (need 1.0x) " \
        "FAILS" in k2
    assert "the ring alone vs NCCL, 32 MiB - 256 MiB: worst 0.95x at 32 MiB (need 0.95x) " \
        "HOLDS" in k4
    assert "53: 256 MiB at 4 processes, 0.74 of the 2N minimum (twoshot; need 0.75) FAILS" \
        in k4 and "2N minimum" not in k2
    four = _comparison(tmp_path / "k4.json", 4, {**large, **ring16}, vs_min=0.75)
    out = subprocess.run([sys.executable, "tools/acceptance.py", four],
                         capture_output=True, text=True, check=True).stdout
    assert "0.75 of the 2N minimum (twoshot; need 0.75) HOLDS" in out
    assert "52: ring vs NCCL, 8 B - 1 MiB: not run" in out


def test_acceptance_reads_the_kept_calls_enqueue_from_profile_call(tmp_path):
    """benchmarks/profile_call.py's --json: enqueue_us_comm_k2 (issue 52: <= 5 us) from the
    run with the default launch and algorithm, the others' under suffixed keys, and a
    simulator's run never taken as a GPU figure."""
    import json
    import subprocess
    import sys

    def profile(name, enqueue, env=None, **kw):
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps({
            "meta": {"command": f"python profile_call.py {name}", "environment": env or {},
                     "git_commit": "abc"},
            "what": name, "api": "communicator", "device": "cuda", "ranks": 2,
            "path": "kernel", "algorithm": "auto", "nbytes": 8, "launch": "driver",
            "no_launch": False, "blocking": False, "enqueue_us": enqueue, **kw}))
        return str(p)
    files = [profile("comm", 6.5), profile("graph", 4.5, {"RING_LAUNCH": "graph"}, launch="graph"),
             profile("nolaunch", 3.1, no_launch=True),
             profile("oneshot", 6.0, algorithm="oneshot"),
             profile("sim", 1.0, {"NUMBA_ENABLE_CUDASIM": "1"}, ranks=4)]
    summary = tmp_path / "s.json"
    summary.write_text("{}")
    out = subprocess.run([sys.executable, "tools/acceptance.py", *files, "--update",
                          str(summary)], capture_output=True, text=True, check=True).stdout
    assert "enqueue at 2 processes 6.5 us, launch driver (need <= 5) FAILS" in out
    assert "sim: under Numba's simulator, not a GPU figure: skipped" in out
    s = json.loads(summary.read_text())
    assert s["enqueue_us_comm_k2"] == 6.5 and s["enqueue_us_comm_k2_graph"] == 4.5
    assert s["enqueue_us_comm_k2_nolaunch"] == 3.1 and s["enqueue_us_comm_k2_oneshot"] == 6.0
    assert not any(k.startswith("enqueue_us_comm_k4") for k in s)
    files[0] = profile("comm", 4.9)
    out = subprocess.run([sys.executable, "tools/acceptance.py", files[0]],
                         capture_output=True, text=True, check=True).stdout
    assert "(need <= 5) HOLDS" in out


def test_out_unset_is_refused_on_a_gpu_and_a_dry_run_writes_into_a_temporary_folder():
    """The files that come back are $OUT's: unset, a GPU session stops at once (exit 2)
    rather than write at /; a DRY run (CI's) gets a temporary folder, its steps' paths
    under it."""
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    out = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env=dict(env, STEPS="profile"))
    assert out.returncode == 2 and "OUT" in out.stderr, out.stdout + out.stderr
    out = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env=dict(env, DRY="1", STEPS="profile"))
    assert out.returncode == 0, out.stdout + out.stderr
    paths = re.findall(r"--json (\S+)", out.stdout)
    assert paths and all(not p.startswith("/profile") and "/profile/" in p for p in paths)
