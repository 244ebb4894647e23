"""The checks of the options a Communicator and a ring.Group take (ring/options.py) and of
RING_NODES (ring/topology.py): a ValueError naming the option for anything off, whatever
its type, since a conversion that raised instead would be an error of its own that names
nothing (and, in a Communicator, one raised before the ranks compare their options:
tests/mpi/check_errors.py)."""

import warnings

import numpy as np
import pytest

from ring.cuda.error_word import INT64_MAX, timeout_ns
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


@pytest.mark.parametrize("seconds,ns", [(300.0, 300 * 10**9), (1e-9, 1), (9.2e9, 92 * 10**17),
                                        (9.3e9, INT64_MAX), (1e300, INT64_MAX),
                                        (float("inf"), INT64_MAX)])
def test_the_kernels_wait_the_timeout_in_nanoseconds_up_to_what_int64_holds(seconds, ns):
    assert timeout_ns(check_timeout(seconds)) == ns and isinstance(timeout_ns(seconds), int)


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


@pytest.mark.parametrize("name,value,match", [
    ("RING_KERNEL_THREADS", "abc", "RING_KERNEL_THREADS: a whole number, got 'abc'"),
    ("RING_KERNEL_THREADS", "2048", r"RING_KERNEL_THREADS: need 1..1024, got 2048"),
    ("RING_KERNEL_CHANNELS", "4.5", "RING_KERNEL_CHANNELS: a whole number, got '4.5'"),
    ("RING_KERNEL_CHANNELS", "0", r"RING_KERNEL_CHANNELS: need 1..\d+, got 0"),
    ("RING_KERNEL_UNROLL", "", "RING_KERNEL_UNROLL: a whole number, got ''"),
    ("RING_KERNEL_UNROLL", "2", "RING_KERNEL_UNROLL: 1 or 4, got 2"),
    ("RING_KERNEL_VECTORS", "yes", "RING_KERNEL_VECTORS: 0 or 1, got 'yes'"),
    ("RING_KERNEL_SYNC", "seq", "RING_KERNEL_SYNC: one of"),
    ("RING_KERNEL_PROTO", "LL", "RING_KERNEL_PROTO: one of"),
    ("RING_KERNEL_SCOPE", "system", "RING_KERNEL_SCOPE: gpu or sys, got 'system'")])
def test_the_kernels_environment_variables_are_checked(monkeypatch, name, value, match):
    """The ring kernel's shape and variant from RING_KERNEL_* (docs/gpu.md): a value off, or
    not a number, is a ValueError naming the variable; set, a good one is taken."""
    from ring.cuda import kernel_path as kp
    read = {"RING_KERNEL_THREADS": lambda: kp.shape_for(1),
            "RING_KERNEL_CHANNELS": lambda: kp.shape_for(1),
            "RING_KERNEL_UNROLL": kp.unroll_from_env, "RING_KERNEL_VECTORS": kp.vectors_from_env,
            "RING_KERNEL_SYNC": kp.sync_from_env, "RING_KERNEL_PROTO": kp.proto_from_env,
            "RING_KERNEL_SCOPE": lambda: kp.scope_from_env(True)}[name]
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=match):
        read()


def test_the_kernels_shape_takes_its_bounds_and_refuses_one_past_them(monkeypatch):
    """RING_KERNEL_CHANNELS from 1 to the channels a segment has counters for (MAX_CHANNELS)
    and RING_KERNEL_THREADS from 1 to a block's 1024 threads: both ends taken, one past
    either refused."""
    from ring.cuda import kernel_path as kp
    from ring.transport.ipc import MAX_CHANNELS
    for c, t in ((1, 1), (MAX_CHANNELS, 1024)):
        monkeypatch.setenv("RING_KERNEL_CHANNELS", str(c))
        monkeypatch.setenv("RING_KERNEL_THREADS", str(t))
        assert kp.shape_for(1) == (c, t)
    monkeypatch.setenv("RING_KERNEL_CHANNELS", str(MAX_CHANNELS + 1))
    with pytest.raises(ValueError, match=f"need 1..{MAX_CHANNELS}, got {MAX_CHANNELS + 1}"):
        kp.shape_for(1)
    monkeypatch.setenv("RING_KERNEL_CHANNELS", "1")
    monkeypatch.setenv("RING_KERNEL_THREADS", "1025")
    with pytest.raises(ValueError, match="need 1..1024, got 1025"):
        kp.shape_for(1)


def test_the_kernels_environment_variables_are_taken(monkeypatch):
    from ring.cuda import kernel_path as kp
    for name, value in [("RING_KERNEL_CHANNELS", "3"), ("RING_KERNEL_THREADS", "64"),
                        ("RING_KERNEL_UNROLL", "1"), ("RING_KERNEL_VECTORS", "0"),
                        ("RING_KERNEL_SYNC", "fence"), ("RING_KERNEL_PROTO", "simple"),
                        ("RING_KERNEL_SCOPE", "sys")]:
        monkeypatch.setenv(name, value)
    assert kp.shape_for(4) == (3, 64)
    assert (kp.unroll_from_env(), kp.vectors_from_env(), kp.sync_from_env(),
            kp.proto_from_env(), kp.scope_from_env(True)) == (1, False, False, "simple", False)
    monkeypatch.setenv("RING_KERNEL_SCOPE", "gpu")
    assert kp.scope_from_env(True) and not kp.scope_from_env(False)


def test_processes_sharing_a_gpu_need_mps_then_room_for_every_kernel(monkeypatch, tmp_path):
    """kernel_path.why_not as it answers on a GPU (under the simulator it says None at once):
    a link across nodes first; then several processes on one GPU need an MPS control daemon,
    found by its control pipe in CUDA_MPS_PIPE_DIRECTORY (the directory alone, left by a
    daemon that has stopped, is not one); then every rank's channels resident at once.
    One process needs no MPS."""
    from ring.cuda import kernel_path as kp
    monkeypatch.setattr(kp, "SIMULATED", False)
    monkeypatch.setattr(kp, "room", lambda threads: 132 * max(1, 1024 // threads))  # an H100's
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(tmp_path))
    assert not kp.mps_running()
    assert "crosses nodes" in kp.why_not(False, 1, 64, 512)
    assert "2 processes share this GPU without MPS" in kp.why_not(True, 2, 64, 512)
    assert kp.why_not(True, 1, 64, 512) is None
    (tmp_path / "control").touch()
    assert kp.mps_running()
    assert kp.why_not(True, 2, 64, 512) is None  # 128 of its 264 blocks of 512 threads
    assert "64 channels x 5 ranks on this GPU exceed the 264 blocks of 512 threads" in \
        kp.why_not(True, 5, 64, 512)
