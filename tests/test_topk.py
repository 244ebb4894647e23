"""Top-K sparsified gradients (ring/training/topk.py) in one process: the selection equals
the definition's (tests/topk_reference.py: a full sort, ties to the lower index) through the
sampled threshold and its fallback; K ranks' exchanges (a stand-in all-gather) combine to
the reference's bits at 1-4 ranks, with ties, k = 0 and k = all, empty buckets, over steps
with the residual carried. On real ranks: tests/mpi/check_buckets.py."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ring.training import topk
from ring.training.buckets import GradientBuckets

from .topk_reference import TopKBucket, top


@settings(max_examples=200, deadline=None)
@given(n=st.sampled_from([0, 1, 7, 100, 4096, 9000, 50_000]), density=st.floats(0.0005, 1),
       ties=st.booleans(), seed=st.integers(0, 2**16))
def test_the_selection_is_the_definitions(n, density, ties, seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(n).astype(np.float32)
    if ties:  # few distinct magnitudes, both signs: every cut falls among equals
        v = (rng.integers(-3, 4, n)).astype(np.float32)
    k = topk.k_of(n, density)
    assert topk.select(v, k).tolist() == top(v, k).tolist()


def test_a_sample_that_underestimates_takes_more_candidates():
    """Large values only where the strided sample does not look: the sample's threshold
    keeps more candidates than the room made for them, which is then made for all."""
    n = 100_000
    v = np.zeros(n, np.float32)
    step = max(1, n // max(topk.SAMPLE_MIN, int(n * topk.SAMPLE_FRACTION)))
    v[::step] = 1.0  # the sample sees only ones
    v[1::step][:500] = 5.0  # and misses the 500 largest
    assert topk.select(v, 1000).tolist() == top(v, 1000).tolist()


def _overestimating(n: int) -> np.ndarray:
    """A bucket whose strided sample sees only its largest values, all distinct: the
    sample's threshold leaves fewer than k = n / 10 above it."""
    v = np.random.default_rng(n).random(n).astype(np.float32)  # [0, 1)
    step, size = topk.sampling(n)
    assert step > 1
    v[::step] = 10 + np.arange(size, dtype=np.float32)
    return v


class _Counting(topk._OnHost):
    wholes = 0

    @classmethod
    def whole(cls, v):
        cls.wholes += 1
        return v


def test_a_sample_that_overestimates_falls_back_to_the_exact_threshold():
    """Fewer than k values at or above the sample's threshold: the whole bucket's exact k-th
    magnitude takes over (the fallback taken, counted), on the host and on the GPU."""
    from numba import cuda
    n = 20_000
    v, k = _overestimating(n), n // 10
    assert topk.select(v, k, passes=_Counting).tolist() == top(v, k).tolist()
    assert _Counting.wholes == 1
    assert topk.select_on_gpu(cuda.to_device(v), k).tolist() == top(v, k).tolist()


def test_k_bounds_and_nan():
    assert topk.k_of(0, 0.01) == 0 and topk.k_of(10, 0.01) == 1 and topk.k_of(10, 1) == 10
    # density x n to the nearest: 1.7 sends 2, 2.3 sends 2, 0.4 still one
    assert [topk.k_of(n, 0.01) for n in (170, 230, 40)] == [2, 2, 1]
    v = np.array([1, np.nan, -3, 2], np.float32)
    assert topk.select(v, 2).tolist() == [1, 2]  # a NaN goes, as the dense sum keeps it
    assert topk.select(v, 0).tolist() == [] and topk.select(v, 9).tolist() == [0, 1, 2, 3]


class Group:
    """K ranks of one process: each rank's allgather waits for every rank's message."""

    def __init__(self, k: int):
        self.size, self.messages = k, {}

    def comm(self, rank: int):
        group = self

        class Comm:
            size, device = group.size, "host"

            def allgather(self_, x, out=None, async_op=False):
                group.messages[rank] = x.copy()

                class Work:
                    def wait(self__):
                        out.reshape(group.size, -1)[...] = [group.messages[q]
                                                            for q in range(group.size)]
                return Work()
        return Comm()


@pytest.mark.parametrize("k_ranks", [1, 2, 3, 4])
@pytest.mark.parametrize("n,density", [(0, 0.1), (1, 0.5), (300, 0.01), (300, 1.0),
                                       (9000, 0.01), (9000, 0.001)])
@pytest.mark.parametrize("feedback", [False, True])
@pytest.mark.parametrize("op", ["sum", "avg"])
def test_ranks_combine_to_the_references_bits(k_ranks, n, density, feedback, op):
    group = Group(k_ranks)
    buckets = [np.zeros(n, np.float32) for _ in range(k_ranks)]
    reduces = [topk.TopKReduce(group.comm(q), buckets[q], density, feedback)
               for q in range(k_ranks)]
    ref = TopKBucket(n, k_ranks, topk.k_of(n, density), feedback)
    for step in range(3):
        rng = np.random.default_rng([step, n])
        given = [(rng.integers(-4, 5, n) * (q + 1)).astype(np.float32)  # ties, overlaps
                 for q in range(k_ranks)]
        for q in range(k_ranks):
            buckets[q][...] = given[q]
            reduces[q].start()
        for q in range(k_ranks):
            reduces[q].finish(op == "avg")
        want = ref.step(given, op == "avg")
        for q in range(k_ranks):
            assert buckets[q].tobytes() == want.tobytes(), (step, q)


def test_feedback_delays_nothing_away():
    """With error feedback, what was sent over the steps plus what is still owed is every
    step's gradient: nothing is lost, only delayed (one rank, the sum in float64)."""
    group = Group(1)
    flat = np.zeros(1000, np.float32)
    r = topk.TopKReduce(group.comm(0), flat, 0.05, True)
    sent, given = np.zeros(1000), np.zeros(1000)
    rng = np.random.default_rng(3)
    for _ in range(6):
        g = rng.standard_normal(1000).astype(np.float32)
        given += g
        flat[...] = g
        r.start()
        r.finish(False)
        sent += flat
        assert np.count_nonzero(flat) <= 50
    assert np.allclose(sent + r.residual, given, atol=1e-4)


class Two:
    """A communicator of two identical ranks: its all-gather repeats this rank's message."""
    size, device = 2, "host"

    def allgather(self, x, out=None, async_op=False):
        out.reshape(2, -1)[...] = x

        class Work:
            def wait(self_):
                return out
        return Work()


def test_buckets_take_topk_with_a_density():
    g = [np.arange(1, 101, dtype=np.float32)]

    b = GradientBuckets(Two(), g, compression="topk", density=0.1, op="sum")
    b.ready(0)
    b.wait()
    want = np.zeros(100, np.float32)
    want[90:] = 2 * np.arange(91, 101)
    assert g[0].tolist() == want.tolist()
    # (a string, NaN or True: not a fraction; "0.1" was a TypeError naming nothing)
    for bad in [dict(compression="topk"), dict(compression="topk", density=0),
                dict(density=0.1), dict(compression="int8", density=0.1),
                *(dict(compression="topk", density=d) for d in ("0.1", float("nan"), True))]:
        with pytest.raises(ValueError, match="density"):
            GradientBuckets(Two(), g, **bad)
    topk_ef = dict(compression="topk", density=0.1, error_feedback=True)
    for bad, match in [(dict(topk_ef, momentum=0.9, momentum_kind="dgc"), "momentum_kind"),
                       (dict(compression="bf16", momentum=0.9), "momentum"),
                       (dict(topk_ef, error_feedback=False, momentum=0.9), "error_feedback"),
                       (dict(topk_ef, momentum=1.0), "0 <= momentum < 1"),
                       (dict(topk_ef, momentum=-0.5), "0 <= momentum < 1"),
                       (dict(topk_ef, momentum=float("nan")), "0 <= momentum < 1"),
                       (dict(topk_ef, momentum="0.9"), "0 <= momentum < 1"),
                       (dict(topk_ef, momentum=True), "0 <= momentum < 1")]:
        with pytest.raises(ValueError, match=match):
            GradientBuckets(Two(), g, **bad)


def _step(reduces, flats, rng, avg: bool) -> list:
    """One step of every rank's TopKReduce on new gradients (each rank's set and started,
    then all finished); the gradients, by rank."""
    g = [rng.standard_normal(f.size).astype(np.float32) for f in flats]
    for f, reduce, mine in zip(flats, reduces, g):
        f[...] = mine
        reduce.start()
    for reduce in reduces:
        reduce.finish(avg)
    return g


@pytest.mark.parametrize("k_ranks", [1, 3])
@pytest.mark.parametrize("density", [0.05, 1.0])
@pytest.mark.parametrize("kind,avg", [("local", False), ("global", False), ("global", True)])
def test_momentum_is_the_references(k_ranks, density, kind, avg):
    """The buckets' momentum, over steps, bit for bit against the reference: "local" is
    Deep Gradient Compression's momentum correction and factor masking (u = m u + g, v = v
    + u, the top of v sent, v and u cleared there); "global" owes each rank's share of m x
    the last result. It goes with error feedback only."""
    group, n, m = Group(k_ranks), 200, 0.9
    flats = [np.zeros(n, np.float32) for _ in range(k_ranks)]
    reduces = [topk.TopKReduce(group.comm(q), flats[q], density, True, momentum=m,
                               momentum_kind=kind) for q in range(k_ranks)]
    ref = TopKBucket(n, k_ranks, topk.k_of(n, density), True, momentum=m, kind=kind)
    rng = np.random.default_rng(5)
    for _ in range(5):
        want = ref.step(_step(reduces, flats, rng, avg), avg)
        for q in range(k_ranks):
            assert flats[q].tobytes() == want.tobytes()
    with pytest.raises(ValueError, match="error_feedback"):
        topk.TopKReduce(group.comm(0), flats[0], 0.1, False, momentum=m)
    with pytest.raises(ValueError, match="momentum_kind"):
        topk.TopKReduce(group.comm(0), flats[0], 0.1, True, momentum=m, momentum_kind="dgc")


@settings(max_examples=150, deadline=None)
@given(k_ranks=st.integers(1, 4), n=st.sampled_from([0, 1, 5, 64, 300]),
       feedback=st.booleans(), momentum=st.sampled_from([0.0, 0.9]),
       kind=st.sampled_from(topk.MOMENTUM_KINDS),
       avg=st.booleans(),
       steps=st.lists(st.tuples(st.none() | st.floats(0.001, 1),
                                st.sampled_from(["normal", "ties", "zeros"])),
                      min_size=1, max_size=6),
       seed=st.integers(0, 2**16))
def test_programs_of_steps_are_the_references(k_ranks, n, feedback, momentum, kind, avg,
                                              steps, seed):
    """Any sequence of steps (each: a new density set first on every rank, or not; normal
    values, ties in magnitude or zeros), avg or sum, any momentum kind with error feedback
    or none at all: every rank's bucket after every step is the reference's, bit for bit,
    the residual, velocity and carry kept across the density's changes. (Global momentum
    refuses an op that changes between steps: the share each rank owes depends on it.)"""
    if momentum and not feedback:
        momentum = 0.0
    group = Group(k_ranks)
    flats = [np.zeros(n, np.float32) for _ in range(k_ranks)]
    reduces = [topk.TopKReduce(group.comm(q), flats[q], 0.5, feedback, momentum, kind)
               for q in range(k_ranks)]
    ref = TopKBucket(n, k_ranks, topk.k_of(n, 0.5), feedback, momentum, kind)
    rng = np.random.default_rng(seed)
    for i, (density, values) in enumerate(steps):
        if density is not None:
            for reduce in reduces:
                reduce.set_density(density)
            ref.k = topk.k_of(n, density)
        g = [rng.standard_normal(n).astype(np.float32) for _ in range(k_ranks)]
        if values == "ties":
            g = [np.round(x * 2) for x in g]
        elif values == "zeros":
            g = [np.zeros_like(x) for x in g]
        for f, reduce, mine in zip(flats, reduces, g):
            f[...] = mine
            reduce.start()
        for reduce in reduces:
            reduce.finish(avg)
        want = ref.step(g, avg)
        for q in range(k_ranks):
            assert flats[q].tobytes() == want.tobytes(), (i, q)
    if momentum and kind == "global":
        for reduce in reduces:
            reduce.start()
        with pytest.raises(ValueError, match="op changed"):
            reduces[0].finish(not avg)


@pytest.mark.parametrize("k_ranks,avg", [(1, False), (2, True), (3, False), (4, True)])
def test_global_momentum_at_density_one_is_momentum_sgd(k_ranks, avg):
    """Nothing left out, the global momentum's result is the velocity of momentum SGD on
    the sum (or average) of the ranks' gradients, v = m v + g, step after step (to float32
    rounding: the shares are added on each rank before the sum)."""
    group, n, m = Group(k_ranks), 64, np.float32(0.9)
    flats = [np.zeros(n, np.float32) for _ in range(k_ranks)]
    reduces = [topk.TopKReduce(group.comm(q), flats[q], 1.0, True, momentum=m)
               for q in range(k_ranks)]
    rng = np.random.default_rng(11)
    velocity = np.zeros(n, np.float64)
    for _ in range(6):
        g = _step(reduces, flats, rng, avg)
        total = np.sum(g, axis=0, dtype=np.float64) / (k_ranks if avg else 1)
        velocity = float(m) * velocity + total
        np.testing.assert_allclose(flats[0], velocity, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n,k", [(0, 0), (1, 1), (10, 0), (10, 10), (37, 3), (300, 15),
                                 (9000, 40)])
@pytest.mark.parametrize("kind", ["normal", "ties", "nan", "zeros"])
def test_the_gpus_selection_is_the_hosts(n, k, kind):
    """select_on_gpu (kernels/topk.py's passes, the host's rules on the sample and the
    candidates) picks the indices select picks, NaN and ties included (under Numba's
    simulator without a GPU)."""
    from numba import cuda

    from ring.training.topk import select, select_on_gpu
    g = np.random.default_rng([n, k])
    v = g.standard_normal(n).astype(np.float32)
    if kind == "ties":
        v = np.round(v * 2).astype(np.float32)
    elif kind == "nan" and n:
        v[g.integers(0, n, 3)] = np.nan
    elif kind == "zeros":
        v[:] = 0
    want = select(v, k)
    got = select_on_gpu(cuda.to_device(v), k)
    assert got.dtype == np.int32 and np.array_equal(got, want)


def test_set_density_changes_k_from_the_next_step_and_keeps_the_residual():
    """Deep Gradient Compression's sparsity warm-up: set_density() between steps resizes
    the message, the residual carries over (what was not sent is still owed)."""
    g = [np.arange(1, 101, dtype=np.float32)]

    b = GradientBuckets(Two(), g, compression="topk", density=0.1, op="sum",
                        error_feedback=True)
    b.ready(0)
    b.wait()  # sent 91..100; owes 1..90
    b.set_density(0.02)
    assert b._topk[0].k == 2 and b._topk[0].message.size == 4
    g[0][...] = 0
    b.ready(0)
    b.wait()  # owes 1..90: sends the two largest, 89 and 90
    want = np.zeros(100, np.float32)
    want[88:90] = 2 * np.array([89, 90])
    assert g[0].tolist() == want.tolist()
    b.ready(0)
    with pytest.raises(ValueError, match="a step is under way"):
        b.set_density(0.5)
    b.wait()
    for bad in (0, 1.5, "0.5", float("nan"), True):
        with pytest.raises(ValueError, match="density"):
            b.set_density(bad)
    b.set_density(1)  # dense again: everything owed is sent (1..88), nothing left owing
    assert b._topk[0].k == 100
    g[0][...] = 0
    b.ready(0)
    b.wait()
    want[...] = 0
    want[:88] = 2 * np.arange(1, 89)
    assert g[0].tolist() == want.tolist()
    with pytest.raises(ValueError, match="compression='topk' only"):
        GradientBuckets(Two(), g, op="sum").set_density(0.1)


def test_the_sparsity_warm_up_goes_from_a_quarter_down_to_the_density():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from topk_convergence import density_at
    assert density_at(0, 0.01, 100) == 0.25
    assert density_at(50, 0.01, 100) == pytest.approx(0.05)
    assert density_at(100, 0.01, 100) == density_at(500, 0.01, 100) == 0.01
    assert density_at(3, 0.5, 100) == 0.5  # a density above the start: no warm-up


def test_the_convergence_benchmarks_oracle_at_every_entry_is_momentum_sgd():
    """benchmarks/topk_convergence.py's oracle applying every entry (fraction 1) is the
    example's dense momentum SGD on the global batch, bit for bit (mlp.reference); with
    fewer entries it leaves the rest owed, and differs."""
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "benchmarks"))
    sys.path.insert(0, str(root / "examples"))
    import mlp
    from topk_convergence import oracle
    x, y = mlp.data(64)
    params, losses = oracle(x, y, 16, 6, 1.0, 0.9, report_at=(3, 6))
    want = mlp.reference(x, y, 16, 6)
    assert all(p.tobytes() == w.tobytes() for p, w in zip(params, want))
    assert sorted(losses) == [3, 6]
    sparse, _ = oracle(x, y, 16, 6, 0.01, 0.9)
    assert any(p.tobytes() != w.tobytes() for p, w in zip(sparse, want))
