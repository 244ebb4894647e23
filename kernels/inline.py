"""How a device function is inlined into the kernels that call it.

`@inline` is `cuda.jit(device=True, forceinline=True)`: the function is typed and lowered
once per signature and marked `alwaysinline` for NVVM (LLVM), as CUDA C++'s
`__forceinline__` would. `@inline_ir` is Numba's own inliner (`inline="always"`): the
function's Numba IR is copied into each caller and typed and lowered again there, which is
what lets type inference cross the call, and costs the compile its time.

Every device function was `@inline_ir` before (`inline=True`). NVVM now inlines the ring
kernel's own (ring/cuda/persistent.py), the clock and pause (spin.py), the 16-byte loads
and stores (vector.py) and the int8 wire's: compiling every kernel (tests/test_compile.py)
took 30% less time, and each kernel's PTX holds the same instructions, register counts and
spills as before (results/test-time.md, 2026-12-08). The rest keep Numba's inliner because,
compiled apart, they changed the PTX: the bit casts and bfloat16's shifts (dtypes.py,
casts.py; explore.py's variants' too, as the production ones) made the ring kernel's
bfloat16 loop 3% longer, with more 64-bit shifts and conversions; reduce.py's ops and the
one- and two-shot kernels' own functions moved a few instructions in and out of those
kernels' loops. Under the simulator, whose jit takes no
`forceinline` and inlines nothing, both are plain device functions.
"""

from __future__ import annotations

from numba import config, cuda


def inline(fn):
    """fn as a device function, inlined by NVVM where a kernel calls it."""
    if config.ENABLE_CUDASIM:
        return cuda.jit(device=True)(fn)
    return cuda.jit(device=True, forceinline=True)(fn)


def inline_ir(fn):
    """fn as a device function, inlined by Numba (typed in each caller)."""
    return cuda.jit(device=True, inline="always")(fn)
