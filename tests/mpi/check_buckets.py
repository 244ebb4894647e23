"""GradientBuckets on real ranks (host device): the int8 exchanges bit for bit against
tests/int8_reference.py, every shard shape (whole, short, empty) on 1-4 ranks, with and
without error feedback, over steps (residuals carried); the default exchange as chosen;
top-k against tests/topk_reference.py likewise."""

import re

import numpy as np
import pytest

import ring
from ring.buckets import GradientBuckets

from ..int8_reference import Int8Bucket
from ..topk_reference import TopKBucket
from .conftest import TIMEOUT

SIZES = (9000, 300)  # bucket 0: gradient 1 (300 values), bucket 1: gradient 0 (9000)


def values(q: int, step: int) -> list:
    rng = np.random.default_rng([q, step])
    return [(rng.standard_normal(n) * (1 + 10 * q)).astype(np.float32) for n in SIZES]


@pytest.fixture(scope="module")
def hcomm():
    c = ring.Communicator(device="host", timeout=TIMEOUT, chunk_bytes=1024)
    yield c
    c.close()


def against_the_reference(comm, refs, op: str, check=None, **options) -> None:
    """Three steps of GradientBuckets(**options) over SIZES on comm, every rank's values
    known to every rank: each bucket's result bit for bit refs[bucket].step(...)'s; check
    (result, every rank's values) looks further."""
    k, r = comm.size, comm.rank
    grads = [np.zeros(n, np.float32) for n in SIZES]
    b = GradientBuckets(comm, grads, op=op, first_bucket_bytes=4 * SIZES[1], **options)
    assert b.buckets == [[1], [0]]
    for step in range(3):
        everyone = [values(q, step) for q in range(k)]
        for i in (1, 0):
            grads[i][...] = everyone[r][i]
            b.ready(i)
        b.wait()
        for bucket, i in enumerate((1, 0)):
            theirs = [everyone[q][i] for q in range(k)]
            want = refs[bucket].step(theirs, op == "avg")
            assert grads[i].tobytes() == want.tobytes(), (step, i)
            if check is not None:
                check(grads[i], theirs)


@pytest.mark.parametrize("feedback", [False, True])
@pytest.mark.parametrize("op", ["sum", "avg"])
@pytest.mark.parametrize("exchange", ["allgather", "alltoall"])
def test_int8_exchanges_match_the_reference(hcomm, exchange, op, feedback):
    def near(got, theirs):
        exact = sum(t.astype(np.float64) for t in theirs) / (len(theirs) if op == "avg" else 1)
        # each rounding within half a step of its block's scale: loose, but not nothing
        assert np.abs(got - exact).max() <= 0.05 * np.abs(exact).max() + 1e-6
    refs = [Int8Bucket(SIZES[i], hcomm.size, exchange, feedback) for i in (1, 0)]
    against_the_reference(hcomm, refs, op, near, compression="int8", error_feedback=feedback,
                          int8_exchange=exchange)


def test_the_default_exchange_sends_fewer_bytes(hcomm):
    from ring.training.int8_reduce import choose
    grads = [np.zeros(1 << 16, np.float32)]
    b = GradientBuckets(hcomm, grads, compression="int8")
    want = "alltoall" if hcomm.size >= 3 else "allgather"
    assert b._int8[0].exchange == want == choose(None, 1 << 16, hcomm.size)
    assert choose(None, 300, hcomm.size) == "allgather"  # one block: nothing to shard


@pytest.mark.parametrize("feedback,momentum,kind", [
    (False, 0.0, "global"), (True, 0.0, "global"), (True, 0.9, "global"), (True, 0.9, "local")])
@pytest.mark.parametrize("op", ["sum", "avg"])
@pytest.mark.parametrize("density", [0.01, 0.2])
def test_topk_matches_the_reference(hcomm, density, op, feedback, momentum, kind):
    """Each rank's k largest (index, value) pairs all-gathered and summed in rank order,
    bit for bit the reference's, over steps (the residual carried with feedback, and the
    velocity or the carry with momentum)."""
    from ring.training.topk import k_of
    refs = [TopKBucket(SIZES[i], hcomm.size, k_of(SIZES[i], density), feedback, momentum,
                       kind) for i in (1, 0)]
    against_the_reference(hcomm, refs, op, compression="topk", density=density,
                          error_feedback=feedback, momentum=momentum, momentum_kind=kind)


def still_usable(comm) -> None:
    x = np.full(4, comm.rank + 1.0)
    comm.allreduce(x, out=x)
    assert x.tolist() == [comm.size * (comm.size + 1) / 2] * 4


def test_a_bad_option_on_one_rank_is_raised_on_every_rank(hcomm):
    """The buckets are made collectively: rank 0's bad option is its ValueError, a
    MismatchError naming it on the others (not their first step's wait until the timeout);
    nothing moved, so the communicator goes on."""
    grads = [np.zeros(n, np.float32) for n in SIZES]
    for bad in [dict(op="max"), dict(compression="topk", density=0.1, momentum="x"),
                dict(bucket_bytes=0)]:
        options = bad if hcomm.rank == 0 else {}
        want = ValueError if hcomm.rank == 0 else ring.MismatchError
        with pytest.raises(want) as info:
            GradientBuckets(hcomm, grads, **options)
        assert isinstance(info.value, ring.MismatchError) == (hcomm.rank != 0), info.value
        if hcomm.rank != 0:
            assert "rank(s) [0] passed bad arguments" in str(info.value)
    still_usable(hcomm)


@pytest.mark.parametrize("last,options,field", [
    (dict(sizes=(9000, 301)), {}, "gradients[1]"),
    (dict(dtype=np.float64), {}, "gradients[0]"),
    (dict(sizes=(9000,)), {}, "gradients"),
    ({}, dict(first_bucket_bytes=1 << 20), "buckets"),
    ({}, dict(op="sum"), "op"),
    ({}, dict(compression="bf16"), "compression"),
    ({}, dict(compression="topk", density=0.2), "density")])
def test_ranks_that_differ_raise_mismatch_everywhere(hcomm, last, options, field):
    """Gradients of another size, count or dtype, or other options, on the last rank: every
    rank raises the same MismatchError naming the first field that differs (DDP verifies
    its parameters' shapes across processes likewise); a single rank has nothing to differ
    from."""
    base = dict(compression="topk", density=0.1) if "density" in options else {}
    mine = hcomm.rank == hcomm.size - 1
    sizes = last.get("sizes", SIZES) if mine else SIZES
    grads = [np.zeros(n, last.get("dtype", np.float32) if mine else np.float32)
             for n in sizes]
    given = {**base, "first_bucket_bytes": 4 * SIZES[1], **(options if mine else {})}
    if hcomm.size == 1:
        GradientBuckets(hcomm, grads, **given)
        return
    with pytest.raises(ring.MismatchError, match=rf"ranks disagree on {re.escape(field)} \(") \
            as info:
        GradientBuckets(hcomm, grads, **given)
    assert f"rank {hcomm.size - 1}:" in str(info.value)
    still_usable(hcomm)


def test_as_many_buckets_of_other_gradients_raise_mismatch(hcomm):
    """Other bucket sizes on the last rank that cut the same gradients into as many buckets,
    but other ones: [[2], [1, 0]] against [[2, 1], [0]]."""
    if hcomm.size == 1:
        return  # (nothing to differ from)
    grads = [np.zeros(100, np.float32) for _ in range(3)]
    cut = (800, 400) if hcomm.rank == hcomm.size - 1 else (400, 800)
    with pytest.raises(ring.MismatchError, match=r"ranks disagree on buckets\[0\] \("):
        GradientBuckets(hcomm, grads, first_bucket_bytes=cut[0], bucket_bytes=cut[1])
    still_usable(hcomm)


def test_what_may_differ_does_not_raise(hcomm):
    """The same options written alike (momentum 0 or 0.0, density as NumPy's float) and
    gradient_as_bucket_view (each rank's own memory) may differ between ranks."""
    r = hcomm.rank
    grads = [np.zeros(n, np.float32) for n in SIZES]
    b = GradientBuckets(hcomm, grads, compression="topk", error_feedback=True,
                        density=np.float32(1) if r % 2 else 1, momentum=0 if r % 2 else 0.0,
                        gradient_as_bucket_view=r % 2 == 1)
    for i in (1, 0):
        b.grads[i][...] = 1
        b.ready(i)
    b.wait()
    assert all((g == 1).all() for g in b.grads)  # the average of ones: all of them sent
