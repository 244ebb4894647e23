"""Metadata written with every result file: what ran, where, with which versions."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from mpi4py import MPI


def version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def git_commit() -> str | None:
    """What RING_GIT_COMMIT names, when set (tools/gpu-session.sh is run with it: the copy of
    the tree on a lent GPU machine may carry a stale .git, which once named the session's
    first commit for runs of later ones); else HEAD of the checkout, with "+changes" when
    tracked files outside results/ differ from it (the figures are then not that commit's;
    result files, which a series of runs rewrites one after another, do not count)."""
    named = os.environ.get("RING_GIT_COMMIT")
    if named:
        return named
    try:
        root = Path(__file__).resolve().parent.parent
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=5)
        if out.returncode == 0 and out.stdout.strip():
            changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no",
                                      "--", ".", ":!results"],  # a sweep rewrites results/
                                     cwd=root, capture_output=True, text=True, timeout=5)
            dirty = changed.returncode == 0 and changed.stdout.strip()
            return out.stdout.strip() + ("+changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def gpu() -> dict:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=10)
        name, driver, mem = [s.strip() for s in out.stdout.splitlines()[0].split(",")]
        return {"gpu": name, "driver": driver, "gpu_memory": mem}
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return {"gpu": None}


def cuda_versions() -> dict:
    try:
        import cupy as cp
        v = cp.cuda.runtime.runtimeGetVersion()
        d = cp.cuda.runtime.driverGetVersion()
        out = {"cuda_runtime": f"{v // 1000}.{v % 1000 // 10}", "cuda_driver_api": f"{d // 1000}.{d % 1000 // 10}"}
        try:
            from cupy.cuda import nccl
            n = nccl.get_version()
            out["nccl"] = f"{n // 10000}.{n // 100 % 100}.{n % 100}"
        except Exception:  # CuPy built without NCCL
            out["nccl"] = None
        return out
    except Exception:  # no CuPy or no GPU: nothing to report
        return {"cuda_runtime": None, "nccl": None}


def versions() -> dict:
    return {d: version(d) for d in ("ring", "numpy", "numba", "numba-cuda", "mpi4py", "mpich",
                                    "cupy-cuda12x", "cupy-cuda13x", "ml_dtypes", "torch")}


# The environment that shapes a run without showing in its command line: ring's own
# settings (RING_NODES emulates nodes, RING_KERNEL_* pick kernel variants) and the MPI
# runtime's (MPICH's MPIR_CVAR_*, UCX_* and libfabric's FI_* choose the links between
# processes: shared memory, or TCP over loopback), and the GPU's sharing (CUDA_MPS_*).
SETTINGS = ("RING_", "MPIR_CVAR_", "UCX_", "FI_", "CUDA_MPS_", "NUMBA_ENABLE_CUDASIM")


def settings() -> dict:
    """The variables of SETTINGS set for this run (RING_GIT_COMMIT is the commit's field)."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith(SETTINGS) and k != "RING_GIT_COMMIT"}


def loopback() -> str | None:
    """The loopback's queueing discipline (`tc qdisc show dev lo`): TCP between emulated
    nodes runs over it, and benchmarks/shaped_links.sh shapes it to a rate; None where tc
    cannot say."""
    try:
        out = subprocess.run(["tc", "qdisc", "show", "dev", "lo"], capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def describe(argv, cuda: bool = True) -> dict:
    """What any result file records: when, where, the command, the commit and the versions
    (with the GPU's CUDA and NCCL versions when cuda)."""
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "versions": versions(),
        "command": " ".join(argv),
        "environment": settings(),
        "loopback_qdisc": loopback(),
        "git_commit": git_commit(),
        "python": platform.python_version(),
    }
    info.update(gpu())
    if cuda:
        info.update(cuda_versions())
    return info


def collect(world: MPI.Comm, impls, argv, device: str) -> dict:
    info = {
        "device": device,
        "ranks": world.size,
        "implementations": {i.name: i.label for i in impls},
        "mpi_library": MPI.Get_library_version().splitlines()[0].strip(),
    }
    info.update(describe(argv, cuda=device == "cuda"))
    return info
