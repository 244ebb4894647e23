"""Reduce-kernel variants, each checked against NumPy, then timed against the device-to-
device copy and CuPy in the same run (GPU only). How the production kernel was chosen.

    python -m kernels.explore [--mb 256]

GB/s counts bytes read and written: a copy moves 2N bytes, dst = dst + src moves 3N.
Times: CUDA events around 20 launches after warm-up, median of 5 such runs.
"""

from __future__ import annotations

import argparse
import ml_dtypes
import numpy as np
from numba import cuda, float32, types, uint16, uint32

from ringtypes import Op

from .dtypes import as_f16, as_f32, as_u32, f16_bits
from .bound_launch import BoundLaunch
from .inline import inline_ir
from .launch import grid
from .reduce import launch_args
from .timing import device_ms

f16 = types.float16


def v1_simple(dst, src, div):
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < dst.size:
        dst[i] = dst[i] + src[i]
        i += s


def v3_unroll8(dst, src, div):
    n, s = dst.size, cuda.gridsize(1)
    i = cuda.grid(1)
    while i + 7 * s < n:
        a0, a1, a2, a3 = dst[i], dst[i + s], dst[i + 2 * s], dst[i + 3 * s]
        a4, a5, a6, a7 = dst[i + 4 * s], dst[i + 5 * s], dst[i + 6 * s], dst[i + 7 * s]
        b0, b1, b2, b3 = src[i], src[i + s], src[i + 2 * s], src[i + 3 * s]
        b4, b5, b6, b7 = src[i + 4 * s], src[i + 5 * s], src[i + 6 * s], src[i + 7 * s]
        dst[i], dst[i + s], dst[i + 2 * s], dst[i + 3 * s] = a0 + b0, a1 + b1, a2 + b2, a3 + b3
        dst[i + 4 * s], dst[i + 5 * s] = a4 + b4, a5 + b5
        dst[i + 6 * s], dst[i + 7 * s] = a6 + b6, a7 + b7
        i += 8 * s
    while i < n:
        dst[i] = dst[i] + src[i]
        i += s


def v4_one_per_thread(dst, src, div):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = dst[i] + src[i]


def bf16_pairs(dst, src, div):
    """bfloat16 as uint32 pairs: one 4-byte load for two elements."""
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < dst.size:
        x, y = dst[i], src[i]
        lo = as_f32((x & uint32(0xFFFF)) << 16) + as_f32((y & uint32(0xFFFF)) << 16)
        hi = as_f32(x & uint32(0xFFFF0000)) + as_f32(y & uint32(0xFFFF0000))
        dst[i] = _pack_bf16(lo, hi)
        i += s


@inline_ir
def _pack_bf16(lo, hi):
    from_lo = _rne16(lo)
    from_hi = _rne16(hi)
    return uint32(from_lo) | (uint32(from_hi) << 16)


@inline_ir
def _rne16(v):
    tmp = cuda.local.array(1, float32)
    tmp[0] = v
    f = tmp.view(np.uint32)[0]
    if (f & uint32(0x7F800000)) == uint32(0x7F800000) and (f & uint32(0x007FFFFF)) != 0:
        return ((f >> 16) & uint32(0x8000)) | uint32(0x7FC0)
    return (f + uint32(0x7FFF) + ((f >> 16) & uint32(1))) >> 16


def f16_pairs(dst, src, div):
    """float16 as uint32 pairs: one 4-byte load for two elements, hardware conversions."""
    i, s = cuda.grid(1), cuda.gridsize(1)
    while i < dst.size:
        x, y = dst[i], src[i]
        lo = float32(as_f16(uint16(x & uint32(0xFFFF)))) + float32(as_f16(uint16(y & uint32(0xFFFF))))
        hi = float32(as_f16(uint16(x >> 16))) + float32(as_f16(uint16(y >> 16)))
        dst[i] = uint32(f16_bits(f16(lo))) | (uint32(f16_bits(f16(hi))) << 16)
        i += s


def f32_pairs(dst, src, div):
    """float32 as uint64 pairs: one 8-byte load for two elements."""
    i, s = cuda.grid(1), cuda.gridsize(1)
    lo = types.uint64(0xFFFFFFFF)
    while i < dst.size:
        x, y = dst[i], src[i]
        a = as_f32(uint32(x & lo)) + as_f32(uint32(y & lo))
        b = as_f32(uint32(x >> 32)) + as_f32(uint32(y >> 32))
        dst[i] = types.uint64(as_u32(a)) | (types.uint64(as_u32(b)) << 32)
        i += s


def _local_memory(dispatcher) -> bool:
    ptx = "".join(dispatcher.inspect_asm().values())
    return "ld.local" in ptx or "st.local" in ptx


def _copy_ms(nbytes: int) -> float:
    import cupy as cp
    src, dst = cp.ones(nbytes, cp.uint8), cp.empty(nbytes, cp.uint8)
    return device_ms(lambda: dst.data.copy_from_device_async(src.data, nbytes))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=256)
    args = ap.parse_args()
    import cupy as cp  # after the arguments: tests/test_gpu_session.py parses them without CuPy
    nbytes = args.mb << 20
    rows = []
    dev = cuda.get_current_device()
    print(f"# {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}, "
          f"{dev.MULTIPROCESSOR_COUNT} SMs, {args.mb} MiB per array")

    # roofline: device-to-device copy of the same number of bytes
    t_copy = _copy_ms(nbytes)
    copy_bw = 2 * nbytes / t_copy / 1e6
    rows.append(("cudaMemcpy D2D (roofline)", "-", t_copy, copy_bw))

    def bench(name, dtype, fn, moved_arrays=3):
        t = device_ms(fn)
        rows.append((name, dtype, t, moved_arrays * nbytes / t / 1e6))

    rng = np.random.default_rng(0)
    for dtype in ("float32", "float16", "bfloat16"):
        n = nbytes // (4 if dtype == "float32" else 2)
        host = (rng.standard_normal(1 << 20) * 4).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
        store = host.view(np.uint16) if dtype == "bfloat16" else host
        a = cp.asarray(np.resize(store, n))
        b = cp.asarray(np.resize(store[::-1].copy(), n))
        want = np.resize((host + host[::-1]), n)
        da, db = cuda.as_cuda_array(a), cuda.as_cuda_array(b)
        out = cp.empty_like(a)
        k, g, t, kargs = launch_args(Op.SUM, out, a, b, dtype=dtype)
        BoundLaunch(k, kargs, g, t)()
        cuda.synchronize()
        ok = out.get().view(want.dtype).tobytes() == want.tobytes()
        k, g, t, kargs = launch_args(Op.SUM, a, a, b, dtype=dtype)
        bench(f"reduce_into (production){'' if ok else ' WRONG'}", dtype, BoundLaunch(k, kargs, g, t))
        rows[-1] = rows[-1] + (f"local mem: {_local_memory(k)}",)
        if dtype == "float32":
            bench("cupy.add(a, b, out=a)", dtype, lambda: cp.add(a, b, out=a))
            k64 = cuda.jit(types.void(types.uint64[::1], types.uint64[::1], types.float64))(f32_pairs)
            a64, b64 = cuda.as_cuda_array(a.view(cp.uint64)), cuda.as_cuda_array(b.view(cp.uint64))
            g64 = grid(n // 2)
            bench(f"f32 pairs (uint64 loads), local mem: {_local_memory(k64)}", dtype,
                  lambda: k64[g64[0], g64[1]](a64, b64, 1.0))
            for name, fn, per in (("v1 grid-stride x1", v1_simple, 1), ("v3 unroll8", v3_unroll8, 8),
                                  ("v4 one per thread", v4_one_per_thread, None)):
                kk = cuda.jit(types.void(types.float32[::1], types.float32[::1], types.float64))(fn)
                g = ((n + 255) // 256, 256) if per is None else grid(n, per)
                bench(name, dtype, lambda kk=kk, g=g: kk[g[0], g[1]](da, db, 1.0))
            for bpsm in (4, 16, 32):
                g = min((n + 255) // 256, dev.MULTIPROCESSOR_COUNT * bpsm)
                bench(f"production, {bpsm} blocks/SM", dtype, lambda g=g: k[g, 256](da, da, db, 1.0))
        elif dtype == "float16":
            bench("cupy.add(a, b, out=a)", dtype, lambda: cp.add(a, b, out=a))
            kk = cuda.jit(types.void(types.uint32[::1], types.uint32[::1], types.float64))(f16_pairs)
            a32, b32 = cuda.as_cuda_array(a.view(cp.uint32)), cuda.as_cuda_array(b.view(cp.uint32))
            g = grid(n // 2)
            bench(f"f16 pairs (uint32 loads), local mem: {_local_memory(kk)}", dtype,
                  lambda: kk[g[0], g[1]](a32, b32, 1.0))
        else:
            kk = cuda.jit(types.void(types.uint32[::1], types.uint32[::1], types.float64))(bf16_pairs)
            a32, b32 = cuda.as_cuda_array(a.view(cp.uint32)), cuda.as_cuda_array(b.view(cp.uint32))
            g = grid(n // 2)
            bench(f"bf16 pairs (uint32 loads), local mem: {_local_memory(kk)}", dtype,
                  lambda: kk[g[0], g[1]](a32, b32, 1.0))
        a = b = out = None
        cp.get_default_memory_pool().free_all_blocks()

    print(f"{'variant':<52} {'dtype':>9} {'ms':>8} {'GB/s':>8} {'of copy':>8}")
    for r in rows:
        name, dtype, t, bw = r[:4]
        extra = f"  {r[4]}" if len(r) > 4 else ""
        print(f"{name:<52} {dtype:>9} {t:>8.3f} {bw:>8.0f} {bw / copy_bw:>8.1%}{extra}")


if __name__ == "__main__":
    main()
