"""Host cost of one kernel launch from Python, by launch method (GPU only).

    python -m kernels.launch_cost

Launches a tiny reduce kernel (8 elements) N times back to back without synchronising,
so the host time per launch is the launch overhead (the GPU finishes each in ~2 us and
keeps up). Methods:
  numba-dispatch     kernel[grid, block, stream](numba device arrays)
  numba-cupy-args    the same with CuPy arrays (__cuda_array_interface__ read every call)
  bound-cuda.core    BoundLaunch: arguments packed once, one cuda.core launch per call
  cuLaunchKernel     cuda.bindings driver call with a pre-packed parameter buffer
  graph-replay       N launches captured once in a CUDA graph; one graph launch, cost / N
  cupy-elementwise   cupy.add(a, b, out=o), for comparison
"""

from __future__ import annotations

import ctypes
import statistics
import time

import numpy as np


def per_launch_us(fn, n=2000, reps=5, sync=None):
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


def main():
    import cupy as cp
    from cuda.bindings import driver as drv
    from numba import cuda

    from ringtypes import Op

    from .bound_launch import BoundLaunch
    from .reduce import kernel_for

    k = kernel_for(Op.SUM, "float32", False)
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
    bound = BoundLaunch(k, (o, a, b, 1.0), 1, 32, stream)
    record("bound-cuda.core", bound)

    # cuLaunchKernel with a parameter buffer packed once.
    try:
        kern = next(iter(k.overloads.values()))
        func = kern._codelibrary.get_cufunc()
        handle = getattr(func, "handle", None)
        packed, retr = [], []
        for ty, val in zip(kern.argument_types, (o, a, b, 1.0)):
            kern._prepare_args(ty, val, stream, retr, packed)
        cvals = [v if isinstance(v, ctypes._SimpleCData) else ctypes.c_int64(int(v)) for v in packed]
        ptrs = (ctypes.c_void_p * len(cvals))(*[ctypes.addressof(v) for v in cvals])
        hstream = drv.CUstream(stream.handle.value if hasattr(stream.handle, "value") else int(stream.handle))
        cufn = handle if isinstance(handle, drv.CUfunction) else drv.CUfunction(int(handle))

        def raw():
            drv.cuLaunchKernel(cufn, 1, 1, 1, 32, 1, 1, 0, hstream, ctypes.addressof(ptrs), 0)
        raw()
        sync()
        assert (o.copy_to_host() == 2).all()
        record("cuLaunchKernel", raw)
    except Exception as e:
        rows.append(("cuLaunchKernel", f"failed: {type(e).__name__}: {str(e)[:120]}"))

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

    record("cupy-elementwise", lambda: cp.add(ca, cb, out=co),
           )
    print(f"{'method':<40} {'host us per launch':>20}")
    for name, v in rows:
        print(f"{name:<40} {v:>20.2f}" if isinstance(v, float) else f"{name:<40} {v}")
    return rows


if __name__ == "__main__":
    main()
