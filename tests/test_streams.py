"""Which stream a call on the cuda device is ordered on (ring/cuda/streams.py): handles of
every library's stream objects, and the current stream by the arrays' library."""

import ctypes
import sys
import types

import numpy as np
import pytest
from numba import cuda

from ring.cuda import streams


class Protocol:  # cuda.core, CuPy >= 13, recent torch: (version, handle)
    def __cuda_stream__(self):
        return (0, 0x1234)


class ProtocolAttribute:  # the pair as an attribute, not a method: taken as it is
    __cuda_stream__ = (0, 0x5678)


class Torchish:
    cuda_stream = 0x2345


class Cupyish:
    ptr = 0x3456


class Numbaish:
    handle = ctypes.c_void_p(0x4567)


@pytest.mark.parametrize("stream,want", [(0, 0), (2, 2), (0x99, 0x99), (Protocol(), 0x1234),
                                         (ProtocolAttribute(), 0x5678),
                                         (Torchish(), 0x2345), (Cupyish(), 0x3456),
                                         (Numbaish(), 0x4567)])
def test_every_librarys_stream_gives_its_handle(stream, want):
    assert streams.handle(stream) == want


def test_the_null_numba_handle_is_the_default_stream():
    class Null:
        handle = ctypes.c_void_p(None)
    assert streams.handle(Null()) == 0


@pytest.mark.parametrize("bad", ["s", 1.5, None, True, object()])
def test_what_is_no_stream_is_a_type_error(bad):
    with pytest.raises(TypeError, match="stream: expected a CUDA stream"):
        streams.handle(bad)


def test_a_negative_handle_is_a_value_error():
    with pytest.raises(ValueError, match="stream: a handle is not negative"):
        streams.handle(-1)


def test_numba_arrays_are_ordered_on_numbas_default_stream(monkeypatch):
    from numba import config
    x = cuda.to_device(np.zeros(3))
    monkeypatch.setattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", False, raising=False)
    assert streams.of(None, x) == streams.LEGACY
    monkeypatch.setattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", True, raising=False)
    assert streams.of(None, x) == streams.PER_THREAD
    assert streams.of(Cupyish(), x) == 0x3456  # a given stream wins


def test_cupy_and_torch_arrays_are_ordered_on_their_librarys_current_stream(monkeypatch):
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda: Cupyish())
    torch = types.ModuleType("torch")
    seen = []
    torch.cuda = types.SimpleNamespace(current_stream=lambda d: seen.append(d) or Torchish())
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "torch", torch)
    CupyArray = type("ndarray", (), {"__module__": "cupy._core.core"})
    Tensor = type("Tensor", (), {"__module__": "torch", "device": "cuda:1"})
    assert streams.current(CupyArray()) == 0x3456
    assert streams.current(Tensor()) == 0x2345 and seen == ["cuda:1"]


def test_a_cuda_build_of_torch_is_asked_for_the_raw_handle(monkeypatch):
    """Where torch has _cuda_getCurrentRawStream (its CUDA builds), the handle comes from it
    for the tensor's device, with no Stream object made per call."""
    torch = types.ModuleType("torch")
    asked = []
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda i: asked.append(i) or 0x5678)
    torch.cuda = types.SimpleNamespace(current_stream=lambda d: pytest.fail("a Stream made"))
    monkeypatch.setitem(sys.modules, "torch", torch)
    Tensor = type("Tensor", (), {"__module__": "torch", "get_device": lambda self: 3})
    assert streams.current(Tensor()) == 0x5678 and asked == [3]
    OnTheHost = type("Tensor", (), {"__module__": "torch", "get_device": lambda self: -1})
    with pytest.raises(ValueError, match="a CPU tensor has no current CUDA stream"):
        streams.current(OnTheHost())
    assert asked == [3]


def test_a_stream_keeps_its_oldest_launch_not_known_to_have_ended():
    """Streams.mark: calls 3 and 4 left running on stream 7, call 5 on stream 9. Each
    stream keeps its oldest launch's firing time and call until the backend sees the stream
    finished: how long its kernels may have waited is measured from there (so a word one of
    them wrote past the timeout is read, not skipped as a launch that ended quickly), and an
    error found then names the calls from it on ("one of calls 3-5")."""
    s = streams.Streams()
    s.mark(7, 10.0, 3)
    s.mark(7, 11.5, 4)
    s.mark(9, 12.0, 5)
    assert s.since == {7: (10.0, 3), 9: (12.0, 5)}
    assert s.last_call == 5 and set(s.launched) == {7, 9}
    del s.since[7]  # (seen finished cleanly: the next launch there starts the count anew)
    s.mark(7, 13.0, 6)
    assert s.since[7] == (13.0, 6)
