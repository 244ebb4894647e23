"""The host's compiled float16 / bfloat16 loops (ring/host/half.py) against NumPy and
ml_dtypes, bit for bit: every 16-bit value widened, float32 of every exponent narrowed,
sums, products and avg's division of random and special values."""

import warnings

import ml_dtypes
import numpy as np
import pytest

from ring.host import half

DTYPES = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
rng = np.random.default_rng(7)


def bits(a):
    return a.view(np.uint16 if a.itemsize == 2 else np.uint32)


def every_exponent(per=4000):
    """float32 bits of every exponent, both signs, random mantissas, and the edges of
    float16's range and rounding."""
    u = np.concatenate([(np.uint32(e) << 23) | rng.integers(0, 1 << 23, per, dtype=np.uint32)
                        for e in range(256)])
    edges = np.array([0x477FF000, 0x477FEFFF, 0x477FF001, 0x33000000, 0x33000001, 0x387FE000,
                      0x387FF000, 0x38800000, 0x7F800000, 0x7F800001, 0x7FC00000, 0x3F801000,
                      0x3F803000, 0x3F808000, 0x3F818000], np.uint32)
    u = np.concatenate([u, edges])
    return np.concatenate([u, u | np.uint32(0x80000000)]).view(np.float32)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_widen_every_value(dt):
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dt)
    out = np.empty(h.size, np.float32)
    half.widen(h, out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.array_equal(bits(out), bits(h.astype(np.float32)))


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_narrow_every_exponent(dt):
    x = every_exponent()
    out = np.empty(x.size, dt)
    half.narrow(x, out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = x.astype(dt)
    bad = np.flatnonzero(bits(out) != bits(want))
    assert bad.size == 0, [hex(v) for v in bits(x)[bad[:5]]]


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("op", ["sum", "prod", "avg"])
def test_combine_and_divide_as_the_ufuncs(dt, op):
    n = 50_000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = (rng.standard_normal(n) * rng.choice([1e-6, 1, 300, 6e4], n)).astype(dt)
        b = (rng.standard_normal(n) * rng.choice([1e-6, 1, 300, 6e4], n)).astype(dt)
        special = np.array([0, -0.0, np.inf, -np.inf, np.nan, 6e4, -6e4, 6e-8], np.float32)
        a[:8], b[:8] = special.astype(dt), special[::-1].astype(dt)
        out = np.empty_like(a)
        half.combine(half.PROD if op == "prod" else half.SUM, a, b, out)
        want = a * b if op == "prod" else a + b
        if op == "avg":
            half.divide(out, 3)
            want = np.divide(want, 3)
    assert want.dtype == dt
    assert np.array_equal(bits(out), bits(want))


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("into", ["a", "b"])
def test_combine_in_place(dt, into):
    """out is one of the inputs (the ring's in-place steps, fold's running result)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = (rng.standard_normal(3001) * 50).astype(dt)
        b = (rng.standard_normal(3001) * 50).astype(dt)
        want_sum, want_prod = a + b, a * b
        for op, want in ((half.SUM, want_sum), (half.PROD, want_prod)):
            x, y = a.copy(), b.copy()
            out = x if into == "a" else y
            half.combine(op, x, y, out)
            assert np.array_equal(bits(out), bits(want))


@pytest.mark.parametrize("where", ["in place", "apart", "overlapping"])
@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_settle_is_a_hop_then_a_landing(dt, where):
    """The all-reduce seam of a 16-bit wire (s = round(wide(r) + x); out = wide(s) / d): one
    loop for bfloat16, the same bits as its two steps with NumPy's conversions, every
    exponent of x (NaN, inf, subnormals); out as x, apart from it, or over x one element on."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = every_exponent(200)
        r = (rng.standard_normal(x.size) * 1e3).astype(dt)
        s_want = (r.astype(np.float32) + x).astype(dt)
        want = s_want.astype(np.float32) / np.float32(3)
    n = x.size - 1 if where == "overlapping" else x.size
    base = np.empty(n + 1, np.float32)
    if where == "in place":
        xs, out = x.copy(), None
    elif where == "apart":
        xs, out = x.copy(), np.empty(n, np.float32)
    else:  # x the first n of base, out the last n: out[i] lies over x[i + 1]
        base[:] = x[:n + 1] if n + 1 <= x.size else np.append(x, 0)
        xs, out = base[:n], base[1:]
    out = xs if out is None else out
    s = np.empty(n, dt)
    half.settle(r[:n], xs, out, s, 3)
    assert np.array_equal(bits(s), bits(s_want[:n]))
    assert np.array_equal(bits(out), bits(want[:n]))


@pytest.mark.parametrize("where", ["in place", "apart"])
@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_the_wires_other_steps_against_numpy(dt, where):
    """The 16-bit wire's other steps, each against NumPy's conversions, every exponent of x:
    a hop (s = round(wide(r) + x)), a kept chunk (out = (wide(r) + x) / d in float32: a
    reduce-scatter's last step, out as x where it runs in place) and a landing (out =
    wide(r) / d: an all-gathered chunk)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = every_exponent(200)
        r = (rng.standard_normal(x.size) * 1e3).astype(dt)
        wide = r.astype(np.float32)
        s_want = (wide + x).astype(dt)
        kept_want = (wide + x) / np.float32(3)
        landed_want = wide / np.float32(3)
    s = np.empty(x.size, dt)
    half.hop(r, x, s)
    assert np.array_equal(bits(s), bits(s_want))
    xs = x.copy()
    out = xs if where == "in place" else np.empty(x.size, np.float32)
    half.accumulate(r, xs, out, 3)
    assert np.array_equal(bits(out), bits(kept_want))
    out = np.empty(x.size, np.float32)
    half.land(r, out, 3)
    assert np.array_equal(bits(out), bits(landed_want))
