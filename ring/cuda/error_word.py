"""The error word every kernel of the kernel path writes where it gives up (a wait past the
timeout, a peer's call not this one): int64[ERR_LEN], the first failure of the grid wins.
ERR_CODE says what failed (each kernel's codes: persistent.py, oneshot_kernel.py,
twoshot_kernel.py, board.py; 0: nothing), the rest where; kernel_path.KernelPath.check
reads it and raises."""

from __future__ import annotations

from numba import cuda

ERR_CODE, ERR_CHANNEL, ERR_UNIT, ERR_CHUNK, ERR_STEP, ERR_NEED, ERR_SEEN = range(7)
ERR_LEN = 8
INT64_MAX = (1 << 63) - 1


def timeout_ns(seconds: float) -> int:
    """The communicator's timeout as the kernels' int64 nanoseconds: one longer than int64
    counts (292 years; inf among them, which the host's waits take as never) waits that long."""
    ns = seconds * 1e9
    return INT64_MAX if ns >= INT64_MAX else int(ns)


@cuda.jit(device=True)
def fail(err, code, channel, unit, chunk, step, need, seen):
    """Record the first failure of the grid (later ones keep the first)."""
    if cuda.atomic.cas(err, ERR_CODE, 0, code) == 0:
        err[ERR_CHANNEL] = channel
        err[ERR_UNIT] = unit
        err[ERR_CHUNK] = chunk
        err[ERR_STEP] = step
        err[ERR_NEED] = need
        err[ERR_SEEN] = seen
