"""The kernel path's kernels kept on disk, so that a process loads what another compiled.

Numba compiles the persistent ring kernel (persistent.py) for each op x dtype x variant a
process calls, 1.5-4 s each on an H100 machine's CPU (results/h100/kernel-path.md), and
every process of every run did it again: a rank's first all-reduce of a dtype cost
seconds, and Numba's compiles were most of a GPU test step's time. The one-shot and
two-shot kernels (oneshot_kernel.py, twoshot_kernel.py: per op x dtype x K, and the
two-shot's collective) likewise. Numba can keep a kernel on disk (`cuda.jit(cache=True)`),
but its cache looks a kernel up by a hash of the function's closure, and these kernels'
closures hold device functions, which pickle with a UUID drawn anew in every process: no
process ever found another's kernel.

So a kernel's cache entry is keyed here by what the kernel is made from instead: the
variant (which kernel; op, dtype; the ring's unroll, scope, hand-off, protocol; the shots'
K and collective), the text of every source file the kernels are built from (SOURCES: a
change to any makes a new key), the signature, the target GPU and numba-cuda's version
(Numba's own parts of the key). A failure to read or write the cache costs a compile,
never an error. RING_KERNEL_CACHE=0 turns it off; under the simulator there is nothing to
compile or keep.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

from numba import cuda

from .arrays import SIMULATED

ROOT = Path(__file__).resolve().parents[2]
# what the kernel path's kernels are built from: their sources (the persistent ring
# kernel's, the one-shot's, the two-shot's), the call board's and the error word's, the
# program's and segment's layouts, the op / dtype / hand-off / vector device functions, the
# op and collective enumerations
SOURCES = ("ring/cuda/persistent.py", "ring/cuda/oneshot_kernel.py",
           "ring/cuda/twoshot_kernel.py", "ring/cuda/board.py", "ring/cuda/error_word.py",
           "ring/cuda/program.py", "ring/transport/ipc.py", "ring/schedule.py", "kernels/*.py",
           "ringtypes/*.py")


def enabled() -> bool:
    return not SIMULATED and os.environ.get("RING_KERNEL_CACHE", "1") != "0"


@lru_cache(maxsize=None)
def sources_digest() -> str:
    """A hash of the text of every file in SOURCES, in a fixed order."""
    h = hashlib.sha256()
    for pattern in SOURCES:
        for path in sorted(ROOT.glob(pattern)):
            h.update(str(path.relative_to(ROOT)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def compiled(fn, sig, variant: tuple, launch_bounds=None):
    """fn compiled for sig (and launch_bounds, where given: cuda.jit's): from the disk cache
    where a process left it, else compiled (and left there)."""
    kw = {} if launch_bounds is None else {"launch_bounds": launch_bounds}
    if not enabled():
        return cuda.jit(sig, **kw)(fn)
    try:
        # cuda.jit(sig, cache=True) would compile before the key is set: lazily, then as
        # cuda.jit(sig) leaves a dispatcher (one signature, no other compiled at launch)
        dispatcher = cuda.jit(cache=True, **kw)(fn)
        keyed(dispatcher._cache, variant)
        dispatcher.compile(sig)
        dispatcher._specialized = True
        dispatcher.disable_compile()
    except Exception:  # noqa: BLE001 - a cache Numba would not take: compile as before
        return cuda.jit(sig, **kw)(fn)
    return dispatcher


def keyed(cache, variant: tuple) -> None:
    """Make a Numba CUDACache look kernels up by (signature, target, numba-cuda version,
    variant, sources) instead of the closure's pickle, and never fail a compile on I/O."""
    import numba_cuda
    tail = ("ring", variant, sources_digest())

    def index_key(sig, codegen):
        key = (sig, codegen.magic_tuple(), numba_cuda.__version__, tail)
        lc = getattr(cache, "_launch_config_key", None)
        return key if lc is None else key + (("launch_config", lc),)

    load, save = cache.load_overload, cache.save_overload

    def load_overload(sig, target_context):
        try:
            return load(sig, target_context)
        except Exception:  # noqa: BLE001 - an unreadable entry: compile instead
            return None

    def save_overload(sig, data):
        try:
            save(sig, data)
        except Exception:  # noqa: BLE001 - nowhere to write: the next process compiles too
            pass

    cache._index_key = index_key
    cache.load_overload, cache.save_overload = load_overload, save_overload
