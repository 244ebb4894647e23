"""Multi-rank tests: each launches the inner tests of tests/mpi under mpiexec with a
wall-clock limit, so a hang fails the test instead of stalling the run."""

import pytest

from .mpirun import pytest_under_mpi

INNER = {"collectives": "tests/mpi/check_collectives.py", "errors": "tests/mpi/check_errors.py",
         "harness": "tests/mpi/check_harness.py", "lifetime": "tests/mpi/check_lifetime.py"}
ENV = {"RING_INNER_MPI": "1"}


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
@pytest.mark.parametrize("suite", list(INNER))
def test_on_ranks(suite, nprocs):
    rc, out = pytest_under_mpi(nprocs, INNER[suite], timeout=420, env=ENV)
    assert rc == 0, out[-8000:]


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [3, 4])
def test_fuzz(nprocs):
    """Property-based: random (ranks <= nprocs, count, dtype, op, chunk, slots, in place,
    collective), every rank drawing the same examples."""
    rc, out = pytest_under_mpi(nprocs, "tests/mpi/check_fuzz.py", timeout=420, env=ENV)
    assert rc == 0, out[-8000:]


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs,nodes", [(2, 2), (4, 2), (3, 3)])
def test_across_emulated_nodes(nprocs, nodes):
    """RING_NODES splits the ranks into nodes that talk only through MPI point-to-point."""
    rc, out = pytest_under_mpi(nprocs, INNER["collectives"], timeout=420,
                               env={**ENV, "RING_NODES": str(nodes)},
                               extra=["-k", "float32 or int64 or uint8 or shapes or repeated or slots"])
    assert rc == 0, out[-8000:]
