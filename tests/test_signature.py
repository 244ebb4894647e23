"""The fast path's signatures (ring/host/repeated.py: key, key_of, other, learnt_key) in
one process: which calls have one, and where an out that is another view of x's memory
(MPI's places in place) is looked up first."""

from types import SimpleNamespace

import numpy as np
import pytest

from ring.host import compiled_round, repeated
from ring.schedule import Collective
from ringtypes import Op

K, RANK, C = 4, 2, 3  # ranks, this rank, elements a rank
AG, RS = Collective.ALLGATHER, Collective.REDUCE_SCATTER


def test_key_takes_contiguous_numpy_arrays_and_plain_options():
    x, out = np.ones(6, np.float32), np.empty(6, np.float32)
    assert repeated.key(x, None, "sum")[3] == 0
    assert repeated.key(x, x, "sum")[3] == 1
    assert repeated.key(x, out, "sum")[3] == 2
    assert repeated.key(x, out, Op.SUM) == (x.dtype, (6,), Op.SUM, 2, None, None, None)
    assert repeated.key(x, out, "avg", 1 << 20, "oneshot", "float32")[4:] == \
        (1 << 20, "oneshot", "float32")
    readonly = out.copy()
    readonly.flags.writeable = False
    for args in [(list(x), None, "sum"), (x[::2], None, "sum"), (x[::2], x[::2], "sum"),
                 (x, out[::-1], "sum"), (x, readonly, "sum"), (x, out[:5], "sum"),
                 (x, out.view(np.int32), "sum"), (x, list(out), "sum"), (x, out, ["sum"]),
                 (x, out, "sum", 1.5), (x, out, "sum", None, ["ring"]),
                 (x, out, "sum", None, None, np.float32)]:
        assert repeated.key(*args) is None, args


@pytest.mark.parametrize("collective", [AG, RS])
def test_mpis_in_place_views_are_looked_up_in_place_first(collective):
    """Out a view of x's array (the reduce-scatter's block) or x of out's (the all-gather's):
    kind 1, the signature learnt_key keeps an in-place call under; arrays apart: kind 2;
    other() turns either into the other."""
    whole = np.ones(K * C, np.float32)
    block = whole[RANK * C:(RANK + 1) * C]
    x, out = (block, whole) if collective is AG else (whole, block)
    k = repeated.key_of(collective, x, out, "sum", 0)
    assert k[3] == 1 and k[8] == out.shape
    apart = repeated.key_of(collective, x.copy(), out.copy(), "sum", 0)
    assert apart[3] == 2 and repeated.other(apart) == k and repeated.other(k) == apart
    assert repeated.key_of(collective, x, None, "sum", 0)[3] == 0
    assert repeated.key_of(collective, x, out, "sum", 0.0) is None  # a root that is not int
    assert repeated.key_of(collective, x, out, ["sum"], 0) is None


def test_views_of_one_array_look_in_place():
    """The harness's places (x and out both views of one buffer) and the all-reduce's
    another view of x: kind 1, without asking NumPy whether they overlap (0.4 µs); an
    arena's views (of one buffer, apart) too, a guess that the compiled round corrects
    (learnt_key keeps such a call apart: below); arrays of their own: kind 2."""
    whole = np.ones(K * C, np.float32)
    x, out = whole[RANK * C:(RANK + 1) * C], whole[:]
    assert repeated.key_of(AG, x, out, "sum", 0)[3] == 1
    assert repeated.key_of(RS, whole[:], x, "sum", 0)[3] == 1
    assert repeated.key_of(AG, whole[:C], whole[C:], "sum", 0)[3] == 1
    assert repeated.key(x, x[:], "sum")[3] == 1
    assert repeated.key(whole[:C], whole[C:2 * C], "sum")[3] == 1
    assert repeated.key(x, np.ones(C, np.float32), "sum")[3] == 2
    assert repeated.key_of(AG, x, np.ones(K * C, np.float32), "sum", 0)[3] == 2


def test_an_allreduce_by_views_apart_is_kept_apart():
    """An all-reduce whose x and out are views of one buffer, apart (guessed in place) is
    kept at kind 2 (out must not overlap x); in place, or another view of x, at kind 1."""
    whole = np.ones(4 * C, np.float32)
    call = SimpleNamespace(collective=Collective.ALLREDUCE)
    for x, out, kind in [(whole[:C], whole[C:2 * C], 2), (whole[:C], whole[:C], 1),
                         (whole[:C], whole[:C][:], 1)]:
        k = repeated.key(x, out, "sum")
        assert k[3] == 1
        assert repeated.learnt_key(call, x, out, k, RANK) == \
            (k[:3] + (kind,) + k[4:], None, 0), kind
    apart = repeated.key(whole[:C], np.ones(C, np.float32), "sum")
    assert repeated.learnt_key(call, whole[:C], whole[C:2 * C], apart, RANK)[0] == apart


@pytest.mark.parametrize("in_place", [True, False])
def test_learnt_key_keeps_in_place_calls_in_place_and_the_others_apart(in_place):
    """Whatever kind key_of guessed, a call in place is kept at kind 1 (out's distance from
    x checked every call) and one apart at kind 2 (out must not overlap x)."""
    whole = np.ones(K * C, np.float32)
    x, out = whole[RANK * C:(RANK + 1) * C], whole
    call = SimpleNamespace(collective=AG, result=out, root=0, in_place=in_place)
    k0 = repeated.key_of(AG, x, out, "sum", 0)
    for kind in (1, 2):
        guess = k0[:3] + (kind,) + k0[4:]
        k, memory, delta = repeated.learnt_key(call, x, out, guess, RANK)
        if in_place:
            assert (k[3], memory, delta) == (1, compiled_round.SAME, -RANK * C * 4)
        else:
            assert (k[3], memory, delta) == (2, compiled_round.OWN, 0)
        assert k[:3] + k[4:] == guess[:3] + guess[4:]
