"""Bounded waiting: every wait in a collective ends by its deadline, never in a hang.

Spin first (a peer on its own core answers within microseconds), then yield the core,
then sleep in short naps. When ranks outnumber cores, spinning only steals the core from
the rank being waited for, so oversubscribed ranks skip straight to yielding.

Whatever a wait is for, it keeps this rank's MPI messages moving (`progress`): MPI need
not move a message a rank has Isent until that rank calls MPI again (MPICH without its
single-copy path moves one 16 KiB cell at a time, on the sender's calls), so a rank that
waited on a neighbour in shared memory, or on its GPU, while its peer on the next node
waited for that message, waited for ever: the ring across nodes hung.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Callable

from .errors import TimeoutError

SPINS = 20_000  # about a millisecond of polling on a free core
PROGRESS_EVERY = 64  # spins between calls of the progress hook (one MPI test each)
YIELDS = 2_000  # then give the core away this many times
NAP_S = 50e-6  # then sleep this long between polls


class CallName:
    """A call's name, "allreduce (call 7, rank 1)", formatted only when an error says it
    (a repeated call's per-call cost: no string built)."""

    __slots__ = ("what", "call", "rank")

    def __init__(self, what: str, call: int, rank: int):
        self.what, self.call, self.rank = what, call, rank

    def __str__(self) -> str:
        return f"{self.what} (call {self.call}, rank {self.rank})"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class Waiter:
    def __init__(self, timeout: float, oversubscribed: bool = False):
        self.timeout = timeout
        self.spins = 0 if oversubscribed else SPINS
        self.yields = YIELDS
        self.urgent = None  # while napping: a callable, true when someone waits on the call
        self.deadline = float("inf")
        self.context = ""  # the call being waited in, for error messages
        self.at: tuple[int, int] | None = None  # (chunk, step) the executor is at
        # the communicator's MPI ends' progress (their sends and receives in flight), called
        # while waiting for anything; None where no link crosses nodes
        self.progress: Callable[[], None] | None = None

    def add_progress(self, *ends) -> None:
        """While waiting, also call the progress() of each of these link ends that has one
        (those over MPI); the backends of a two-level ring add theirs in turn."""
        hooks = ([self.progress] if self.progress is not None else []) + \
            [e.progress for e in ends if hasattr(e, "progress")]
        if len(hooks) < 2:
            self.progress = hooks[0] if hooks else None
            return

        def progress() -> None:
            for hook in hooks:
                hook()
        self.progress = progress

    def start(self, context: str) -> None:
        """Arm the deadline for one collective call."""
        self.deadline = time.monotonic() + self.timeout
        self.context, self.at = context, None

    def _where(self) -> str:
        where = str(self.context)
        if self.at is not None:
            where += f", chunk {self.at[0]} step {self.at[1]}"
        return where

    def failure(self, what: str) -> TimeoutError:
        """The TimeoutError of this call for `what` it waited for (to raise)."""
        return TimeoutError(f"{self._where()}: {what}: no progress within {self.timeout:g} s")

    def until(self, ready: Callable[[], bool], describe: Callable[[], str]) -> None:
        """Return once ready() is true; raise TimeoutError(describe()) at the deadline."""
        progress = self.progress
        for i in range(self.spins):
            if ready():
                return
            if progress is not None and i % PROGRESS_EVERY == 0:
                progress()
        n = 0
        while not ready():
            if progress is not None:
                progress()
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
