"""Kernels against NumPy (and ml_dtypes for bfloat16), under the simulator without a GPU.

Sizes stay tiny: the simulator runs every GPU thread as a Python thread.
"""

import os
import warnings

import ml_dtypes
import numba
import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import bits
import ringtypes
from ringtypes import Op

from .gpu import SIMULATED, dev, host, needs_gpu

BF16 = ml_dtypes.bfloat16
DTYPES = [d.name for d in ringtypes.DTYPES if d in ringtypes.REDUCIBLE]
UFUNC = {Op.SUM: np.add, Op.AVG: np.add, Op.PROD: np.multiply, Op.MIN: np.minimum,
         Op.MAX: np.maximum}
# 0, 1, 2, odd, and past one pass of the simulator's grid (2 blocks x 8 threads)
LENGTHS = [0, 1, 2, 37, 300] if SIMULATED else [0, 1, 2, 37, 300, 1 << 20 | 7]


def host_dtype(name):
    return np.dtype(BF16) if name == "bfloat16" else np.dtype(name)


def storage(a):
    return a.view(np.uint16) if a.dtype in (BF16, np.float16) else a


def inputs(name, n, seed):
    """Floats of mixed magnitude; 8- and 16-bit integers over their whole range (sums and
    products wrap); wider integers small enough that some products do not."""
    rng = np.random.default_rng([seed, n])
    dt = host_dtype(name)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        wide = (0 if dt.kind == "u" else -1000, 2000)
        lo, hi = (info.min, info.max + 1) if dt.itemsize <= 2 else wide
        return rng.integers(lo, hi, n).astype(dt)
    return (rng.standard_normal(n) * 4).astype(dt)


def expected(op, a, b, nranks):
    with np.errstate(over="ignore", invalid="ignore"):
        r = UFUNC[op](a, b)
        if op is Op.AVG:
            r = np.divide(r, nranks).astype(a.dtype)
    return r


CASES = [(op, d) for d in DTYPES for op in Op
         if not (op is Op.AVG and host_dtype(d) not in ringtypes.FLOATING)]


@pytest.mark.parametrize("op,name", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_reduce_copy_matches_numpy_bitwise(op, name):
    for n in LENGTHS:
        a, b = inputs(name, n, 1), inputs(name, n, 2)
        want = expected(op, a, b, 3)
        out, out2 = dev(storage(np.zeros(n, a.dtype))), dev(storage(np.zeros(n, a.dtype)))
        kernels.reduce_copy(out, dev(storage(a)), dev(storage(b)), op, nranks=3, dtype=name)
        assert host(out).tobytes() == storage(want).tobytes(), (op, name, n)
        kernels.reduce_copy(out, dev(storage(a)), dev(storage(b)), op, out2=out2, nranks=3,
                            dtype=name)
        assert host(out).tobytes() == host(out2).tobytes() == storage(want).tobytes()
        d = dev(storage(a))
        kernels.reduce_into(d, dev(storage(b)), op, nranks=3, dtype=name)
        assert host(d).tobytes() == storage(want).tobytes()
        if n > 2:  # unaligned views (16-bit types fall back from paired loads)
            d = dev(storage(np.concatenate([a[:1], a])))
            kernels.reduce_into(d[1:], dev(storage(b)), op, nranks=3, dtype=name)
            assert host(d)[1:].tobytes() == storage(want).tobytes()


@pytest.mark.filterwarnings("ignore:.*overflow encountered")  # the simulator's integers wrap
@pytest.mark.parametrize("op,name", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_fold_reduces_k_inputs_left_to_right_in_one_launch(op, name):
    """Bit for bit K-1 two-input steps (avg: sums, the last one dividing by K), each
    partial result rounded to the dtype; in place over the first part too."""
    for k, n in ((2, 37), (3, 70), (4, 1), (4, 37), (3, 0)):
        parts = [inputs(name, n, 10 + j) for j in range(k)]
        want = parts[0]
        for j in range(1, k):
            step = Op.SUM if op is Op.AVG and j < k - 1 else op
            want = expected(step, want, parts[j], k)
        devs = [dev(storage(p)) for p in parts]
        out = dev(storage(np.zeros(n, parts[0].dtype)))
        kernels.fold(out, devs, op, dtype=name)
        assert host(out).tobytes() == storage(want).tobytes(), (op, name, k, n)
        kernels.fold(devs[0], devs, op, dtype=name)
        assert host(devs[0]).tobytes() == storage(want).tobytes(), (op, name, k, n)
    with pytest.raises(ValueError, match="at least two"):
        kernels.fold(out, devs[:1], op, dtype=name)


@pytest.mark.parametrize("name", ["float32", "bfloat16"])
def test_a_folds_avg_divides_by_nranks_where_it_is_given(name):
    """fold(..., nranks=N): avg's last step divides by N, not by the number of parts (a
    fold of some of the ranks' parts, for an average over all of them)."""
    parts = [inputs(name, 37, 20 + j) for j in range(3)]
    want = expected(Op.AVG, expected(Op.SUM, parts[0], parts[1], 5), parts[2], 5)
    out = dev(storage(np.zeros(37, parts[0].dtype)))
    kernels.fold(out, [dev(storage(p)) for p in parts], Op.AVG, nranks=5, dtype=name)
    assert host(out).tobytes() == storage(want).tobytes()


def test_arrays_of_different_lengths_are_refused():
    """reduce_copy and fold take arrays of one length (a longer input is not read in part)."""
    out, a, b = (dev(np.ones(n, np.float32)) for n in (5, 5, 7))
    with pytest.raises(ValueError, match="reduce_copy: arrays differ in length"):
        kernels.reduce_copy(out, a, b)
    with pytest.raises(ValueError, match="reduce_copy: arrays differ in length"):
        kernels.reduce_copy(out, a, a, out2=b)
    with pytest.raises(ValueError, match="fold: arrays differ in length"):
        kernels.fold(out, [a, b])


def test_arrays_of_another_dtype_are_refused_and_16_bit_floats_may_come_as_bits():
    """reduce_copy and fold take arrays of the call's dtype or of its storage (float16 as
    uint16 bits): an int32 input to a float32 sum is refused by name, not read as float32
    bits (a silently wrong sum, the GPU's and the simulator's alike)."""
    out, b = dev(np.zeros(4, np.float32)), dev(np.ones(4, np.float32))
    ints = dev(np.arange(4, dtype=np.int32))
    with pytest.raises(TypeError, match=r"reduce_copy: an array of int32 in a call on float32 "
                                        r"\(it takes float32\)"):
        kernels.reduce_copy(out, ints, b)
    with pytest.raises(TypeError, match="fold: an array of int32 in a call on float32"):
        kernels.fold(out, [b, ints])
    with pytest.raises(TypeError, match=r"an array of int16 in a call on float16 \(it takes "
                                        r"float16, or its bits as uint16\)"):
        kernels.reduce_copy(dev(np.zeros(4, np.float16)), dev(np.ones(4, np.int16)),
                            dev(np.ones(4, np.float16)))
    h = dev(np.full(4, 1.5, np.float16))
    bits = dev(np.full(4, 2.0, np.float16).view(np.uint16))
    o = dev(np.zeros(4, np.float16))
    kernels.reduce_copy(o, h, bits)
    assert (host(o) == 3.5).all()
    assert (host(out) == 0).all()


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_nan_and_inf(name):
    t = host_dtype(name)
    a = np.array([np.nan, 1.0, np.nan, np.inf, -np.inf, 2.0, -0.0], t)
    b = np.array([1.0, np.nan, np.nan, -np.inf, 5.0, 2.0, 0.0], t)
    for op in (Op.MIN, Op.MAX):
        out = dev(storage(np.zeros_like(a)))
        kernels.reduce_copy(out, dev(storage(a)), dev(storage(b)), op, dtype=name)
        got = host(out).view(t)
        # NaN wins, as in np.minimum / np.maximum; otherwise an input element exactly, the
        # first operand on a tie (-0.0 against 0.0 keeps a's zero: NumPy's choice there
        # differs between its scalar and array loops, so it cannot be the reference)
        f64 = got.astype(np.float64)
        assert np.isnan(f64[:3]).all()
        af, bf = a.astype(np.float64)[3:], b.astype(np.float64)[3:]
        keep_a = af <= bf if op is Op.MIN else af >= bf
        want = np.where(keep_a, a[3:].view(storage(a).dtype), b[3:].view(storage(b).dtype))
        assert got[3:].view(want.dtype).tolist() == want.tolist(), (op, got[3:], a[3:], b[3:])
        assert np.signbit(f64[-1])  # -0.0 (a) tied with 0.0 (b): both ops keep a's zero
    out = dev(storage(np.zeros_like(a)))
    kernels.reduce_copy(out, dev(storage(a)), dev(storage(b)), Op.SUM, dtype=name)
    got = host(out).view(t).astype(np.float64)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, (a.astype(np.float64) + b.astype(np.float64)).astype(t).astype(np.float64))


def test_integer_sums_wrap_like_numpy():
    a = np.array([250, 255, 7], np.uint8)
    b = np.array([10, 1, 255], np.uint8)
    out = dev(np.zeros(3, np.uint8))
    kernels.reduce_copy(out, dev(a), dev(b), Op.SUM)
    assert host(out).tolist() == (a + b).tolist() == [4, 0, 6]
    big = np.array([2**31 - 1], np.int32)
    out = dev(np.zeros(1, np.int32))
    kernels.reduce_copy(out, dev(big), dev(big), Op.PROD)
    assert host(out)[0] == (big * big)[0]


def test_avg_on_integers_is_refused():
    with pytest.raises(TypeError, match="avg"):
        kernels.kernel_for(Op.AVG, "int32", False)


# ---- casts ------------------------------------------------------------------------------

_to_f16 = numba.njit(bits.f32_to_f16)
_to_bf16 = numba.njit(bits.f32_to_bf16)
_from_f16 = numba.njit(bits.f16_to_f32)


@numba.njit
def _narrow_all(src, to_bf16):
    out = np.empty(src.size, np.uint16)
    for i in range(src.size):
        out[i] = _to_bf16(src[i]) if to_bf16 else _to_f16(src[i])
    return out


def _float32_patterns(step):
    """Every exponent that matters (zero/subnormal, the half subnormal range and its edges,
    around 1, half overflow, inf/NaN) with mantissas spread over the range, plus every
    pattern that sits on or next to a tie of either 16-bit format."""
    exps = [0, 1, 101, 102, 103, 110, 112, 113, 114, 126, 127, 128, 141, 142, 143, 254, 255]
    mant = np.arange(0, 1 << 23, step, dtype=np.uint32)
    ties = np.array([0x1000, 0x0FFF, 0x1001, 0x3000, 0x2FFF, 0x3001, 0x8000, 0x7FFF, 0x8001,
                     0x18000, 0x17FFF, 0x18001, 1, 0x7FFFFF, 0x400000], np.uint32)
    mant = np.unique(np.concatenate([mant, ties, (mant | 0x1000) & 0x7FFFFF]))
    pats = [(np.uint32(s << 31) | np.uint32(e << 23) | mant) for s in (0, 1) for e in exps]
    return np.concatenate(pats)


def test_integer_casts_match_numpy_and_ml_dtypes_bit_for_bit():
    src = _float32_patterns(step=97)
    assert src.size == 4_411_058  # as the docs say (kernels/README.md, test_casts_dense_on_gpu)
    f = src.view(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want16 = f.astype(np.float16).view(np.uint16)
        wantbf = f.astype(BF16).view(np.uint16)
    np.testing.assert_array_equal(_narrow_all(src, False), want16)
    np.testing.assert_array_equal(_narrow_all(src, True), wantbf)
    every_half = np.arange(1 << 16, dtype=np.uint32)
    back = np.array([_from_f16(h) for h in every_half[::7]], np.uint32)
    np.testing.assert_array_equal(
        back, every_half[::7].astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("factor", [0.5, 1 / 3, 1 / 7])
def test_scale_is_numpys_float32_multiply(factor):
    """kernels.scale (avg after a widened 16-bit sum): a *= float32(factor) in place, bit for
    bit NumPy's, infinities and subnormals included; a NaN stays a NaN (a GPU's multiply
    may give its canonical NaN, not the payload); float32 only."""
    a = np.concatenate([SPECIAL.view(np.float32),
                        np.random.default_rng(3).standard_normal(41).astype(np.float32)])
    d = dev(a.copy())
    kernels.scale(d, factor)
    want = a.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want *= np.float32(factor)
    got, nan = host(d), np.isnan(want)
    assert (np.isnan(got) == nan).all()
    assert got[~nan].tobytes() == want[~nan].tobytes()
    with pytest.raises(TypeError, match="float32 arrays only"):
        kernels.scale(dev(np.zeros(3, np.float64)), factor)


SPECIAL = np.array([0x3F808000, 0x3F818000, 0x3F800FFF, 0x3F801000, 0x3F803000,  # ties
                    0x33000000, 0x33000001, 0x387FC000, 0x00000001, 0x80000000,     # tiny
                    0x477FF000, 0x477FEFFF, 0x7F7FFFFF, 0x7F800000, 0xFF800000,     # big
                    0x7FC00000, 0x7F800001, 0xFFC12345, 0x7FBFFFFF], np.uint32)     # NaN


def test_cast_kernels_bit_exact():
    f = SPECIAL.view(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want16, wantbf = f.astype(np.float16), f.astype(BF16).view(np.uint16)
    h = dev(np.zeros(f.size, np.float16))
    kernels.cast(h, dev(f))
    assert host(h).tobytes() == want16.tobytes()
    b = dev(np.zeros(f.size, np.uint16))
    kernels.cast(b, dev(f), dst="bfloat16")
    assert host(b).tobytes() == wantbf.tobytes()
    y = dev(np.zeros(f.size, np.float32))
    kernels.cast(y, h)
    assert host(y).tobytes() == want16.astype(np.float32).tobytes()
    kernels.cast(y, b, src="bfloat16")
    assert host(y).tobytes() == wantbf.view(BF16).astype(np.float32).tobytes()


def test_cast_rejects_unknown_pairs():
    with pytest.raises(TypeError, match="no cast"):
        kernels.cast(dev(np.zeros(2, np.int32)), dev(np.zeros(2, np.float32)))


@pytest.mark.parametrize("n_out", [3, 5])
def test_cast_refuses_an_output_of_another_length(n_out):
    """Shorter, it would drop x's tail without a word; longer, leave out's tail unwritten."""
    out, x = dev(np.zeros(n_out, np.float16)), dev(np.ones(4, np.float32))
    with pytest.raises(ValueError, match=f"cast: out has {n_out} elements, x has 4"):
        kernels.cast(out, x)


@needs_gpu
def test_casts_dense_on_gpu():
    """2^26 float32 patterns through both narrowing kernels against the host: every sign,
    exponent and top mantissa bits, random low bits. (The integer functions themselves are
    checked against NumPy on the CPU above, over 4.4 million chosen patterns: every
    exponent that matters, spread mantissas, every tie and its neighbours; this checks the GPU
    runs them the same. All 2^32 took longer than the host reference can spare.)"""
    rng = np.random.default_rng(7)
    src = (np.arange(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
           | rng.integers(0, 64, 1 << 26, dtype=np.uint32))
    f = src.view(np.float32)
    f16, bf = dev(np.zeros(f.size, np.uint16)), dev(np.zeros(f.size, np.uint16))
    x = dev(f)
    kernels.cast(f16, x, dst="float16")
    kernels.cast(bf, x, dst="bfloat16")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(host(f16), f.astype(np.float16).view(np.uint16))
        np.testing.assert_array_equal(host(bf), f.astype(BF16).view(np.uint16))


# ---- pack -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["float32", "uint8", "bfloat16"])
def test_pack_unpack_list(name):
    t = host_dtype(name)
    arrs = [inputs(name, n, i) for i, n in enumerate((5, 0, 33, 1))]
    arrs[2] = arrs[2].reshape(3, 11)
    buf = dev(storage(np.zeros(50, t)))
    kernels.pack(buf, [dev(storage(a)) for a in arrs])
    flat = np.concatenate([a.ravel() for a in arrs])
    assert host(buf)[:flat.size].tobytes() == storage(flat).tobytes()
    back = [dev(storage(np.zeros_like(a))) for a in arrs]
    kernels.unpack(buf, back)
    for a, d in zip(arrs, back):
        assert host(d).tobytes() == storage(a).tobytes()
    with pytest.raises(ValueError, match="buffer"):
        kernels.pack(dev(storage(np.zeros(3, t))), [dev(storage(arrs[0]))])


def test_pack_takes_a_buffer_that_fits_exactly_and_refuses_one_element_short():
    """The bucket's size check at its edge: arrays of 5 and 3 elements pack into 8 and come
    back; with 7, pack and unpack both refuse, naming the sizes, and write nothing."""
    arrs = [np.arange(5, dtype=np.float32), np.arange(10, 13, dtype=np.float32)]
    buf = dev(np.zeros(8, np.float32))
    kernels.pack(buf, [dev(a) for a in arrs])
    assert (host(buf) == np.concatenate(arrs)).all()
    back = [dev(np.zeros_like(a)) for a in arrs]
    kernels.unpack(buf, back)
    assert all((host(d) == a).all() for d, a in zip(back, arrs))
    short = dev(np.full(7, -1, np.float32))
    for fn in (kernels.pack, kernels.unpack):
        with pytest.raises(ValueError, match="the arrays hold 8 elements, the buffer 7"):
            fn(short, [dev(a) for a in arrs])
    assert (host(short) == -1).all()


def test_pack_unpack_strided():
    m = np.arange(6 * 9, dtype=np.float64).reshape(6, 9)
    d = dev(m)
    view = d[1:5, 2:9:3]
    buf = dev(np.zeros(view.size))
    kernels.pack_strided(buf, view)
    assert (host(buf) == m[1:5, 2:9:3].ravel()).all()
    z = dev(np.zeros_like(m))
    kernels.unpack_strided(buf, z[1:5, 2:9:3])
    want = np.zeros_like(m)
    want[1:5, 2:9:3] = m[1:5, 2:9:3]
    assert (host(z) == want).all()


def test_pack_refuses_another_dtype_and_a_strided_view_its_buffer_cannot_hold():
    """Pure data movement in one dtype: an array or view of another is refused by name (a
    GPU's compiled kernel would refuse it without saying why, the simulator convert it);
    a strided view larger than its buffer, or not 2-D, too (a GPU's kernel checks no
    index). Nothing is written."""
    buf = dev(np.full(12, -1, np.float32))
    for fn in (kernels.pack, kernels.unpack):
        with pytest.raises(TypeError, match="array 1 is float64, the buffer float32"):
            fn(buf, [dev(np.ones(3, np.float32)), dev(np.ones(3, np.float64))])
    m = dev(np.arange(20, dtype=np.float32).reshape(4, 5))
    for fn in (kernels.pack_strided, kernels.unpack_strided):
        name = fn.__name__
        with pytest.raises(TypeError, match="array 0 is int32, the buffer float32"):
            fn(buf, dev(np.zeros((2, 2), np.int32)))
        with pytest.raises(ValueError, match=f"{name}: the view holds 15 elements, the buffer 12"):
            fn(buf, m[1:4, :])
        with pytest.raises(ValueError, match=f"{name}: a 2-D view, got 1-D"):
            fn(buf, m[0, :])
    assert (host(buf) == -1).all() and (host(m) == np.arange(20).reshape(4, 5)).all()
    kernels.pack_strided(buf, m[1:4, :4])  # 12: fits exactly
    assert (host(buf) == np.arange(20, dtype=np.float32).reshape(4, 5)[1:4, :4].ravel()).all()


@pytest.mark.parametrize("mode", ["fence", "acqrel", "ll"])
def test_every_hand_off_carries_its_values_there_and_back(mode):
    """kernels/handoff.py's ping-pong (the hand-off microbenchmark): every value arrives
    whole and in order at both parties, in two warps of one block (the placement the
    simulator can run; on a GPU two blocks as well, and with the channels' barriers)."""
    from kernels.handoff import measure
    placements = [(True, 64)] + ([] if SIMULATED else [(False, 32), (False, 512)])
    for same_block, threads in placements:
        ns = measure(mode, same_block=same_block, threads=threads, trips=8 if SIMULATED else 200)
        assert ns > 0


def test_a_hand_off_that_never_comes_gives_up_and_says_where():
    """A party whose peer never answers gives up after the timeout, with the round trip and
    what it saw: one block of 32 threads has no thread 32, so party 1 never exists."""
    from kernels import handoff
    for mode in handoff.MODES:
        kernel = cuda.jit(handoff.source(mode))
        err = cuda.to_device(np.zeros(4, np.int64))
        kernel[1, 32](cuda.to_device(np.zeros(handoff.WORDS, np.int64)), 3, int(5e7), err,
                      cuda.to_device(np.zeros(2, np.int64)), True)
        cuda.synchronize()
        assert err.copy_to_host().tolist() == [handoff.ERR_TIMEOUT, 0, 0, 0], mode


def test_the_copy_kernel_copies_every_byte():
    """kernels/copy.py (the benchmarks' multiprocessor copy roofline): every byte, at sizes
    around its unrolled loop's edges; sizes it cannot copy are refused."""
    from kernels.copy import copy
    rng = np.random.default_rng(5)
    for n in (0, 8, 64, 8 * 129, 8 * 1001):
        src = rng.integers(0, 256, n, dtype=np.uint8)
        dst = dev(np.zeros(n, np.uint8))
        copy(dst, dev(src))
        assert host(dst).tobytes() == src.tobytes(), n
    with pytest.raises(ValueError, match="multiple of 8"):
        copy(dev(np.zeros(12, np.uint8)), dev(np.zeros(12, np.uint8)))


@pytest.mark.parametrize("name", ["uint8", "bfloat16", "float32", "float64"])
def test_16_byte_vectors_carry_every_lane_and_refuse_a_misaligned_address(name):
    """kernels/vector.py: load16 / store16 move lanes(dtype) elements, each to its own lane
    (bit for bit, through a local array of the dtype, or of uint32 words), at the element
    asked; under the simulator an address that is not 16-byte aligned fails the kernel (on
    a GPU it would fault)."""
    from kernels.vector import lanes, load16, store16
    dt = storage(np.zeros(0, host_dtype(name))).dtype
    nl = lanes(dt)
    numba_dt = numba.from_dtype(dt)

    @cuda.jit
    def shift(dst, src, at):  # dst[at + i] = src[at + i], a vector a thread
        buf = cuda.local.array(2 * 16, numba_dt)
        i = at + cuda.threadIdx.x * nl
        load16(buf, nl, src, i)
        store16(dst, i, buf, nl)

    @cuda.jit
    def words(dst, src, at):  # the same through four 32-bit words: lanes of the local array
        buf = cuda.local.array(8, numba.uint32)
        i = at + cuda.threadIdx.x * nl
        load16(buf, 4, src, i)
        store16(dst, i, buf, 4)

    src = np.random.default_rng(7).integers(0, 256, 8 * 16, np.uint8).view(dt)
    for kernel in (shift, words):
        d = dev(np.zeros(src.size, dt))
        kernel[1, 3](d, dev(src), nl)
        got = host(d)
        assert got[nl:4 * nl].tobytes() == src[nl:4 * nl].tobytes()
        assert not got[:nl].any() and not got[4 * nl:].any()
    if SIMULATED and nl > 1:
        with pytest.raises(AssertionError, match="not 16-byte aligned"):
            shift[1, 1](d, dev(src), 1)


@pytest.mark.skipif(not SIMULATED, reason="Numba's simulator only")
def test_the_simulator_yields_while_it_watches_a_block(monkeypatch):
    """kernels/simulator.py: the thread that launched a simulated kernel lets go of the GIL
    each time it looks at the block's threads, instead of spinning on them."""
    from kernels import simulator
    looks = []
    monkeypatch.setattr(simulator, "_yield", lambda: looks.append(1))
    out = dev(np.zeros(37, np.float32))
    kernels.reduce_copy(out, dev(np.ones(37, np.float32)), dev(np.ones(37, np.float32)))
    assert host(out).tolist() == [2.0] * 37
    assert looks, "the simulator watched its threads without yielding"
    assert simulator.yield_while_polling()  # applied once, at the first launch's grid


@pytest.mark.skipif(not SIMULATED, reason="Numba's simulator only")
def test_the_threads_of_a_simulated_block_share_its_shared_array(monkeypatch):
    """kernels/simulator.py: numba-cuda's simulator looks a shared array up, and makes it if
    it is not there yet, without a lock, so two threads that reach the line together could
    each make one of their own (the persistent kernel's `ok` word then said "stop" to one
    thread, which left its elements unwritten: a CI failure at 4 processes). Here the
    simulator's making of an array is slowed, so that every thread reaches the line while
    the first still makes it; all must still get one array."""
    import time

    from numba.cuda.simulator import kernelapi

    from kernels import simulator
    simulator.prepare()  # as ring's cuda backend and ring.Group do before they launch

    class Slow:  # numpy as the simulator's module sees it, with a slow np.empty
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def empty(*args, **kwargs):
            time.sleep(0.002)
            return np.empty(*args, **kwargs)
    monkeypatch.setattr(kernelapi, "np", Slow())

    @cuda.jit
    def seen(out):
        word = cuda.shared.array(8, np.int64)
        t = cuda.threadIdx.x
        word[t] = t + 1
        cuda.syncthreads()
        total = 0
        for i in range(8):
            total += word[i]
        out[t] = total

    out = dev(np.zeros(8, np.int64))
    seen[1, 8](out)
    assert host(out).tolist() == [36] * 8, "threads of one block saw different shared arrays"
    assert simulator.shared_arrays_once()  # applied once, by prepare()


def test_importing_the_kernels_patches_nothing():
    """No side effect on import: a fresh process that imports every kernel module finds
    Numba's simulator as numba-cuda ships it (kernels/simulator.prepare() patches it)."""
    import subprocess
    import sys
    code = ("import kernels, kernels.reduce, kernels.quantize, kernels.spin\n"
            "from numba.cuda.simulator.kernel import BlockThread\n"
            "from numba.cuda.simulator.kernelapi import FakeCUDAShared\n"
            "print(getattr(BlockThread.is_alive, 'yields', False),"
            " getattr(FakeCUDAShared.array, 'once', False))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_error_word_keeps_the_first_failure_of_the_grid():
    """ring/cuda/error_word.fail: the first failure of a grid is the one a call reports
    (what failed and where, every field of it); one that comes after it (another thread or
    block giving up too) leaves the word as it was."""
    from ring.cuda.error_word import ERR_LEN, fail

    @cuda.jit
    def two_failures(err):
        t = cuda.threadIdx.x
        if t == 0:
            fail(err, 3, 1, 2, 3, 4, 5, 6)
        cuda.syncthreads()
        if t == 1:
            fail(err, 7, 8, 9, 10, 11, 12, 13)

    err = cuda.to_device(np.zeros(ERR_LEN, np.int64))
    two_failures[1, 2](err)
    assert err.copy_to_host()[:7].tolist() == [3, 1, 2, 3, 4, 5, 6]


def test_the_one_shot_kernel_keeps_to_its_calls_parity_of_the_inboxes():
    """ring/cuda/oneshot_kernel.py, rank 0 of 2, its first call (sequence 1, parity 1): it
    folds its peer's words from parity 1 of its inbox, never the other parity's, even
    flagged alike (a peer one call ahead writes there while this rank still reads), and
    writes its own into parity 1 of the peer's, at its place."""
    from ring.cuda.oneshot_kernel import LOW, oneshot_kernel
    from ring.cuda.error_word import ERR_LEN
    k, me, n, room, seq, record = 2, 0, 8, 16, 1, 0x1234
    x = np.arange(1, n + 1, dtype=np.float32)
    theirs, other = np.full(n, 100, np.float32), np.full(n, -7, np.float32)

    def words(v):  # LL words: the bits below, the flag above
        return v.view(np.uint32).astype(np.int64) | (seq << 32)
    mine = np.zeros(2 * k * room, np.int64)
    for parity, v in ((seq & 1, theirs), (1 - (seq & 1), other)):
        at = parity * k * room + 1 * room  # rank 1's place
        mine[at:at + n] = words(v)
    board = np.zeros(2 * k, np.int64)
    board[(seq & 1) * k + 1] = seq << 32 | record  # rank 1 has posted this call
    inbox, peer = cuda.to_device(mine), cuda.to_device(np.zeros_like(mine))
    out, err = cuda.device_array(n, np.float32), cuda.to_device(np.zeros(ERR_LEN, np.int64))
    oneshot_kernel(Op.SUM, "float32", k)[1, 4](
        cuda.to_device(x), out, inbox, (inbox, peer), cuda.to_device(np.zeros(1, np.int64)),
        n, me, int(10e9), 1.0, err, cuda.to_device(board), cuda.to_device(np.zeros(2, np.int64)),
        record)
    assert not err.copy_to_host().any()
    assert out.copy_to_host().tobytes() == (x + theirs).tobytes()
    sent = peer.copy_to_host()
    at = (seq & 1) * k * room + me * room
    assert (sent[at:at + n] >> 32 == seq).all()
    assert (sent[at:at + n] & LOW).astype(np.uint32).tobytes() == x.tobytes()
    assert not sent[:at].any() and not sent[at + n:].any()


WAITS = ["sync-wait_geq", "sync-wait_flag", "fenced-wait_geq"]


def _waiting_pair(which: str):
    """A kernel of one block of 64 threads: thread 32 waits (kernels/spin.py's `which`) for
    word 0 to arrive, with a minute's timeout, and says it returned (seen[1] = 1); thread 0
    (another warp) makes the word arrive, or with `raise_` raises the error word first and
    makes it arrive only after thread 32 has returned. seen[0]: what the wait returned;
    seen[2]: 1 where thread 0 found thread 32 still waiting after 20 s (then it raises the
    error word, or makes the word arrive, to let it go)."""
    from kernels.spin import fenced, now, pause, sync
    kind, name = which.split("-")
    wait = getattr(sync("gpu") if kind == "sync" else fenced("gpu"), name)
    arrive = (1 << 32) | 5 if name == "wait_flag" else 1
    want = 1  # wait_geq: counter >= 1; wait_flag: a flag of 1 in the word's high 32 bits

    @cuda.jit(device=True)
    def returned(seen):
        start = now()
        while cuda.atomic.add(seen, 1, 0) == 0:
            if now() - start > 20_000_000_000:
                seen[2] = 1
                return False
            pause()
        return True

    @cuda.jit
    def pair(words, err, seen, raise_):
        t = cuda.threadIdx.x
        if t == 32:
            seen[0] = wait(words, 0, want, 60_000_000_000, err)
            cuda.atomic.max(seen, 1, 1)
        elif t == 0:
            if raise_:
                cuda.atomic.max(err, 0, 1)
                returned(seen)
                cuda.atomic.max(words, 0, arrive)
            else:
                cuda.atomic.max(words, 0, arrive)
                if not returned(seen):
                    cuda.atomic.max(err, 0, 1)
    return pair, arrive


@pytest.mark.parametrize("which", WAITS)
def test_a_device_wait_gives_up_once_another_thread_raises_the_error_word(which):
    """kernels/spin.py: a wait returns once its word arrives, and as soon as the error word
    is raised (another block failed), without waiting for its timeout or the word: the
    caller then reads what it saw, not arrived. Two warps of one block (the simulator runs
    blocks one after another)."""
    pair, arrive = _waiting_pair(which)
    for raise_, expect in ((False, arrive), (True, 0)):
        words, err = cuda.to_device(np.zeros(2, np.int64)), cuda.to_device(np.zeros(4, np.int64))
        seen = cuda.to_device(np.zeros(3, np.int64))
        pair[1, 64](words, err, seen, raise_)
        cuda.synchronize()
        assert seen.copy_to_host().tolist() == [expect, 1, 0], (which, raise_)
