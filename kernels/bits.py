"""Bit-exact conversions between float32 and the 16-bit wire formats, in integers only.

Plain Python functions of integers: compiled as CUDA device functions for the cast kernels,
run by Numba's CUDA simulator as they are, and compiled for the CPU by the tests, which
check them against NumPy (float16) and ml_dtypes (bfloat16) bit for bit over whole
exponent ranges. Integers, not the hardware's cvt, because cvt turns every NaN into one
canonical NaN while NumPy keeps the payload; and the simulator has no bfloat16 intrinsics.

All take and return the raw bits as unsigned integers.
"""


def f32_to_f16(f):
    """float32 bits -> float16 bits: round to nearest even, NumPy's NaN rule."""
    sign = (f >> 16) & 0x8000
    exp = f & 0x7F800000
    sig = f & 0x007FFFFF
    if exp >= 0x47800000:  # overflow, inf or NaN
        if exp == 0x7F800000 and sig != 0:
            h = 0x7C00 + (sig >> 13)  # keep the top of the payload ...
            if h == 0x7C00:
                h += 1  # ... and keep it a NaN
            return sign | h
        return sign | 0x7C00
    if exp <= 0x38000000:  # half subnormal or zero
        if exp < 0x33000000:
            return sign
        e = exp >> 23
        sig = sig | 0x00800000
        shift = 126 - e  # half subnormals count units of 2^-24: 14..24 bits go
        half_sig = sig >> shift
        rest = sig - (half_sig << shift)  # the bits shifted out
        halfway = 1 << (shift - 1)
        # round up above halfway, or at halfway when the result is odd
        if rest > halfway or (rest == halfway and (half_sig & 1) == 1):
            half_sig += 1
        return sign | half_sig  # a carry into the exponent is the right answer
    h = ((exp - 0x38000000) >> 13) | (sig >> 13)
    rest = sig & 0x1FFF
    if rest > 0x1000 or (rest == 0x1000 and (h & 1) == 1):
        h += 1  # a carry may reach the exponent, up to inf: right again
    return sign | h


def f16_to_f32(h):
    """float16 bits -> float32 bits, exact (NaN payload kept, as NumPy does)."""
    sign = (h & 0x8000) << 16
    exp = h & 0x7C00
    sig = h & 0x03FF
    if exp == 0x7C00:  # inf or NaN
        return sign | 0x7F800000 | (sig << 13)
    if exp == 0:
        if sig == 0:
            return sign
        e = 113  # normalise a subnormal
        while (sig & 0x0400) == 0:
            sig <<= 1
            e -= 1
        return sign | (e << 23) | ((sig & 0x03FF) << 13)
    return sign | ((exp + 0x1C000) << 13) | (sig << 13)


def f32_to_bf16(f):
    """float32 bits -> bfloat16 bits: round to nearest even; NaN -> quiet NaN with the
    sign kept, as ml_dtypes does."""
    if (f & 0x7F800000) == 0x7F800000 and (f & 0x007FFFFF) != 0:
        return ((f >> 16) & 0x8000) | 0x7FC0
    return (f + 0x7FFF + ((f >> 16) & 1)) >> 16
