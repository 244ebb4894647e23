"""tests/inputs.drawn: the examples every rank of an mpiexec job draws alike."""

from hypothesis import given, strategies as st

from .inputs import drawn


def draws(monkeypatch, seed=None, examples=8):
    """The examples a drawn() test sees, with RING_TEST_SEED as given."""
    if seed is None:
        monkeypatch.delenv("RING_TEST_SEED", raising=False)
    else:
        monkeypatch.setenv("RING_TEST_SEED", str(seed))
    monkeypatch.setenv("RING_TEST_EXAMPLES", str(examples))
    seen = []

    @drawn(2)
    @given(st.integers(0, 2**62))
    def test(x):
        seen.append(x)
    test()
    return seen


def test_every_run_draws_the_same_examples(monkeypatch):
    first = draws(monkeypatch)
    assert len(first) == 8  # RING_TEST_EXAMPLES, not the default of 2
    assert draws(monkeypatch) == first


def test_a_seed_draws_another_set_the_same_each_time(monkeypatch):
    default, seeded = draws(monkeypatch), draws(monkeypatch, seed=11)
    assert set(seeded) != set(default)
    assert draws(monkeypatch, seed=11) == seeded
    assert set(draws(monkeypatch, seed=12)) != set(seeded)
