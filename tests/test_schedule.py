"""The ring schedule as pure data, executed by the in-process simulator of all ranks and
compared bit for bit with the exact reference of its documented order (tests/reference.py;
that reference is itself checked against float64 NumPy in tests/test_reference.py)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from . import simulate
from ringtypes import FLOATING, Op
from ring.schedule import (Collective, alltoall_overwritten, nchunks, plan, plan_blocks,
                           split, steps)

from . import reference
from .inputs import DTYPE_NAMES, REDUCIBLE_NAMES, make

COLLECTIVES = [Collective.ALLREDUCE, Collective.REDUCE_SCATTER, Collective.ALLGATHER]  # the ring proper
ROOTED = [Collective.BROADCAST, Collective.REDUCE]


@given(count=st.integers(0, 10_000), parts=st.integers(1, 64), align=st.sampled_from([1, 2, 4, 8, 16]))
def test_split_covers_and_balances(count, parts, align):
    b = split(count, parts, align)
    assert len(b) == parts + 1 and b[0] == 0 and b[-1] == count
    assert all(x <= y for x, y in zip(b, b[1:]))
    assert all(x % align == 0 for x in b[:-1])
    sizes = [y - x for x, y in zip(b, b[1:])]
    assert max(sizes) - min(sizes) <= align + count % align


@pytest.mark.parametrize("collective", COLLECTIVES)
@pytest.mark.parametrize("k", range(1, 10))
def test_each_rank_touches_each_block_as_the_ring_says(collective, k):
    all_steps = [steps(collective, k, r) for r in range(k)]
    for r, ss in enumerate(all_steps):
        sends = sum(s.send for s in ss)
        recvs = sum(s.recv for s in ss)
        expected = {Collective.ALLREDUCE: 2 * (k - 1)}.get(collective, k - 1)
        assert sends == recvs == expected  # 2(K-1)/K of the array for all-reduce
        outs = [s.block for s in ss if s.out]
        if collective is Collective.REDUCE_SCATTER:
            assert outs == [r]
        else:
            assert sorted(outs) == list(range(k))
        # what r sends at a step, r+1 receives at its next receiving step, same block
        succ = [s for s in all_steps[(r + 1) % k] if s.recv]
        assert [s.block for s in ss if s.send] == [s.block for s in succ]
        assert sum(s.final for s in ss) == (0 if collective is Collective.ALLGATHER else 1)


@given(k=st.integers(1, 9), count=st.integers(0, 300), chunk=st.integers(1, 64),
       align=st.sampled_from([1, 4]), collective=st.sampled_from(COLLECTIVES))
def test_chunks_tile_every_block(k, count, chunk, align, collective):
    if collective is not Collective.ALLREDUCE:
        count -= count % k
    p = plan(collective, k, 0, count, 4, chunk * 4, align)
    for b in range(k):
        pieces = [p.chunk(b, j) for j in range(p.nchunks)]
        assert pieces[0][0] == p.blocks[b] and pieces[-1][1] == p.blocks[b + 1]
        assert all(hi1 == lo2 for (_, hi1), (lo2, _) in zip(pieces, pieces[1:]))
        assert all((lo - p.blocks[b]) % align == 0 for lo, _ in pieces)
    if align == 1:
        assert p.max_chunk <= chunk


def _assert_matches(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def _check(collective, k, n, dtype, op, chunk_bytes, nslots, align=1):
    inputs = [make(r, n, dtype, op=op) for r in range(k)]
    outs = simulate.run(collective, inputs, Op[op.upper()], chunk_bytes, nslots, align)
    refs = reference.expected(str(collective), inputs, op, align=align)
    for r in range(k):
        _assert_matches(outs[r], refs[r])
    # every rank holds the same bits of the same block
    if collective is not Collective.REDUCE_SCATTER:
        assert all(o.tobytes() == outs[0].tobytes() for o in outs)


@given(k=st.integers(1, 8), n=st.integers(0, 200), chunk=st.sampled_from([8, 16, 24, 64, 4096]),
       nslots=st.integers(2, 5), op=st.sampled_from(["sum", "prod", "min", "max", "avg"]),
       dtype=st.sampled_from(REDUCIBLE_NAMES), collective=st.sampled_from(COLLECTIVES),
       align=st.sampled_from([1, 2]))
@settings(max_examples=300, deadline=None)
def test_simulated_ring_matches_the_reference(k, n, chunk, nslots, op, dtype, collective, align):
    if op == "avg" and np.dtype(dtype) not in FLOATING:
        op = "sum"
    if collective is not Collective.ALLREDUCE:
        n = n if collective is Collective.ALLGATHER else n - n % k
        align = 1
    _check(collective, k, n, dtype, op, chunk * np.dtype(dtype).itemsize, nslots, align)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_one_slot_deadlocks_and_the_simulator_says_so(k):
    with pytest.raises(simulate.ProtocolError, match="deadlock"):
        simulate.run(Collective.ALLREDUCE, [np.ones(64)] * k, Op.SUM, chunk_bytes=64, nslots=1)


def test_reduction_order_is_the_ring_order():
    # float32: 1e8 + 1 - 1e8 depends on the order; block b is reduced x[b+1], ..., x[b]
    xs = [np.full(3, v, np.float32) for v in (1e8, 1.0, -1e8)]
    out = simulate.run(Collective.ALLREDUCE, xs, Op.SUM, chunk_bytes=4, nslots=2)[0]
    # block 0: x1 + x2 + x0 = (1 - 1e8) + 1e8 = 0;  block 1: x2 + x0 + x1 = 0 + 1 = 1
    # block 2: x0 + x1 + x2 = (1e8 + 1) - 1e8 = 0
    assert out.tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("collective", ROOTED)
@pytest.mark.parametrize("k", range(1, 8))
def test_rooted_collectives_are_one_chain_from_or_to_the_root(collective, k):
    for root in range(k):
        ss = [steps(collective, k, r, root) for r in range(k)]
        assert all(len(s) == 1 and s[0].block == root for s in ss)
        sends = [r for r in range(k) if ss[r][0].send]
        recvs = [r for r in range(k) if ss[r][0].recv]
        assert len(sends) == len(recvs) == k - 1  # a chain: K-1 links carry the array once
        assert {(r + 1) % k for r in sends} == set(recvs)  # every send is received next door
        outs = [r for r in range(k) if ss[r][0].out]
        finals = [r for r in range(k) if ss[r][0].final]
        if collective is Collective.BROADCAST:
            assert root not in recvs and outs == [r for r in range(k) if r != root]
            assert finals == []
        else:
            assert root not in sends and outs == finals == [root]


@given(k=st.integers(1, 7), n=st.integers(0, 200), chunk=st.sampled_from([8, 24, 4096]),
       nslots=st.integers(2, 4), op=st.sampled_from(["sum", "prod", "min", "max", "avg"]),
       dtype=st.sampled_from(REDUCIBLE_NAMES), data=st.data())
@settings(max_examples=200, deadline=None)
def test_simulated_broadcast_and_reduce_match_the_reference(k, n, chunk, nslots, op, dtype, data):
    root = data.draw(st.integers(0, k - 1))
    if op == "avg" and np.dtype(dtype) not in FLOATING:
        op = "sum"
    inputs = [make(r, n, dtype, op=op) for r in range(k)]
    nbytes = chunk * np.dtype(dtype).itemsize
    outs = simulate.run(Collective.BROADCAST, inputs, Op.SUM, nbytes, nslots, 1, root)
    assert all(o.tobytes() == inputs[root].tobytes() for o in outs)
    got = simulate.run(Collective.REDUCE, inputs, Op[op.upper()], nbytes, nslots, 1, root)[root]
    _assert_matches(got, reference.reduce(inputs, op, root))


def test_reduce_order_runs_along_the_chain_to_the_root():
    # root 0 of 3: x1 + x2 + x0 = (1 - 1e8) + 1e8 = 0 in float32; root 2: x0 + x1 + x2 = 0;
    # root 1: x2 + x0 + x1 = 0 + 1 = 1
    xs = [np.full(2, v, np.float32) for v in (1e8, 1.0, -1e8)]
    got = [simulate.run(Collective.REDUCE, xs, Op.SUM, 8, 2, 1, root)[root].tolist()
           for root in range(3)]
    assert got == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]


MOVERS = [Collective.GATHER, Collective.SCATTER, Collective.ALLTOALL]


@given(k=st.integers(1, 8), per=st.integers(0, 40), chunk=st.sampled_from([8, 24, 4096]),
       nslots=st.integers(2, 4), dtype=st.sampled_from(DTYPE_NAMES),
       collective=st.sampled_from(MOVERS), data=st.data())
@settings(max_examples=200, deadline=None)
def test_gather_scatter_alltoall_move_every_block_to_its_place(k, per, chunk, nslots, dtype,
                                                               collective, data):
    root = data.draw(st.integers(0, k - 1))
    n = per if collective is Collective.GATHER else per * k
    inputs = [make(r, n, dtype, seed=11) for r in range(k)]
    outs = simulate.run(collective, inputs, Op.SUM, chunk * np.dtype(dtype).itemsize, nslots,
                        1, root)
    for r, want in enumerate(reference.expected(str(collective), inputs, root=root)):
        if want is not None:
            _assert_matches(outs[r], want)


@pytest.mark.parametrize("k", range(1, 9))
def test_alltoall_carries_each_block_as_many_hops_as_it_travels(k):
    """K(K-1)/2 blocks per link (block j of rank i travels j - i hops), one receive per
    step after the first send: never more than one block ahead, so two slots suffice."""
    for r in range(k):
        ss = steps(Collective.ALLTOALL, k, r)
        assert sum(s.send for s in ss) == sum(s.recv for s in ss) == k * (k - 1) // 2
        assert sum(s.out for s in ss) == k  # one block from every rank, its own included
        assert sorted(s.block for s in ss if s.out) == list(range(k))
        ahead = 0
        for s in ss:
            ahead += s.send - s.recv
            assert ahead <= 1


@given(k=st.integers(1, 7), per=st.integers(1, 12), chunk=st.sampled_from([4, 12, 4096]),
       nslots=st.integers(2, 3))
@settings(max_examples=100, deadline=None)
def test_an_alltoall_in_place_is_right_exactly_where_nothing_is_overwritten(k, per, chunk,
                                                                            nslots):
    """schedule.alltoall_overwritten, against the walk: run with out = x (no copy), every
    rank's all-to-all is right when it names no block, and wrong when it names one (each
    value distinct, so a block read after another landed over it shows)."""
    n = per * k
    inputs = [np.arange(r * n, (r + 1) * n, dtype=np.float64) for r in range(k)]
    outs = simulate.run(Collective.ALLTOALL, inputs, Op.SUM, chunk * 8, nslots, in_place=True)
    right = all(np.array_equal(o, want) for o, want in
                zip(outs, reference.expected("alltoall", inputs)))
    assert right == (alltoall_overwritten(k) == ()), (k, alltoall_overwritten(k))


@pytest.mark.parametrize("k", range(1, 9))
def test_an_alltoall_in_place_overwrites_the_nearer_half_of_the_successors(k):
    """Worked out from every rank's steps (the pattern is the same relative to each):
    the blocks d places on whose output lands before the own block d places on is sent."""
    for r in range(k):
        ss = steps(Collective.ALLTOALL, k, r)
        sent = {s.block: i for i, s in enumerate(ss) if s.send and not s.recv}
        kept = {s.block: i for i, s in enumerate(ss) if s.out and s.recv}
        assert tuple(sorted((b - r) % k for b in sent if kept[b] < sent[b])) == \
            alltoall_overwritten(k) == tuple(range(1, (k - 1) // 2 + 1))


@pytest.mark.parametrize("collective", [Collective.GATHER, Collective.SCATTER])
@pytest.mark.parametrize("k", range(1, 8))
def test_gather_and_scatter_are_chains_through_the_root(collective, k):
    for root in range(k):
        ss = [steps(collective, k, r, root) for r in range(k)]
        # the link into the root (gather) or out of it (scatter) carries K-1 blocks, the
        # link p places further carries fewer, and no link crosses the root the other way
        into = [sum(s.send for s in ss[r]) for r in range(k)]
        pos = [(r - root) % k for r in range(k)]
        for r in range(k):
            want = pos[r] if collective is Collective.GATHER else (k - 1 - pos[r])
            assert into[r] == want, (r, into)
        assert [s.block for s in ss[root] if s.out] == (
            [root] + [(root + p) % k for p in range(k - 1, 0, -1)]
            if collective is Collective.GATHER else [root])


@pytest.mark.parametrize("call,match", [
    (lambda: split(10, 0), "split: bad arguments count=10 parts=0"),
    (lambda: split(-1, 2), "split: bad arguments count=-1"),
    (lambda: split(10, 2, align=0), "split: bad arguments .* align=0"),
    (lambda: steps(Collective.ALLREDUCE, 3, 3), "rank 3 outside a ring of 3"),
    (lambda: steps(Collective.BROADCAST, 3, 0, root=3), "root 3 outside a ring of 3"),
    (lambda: nchunks(100, 0), "chunk_bytes must be positive, got 0"),
    (lambda: plan(Collective.BARRIER, 2, 0, 0, 4, 64), "barrier: no data, no plan"),
    (lambda: plan(Collective.REDUCE, 2, 0, 8, 4, 64, root=-1), "root -1 outside a ring of 2"),
    (lambda: plan(Collective.ALLGATHER, 3, 0, 10, 4, 64), "count 10 is not divisible by 3"),
    (lambda: plan_blocks(Collective.ALLREDUCE, 2, 0, (0, 5), 4, 64), r"boundaries \(0, 5\) for 2"),
    (lambda: plan_blocks(Collective.ALLREDUCE, 2, 0, (0, 6, 5), 4, 64), "bad block boundaries"),
    (lambda: plan_blocks(Collective.ALLREDUCE, 2, 0, (1, 3, 5), 4, 64), "bad block boundaries")])
def test_the_schedules_own_checks_refuse_what_no_ring_can_run(call, match):
    """Behind the communicator's checks of the caller's arguments, the schedule refuses
    arguments no ring runs (a caller inside the library that passes them gets an error,
    never a plan that drops or repeats elements)."""
    with pytest.raises(ValueError, match=match):
        call()
