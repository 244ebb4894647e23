"""Slots in GPU memory: the buffers a ring link's chunks pass through on one device, with an
ordering event per slot for "written" and "freed" (ring.Group's links in one process, the
copy path's local staging, the device side of a staged link across nodes)."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.driver import event

from .shm import Typed


class Slots:
    """nslots buffers of slot_bytes on one device, and their events."""

    def __init__(self, nslots: int, slot_bytes: int):
        self.raw = [cuda.device_array(slot_bytes, np.uint8) for _ in range(nslots)]
        self.written = [event() for _ in range(nslots)]
        self.freed = [event() for _ in range(nslots)]
        self._typed = Typed(self.raw)

    def swap_events(self, events=None):
        """Put fresh events in place (or the given (written, freed) pair); return the pair
        that was there. A stream capture needs fresh ones: waiting inside a capture on an
        event recorded outside it invalidates the capture, and waiting on an event never
        recorded is a no-op."""
        old = self.written, self.freed
        n = len(self.raw)
        self.written, self.freed = events or ([event() for _ in range(n)], [event() for _ in range(n)])
        return old

    def view(self, k: int, storage: np.dtype, n: int):
        return self._typed.get(storage)[k][:n]

