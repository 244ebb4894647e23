"""16-byte vector loads and stores: `load16(dst, d, src, i)` reads the 16 bytes at src[i]
into dst[d : d + L] (a local array: L of its elements make 16 bytes) with one 16-byte load,
`store16(dst, i, src, s)` writes src[s : s + L] (a local array) to the 16 bytes at dst[i]
with one 16-byte store. The lanes are the local array's type: the same as the global
array's to compute on them (L = lanes(storage) = 16 // itemsize), or uint32 to copy them
as four words whatever they hold (no lane split out and packed again: fewer registers).

A load of 4 bytes a thread keeps 4 bytes a thread in flight; NCCL's and vLLM's copy loops
keep 16 (and several of them). Numba has no vector type for an array's elements, and NVVM
does not merge neighbouring scalar loads (it cannot know their alignment: checked in the
PTX), so these are intrinsics: a pointer to src[i] cast to a vector of four 32-bit words and
loaded with align 16 (`ld.global.v4.u32` for every dtype; tools/compile_kernels.py checks),
the lanes shifted out of the words and bit cast. The local arrays stay in registers once
the caller's loops over them are unrolled (their trip counts are constants).

The address of src[i] (dst[i]) must be a multiple of 16: the caller decides, once per call,
from the arrays' addresses (`aligned`), or in the kernel (`aligned16(a, i)`: whether a[i]
starts a 16-byte vector). Under Numba's simulator they are NumPy views that
check that alignment on the real address, so a kernel that would misalign a vector fails
its tests there.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import cuda, types

from .inline import inline
from .launch import simulated

BYTES = 16


def lanes(storage) -> int:
    """Elements of `storage` (a NumPy dtype) in one 16-byte vector."""
    return BYTES // np.dtype(storage).itemsize


def aligned(*addresses: int) -> bool:
    """Whether every address is a multiple of 16 (the start of each array a kernel will
    read or write with vectors, at the element the vectors start from)."""
    return all(a % BYTES == 0 for a in addresses)


# A GPU's vectors move as four 32-bit words whatever the element (a vector of 8 x 16 or
# 16 x 8 bits NVVM splits into loads of 8 or 4 bytes, even bit cast from one of words), each
# lane shifted out of its word (or two words: 8-byte lanes) and bit cast. The LLVM IR of
# that arithmetic is built here, outside the GPU's branch below, so that it runs on the
# host too: tests/test_vector_lanes.py compiles it for this CPU and checks every lane width
# against NumPy's views (the simulator's load16 and store16 are NumPy views themselves).
I32 = ir.IntType(32)
WORDS = ir.VectorType(I32, 4)


def _unpack(builder, words, elem, bits, u):
    """Lane u (of `bits` bits, LLVM type elem) of the four words."""
    whole = ir.IntType(bits)
    if bits == 64:
        lo, hi = (builder.zext(builder.extract_element(words, ir.Constant(I32, 2 * u + h)),
                               whole) for h in (0, 1))
        v = builder.or_(lo, builder.shl(hi, ir.Constant(whole, 32)))
    else:
        per = 32 // bits
        w = builder.extract_element(words, ir.Constant(I32, u // per))
        v = builder.trunc(builder.lshr(w, ir.Constant(I32, (u % per) * bits)), whole) \
            if bits < 32 else w
    return v if elem == whole else builder.bitcast(v, elem)


def _pack(builder, lanes, elem, bits):
    """The four words of the lanes (LLVM values of type elem, `bits` bits each)."""
    whole = ir.IntType(bits)
    ints = [v if elem == whole else builder.bitcast(v, whole) for v in lanes]
    words = ir.Constant(WORDS, ir.Undefined)
    if bits == 64:
        for u, v in enumerate(ints):
            for h in (0, 1):
                part = builder.trunc(builder.lshr(v, ir.Constant(whole, 32 * h)), I32)
                words = builder.insert_element(words, part, ir.Constant(I32, 2 * u + h))
        return words
    per = 32 // bits
    for wi in range(4):
        w = None
        for j in range(per):
            v = ints[wi * per + j]
            v = builder.shl(builder.zext(v, I32), ir.Constant(I32, j * bits)) \
                if bits < 32 else v
            w = v if w is None else builder.or_(w, v)
        words = builder.insert_element(words, w, ir.Constant(I32, wi))
    return words


def _multiple_of_16(builder, at):
    """Whether the 64-bit integer `at` (an address) is a multiple of 16, as an LLVM i1."""
    low = builder.and_(at, ir.Constant(ir.IntType(64), BYTES - 1))
    return builder.icmp_unsigned("==", low, ir.Constant(ir.IntType(64), 0))


if simulated():
    def _numpy(a):
        """The NumPy array under the simulator's wrappers of one."""
        a = getattr(a, "_item", a)
        return getattr(a, "_ary", a)

    def _at(a, i) -> int:
        """The address of a[i]."""
        a = _numpy(a)
        return a.__array_interface__["data"][0] + i * a.dtype.itemsize

    def _bytes(a, i):
        """The 16 bytes at a[i], as a NumPy view, checked aligned."""
        at, a = _at(a, i), _numpy(a)
        if at % BYTES:
            raise AssertionError(f"a 16-byte vector at address {at:#x} (element {i}): "
                                 "not 16-byte aligned")
        return a[i:i + BYTES // a.dtype.itemsize].view(np.uint8)

    @cuda.jit(device=True)
    def aligned16(a, i):
        return _at(a, i) % BYTES == 0

    @cuda.jit(device=True)
    def load16(dst, d, src, i):
        dst[d:d + BYTES // dst.dtype.itemsize] = _bytes(src, i).view(dst.dtype)

    @cuda.jit(device=True)
    def store16(dst, i, src, s):
        _bytes(dst, i)[:] = src[s:s + BYTES // src.dtype.itemsize].view(np.uint8)
else:
    from numba.cuda import cgutils
    from numba.cuda.extending import intrinsic

    def _pointer(context, builder, aryty, ary, idx, idxty):
        arr = context.make_array(aryty)(context, builder, ary)
        i = context.cast(builder, idx, idxty, types.intp)
        return cgutils.get_item_pointer(context, builder, aryty, arr, [i], wraparound=False)

    def _lane(context, builder, aryty, ary, start, startty, u):
        """The address of ary[start + u]."""
        at = builder.add(context.cast(builder, start, startty, types.intp),
                         ir.Constant(ir.IntType(64), u))
        return _pointer(context, builder, aryty, ary, at, types.intp)

    @intrinsic
    def _load16(typingctx, dst, d, src, i):
        bits = dst.dtype.bitwidth  # the lanes: the local array's elements
        n = BYTES * 8 // bits

        def codegen(context, builder, sig, args):
            elem = context.get_data_type(sig.args[0].dtype)
            at = _pointer(context, builder, sig.args[2], args[2], args[3], sig.args[3])
            words = builder.load(builder.bitcast(at, WORDS.as_pointer()), align=BYTES)
            for u in range(n):
                builder.store(_unpack(builder, words, elem, bits, u),
                              _lane(context, builder, sig.args[0], args[0], args[1],
                                    sig.args[1], u))
            return context.get_dummy_value()
        return types.void(dst, d, src, i), codegen

    @intrinsic
    def _store16(typingctx, dst, i, src, s):
        bits = src.dtype.bitwidth  # the lanes: the local array's elements
        n = BYTES * 8 // bits

        def codegen(context, builder, sig, args):
            elem = context.get_data_type(sig.args[2].dtype)
            lanes = [builder.load(_lane(context, builder, sig.args[2], args[2], args[3],
                                        sig.args[3], u)) for u in range(n)]
            at = _pointer(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            builder.store(_pack(builder, lanes, elem, bits),
                          builder.bitcast(at, WORDS.as_pointer()), align=BYTES)
            return context.get_dummy_value()
        return types.void(dst, i, src, s), codegen

    @intrinsic
    def _aligned16(typingctx, a, i):
        def codegen(context, builder, sig, args):
            at = builder.ptrtoint(_pointer(context, builder, sig.args[0], args[0], args[1],
                                           sig.args[1]), ir.IntType(64))
            return _multiple_of_16(builder, at)
        return types.boolean(a, i), codegen

    @inline
    def aligned16(a, i):
        return _aligned16(a, i)

    @inline
    def load16(dst, d, src, i):
        _load16(dst, d, src, i)

    @inline
    def store16(dst, i, src, s):
        _store16(dst, i, src, s)
