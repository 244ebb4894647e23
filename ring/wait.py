"""Bounded waiting: every wait in a collective ends by its deadline, never in a hang.

Spin first (a peer on its own core answers within microseconds), then yield the core,
then sleep in short naps. When ranks outnumber cores, spinning only steals the core from
the rank being waited for, so oversubscribed ranks skip straight to yielding.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Callable

from .errors import TimeoutError

SPINS = 20_000  # about a millisecond of polling on a free core
YIELDS = 2_000  # then give the core away this many times
NAP_S = 50e-6  # then sleep this long between polls


class Waiter:
    def __init__(self, timeout: float, oversubscribed: bool = False):
        self.timeout = timeout
        self.spins = 0 if oversubscribed else SPINS
        self.yields = YIELDS
        self.urgent = None  # while napping: a callable, true when someone waits on the call
        self.deadline = float("inf")
        self.context = ""  # the call being waited in, for error messages
        self.at: tuple[int, int] | None = None  # (chunk, step) the executor is at

    def start(self, context: str) -> None:
        """Arm the deadline for one collective call."""
        self.deadline = time.monotonic() + self.timeout
        self.context, self.at = context, None

    def _where(self) -> str:
        where = self.context
        if self.at is not None:
            where += f", chunk {self.at[0]} step {self.at[1]}"
        return where

    def failure(self, what: str) -> TimeoutError:
        """The TimeoutError of this call for `what` it waited for (to raise)."""
        return TimeoutError(f"{self._where()}: {what}: no progress within {self.timeout:g} s")

    def until(self, ready: Callable[[], bool], describe: Callable[[], str]) -> None:
        """Return once ready() is true; raise TimeoutError(describe()) at the deadline."""
        for _ in range(self.spins):
            if ready():
                return
        n = 0
        while not ready():
            if time.monotonic() > self.deadline:
                raise self.failure(describe())
            if n < self.yields or (self.urgent is not None and self.urgent()):
                os.sched_yield()
                n += 1
            else:
                time.sleep(NAP_S)


@contextmanager
def napping(waiter: Waiter, urgent=None):
    """Wait by sleeping, for calls that run behind the caller (ring/progress.py): there a
    spinning or yielding wait takes the core from the caller's own compute, which is what
    the call was put behind (measured: benchmarks/overlap.py). While urgent() is true (the
    caller has stopped to wait for the call) it yields instead, as a blocking call would."""
    saved = waiter.spins, waiter.yields, waiter.urgent
    waiter.spins = waiter.yields = 0
    waiter.urgent = urgent
    try:
        yield
    finally:
        waiter.spins, waiter.yields, waiter.urgent = saved


def oversubscribed(local_ranks: int) -> bool:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return local_ranks > cores
