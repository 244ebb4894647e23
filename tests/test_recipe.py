"""oneshot's recipes (ring/recipe.py) as pure data: followed with NumPy over K ranks'
posted arrays, every rank's result is tests/reference.py's exact one (rank order for the
all-reduce, the flat ring's for reduce-scatter and reduce), for every collective,
rank count, root and size; and a rank never reads what was not posted."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ring.host.reduce import follow
from ring.recipe import halves, posts, recipe
from ring.schedule import Collective, sizes
from ringtypes import Op

from . import reference

EVERY = [c for c in Collective if c is not Collective.BARRIER]


def _inputs(collective, k, per_rank, dtype, rng):
    n = per_rank * k if collective.divides else per_rank
    if np.dtype(dtype).kind == "f":
        return [rng.standard_normal(n).astype(dtype) for _ in range(k)]
    return [rng.integers(0, 50, n).astype(dtype) for _ in range(k)]


@settings(max_examples=300, deadline=None)
@given(collective=st.sampled_from(EVERY), k=st.integers(1, 6), per_rank=st.integers(0, 9),
       op=st.sampled_from(["sum", "prod", "min", "max", "avg"]),
       dtype=st.sampled_from(["float32", "float16", "int32"]), seed=st.integers(0, 2**16),
       data=st.data())
def test_following_a_recipe_gives_the_reference(collective, k, per_rank, op, dtype, seed, data):
    if op == "avg" and dtype == "int32":
        op = "sum"
    if not collective.reduces:
        op = "sum"
    root = data.draw(st.integers(0, k - 1))
    rng = np.random.default_rng(seed)
    inputs = _inputs(collective, k, per_rank, dtype, rng)
    count, out_n = sizes(collective, inputs[0].size, k)
    want = [reference.in_rank_order(inputs, op)] * k if collective is Collective.ALLREDUCE \
        else reference.expected(collective.label, inputs, op, root=root)  # the ring's order

    def posted(q):
        assert posts(collective, q, root), f"read rank {q}'s x, which it did not post"
        return inputs[q]

    for r in range(k):
        shape = inputs[r].shape if collective in (Collective.ALLREDUCE, Collective.REDUCE) \
            else (out_n,)
        segments = recipe(collective, k, r, root, count)
        out = np.full(shape, 77, dtype)
        with np.errstate(all="ignore"):
            follow(segments, posted, Op[op.upper()], out)
        expect = want[r]
        if expect is None or collective is Collective.BROADCAST and r == root:
            assert segments == [], "a rank that gets nothing writes nothing"
            continue
        assert out.tobytes() == expect.tobytes(), (collective, k, r, root, op)
        ends = [0]
        for lo, n, _ in sorted(segments):  # every element written, once
            assert lo == ends[-1]
            ends.append(lo + n)
        assert ends[-1] == out.size


@pytest.mark.parametrize("collective", [Collective.REDUCE_SCATTER, Collective.REDUCE])
def test_the_reducing_recipes_fold_in_the_flat_rings_order(collective):
    """Block r of a reduce-scatter, the root's reduce: r+1, r+2, ..., r (schedule.py)."""
    segments = recipe(collective, 4, 2, 2, 8)
    assert [q for q, _ in segments[0][2]] == [3, 0, 1, 2]


@settings(max_examples=300, deadline=None)
@given(k=st.integers(1, 6), count=st.integers(0, 40),
       op=st.sampled_from(["sum", "prod", "min", "max", "avg"]),
       dtype=st.sampled_from(["float32", "float16", "int32"]), seed=st.integers(0, 2**16),
       data=st.data())
def test_a_reduction_in_two_phases_gives_the_reference(k, count, op, dtype, seed, data):
    """recipe.halves (cma's all-reduce and reduce from in_halves' size on): every rank folds
    its block of every x into its out (a reduce's non-root: a buffer of its own); then
    copies every other block out of its owner's out (a reduce: the root alone). Every
    element written once by each phase's segments together, and the result the one-phase
    recipe's bits: rank order for the all-reduce, the ring's for the reduce's root."""
    if op == "avg" and dtype == "int32":
        op = "sum"
    root = data.draw(st.none() | st.integers(0, k - 1))
    rng = np.random.default_rng(seed)
    inputs = _inputs(Collective.ALLREDUCE, k, count, dtype, rng)
    want = reference.in_rank_order(inputs, op) if root is None else \
        reference.expected("reduce", inputs, op, root=root)[root]
    outs = [np.full(count, 77, dtype) for _ in range(k)]
    phases = [halves(k, r, count, root) for r in range(k)]
    for r in range(k):  # the first phase, every rank's before any rank's second
        with np.errstate(all="ignore"):
            follow(phases[r][0], inputs.__getitem__, Op[op.upper()], outs[r])
    reduced = [o.copy() for o in outs]  # (what each owner's out holds between the phases)
    for r in range(k):
        if root is not None and r != root:
            assert phases[r][1] == [], "only a reduce's root gathers"
            continue
        follow(phases[r][1], reduced.__getitem__, Op[op.upper()], outs[r])
        assert all(q != r for _, _, sources in phases[r][1] for q, _ in sources)
        assert outs[r].tobytes() == want.tobytes(), (k, r, root, count, op)
        written = sorted((lo, n) for lo, n, _ in phases[r][0] + phases[r][1])
        assert [lo for lo, _ in written] == list(np.cumsum([0] + [n for _, n in written]))[:-1]
        assert sum(n for _, n in written) == count and all(n > 0 for _, n in written)
