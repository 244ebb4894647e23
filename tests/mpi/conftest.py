"""Fixtures for the inner tests, which run on every rank of an mpiexec job."""

import numpy as np
import pytest
from mpi4py import MPI

import ring

# Small chunks, so that tiny arrays still travel in several chunks through the slots.
CHUNK = 256
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def world():
    return MPI.COMM_WORLD


@pytest.fixture(scope="module")
def comm():
    c = ring.Communicator(device="host", timeout=TIMEOUT, chunk_bytes=CHUNK)
    yield c
    c.close()


_status = {"exit": 0}


def pytest_sessionfinish(session, exitstatus):
    _status["exit"] = int(exitstatus)


def pytest_unconfigure(config):
    """A rank whose tests failed aborts the whole job once its report is printed, so the
    other ranks are never left waiting in a collective for it (mpi4py's habit)."""
    if _status["exit"] not in (0, 5) and MPI.COMM_WORLD.size > 1:
        import sys
        sys.stdout.flush()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(_status["exit"])


def same_everywhere(world, a: np.ndarray) -> bool:
    blobs = world.allgather(a.tobytes())
    return all(b == blobs[0] for b in blobs)
