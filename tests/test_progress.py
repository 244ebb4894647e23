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


class _Later:
    """A queued call's work (the cuda device's) done once `done` is set."""

    def __init__(self):
        self.done = threading.Event()

    def query(self):
        return self.done.is_set()

    def wait(self, waiter):
        waiter.until(self.query, lambda: "the GPU")


def test_a_wait_with_a_timeout_gives_up_without_breaking_anything():
    """Work.wait(timeout) on a queued call and on a host call still on the progress
    thread: ring.TimeoutError once the time has passed, the communicator not broken, the
    call still pending; the next wait() gives its result. A bad timeout: ValueError."""
    import ring
    from ring.communicator import Work
    comm, later = _Comm(), _Later()
    work = Work(7, later, comm, "allreduce")
    with pytest.raises(ring.TimeoutError, match="allreduce: not finished within wait"):
        work.wait(timeout=0.05)
    assert comm.broken == [] and not work.is_completed()
    later.done.set()
    assert work.wait(timeout=5) == 7 and work.is_completed()
    for bad in (0, -1, True, "5", float("nan")):
        with pytest.raises(ValueError, match="timeout"):
            Work(7, _Later(), comm).wait(timeout=bad)
    # longer than the communicator's own timeout (1 s): that one decides, and breaks it
    stuck = Work(7, _Later(), comm, "allreduce")
    with pytest.raises(ring.TimeoutError, match="no progress within 1 s"):
        stuck.wait(timeout=30)
    assert len(comm.broken) == 1

    p, gate = Progress("test"), threading.Event()
    comm._progress = p
    work = Work(None, p.submit(lambda: gate.wait(5) and 3), comm, "allgather")
    with pytest.raises(ring.TimeoutError, match="allgather: not finished within wait"):
        work.wait(timeout=0.05)
    assert not work.is_completed()
    gate.set()
    assert work.wait(timeout=5) == 3 and work.wait() == 3
    # no limit at all (threading's waits take at most TIMEOUT_MAX: inf was an OverflowError)
    gate = threading.Event()
    work = Work(None, p.submit(lambda: gate.wait(5) and 4), comm, "allgather")
    threading.Timer(0.1, gate.set).start()
    assert work.wait(timeout=float("inf")) == 4
    p.close()
