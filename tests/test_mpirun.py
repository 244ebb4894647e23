"""tests/mpirun.py: a failed inner run's message leads with the stacks that ranks dumped
under RING_TEST_INNER_DUMP (a GPU session's hang shows where each rank waited)."""

import pytest

from .mpirun import ENV_DUMP, failure_text, pytest_under_mpi


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
