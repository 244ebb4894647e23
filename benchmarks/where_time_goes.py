"""Where the time of one ring.Group all-reduce goes: host enqueue time against GPU time,
and what the host enqueued (kernels, copies, event records and waits). GPU only.

    python3 benchmarks/where_time_goes.py [--ranks 4] [--mib 256] [--json PATH]

For each chunk size: `host_ms` is the wall time of the call that enqueues everything
(nothing waits for the GPU inside it); `gpu_ms` is CUDA-event time on the caller's stream
around that same call, so it includes every moment the GPU sat idle waiting for the host;
`graph_ms` replays the same work captured as a CUDA graph (no host in the loop), the GPU's
own time for it. gpu_ms - graph_ms is the time lost to host enqueue; host_ms / enqueues is
the host cost of one operation. Operations are counted by wrapping ring.cuda.enqueue's
launch and copy helpers and its event class for the duration of one call.
"""

import argparse
import json
import time
from collections import Counter

import numpy as np
from numba import cuda

import ring
from harness.sizes import at_least
import ring.cuda.enqueue as enq
import sys

from harness.meta import describe


def counted_call(fn):
    """Run fn once with ring.cuda.enqueue's operations counted; returns (Counter, host s)."""
    counts = Counter()
    saved = enq._reduce, enq._copy

    def reduce_(*a, **k):
        counts["kernels"] += 1
        return saved[0](*a, **k)

    def copy_(*a, **k):
        counts["copies"] += 1
        return saved[1](*a, **k)

    enq._reduce, enq._copy = reduce_, copy_
    try:
        t = time.perf_counter()
        fn()
        host = time.perf_counter() - t
    finally:
        enq._reduce, enq._copy = saved
    cuda.synchronize()
    return counts, host


def events_ms(fn, reps):
    start, end = cuda.event(), cuda.event()
    start.record()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    end.record()
    host = (time.perf_counter() - t) / reps * 1e3
    end.synchronize()
    elapsed = getattr(cuda, "event_elapsed_time", None)  # absent under the simulator
    return (elapsed(start, end) / reps if elapsed else float("nan")), host


def one(k, nbytes, chunk, path, reps):
    n = nbytes // 4
    g = ring.Group(k, chunk_bytes=chunk, path=path)
    xs = [cuda.to_device(np.full(n, q + 1, np.float32)) for q in range(k)]
    outs = [cuda.device_array(n, np.float32) for _ in range(k)]
    call = lambda: g.allreduce(xs, outs=outs)  # noqa: E731
    call()
    cuda.synchronize()
    counts, _ = counted_call(call)
    gpu_ms, host_ms = events_ms(call, reps)
    ok = bool((outs[0].copy_to_host()[:: max(1, n // 1000)] == k * (k + 1) / 2).all())
    gr = g.capture("allreduce", xs, outs)
    gr.replay()
    cuda.synchronize()
    graph_ms, replay_host_ms = events_ms(gr.replay, reps)
    gr.close()
    g.close()
    ops = counts["kernels"] + counts["copies"]
    row = {"ranks": k, "bytes": nbytes, "chunk": chunk, "path": path, "kernels": counts["kernels"],
           "copies": counts["copies"], "host_ms": host_ms, "gpu_ms": gpu_ms, "graph_ms": graph_ms,
           "graph_replay_host_ms": replay_host_ms, "host_us_per_op": host_ms * 1e3 / max(ops, 1),
           "lost_to_host_ms": gpu_ms - graph_ms, "correct": ok}
    print(f"K={k} {nbytes >> 20} MiB chunk {chunk >> 10:>6} KiB {path:>5}: {counts['kernels']:>5} kernels "
          f"{counts['copies']:>5} copies; host enqueue {host_ms:8.2f} ms "
          f"({row['host_us_per_op']:.1f} us/op), GPU {gpu_ms:8.2f} ms, graph replay {graph_ms:8.2f} ms"
          f"{'' if ok else ' WRONG'}", flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=at_least(1), default=4)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--reps", type=at_least(1), default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = [one(a.ranks, a.mib << 20, chunk, path, a.reps)
            for chunk in (1 << 20, 4 << 20, 16 << 20) for path in ("stream", "copy")]
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": describe(sys.argv), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
