"""Launch a compiled kernel with fixed arguments without Numba's per-call dispatch.

`kernel[grid, block, stream](*args)` types every argument, picks the overload and packs
the arguments on every call: tens of microseconds of Python per launch, which is longer
than the GPU needs to reduce a 1 MB chunk. A BoundLaunch does that work once for a fixed
(kernel, arguments, geometry, stream) and each call is a single cuda.core launch. The ring
executor binds one per (step, chunk) of a plan and replays them. kernels/README.md has the
measured costs. Under the simulator it falls back to the ordinary launch.
"""

from __future__ import annotations

from .launch import simulated


def core_stream(stream):
    """A cuda.core Stream for a Numba stream, a CuPy stream, or 0 (the default stream)."""
    if hasattr(stream, "__cuda_stream__"):
        return core_stream_of(int(stream.__cuda_stream__()[1]))
    handle = getattr(stream, "handle", stream)
    handle = getattr(handle, "value", handle)
    return core_stream_of(int(handle or 0))


def core_stream_of(handle: int):
    """A cuda.core Stream for a CUstream handle: the legacy (0) and per-thread (2) default
    streams as cuda.core's own objects for them, any other by from_handle."""
    from cuda.core import Stream

    if handle in (0, 2):
        try:
            from cuda.core._stream import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM
            return LEGACY_DEFAULT_STREAM if handle == 0 else PER_THREAD_DEFAULT_STREAM
        except ImportError:  # an older cuda.core: its from_handle takes them
            pass
    return Stream.from_handle(handle)


class BoundLaunch:
    def __init__(self, dispatcher, args, griddim, blockdim, stream=0, keep=None):
        """keep: on a GPU, what to hold alive in place of the arguments once they are
        packed (None: the arguments). A launch kept for later calls on the same memory
        (ring/cuda/kernel_path.py) keeps its own buffers, not the caller's arrays, whose
        addresses it was bound for and is looked up by."""
        self.dispatcher, self.args = dispatcher, tuple(args)
        self.griddim, self.blockdim, self.stream = griddim, blockdim, stream
        self._fast = None
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
        config = LaunchConfig(grid=grid, block=block, shmem_size=0)
        cukernel = kernel._codelibrary.get_cufunc().kernel
        self._fast = (launch, core_stream(stream), config, cukernel, tuple(packed))
        if keep is not None:
            self.args = tuple(keep)

    def __call__(self, stream=None) -> None:
        """Fire the launch: on its own stream, or on `stream` (a cuda.core Stream; the
        arguments do not depend on the stream they were packed for)."""
        if self._fast is None:
            self.dispatcher[self.griddim, self.blockdim, self.stream](*self.args)
            return
        launch, own, config, cukernel, packed = self._fast
        launch(own if stream is None else stream, config, cukernel, *packed)
