"""GradientBuckets on real ranks (host device): the int8 exchanges bit for bit against
tests/int8_reference.py, every shard shape (whole, short, empty) on 1-4 ranks, with and
without error feedback, over steps (residuals carried); the default exchange as chosen;
top-k against tests/topk_reference.py likewise."""

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
