"""How long one hand-off between two parties on a GPU takes, in each way the ring kernel
could hand a chunk over: a ping-pong of `trips` round trips, timed inside the kernel by
%globaltimer (no launch in the figure). Issue 14 wants an 8-byte all-reduce in a replayed
K = 2 graph within 8 µs; the persistent kernel takes 10.3 (H200), and its time grows by
~3.7 µs per ring step from K = 2 to K = 4: the hand-off, not the launch, is the cost. This
measures it before the kernel is changed for it.

    fence   the data stored, a fence (membar), the counter published by an atomic; the
            other side polls the counter with atomics, fences, reads the data
            (RING_KERNEL_SYNC=fence)
    acqrel  the same with relaxed loads and stores and one fence.acq_rel a side
            (RING_KERNEL_SYNC=acqrel, the default)
    ll      the value and its flag in one 64-bit word, stored and polled relaxed, with no
            fence and no counter (NCCL's LL protocol: 4 bytes of data per 8 moved)

Parties: thread 0 of block 0 and of block 1 (two multiprocessors, as two ranks' kernels
sharing a GPU), or threads 0 and 32 of one block (one multiprocessor; the only placement
Numba's simulator can run, since it runs blocks one after another). With --threads > 32
and two blocks, every thread of a block meets its thread 0 at two barriers per hand-off,
as the ring kernel's channels do (wait, barrier, copy, barrier, publish).

    python3 benchmarks/handoff.py [--trips 2000] [--threads 512] [--json FILE]

Every wait is bounded (timeout_s); a wait that gives up, or a value that arrives wrong,
raises with the party, the round trip and what it saw.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from .launch import simulated
from .spin import fenced, now, sync

MODES = ("fence", "acqrel", "ll")
# words: what goes to party 1 at TO[1] (data, counter), to party 0 at TO[0]; a line apart
TO = (16, 0)
WORDS = 32
ERR_TIMEOUT, ERR_WRONG = 1, 2
LOW = (1 << 32) - 1


def source(mode: str, scope: str = "gpu"):
    """The ping-pong kernel for a mode, uncompiled: (words, trips, timeout_ns, err, times,
    same_block). err: [code, party, trip, seen]; times[party]: ns from first send to last
    receive."""
    if mode not in MODES:
        raise ValueError(f"mode: one of {MODES}, got {mode!r}")
    hand = sync(scope)
    store, wait_flag = hand.store, hand.wait_flag

    @cuda.jit(device=True)
    def fail(err, code, party, trip, seen):
        if cuda.atomic.cas(err, 0, 0, code) == 0:
            err[1], err[2], err[3] = party, trip, seen

    if mode == "ll":
        @cuda.jit(device=True)
        def send(words, at, v):
            store(words, at, (v << 32) | (v & LOW))

        @cuda.jit(device=True)
        def recv(words, at, v, timeout_ns, err, party, trip):
            w = wait_flag(words, at, v, timeout_ns, err)
            if (w >> 32) != v:
                fail(err, ERR_TIMEOUT, party, trip, w >> 32)
                return False
            if (w & LOW) != (v & LOW):
                fail(err, ERR_WRONG, party, trip, w & LOW)
                return False
            return True
    else:
        counters = fenced(scope) if mode == "fence" else hand
        wait, fence, publish = counters.wait_geq, counters.fence, counters.publish

        @cuda.jit(device=True)
        def send(words, at, v):
            words[at] = v  # the data
            fence()  # release: the data before the counter
            publish(words, at + 1, v)

        @cuda.jit(device=True)
        def recv(words, at, v, timeout_ns, err, party, trip):
            seen = wait(words, at + 1, v, timeout_ns, err)
            if seen < v:
                fail(err, ERR_TIMEOUT, party, trip, seen)
                return False
            fence()  # acquire: the data after the counter
            d = words[at]
            if d != v:
                fail(err, ERR_WRONG, party, trip, d)
                return False
            return True

    def kernel(words, trips, timeout_ns, err, times, same_block):
        t = cuda.threadIdx.x
        if same_block:
            party = 0 if t == 0 else (1 if t == 32 else -1)
            barriers = False
        else:
            party = cuda.blockIdx.x if t == 0 else -1
            barriers = cuda.blockDim.x > 32
        if party < 0 and not barriers:
            return
        me = party if party >= 0 else cuda.blockIdx.x
        start = now()
        for i in range(trips):
            # party 0 sends 2i + 1 and waits for 2i + 2; party 1 the other way round
            if party == 0:
                send(words, TO[1], 2 * i + 1)
            if party >= 0:
                if not recv(words, TO[me], 2 * i + 2 - me, timeout_ns, err, me, i):
                    party = -2  # stop sending; the barriers below still meet
            if barriers:
                cuda.syncthreads()  # the block reads the chunk here
                cuda.syncthreads()
            if party == 1:
                send(words, TO[0], 2 * i + 2)
            if not barriers and party < 0:
                return
        if party >= 0:
            times[me] = now() - start

    return kernel


def measure(mode: str, *, same_block: bool = False, threads: int = 32, trips: int = 2000,
            scope: str = "gpu", timeout_s: float = 5.0) -> float:
    """Nanoseconds per one-way hand-off (a round trip is two)."""
    if same_block and threads < 33:
        threads = 64  # threads 0 and 32: two warps
    if simulated() and not same_block:
        raise ValueError("Numba's simulator runs blocks one after another: same_block only")
    kernel = cuda.jit(source(mode, scope))
    words = cuda.to_device(np.zeros(WORDS, np.int64))
    err = cuda.to_device(np.zeros(4, np.int64))
    times = cuda.to_device(np.zeros(2, np.int64))
    kernel[1 if same_block else 2, threads](words, trips, int(timeout_s * 1e9), err, times,
                                            same_block)
    cuda.synchronize()
    e = err.copy_to_host()
    if e[0]:
        what = "gave up waiting" if e[0] == ERR_TIMEOUT else "received a wrong value"
        raise RuntimeError(f"hand-off {mode}: party {e[1]} {what} at round trip {e[2]} "
                           f"(saw {e[3]})")
    return float(times.copy_to_host().max()) / (2 * trips)
