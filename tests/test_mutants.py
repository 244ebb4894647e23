"""tools/mutants.py's planted faults still fit the code: each replaces text that occurs
exactly once in its file (a change to the code there leaves the tool unable to plant it,
which this says at once rather than in the next mutation run), and each has tests to run
against (its own, or the whole suite)."""

import importlib.util

import pytest

from tests.mpirun import ROOT

spec = importlib.util.spec_from_file_location("mutants", ROOT / "tools" / "mutants.py")
mutants = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutants)


@pytest.mark.parametrize("name", list(mutants.MUTANTS))
def test_every_planted_fault_finds_its_text_once(name):
    path, old, new, fault = mutants.MUTANTS[name]
    assert old != new and fault
    assert (ROOT / path).read_text().count(old) == 1, f"{name}: update it to {path}"


def test_every_own_selection_names_tests_that_exist():
    for name, tests in mutants.OWN_TESTS.items():
        assert name in mutants.MUTANTS
        for word in tests.split():
            assert (ROOT / word.split("::")[0]).exists(), (name, word)
