"""Launch geometry: a grid-stride loop over enough blocks to fill the GPU, and no more.

Under the simulator every thread is a Python thread, so the grid is kept tiny there and the
grid-stride loop covers the rest.
"""

from __future__ import annotations

from functools import lru_cache

from numba import config, cuda

THREADS = 256
BLOCKS_PER_SM = 8  # 8 x 256 = 2048 threads: a full Hopper SM
# under the simulator each thread is started as a Python thread at every launch (about 0.2 ms
# each on a CI core): 8 threads x 2 blocks still run the grid-stride loops, the block-wide
# trees (kernels/quantize.py) and several blocks, at a third less time per test than 32 x 2
SIM_THREADS, SIM_BLOCKS = 8, 2


def simulated() -> bool:
    return bool(config.ENABLE_CUDASIM)


@lru_cache(maxsize=1)
def _max_blocks() -> int:
    if simulated():
        from .simulator import prepare
        prepare()  # once, at the first launch's grid (lru_cache)
        return SIM_BLOCKS
    return cuda.get_current_device().MULTIPROCESSOR_COUNT * BLOCKS_PER_SM


def grid(n: int, per_thread: int = 1) -> tuple[int, int]:
    """(blocks, threads) for n elements, each thread taking per_thread per pass."""
    threads = SIM_THREADS if simulated() else THREADS
    want = -(-max(n, 1) // (threads * per_thread))
    return min(want, _max_blocks()), threads
