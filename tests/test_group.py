"""ring.Group: one process, several ranks on the GPU, bit for bit against the exact
reference of the flat ring's order (tests/reference.py, independent of ring/). Under Numba's simulator without a GPU: launches run at once there, so these
tests check that every rank's chunks are enqueued in an order that respects the slot
protocol, and that each chunk computes the right thing; on a GPU they run for real."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ring
from ring.cuda.group import _align
from ring.ops import FLOATING
from ring.schedule import Collective

from . import reference
from .gpu import SIMULATED, dev, host, needs_gpu
from .inputs import DTYPE_NAMES, make

# ring.Group has the three symmetric collectives (no broadcast / reduce yet)
GROUP_COLLECTIVES = [c for c in Collective if not c.rooted]

BF16 = np.dtype(ml_dtypes.bfloat16)
# uint8 sums wrap on purpose; the simulator's NumPy scalars warn about it
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


def _dev(a):
    return dev(a.view(np.uint16) if a.dtype == BF16 else a)


def _host(d, dtype):
    a = host(d)
    return a.view(dtype) if dtype == BF16 else a


def run(collective, k, n, dtype, op, path="fused", chunk=64, nslots=2, in_place=False):
    dtype = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    per = n // k if collective is Collective.REDUCE_SCATTER else n
    inputs = [make(q, n, dtype, seed=3, op=op) for q in range(k)]
    xs = [_dev(x) for x in inputs]
    g = ring.Group(k, chunk_bytes=chunk, nslots=nslots, path=path)
    kw = {"dtype": "bfloat16"} if dtype == BF16 else {}
    if collective is Collective.ALLREDUCE:
        outs = g.allreduce(xs, outs=xs if in_place else None, op=op, **kw)
    elif collective is Collective.REDUCE_SCATTER:
        outs = g.reduce_scatter(xs, outs=[x[q * per:(q + 1) * per] for q, x in enumerate(xs)]
                                if in_place else None, op=op, **kw)
    else:
        outs = g.allgather(xs, **kw)
    g.synchronize()
    got = [_host(o, dtype) for o in outs]
    # all-reduce blocks start 16-byte aligned on the GPU, and block boundaries decide each
    # element's order of reduction: the reference must cut the same blocks
    align = _align(dtype.itemsize) if collective is Collective.ALLREDUCE else 1
    want = reference.expected(str(collective), inputs, op, align=align)
    for r in range(k):
        assert got[r].tobytes() == want[r].tobytes(), (collective, k, n, dtype, op, path, r)
    g.close()


CASES = [(d, o) for d in DTYPE_NAMES for o in ("sum", "prod", "min", "max", "avg")
         if not (o == "avg" and np.dtype(BF16 if d == "bfloat16" else d) not in FLOATING)]


@pytest.mark.parametrize("dtype,op", CASES, ids=[f"{d}-{o}" for d, o in CASES])
def test_allreduce_every_op_and_dtype(dtype, op):
    run(Collective.ALLREDUCE, 3, 37, dtype, op)


@pytest.mark.parametrize("path", ["fused", "copy"])
@pytest.mark.parametrize("collective", GROUP_COLLECTIVES)
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_paths_collectives_and_rank_counts(path, collective, k):
    for n in (0, 1, 5 * k + 1, 61 * k):
        if collective is Collective.REDUCE_SCATTER:
            n -= n % k
        run(collective, k, n, "float32", "sum", path=path)


@pytest.mark.parametrize("path", ["fused", "copy"])
def test_in_place(path):
    run(Collective.ALLREDUCE, 3, 50, "float32", "max", path=path, in_place=True)
    run(Collective.REDUCE_SCATTER, 3, 48, "int32", "sum", path=path, in_place=True)


@given(k=st.integers(1, 4), n=st.integers(0, 80), chunk=st.sampled_from([64, 128, 192]),
       nslots=st.integers(2, 3), path=st.sampled_from(["fused", "copy"]),
       collective=st.sampled_from(GROUP_COLLECTIVES),
       dtype=st.sampled_from(["float16", "bfloat16", "float32", "int64", "uint8"]))
@settings(max_examples=25 if SIMULATED else 200, deadline=None)
def test_random_cases(k, n, chunk, nslots, path, collective, dtype):
    if collective is Collective.REDUCE_SCATTER:
        n -= n % k
    run(collective, k, n, dtype, "sum", path=path, chunk=chunk, nslots=nslots)


def test_results_are_the_kind_passed_in_and_shaped():
    g = ring.Group(2, chunk_bytes=64)
    xs = [dev(np.ones((3, 4), np.float32)) for _ in range(2)]
    outs = g.allreduce(xs)
    g.synchronize()
    assert type(outs[0]) is type(xs[0]) and outs[0].shape == (3, 4)
    assert (host(outs[1]) == 2).all()


def test_bad_calls_name_the_argument():
    g = ring.Group(2, chunk_bytes=64)
    with pytest.raises(ValueError, match="xs: need one array per rank"):
        g.allreduce([dev(np.ones(4))])
    with pytest.raises(ValueError, match=r"xs\[1\]"):
        g.allreduce([dev(np.ones(4)), dev(np.ones(5))])
    with pytest.raises(ValueError, match="op: 'avg' needs a floating-point dtype"):
        g.allreduce([dev(np.ones(4, np.int32))] * 2, op="avg")
    with pytest.raises(ValueError, match="divisible"):
        g.reduce_scatter([dev(np.ones(5))] * 2)
    with pytest.raises(TypeError, match=r"xs\[0\]: expected"):
        g.allreduce([[1.0], [2.0]])
    with pytest.raises(ValueError, match="outs"):
        g.allreduce([dev(np.ones(4))] * 2, outs=[dev(np.ones(3))] * 2)
    with pytest.raises(ValueError, match="path"):
        ring.Group(2, path="teleport")
    with pytest.raises(ValueError, match="nslots"):
        ring.Group(2, nslots=1)
    g.close()
    with pytest.raises(ring.CommunicatorError):
        g.allreduce([dev(np.ones(4))] * 2)


@needs_gpu
@pytest.mark.parametrize("path", ["fused", "copy"])
def test_captured_graph_replays_the_collective(path):
    k, n = 4, 100_003
    g = ring.Group(k, chunk_bytes=64 << 10, path=path)
    xs = [dev(make(q, n, np.float32, seed=5)) for q in range(k)]
    outs = [dev(np.zeros(n, np.float32)) for _ in range(k)]
    graph = g.capture("allreduce", xs, outs)
    want = reference.expected("allreduce", [host(x) for x in xs], "sum", align=_align(4))
    for _ in range(3):
        for o in outs:
            o.copy_to_device(np.zeros(n, np.float32))
        graph.replay()
        g.synchronize()
        from numba import cuda
        cuda.synchronize()
        for r in range(k):
            assert host(outs[r]).tobytes() == want[r].tobytes()
    graph.close()
    g.close()
