"""The int8 exchanges of GradientBuckets (ring/int8_reduce.py) as its docstring states
them, for the multi-rank tests to compare with bit for bit: every rank's bucket and
residuals are known to every rank (seeded), so each can compute what all must hold. The
rounding and widening are ring/quantize.py's (checked on their own against NumPy in
tests/test_quantize.py, and the GPU kernels against them in test_kernel_quantize.py); the
protocol here (shards, order, second rounding, residuals) is written afresh."""

import numpy as np

from ring.training.quantize import BLOCK, dequantize_sum, packed_bytes, quantize


def _msg(v, residual):
    m = np.empty(packed_bytes(v.size), np.uint8)
    quantize(v, m, residual)
    return m


def _widen_sum(msgs, n, avg):
    out = np.empty(n, np.float32)
    if n:
        dequantize_sum(np.stack(msgs), n, out, avg)
    return out


class Int8Bucket:
    """One bucket on K ranks, step after step; feedback: residuals kept as the ranks do."""

    def __init__(self, n: int, k: int, exchange: str, feedback: bool):
        self.n, self.k, self.exchange = n, k, exchange
        s = -(-(-(-n // k)) // BLOCK) * BLOCK  # n / k rounded up to whole blocks
        self.shards = [(min(j * s, n), min((j + 1) * s, n)) for j in range(k)]
        self.residual = [np.zeros(n, np.float32) if feedback else None for _ in range(k)]
        self.server = [np.zeros(hi - lo, np.float32) if feedback else None
                       for lo, hi in self.shards]

    def step(self, buckets: list, avg: bool) -> np.ndarray:
        """What every rank holds after the all-reduce of buckets[q] (rank q's)."""
        res = self.residual
        if self.exchange == "allgather":
            return _widen_sum([_msg(b, r) for b, r in zip(buckets, res)], self.n, avg)
        out = np.empty(self.n, np.float32)
        for j, (lo, hi) in enumerate(self.shards):
            if hi == lo:
                continue
            parts = [_msg(b[lo:hi], None if r is None else r[lo:hi])
                     for b, r in zip(buckets, res)]
            total = _widen_sum(parts, hi - lo, avg)  # on rank j, in rank order
            out[lo:hi] = _widen_sum([_msg(total, self.server[j])], hi - lo, False)
        return out
