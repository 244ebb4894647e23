"""The 'cuda' device across (emulated) nodes: links inside a node by IPC, links between
nodes over MPI staged through pinned host memory (or straight from device memory with
RING_CUDA_AWARE_MPI=1), flat ring and two-level algorithms. Run with RING_NODES set.

The flat ring must match the simulated ring bitwise; the two-level algorithm must match the
host device's two-level algorithm bitwise (same plans, same reduction order)."""

import numpy as np
import pytest
from numba import cuda

import ring
from ring import simulate
from ring.cuda.group import _align
from ring.ops import Op
from ring.schedule import Collective

from ..inputs import make
from .conftest import same_everywhere

CHUNK = 256
ALGORITHMS = ["ring", "hierarchical"]
CASES = [("float32", "sum"), ("float32", "avg"), ("float16", "sum"), ("bfloat16", "avg"),
         ("int32", "max"), ("float64", "prod")]


@pytest.fixture(scope="module", params=ALGORITHMS)
def pair(request):
    alg = request.param
    dev = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, algorithm="auto")
    if alg == "hierarchical" and dev._hier_why:
        dev.close()
        pytest.skip(f"two-level does not apply: {dev._hier_why}")
    host = ring.Communicator(device="host", timeout=60, chunk_bytes=CHUNK)
    yield alg, dev, host
    dev.close()
    host.close()


def _gpu(a):
    return cuda.to_device(a.view(np.uint16) if a.dtype.name == "bfloat16" else a)


def test_links_cross_nodes(pair):
    _, dev, _ = pair
    assert dev._topo.nnodes > 1, "run with RING_NODES"


@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
@pytest.mark.parametrize("dtype,op", CASES)
def test_matches_the_reference_bitwise(pair, world, collective, dtype, op):
    alg, dev, host = pair
    k, r = dev.size, dev.rank
    coll = Collective[collective.upper()]
    for per in (0, 1, 13, 150):
        n = per * k if coll is Collective.REDUCE_SCATTER else per
        inputs = [make(q, n, dtype, op=op) for q in range(k)]
        kw = {"dtype": "bfloat16"} if dtype == "bfloat16" else {}
        opkw = {} if coll is Collective.ALLGATHER else {"op": op}
        got = getattr(dev, collective)(_gpu(inputs[r]), algorithm=alg, **opkw, **kw)
        got = got.copy_to_host().view(inputs[0].dtype)
        if alg == "ring":
            align = _align(inputs[0].dtype.itemsize) if coll is Collective.ALLREDUCE else 1
            want = simulate.run(coll, inputs, Op[op.upper()] if opkw else Op.SUM, CHUNK, 2,
                                align)[r]
        else:
            want = getattr(host, collective)(inputs[r], algorithm=alg, **opkw)
        assert got.tobytes() == want.tobytes(), (alg, collective, dtype, op, n)
        if coll is Collective.ALLREDUCE:
            assert same_everywhere(world, got)
