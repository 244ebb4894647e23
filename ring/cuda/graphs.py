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

from kernels.driver import driver, ok, stream_handle


class Graph:
    """An instantiated capture; replay() launches it on a stream."""

    def __init__(self, graph, instance, keep: tuple):
        self._graph, self._exec, self._keep = graph, instance, keep

    def replay(self, stream=0) -> None:
        ok(driver().cuGraphLaunch(self._exec, stream_handle(stream)))

    def close(self) -> None:
        drv = driver()
        if self._exec is not None:
            ok(drv.cuGraphExecDestroy(self._exec))
            ok(drv.cuGraphDestroy(self._graph))
            self._exec = self._graph = None


def capture(enqueue_fn, root, keep: tuple) -> Graph:
    """Run enqueue_fn(root) under stream capture of `root`; return the instantiated graph."""
    if config.ENABLE_CUDASIM:
        raise RuntimeError("CUDA graphs need a GPU; Numba's simulator has none")
    drv = driver()
    h = stream_handle(root)
    ok(drv.cuStreamBeginCapture(h, drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED))
    try:
        enqueue_fn(root)
    finally:
        graph = ok(drv.cuStreamEndCapture(h))
    instance = ok(drv.cuGraphInstantiate(graph, 0))
    return Graph(graph, instance, keep)
