"""Launch a compiled kernel with fixed arguments without Numba's per-call dispatch.

`kernel[grid, block, stream](*args)` types every argument, picks the overload and packs
the arguments on every call: tens of microseconds of Python per launch, which is longer
than the GPU needs to reduce a 1 MB chunk. A BoundLaunch does that work once for a fixed
(kernel, arguments, geometry, stream): Numba's own packing of the arguments into the
values the kernel takes, each value then written once into memory of its own and a table
of pointers to them built, as the driver's cuLaunchKernel reads its kernelParams. Each call
is then that one driver call (cuda.bindings), whatever the kernel's parameter count: the
kernel path's kernels take 60-90 values, which cuda.core's launch converts anew on every
call. RING_LAUNCH=core launches through cuda.core instead (the arguments packed once,
converted per call); RING_LAUNCH=graph captures that one driver launch once as a CUDA graph
of one kernel node and fires it with cuGraphLaunch (a whole graph launched for less host
time than one cuLaunchKernel on an H100: kernels/README.md; to be measured as a kept call's
launch before it is anything's default, and not for launches made inside a stream capture,
such as ring.Group.capture's, where a graph launch may not be captured). kernels/README.md
has the measured costs. Under the simulator it falls back to the ordinary launch.
"""

from __future__ import annotations

import ctypes
import os

from .driver import cu_stream, driver, handle_of, ok
from .launch import simulated


_CORE: dict[int, object] = {}  # handle -> cuda.core Stream (RING_LAUNCH=core)


def core_stream_of(handle: int):
    """A cuda.core Stream for a CUstream handle, made once per handle: the legacy (0) and
    per-thread (2) default streams as cuda.core's own objects for them, any other by
    from_handle."""
    s = _CORE.get(handle)
    if s is not None:
        return s
    from cuda.core import Stream

    if handle in (0, 2):
        try:
            from cuda.core._stream import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM
            s = LEGACY_DEFAULT_STREAM if handle == 0 else PER_THREAD_DEFAULT_STREAM
        except ImportError:  # an older cuda.core: its from_handle takes them
            pass
    s = _CORE[handle] = s or Stream.from_handle(handle)
    return s


def c_value(v):
    """One of Numba's packed kernel values as a ctypes object in memory of its own, as
    cuda.core's launch converts it: ctypes objects as they are; Python ints (Numba's array
    sizes, shapes, strides, addresses, passed as intptr_t) as 8-byte integers, bools as C's;
    floats as doubles; NumPy scalars as their type. The driver copies as many bytes as the
    kernel's parameter has from the start (x86-64 and aarch64 are little-endian, so a
    narrower parameter reads the low bytes). TypeError for anything else."""
    if isinstance(v, ctypes._SimpleCData):
        return v
    if isinstance(v, bool):
        return ctypes.c_bool(v)
    if isinstance(v, int):
        if not -(1 << 63) <= v < 1 << 64:
            raise OverflowError(f"a kernel value of {v} does not fit in 8 bytes")
        return ctypes.c_int64(v) if v < 1 << 63 else ctypes.c_uint64(v)
    if isinstance(v, float):
        return ctypes.c_double(v)
    dtype = getattr(v, "dtype", None)
    if dtype is not None and getattr(v, "ndim", None) == 0:
        import numpy as np
        return np.ctypeslib.as_ctypes_type(dtype)(v.item())
    raise TypeError(f"a kernel value of type {type(v).__name__} has no packing here")


def param_table(packed) -> tuple[object, list]:
    """(the kernelParams table: an array of pointers, one to each value; the values, which
    must outlive it) for Numba's packed values (c_value)."""
    values = [c_value(v) for v in packed]
    table = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.addressof(v) for v in values])
    return table, values


VIAS = ("driver", "core", "graph")


def launcher(via: str | None = None) -> str:
    """Which launch a BoundLaunch makes: via, else RING_LAUNCH, else "driver"."""
    via = via or os.environ.get("RING_LAUNCH") or "driver"
    if via not in VIAS:
        raise ValueError(f"RING_LAUNCH / via: 'driver', 'core' or 'graph', got {via!r}")
    return via


def graph_of(drv, launch):
    """The executable graph of the one kernel launch that launch(stream handle) makes,
    captured on a stream of its own (the legacy stream cannot capture; the launch's values
    are copied into the kernel node then; the graph itself is let go once instantiated):
    cuGraphLaunch(executable, stream) fires it on any stream, each launch ordered after
    that executable's earlier ones."""
    s = ok(drv.cuStreamCreate(1))  # CU_STREAM_NON_BLOCKING
    try:
        ok(drv.cuStreamBeginCapture(s, drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
        try:
            launch(int(s))
        except BaseException:
            drv.cuStreamEndCapture(s)  # (the capture ended, whatever it holds dropped)
            raise
        graph = ok(drv.cuStreamEndCapture(s))
        try:
            return ok(drv.cuGraphInstantiate(graph, 0))
        finally:
            ok(drv.cuGraphDestroy(graph))
    finally:
        ok(drv.cuStreamDestroy(s))


class BoundLaunch:
    def __init__(self, dispatcher, args, griddim, blockdim, stream=0, keep=None,
                 via: str | None = None):
        """keep: on a GPU, what to hold alive in place of the arguments once they are
        packed (None: the arguments). A launch kept for later calls on the same memory
        (ring/cuda/kernel_path.py) keeps its own buffers, not the caller's arrays, whose
        addresses it was bound for and is looked up by. via: "driver" (cuLaunchKernel on
        the table of values), "core" (cuda.core's launch) or "graph" (that driver launch
        as a graph of one node, cuGraphLaunch); None: launcher()'s."""
        self.dispatcher, self.args = dispatcher, tuple(args)
        self.griddim, self.blockdim, self.stream = griddim, blockdim, stream
        self._fast = self._raw = None  # cuda.core's launch / the driver's (on a GPU)
        self.via = launcher(via)
        if simulated():
            return
        from cuda.core import LaunchConfig, launch

        if len(dispatcher.overloads) != 1:
            raise TypeError("BoundLaunch needs a kernel compiled for exactly one signature")
        kernel = next(iter(dispatcher.overloads.values()))
        packed, retr = [], []
        for ty, val in zip(kernel.argument_types, self.args):
            kernel._prepare_args(ty, val, stream, retr, packed)
        if retr:
            raise TypeError("BoundLaunch needs device arrays (no host-array write-back)")
        grid = griddim if isinstance(griddim, tuple) else (griddim,)
        block = blockdim if isinstance(blockdim, tuple) else (blockdim,)
        grid, block = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
        cufunc = kernel._codelibrary.get_cufunc()
        self._own = handle_of(stream)
        if self.via in ("driver", "graph"):
            drv = driver()
            table, self._values = param_table(packed)
            # the kernel (a CUkernel of the library Numba loaded) as cuLaunchKernel takes
            # it: as a CUfunction of the same handle
            f = cufunc.handle
            f = f if isinstance(f, drv.CUfunction) else drv.CUfunction(int(f))
            # (function, the arguments before the stream, after it, success)
            self._raw = (drv.cuLaunchKernel, (f, *grid, *block, 0),
                         (ctypes.addressof(table), 0), drv.CUresult.CUDA_SUCCESS)
            self._table = table
            if self.via == "graph":  # (destroyed with the BoundLaunch: __del__)
                self._exec = graph_of(drv, self)  # (self: the driver's launch yet)
                self._raw = (drv.cuGraphLaunch, (self._exec,), (), drv.CUresult.CUDA_SUCCESS)
        else:
            config = LaunchConfig(grid=grid, block=block, shmem_size=0)
            self._fast = (launch, config, cufunc.kernel, tuple(packed))
        if keep is not None:
            self.args = tuple(keep)

    def __call__(self, stream: int | None = None) -> None:
        """Fire the launch: on its own stream, or on the stream of handle `stream` (an int;
        the arguments do not depend on the stream they were packed for)."""
        raw = self._raw
        if raw is not None:
            fn, head, tail, success = raw
            err = fn(*head, cu_stream(self._own if stream is None else stream), *tail)[0]
            if err != success:
                ok((err,))
            return
        if self._fast is None:
            self.dispatcher[self.griddim, self.blockdim, self.stream](*self.args)
            return
        launch, config, cukernel, packed = self._fast
        launch(core_stream_of(self._own if stream is None else stream), config, cukernel,
               *packed)

    def __del__(self) -> None:
        """A graph's executable is destroyed with the launch: the driver frees one still
        running when it ends (cuGraphExecDestroy). Nothing to do at the interpreter's exit,
        when the driver may be gone already."""
        exe, self._exec = getattr(self, "_exec", None), None
        if exe is not None:
            try:
                driver().cuGraphExecDestroy(exe)
            except Exception:  # noqa: BLE001 - (the driver shut down first)
                pass
