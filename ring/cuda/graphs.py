"""CUDA graphs: a collective of fixed (sizes, dtype, op, buffers) captured once and replayed,
so that a repeated call costs one graph launch (kernels/README.md: ~2 µs) instead of a
Python launch per chunk and rank.

Stream capture through cuda.bindings: the capture starts on a root stream; every rank's
stream joins it by waiting on an event recorded there, and is joined back the same way, so
the events between ranks become edges of the graph. Needs a GPU (the simulator has no
graphs).
"""

from __future__ import annotations

from numba import config


def _driver():
    from cuda.bindings import driver
    return driver


def _ok(result):
    """cuda.bindings returns (error, values...): raise on error, return the values."""
    err, *values = result if isinstance(result, tuple) else (result,)
    drv = _driver()
    if err != drv.CUresult.CUDA_SUCCESS:
        name = drv.cuGetErrorName(err)[1]
        raise RuntimeError(f"CUDA driver call failed: {name.decode() if name else err}")
    return values[0] if len(values) == 1 else values


def handle(stream):
    """The CUstream of a Numba stream (or 0 for the default stream)."""
    drv = _driver()
    h = getattr(stream, "handle", stream)
    h = getattr(h, "value", h)
    return drv.CUstream(int(h or 0))


class Graph:
    """An instantiated capture; replay() launches it on a stream."""

    def __init__(self, graph, instance, keep: tuple):
        self._graph, self._exec, self._keep = graph, instance, keep

    def replay(self, stream=0) -> None:
        _ok(_driver().cuGraphLaunch(self._exec, handle(stream)))

    def close(self) -> None:
        drv = _driver()
        if self._exec is not None:
            _ok(drv.cuGraphExecDestroy(self._exec))
            _ok(drv.cuGraphDestroy(self._graph))
            self._exec = self._graph = None


def capture(enqueue_fn, root, keep: tuple) -> Graph:
    """Run enqueue_fn(root) under stream capture of `root`; return the instantiated graph."""
    if config.ENABLE_CUDASIM:
        raise RuntimeError("CUDA graphs need a GPU; Numba's simulator has none")
    drv = _driver()
    h = handle(root)
    _ok(drv.cuStreamBeginCapture(h, drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED))
    try:
        enqueue_fn(root)
    finally:
        graph = _ok(drv.cuStreamEndCapture(h))
    instance = _ok(drv.cuGraphInstantiate(graph, 0))
    return Graph(graph, instance, keep)
