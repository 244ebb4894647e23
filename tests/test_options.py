"""The checks of the options a Communicator and a ring.Group take (ring/options.py) and of
RING_NODES (ring/topology.py): a ValueError naming the option for anything off, whatever
its type, since a conversion that raised instead would be an error of its own that names
nothing (and, in a Communicator, one raised before the ranks compare their options:
tests/mpi/check_errors.py)."""

import warnings

import numpy as np
import pytest

from ring.options import check_path, check_slots, check_timeout, whole_number
from ring.topology import emulated_nodes


@pytest.mark.parametrize("v", [2, 4.0, np.int64(8), np.float32(64)])
def test_a_whole_number_is_any_real_of_whole_value(v):
    assert whole_number(v)


@pytest.mark.parametrize("v", [True, 2.5, "4", None, float("nan"), float("inf"), [4]])
def test_strings_bools_fractions_and_non_finite_values_are_not_whole_numbers(v):
    assert not whole_number(v)


@pytest.mark.parametrize("nslots", [1, 0, 2.5, "4", None, True])
def test_nslots_must_be_a_whole_number_of_two_or_more(nslots):
    with pytest.raises(ValueError, match=f"nslots: need at least 2 slots per link, got {nslots!r}"):
        check_slots(1024, nslots)


@pytest.mark.parametrize("chunk", [0, 32, 100, 64.5, "1024", None, float("inf")])
def test_chunk_bytes_must_be_a_positive_multiple_of_64(chunk):
    with pytest.raises(ValueError, match="chunk_bytes: must be a positive multiple of 64"):
        check_slots(chunk, 4)


def test_slots_of_whole_values_of_any_type_are_taken():
    check_slots(64, 2)
    check_slots(np.int64(1 << 20), 4.0)


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), "10", None, True])
def test_a_timeout_must_be_positive_seconds(timeout):
    with pytest.raises(ValueError, match="timeout: must be positive seconds"):
        check_timeout(timeout)


def test_a_timeout_is_taken_as_seconds_of_any_real_type():
    assert check_timeout(5) == 5.0 and check_timeout(np.float32(0.5)) == 0.5
    assert isinstance(check_timeout(np.int64(3)), float)


def test_fused_is_the_stream_paths_old_name_with_a_warning():
    with pytest.warns(DeprecationWarning, match="path='fused' is now called 'stream'"):
        assert check_path("fused") == "stream"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_path("stream") == "stream"
    with pytest.raises(ValueError, match="path: expected one of"):
        check_path("dma")


@pytest.mark.parametrize("raw,nodes", [("", 0), ("  ", 0), ("1", 1), (" 3 ", 3)])
def test_ring_nodes_emulates_that_many_nodes(monkeypatch, raw, nodes):
    monkeypatch.setenv("RING_NODES", raw)
    assert emulated_nodes() == nodes


@pytest.mark.parametrize("raw", ["0", "-2", "two", "1.5"])
def test_ring_nodes_must_be_a_positive_integer(monkeypatch, raw):
    monkeypatch.setenv("RING_NODES", raw)
    with pytest.raises(ValueError, match=f"RING_NODES must be a positive integer, got {raw!r}"):
        emulated_nodes()
