"""Numba's CUDA simulator, made to share the CPU with the threads it runs.

The simulator runs each thread of a block as a Python thread, and the launching thread
watches them until all have finished (numba-cuda's `BlockManager.run`): a loop that asks
every thread `is_alive()`, with no pause, so it holds the GIL and a core while the block's
threads wait for it, for another block's counter, or for another process. ring's tests run
several simulated ranks on a two-core machine, where that loop took most of the CPU: the
kernel path's 4-process suite ran in 48.8 s, and in 11.3 s once each poll yields.

`yield_while_polling()` makes the watcher release the GIL (`time.sleep(0)`) each time it
asks a thread.

`shared_arrays_once()` fixes a race. The simulator finds a block's `cuda.shared.array` by
the line that asks for it, and makes it when it is not there yet, with no lock between the
look-up and the insert: two threads that reach the line together can each make an array of
their own. The persistent kernel's first lines ask for its shared words at once from every
thread, so one thread could read a "stop" from its private word and leave with its
elements unwritten (one wrong byte in a 4-process gather in CI). Here the look-up and the
making are one step under a lock, keyed as the simulator keys them.

Both under the simulator only, and no-ops where its internals are not as described (a
newer numba-cuda). Nothing is patched on import: `prepare()` does both, called where a
simulated launch is set up (kernels/launch.py's first grid, ring's cuda backend and
ring.Group, the tests' conftest).
"""

from __future__ import annotations

import sys
import threading
import time
import traceback

import numpy as np
from numba import config


def _yield() -> None:
    """Let the block's threads (and other processes) run."""
    time.sleep(0)


def yield_while_polling() -> bool:
    """Patch the simulator's thread watcher to yield; True if it now does (idempotent)."""
    if not config.ENABLE_CUDASIM:
        return False
    try:
        from numba.cuda.simulator.kernel import BlockThread
    except ImportError:
        return False
    alive = BlockThread.is_alive
    if getattr(alive, "yields", False):
        return True

    def is_alive(self) -> bool:
        _yield()
        return alive(self)

    is_alive.yields = True
    BlockThread.is_alive = is_alive
    return True


def shared_arrays_once() -> bool:
    """Patch the simulator's shared arrays so that a block's threads get one array per
    line that asks for one, however they interleave; True if it now does (idempotent)."""
    if not config.ENABLE_CUDASIM:
        return False
    try:
        from numba.cuda.simulator import kernelapi
        from numba.cuda.simulator.kernelapi import FakeCUDAShared
    except ImportError:
        return False
    types, numpy_support = kernelapi.types, kernelapi.numpy_support  # the simulator's own
    make = FakeCUDAShared.array
    if getattr(make, "once", False):
        return True
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None or not hasattr(self, "_allocations"):
            return make(self, shape, dtype, alignment)  # dynamic shared memory: not keyed
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        line = traceback.extract_stack(sys._getframe(1), limit=1)[-1]
        caller = (line.filename, line.lineno)  # the line that asks, as the simulator keys it
        with lock:
            found = self._allocations.get(caller)
            if found is None:
                found = self._allocations[caller] = np.empty(shape, dtype)
        return found

    array.once = True
    FakeCUDAShared.array = array
    return True


def prepare() -> None:
    """Under Numba's simulator: both patches above (idempotent; nothing on a GPU)."""
    if config.ENABLE_CUDASIM:
        yield_while_polling()  # its thread watcher shares the CPU
        shared_arrays_once()  # and its block's threads share each shared array
