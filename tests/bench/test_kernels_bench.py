"""Kernel microbenchmarks (pytest-benchmark), skipped without a GPU.

    make bench-kernels     # writes results/kernels-<gpu>.json

Each case: one kernel (or CuPy's equivalent, or a device-to-device copy, the roofline) at
one size from 4 KB to 1 GB per array. pytest-benchmark times launch + synchronise from the
host; extra_info adds the device time from CUDA events over back-to-back launches, the
GB/s it gives counting bytes read and written, and its fraction of the copy bandwidth
measured at the same size in the same session.
"""

import numpy as np
import pytest

from ..gpu import HAVE_GPU

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not HAVE_GPU, reason="microbenchmarks need a real GPU")]

SIZES = [4 << 10 << (2 * i) for i in range(10)]  # 4 KiB .. 1 GiB, x4
_copy_bw: dict[int, float] = {}


def _label(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift:
            return f"{n >> shift}{unit}"
    return str(n)


def _copy_gbps(nbytes):
    import cupy as cp
    from kernels.timing import device_ms
    if nbytes not in _copy_bw:
        a, b = cp.ones(nbytes, cp.uint8), cp.empty(nbytes, cp.uint8)
        ms = device_ms(lambda: b.data.copy_from_device_async(a.data, nbytes))
        _copy_bw[nbytes] = 2 * nbytes / ms / 1e6
    return _copy_bw[nbytes]


def _arrays(dtype, nbytes, count):
    import cupy as cp
    n = nbytes // np.dtype(dtype).itemsize
    rng = np.random.default_rng(0)
    base = cp.asarray(rng.standard_normal(min(n, 1 << 20)).astype(np.float32))
    out = []
    for i in range(count):
        a = cp.resize(base * (i + 1), n)
        # bfloat16 as its bits: the top half of each float32
        out.append((a.view(cp.uint32) >> 16).astype(cp.uint16) if dtype == np.uint16
                   else a.astype(dtype))
    return out


def _run(benchmark, name, nbytes, fn, moved_bytes):
    import cupy as cp
    from kernels.timing import device_ms
    sync = cp.cuda.Device().synchronize

    def once():
        fn()
        sync()
    benchmark.pedantic(once, rounds=30, warmup_rounds=3, iterations=1)
    ms = device_ms(fn)
    gbps = moved_bytes / ms / 1e6
    copy = _copy_gbps(nbytes)
    benchmark.extra_info.update({
        "kernel": name, "bytes_per_array": nbytes, "bytes_moved": moved_bytes,
        "device_ms": ms, "device_GBps": gbps, "copy_GBps_same_size": copy,
        "fraction_of_copy": gbps / copy,
        "wall_GBps_median": moved_bytes / benchmark.stats.stats.median / 1e9,
    })


@pytest.mark.parametrize("nbytes", SIZES, ids=_label)
def test_copy_roofline(benchmark, nbytes):
    import cupy as cp
    a, b = cp.ones(nbytes, cp.uint8), cp.empty(nbytes, cp.uint8)
    _run(benchmark, "cudaMemcpy D2D", nbytes,
         lambda: b.data.copy_from_device_async(a.data, nbytes), 2 * nbytes)


REDUCE = [("float32", np.float32), ("float16", np.float16), ("bfloat16", np.uint16)]


@pytest.mark.parametrize("nbytes", SIZES, ids=_label)
@pytest.mark.parametrize("name,storage", REDUCE, ids=[r[0] for r in REDUCE])
def test_reduce_into_sum(benchmark, name, storage, nbytes):
    from kernels.bound_launch import BoundLaunch
    from kernels.reduce import launch_args
    from ringtypes import Op
    a, b = _arrays(storage, nbytes, 2)
    k, g, t, args = launch_args(Op.SUM, a, a, b, dtype=name)
    _run(benchmark, f"reduce_into sum {name}", nbytes, BoundLaunch(k, args, g, t), 3 * nbytes)


@pytest.mark.parametrize("nbytes", SIZES, ids=_label)
def test_reduce_copy_two_outputs_f32(benchmark, nbytes):
    from kernels.bound_launch import BoundLaunch
    from kernels.reduce import launch_args
    from ringtypes import Op
    o, o2, a, b = _arrays(np.float32, nbytes, 4)
    k, g, t, args = launch_args(Op.SUM, o, a, b, out2=o2)
    _run(benchmark, "reduce_copy sum float32, two outputs", nbytes, BoundLaunch(k, args, g, t),
         4 * nbytes)


@pytest.mark.parametrize("nbytes", SIZES, ids=_label)
def test_cast_f32_to_bf16(benchmark, nbytes):
    import cupy as cp
    from kernels.casts import launch_args
    from kernels.bound_launch import BoundLaunch
    (x,) = _arrays(np.float32, nbytes, 1)
    out = cp.empty(x.size, cp.uint16)
    k, g, t, args = launch_args(out, x, dst="bfloat16")
    _run(benchmark, "cast float32->bfloat16", nbytes, BoundLaunch(k, args, g, t),
         nbytes + nbytes // 2)


@pytest.mark.parametrize("nbytes", SIZES, ids=_label)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cupy_add(benchmark, dtype, nbytes):
    import cupy as cp
    a, b = _arrays(np.dtype(dtype), nbytes, 2)
    _run(benchmark, f"cupy.add {dtype}", nbytes, lambda: cp.add(a, b, out=a), 3 * nbytes)


@pytest.mark.parametrize("nbytes", SIZES, ids=_label)
def test_reduce_copy_avg_bf16(benchmark, nbytes):
    from kernels.bound_launch import BoundLaunch
    from kernels.reduce import launch_args
    from ringtypes import Op
    o, a, b = _arrays(np.uint16, nbytes, 3)
    k, g, t, args = launch_args(Op.AVG, o, a, b, nranks=4, dtype="bfloat16")
    _run(benchmark, "reduce_copy avg bfloat16 (sum, then / 4)", nbytes,
         BoundLaunch(k, args, g, t), 3 * nbytes)


@pytest.mark.parametrize("nbytes", SIZES, ids=_label)
def test_pack_16_arrays(benchmark, nbytes):
    """16 arrays of nbytes/16 each into one buffer of nbytes: one launch."""
    import cupy as cp
    import kernels
    n = nbytes // 4
    parts = [a for a in cp.split(_arrays(np.float32, nbytes, 1)[0], 16)]
    parts = [cp.ascontiguousarray(p) for p in parts]
    buf = cp.empty(n, cp.float32)
    _run(benchmark, "pack 16 float32 arrays", nbytes, lambda: kernels.pack(buf, parts),
         2 * nbytes)


@pytest.mark.parametrize("nbytes", SIZES, ids=_label)
def test_pack_strided(benchmark, nbytes):
    """Every other column of a 2-D float32 array (half its bytes) into a buffer."""
    import cupy as cp
    from numba import cuda
    import kernels
    n = nbytes // 4
    rows = max(1, int((n // 2) ** 0.5))
    m = cuda.as_cuda_array(cp.ones((rows, 2 * max(1, n // 2 // rows)), cp.float32))
    view = m[:, ::2]
    buf = cuda.device_array(view.size, np.float32)
    _run(benchmark, "pack_strided float32 (every other column)", nbytes,
         lambda: kernels.pack_strided(buf, view), 2 * view.size * 4)
