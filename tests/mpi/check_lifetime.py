"""Nothing grows: many small collectives, many create / close cycles (host memory; MPI
communicators and windows too, since MPICH runs out of context ids after a few thousand
leaked communicators)."""

import gc
import os

import numpy as np

import ring

PAGE = os.sysconf("SC_PAGE_SIZE")
GROWTH_LIMIT = 4 << 20  # bytes of resident memory; allocator noise stays well under this


def rss() -> int:
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def test_ten_thousand_small_collectives_do_not_grow_memory(world):
    with ring.Communicator(device="host", timeout=60) as c:
        x = np.arange(16, dtype=np.float32)
        out = np.empty_like(x)
        for _ in range(500):  # warm: plan cache, typed slot views, allocator pools
            c.allreduce(x, out=out)
        before = rss()
        for i in range(10_000):
            if i % 3 == 0:
                c.allreduce(x, out=out)
            elif i % 3 == 1:
                c.allgather(x[:4])
            else:
                c.reduce_scatter(np.ones(4 * c.size, np.int32))
        grown = rss() - before
    assert grown < GROWTH_LIMIT, f"resident memory grew {grown} bytes"


def test_thousand_create_close_cycles_release_everything(world):
    for _ in range(20):  # warm
        ring.Communicator(device="host", timeout=60).close()
    before = rss()
    for i in range(1000):
        with ring.Communicator(device="host", timeout=60, chunk_bytes=4096) as c:
            if i % 100 == 0:
                assert (c.allreduce(np.ones(3)) == c.size).all()
    grown = rss() - before
    assert grown < GROWTH_LIMIT, f"resident memory grew {grown} bytes"
