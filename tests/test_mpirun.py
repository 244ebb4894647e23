"""tests/mpirun.py: a failed inner run's message leads with the stacks that ranks dumped
under RING_TEST_INNER_DUMP (a GPU session's hang shows where each rank waited)."""

import pytest

from .mpirun import ENV_DUMP, failure_text, pytest_under_mpi, run


def test_the_failure_text_is_the_tail_without_dumps():
    out = "x" * 100 + "the end"
    assert failure_text(out, tail=7) == "the end"
    assert failure_text("short") == "short"


def test_the_failure_text_leads_with_dumps_the_tail_would_cut():
    dump = "Timeout (0:00:50)!\nThread 0x1 (most recent call first):\n  File \"w.py\", line 3 in until\n"
    out = "start\n" + dump + "y" * 50 + "the end"
    text = failure_text(out, tail=10, dumps=len(dump))
    assert text.startswith(dump) and text.endswith("the end")
    assert failure_text(out, tail=len(out)) == out  # the tail holds them already


@pytest.mark.mpi
def test_an_inner_test_past_the_dump_time_prints_where_it_waits():
    rc, out, reports = pytest_under_mpi(2, "tests/mpi/check_slow.py", timeout=120,
                                        env={ENV_DUMP: "1", "RING_TEST_SLOW_S": "3"})
    assert rc != 0 and [r["failed"] for r in reports] == [1, 1], out[-3000:]
    text = failure_text(out, tail=200)
    assert text.count("Timeout (0:00:01)") == 2, text  # one dump per rank
    assert "in test_waits_past_the_dump_then_fails" in text, text


@pytest.mark.mpi
def test_an_inner_suite_run_by_hand_under_mpiexec_starts():
    """`mpiexec -n 2 python -m pytest tests/mpi/check_*.py`, as a deep run and a GPU
    session's step inner start one (docs/testing.md): each rank's session start warms
    Numba's cache in the rank itself (tests/warm.py). A process of its own, started from a
    rank, took the rank's launcher settings and failed in MPI_Init (an INTERNALERROR on
    every rank before any test)."""
    rc, out = run(2, ["-m", "pytest", "tests/mpi/check_collectives.py", "-q", "-p",
                      "no:cacheprovider", "-o", "python_files=check_*.py", "-o", "addopts=",
                      "-k", "test_shapes_and_the_returned_object"],
                  # (as by hand: not an xdist worker's, whose ranks the controller warmed)
                  timeout=120, env={"RING_INNER_MPI": "1", "PYTEST_XDIST_WORKER": ""})
    assert rc == 0 and out.count("1 passed") == 2, out[-3000:]
