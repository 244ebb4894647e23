"""One process, K ranks on one GPU (ring.Group): all-reduce bandwidth against the memory
roofline, stream against copy path, chunk and slot sweeps, per-call host overhead with and
without CUDA graphs. GPU only.

    python3 benchmarks/group_bench.py [--quick] --json results/group-<gpu>.json

Every figure is device time from CUDA events on the caller's stream around `iters` calls
(or graph replays) after warm-up. "Bytes moved" counts what the schedule reads and writes
in device memory, kernels and copies, summed over ranks (ring.cuda.enqueue.traffic); the
roofline is the faster device-to-device copy (2N bytes moved), the driver's memcpy or a
copy kernel (kernels/copy.py), measured in the same run.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
from numba import cuda

import ring
from harness.meta import describe
from ring.cuda.enqueue import align, traffic
from ring.schedule import Collective, plan


def copy_gbps(nbytes):
    """The faster device-to-device copy, the driver's memcpy or kernels/copy.py's kernel
    (bytes read + written per second), and both."""
    from kernels.copy import d2d_gbps
    both = d2d_gbps(nbytes)
    return max(both.values()), both


def event_ms(fn, iters):
    from kernels.timing import device_ms
    return device_ms(fn, reps=iters, runs=1, warmup=1)


def case(k, nbytes, path, chunk, nslots, graph, iters):
    n = nbytes // 4
    g = ring.Group(k, chunk_bytes=chunk, nslots=nslots, path=path)
    xs = [cuda.to_device(np.full(n, q + 1, np.float32)) for q in range(k)]
    outs = [cuda.device_array(n, np.float32) for _ in range(k)]
    if graph:
        gr = g.capture("allreduce", xs, outs)
        ms = event_ms(lambda: gr.replay(), iters)
    else:
        ms = event_ms(lambda: g.allreduce(xs, outs=outs), iters)
    ok = bool((outs[0].copy_to_host()[:: max(1, n // 1000)] == k * (k + 1) / 2).all()) if n else True
    moved = sum(traffic(plan(Collective.ALLREDUCE, k, r, n, 4, chunk, align(4)), 4, path)
                for r in range(k))
    if graph:
        gr.close()
    g.close()
    busbw = 2 * (k - 1) / k * nbytes / ms / 1e6 if ms and k > 1 else 0.0
    return {"ranks": k, "bytes": nbytes, "path": path, "chunk": chunk, "nslots": nslots,
            "graph": graph, "ms": ms, "busbw_GBps": busbw, "moved_bytes": moved,
            "moved_GBps": moved / ms / 1e6 if ms else 0.0, "correct": ok}


def host_overhead_us(k, graph, calls=2000, path="stream", nbytes=8):
    """Host time per call (enqueue only; the GPU catches up at the end)."""
    g = ring.Group(k, chunk_bytes=1 << 20 if nbytes <= 8 else 4 << 20, path=path)
    n = max(1, nbytes // 4)
    xs = [cuda.device_array(n, np.float32) for _ in range(k)]
    outs = [cuda.device_array(n, np.float32) for _ in range(k)]
    fn = g.capture("allreduce", xs, outs).replay if graph else (lambda: g.allreduce(xs, outs=outs))
    for _ in range(50 if nbytes <= 8 else 1):
        fn()
    cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - t) / calls * 1e6
    cuda.synchronize()
    g.close()
    return host


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--ranks", help="comma list of K for the size sweep (default 4 with --quick, "
                    "else 2,4,8); the K=4 chunk and slot sweeps run when 4 is among them")
    ap.add_argument("--paths", default="stream,copy",
                    help="comma list of data paths for the acceptance case and the size sweep "
                         "(stream, copy, kernel); the chunk and slot sweeps use the first")
    ap.add_argument("--kernel-shapes",
                    help="comma list of CxTxU[xMiB[xSCOPE[xSYNC[xPROTO]]]] (channels x threads x "
                         "unroll x chunk MiB x fence scope gpu|sys x hand-off acqrel|fence x "
                         "protocol ll|simple, by default 4, gpu, acqrel, ll): path='kernel' at "
                         "each, K = 4 256 MiB and K = 2 / 4 8 B with graph replay, before the rest")
    ap.add_argument("--only-shapes", action="store_true", help="stop after --kernel-shapes")
    ap.add_argument("--cross", action="store_true",
                    help="only the chunk x slot product (256 KiB-16 MiB x 2, 4, 8 slots) of the "
                         "K = 4 256 MiB all-reduce with graph replay, for each of --paths")
    a = ap.parse_args()
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    roof, both = copy_gbps(256 << 20)
    out = {"meta": describe(sys.argv), "gpu": name, "copy_GBps_256MiB": roof,
           "copies_GBps_256MiB": both, "cases": [], "host_overhead_us": {}}
    print(f"# {name}; device-to-device copy at 256 MiB: {roof:.0f} GB/s (bytes read + "
          f"written; memcpy {both['memcpy']:.0f}, copy kernel {both['kernel']:.0f})")

    def run(*args, **kw):
        r = case(*args, **kw)
        r["fraction_of_copy"] = r["moved_GBps"] / roof
        out["cases"].append(r)
        print(f"K={r['ranks']} {r['bytes']:>11} B {r['path']:>5} chunk {r['chunk'] >> 10:>5} KiB "
              f"slots {r['nslots']} {'graph' if r['graph'] else 'calls'}: {r['ms'] * 1e3:>9.1f} us "
              f"busbw {r['busbw_GBps']:>7.1f} GB/s moved {r['moved_GBps']:>6.0f} GB/s "
              f"= {r['fraction_of_copy']:>5.1%} of copy {'' if r['correct'] else 'WRONG'}", flush=True)

    for shape in a.kernel_shapes.split(",") if a.kernel_shapes else ():
        given = shape.split("x")
        c, t, u, mib, scope, sync, proto = given + ["4", "gpu", "acqrel", "ll"][len(given) - 3:]
        os.environ.update(RING_KERNEL_CHANNELS=c, RING_KERNEL_THREADS=t, RING_KERNEL_UNROLL=u,
                          RING_KERNEL_SCOPE=scope, RING_KERNEL_SYNC=sync, RING_KERNEL_PROTO=proto)
        print(f"# kernel shape: {c} channels x {t} threads, unroll {u}, {mib} MiB chunks, "
              f"{scope}-scoped {sync} hand-offs, {proto} protocol", flush=True)
        for k, nbytes in ((4, 256 << 20), (2, 8), (4, 8)):
            run(k, nbytes, "kernel", int(mib) << 20, 4, True, 5 if nbytes > 8 else 50)
            out["cases"][-1]["kernel_shape"] = shape
    for key in ("RING_KERNEL_CHANNELS", "RING_KERNEL_THREADS", "RING_KERNEL_UNROLL",
                "RING_KERNEL_SCOPE", "RING_KERNEL_SYNC", "RING_KERNEL_PROTO"):
        os.environ.pop(key, None)
    if a.only_shapes:
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)
        return
    ks = [int(k) for k in a.ranks.split(",")] if a.ranks else ([4] if a.quick else [2, 4, 8])
    big = 256 << 20
    paths = a.paths.split(",")
    if a.cross:
        for path in paths:
            for chunk in (256 << 10, 1 << 20, 4 << 20, 16 << 20):
                for slots in (2, 4, 8):
                    run(4, big, path, chunk, slots, True, 5)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)
        return
    for path in paths if 4 in ks else ():  # the acceptance case first
        run(4, big, path, 4 << 20, 4, True, 5)
    for chunk in () if 4 not in ks else (1 << 20, 16 << 20) if a.quick else (256 << 10, 1 << 20, 4 << 20, 16 << 20):
        run(4, big, paths[0], chunk, 4, True, 5)
    for slots in (2, 8) if 4 in ks else ():
        run(4, big, paths[0], 4 << 20, slots, True, 5)
    for path in paths if 4 in ks else ():
        run(4, big, path, 4 << 20, 4, False, 3)  # without a graph: host-bound?
    sizes = [8 << (3 * i) for i in range(10)]  # 8 B .. 1 GiB
    for k in ks:
        for nbytes in sizes:
            for path in paths:
                if nbytes > (256 << 20) and path == "copy" and a.quick:
                    continue
                run(k, nbytes, path, 4 << 20, 4, True, 5 if nbytes >= 1 << 26 else 20)
    for path in paths:
        for k, graph in ((k, g) for k in dict.fromkeys([2, ks[0]]) for g in (False, True)):
            us = host_overhead_us(k, graph, calls=200 if not graph else 2000, path=path)
            out["host_overhead_us"][f"K={k} {path} " + ("graph" if graph else "calls")] = us
            print(f"host overhead per 8-byte all-reduce, {k} ranks, {path}, "
                  f"{'graph replay' if graph else 'plain call'}: {us:.1f} us", flush=True)
        # enqueue time against size (issue 14: within 2x from 8 B to 1 GiB on the kernel path)
        for nbytes in (8, 1 << 30):
            us = host_overhead_us(2, False, calls=5, path=path, nbytes=nbytes)
            out.setdefault("enqueue_us", {})[f"K=2 {path} {nbytes} B"] = us
            print(f"host time to enqueue one all-reduce, 2 ranks, {path}, {nbytes} B: {us:.1f} us",
                  flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
