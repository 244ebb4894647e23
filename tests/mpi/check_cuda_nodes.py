"""The 'cuda' device across (emulated) nodes: links inside a node by IPC, links between
nodes over MPI staged through pinned host memory (or straight from device memory with
RING_CUDA_AWARE_MPI=1), flat ring and two-level algorithms. Run with RING_NODES set.

Both algorithms are compared bit for bit with the exact reference of their own order of
reduction (tests/reference.py, independent of ring/), and each call checks from ring's log
that the algorithm asked for is the one that ran. Where the layout admits the two-level
algorithm it is tested; where it does not, asking for it must fail on every rank. Nothing
here skips."""

import numpy as np
import pytest
from mpi4py import MPI
from numba import cuda

import ring
from ring.cuda.enqueue import align

from .. import reference
from ..inputs import make
from .conftest import assert_ran, same_everywhere, two_level_nodes

CHUNK = 256
NODES = two_level_nodes(MPI.COMM_WORLD.size)  # 1: the layout has no two-level algorithm
ALGORITHMS = ["ring"] + (["hierarchical"] if NODES > 1 else [])
CASES = [("float32", "sum"), ("float32", "avg"), ("float16", "sum"), ("bfloat16", "avg"),
         ("int32", "max"), ("float64", "prod")]


@pytest.fixture(scope="module")
def dev():
    c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, algorithm="auto")
    yield c
    c.close()


def _gpu(a):
    return cuda.to_device(a.view(np.uint16) if a.dtype.name == "bfloat16" else a)


def test_links_cross_nodes(dev):
    assert dev.nodes > 1, "run with RING_NODES"


def test_the_kernel_path_falls_back_on_every_rank_with_one_warning(world):
    """path="kernel" needs every ring neighbour on this node: across nodes every rank takes
    the stream path (their counters must match), and rank 0 says so once."""
    import warnings
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path="kernel",
                              algorithm="ring")
    said = [w for w in seen if "path='kernel' cannot run" in str(w.message)]
    assert len(said) == (1 if c.rank == 0 else 0), [str(w.message) for w in seen]
    if said:
        assert "crosses nodes" in str(said[0].message)
    assert c._ctx.backend.kernel is None and c.path == "stream"
    _allreduce_is_exact(c)


def _allreduce_is_exact(c):
    """A float32 sum of 100 elements on c, bit for bit against the reference; closes c."""
    x = make(c.rank, 100, "float32")
    got = c.allreduce(_gpu(x)).copy_to_host()
    inputs = [make(q, 100, "float32") for q in range(c.size)]
    assert got.tobytes() == reference.allreduce(inputs, "sum", align=align(4)).tobytes()
    c.close()


def test_the_auto_path_takes_the_stream_path_across_nodes_without_a_word(world):
    """path="auto" runs the kernel only where every neighbour is on the rank's GPU: across
    nodes every rank takes the stream path, and nobody warns (nothing was asked for)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path="auto",
                              algorithm="ring")
    assert c._ctx.backend.kernel is None and c.path == "stream"
    _allreduce_is_exact(c)


def test_two_level_runs_exactly_where_the_layout_admits_it():
    c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK)
    x = _gpu(np.ones(8, np.float32))
    if NODES > 1:
        c.allreduce(x)
        assert_ran("hierarchical", "allreduce")  # "auto" takes it
        c.allreduce(x, algorithm="hierarchical")
        assert_ran("hierarchical", "allreduce")
    else:
        c.allreduce(x)
        assert_ran("ring", "allreduce")
        with pytest.raises(ValueError, match="'hierarchical' cannot run here"):
            c.allreduce(x, algorithm="hierarchical")
    c.close()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
@pytest.mark.parametrize("dtype,op", CASES)
def test_matches_the_exact_reference(dev, world, algorithm, collective, dtype, op):
    k, r = dev.size, dev.rank
    nodes = NODES if algorithm == "hierarchical" else 1
    for per in (0, 1, 13, 150):
        n = per * k if collective == "reduce_scatter" else per
        inputs = [make(q, n, dtype, op=op) for q in range(k)]
        kw = {"dtype": "bfloat16"} if dtype == "bfloat16" else {}
        opkw = {} if collective == "allgather" else {"op": op}
        got = getattr(dev, collective)(_gpu(inputs[r]), algorithm=algorithm, **opkw, **kw)
        assert_ran(algorithm, collective)
        got = got.copy_to_host().view(inputs[0].dtype)
        step = align(inputs[0].dtype.itemsize) if collective == "allreduce" else 1
        want = reference.expected(collective, inputs, op, nodes=nodes, align=step)[r]
        assert got.tobytes() == want.tobytes(), (algorithm, collective, dtype, op, n)
        if collective == "allreduce":
            assert same_everywhere(world, got)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8"])
def test_gather_scatter_alltoall_cross_nodes(dev, dtype):
    """The data-moving collectives run on the flat ring whatever the layout: chains whose
    ranks take different numbers of steps, through staged links between nodes."""
    k, r = dev.size, dev.rank
    kw = {"dtype": "bfloat16"} if dtype == "bfloat16" else {}
    for per in (0, 1, 37):
        inputs = [make(q, per * k, dtype, seed=8) for q in range(k)]
        got = dev.alltoall(_gpu(inputs[r]), **kw)
        assert_ran("ring", "alltoall")
        want = reference.expected("alltoall", inputs)[r]
        assert got.copy_to_host().view(want.dtype).tobytes() == want.tobytes()
        for root in (0, k - 1):
            got = dev.scatter(_gpu(inputs[r]), root=root, **kw)
            want = reference.expected("scatter", inputs, root=root)[r]
            assert got.copy_to_host().view(want.dtype).tobytes() == want.tobytes()
            mine = [x[:per] for x in inputs]
            got = dev.gather(_gpu(mine[r]), root=root, **kw)
            if r == root:
                assert got.copy_to_host().view(want.dtype).tobytes() == \
                    np.concatenate(mine).tobytes()
            else:
                assert got is None


@pytest.mark.parametrize("algorithm", ["naive", "ps", "tree"])
def test_the_message_algorithms_across_nodes(dev, world, algorithm):
    """naive, ps and tree run over MPI from host copies on any layout, bit for bit their
    reference, the same bits on every rank."""
    k, r = dev.size, dev.rank
    for dtype, op in (("float32", "avg"), ("bfloat16", "sum"), ("int32", "max")):
        inputs = [make(q, 37, dtype, op=op) for q in range(k)]
        kw = {"dtype": "bfloat16"} if dtype == "bfloat16" else {}
        got = dev.allreduce(_gpu(inputs[r]), op=op, algorithm=algorithm, **kw)
        assert_ran(algorithm, "allreduce")
        got = got.copy_to_host().view(inputs[0].dtype)
        want = reference.tree(inputs, op) if algorithm == "tree" else \
            reference.in_rank_order(inputs, op)
        assert got.tobytes() == want.tobytes(), (algorithm, dtype, op)
        assert same_everywhere(world, got)


def test_shared_memory_algorithms_are_refused_across_nodes(world):
    """oneshot and twoshot need every rank on one node: refused on every rank here."""
    from ring.schedule import Collective
    with ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK) as c:
        why = "it needs every rank of the communicator on one node"
        assert c.why_not("twoshot", Collective.ALLREDUCE, 16) == why
        with pytest.raises(ValueError, match=f"'oneshot' cannot run here: {why}"):
            c.allreduce(_gpu(np.ones(4, np.float32)), algorithm="oneshot")
    # (the refusal broke c: its close() drops local resources only)
