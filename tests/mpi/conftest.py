"""Fixtures for the inner tests, which run on every rank of an mpiexec job."""

import json
import logging
import os
import shutil
import tempfile
from contextlib import contextmanager

import numpy as np
import pytest
from mpi4py import MPI

import ring

from .. import reference

# Small chunks, so that tiny arrays still travel in several chunks through the slots.
CHUNK = 256
# Across (emulated) nodes an MPI link sends chunks of options.DIRECT_MIN_BYTES and more from
# the arrays themselves, smaller ones through its slots; the tests' chunks are tiny, so
# RING_TEST_DIRECT=1 (tests/test_mpi.py) sends every chunk direct.
if os.environ.get("RING_TEST_DIRECT") == "1":
    from ring.host import executor
    executor.DIRECT_MIN_BYTES = 0
TIMEOUT = 60.0
NO_RULES = os.path.join(os.path.dirname(__file__), "no-rules.json")


@pytest.fixture(scope="module")
def world():
    return MPI.COMM_WORLD


@pytest.fixture(scope="module")
def comm():
    """A host communicator whose "auto" has no tuning rules: the two-level or flat ring,
    what these tests check bit for bit (the shipped table's choices: test_tuning.py and
    check_collectives' algorithm tests)."""
    c = ring.Communicator(device="host", timeout=TIMEOUT, chunk_bytes=CHUNK, tuning=NO_RULES)
    yield c
    c.close()


_status = {"exit": 0}


def pytest_sessionfinish(session, exitstatus):
    _status["exit"] = int(exitstatus)
    _report(session)


def _report(session) -> None:
    """This rank's outcome counts, for the outer test (tests/mpirun.py) to read: a skip
    inside an mpiexec job is invisible in the outer run otherwise."""
    where = os.environ.get("RING_INNER_REPORT")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if not where or reporter is None:
        return
    rank = MPI.COMM_WORLD.rank
    counts = {k: len(v) for k, v in reporter.stats.items() if k in
              ("passed", "failed", "skipped", "error", "xfailed", "xpassed")}
    with open(os.path.join(where, f"rank-{rank}.json"), "w") as f:
        json.dump({"rank": rank, **counts}, f)


def pytest_unconfigure(config):
    """A rank whose tests failed aborts the whole job once its report is printed, so the
    other ranks are never left waiting in a collective for it (mpi4py's habit)."""
    if _status["exit"] not in (0, 5) and MPI.COMM_WORLD.size > 1:
        import sys
        sys.stdout.flush()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(_status["exit"])


@contextmanager
def shared_folder(comm, prefix: str):
    """A temporary folder that rank 0 of comm makes and every rank is told; once every rank
    has left the block, it goes (not after an error: a rank that raised may leave the others
    short of the barrier)."""
    where = comm.bcast(tempfile.mkdtemp(prefix=prefix) if comm.rank == 0 else None)
    yield where
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(where, ignore_errors=True)


def same_everywhere(world, a: np.ndarray) -> bool:
    blobs = world.allgather(a.tobytes())
    return all(b == blobs[0] for b in blobs)


# -- which algorithm must run, and which did --------------------------------------------

def emulated_nodes(size: int) -> int:
    """Nodes the ranks of COMM_WORLD form here: RING_NODES=N splits this one machine into
    min(N, size) nodes of consecutive ranks (1 without it)."""
    n = int(os.environ.get("RING_NODES") or 1)
    return min(n, size)


def two_level_nodes(size: int) -> int:
    """N when "auto" must take the two-level algorithm on the world communicator (N equal
    nodes of at least two ranks each), else 1. Worked out from the layout alone, not by
    asking the communicator, so a communicator that wrongly refuses two-level is caught."""
    n = emulated_nodes(size)
    return n if n >= 2 and size % n == 0 and size // n >= 2 else 1


class _Calls(logging.Handler):
    """Keeps the latest per-call record of ring's log (RING_DEBUG=INFO's lines); only the
    latest, so that the lifetime tests' thousands of calls do not look like a leak."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.last: dict | None = None

    def emit(self, record):
        call = getattr(record, "ring_call", None)
        if call is not None:
            self.last = call


CALLS = _Calls()
logging.getLogger("ring").addHandler(CALLS)
logging.getLogger("ring").setLevel(logging.INFO)


def last_call() -> dict:
    """The record of this rank's latest completed collective call."""
    assert CALLS.last is not None, "no collective call was logged"
    return CALLS.last


def assert_ran(algorithm: str, collective: str | None = None) -> None:
    call = last_call()
    assert call["algorithm"] == algorithm, f"expected {algorithm}, ran {call}"
    if collective is not None:
        assert call["collective"] == collective, call


def arguments(collective, inputs, r, root, in_place):
    """(x, out) for rank r: out None, or at the in-place position (call.py's) where the
    rank has one (reduce, gather, scatter: the root's only; broadcast: always); in_place
    "given": an out of its own where the rank writes one. (check_collectives.py,
    check_sequences.py)"""
    x = inputs[r].copy()
    k = len(inputs)
    if in_place == "given":
        want = reference.expected(collective, inputs, root=root)[r]
        return x, None if want is None or collective == "broadcast" else np.empty_like(want)
    if not in_place or collective == "broadcast":
        return x, None
    if collective in ("allgather", "gather"):
        if collective == "gather" and r != root:
            return x, None
        out = np.zeros(k * x.size, x.dtype)
        out[r * x.size:(r + 1) * x.size] = x
        return out[r * x.size:(r + 1) * x.size], out
    b = x.size // k
    if collective in ("reduce_scatter", "scatter"):
        return (x, x[r * b:(r + 1) * b]) if collective == "reduce_scatter" or r == root \
            else (x, None)
    return (x, x) if collective in ("alltoall", "allreduce") or r == root else (x, None)
