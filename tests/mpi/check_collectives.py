"""End-to-end collectives on the host device against exact references.

Every result is compared bit for bit with tests/reference.py, which follows the documented
order of reduction of the algorithm that must run (flat ring, two-level under RING_NODES,
the chain for broadcast and reduce) with plain NumPy; and every call checks, from ring's
log, that this algorithm is the one that ran."""

import json
import time

import numpy as np
import pytest
from mpi4py import MPI

import ring
import ringtypes
from ring.options import COMPRESSIONS

from .. import reference
from ..inputs import CROSS_CASES, CROSS_SECTION, DTYPE_NAMES, REDUCIBLE_NAMES, make, same_bits
from .conftest import NO_RULES, TIMEOUT, arguments, assert_ran, emulated_nodes, last_call, same_everywhere, two_level_nodes

OPS = ["sum", "prod", "min", "max", "avg"]
TWO_LEVEL = ("allreduce", "reduce_scatter", "allgather")  # "auto" takes two-level for these


def counts(k):
    return sorted({0, 1, k - 1, k + 1, 7 * k, 37, 300})


def cases():
    if CROSS_SECTION:
        yield from CROSS_CASES
        return
    for dtype in REDUCIBLE_NAMES:
        for op in OPS:
            if op == "avg" and np.dtype(ringtypes.BY_NAME[dtype]) not in ringtypes.FLOATING:
                continue
            yield dtype, op


def _check(collective, got, inputs, op, rank, algorithm=None, root=0):
    """got is bitwise the exact result of the algorithm that must have run, and it ran:
    algorithm None is "auto" (two-level on equal emulated nodes, else the flat ring)."""
    k = len(inputs)
    nodes = two_level_nodes(k) if algorithm is None and collective in TWO_LEVEL else 1
    assert_ran("hierarchical" if nodes > 1 else "ring", collective)
    want = reference.expected(collective, inputs, op, nodes=nodes, root=root)[rank]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), f"{collective} {op} differs from the exact reference"


@pytest.mark.parametrize("dtype,op", list(cases()))
def test_allreduce(comm, world, dtype, op):
    k, r = comm.size, comm.rank
    for n in counts(k):
        for in_place in (False, True):
            inputs = [make(q, n, dtype, op=op) for q in range(k)]
            x = inputs[r].copy()
            if in_place:
                got = comm.allreduce(x, out=x, op=op)
                assert got is x
            else:
                got = comm.allreduce(x, op=op)
                assert x.tobytes() == inputs[r].tobytes(), "input changed out of place"
            _check("allreduce", got, inputs, op, r)
            assert same_everywhere(world, got)
            again = comm.allreduce(inputs[r].copy(), op=op)
            assert again.tobytes() == got.tobytes(), "not the same bits from run to run"


@pytest.mark.parametrize("dtype,op", list(cases()))
def test_reduce_scatter(comm, world, dtype, op):
    k, r = comm.size, comm.rank
    for per_rank in (0, 1, 3, 40):
        n = per_rank * k
        inputs = [make(q, n, dtype, op=op) for q in range(k)]
        for in_place in (False, True):
            x = inputs[r].copy()
            out = x[r * per_rank:(r + 1) * per_rank] if in_place else None
            got = comm.reduce_scatter(x, out=out, op=op)
            assert got.shape == (per_rank,)
            _check("reduce_scatter", got, inputs, op, r)


@pytest.mark.parametrize("compression", ["bf16", "fp16"])
@pytest.mark.parametrize("op", ["sum", "avg"])
def test_compressed_allreduce_and_reduce_scatter(comm, world, compression, op):
    """compression=: float32 on a 16-bit wire, bitwise the reference's order and rounding,
    in place, async and repeated. The all-reduce on "auto" takes the two-level algorithm
    where it would without compression (equal emulated nodes of two or more ranks: the wire
    only across nodes), and the flat ring when asked for it; reduce-scatter the flat ring."""
    k, r = comm.size, comm.rank
    wire = ringtypes.BY_NAME[COMPRESSIONS[compression]]
    nodes = two_level_nodes(k)
    for n in counts(k):
        inputs = [make(q, n, "float32", op=op) * np.float32(1 + q) for q in range(k)]
        flat = reference.compressed(inputs, op, wire)
        if nodes > 1:
            got = comm.allreduce(inputs[r].copy(), op=op, compression=compression,
                                 algorithm="ring")
            assert_ran("ring", "allreduce")
            assert got.tobytes() == flat.tobytes()
        want = reference.compressed(inputs, op, wire, nodes=nodes)
        got = comm.allreduce(inputs[r].copy(), op=op, compression=compression)
        assert_ran("hierarchical" if nodes > 1 else "ring", "allreduce")
        assert got.dtype == np.float32 and got.tobytes() == want.tobytes()
        assert same_everywhere(world, got)
        x = inputs[r].copy()
        assert comm.allreduce(x, out=x, op=op, compression=compression) is x
        assert x.tobytes() == want.tobytes()
        work = comm.allreduce(inputs[r], op=op, compression=compression, async_op=True)
        assert work.wait().tobytes() == want.tobytes()
        per = n - n % k
        blocks = reference.compressed([x[:per] for x in inputs], op, wire, "reduce_scatter")
        got = comm.reduce_scatter(inputs[r][:per].copy(), op=op, compression=compression)
        assert_ran("ring", "reduce_scatter")
        assert got.tobytes() == blocks[r].tobytes()
        x, b = inputs[r][:per].copy(), per // k  # in place: the last step's sum kept in x
        got = comm.reduce_scatter(x, out=x[r * b:(r + 1) * b], op=op, compression=compression)
        assert got.tobytes() == blocks[r].tobytes()


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_allgather(comm, world, dtype):
    k, r = comm.size, comm.rank
    for n in (0, 1, 5, 130):
        inputs = [make(q, n, dtype) for q in range(k)]
        want = np.concatenate(inputs)
        got = comm.allgather(inputs[r].copy())
        _check("allgather", got, inputs, "sum", r)
        out = np.empty(k * n, dtype)
        out[r * n:(r + 1) * n] = inputs[r]
        got = comm.allgather(out[r * n:(r + 1) * n], out=out)  # in place, as in NCCL
        assert got is out and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_broadcast_from_every_root(comm, world, dtype):
    k, r = comm.size, comm.rank
    for root in range(k):
        for n in (0, 1, 5, 300):
            inputs = [make(q, n, dtype) for q in range(k)]
            x = inputs[r].copy()
            assert comm.broadcast(x, root=root) is x
            _check("broadcast", x, inputs, "sum", r, root=root)


@pytest.mark.parametrize("dtype,op", list(cases()))
def test_reduce_to_every_root(comm, world, dtype, op):
    k, r = comm.size, comm.rank
    for root in range(k):
        for n in (0, 1, k + 1, 300):
            inputs = [make(q, n, dtype, op=op) for q in range(k)]
            x = inputs[r].copy()
            in_place = r == root and n % 2 == 1
            got = comm.reduce(x, out=x if in_place else None, op=op, root=root)
            if r != root:
                assert got is None and x.tobytes() == inputs[r].tobytes()
                continue
            assert got.shape == x.shape and (got is x) == in_place
            _check("reduce", got, inputs, op, r, root=root)


def test_shapes_and_the_returned_object(comm):
    k = comm.size
    x = np.ones((3, 5, 2), np.float32)
    y = comm.allreduce(x)
    assert y.shape == x.shape and (y == k).all()
    out = np.empty(30, np.float32)
    assert comm.allreduce(x, out=out) is out and (out == k).all()
    g = comm.allgather(np.ones((2, 2), np.int32))
    assert g.shape == (4 * k,)
    s = comm.reduce_scatter(np.ones((k, 4), np.int64))
    assert s.shape == (4,) and (s == k).all()


def test_ops_as_constants_and_async(comm):
    x = np.arange(10, dtype=np.float64) + comm.rank
    work = comm.allreduce(x, op=ring.MAX, async_op=True)
    assert isinstance(work, ring.Work)
    assert (work.wait() == np.arange(10) + comm.size - 1).all() and work.is_completed()


@pytest.mark.parametrize("op", [ring.MIN, "min", "MIN", "Min"])
def test_an_op_is_a_constant_or_its_name_in_any_case(comm, op):
    """As MPI.MIN and torch's ReduceOp.MIN are spelt: a name is taken in any case."""
    got = comm.allreduce(np.arange(6, dtype=np.float32) + comm.rank, op=op)
    assert np.array_equal(got, np.arange(6, dtype=np.float32))


def test_async_calls_run_behind_the_caller_in_order(comm, world):
    """Host async_op: the call returns before its peers have even arrived (it runs on the
    communicator's progress thread), several may be in flight, mixed with a blocking call
    that waits for them; every result is right."""
    k, r = comm.size, comm.rank
    if r == 0:
        first = comm.allreduce(np.full(7, 1.0), async_op=True)
        assert not first.is_completed()  # nobody else has called yet
        for q in range(1, k):
            world.send(None, dest=q, tag=77)
        assert np.array_equal(first.result(), np.full(7, float(k)))  # waits as wait() does
    else:
        world.recv(source=0, tag=77)  # rank 0's call has returned: it did not block
        first = comm.allreduce(np.full(7, 1.0), async_op=True)
    x = np.arange(12, dtype=np.int64) + r
    works = [comm.allgather(x, async_op=True), comm.allreduce(x, op="max", async_op=True),
             comm.broadcast(x.copy(), root=k - 1, async_op=True)]
    now = comm.allreduce(np.ones(3, np.float32))  # after the three, in call order
    assert (now == k).all()
    assert all(w.is_completed() for w in works)
    g, m, b = (w.wait() for w in works)
    assert (first.wait() == k).all()
    assert (g == np.concatenate([np.arange(12) + q for q in range(k)])).all()
    assert (m == np.arange(12) + k - 1).all() and (b == np.arange(12) + k - 1).all()


def test_a_wait_with_a_timeout_gives_up_and_the_call_goes_on(comm, world):
    """Work.wait(timeout), as torch's: rank 0's call waits for peers that have not called
    yet, so a wait of 0.2 s raises ring.TimeoutError there (a bad timeout a ValueError),
    and nothing is broken: its later wait() gives the result, and the next call runs."""
    k, r = comm.size, comm.rank
    x = np.arange(5, dtype=np.float64) + r
    if r == 0:
        work = comm.allreduce(x, async_op=True)
        if k > 1:
            with pytest.raises(ring.TimeoutError, match="not finished within wait"):
                work.wait(timeout=0.2)
            assert not work.is_completed()
        for bad in (0, -1.0, True, "1", float("nan")):
            with pytest.raises(ValueError, match="timeout"):
                work.wait(timeout=bad)
        for q in range(1, k):
            world.send(None, dest=q, tag=78)
        got = work.wait(timeout=120)
    else:
        world.recv(source=0, tag=78)  # rank 0's wait has given up
        got = comm.allreduce(x, async_op=True).wait()
    assert np.array_equal(got, sum(np.arange(5, dtype=np.float64) + q for q in range(k)))
    assert (comm.allreduce(np.ones(3)) == k).all()


def test_repeated_calls_give_the_same_bits(comm, world):
    x = make(comm.rank, 1001, "float32")
    a = comm.allreduce(x)
    b = comm.allreduce(x)
    c = comm.allreduce(x, chunk_bytes=64)  # chunking does not change the reduction order
    assert a.tobytes() == b.tobytes() == c.tobytes()
    assert same_everywhere(world, a)
    flat = comm.allreduce(x, algorithm="ring")  # the flat ring, on any layout
    _check("allreduce", flat, [make(q, 1001, "float32") for q in range(comm.size)], "sum",
           comm.rank, algorithm="ring")


def test_many_chunks_through_few_slots(world):
    # More chunks per call than slots, several calls back to back: flow control holds.
    with ring.Communicator(device="host", chunk_bytes=64, nslots=2, timeout=60) as c:
        for n in (1000, 333, 4096):
            x = np.arange(n, dtype=np.int64) * (c.rank + 1)
            assert (c.allreduce(x) == np.arange(n) * (c.size * (c.size + 1) // 2)).all()


def test_a_call_naming_no_chunk_is_cut_for_its_walk(world):
    # host, one node: dtypes and ops the compiled walk computes get COMPILED_CHUNK_BYTES,
    # the others the slot size; a communicator given chunk_bytes keeps it for every call
    from ring.options import COMPILED_CHUNK_BYTES, DEFAULT_CHUNK_BYTES
    for given in (None, DEFAULT_CHUNK_BYTES["host"]):
        with ring.Communicator(device="host", chunk_bytes=given, timeout=60) as c:
            plans = []
            real = c._ctx.backend.run
            c._ctx.backend.run = lambda p, *a, **k: (plans.append(p), real(p, *a, **k))[1]
            one_node = c.nodes == 1 and given is None
            for dtype, op, chunk in (("float32", "sum", COMPILED_CHUNK_BYTES),
                                     ("int8", "max", COMPILED_CHUNK_BYTES),
                                     ("float32", "max", DEFAULT_CHUNK_BYTES["host"]),
                                     ("float16", "sum", DEFAULT_CHUNK_BYTES["host"])):
                x = np.ones(c.size << 20, dtype)
                got = c.allreduce(x, op=op, algorithm="ring")
                assert got[0] == (c.size if op == "sum" else 1)
                block = max(b - a for a, b in zip(plans[-1].blocks, plans[-1].blocks[1:]))
                chunk = chunk if one_node else DEFAULT_CHUNK_BYTES["host"]
                assert plans[-1].nchunks == -(-block * x.itemsize // chunk), (dtype, op)


def test_check_false_gives_the_same_results(world):
    with ring.Communicator(device="host", check=False, timeout=60, tuning=NO_RULES) as c:
        x = make(c.rank, 777, "float64")
        inputs = [make(q, 777, "float64") for q in range(c.size)]
        _check("allreduce", c.allreduce(x), inputs, "sum", c.rank)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("op", OPS)
def test_nan_and_inf_propagate_as_numpy_reductions_do(comm, world, dtype, op):
    k, r = comm.size, comm.rank
    t = np.dtype(ringtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)

    def data(q):
        v = np.array([q + 1.0, 2.0, 3.0, 4.0, 5.0, q + 0.5], np.float64)
        if q == 0:
            v[1], v[3] = np.inf, np.nan
        if q == k - 1:
            v[2] = -np.inf  # with k == 1: inf and -inf meet nowhere; NaN still wins
            v[4] = np.nan
        return v.astype(t)

    x = data(r)
    got = comm.allreduce(x, op=op)
    nodes = two_level_nodes(k)
    assert_ran("hierarchical" if nodes > 1 else "ring", "allreduce")
    want = reference.allreduce([data(q) for q in range(k)], op, nodes)
    # all six elements; NaN equals NaN here (its payload is not specified)
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
    assert np.isnan(got.astype(np.float64)[[3, 4]]).all()
    assert same_everywhere(world, got)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_gather_to_every_root(comm, world, dtype):
    k, r = comm.size, comm.rank
    for root in range(k):
        for n in (0, 1, 5, 130):
            inputs = [make(q, n, dtype) for q in range(k)]
            got = comm.gather(inputs[r].copy(), root=root)
            if r != root:
                assert got is None
                assert_ran("ring", "gather")
            else:
                _check("gather", got, inputs, "sum", r, root=root)
            # in place at the root: its x is block `root` of out (MPI_IN_PLACE)
            out = np.empty(k * n, inputs[0].dtype)
            out[r * n:(r + 1) * n] = inputs[r]
            x = out[r * n:(r + 1) * n] if r == root else inputs[r].copy()
            got = comm.gather(x, out=out if r == root else None, root=root)
            if r == root:
                assert got is out
                _check("gather", got, inputs, "sum", r, root=root)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_scatter_from_every_root(comm, world, dtype):
    k, r = comm.size, comm.rank
    for root in range(k):
        for per in (0, 1, 3, 40):
            inputs = [make(q, per * k, dtype) for q in range(k)]
            got = comm.scatter(inputs[r].copy(), root=root)
            assert got.shape == (per,)
            _check("scatter", got, inputs, "sum", r, root=root)
            # off the root x may be None (it is never read) when out is given
            out = np.empty(per, inputs[0].dtype)
            got = comm.scatter(inputs[r].copy() if r == root else None, out=out, root=root)
            assert got is out
            _check("scatter", got, inputs, "sum", r, root=root)
            # in place at the root: out is block `root` of x
            x = inputs[r].copy()
            out = x[r * per:(r + 1) * per] if r == root else np.empty(per, x.dtype)
            got = comm.scatter(x if r == root else None, out=out, root=root)
            assert got is out
            _check("scatter", got, inputs, "sum", r, root=root)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_alltoall(comm, world, dtype):
    k, r = comm.size, comm.rank
    for per in (0, 1, 3, 40):
        inputs = [make(q, per * k, dtype, seed=5) for q in range(k)]
        for in_place in (False, True):
            x = inputs[r].copy()
            got = comm.alltoall(x, out=x if in_place else None)
            assert (got is x) == in_place and got.shape == (per * k,)
            if not in_place:
                assert x.tobytes() == inputs[r].tobytes(), "input changed out of place"
            _check("alltoall", got, inputs, "sum", r)


@pytest.mark.parametrize("check", [True, False])
def test_barrier(comm, world, check):
    """No rank leaves the barrier before the last has entered it (the last rank comes 0.2 s
    late), with the agreement and without it (check=False: across nodes an MPI barrier
    under the deadline, on one node the exchange window's round)."""
    c = comm if check else ring.Communicator(device="host", timeout=TIMEOUT, check=False)
    for _ in range(3):
        if c.rank == c.size - 1:
            time.sleep(0.2)
        entered = time.monotonic()  # (one clock for every process of the machine)
        c.barrier()
        left = time.monotonic()
        assert_ran("mpi", "barrier")
        assert left >= max(world.allgather(entered))
    if not check:
        c.close()


ALGORITHMS = ["naive", "ps", "oneshot", "twoshot", "tree", "cma"]  # the ring's: above


def _runs_here(algorithm) -> bool:
    """twoshot and cma need every rank on one node (worked out from RING_NODES); oneshot
    runs across nodes too, by MPI."""
    return algorithm not in ("twoshot", "cma") or emulated_nodes(MPI.COMM_WORLD.size) == 1


def _shared() -> bool:
    """Every rank on one node: the exchange window (and the fast path) exist."""
    return emulated_nodes(MPI.COMM_WORLD.size) == 1


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dtype,op", list(cases()))
def test_every_allreduce_algorithm(comm, world, algorithm, dtype, op, monkeypatch):
    """Bit for bit the rank-order reference, the same bits on every rank, in place and
    out, every count; where the layout has no shared memory, a clear refusal. (cma: in
    one phase, then in two from 16 bytes on at 2 ranks, as a large call's from
    HALVES_BYTES and its multiples.)"""
    if algorithm == "cma" and _runs_here(algorithm):
        from ring.algorithms import cma
        monkeypatch.setattr(cma, "HALVES_BYTES", 1)
        with ring.Communicator(device="host", timeout=60) as c:  # (no signature kept yet)
            _every_allreduce(c, world, algorithm, dtype, op)
        monkeypatch.undo()
    if not _runs_here(algorithm):
        with ring.Communicator(device="host", timeout=60) as c:
            with pytest.raises(ValueError, match=f"'{algorithm}' cannot run here: it needs every "
                                                 "rank of the communicator on one node"):
                c.allreduce(np.ones(4), algorithm=algorithm)
        return  # (the refusal broke c: its close() drops local resources only)
    _every_allreduce(comm, world, algorithm, dtype, op)


def _every_allreduce(comm, world, algorithm, dtype, op):
    k, r = comm.size, comm.rank
    for n in counts(k):
        inputs = [make(q, n, dtype, op=op) for q in range(k)]
        want = reference.tree(inputs, op) if algorithm == "tree" else \
            reference.in_rank_order(inputs, op)
        for in_place in (False, True):
            x = inputs[r].copy()
            got = comm.allreduce(x, out=x if in_place else None, op=op, algorithm=algorithm)
            assert (got is x) == in_place and got.shape == want.shape
            assert_ran(algorithm, "allreduce")
            assert got.tobytes() == want.tobytes(), (algorithm, dtype, op, n, in_place)
        assert same_everywhere(world, got)


def test_auto_never_takes_an_algorithm_that_cannot_run(world):
    """Above the exchange's capacity, or across nodes, "auto" keeps to the ring."""
    from ring.options import EXCHANGE_BYTES
    with ring.Communicator(device="host", timeout=60, tuning=None) as c:
        from ring.schedule import Collective
        # a table that asks for oneshot at every size (buffers not registered: the host's)
        c._rules_of[Collective.ALLREDUCE, False, False] = [(1 << 40, "oneshot")]
        big = np.ones(EXCHANGE_BYTES // 4 + 1, np.float32)
        c.allreduce(big)
        assert_ran("hierarchical" if two_level_nodes(c.size) > 1 else "ring", "allreduce")
        c.allreduce(np.ones(8, np.float32))
        assert_ran("oneshot" if _runs_here("oneshot") else
                   ("hierarchical" if two_level_nodes(c.size) > 1 else "ring"), "allreduce")


def test_close_lets_go_of_what_an_algorithm_kept(world):
    """What an algorithm makes on its first call and keeps (two-level's rings: a backend for
    the node and one across nodes, each with its communicators) is let go of with the
    communicator, not only forgotten."""
    with ring.Communicator(device="host", timeout=60, tuning=NO_RULES) as c:
        c.allreduce(np.ones(8, np.float32))
        two_level = two_level_nodes(c.size) > 1
        assert_ran("hierarchical" if two_level else "ring", "allreduce")
        rings = c._ctx.kept.get("hierarchical")
        assert (rings is not None) == two_level
    if rings is not None:
        assert rings._col == MPI.COMM_NULL  # the ring across nodes' communicator, freed


REDUCING = ("reduce_scatter", "reduce")
MOVING = ("allgather", "broadcast", "gather", "scatter", "alltoall")
ROOTED = ("broadcast", "reduce", "gather", "scatter")


def _by_oneshot(comm, collective, inputs, op, root, in_place, **options):
    """One call of `collective` with `options`, checked bit for bit against the reference
    (the flat ring's order for reduce_scatter and reduce)."""
    r = comm.rank
    x, out = arguments(collective, inputs, r, root, in_place)
    kw = dict(options)
    if collective in REDUCING:
        kw["op"] = op
    if collective in ROOTED:
        kw["root"] = root
    got = comm.broadcast(x, **kw) if collective == "broadcast" else \
        getattr(comm, collective)(x, out=out, **kw)
    want = reference.expected(collective, inputs, op, root=root)[r]
    if want is None:
        assert got is None
        return
    if out is not None:
        assert got is out
    if collective == "broadcast":
        assert got is x
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (collective, op, in_place, root)


@pytest.fixture(params=["oneshot", "cma"])
def by_recipe(request, monkeypatch):
    """The algorithms that follow ring/recipe.py on one node: oneshot through the window,
    cma from the peers' arrays (its folds in pieces of 3 elements here, as a large call's
    are in pieces of PIECE_BYTES, and its all-reduce and reduce in two phases from 256
    bytes at 2 ranks, 64 at 3 and 16 from 4, as a large one's from HALVES_BYTES and its
    multiples: both ways at every rank count)."""
    if request.param == "cma":
        from ring.algorithms import cma
        monkeypatch.setattr(cma, "PIECE_BYTES", 12)
        monkeypatch.setattr(cma, "HALVES_BYTES", 16)
    return request.param


@pytest.mark.parametrize("collective", REDUCING)
@pytest.mark.parametrize("dtype,op", list(cases()))
def test_reduce_scatter_and_reduce_by_oneshot(comm, world, collective, dtype, op, by_recipe):
    """oneshot and cma on one node (ring/recipe.py's recipe): the flat ring's order, so the
    same bits as the ring (both are checked against one reference), every root, in place
    and out; across nodes a clear refusal."""
    if not _shared():
        return  # test_oneshot_needs_one_node_beyond_allreduce
    k = comm.size
    for per_rank in (0, 1, 3, 40):
        inputs = [make(q, per_rank * k + (collective == "reduce"), dtype, op=op)
                  for q in range(k)]
        for root in range(k) if collective == "reduce" else (0,):
            for in_place in (False, True):
                _by_oneshot(comm, collective, inputs, op, root, in_place, algorithm=by_recipe)
                assert_ran(by_recipe, collective)


@pytest.mark.parametrize("collective", MOVING)
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_moving_collectives_by_oneshot(comm, world, collective, dtype, by_recipe):
    if not _shared():
        return  # test_oneshot_needs_one_node_beyond_allreduce
    k = comm.size
    for per_rank in (0, 1, 5, 130):
        inputs = [make(q, per_rank * k + 1 if collective in ("allgather", "gather",
                                                               "broadcast") else per_rank * k,
                       dtype) for q in range(k)]
        for root in range(k) if collective in ROOTED else (0,):
            for in_place in (False, True):
                _by_oneshot(comm, collective, inputs, "sum", root, in_place,
                            algorithm=by_recipe)
                assert_ran(by_recipe, collective)


@pytest.mark.parametrize("collective,dtype,op", [
    *[(c, d, o) for c in REDUCING for d, o in [("float32", "sum"), ("bfloat16", "avg"),
                                               ("float32", "min"), ("int8", "prod")]],
    *[(c, d, "sum") for c in MOVING for d in ("float32", "bfloat16", "float8_e4m3fn")],
    ("allreduce", "float32", "sum"), ("allreduce", "int8", "prod"),
    ("allreduce", "float64", "avg")])
def test_repeated_collectives_take_the_fast_path(world, collective, dtype, op, by_recipe):
    """Every collective's oneshot keeps its signature (ring/host/repeated.py) too: a call repeated
    with new data takes the fast path, with the reference's bits (compiled, or NumPy's loops
    for 16-bit floats and floating min / max), out new, given and in place, every root.
    cma's too (ring/host/repeated_cma.py), where its fold is compiled (the others take the
    full path every call); its folds in pieces of 3 elements here."""
    if not _shared():
        return
    kept = by_recipe == "oneshot" or collective in MOVING or not (
        dtype in ("bfloat16", "float16") or op in ("min", "max") and dtype.startswith("float"))
    with ring.Communicator(device="host", timeout=60, algorithm=by_recipe) as c:
        k = c.size
        for per_rank in (1, 7):
            n = per_rank * k + (collective in ("allgather", "gather", "broadcast", "reduce"))
            for root in range(k) if collective in ROOTED else (0,):
                for in_place in ("given", False, True):
                    for i in range(3):
                        inputs = [make(q, n, dtype, seed=i, op=op) for q in range(k)]
                        if collective == "allreduce":
                            _allreduce_by(c, inputs, op, in_place)
                        else:
                            _by_oneshot(c, collective, inputs, op, root, in_place)
                        assert last_call()["algorithm"] == by_recipe
                        assert c.last_algorithm == by_recipe
                        if i:
                            assert last_call().get("path") == ("fast" if kept else None), \
                                (n, root, in_place)


@pytest.mark.parametrize("collective", ["allreduce", "allgather"])
def test_views_of_one_buffer_in_place_and_apart_both_stay_fast(world, collective, by_recipe):
    """x and out as views of one buffer, in place (as the harness places them) and apart
    (x and out side by side), in turn, three times each, with new data: the fast path
    guesses views of one array in place (repeated._kind), so a call apart first meets the
    in-place signature, which posts nothing, then its own. Each call right, and from the
    second of each placement on, fast (across nodes: oneshot's all-reduce only)."""
    if not _shared() and (collective != "allreduce" or by_recipe == "cma"):
        return
    with ring.Communicator(device="host", timeout=60, algorithm=by_recipe) as c:
        k, r, n = c.size, c.rank, 5
        m = n * k if collective == "allgather" else n
        for i in range(3):
            for place in ("in place", "apart"):
                inputs = [make(q, n, "float32", seed=10 * i + q) for q in range(k)]
                want = reference.in_rank_order(inputs, "sum") if collective == "allreduce" \
                    else reference.expected(collective, inputs)[r]
                buf = np.zeros(n + m, np.float32)
                if place == "apart":
                    x, out = buf[:n], buf[n:]
                elif collective == "allgather":
                    x, out = buf[r * n:(r + 1) * n], buf[:m]
                else:
                    x, out = buf[:n], buf[:n]
                x[...] = inputs[r]
                got = getattr(c, collective)(x, out=out)
                assert got is out and got.tobytes() == want.tobytes(), (place, i)
                if place == "apart":
                    assert x.tobytes() == inputs[r].tobytes(), i  # x not written
                assert last_call()["algorithm"] == by_recipe
                assert last_call().get("path") == ("fast" if i else None), (place, i)


def _allreduce_by(c, inputs, op, in_place):
    """One all-reduce (out new, given or x), checked bit for bit against the rank-order
    reference."""
    x = inputs[c.rank].copy()
    out = {"given": np.empty_like(x), False: None, True: x}[in_place]
    got = c.allreduce(x, out=out, op=op)
    assert got.tobytes() == reference.in_rank_order(inputs, op).tobytes(), in_place
    assert got is out if out is not None else got.shape == x.shape


@pytest.mark.parametrize("collective", ["allgather", "broadcast", "reduce_scatter"])
@pytest.mark.parametrize("change", ["count", "root", "op", "bad out"])
def test_a_rank_leaving_the_fast_path_of_any_collective_is_caught(world, collective, change,
                                                                  by_recipe):
    """As for the all-reduce: the ranks on the fast path compare records, so one rank's
    different call (count, root, op) or bad argument raises on every rank (oneshot's and
    cma's)."""
    if not _shared() or (change == "root") != (collective == "broadcast") or \
            change == "op" and collective != "reduce_scatter":
        return
    with ring.Communicator(device="host", timeout=60, algorithm=by_recipe) as c:
        k, odd = c.size, c.rank == c.size - 1
        call = {"allgather": c.allgather, "reduce_scatter": c.reduce_scatter,
                "broadcast": lambda x, out=None, op=None, root=0: c.broadcast(x, root=root)
                }[collective]
        for _ in range(2):
            call(np.ones(2 * k, np.float32))
        assert last_call().get("path") == "fast"
        x, kw = np.ones(2 * k, np.float32), {}
        if odd and change == "count":
            x = np.ones(3 * k, np.float32)
        if odd and change == "root":
            kw["root"] = k - 1 if k > 1 else 0
        if odd and change == "op":
            kw["op"] = "max"
        if odd and change == "bad out":
            kw["out"] = np.empty(1, np.float32)
        if k == 1 and change != "bad out":
            call(x, **kw)
            return
        with pytest.raises(ValueError if odd and change == "bad out" else ring.MismatchError):
            call(x, **kw)


def test_cma_runs_past_the_window_and_fails_on_every_rank(world, monkeypatch):
    """cma has no size limit of its own (here one element past oneshot's window, its folds
    in pieces); a read the kernel refuses fails the call on every rank, naming the rank;
    a communicator whose probe found one rank unable to read another's memory refuses cma
    on every rank with that reason. (Across nodes: test_every_allreduce_algorithm.)"""
    if not _shared():
        return
    import errno

    from ring.options import EXCHANGE_BYTES
    from ring.transport import cma
    k, r = world.size, world.rank
    n = EXCHANGE_BYTES // 4 + 1
    inputs = [np.arange(n, dtype=np.float32) * (q + 1) for q in range(k)]
    with ring.Communicator(device="host", timeout=60) as c:
        got = c.allgather(inputs[r], algorithm="cma")
        assert_ran("cma", "allgather")
        assert got.tobytes() == np.concatenate(inputs).tobytes()
        x = inputs[r].copy()
        assert c.allreduce(x, out=x, algorithm="cma") is x
        assert x.tobytes() == reference.in_rank_order(inputs, "sum").tobytes()
        if k == 1:
            return
        real = cma.read

        def refused(pid, address, into):
            if r == k - 1:
                raise OSError(errno.EPERM, "refused")
            real(pid, address, into)

        monkeypatch.setattr(cma, "read", refused)
        with pytest.raises(ring.RingError, match=f"failed on rank {k - 1} "
                                                 r"\(Operation not permitted\)"):
            c.allgather(inputs[r][1:], algorithm="cma")  # (a new signature: the full path)
        monkeypatch.undo()
        with pytest.raises(ring.CommunicatorError):
            c.allgather(inputs[r], algorithm="cma")
    monkeypatch.setattr(cma, "why_not", lambda *a: "no" if r == 0 else None)
    with ring.Communicator(device="host", timeout=60) as c:
        assert c._ctx.exchange.cma == "rank 0 cannot read rank 1's memory (no)"
        c.alltoall(np.ones(4 * k, np.float32))  # auto: another algorithm
        with pytest.raises(ValueError, match="'cma' cannot run here: rank 0 cannot read rank "
                                             "1's memory"):
            c.alltoall(np.ones(4 * k, np.float32), algorithm="cma")


# how late the last rank reads: long beside a rank returning and writing x (microseconds),
# short beside the test (24-36 late reads a job, each making every rank wait)
LATE_S = 0.1


@pytest.mark.parametrize("collective", ["allgather", "allreduce", "allreduce in halves",
                                        "alltoall", "reduce", "reduce in halves"])
def test_cma_reads_x_as_it_was_however_late(world, monkeypatch, collective):
    """A rank that reads its peers' memory late (here the last, LATE_S behind) still reads
    their x as it was at the call: no rank returns, and lets its caller write x, before
    every peer has read it; and in place, where a rank writes what it posted (all-reduce,
    all-to-all), the peers read a copy of it. An all-reduce or a reduce in two phases posts
    x itself: no rank writes a block of it before every peer has read that block."""
    if not _shared() or world.size == 1:
        return
    if collective.endswith(" in halves"):
        from ring.algorithms import cma as algorithm
        monkeypatch.setattr(algorithm, "HALVES_BYTES", 1)
        collective = collective.split()[0]
    from ring.transport import cma
    k, r = world.size, world.rank
    from ring.host import compiled_cma, compiled_round
    if r == k - 1:
        real, rest = cma.read, compiled_cma.rest

        def late(pid, address, into):
            time.sleep(LATE_S)
            real(pid, address, into)

        def late_rest(*args):  # the fast path's reads (ring/host/repeated_cma.py)
            time.sleep(LATE_S)
            return rest(*args)

        def late_whole(plan, x, out, sent, number, seq, spins, yields, memory, pids, parts,
                       piece):  # compiled_cma.whole's call, then its rest, late
            status = compiled_cma.call(plan, x, out, sent, number, seq, spins, yields, memory)
            if status != compiled_round.DONE:
                return status
            return late_rest(plan, x, out, seq, 0, pids, parts, piece, spins, yields, seq + 1)

        monkeypatch.setattr(cma, "read", late)
        monkeypatch.setattr(compiled_cma, "rest", late_rest)
        monkeypatch.setattr(compiled_cma, "whole", late_whole)
    inputs = [make(q, 6 * k, "float32", op="sum") for q in range(k)]
    with ring.Communicator(device="host", timeout=60) as c:
        for in_place in (False, True):
            for i in range(2):  # the full path, then the fast path
                root = 0  # (a reduce: the root writes its x in place while the last reads it)
                x, out = arguments(collective, inputs, r, root, in_place)
                kw = {"root": root} if collective == "reduce" else {}
                got = getattr(c, collective)(x, out=out, algorithm="cma", **kw)
                assert_ran("cma", collective)
                if i:
                    assert last_call().get("path") == "fast"
                want = reference.in_rank_order(inputs, "sum") if collective == "allreduce" \
                    else reference.expected(collective, inputs, "sum", root=root)[r]
                if x is not None and not in_place:
                    x[...] = -7  # the caller's next use of x, right away
                if want is None:
                    assert got is None
                else:
                    assert got.tobytes() == want.tobytes(), (collective, in_place)
                world.Barrier()


@pytest.mark.parametrize("collective", ["reduce", "gather"])
@pytest.mark.parametrize("algorithm", ["ring", "oneshot", "cma", "cma in halves"])
def test_an_out_given_off_the_root_is_left_as_it_was(world, monkeypatch, collective,
                                                      algorithm):
    """A reduce's or a gather's ranks off the root get None, and an out they pass is not
    touched, nor their x (ring/communicator.py's promise), whatever the algorithm: cma's
    reduce in two phases too, whose ranks off the root fold their block into a buffer of
    their own. Twice a root: the full path, then the fast path."""
    k, r = world.size, world.rank
    if algorithm.startswith(("oneshot", "cma")) and not _shared():
        return
    if algorithm == "cma in halves":
        from ring.algorithms import cma
        monkeypatch.setattr(cma, "HALVES_BYTES", 1)
    inputs = [make(q, 6 * k + 1, "float32", op="sum") for q in range(k)]
    with ring.Communicator(device="host", timeout=60, algorithm=algorithm.split()[0]) as c:
        for root in range(k):
            want = reference.expected(collective, inputs, "sum", root=root)[root]
            for _ in range(2):
                x = inputs[r].copy()
                out = np.full(want.shape, 7, want.dtype)
                got = getattr(c, collective)(x, out=out, root=root)
                assert x.tobytes() == inputs[r].tobytes(), (collective, root)
                if r == root:
                    assert got is out and got.tobytes() == want.tobytes(), root
                else:
                    assert got is None and (out == 7).all(), (collective, root)
                assert_ran(algorithm.split()[0], collective)


def test_a_read_that_fails_on_the_fast_path_fails_on_every_rank(world, monkeypatch):
    """cma's kept calls read in compiled code (ring/host/repeated_cma.py): a read that fails
    there (here the last rank's, from a process id that names no process) fails the call
    on every rank, naming the rank and why, as the full path's does."""
    if not _shared() or world.size == 1:
        return
    from ring.host import repeated_cma
    k, r = world.size, world.rank
    with ring.Communicator(device="host", timeout=60) as c:
        x = np.ones(5, np.float32)
        for _ in range(2):
            assert (c.allgather(x, algorithm="cma") == 1).all()
        assert last_call().get("path") == "fast"
        if r == k - 1:  # (the kept signature's process ids, which its reads take)
            kept = [s for s in c._fast.values() if isinstance(s, repeated_cma.Kept)]
            assert len(kept) == 1
            monkeypatch.setattr(kept[0], "pids", np.full_like(kept[0].pids, 2**31 - 1))
        with pytest.raises(ring.RingError, match=f"failed on rank {k - 1} "
                                                 r"\(No such process\)"):
            c.allgather(x, algorithm="cma")
        with pytest.raises(ring.CommunicatorError):
            c.allgather(x, algorithm="cma")


def test_oneshot_needs_one_node_beyond_allreduce(world):
    """oneshot runs every collective through the exchange window, so only with every
    rank on one node (its all-reduce alone goes by MPI across nodes); the refusal names
    why, and so does one past the window's capacity."""
    from ring.options import EXCHANGE_BYTES
    with ring.Communicator(device="host", timeout=60) as c:
        if _shared():
            with pytest.raises(ValueError, match="'oneshot' cannot run here: it carries at "
                                                 f"most {EXCHANGE_BYTES} bytes per rank"):
                c.allgather(np.ones(EXCHANGE_BYTES + 1, np.uint8), algorithm="oneshot")
        else:
            with pytest.raises(ValueError, match="'oneshot' cannot run here: it needs every "
                                                 "rank of the communicator on one node"):
                c.alltoall(np.ones(4 * c.size), algorithm="oneshot")


def test_auto_takes_a_tables_rule_for_every_collective(world):
    """A table's rules name their collective ("auto" of reduce_scatter, broadcast, ...),
    and one that cannot run here is not taken."""
    from ring.schedule import Collective
    with ring.Communicator(device="host", timeout=60, tuning=NO_RULES) as c:
        k = c.size
        for collective in Collective:
            if collective not in (Collective.ALLREDUCE, Collective.BARRIER):
                # up to 64 bytes a rank (small's 16 bytes a rank, big's 256), at any k
                c._rules_of[collective, False, False] = [(64 * k, "oneshot")]
        small, big = np.ones(4 * k, np.float32), np.ones(64 * k, np.float32)
        for name, call in [("reduce_scatter", c.reduce_scatter), ("alltoall", c.alltoall),
                           ("broadcast", lambda x: c.broadcast(x, root=k - 1)),
                           ("scatter", c.scatter), ("reduce", c.reduce)]:
            for x, small_enough in ((small, True), (big, False)):
                call(x.copy())
                flat = "ring" if name != "reduce_scatter" or two_level_nodes(k) == 1 else \
                    "hierarchical"
                assert_ran("oneshot" if small_enough and _shared() else flat, name)
        for name, call in [("allgather", c.allgather), ("gather", c.gather)]:
            call(np.ones(16 // k, np.float32))  # the rule's bytes: those gathered, <= 64
            assert_ran("oneshot" if _shared() else "hierarchical" if name == "allgather"
                       and two_level_nodes(k) > 1 else "ring", name)


def test_auto_takes_the_in_place_rules_for_an_in_place_call(world, tmp_path):
    """A table's in-place rules (`harness tune -I`) decide the calls that are in place, its
    other rules the rest: the all-reduce out of place by oneshot and in place by the ring,
    the all-to-all the other way round (one node: oneshot's all-to-all is node-shared)."""
    k = world.size
    rules = [{**r, "ranks": k, "nodes": n} for n in range(1, k + 1) for r in (
        {"max_bytes": 1 << 20, "algorithm": "oneshot"},
        {"max_bytes": 1 << 20, "algorithm": "ring", "in_place": True},
        {"max_bytes": 1 << 20, "algorithm": "ring", "collective": "alltoall"},
        {"max_bytes": 1 << 20, "algorithm": "oneshot", "collective": "alltoall",
         "in_place": True})]
    table = tmp_path / "in-place.json"
    table.write_text(json.dumps({"rules": rules}))
    inputs = [make(q, 4 * k, "float32", op="sum") for q in range(k)]
    with ring.Communicator(device="host", timeout=60, tuning=str(table)) as c:
        for _ in range(2):  # the full path, then the fast path
            x = inputs[c.rank].copy()
            got = c.allreduce(x)
            assert_ran("oneshot", "allreduce")
            assert same_bits(got, reference.in_rank_order(inputs, "sum"))
            c.allreduce(x, out=x)
            assert_ran("ring", "allreduce")
            assert same_bits(x, reference.allreduce(inputs, "sum"))
            x = inputs[c.rank].copy()
            want = reference.expected("alltoall", inputs, "sum")[c.rank]
            assert same_bits(c.alltoall(x), want)
            assert_ran("ring", "alltoall")
            c.alltoall(x, out=x)
            assert_ran("oneshot" if _shared() else "ring", "alltoall")
            assert same_bits(x, want)


def test_an_empty_call_is_kept_and_still_agreed_on(world):
    """A call of 0 elements has nothing to move but its agreement: repeated, it takes the
    fast path as a small oneshot call does (its record compared in the compiled round, or
    across nodes in the agreement's allgather), and a rank that then passes elements beside
    the others' empty call makes every rank raise MismatchError."""
    k = world.size
    with ring.Communicator(device="host", timeout=60) as c:
        empty = np.ones(0, np.float32)
        for name in ("allreduce", "allgather", "reduce_scatter", "broadcast"):
            for _ in range(3):
                got = c.broadcast(empty.copy(), root=k - 1) if name == "broadcast" else \
                    getattr(c, name)(empty)
                assert got.shape == (0,) and got.dtype == np.float32
            if last_call()["algorithm"] == "oneshot" and (name == "allreduce" or _shared()):
                assert last_call().get("path") == "fast", (name, last_call())
        # in place, as the harness places it: empty views of one buffer, at one address
        whole = np.ones(0, np.float32)
        for name, x, out in (("allreduce", whole, whole), ("allgather", whole[:0], whole),
                             ("reduce_scatter", whole, whole[:0])):
            for _ in range(3):
                assert getattr(c, name)(x, out=out) is out
            if last_call()["algorithm"] == "oneshot" and (name == "allreduce" or _shared()):
                assert last_call().get("path") == "fast", (name, "in place", last_call())
        if k > 1:
            with pytest.raises(ring.MismatchError, match="ranks disagree on count"):
                c.allreduce(np.ones(8 if c.rank == 0 else 0, np.float32))


@pytest.mark.parametrize("n", [6, 300])  # float32: in the agreement's message; after it
@pytest.mark.parametrize("change", ["count, unchecked", "bad out"])
def test_oneshot_ranks_disagreeing(world, n, change):
    """oneshot's data travel in the agreement's round or right after it, in messages the
    call sizes. Ranks that disagree on the count get MismatchError on every rank, with
    check=False too (oneshot always agrees), never a torn message; a rank with bad
    arguments its own error and the others MismatchError (with check=False it would raise
    alone, and its peers time out, as the README says)."""
    unchecked = change == "count, unchecked"
    with ring.Communicator(device="host", timeout=60, check=not unchecked,
                           algorithm="oneshot") as c:
        odd = c.rank == 0 and c.size > 1
        x = np.ones(n + (odd and unchecked), np.float32)
        out = np.empty(n, np.float64) if odd and not unchecked else None
        if c.size == 1:
            assert c.allreduce(x).tobytes() == x.tobytes()
            return
        own = TypeError if odd and not unchecked else ring.MismatchError
        with pytest.raises(own) as info:
            c.allreduce(x, out=out)
        assert isinstance(info.value, ring.MismatchError) == (own is ring.MismatchError)


# compiled folds (host/compiled_round.py) and NumPy's (16-bit floats, floating min / max)
FAST_CASES = [("float32", "sum"), ("int32", "max"), ("bfloat16", "avg"), ("int8", "prod"),
              ("float32", "avg"), ("float64", "avg"), ("uint64", "min"), ("float32", "min"),
              ("float16", "prod"), ("uint8", "sum")]


@pytest.mark.parametrize("dtype,op", FAST_CASES)
def test_repeated_small_allreduces_take_the_fast_path(world, dtype, op):
    """From the second call of a oneshot signature on, the fast path (ring/host/repeated.py): new
    data every call, the rank-order reference's bits, out new, in place and given, and the
    log marks the call fast. Across nodes the same, whether the data ride in the
    agreement's allgather (up to RIDE_BYTES: n = 1, 7) or follow it in their own (1000)."""
    with ring.Communicator(device="host", timeout=60, algorithm="oneshot") as c:
        k, r = c.size, c.rank
        for n in (1, 7, 1000):
            for kind in ("new", "in place", "given", "in place, another view"):
                for i in range(3):
                    inputs = [make(q, n, dtype, seed=i, op=op) for q in range(k)]
                    want = reference.in_rank_order(inputs, op)
                    x = inputs[r].copy()
                    out = {"new": None, "in place": x, "given": np.empty_like(x),
                           "in place, another view": x[:]}[kind]
                    # as the harness calls it too: the options named, the same every call
                    named = {"algorithm": "oneshot", "dtype": dtype} if n == 7 else {}
                    got = c.allreduce(x, out=out, op=op, **named)
                    assert got.tobytes() == want.tobytes(), (dtype, op, n, kind, i)
                    assert got is out if out is not None else got.shape == x.shape
                    if "in place" in kind:
                        assert x.tobytes() == want.tobytes()
                    assert last_call()["algorithm"] == "oneshot"
                    # another view of x is in place too: that signature is known already
                    known = i or kind == "in place, another view"
                    assert last_call().get("path") == ("fast" if known else None), (kind, i)
        assert same_everywhere(world, got)


def test_a_kept_call_after_another_algorithms_says_it_ran_oneshot(world):
    """last_algorithm is what the latest call ran, a kept call's too (ring/host/repeated.py):
    a oneshot signature, a ring call, then the oneshot signature again, on the fast path."""
    with ring.Communicator(device="host", timeout=60) as c:
        x = np.ones(7, np.float32)
        for algorithm in ("oneshot", "oneshot", "ring", "oneshot"):
            assert (c.allreduce(x, algorithm=algorithm) == c.size).all()
            assert c.last_algorithm == algorithm
        assert last_call().get("path") == "fast"


def test_the_kept_signatures_stay_at_most_their_limit(world):
    """A sweep of sizes keeps at most repeated.LIMIT signatures (then starts over), each
    call right."""
    from ring.host import repeated
    with ring.Communicator(device="host", timeout=60, algorithm="oneshot") as c:
        for n in range(1, repeated.LIMIT + 10):
            assert (c.allreduce(np.ones(n, np.float32)) == c.size).all()
            assert 0 < len(c._fast) <= repeated.LIMIT, n


@pytest.mark.parametrize("op", ["min", "max"])
def test_repeated_floating_min_max_keep_numpys_nans_and_signed_zeros(world, op):
    """Floating min / max on the fast path (ring/host/repeated.py) fold with NumPy's loops,
    as the full path does: a NaN on any rank wins wherever it stands in rank order, the
    first rank's too (a compiled `a if a < b else b` drops a NaN that comes first), and
    signed zeros are NumPy's choice. On one node and across nodes (riding in the
    agreement's allgather)."""
    with ring.Communicator(device="host", timeout=60, algorithm="oneshot") as c:
        k, r = c.size, c.rank

        def inputs(q):
            return np.array([np.nan if q == 0 else 1.0, np.nan if q == k - 1 else 2.0,
                             -0.0 if q % 2 else 0.0, 0.0 if q % 2 else -0.0, 3.0 + q],
                            np.float32)

        want = reference.in_rank_order([inputs(q) for q in range(k)], op)
        for _ in range(3):
            got = c.allreduce(inputs(r), op=op)
            assert same_bits(got, want), (got, want)
        assert last_call().get("path") == "fast"


@pytest.mark.parametrize("n", [8, 100])  # float32: riding in the agreement (across nodes), not
@pytest.mark.parametrize("change", ["op", "count", "algorithm", "bad out", "overlap",
                                    "overlap, out given before"])
def test_a_rank_leaving_the_fast_path_is_caught_on_every_rank(world, change, n, by_recipe):
    """The ranks still on the fast path compare records too: when one rank's next call
    differs (op, count, algorithm) or has bad arguments, every rank raises, the bad rank its own
    error and the others MismatchError. (Across nodes: the same through the agreement's
    allgather; cma runs on one node only.) "overlap, out given before": the signature of an
    out of its own is known, and the overlap is seen only by the fast path's check, before
    it posts."""
    if by_recipe == "cma" and not _shared():
        return
    with ring.Communicator(device="host", timeout=60, algorithm=by_recipe) as c:
        x = np.ones(n, np.float32)
        given = np.empty(n, np.float32) if change == "overlap, out given before" else None
        c.allreduce(x, out=given)
        c.allreduce(x, out=given)
        assert last_call().get("path") == "fast"
        odd = c.rank == c.size - 1  # at 1 rank, the only rank
        args = {"x": np.ones(n, np.float32), "op": "sum", "out": given}
        if odd and change == "op":
            args["op"] = "max"
        if odd and change == "count":
            args["x"] = np.ones(n + 1, np.float32)
        if odd and change == "algorithm":
            args["algorithm"] = "naive"
        if odd and change == "bad out":
            args["out"] = np.empty(n, np.float64)
        if odd and change.startswith("overlap"):
            big = np.ones(n + 1, np.float32)
            args["x"], args["out"] = big[:n], big[1:]
        own = {"bad out": TypeError, "overlap": ValueError,
               "overlap, out given before": ValueError}.get(change)
        if c.size == 1 and own is None:
            assert c.allreduce(**args).tobytes() == args["x"].tobytes()  # nothing to disagree with
            return
        with pytest.raises(own if (odd and own) else ring.MismatchError):
            c.allreduce(**args)
