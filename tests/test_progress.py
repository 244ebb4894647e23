"""The progress thread (ring/progress.py) and the napping wait it runs under (ring/wait.py),
without MPI; the communicator's use of them: tests/mpi/check_collectives.py (async calls
run behind the caller, in order) and check_errors.py (their errors at wait())."""

import threading

import pytest

from ring.progress import Progress
from ring.wait import Waiter, napping


def test_tasks_run_in_order_behind_the_caller():
    p = Progress("test")
    gate, seen = threading.Event(), []
    first = p.submit(lambda: (gate.wait(5), seen.append(1), "a")[-1])
    second = p.submit(lambda: seen.append(2) or "b")
    assert not first.query() and not p.idle()  # the caller is not held up
    gate.set()
    assert second.wait() == "b" and first.wait() == "a" and seen == [1, 2]
    assert p.idle()
    p.close()


def test_an_error_comes_from_wait_and_the_next_task_still_runs():
    p = Progress("test")
    bad = p.submit(lambda: 1 / 0)
    good = p.submit(lambda: 7)
    p.drain()
    with pytest.raises(ZeroDivisionError):
        bad.wait()
    assert good.wait() == 7
    p.close()


def test_napping_waits_only_sleep_and_restores():
    w = Waiter(1.0)
    before = (w.spins, w.yields)
    assert all(before)
    with napping(w):
        assert (w.spins, w.yields) == (0, 0)
        w.start("test")
        w.until(lambda: True, lambda: "")
    assert (w.spins, w.yields) == before
