"""Which CUDA stream a call on the cuda device is ordered on: the caller's, as NCCL's and
torch.distributed's collectives are.

A call is ordered after the work already on that stream and the work put on it later is
ordered after the call. Without a `stream=` argument it is the current stream of the
arrays' library: torch's `torch.cuda.current_stream()` for tensors, CuPy's
`cupy.cuda.get_current_stream()` for CuPy arrays, and for Numba's device arrays (which
have no current stream) Numba's default stream. `stream=` takes any stream object that
says its handle (the `__cuda_stream__` protocol of cuda.core, CuPy and recent torch;
torch's `.cuda_stream`; CuPy's `.ptr`; Numba's `.handle`) or the handle as an int.

A stream is known by its handle (an int; 0: the legacy default stream, 2 the per-thread
one; a launch takes the handle, kernels/bound_launch.py). `Streams` keeps, per handle, one
event, re-recorded after every launch there: whether the work on it has finished.
Under Numba's simulator every launch has run by the time it returns: handles are kept for
the bookkeeping only.
"""

from __future__ import annotations

from numba import config

from kernels.driver import cu_stream, driver, event, ok, simulated

LEGACY, PER_THREAD = 0, 2  # CU_STREAM_LEGACY, CU_STREAM_PER_THREAD


def handle(stream) -> int:
    """The CUstream handle of a stream object or int (TypeError: not a stream)."""
    if isinstance(stream, bool):
        raise TypeError(f"stream: expected a CUDA stream or its handle, got {stream!r}")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"stream: a handle is not negative, got {stream}")
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        version, h = protocol() if callable(protocol) else protocol
        return int(h)
    for attr in ("cuda_stream", "ptr", "handle"):  # torch, CuPy, Numba
        h = getattr(stream, attr, None)
        if h is not None:
            h = getattr(h, "value", h)  # Numba's handle is a ctypes pointer
            return int(h or 0)
    raise TypeError(f"stream: expected a CUDA stream (torch, CuPy, Numba, cuda.core) or its "
                    f"handle, got {type(stream).__name__}")


_CURRENT: dict = {}  # array class -> how to read its library's current stream


def current(x) -> int:
    """The handle of the current stream of x's array library (see the module's docstring);
    the library looked up once per array class, not imported per call."""
    read = _CURRENT.get(type(x))
    if read is None:
        read = _CURRENT[type(x)] = _reader(type(x))
    return read(x)


def _reader(cls):
    lib = cls.__module__.split(".", 1)[0]
    if lib == "torch":
        import torch
        # CUDA builds of torch: the current stream's handle as an int, without the Stream
        # object current_stream() makes on every call (1-2 us; Inductor's get_raw_stream)
        raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
        if raw is not None:
            def read(x):
                device = x.get_device()
                if device < 0:  # (asked of device -1, torch would answer the current one's)
                    raise ValueError("stream: a CPU tensor has no current CUDA stream")
                return raw(device)
            return read
        stream_of = torch.cuda.current_stream
        return lambda x: int(stream_of(x.device).cuda_stream)
    if lib == "cupy":
        import cupy
        get = cupy.cuda.get_current_stream
        return lambda x: int(get().ptr)
    return lambda x: numba_default()


def numba_default() -> int:
    """Numba's default stream: the per-thread one where Numba is configured for it."""
    return PER_THREAD if getattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", False) else LEGACY


def of(stream, x) -> int:
    """The handle a call with these arguments is ordered on."""
    return current(x) if stream is None else handle(stream)


class Streams:
    """Per stream handle: the event recorded after the latest launch there (`launched`),
    with the time of the oldest launch there not yet known to have ended cleanly
    (`since`)."""

    def __init__(self):
        self.launched: dict[int, object] = {}  # handle -> event after the latest launch
        self.since: dict[int, tuple[float, int]] = {}  # handle -> (monotonic time, call)
        self.last_call = 0

    def mark(self, h: int, fired: float, call: int = 0) -> None:
        """The launch of call `call`, fired at `fired` on stream h: record h's event
        after it."""
        self.latest(h)
        self.since.setdefault(h, (fired, call))
        self.last_call = call

    def after_latest(self, h: int, prev: int) -> None:
        """Order stream h after the latest launch on stream prev (its `launched` event):
        the kernel path's launches read state their earlier launches left (the ring's
        counters, the call board's count), so a call on another stream than the last must
        not overlap it, as NCCL orders a communicator's calls whatever their streams."""
        ev = self.launched.get(prev)
        if ev is not None and not simulated():
            ok(driver().cuStreamWaitEvent(cu_stream(h), ev.handle, 0))

    def latest(self, h: int) -> None:
        """Record h's `launched` event after the latest launch there (mark()'s, and a Work's,
        which mark() does not note: its own Pending waits for it)."""
        ev = self.launched.get(h)
        if ev is None:
            ev = self.launched[h] = event()
        self.record_on(ev, h)

    @staticmethod
    def record_on(ev, h: int) -> None:
        """Record event ev on stream h."""
        if not simulated():
            ok(driver().cuEventRecord(ev.handle, cu_stream(h)))
