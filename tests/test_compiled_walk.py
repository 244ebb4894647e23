"""The compiled ring walk (ring/host/compiled_walk.py) in one process: K threads, one per rank,
each walking its plan over buffers laid out as the shared-memory window's (a header with
the counters, then the slots), with few polls before each walk gives up, so that most
units are resumed after a wait. Every output is compared bit for bit with the in-process
simulator's (executor.py's apply_chunk, itself checked against tests/reference.py)."""

import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from . import simulate
from ring.host import executor, compiled_walk
from ring.host.reduce import walk_compiles
from ring.schedule import Collective, plan, sizes
from ring.transport.shm import ACKED, HEADER, POSTED
from ringtypes import DTYPES, FLOATING, Op

from .inputs import make

NATIVE = [dt.name for dt in DTYPES if walk_compiles(dt, Op.SUM)]
COLLECTIVES = [Collective.ALLREDUCE, Collective.REDUCE_SCATTER, Collective.ALLGATHER,
               Collective.BROADCAST, Collective.REDUCE]


def walk_all(collective, inputs, op, chunk_bytes, nslots, root=0, in_place=False, spins=3,
             yields=1, threads=True):
    """Every rank's output after walking its plan: one thread per rank, or (threads=False)
    round robin in this thread, each walk going as far as it can (then every unit after
    the first waits is a resumed one); and the statuses each rank's walks returned."""
    k, dtype = len(inputs), inputs[0].dtype
    count, out_n = sizes(collective, inputs[0].size, k)
    plans = [plan(collective, k, r, count, dtype.itemsize, chunk_bytes, 1, root)
             for r in range(k)]
    slot_bytes = -(-max(plans[0].max_chunk, 1) * dtype.itemsize // 64) * 64
    segs = [np.zeros(HEADER + nslots * slot_bytes, np.uint8) for _ in range(k)]
    addr = [s.ctypes.data for s in segs]
    head = lambda q, field: addr[q] + field * 8  # noqa: E731
    xs = [a.copy() for a in inputs]
    outs = [np.full(out_n, 123, dtype) for _ in range(k)]
    if collective is Collective.BROADCAST:
        outs[root] = xs[root]
    if in_place:
        outs = xs
    from_out = [()] * k
    if in_place and collective is Collective.ALLTOALL:  # as HostBackend.alltoall_in_place
        xs, from_out = zip(*(executor.in_place(p, a) for p, a in zip(plans, outs)))
    links = [compiled_walk.link(addr[r] + HEADER, addr[(r + 1) % k] + HEADER, nslots, slot_bytes,
                           head(r, POSTED), head((r - 1) % k, ACKED), head(r, ACKED),
                           head((r + 1) % k, POSTED)) for r in range(k)]
    errors, said = [], [[] for _ in range(k)]
    units = [compiled_walk.encode(p, f) for p, f in zip(plans, from_out)]

    def step(r):
        status = compiled_walk.walk(units[r], xs[r], outs[r], links[r], int(op), k, spins, yields)
        said[r].append((status, int(links[r][compiled_walk.UNIT])))
        return status == compiled_walk.DONE

    def rank(r):
        try:
            deadline = time.monotonic() + 60
            while not step(r):
                assert time.monotonic() < deadline, f"rank {r} stuck at {links[r]}"
        except BaseException as e:  # noqa: BLE001 (reported by the test)
            errors.append(e)

    if threads:
        pool = [threading.Thread(target=rank, args=(r,)) for r in range(k)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        if errors:
            raise errors[0]
    else:
        done = [False] * k
        for _ in range(100_000):
            done = [d or step(r) for r, d in enumerate(done)]
            if all(done):
                break
        assert all(done), "deadlock"
    for r in range(k):  # every chunk sent was received, and nothing more
        assert links[r][compiled_walk.SENT] == plans[r].sends
        assert links[r][compiled_walk.RECEIVED] == plans[r].recvs
    return outs, said


@given(k=st.integers(1, 5), n=st.integers(0, 150), chunk=st.sampled_from([8, 24, 64, 4096]),
       nslots=st.integers(2, 4), op=st.sampled_from(["sum", "prod", "min", "max", "avg"]),
       dtype=st.sampled_from(NATIVE), collective=st.sampled_from(COLLECTIVES),
       seed=st.integers(0, 3), threads=st.booleans())
@settings(max_examples=150, deadline=None)
def test_walk_matches_the_simulator_bit_for_bit(k, n, chunk, nslots, op, dtype, collective,
                                                seed, threads):
    dt = np.dtype(dtype)
    if op == "avg" and dt not in FLOATING or dt in FLOATING and op in ("min", "max"):
        op = "sum"
    if collective in (Collective.REDUCE_SCATTER,):
        n -= n % k
    if collective in (Collective.BROADCAST, Collective.ALLGATHER):
        op = "sum"
    root = seed % k
    inputs = [make(r, n, dtype, op=op) for r in range(k)]
    want = simulate.run(collective, inputs, Op[op.upper()], chunk * dt.itemsize, nslots, 1, root)
    got, _ = walk_all(collective, inputs, Op[op.upper()], chunk * dt.itemsize, nslots, root,
                      spins=3 if threads else 0, yields=1 if threads else 0, threads=threads)
    keep = [root] if collective is Collective.REDUCE else range(k)
    for r in keep:
        assert got[r].tobytes() == want[r].tobytes(), f"rank {r}"


OPS = [(dt, op) for dt in NATIVE for op in ("sum", "prod", "min", "max", "avg")
       if walk_compiles(np.dtype(dt), Op[op.upper()]) and (op != "avg" or np.dtype(dt) in FLOATING)]


@pytest.mark.parametrize("dtype, op", OPS)
@pytest.mark.parametrize("collective", [Collective.ALLREDUCE, Collective.REDUCE_SCATTER,
                                        Collective.REDUCE])
def test_every_dtype_and_op_at_three_ranks(collective, dtype, op):
    inputs = [make(r, 51, dtype, op=op) for r in range(3)]
    nbytes = 4 * np.dtype(dtype).itemsize
    want = simulate.run(collective, inputs, Op[op.upper()], nbytes, 2, 1, 1)
    got, _ = walk_all(collective, inputs, Op[op.upper()], nbytes, 2, root=1)
    for r in [1] if collective is Collective.REDUCE else range(3):
        assert got[r].tobytes() == want[r].tobytes(), f"rank {r}"


@pytest.mark.parametrize("k", [2, 3, 4])
def test_in_place_all_reduce_is_the_same_bits(k):
    inputs = [make(r, 301, "float32", op="avg") for r in range(k)]
    want = simulate.run(Collective.ALLREDUCE, inputs, Op.AVG, 64, 2)
    got, _ = walk_all(Collective.ALLREDUCE, inputs, Op.AVG, 64, 2, in_place=True)
    assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want))


@given(k=st.integers(1, 6), per=st.integers(0, 30), chunk=st.sampled_from([8, 24, 4096]),
       nslots=st.integers(2, 3), dtype=st.sampled_from(NATIVE), threads=st.booleans())
@settings(max_examples=80, deadline=None)
def test_an_alltoall_in_place_keeps_only_the_blocks_it_overwrites(k, per, chunk, nslots,
                                                                  dtype, threads):
    """out is x: the walk reads the kept blocks (executor.in_place) from their copy and
    the others from out itself, and ends with the all-to-all of the inputs."""
    dt = np.dtype(dtype)
    inputs = [make(r, per * k, dtype, seed=3) for r in range(k)]
    want = simulate.run(Collective.ALLTOALL, inputs, Op.SUM, chunk * dt.itemsize, nslots)
    got, _ = walk_all(Collective.ALLTOALL, inputs, Op.SUM, chunk * dt.itemsize, nslots,
                      in_place=True, spins=3 if threads else 0, yields=1 if threads else 0,
                      threads=threads)
    for r in range(k):
        assert got[r].tobytes() == want[r].tobytes(), f"rank {r}"


def test_a_walk_that_cannot_go_on_says_where_and_resumes():
    # broadcast from rank 0 of 2, one element a chunk, 2 slots, taking turns: the root
    # fills both slots and waits for a free one at unit 2 (WAIT_SEND); rank 1 takes both
    # and waits for data at unit 2 (WAIT_RECV); and so on, two units a turn, to the end.
    x = np.arange(12, dtype=np.float64)
    outs, said = walk_all(Collective.BROADCAST, [x, -x], Op.SUM, 8, 2, spins=0, yields=0,
                          threads=False)
    assert said[0] == [(compiled_walk.WAIT_SEND, u) for u in range(2, 12, 2)] + [(compiled_walk.DONE, 12)]
    assert said[1] == [(compiled_walk.WAIT_RECV, u) for u in range(2, 12, 2)] + [(compiled_walk.DONE, 12)]
    assert outs[1].tolist() == x.tolist()


def test_which_calls_are_compiled():
    f32, f16 = np.dtype(np.float32), np.dtype(np.float16)
    assert walk_compiles(f32, Op.SUM) and walk_compiles(np.dtype(np.int8), Op.MIN)
    assert not walk_compiles(f32, Op.MIN)  # NumPy's NaN / signed-zero choices
    assert not walk_compiles(f16, Op.SUM)  # half.py's loops
    assert not walk_compiles(f32, Op.SUM, wire=f16)  # compression
