"""float16 and bfloat16 arithmetic on the host at memory speed: Numba CPU loops over the
raw bits, compiled once and cached. The conversions are kernels/bits.py's (the GPU's
kernels'), rewritten without branches (in uint32 lanes) so that the loops vectorise; the
tests check them against NumPy over every exponent.

NumPy's float16 and ml_dtypes' bfloat16 ufuncs convert element by element in C and run
4-5x slower than float32 per element (an 8 MB float16 all-reduce took 27 ms against 6 ms
for 16 MB of float32, 2 ranks). The result here is theirs bit for bit: each element is
widened to float32, combined there and rounded to nearest even, once per ufunc.

    combine(op, a, b, out)            out = round(a op b)
    divide(out, k)                    out = round(out / k) (avg's final step, as np.divide)
    narrow(x, out) / widen(h, out)    float32 <-> 16-bit bits (wire compression)

and a float32 ring's steps with the 16-bit type on the wire (Communicator compression=,
ring/host/executor.py), each one pass over memory, accumulating in float32 at every hop:
    hop(r, x, s)                      s = round(wide(r) + x)       (a partial sum passed on)
    settle(r, x, out, s, d)           s = round(wide(r) + x); out = wide(s) / d  (the seam)
    accumulate(r, x, out, d)          out = (wide(r) + x) / d      (kept, never sent again)
    land(r, out, d)                   out = wide(r) / d            (an all-gathered chunk)
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
KINDS = {F16: 0, BF16: 1}  # the dtypes handled here, and their code in the loops
SUM, PROD = 0, 1


@intrinsic
def as_f32(typingctx, u):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.uint32), codegen


@intrinsic
def as_u32(typingctx, f):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


def _u32(build):
    """An operation on two uint32 that stays in 32 bits: Numba widens integer arithmetic
    to 64 bits, which halves the lanes of a vectorised loop (the loops here ran 2x slower)."""
    @intrinsic
    def op(typingctx, a, b):
        def codegen(context, builder, sig, args):
            return build(builder, *args)
        return types.uint32(types.uint32, types.uint32), codegen
    return op


_add = _u32(lambda b, x, y: b.add(x, y))
_sub = _u32(lambda b, x, y: b.sub(x, y))
_shr = _u32(lambda b, x, y: b.lshr(x, y))
_shl = _u32(lambda b, x, y: b.shl(x, y))
_and = _u32(lambda b, x, y: b.and_(x, y))
_or = _u32(lambda b, x, y: b.or_(x, y))
U = np.uint32


@njit(inline="always")
def _to_bf16(u):
    """float32 bits -> bfloat16 bits as kernels/bits.f32_to_bf16 (round to nearest even,
    NaN -> quiet NaN with its sign), with a select instead of the branch."""
    hi = _shr(u, U(16))
    rounded = _shr(_add(_add(u, U(0x7FFF)), _and(hi, U(1))), U(16))
    quiet = _or(_and(hi, U(0x8000)), U(0x7FC0))
    return quiet if _and(u, U(0x7FFFFFFF)) > U(0x7F800000) else rounded


@njit(inline="always")
def _from_f16(h):
    """float16 bits -> float32, exact as kernels/bits.f16_to_f32 (NaN payload kept),
    without branches: rebias the exponent; inf / NaN get the rest of the float32 exponent;
    a subnormal (or zero) is made a normal float32 of the same bits and the FPU subtracts
    the implicit one (exactly)."""
    h = U(h)
    u = _shl(_and(h, U(0x7FFF)), U(13))
    e = _and(u, U(0x0F800000))
    u = _add(u, U(0x38000000))
    u = _add(u, U(0x38000000)) if e == U(0x0F800000) else u
    v = as_f32(_add(u, U(0x00800000))) - np.float32(6.103515625e-05) if e == U(0) \
        else as_f32(u)
    return as_f32(_or(as_u32(v), _shl(_and(h, U(0x8000)), U(16))))


@njit(inline="always")
def _wide(h, kind):
    if kind == 1:
        return as_f32(_shl(U(h), U(16)))
    return _from_f16(h)


@njit(inline="always")
def _to_f16(u):
    """float32 bits -> float16 bits as kernels/bits.f32_to_f16 (NumPy's: round to nearest
    even, NaN payload kept), without branches so that the loop vectorises (the branchy
    integer path is 3x slower): all three cases are computed and one is selected. Below
    2^-14 the FPU rounds: adding 0.5 lines the value up so that its low bits are the half
    subnormal, rounded to nearest even."""
    sign = _and(_shr(u, U(16)), U(0x8000))
    f = _and(u, U(0x7FFFFFFF))
    odd = _and(_shr(f, U(13)), U(1))
    normal = _and(_shr(_add(_add(f, U(0xC8000FFF)), odd), U(13)), U(0xFFFF))
    sub = _sub(as_u32(as_f32(f) + np.float32(0.5)), U(0x3F000000))
    payload = _shr(_and(f, U(0x007FFFFF)), U(13))
    nan = _or(U(0x7C00), payload if payload > U(0) else U(1))
    big = nan if f > U(0x7F800000) else U(0x7C00)
    h = sub if f < U(0x38800000) else normal
    h = big if f >= U(0x47800000) else h
    return _or(sign, h)


@njit(inline="always")
def _narrow(v, kind):
    u = as_u32(np.float32(v))
    if kind == 1:
        return np.uint16(_to_bf16(u))
    return np.uint16(_to_f16(u))


@njit(inline="always")
def _loop(kind, op, a, b, out):
    for i in range(out.size):
        x, y = _wide(a[i], kind), _wide(b[i], kind)
        out[i] = _narrow(x * y if op == PROD else x + y, kind)


@njit(inline="always")
def _loop_into(kind, op, other, acc, acc_first):
    """acc = acc op other (acc_first) or other op acc: two arrays, so that the compiler's
    overlap check passes and the loop vectorises (out aliasing an input defeats it: 3x)."""
    for i in range(acc.size):
        x, y = (_wide(acc[i], kind), _wide(other[i], kind)) if acc_first \
            else (_wide(other[i], kind), _wide(acc[i], kind))
        acc[i] = _narrow(x * y if op == PROD else x + y, kind)


# The choice of dtype and op is made once, outside the loops, each loop compiled for its
# constants (a runtime choice inside the loop keeps it from vectorising).
@njit(cache=True, nogil=True)
def _combine(kind, op, a, b, out):
    if kind == 0:
        if op == PROD:
            _loop(0, PROD, a, b, out)
        else:
            _loop(0, SUM, a, b, out)
    elif op == PROD:
        _loop(1, PROD, a, b, out)
    else:
        _loop(1, SUM, a, b, out)


@njit(cache=True, nogil=True)
def _combine_into(kind, op, other, acc, acc_first):
    if kind == 0:
        if op == PROD:
            if acc_first:
                _loop_into(0, PROD, other, acc, True)
            else:
                _loop_into(0, PROD, other, acc, False)
        elif acc_first:
            _loop_into(0, SUM, other, acc, True)
        else:
            _loop_into(0, SUM, other, acc, False)
    elif op == PROD:
        if acc_first:
            _loop_into(1, PROD, other, acc, True)
        else:
            _loop_into(1, PROD, other, acc, False)
    elif acc_first:
        _loop_into(1, SUM, other, acc, True)
    else:
        _loop_into(1, SUM, other, acc, False)


@njit(inline="always")
def _divide_loop(kind, out, d):
    for i in range(out.size):
        out[i] = _narrow(_wide(out[i], kind) / d, kind)


@njit(cache=True, nogil=True)
def _divide(kind, out, divisor):
    if kind == 0:
        _divide_loop(0, out, np.float32(divisor))
    else:
        _divide_loop(1, out, np.float32(divisor))


@njit(cache=True, nogil=True)
def _narrow_all(kind, x, out):
    for i in range(out.size):
        out[i] = _narrow(x[i], kind)


@njit(cache=True, nogil=True)
def _widen_all(kind, h, out):
    for i in range(out.size):
        out[i] = _wide(h[i], kind)


# -- float32 data, 16-bit wire: one loop per ring step, specialised per kind as above ------
@njit(inline="always")
def _hop_loop(kind, r, x, s):
    for i in range(s.size):
        s[i] = _narrow(_wide(r[i], kind) + x[i], kind)


@njit(inline="always")
def _settle_loop(kind, r, x, out, s, d):
    for i in range(s.size):
        h = _narrow(_wide(r[i], kind) + x[i], kind)
        s[i] = h
        out[i] = _wide(h, kind) / d


@njit(inline="always")
def _settle_into(kind, r, acc, s, d):
    """_settle_loop with out x, as its own loop: an out aliasing x keeps the compiler's
    overlap check from vectorising (3.4x slower, measured), as for _loop_into."""
    for i in range(s.size):
        h = _narrow(_wide(r[i], kind) + acc[i], kind)
        s[i] = h
        acc[i] = _wide(h, kind) / d


@njit(inline="always")
def _accumulate_loop(kind, r, x, out, d):
    for i in range(out.size):
        out[i] = (_wide(r[i], kind) + x[i]) / d


@njit(inline="always")
def _accumulate_into(kind, r, acc, d):
    for i in range(acc.size):
        acc[i] = (_wide(r[i], kind) + acc[i]) / d


@njit(inline="always")
def _land_loop(kind, r, out, d):
    for i in range(out.size):
        out[i] = _wide(r[i], kind) / d


@njit(cache=True, nogil=True)
def _hop(kind, r, x, s):
    if kind == 0:
        _hop_loop(0, r, x, s)
    else:
        _hop_loop(1, r, x, s)


@njit(cache=True, nogil=True)
def _settle_bf16(r, x, out, s, d, into):
    if into:
        _settle_into(1, r, out, s, d)
    else:
        _settle_loop(1, r, x, out, s, d)


@njit(cache=True, nogil=True)
def _accumulate(kind, r, x, out, d, into):
    if kind == 0:
        if into:
            _accumulate_into(0, r, out, d)
        else:
            _accumulate_loop(0, r, x, out, d)
    elif into:
        _accumulate_into(1, r, out, d)
    else:
        _accumulate_loop(1, r, x, out, d)


@njit(cache=True, nogil=True)
def _land(kind, r, out, d):
    if kind == 0:
        _land_loop(0, r, out, d)
    else:
        _land_loop(1, r, out, d)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


def hop(r: np.ndarray, x: np.ndarray, s: np.ndarray) -> None:
    """s = round(wide(r) + x): r, s 16-bit, x float32, one length."""
    _hop(KINDS[s.dtype], r.view(np.uint16), x, s.view(np.uint16))


def settle(r: np.ndarray, x: np.ndarray, out: np.ndarray, s: np.ndarray, d: int) -> None:
    """s = round(wide(r) + x) and out = wide(s) / d (float32; out may be x). bfloat16: one
    loop with both outputs (2M values, best of 30, four runs: 0.95-1.28 ms against
    0.93-2.09 in place, 1.23-1.78 against 1.81-2.24 apart; s is not read back);
    float16, or out over x elsewhere than exactly, two loops (one did not vectorise for
    float16: 2x slower; and a loop writing out[i] over a later x would read it changed)."""
    same = _same(x, out)
    if s.dtype == BF16 and (same or not np.may_share_memory(x, out)):
        _settle_bf16(r.view(np.uint16), x, out, s.view(np.uint16), np.float32(d), same)
        return
    hop(r, x, s)
    land(s, out, d)


def accumulate(r: np.ndarray, x: np.ndarray, out: np.ndarray, d: int) -> None:
    """out = (wide(r) + x) / d, in float32 (out may be x)."""
    _accumulate(KINDS[r.dtype], r.view(np.uint16), x, out, np.float32(d), _same(x, out))


def land(r: np.ndarray, out: np.ndarray, d: int) -> None:
    """out = wide(r) / d, in float32."""
    _land(KINDS[r.dtype], r.view(np.uint16), out, np.float32(d))


def combine(op: int, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = a op b; a, b, out: 1-D float16 or bfloat16 arrays of one length (out may be
    a or b)."""
    kind, o = KINDS[out.dtype], out.view(np.uint16)
    addr = o.__array_interface__["data"][0]
    if a.__array_interface__["data"][0] == addr:
        _combine_into(kind, op, b.view(np.uint16), o, True)
    elif b.__array_interface__["data"][0] == addr:
        _combine_into(kind, op, a.view(np.uint16), o, False)
    else:
        _combine(kind, op, a.view(np.uint16), b.view(np.uint16), o)


def divide(out: np.ndarray, divisor: int) -> None:
    """out /= divisor, in place, rounded once (np.divide's float16 / bfloat16 result)."""
    _divide(KINDS[out.dtype], out.view(np.uint16), divisor)


def narrow(x: np.ndarray, out: np.ndarray) -> None:
    """out (float16 / bfloat16) = x (float32), rounded to nearest even."""
    _narrow_all(KINDS[out.dtype], x, out.view(np.uint16))


def widen(h: np.ndarray, out: np.ndarray) -> None:
    """out (float32) = h (float16 / bfloat16), exactly."""
    _widen_all(KINDS[h.dtype], h.view(np.uint16), out)


def warm() -> None:
    """Compile (or load from Numba's cache) every loop here."""
    for dt in KINDS:
        a, b = np.ones(2, dt), np.ones(2, dt)
        for op in (SUM, PROD):
            combine(op, a, b, np.empty_like(a))
            combine(op, a, b, a)
            combine(op, a, b, b)
        divide(a, 3)
        x = np.ones(2, np.float32)
        narrow(x, a)
        widen(a, x)
        hop(a, x, b)
        accumulate(a, x, np.empty_like(x), 2)
        accumulate(a, x, x, 2)
        land(a, x, 2)
