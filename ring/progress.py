"""A progress thread: the host device's async_op calls, run behind the caller in order.

NumPy collectives have no stream to run behind, so a host Communicator that is given an
async_op call hands it to one thread of its own, which runs its calls one after another
in the order they came (every rank issues the same calls in the same order, so the
collectives match). A call without async_op first waits for those before it, so that
calls never overtake each other. Each call is bounded by the communicator's timeout as
in the caller's thread, so waiting for a task is bounded too. Compute in NumPy releases the
GIL, so a backward pass and the bucket all-reduces run at once where cores allow.
"""

from __future__ import annotations

import queue
import threading
import traceback
from contextlib import contextmanager


class Task:
    """One call handed to the thread: wait() gives its result or raises its error."""

    def __init__(self, fn):
        self._fn, self._done = fn, threading.Event()
        self._value = self._error = None
        self._callbacks: list = []
        self._lock = threading.Lock()

    def run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as e:  # the caller gets it from wait()
            self._error = e
        finally:
            self._fn = None
            with self._lock:
                callbacks, self._callbacks = self._callbacks, None  # None: run at once
            for fn in callbacks:
                try:
                    fn(self._value, self._error)
                except BaseException:  # a callback's bug must not stop the thread
                    traceback.print_exc()
            self._done.set()  # after the callbacks: wait() returns with them done

    def on_done(self, fn) -> None:
        """fn(value, error) once the task has run: on the progress thread, or here at once
        when it already has."""
        with self._lock:
            if self._callbacks is not None:
                self._callbacks.append(fn)
                return
        fn(self._value, self._error)

    def query(self) -> bool:
        return self._done.is_set()

    def done_within(self, progress: "Progress | None", timeout: float | None) -> bool:
        """Whether the task has run within `timeout` s (None: once it has), waiting as
        wait() does."""
        if progress is None:
            return self._done.wait(timeout)
        with progress.waiting():
            return self._done.wait(timeout)

    def wait(self, progress: "Progress | None" = None):
        """The result, or the call's error raised; progress: the thread it runs on, told
        that a caller is blocked (its waits then yield instead of napping). Bounded: the
        call itself ends by the communicator's timeout."""
        self.done_within(progress, None)
        if self._error is not None:
            raise self._error
        return self._value


class Progress:
    """The thread (started on the first task) and its queue."""

    def __init__(self, name: str):
        self._name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._last: Task | None = None
        self.waiters = 0  # callers blocked on a task now: its waits yield instead of napping

    @contextmanager
    def waiting(self):
        self.waiters += 1
        try:
            yield
        finally:
            self.waiters -= 1

    def urgent(self) -> bool:
        return self.waiters > 0

    def submit(self, fn) -> Task:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
            self._thread.start()
        task = Task(fn)
        self._last = task
        self._queue.put(task)
        return task

    def idle(self) -> bool:
        return self._last is None or self._last.query()

    def drain(self) -> None:
        """Until every task submitted so far has run (their errors stay with their Work)."""
        if self._last is not None:
            with self.waiting():
                self._last._done.wait()

    def _loop(self) -> None:
        while True:
            task = self._queue.get()
            if task is None:
                return
            task.run()

    def close(self) -> None:
        self.drain()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
