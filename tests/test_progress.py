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


def test_callbacks_run_before_wait_returns_and_a_bad_one_stops_nothing():
    p = Progress("test")
    gate, got = threading.Event(), []
    task = p.submit(lambda: gate.wait(5) and 3)
    task.on_done(lambda v, e: 1 / 0)
    task.on_done(lambda v, e: got.append((v, e)))
    gate.set()
    assert task.wait() == 3 and got == [(3, None)]
    task.on_done(lambda v, e: got.append("late"))  # already run: at once
    assert got[-1] == "late"
    assert p.submit(lambda: 4).wait() == 4  # the thread lives on
    p.close()


class _Pending:
    """A queued call (the cuda device's) whose wait raises `error`, or returns."""

    def __init__(self, error=None):
        self.error = error

    def wait(self, waiter):
        if self.error is not None:
            raise self.error

    def query(self):
        return True


class _Comm:
    def __init__(self):
        self._ctx = type("Ctx", (), {"waiter": Waiter(1.0)})()
        self.broken = []

    def _broken(self, e):
        self.broken.append(e)


def test_a_done_callback_of_a_queued_call_runs_once():
    """Work.add_done_callback on a call not on the progress thread: fn(result, None), or
    fn(None, the call's error) with the communicator broken; an error of fn's own is the
    caller's, fn not called again with it as if it were the call's."""
    from ring.communicator import Work
    got = []
    Work(7, _Pending(), _Comm()).add_done_callback(lambda r, e: got.append((r, e)))
    assert got == [(7, None)]
    comm, lost = _Comm(), RuntimeError("peer lost")
    Work(7, _Pending(lost), comm).add_done_callback(lambda r, e: got.append((r, e)))
    assert got[-1] == (None, lost) and comm.broken == [lost]

    def bad(r, e):
        got.append((r, e))
        raise KeyError("the callback's own bug")
    got.clear()
    with pytest.raises(KeyError, match="own bug"):
        Work(7, None, _Comm()).add_done_callback(bad)
    assert got == [(7, None)]
