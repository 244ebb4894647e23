"""The CUDA driver calls that Numba does not wrap the way ring needs them: results checked,
stream handles, events for ordering and a quiet query of them (cuda.bindings underneath).

Under Numba's simulator events always count as fired: it runs each launch at once.
"""

from __future__ import annotations

from numba import config, cuda


def simulated() -> bool:
    return bool(config.ENABLE_CUDASIM)


def driver():
    """cuda.bindings' driver module (imported on first use: not under the simulator)."""
    from cuda.bindings import driver as drv
    return drv


def ok(result):
    """cuda.bindings returns (error, values...): raise on error, return the values."""
    err, *values = result if isinstance(result, tuple) else (result,)
    drv = driver()
    if err != drv.CUresult.CUDA_SUCCESS:
        name = drv.cuGetErrorName(err)[1]
        raise RuntimeError(f"CUDA driver call failed: {name.decode() if name else err}")
    return values[0] if len(values) == 1 else values


def stream_handle(stream):
    """The CUstream of a Numba stream (or 0 for the default stream)."""
    drv = driver()
    h = getattr(stream, "handle", stream)
    h = getattr(h, "value", h)
    return drv.CUstream(int(h or 0))


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
