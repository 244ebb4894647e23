"""The table of kernel values a BoundLaunch hands the driver (kernels/bound_launch.py): each
of Numba's packed values in memory of its own, with the bytes cuda.core's launch would
have written for it, the choice of launch, and the capture of a graph of one launch (its
driver calls, on a stand-in). The launch itself needs a GPU
(kernels/launch_cost.py checks its result there; every kernel-path test runs through it)."""

import ctypes
import struct

import numpy as np
import pytest
from hypothesis import given, strategies as st

from kernels.bound_launch import c_value, graph_of, launcher, param_table
from kernels.driver import handle_of

from .gpu import needs_gpu


def table_bytes(packed, sizes):
    """The bytes each pointer of packed's table points at, sizes[i] of them."""
    table, values = param_table(packed)
    assert len(values) == len(packed)
    return [ctypes.string_at(table[i], n) for i, n in enumerate(sizes)]


def test_each_kind_of_value_reads_back_as_the_kernel_takes_it():
    packed = [0, 0, 77, 4, 0x7F00_1234_5678, 77, 4,  # a 1-d array as Numba packs it
              ctypes.c_float(2.5), ctypes.c_int32(-7), ctypes.c_uint16(9), True, False,
              1.5, np.int32(-3), np.uint64(2**64 - 1), np.float32(0.25)]
    got = table_bytes(packed, [8] * 7 + [4, 4, 2, 1, 1, 8, 4, 8, 4])
    want = [struct.pack("<q", v) for v in packed[:7]] + [
        struct.pack("<f", 2.5), struct.pack("<i", -7), struct.pack("<H", 9), b"\x01",
        b"\x00", struct.pack("<d", 1.5), struct.pack("<i", -3),
        struct.pack("<Q", 2**64 - 1), struct.pack("<f", 0.25)]
    assert got == want


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1))
def test_an_int_is_its_eight_little_endian_bytes(v):
    (got,) = table_bytes([v], [8])
    assert got == v.to_bytes(8, "little", signed=v < 0)
    # a narrower parameter (an int32 the driver copies 4 bytes of) reads the low bytes
    if -(1 << 31) <= v < 1 << 31:
        assert struct.unpack("<i", got[:4])[0] == v


def test_the_table_points_at_the_values_it_returns_and_they_stay_put():
    ctype = ctypes.c_int64(5)
    table, values = param_table([ctype, 6])
    assert values[0] is ctype  # ctypes values as they are: no copy
    assert table[0] == ctypes.addressof(ctype) and table[1] == ctypes.addressof(values[1])
    assert len(param_table([])[0]) == 1  # a kernel of no parameters: a table of one NULL


@pytest.mark.parametrize("bad, error", [(1 << 64, OverflowError), (-(1 << 63) - 1, OverflowError),
                                        ("7", TypeError), (np.zeros(2), TypeError),
                                        (object(), TypeError)])
def test_a_value_without_a_packing_is_refused(bad, error):
    with pytest.raises(error):
        c_value(bad)


def test_the_launch_is_the_drivers_unless_told(monkeypatch):
    monkeypatch.delenv("RING_LAUNCH", raising=False)
    assert launcher() == "driver"
    monkeypatch.setenv("RING_LAUNCH", "core")
    assert launcher() == "core" and launcher("driver") == "driver"
    monkeypatch.setenv("RING_LAUNCH", "graph")
    assert launcher() == "graph"
    monkeypatch.setenv("RING_LAUNCH", "fast")
    with pytest.raises(ValueError, match="'driver', 'core' or 'graph'"):
        launcher()


class FakeDriver:
    """The driver calls graph_of makes, recorded; each returns (CUDA_SUCCESS, value)."""

    class CUstreamCaptureMode:
        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = "thread-local"

    class CUresult:
        CUDA_SUCCESS = 0

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def call(*args):
            self.calls.append((name, *args))
            return (0, {"cuStreamCreate": 77, "cuStreamEndCapture": "graph",
                        "cuGraphInstantiate": "exec"}.get(name))
        return call


def test_a_graph_is_captured_on_a_stream_of_its_own_and_only_its_executable_kept(monkeypatch):
    import kernels.driver as drv_module
    fake = FakeDriver()
    monkeypatch.setattr(drv_module, "_DRV", fake)  # (ok() reads the result codes there)
    launched = []
    assert graph_of(fake, launched.append) == "exec"
    assert launched == [77]  # the launch on the capturing stream's handle
    assert [c[0] for c in fake.calls] == ["cuStreamCreate", "cuStreamBeginCapture",
                                          "cuStreamEndCapture", "cuGraphInstantiate",
                                          "cuGraphDestroy", "cuStreamDestroy"]
    assert fake.calls[1] == ("cuStreamBeginCapture", 77, "thread-local")
    assert fake.calls[4] == ("cuGraphDestroy", "graph")


def test_a_graphs_executable_is_destroyed_with_its_launch(monkeypatch):
    import kernels.driver as drv_module
    from kernels.bound_launch import BoundLaunch
    fake = FakeDriver()
    monkeypatch.setattr(drv_module, "_DRV", fake)
    bound = BoundLaunch.__new__(BoundLaunch)  # (as __init__ leaves it on a GPU, via="graph")
    bound._exec = "exec"
    del bound
    assert fake.calls == [("cuGraphExecDestroy", "exec")]
    other = BoundLaunch.__new__(BoundLaunch)  # a launch of another way: no graph to destroy
    del other
    assert fake.calls == [("cuGraphExecDestroy", "exec")]


def test_a_launch_that_fails_in_the_capture_ends_it_and_raises(monkeypatch):
    import kernels.driver as drv_module
    fake = FakeDriver()
    monkeypatch.setattr(drv_module, "_DRV", fake)

    def fails(handle):
        raise RuntimeError("CUDA driver call failed: CUDA_ERROR_INVALID_VALUE")
    with pytest.raises(RuntimeError, match="INVALID_VALUE"):
        graph_of(fake, fails)
    assert [c[0] for c in fake.calls] == ["cuStreamCreate", "cuStreamBeginCapture",
                                          "cuStreamEndCapture", "cuStreamDestroy"]


class Protocol:
    def __cuda_stream__(self):
        return (0, 0x1234)


class Numbaish:
    handle = ctypes.c_void_p(0x4567)


@pytest.mark.parametrize("stream, handle", [(None, 0), (0, 0), (2, 2), (0x99, 0x99),
                                            (Protocol(), 0x1234), (Numbaish(), 0x4567)])
def test_a_streams_handle(stream, handle):
    assert handle_of(stream) == handle


@needs_gpu
@pytest.mark.parametrize("via", ["driver", "core", "graph"])
def test_a_bound_launch_on_a_gpu_passes_every_kind_of_value(via):
    """Each launch of a kernel taking arrays and a scalar of every kind Numba packs
    differently (ctypes of each width, a Python bool), on its own stream and then on
    another stream's handle."""
    from numba import cuda

    from kernels.bound_launch import BoundLaunch

    @cuda.jit("void(float64[:], int64[:], float32, float64, int32, int64, boolean, uint8)")
    def echo(f, i, a, b, c, d, e, u):
        f[0], f[1] = a, b
        i[0], i[1], i[2], i[3] = c, d, 1 if e else 0, u

    f, i = cuda.device_array(2, np.float64), cuda.device_array(4, np.int64)
    s1, s2 = cuda.stream(), cuda.stream()
    args = (f, i, 2.5, -1e300, -(1 << 31), 1 << 40, True, 255)
    bound = BoundLaunch(echo, args, 1, 1, s1, via=via)
    for stream in (None, handle_of(s2)):
        f.copy_to_device(np.zeros(2)), i.copy_to_device(np.zeros(4, np.int64))
        cuda.synchronize()
        bound(stream)
        cuda.synchronize()
        assert f.copy_to_host().tolist() == [2.5, -1e300]
        assert i.copy_to_host().tolist() == [-(1 << 31), 1 << 40, 1, 255]
