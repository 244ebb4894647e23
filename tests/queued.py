"""A device that runs calls behind the caller's back, and the clock that times it: the
harness's timing (harness/sweep.run_case, harness/tune.per_call_us) tested without a GPU."""

from __future__ import annotations


class QueuedDevice:
    """Stands in for harness.sweep's (and tune's) `time`: each call takes `host` seconds of
    the caller's time and queues `work` seconds on the device, which runs them one after
    another; sync() waits until the device is idle."""

    def __init__(self, host: float, work: float):
        self.now, self.idle_at, self.host, self.work = 0.0, 0.0, host, work

    def perf_counter(self) -> float:
        return self.now

    def call(self) -> None:
        self.now += self.host
        self.idle_at = max(self.idle_at, self.now) + self.work

    def sync(self) -> None:
        self.now = max(self.now, self.idle_at)


class Enqueuing:
    """A stream-ordered implementation on a QueuedDevice: its calls return once queued
    (they compute nothing: time them with check=False)."""

    name = label = "queued"
    unavailable = None

    def __init__(self, device: QueuedDevice):
        self.device = device

    def available(self, *args):
        return None

    def __call__(self, coll, x, out, op, dtype, root=0):
        self.device.call()

    def sync(self):
        self.device.sync()


class QueuedComm:
    """A communicator whose collectives are calls on a QueuedDevice (harness tune's rounds
    call comm.allreduce and comm.synchronize)."""

    def __init__(self, device: QueuedDevice):
        self.device = device

    def allreduce(self, x, out=None, algorithm=None):
        self.device.call()

    def synchronize(self):
        self.device.sync()
