"""The exact references of tests/reference.py, checked three ways before anything is
checked against them: by hand where the order decides the bits, against the in-process
simulator (a second, independent implementation of the same order), and against float64
NumPy within the rounding of the dtype (so a reference cannot be self-consistently wrong)."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from . import simulate
from ringtypes import Op
from ring.schedule import Collective

from . import reference
from .inputs import REDUCIBLE_NAMES, make

F16 = np.float16
BF16 = np.dtype(ml_dtypes.bfloat16)
OPS = ["sum", "prod", "min", "max", "avg"]


def test_the_order_decides_the_bits_and_the_reference_follows_the_ring():
    # Three ranks, one element: it lies in block 2 (split(1, 3) == [0, 0, 0, 1]), reduced
    # as (x[0] + x[1]) + x[2]. Half an ulp of 1 twice, then 1: 2^-10 + 1 is exact. Starting
    # from 1 instead, each half ulp rounds away (ties to even) and the sum stays 1.
    tiny, one = F16(2.0 ** -11), F16(1.0)
    xs = [np.array([tiny]), np.array([tiny]), np.array([one])]
    assert reference.split(1, 3) == [0, 0, 0, 1]
    assert reference.allreduce(xs, "sum")[0] == F16(1 + 2.0 ** -10)
    assert (one + tiny) + tiny == one  # the other order: a different answer
    # rank 2's reduce-scatter block of 3 elements is the same element order
    rs = reference.reduce_scatter([np.repeat(x, 3) for x in xs], "sum")
    assert rs[2][0] == F16(1 + 2.0 ** -10)
    # the chain to root 2 starts at rank 0: (x0 + x1) + x2 as well; to the other roots it
    # meets 1 first: (x1 + x2) + x0 and (x2 + x0) + x1 both stay 1
    assert reference.reduce(xs, "sum", root=2)[0] == F16(1 + 2.0 ** -10)
    assert reference.reduce(xs, "sum", root=0)[0] == one
    assert reference.reduce(xs, "sum", root=1)[0] == one


def test_two_level_order_by_hand():
    # 4 ranks as 2 nodes of 2; one element lies in inner block 1 (split(1, 2) == [0, 0, 1])
    # and outer block 1: each node sums local ranks in the order 0, 1 (after local 1), and
    # the nodes are combined in the order 0, 1 (after node 1).
    tiny, one = F16(2.0 ** -11), F16(1.0)
    xs = [np.array([v]) for v in (one, tiny, tiny, F16(0.0))]
    # node 0: 1 + tiny = 1; node 1: tiny + 0 = tiny; then 1 + tiny = 1
    assert reference.allreduce(xs, "sum", nodes=2)[0] == one
    # flat: block 3 of split(1, 4) holds it, order 0, 1, 2, 3: ((1 + t) + t) + 0 = 1 too;
    # put the big value last instead and the flat ring keeps both halves
    xs = [np.array([v]) for v in (tiny, tiny, F16(0.0), one)]
    assert reference.allreduce(xs, "sum")[0] == F16(1 + 2.0 ** -10)
    # two-level: node 0 = t + t = 2t; node 1 = 0 + 1 = 1; 2t + 1 is exact
    assert reference.allreduce(xs, "sum", nodes=2)[0] == F16(1 + 2.0 ** -10)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(k=st.integers(1, 6), n=st.integers(0, 90), dtype=st.sampled_from(REDUCIBLE_NAMES),
       op=st.sampled_from(OPS), align=st.sampled_from([1, 4, 8]), root=st.integers(0, 5))
def test_flat_reference_is_the_simulated_ring_bit_for_bit(k, n, dtype, op, align, root):
    if op == "avg" and np.dtype(BF16 if dtype == "bfloat16" else dtype).kind not in "fV":
        op = "sum"
    root %= k
    inputs = [make(q, n, BF16 if dtype == "bfloat16" else dtype, op=op) for q in range(k)]
    want = simulate.run(Collective.ALLREDUCE, inputs, Op[op.upper()], 64, 2, align)[0]
    assert reference.allreduce(inputs, op, align=align).tobytes() == want.tobytes()
    got = simulate.run(Collective.REDUCE, inputs, Op[op.upper()], 64, 2, 1, root)[root]
    assert reference.reduce(inputs, op, root).tobytes() == got.tobytes()
    per = [x[:n - n % k] for x in inputs]
    sims = simulate.run(Collective.REDUCE_SCATTER, per, Op[op.upper()], 64, 2)
    for r, want in enumerate(reference.reduce_scatter(per, op)):
        assert want.tobytes() == sims[r].tobytes()


@settings(max_examples=120, deadline=None, derandomize=True)
@given(k=st.integers(1, 6), n=st.integers(0, 90), wire=st.sampled_from([F16, BF16]),
       op=st.sampled_from(["sum", "avg"]), chunk=st.sampled_from([64, 128, 1 << 20]),
       scale=st.sampled_from([1.0, 1e-6, 1e3]))
def test_compressed_reference_is_the_simulated_ring_bit_for_bit(k, n, wire, op, chunk, scale):
    """compression=: float32 data, a 16-bit wire (reduce.apply_wire), against the
    reference's order and rounding; the same bits on every rank; and within the wire's
    rounding of the float64 sum (k roundings of at most half an ulp of the partial)."""
    rng = np.random.default_rng(k * 1000 + n)
    inputs = [(rng.standard_normal(n) * scale).astype(np.float32) for _ in range(k)]
    outs = simulate.run(Collective.ALLREDUCE, inputs, Op[op.upper()], chunk, 2, wire=wire)
    want = reference.compressed(inputs, op, wire)
    for got in outs:
        assert got.dtype == np.float32 and got.tobytes() == want.tobytes()
    if n:  # every rank's value is a wire value, divided by k for avg
        held = want * (k if op == "avg" else 1)
        assert k == 1 or (held.astype(wire).astype(np.float32) == held).all()
    exact = np.sum(np.array(inputs, np.float64), axis=0) / (k if op == "avg" else 1)
    ulp = 2.0 ** (-8 if wire == BF16 else -11)
    bound = k * ulp * np.sum(np.abs(np.array(inputs, np.float64)), axis=0) + 1e-30
    if wire == F16:  # float16's subnormals round to a fixed step
        bound += k * 2.0 ** -25 / (k if op == "avg" else 1)
    assert (np.abs(want - exact) <= bound).all()
    per = [x[:n - n % k] for x in inputs]
    sims = simulate.run(Collective.REDUCE_SCATTER, per, Op[op.upper()], chunk, 2, wire=wire)
    for r, block in enumerate(reference.compressed(per, op, wire, "reduce_scatter")):
        assert block.tobytes() == sims[r].tobytes()


def test_compressed_rounding_by_hand():
    """Two ranks, bfloat16 wire: 1 + 2^-9 is not a bfloat16 (8 bits of mantissa), so the
    hop rounds it (to even: 1), and the float32 sum that follows keeps the other rank's
    small part only until the seam rounds again."""
    one, small = np.float32(1.0), np.float32(2.0 ** -9)
    xs = [np.array([small, one], np.float32), np.array([one, small], np.float32)]
    # element 0 lies in block 0 (split(2, 2) == [0, 1, 2]), reduced as x[1] then x[0]:
    # round(1) = 1, 1 + 2^-9 in float32, then the seam rounds to bfloat16: 1
    got = simulate.run(Collective.ALLREDUCE, xs, Op.SUM, 64, 2, wire=BF16)
    assert got[0][0] == one and got[1][0] == one
    # element 1, block 1: x[0] first: round(1) = 1; + 2^-9 = 1 + 2^-9 -> 1 at the seam
    assert got[0][1] == one
    # a reduce-scatter keeps its float32 sum: rank 1's block is 1 + 2^-9
    rs = simulate.run(Collective.REDUCE_SCATTER, xs, Op.SUM, 64, 2, wire=BF16)
    assert rs[1][0] == np.float32(1 + 2.0 ** -9)
    assert reference.compressed(xs, "sum", BF16, "reduce_scatter")[1][0] == rs[1][0]


@pytest.mark.parametrize("nodes,per", [(2, 2), (2, 3), (3, 2), (4, 1), (1, 4)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int32"])
@pytest.mark.parametrize("op", OPS)
def test_references_are_reductions(nodes, per, dtype, op):
    """Every order gives NumPy's float64 reduction within the dtype's rounding, integers
    exactly; one rank per node and one node are the flat ring."""
    dt = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    if op == "avg" and dt.kind == "i":
        return
    k = nodes * per
    inputs = [make(q, 60 * k, dt, op=op) for q in range(k)]
    exact = _float64(inputs, op)
    eps = {2: 2.0 ** -7 if dt == BF16 else 2.0 ** -10, 4: 2.0 ** -23, 8: 2.0 ** -52}[dt.itemsize]
    got = reference.allreduce(inputs, op, nodes)
    rs = np.concatenate(reference.reduce_scatter(inputs, op, nodes))
    for result in (got, rs):
        if dt.kind == "i":
            assert (result == exact.astype(dt)).all()
        else:  # k roundings of values up to 2^4 x their sum's magnitude
            scale = np.abs(np.stack(inputs).astype(np.float64)).sum(0) if op in ("sum", "avg") \
                else np.abs(exact)
            if op == "avg":
                scale = scale / k
            assert (np.abs(result.astype(np.float64) - exact) <= 2 * k * eps * scale + 1e-300).all()
    if nodes == 1 or per == 1:
        assert got.tobytes() == reference.allreduce(inputs, op).tobytes()


def _float64(inputs, op):
    stack = np.stack(inputs).astype(np.float64 if inputs[0].dtype.kind in "fV" else np.int64)
    fn = reference.UFUNC[op]
    red = fn.reduce(stack, axis=0)
    return red / len(inputs) if op == "avg" else red
