"""The CUDA driver calls that Numba does not wrap the way ring needs them: results checked,
stream handles, events for ordering and a quiet query of them (cuda.bindings underneath).

Under Numba's simulator events always count as fired: it runs each launch at once.
"""

from __future__ import annotations

from numba import config, cuda


def simulated() -> bool:
    return bool(config.ENABLE_CUDASIM)


_DRV = None  # cuda.bindings.driver, once imported
_STREAMS: dict[int, object] = {}  # CUstream handle -> its cuda.bindings CUstream


def driver():
    """cuda.bindings' driver module (imported on first use: not under the simulator)."""
    global _DRV
    if _DRV is None:
        from cuda.bindings import driver as drv
        _DRV = drv
    return _DRV


def cu_stream(h: int):
    """cuda.bindings' CUstream for handle h, made once per handle (a kept call's launch and
    event record take it on every call)."""
    s = _STREAMS.get(h)
    if s is None:
        s = _STREAMS[h] = driver().CUstream(h)
    return s


def ok(result):
    """cuda.bindings returns (error, values...): raise on error, return the values."""
    err, *values = result if isinstance(result, tuple) else (result,)
    drv = driver()
    if err != drv.CUresult.CUDA_SUCCESS:
        name = drv.cuGetErrorName(err)[1]
        raise RuntimeError(f"CUDA driver call failed: {name.decode() if name else err}")
    return values[0] if len(values) == 1 else values


def handle_of(stream) -> int:
    """The CUstream handle (an int) of a Numba stream, an object with __cuda_stream__
    (cuda.core, CuPy), an int, or 0 / None (the legacy default stream)."""
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    h = getattr(stream, "handle", stream)
    h = getattr(h, "value", h)
    return int(h or 0)


def stream_handle(stream):
    """The CUstream of a Numba stream (or 0 for the default stream)."""
    return cu_stream(handle_of(stream))


def event():
    """An event for ordering only (no timing: cheaper; the simulator's take no options)."""
    return cuda.event() if simulated() else cuda.event(timing=False)


def fired(ev) -> bool:
    """Whether the work before an event's latest record has finished (the simulator's
    events have always fired). Asked of the driver through cuda.bindings, not Numba's
    Event.query, which for every poll of an event not yet reached logs an ERROR ("Call to
    cuEventQuery results in CUDA_ERROR_NOT_READY": printed wherever the application had
    configured the root logger before CUDA started) and raises and catches a CudaAPIError."""
    if simulated():
        return True
    drv = driver()
    err = drv.cuEventQuery(ev.handle)[0]
    if err == drv.CUresult.CUDA_SUCCESS:
        return True
    if err == drv.CUresult.CUDA_ERROR_NOT_READY:
        return False
    from numba.cuda.cudadrv.driver import CudaAPIError
    raise CudaAPIError(err, f"cuEventQuery: {err.name}")
