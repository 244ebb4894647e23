"""Launch a command under mpiexec from a test, always under a wall-clock limit.

On timeout the whole process group is killed, so a hung rank fails the test instead of
stalling CI and leaves no process behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV_DUMP = "RING_TEST_INNER_DUMP"


def mpiexec() -> str:
    exe = Path(sys.executable).parent / "mpiexec"
    return str(exe) if exe.exists() else (shutil.which("mpiexec") or "mpiexec")


def run(nprocs: int, args: list[str], timeout: float = 300, env: dict | None = None,
        mpi_args: list[str] | None = None):
    """Run `python args...` on nprocs ranks; return (returncode, combined output)."""
    full_env = dict(os.environ)
    full_env.update({
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "PYTHONUNBUFFERED": "1",
        "PYTHONHASHSEED": "0",
        "HYDRA_LAUNCHER": "fork",  # no ssh, even when the host name resolves oddly
    })
    full_env.update(env or {})
    cmd = [mpiexec(), *(mpi_args or []), "-n", str(nprocs), sys.executable, *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, f"TIMEOUT after {timeout} s: {' '.join(cmd)}\n{out}"
    except BaseException:  # interrupted (Ctrl-C, a step's limit): leave no rank behind
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return proc.returncode, out


def pytest_under_mpi(nprocs: int, target: str | list[str], timeout: float = 300,
                     env: dict | None = None, extra: list[str] | None = None):
    """Run the inner test module `target` (tests/mpi/check_*.py; or several, in one job) on
    every rank. Returns
    (returncode, output, reports): one dict per rank that finished, its pytest outcome
    counts ({"rank": 0, "passed": 38, "skipped": 0, ...}, written by tests/mpi/conftest.py)."""
    # no:logging: ring's per-call log records (read by tests/mpi/conftest.py) are not kept
    # RING_TEST_INNER_DUMP=s: every rank prints its threads' stacks once an inner test has
    # run s seconds (pytest's faulthandler), which a failure's message then leads with: where
    # each rank of a hang waited (a GPU session sets it; a rank that MPI_Abort ends writes
    # no report of its own)
    dump = (env or {}).get(ENV_DUMP) or os.environ.get(ENV_DUMP)
    targets = [target] if isinstance(target, str) else list(target)
    args = ["-m", "pytest", *targets, "-x", "-q", "-p", "no:cacheprovider", "-p", "no:logging",
            "-o", "python_files=check_*.py", "-o", "addopts=", "-o", "timeout=0",
            *(["-o", f"faulthandler_timeout={float(dump)}"] if dump else []), *(extra or [])]
    with tempfile.TemporaryDirectory(prefix="ring-inner-") as where:
        rc, out = run(nprocs, args, timeout, {**(env or {}), "RING_INNER_REPORT": where})
        reports = [json.loads(p.read_text()) for p in sorted(Path(where).glob("rank-*.json"))]
    return rc, out, reports


DUMP_HEAD = "Timeout ("  # how faulthandler starts a dump ("Timeout (0:00:50)!")


def failure_text(out: str, tail: int = 8000, dumps: int = 12000) -> str:
    """What a failed inner run shows: the stacks dumped under RING_TEST_INNER_DUMP, if any
    (from the first, up to `dumps` characters), then the output's last `tail` characters."""
    at = out.find(DUMP_HEAD)
    if at < 0 or at >= len(out) - tail:
        return out[-tail:]
    return f"{out[at:at + dumps]}\n[... stacks dumped under {ENV_DUMP}; the output's end:]\n{out[-tail:]}"


def assert_inner_passed(rc, out: str, reports: list[dict], nprocs: int) -> None:
    """The inner run passed on every rank, ran tests there and skipped none: a skip inside
    an mpiexec job would otherwise pass unseen in the outer count."""
    assert rc == 0, failure_text(out)
    assert len(reports) == nprocs, f"{len(reports)} of {nprocs} ranks reported\n{out[-4000:]}"
    for rep in reports:
        assert rep.get("passed", 0) > 0, f"rank {rep['rank']} ran no tests: {rep}\n{out[-4000:]}"
        assert not rep.get("skipped"), f"inner tests skipped: {rep}\n{out[-8000:]}"
