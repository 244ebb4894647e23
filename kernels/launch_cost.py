"""Host cost of one kernel launch from Python, by launch method (GPU only).

    python -m kernels.launch_cost

Launches a tiny reduce kernel (8 elements) in bursts of 200 without synchronising, each
burst waited for outside the timing, so the host time per launch is the launch overhead
(before 2026-11-28: 2000 back to back, which a launch cheaper than the kernel's ~2 us on
the GPU would have filled the queue with). Methods:
  numba-dispatch     kernel[grid, block, stream](numba device arrays)
  numba-cupy-args    the same with CuPy arrays (__cuda_array_interface__ read every call)
  bound-driver       BoundLaunch (the default): the values packed once into a table,
                     one cuLaunchKernel (cuda.bindings) per call
  bound-cuda.core    BoundLaunch(via="core"): the values packed once, converted by
                     cuda.core's launch on every call
  ... (84 values)    each way again for a kernel of 12 arrays (the kernel path's kernels take
                     60-90 values), its result checked once
  bound-graph        BoundLaunch(via="graph"): the driver's launch captured once as a graph
                     of one kernel node, one cuGraphLaunch (cuda.bindings) per call, at 22
                     and 84 values (issue 52: a kept call's launch), its result checked once
  graph-replay       N launches captured once in a CUDA graph; one graph launch, cost / N
  event-record       what a kept call does after its launch (ring/cuda/streams.py):
                     cuEventRecord of the stream's event, as Streams.record_on does it
  event-query        what a kept call does before it (backend._ended): cuEventQuery of
                     an event already reached, as kernels.driver.fired asks it
  cupy-elementwise   cupy.add(a, b, out=o), for comparison
"""

from __future__ import annotations

import statistics
import time

import numpy as np


def per_launch_us(fn, n=200, reps=15, sync=None):
    """Median over reps of the host's time per call of fn in a burst of n calls, each
    burst waited for outside the timing: past about a thousand launches queued, the
    driver's launch waits for the GPU, and the figure would be the kernel's time, not the
    host's (benchmarks/profile_call.py times its enqueue so too)."""
    fn()
    if sync:
        sync()
    best = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t
        if sync:
            sync()
        best.append(dt / n * 1e6)
    return statistics.median(best)


def _wide_kernel():
    from numba import cuda

    @cuda.jit("void(float32[:], " + ", ".join(["float32[:]"] * 11) + ")")
    def wide(o, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10):
        i = cuda.grid(1)
        if i < o.size:
            o[i] = a0[i] + a1[i] + a2[i] + a3[i] + a4[i] + a5[i] + a6[i] + a7[i] + a8[i] \
                + a9[i] + a10[i]
    return wide


def main():
    import cupy as cp
    from numba import cuda

    from ringtypes import Op

    from .bound_launch import VIAS, BoundLaunch
    from .reduce import kernel_for

    k = kernel_for(Op.SUM, "float32", False)
    wide_kernel = _wide_kernel()
    stream = cuda.stream()
    a = cuda.to_device(np.ones(8, np.float32), stream=stream)
    b = cuda.to_device(np.ones(8, np.float32), stream=stream)
    o = cuda.device_array(8, np.float32, stream=stream)
    ca, cb, co = cp.ones(8, cp.float32), cp.ones(8, cp.float32), cp.empty(8, cp.float32)
    sync = stream.synchronize
    rows = []

    def record(name, fn, **kw):
        try:
            rows.append((name, per_launch_us(fn, sync=sync, **kw)))
        except Exception as e:  # report, keep measuring the others
            rows.append((name, f"failed: {type(e).__name__}: {str(e)[:120]}"))

    record("numba-dispatch", lambda: k[1, 32, stream](o, a, b, 1.0))
    cps = cuda.external_stream(cp.cuda.get_current_stream().ptr)
    record("numba-cupy-args", lambda: k[1, 32, cps](co, ca, cb, 1.0))
    arrays = [cuda.to_device(np.full(8, i, np.float32), stream=stream) for i in range(11)]
    # the bound launch each way (graph: one kernel node, one cuGraphLaunch a call), at 22
    # and 84 values, each result checked once (84: 0 + 1 + ... + 10)
    for values, args, kernel, want in ((22, (o, a, b, 1.0), k, 2),
                                       (84, (o, *arrays), wide_kernel, 55)):
        for via in VIAS:
            name = f"bound-{'cuda.core' if via == 'core' else via} ({values} values)"
            try:
                bound = BoundLaunch(kernel, args, 1, 32, stream, via=via)
                o[:] = 0
                bound()
                sync()
                right = (o.copy_to_host() == want).all()
            except Exception as e:  # report, keep measuring the others
                rows.append((name, f"failed: {type(e).__name__}: {str(e)[:120]}"))
                continue
            record(name + ("" if right else " WRONG RESULT"), bound)

    # CUDA graph of G bound launches, replayed.
    try:
        G = 100
        cs = cp.cuda.Stream(non_blocking=True)
        ns = cuda.external_stream(cs.ptr)
        gb = BoundLaunch(k, (o, a, b, 1.0), 1, 32, ns)
        cs.begin_capture()
        for _ in range(G):
            gb()
        graph = cs.end_capture()
        graph.upload(cs)

        def replay():
            graph.launch(cs)
        t = per_launch_us(replay, n=200, sync=cs.synchronize)
        rows.append((f"graph-replay ({G} launches per graph)", t / G))
        rows.append(("graph-launch (one whole graph)", t))
    except Exception as e:
        rows.append(("graph-replay", f"failed: {type(e).__name__}: {str(e)[:120]}"))

    # the two driver calls a kept call makes beside its launch (issue 52's <= 5 us): the
    # record as ring/cuda/streams.Streams.record_on makes it (kernels may not import ring)
    from .driver import cu_stream, driver, event, fired, handle_of, ok
    h, drv = handle_of(stream), driver()
    ev = event()
    record("event-record (Streams.record_on)",
           lambda: ok(drv.cuEventRecord(ev.handle, cu_stream(h))))
    sync()
    record("event-query (driver.fired, reached)", lambda: fired(ev))
    record("cupy-elementwise", lambda: cp.add(ca, cb, out=co))
    print(f"{'method':<40} {'host us per launch':>20}")
    for name, v in rows:
        print(f"{name:<40} {v:>20.2f}" if isinstance(v, float) else f"{name:<40} {v}")
    return rows


if __name__ == "__main__":
    main()
