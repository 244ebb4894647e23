"""The fast path's compiled round (ring/host/compiled_round.py) in one process: K segments laid
out as the exchange window's (transport/exchange.py), the peers' rounds posted by hand, and
the result compared bit for bit with reduce.fold (NumPy's loops, the full path's), a NaN
with any NaN (same_bits)."""

import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ring.host import compiled_round
from ring.host.reduce import fold, follow
from ring.recipe import posts, recipe
from ring.schedule import Collective, sizes
from ring.transport.exchange import HEADER, RECORD
from ringtypes import DTYPES, FLOATING, REDUCIBLE, Op

from .inputs import same_bits

CAP = 256  # data bytes per slot here
AREA = RECORD * 8 + 2 * CAP
NATIVE = [dt for dt in DTYPES if dt in REDUCIBLE and compiled_round.wire(dt) == dt]


class Window:
    """K private segments: rank 0 is the caller, the others' slots are written here."""

    def __init__(self, k: int):
        self.segs = [np.zeros(HEADER + 2 * AREA, np.uint8) for _ in range(k)]
        self.bases = np.array([s.ctypes.data for s in self.segs], np.int64)

    def slot(self, q, seq):
        return HEADER + (seq & 1) * AREA

    def post(self, q, seq, row, x):
        b = self.slot(q, seq)
        self.segs[q][b:b + row.nbytes] = row.view(np.uint8)
        d = b + RECORD * 8
        self.segs[q][d:d + x.nbytes] = x.view(np.uint8)
        self.segs[q][:8] = np.array([seq], np.int64).view(np.uint8)

    def data(self, q, seq, dtype, n):
        d = self.slot(q, seq) + RECORD * 8
        return self.segs[q][d:d + n * dtype.itemsize].view(dtype)


def values(dtype, n, rng):
    if dtype in FLOATING:
        v = rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n))
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e38, -1e38, 3e-39])
        v = np.where(rng.random(n) < 0.2, rng.choice(special, n), v)
        with np.errstate(over="ignore"):
            return v.astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, endpoint=True, dtype=dtype)


def run(k, dtype, op, n, seed, seq=5):
    rng = np.random.default_rng(seed)
    w = Window(k)
    row = np.arange(7, dtype=np.int64)
    fold_here = not (dtype in FLOATING and op in (Op.MIN, Op.MAX))
    plan, _ = compiled_round.plan(0, AREA, op, fold_here, w.bases, row)
    xs = [values(dtype, n, rng) for _ in range(k)]
    for q in range(1, k):
        w.post(q, seq, row, xs[q])
    out = np.full(n, 7, dtype)
    status = compiled_round.call(plan, xs[0], out, 0, seq, 10, 0, compiled_round.OWN)
    want = np.empty(n, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fold(lambda q: w.data(q, seq, dtype, n), op, k, want)
    return status, out, want, w, xs, fold_here


@settings(max_examples=150, deadline=None)
@given(k=st.integers(1, 5), dtype=st.sampled_from(NATIVE), op=st.sampled_from(list(Op)),
       n=st.integers(1, 60), seed=st.integers(0, 2**32 - 1))
def test_fold_is_numpys_bit_for_bit(k, dtype, op, n, seed):
    if op is Op.AVG and dtype not in FLOATING:
        return  # avg is refused for integers before any round
    status, out, want, w, xs, fold_here = run(k, dtype, op, n, seed)
    assert status == compiled_round.DONE
    assert w.data(0, 5, dtype, n).tobytes() == xs[0].tobytes()  # posted
    assert np.frombuffer(w.segs[0][:8], np.int64)[0] == 5  # round counter
    if fold_here:
        assert same_bits(out, want)
    else:  # NumPy's loops fold floating min / max (the caller does it)
        assert (out == 7).all()


@settings(max_examples=100, deadline=None)
@given(k=st.integers(1, 5), me=st.integers(0, 4), dtype=st.sampled_from(NATIVE),
       op=st.sampled_from(list(Op)), n=st.integers(1, 32), seed=st.integers(0, 2**32 - 1))
def test_gathered_folds_as_numpy_and_compares_every_record(k, me, dtype, op, n, seed):
    """gathered(): the agreement's allgather across nodes (agreement.agree's layout: K rows
    of a record padded to RECORD, then the data), the same fold bit for bit, and a record
    that differs in any field, on any rank, a mismatch."""
    if op is Op.AVG and dtype not in FLOATING:
        return
    me %= k
    rng = np.random.default_rng(seed)
    everyone = np.zeros((k, RECORD + CAP // 8), np.int64)
    everyone[:, :7] = np.arange(7)
    xs = [values(dtype, n, rng) for _ in range(k)]
    for q in range(k):
        everyone[q, RECORD:].view(np.uint8)[:xs[q].nbytes] = xs[q].view(np.uint8)
    fold_here = not (dtype in FLOATING and op in (Op.MIN, Op.MAX))
    out = np.full(n, 7, dtype)
    assert compiled_round.gathered(everyone, me, int(op), fold_here, out) == compiled_round.DONE
    want = np.empty(n, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fold(xs.__getitem__, op, k, want)
    assert same_bits(out, want if fold_here else np.full(n, 7, dtype))
    if k > 1:
        q, field = rng.integers(k), rng.integers(RECORD)
        everyone[q, field] += 1
        assert compiled_round.gathered(everyone, me, int(op), fold_here, out) == compiled_round.MISMATCH


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 5), dtype=st.sampled_from(NATIVE), op=st.sampled_from(list(Op)),
       n=st.integers(1, 300), seed=st.integers(0, 2**32 - 1))
@example(k=5, dtype=np.dtype(np.float32), op=Op.PROD, n=300, seed=16748)  # -NaN against NaN
def test_folded_folds_the_rows_of_a_oneshot_allgather_as_numpy(k, dtype, op, n, seed):
    """folded(): a oneshot too large to ride, its own allgather (K rows of x's bytes), the
    same fold bit for bit, in rank order."""
    if op is Op.AVG and dtype not in FLOATING or dtype in FLOATING and op in (Op.MIN, Op.MAX):
        return  # what the fast path folds with NumPy's loops instead
    rng = np.random.default_rng(seed)
    xs = [values(dtype, n, rng) for _ in range(k)]
    rows = np.stack([x.view(np.uint8) for x in xs])
    out = np.full(n, 7, dtype)
    compiled_round.folded(rows, int(op), out)
    want = np.empty(n, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fold(xs.__getitem__, op, k, want)
    assert same_bits(out, want)


def test_a_peer_not_there_is_waiting_and_a_different_record_is_a_mismatch():
    w = Window(3)
    row = np.arange(7, dtype=np.int64)
    plan, mine = compiled_round.plan(0, AREA, Op.SUM, True, w.bases, row)
    x, out = np.ones(4, np.float32), np.empty(4, np.float32)
    w.post(1, 3, row, x)
    assert compiled_round.call(plan, x, out, 0, 3, 100, 0, compiled_round.ANY) == compiled_round.WAITING  # rank 2 is late
    other = row.copy()
    other[4] += 1
    w.post(2, 3, other, x)
    assert compiled_round.finish(plan, out, 3) == compiled_round.MISMATCH
    w.post(2, 3, row, x)
    assert compiled_round.finish(plan, out, 3) == compiled_round.DONE and (out == 3).all()
    mine[0] = 99  # the caller's call number lives in the plan: now every peer differs
    assert compiled_round.finish(plan, out, 3) == compiled_round.MISMATCH


def test_a_kept_rounds_read_back_comes_before_the_next_post():
    """settle_then_post (a stream-ordered kept call, ring/host/repeated.py's post_kept):
    round 3, posted earlier, read back first; the next round (4) is posted only where it
    was DONE: a peer late on round 3 is WAITING and nothing of round 4 posted; a peer's
    different record of round 3 a MISMATCH, again nothing posted."""
    w = Window(2)
    row = np.arange(6, dtype=np.int64)
    before, mine = compiled_round.plan(0, AREA, Op.SUM, False, w.bases, row, posts=False)
    plan, _ = compiled_round.plan(0, AREA, Op.SUM, False, w.bases, row.copy(), posts=False)
    none = np.empty(0, np.int64)
    compiled_round.post(before, none, 30, 3)  # (our call 30, round 3)
    counter = lambda: int(np.frombuffer(w.segs[0][:8], np.int64)[0])  # noqa: E731
    assert counter() == 3
    assert compiled_round.settle_then_post(before, 3, plan, none, 31, 4, 50, 0) == \
        compiled_round.WAITING
    assert counter() == 3  # round 4 not posted
    theirs = mine.copy()
    theirs[2] += 1
    w.post(1, 3, theirs, none)
    assert compiled_round.settle_then_post(before, 3, plan, none, 31, 4, 50, 0) == \
        compiled_round.MISMATCH
    assert counter() == 3
    w.post(1, 3, mine.copy(), none)
    assert compiled_round.settle_then_post(before, 3, plan, none, 31, 4, 50, 0) == \
        compiled_round.DONE
    assert counter() == 4
    posted = w.segs[0][w.slot(0, 4):w.slot(0, 4) + 48].view(np.int64)
    assert posted[0] == 31 and posted[1:].tolist() == row[1:].tolist()


def test_the_call_number_is_posted_and_noted_for_the_peers():
    """call() writes its number into the record row it posts (agreement.FIELDS[0]) and
    at plan's ENTERED address (the backend header the peers' timeout messages read)."""
    w = Window(2)
    noted = np.zeros(1, np.int64)
    plan, mine = compiled_round.plan(0, AREA, Op.SUM, True, w.bases, np.zeros(5, np.int64),
                                entered=noted.ctypes.data)
    x = np.ones(3, np.int32)
    assert compiled_round.call(plan, x, x, 41, 7, 5, 2, compiled_round.ANY) == compiled_round.WAITING
    assert mine[0] == 41 and noted[0] == 41
    posted = w.segs[0][w.slot(0, 7):w.slot(0, 7) + 40].view(np.int64)
    assert posted.tolist() == [41, 0, 0, 0, 0]
    assert np.frombuffer(w.segs[0][:8], np.int64)[0] == 7


def test_out_memory_not_the_signatures_is_seen_before_posting():
    w = Window(2)
    row = np.arange(7, dtype=np.int64)
    plan, _ = compiled_round.plan(0, AREA, Op.SUM, True, w.bases, row)
    big = np.ones(9, np.float64)
    assert compiled_round.call(plan, big[:8], big[:8], 0, 1, 10, 0, compiled_round.OWN) == compiled_round.ALIASED
    assert compiled_round.call(plan, big[:8], big[:8].copy(), 0, 1, 10, 0, compiled_round.SAME) == compiled_round.APART
    for memory, status in ((compiled_round.OWN, compiled_round.OVERLAP), (compiled_round.SAME, compiled_round.APART)):
        assert compiled_round.call(plan, big[:8], big[1:], 0, 1, 10, 0, memory) == status
        assert compiled_round.call(plan, big[1:], big[:8], 0, 1, 10, 0, memory) == status
    assert np.frombuffer(w.segs[0][:8], np.int64)[0] == 0  # nothing posted
    assert compiled_round.call(plan, big[:8], big[:8], 0, 1, 10, 0, compiled_round.SAME) == compiled_round.WAITING
    assert np.frombuffer(w.segs[0][:8], np.int64)[0] == 1
    assert compiled_round.call(plan, big[:4], big[4:8], 0, 2, 10, 0, compiled_round.OWN) == compiled_round.WAITING
    # empty views at one address: nothing to alias (a repeated empty call, in place or not,
    # as its full path saw it: out of place)
    for seq, memory in ((3, compiled_round.OWN), (4, compiled_round.SAME)):
        assert compiled_round.call(plan, big[:0], big[:0], 0, seq, 10, 0, memory) == \
            compiled_round.WAITING


@pytest.mark.parametrize("dtype", [np.dtype(np.float16)], ids=str)
def test_sixteen_bit_floats_post_their_bits(dtype):
    """float16 / bfloat16 travel as uint16 (compiled_round.wire); NumPy's loops fold them."""
    assert compiled_round.wire(dtype) == np.uint16
    w = Window(2)
    row = np.arange(7, dtype=np.int64)
    plan, _ = compiled_round.plan(0, AREA, Op.SUM, False, w.bases, row)
    x = np.array([1.5, -2.0], dtype)
    w.post(1, 1, row, x)
    out = np.zeros(2, np.uint16)
    assert compiled_round.call(plan, x.view(np.uint16), out, 0, 1, 10, 0, compiled_round.OWN) == compiled_round.DONE
    assert w.data(0, 1, dtype, 2).tobytes() == x.tobytes() and (out == 0).all()


def test_in_place_at_any_distance_from_x():
    """SAME: out at the plan's delta bytes from x, before or after it (an all-gather's
    in place: x is out's block r). The addresses are unsigned in Numba: a delta below
    zero once read as 2**64 - 12."""
    w = Window(2)
    big = np.zeros(6, np.float32)
    for delta, x in ((-12, big[3:]), (0, big), (12, None)):
        plan, _ = compiled_round.plan(0, AREA, Op.SUM, True, w.bases, np.zeros(4, np.int64),
                                 segments=[], delta=delta)
        if x is None:
            x, out = big[:3], big[3:]  # out after x: delta 12
        else:
            out = big
        assert compiled_round.call(plan, x, out, 0, 1, 10, 0, compiled_round.SAME) == compiled_round.WAITING
        assert compiled_round.call(plan, big[1:4], big, 0, 3, 10, 0, compiled_round.SAME) == \
            compiled_round.APART


@settings(max_examples=150, deadline=None)
@given(k=st.integers(1, 5), dtype=st.sampled_from(NATIVE + [np.dtype("u2")]),
       collective=st.sampled_from([c for c in Collective if c is not Collective.BARRIER]),
       per_rank=st.integers(0, 6), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_a_recipe_followed_compiled_is_numpys(k, dtype, collective, per_rank, seed, data):
    """Another collective's round (recipe.recipe in the plan): rank `me` posts x only
    where it sends, and out is reduce.follow's, bit for bit."""
    rng = np.random.default_rng(seed)
    me, root = data.draw(st.integers(0, k - 1)), data.draw(st.integers(0, k - 1))
    op = data.draw(st.sampled_from([o for o in Op if o is not Op.AVG or dtype in FLOATING]))
    if not collective.reduces:
        op = Op.SUM
    n = per_rank * k if collective.divides else per_rank + 1
    count, out_n = sizes(collective, n, k)
    segments = recipe(collective, k, me, root, count)
    fold_here = not (dtype in FLOATING and op in (Op.MIN, Op.MAX))
    w = Window(k)
    row = np.arange(7, dtype=np.int64)
    plan, _ = compiled_round.plan(me, AREA, op, fold_here, w.bases, row, segments=segments,
                             posts=posts(collective, me, root))
    xs = [values(dtype, n, rng) for _ in range(k)]
    for q in range(k):
        if q != me:
            w.post(q, 5, row, xs[q] if posts(collective, q, root) else xs[q][:0])
    w.data(me, 5, np.dtype(np.uint8), n * dtype.itemsize)[...] = 0xAB
    out = np.full(out_n if collective not in (Collective.ALLREDUCE, Collective.REDUCE) else n,
                  7, dtype)
    assert compiled_round.call(plan, xs[me], out, 0, 5, 10, 0, compiled_round.OWN) == compiled_round.DONE
    posted = w.data(me, 5, dtype, n).tobytes()
    assert posted == (xs[me].tobytes() if posts(collective, me, root) else
                      b"\xab" * (n * dtype.itemsize))
    want = np.full_like(out, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        follow(segments, lambda q: xs[q], op, want)
    if fold_here or not collective.reduces:
        assert same_bits(out, want)


def test_a_communicator_loads_the_agreements_round_before_its_first_call():
    """Numba's first load in a process (its CPU target set up: 0.25 s idle, over a second on
    shared cores) happens in the constructor, where no peer waits under a deadline, not in
    the first call, where a short timeout could expire on a peer that is only loading."""
    import subprocess
    import sys
    code = ("import ring\n"
            "from ring.host import compiled_round as cr\n"
            "before = len(cr.call.overloads)\n"
            "c = ring.Communicator(device='host', timeout=60)\n"
            "print(before, len(cr.call.overloads))\n"
            "c.close()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "1"], out.stdout + out.stderr
