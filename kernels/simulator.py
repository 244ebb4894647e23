"""Numba's CUDA simulator, made to share the CPU with the threads it runs.

The simulator runs each thread of a block as a Python thread, and the launching thread
watches them until all have finished (numba-cuda's `BlockManager.run`): a loop that asks
every thread `is_alive()`, with no pause, so it holds the GIL and a core while the block's
threads wait for it, for another block's counter, or for another process. ring's tests run
several simulated ranks on a two-core machine, where that loop took most of the CPU: the
kernel path's 4-process suite ran in 48.8 s, and in 11.3 s once each poll yields.

`yield_while_polling()` makes the watcher release the GIL (`time.sleep(0)`) each time it
asks a thread; nothing else about the simulator changes. Under the simulator only, and a
no-op where the simulator's internals are not as described (a newer numba-cuda).
"""

from __future__ import annotations

import time

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
