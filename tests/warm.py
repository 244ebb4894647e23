"""Compile what the multi-rank jobs would otherwise compile in every rank at once, into
Numba's on-disk cache: the host's float16 / bfloat16 loops (ring/host/half.py), the
compiled exchange rounds (ring/host/compiled_round.py, compiled_cma.py) and ring walk
(ring/host/compiled_walk.py), the int8 loops (ring/training/quantize.py). A fresh clone
would compile them (~15 s each) in every rank of the first job that uses them, while its
peers wait (some tests' peers time out at 2 s). Each pytest session calls warm() first
(tests/conftest.py; quick once the cache holds them); `python -m tests.warm` does it alone.

Numba compiles on one core, so a session's first warm() (the controller's, before the
pytest-xdist workers start) sends PARTS[1:] to processes of their own and compiles PARTS[0]
itself: on a fresh clone, about half the time of one after the other."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

from .mpirun import ROOT

# modules with a warm() of their own, in parts that take about as long to compile
# (on this machine, cold: compiled_round 46 s, compiled_walk 15, topk 1; compiled_cma 46,
# half 14, quantize 2)
PARTS = (("ring.host.compiled_round", "ring.host.compiled_walk", "ring.training.topk"),
         ("ring.host.compiled_cma", "ring.host.half", "ring.training.quantize"))
EVERY = tuple(m for part in PARTS for m in part)


def _warm(modules) -> None:
    for name in modules:
        importlib.import_module(name).warm()


# what an MPI launcher sets in each rank's environment (MPICH's hydra, Open MPI, PMIx)
LAUNCHED = ("PMI_RANK", "PMI_FD", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")


def warm() -> None:
    # an xdist worker: the controller has warmed the cache; a rank of an inner suite run
    # by hand under mpiexec (a deep run, a GPU session's step inner): a process started
    # from it inherits the rank's launcher settings, and its MPI_Init fails on them
    if os.environ.get("PYTEST_XDIST_WORKER") or any(v in os.environ for v in LAUNCHED):
        _warm(EVERY)
        return
    others = [subprocess.Popen([sys.executable, "-m", "tests.warm", *part], cwd=ROOT)
              for part in PARTS[1:]]
    _warm(PARTS[0])
    failed = [p.args for p in others if p.wait() != 0]
    if failed:
        raise RuntimeError(f"tests/warm.py: compiling failed in {failed}")


if __name__ == "__main__":
    _warm(sys.argv[1:] or EVERY)
