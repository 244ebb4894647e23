"""The 'cuda' device across processes (CUDA IPC, stream memory operations), on real ranks
sharing the GPUs of one node. GPU only: the outer test skips without one."""

import numpy as np
import pytest

import ring
from ring import simulate
from ring.cuda.group import _align
from ring.ops import Op
from ring.schedule import Collective

from ..inputs import DTYPE_NAMES, make
from .conftest import same_everywhere

cp = pytest.importorskip("cupy")
CHUNK = 4096


@pytest.fixture(scope="module")
def gcomm():
    c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK)
    assert c.device == "cuda"
    yield c
    c.close()


def _gpu(a):
    return cp.asarray(a.view(np.uint16) if a.dtype.name == "bfloat16" else a)


def _host(d, dtype):
    a = cp.asnumpy(d)
    return a.view(dtype) if np.dtype(dtype).name == "bfloat16" else a


CASES = [(d, o) for d in DTYPE_NAMES for o in ("sum", "prod", "min", "max", "avg")
         if not (o == "avg" and d in ("int32", "int64", "uint8"))]


@pytest.mark.parametrize("dtype,op", CASES)
def test_allreduce_matches_the_simulated_ring_bitwise(gcomm, world, dtype, op):
    k, r = gcomm.size, gcomm.rank
    for n in (0, 1, 37, 3001, 1 << 16 | 5):
        inputs = [make(q, n, dtype, op=op) for q in range(k)]
        kw = {"dtype": "bfloat16"} if dtype == "bfloat16" else {}
        got = gcomm.allreduce(_gpu(inputs[r]), op=op, **kw)
        assert isinstance(got, cp.ndarray)
        want = simulate.run(Collective.ALLREDUCE, inputs, Op[op.upper()], CHUNK, 2,
                            _align(inputs[0].dtype.itemsize))[r]
        host = _host(got, inputs[0].dtype)
        assert host.tobytes() == want.tobytes(), (dtype, op, n)
        assert same_everywhere(world, host)


@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
def test_reduce_scatter_and_allgather(gcomm, collective):
    k, r = gcomm.size, gcomm.rank
    for per in (0, 1, 7, 5000):
        n = per * k if collective == "reduce_scatter" else per
        inputs = [make(q, n, "float32") for q in range(k)]
        got = getattr(gcomm, collective)(_gpu(inputs[r]))
        want = simulate.run(Collective[collective.upper()], inputs, Op.SUM, CHUNK, 2)[r]
        assert cp.asnumpy(got).tobytes() == want.tobytes()


def test_in_place_and_out(gcomm):
    k = gcomm.size
    x = cp.arange(1000, dtype=cp.float32)
    assert gcomm.allreduce(x, out=x) is x
    assert bool((x == cp.arange(1000, dtype=cp.float32) * k).all())
    out = cp.empty(1000, cp.float32)
    assert gcomm.allreduce(cp.ones(1000, cp.float32), out=out, op="max") is out


def test_numpy_arrays_are_refused_on_every_rank(world):
    c = ring.Communicator(device="cuda", timeout=60)
    with pytest.raises((TypeError, ring.MismatchError)):
        c.allreduce(np.ones(4) if c.rank == 0 else cp.ones(4))
    c.close()
