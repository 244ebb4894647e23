"""Launch geometry: a grid-stride loop over enough blocks to fill the GPU, and no more.

Under the simulator every thread is a Python thread, so the grid is kept tiny there and the
grid-stride loop covers the rest.
"""

from __future__ import annotations

from functools import lru_cache

from numba import config, cuda

THREADS = 256
BLOCKS_PER_SM = 8  # 8 x 256 = 2048 threads: a full Hopper SM
SIM_THREADS, SIM_BLOCKS = 32, 2


def simulated() -> bool:
    return bool(config.ENABLE_CUDASIM)


@lru_cache(maxsize=1)
def _max_blocks() -> int:
    if simulated():
        return SIM_BLOCKS
    return cuda.get_current_device().MULTIPROCESSOR_COUNT * BLOCKS_PER_SM


def grid(n: int, per_thread: int = 1) -> tuple[int, int]:
    """(blocks, threads) for n elements, each thread taking per_thread per pass."""
    threads = SIM_THREADS if simulated() else THREADS
    want = -(-max(n, 1) // (threads * per_thread))
    return min(want, _max_blocks()), threads
