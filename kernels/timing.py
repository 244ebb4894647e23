"""Device time of a launch: CUDA events around back-to-back launches (GPU only)."""

from __future__ import annotations

import statistics

from numba import cuda


def device_ms(fn, reps: int = 20, runs: int = 5, warmup: int = 3) -> float:
    """Median over `runs` of the event-timed mean of `reps` back-to-back calls of fn()."""
    for _ in range(warmup):
        fn()
    cuda.synchronize()
    times = []
    for _ in range(runs):
        e0, e1 = cuda.event(), cuda.event()
        e0.record()
        for _ in range(reps):
            fn()
        e1.record()
        e1.synchronize()
        times.append(cuda.event_elapsed_time(e0, e1) / reps)
    return statistics.median(times)


def stream_ms(fn, reps: int = 20, runs: int = 5, warmup: int = 3) -> float:
    """device_ms for work that fn(stream) enqueues on a stream of its own, the events on
    that stream (copies given the stream are asynchronous: back to back, as a collective's
    kernels run)."""
    s = cuda.stream()
    for _ in range(warmup):
        fn(s)
    s.synchronize()
    times = []
    for _ in range(runs):
        e0, e1 = cuda.event(), cuda.event()
        e0.record(s)
        for _ in range(reps):
            fn(s)
        e1.record(s)
        e1.synchronize()
        times.append(cuda.event_elapsed_time(e0, e1) / reps)
    return statistics.median(times)
