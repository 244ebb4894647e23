"""Top-K sparsified gradients with error feedback, as Deep Gradient Compression sends them:
each rank sends only the k = density x n values of its bucket largest in magnitude, as
(index, value) pairs, and keeps the rest for its next step.

    select      the k largest magnitudes, in O(n): a threshold estimated from a strided
                sample of the bucket (DGC samples 0.1-1%), one compiled pass over the bucket
                for the candidates above it, then the exact k among those; ties at the k-th
                magnitude go to the lower indices, so the choice is a pure function of the
                values. Where the sample's threshold keeps fewer than k, the exact k-th
                magnitude of the whole bucket (np.partition, O(n) too).
    exchange    an all-gather of every rank's k (index, value) pairs: k differs by nothing
                between ranks (the same bucket size and density), so every message has one
                size and the indices of different ranks may overlap freely. A rank
                receives (K - 1) 8k bytes, against the float32 ring's 2 (K - 1) / K 4n: at
                1% density a 25th at two ranks, a 12.5th at four. (A sparse-aware
                reduce-scatter would send fewer bytes at many ranks, where the union of
                the indices grows; at 2-4 ranks the all-gather is one call and no merge.)
    combine     the dense sum of the K sparse contributions, in rank order (zeros, then
                rank 0's values added at its indices, rank 1's, ...): the same bits on
                every rank; avg divides by K once.
    feedback    error_feedback=True: what a rank did not send (its bucket plus the last
                residual, less the values sent) is added to its next step's bucket, so no
                gradient is lost, only delayed; without it the rest is dropped.
    momentum    momentum=m (with error feedback): the buckets carry the momentum, and the
                optimizer steps without it on their result. Error feedback under an
                optimizer's own momentum lets the delayed values be amplified by it
                (results/host-topk.md: training diverged). Two kinds:
                "global" (the default): the result is the velocity of the sum, R = g + m R'
                (R' the last step's result, the same on every rank), and each rank owes its
                share of m R' beside its gradient: m R' / K for op sum, m R' for avg. The
                momentum goes through the selection and the residual as the gradients do,
                as in Global Momentum Compression (Zhao et al.); at density 1 it is
                momentum SGD. "local": Deep Gradient Compression's momentum correction. A
                rank keeps its own velocity u = m u + g and accumulates u, not g, into what
                it owes; what it sends has its velocity cleared too (momentum factor
                masking). Global is the one that converges here (results/host-topk.md).

On the cuda device (Numba device arrays; kernels/topk.py) the same rules give the same
bits: the passes over the bucket (the momentum and residual updates, the candidates above
the threshold, the message, the combine) are kernels; the sample and the candidates (a few
thousand values) come to the host, which picks the exact k among them.
"""

from __future__ import annotations

import numbers

import numpy as np
from numba import njit

SAMPLE_FRACTION = 0.01  # of the bucket sampled for the threshold (DGC: 0.1-1%)
SAMPLE_MIN = 4096  # values sampled at least (all of a bucket smaller than this)
MARGIN = 1.25  # the sample's threshold aims at this many times k candidates
MOMENTUM_KINDS = ("global", "local")  # what momentum=m carries (the module's docstring)


def a_density(density) -> bool:
    """Whether density is a fraction top-k can send: a number, 0 < density <= 1 (not a
    bool, a string or NaN, whose comparisons raised or passed)."""
    return isinstance(density, numbers.Real) and not isinstance(density, bool) and \
        0 < density <= 1


def check_momentum(momentum: float, kind: str, feedback: bool) -> None:
    """Raise ValueError where momentum_kind is none of MOMENTUM_KINDS, momentum is not a
    number in [0, 1), or it is asked for without error feedback (the buckets', the DDP
    hook's, one bucket's)."""
    if isinstance(momentum, bool) or not isinstance(momentum, numbers.Real) or \
            not 0 <= momentum < 1:
        raise ValueError(f"momentum: a number, 0 <= momentum < 1, got {momentum!r}")
    if kind not in MOMENTUM_KINDS:
        raise ValueError(f"momentum_kind: one of {', '.join(MOMENTUM_KINDS)}, got {kind!r}")
    if momentum and not feedback:
        raise ValueError("momentum: top-k's momentum goes with error_feedback")


def _device_zeros(n: int, dtype):
    from numba import cuda
    return cuda.to_device(np.zeros(n, dtype))


def k_of(n: int, density: float) -> int:
    """The values a bucket of n sends at `density` (0 < density <= 1): density x n
    rounded to the nearest, at least one where n > 0."""
    return 0 if n == 0 else min(n, max(1, int(round(n * density))))


@njit(cache=True)
def _above(v, t, out):
    """Write the indices i of |v[i]| >= t (or NaN) into out, as many as fit, in order; how
    many there are. One pass, compiled: the bucket's only full pass of the selection."""
    c = 0
    for i in range(v.size):
        if not abs(v[i]) < t:  # (NaN too: it goes, as the dense sum would keep it)
            if c < out.size:
                out[c] = i
            c += 1
    return c


def _magnitudes(a: np.ndarray) -> np.ndarray:
    mag = np.abs(a.astype(np.float64))
    mag[np.isnan(mag)] = np.inf
    return mag


def sampling(n: int) -> tuple[int, int]:
    """(step, size) of the strided sample of a bucket of n the threshold is guessed from:
    v[::step], size values."""
    step = max(1, n // max(SAMPLE_MIN, int(n * SAMPLE_FRACTION)))
    return step, -(-n // step)


def guess(sample: np.ndarray, n: int, k: int) -> np.float32:
    """The threshold that should leave about MARGIN k candidates above it: the matching
    order statistic of the sample's magnitudes."""
    want = min(sample.size, int(np.ceil(k / n * sample.size * MARGIN)) + 1)
    return np.float32(np.partition(sample, sample.size - want)[sample.size - want])


def exact(cand: np.ndarray, magnitudes: np.ndarray, k: int) -> np.ndarray:
    """The k largest of the candidates `cand` (ascending indices) by their magnitudes, ties
    at the k-th to the lower indices: ascending, int32."""
    kth = np.partition(magnitudes, magnitudes.size - k)[magnitudes.size - k]
    above = cand[magnitudes > kth]
    at = cand[magnitudes == kth][:k - above.size]  # ties: the lower indices
    return np.sort(np.concatenate([above, at])).astype(np.int32)


class _OnHost:
    """select's passes over a NumPy bucket."""

    @staticmethod
    def sample(v, step: int, size: int) -> np.ndarray:
        return _magnitudes(v[::step])

    @staticmethod
    def above(v, t, room: int):
        cand = np.empty(room, np.int64)
        return _above(v, t, cand), cand

    @staticmethod
    def candidates(cand, count: int) -> np.ndarray:
        return cand[:count]  # in order already

    @staticmethod
    def values(v, cand: np.ndarray) -> np.ndarray:
        return v[cand]

    @staticmethod
    def whole(v) -> np.ndarray:
        return v


class _OnGpu:
    """select's passes over a bucket on the GPU (kernels/topk.py): the sample and the
    candidates come to the host."""

    @staticmethod
    def sample(v, step: int, size: int) -> np.ndarray:
        from kernels import topk as gpu
        return gpu.sample(v, step, size)

    @staticmethod
    def above(v, t, room: int):
        from kernels import topk as gpu
        return gpu.above(v, t, room)

    @staticmethod
    def candidates(cand, count: int) -> np.ndarray:
        return np.sort(cand.copy_to_host()[:count])  # (the kernel appends in no order)

    @staticmethod
    def values(v, cand: np.ndarray) -> np.ndarray:
        from numba import cuda

        from kernels import topk as gpu
        return gpu.gather(v, cuda.to_device(cand), cand.size)

    @staticmethod
    def whole(v) -> np.ndarray:
        return v.copy_to_host()


def select(v, k: int, passes=_OnHost) -> np.ndarray:
    """The indices of the k largest |v| (NaN as the largest; ties to the lower index),
    ascending, int32. passes: where the passes over v run (the host's, or _OnGpu's)."""
    n = v.size
    if k <= 0:
        return np.empty(0, np.int32)
    if k >= n:
        return np.arange(n, dtype=np.int32)
    step, size = sampling(n)
    t = guess(passes.sample(v, step, size), n, k)
    room = max(2 * k, 64)
    count, cand = passes.above(v, t, room)
    if count > room:  # the sample underestimated: more candidates than room
        count, cand = passes.above(v, t, count)
    if count >= k:
        cand = passes.candidates(cand, count)
        values = passes.values(v, cand)
    else:  # the sample overestimated: the whole bucket's exact threshold
        cand, values = np.arange(n), passes.whole(v)
    return exact(cand, _magnitudes(values), k)


def select_on_gpu(v, k: int) -> np.ndarray:
    """select's indices for a bucket on the GPU (kernels/topk.py): the passes over the
    bucket there, the sample and the candidates on the host, chosen by the same rules."""
    return select(v, k, _OnGpu)


def warm() -> None:
    """Compile (or load from Numba's cache) the candidate pass now, not in a first step."""
    _above(np.zeros(1, np.float32), np.float32(0), np.empty(1, np.int64))


def combine(out: np.ndarray, indices: list, values: list, avg: bool) -> None:
    """out = the sum, in rank order, of the K sparse contributions (indices[q], values[q]);
    divided by K for avg."""
    out[...] = 0
    for idx, val in zip(indices, values):
        out[idx] += val  # a rank's indices are distinct: no repeated index within one add
    if avg:
        np.divide(out, len(indices), out=out)


class TopKReduce:
    """One bucket's top-k all-reduce over communicator `comm` (GradientBuckets'
    compression="topk"): start() selects and starts the all-gather, finish() combines."""

    def __init__(self, comm, flat: np.ndarray, density: float, feedback: bool,
                 momentum: float = 0.0, momentum_kind: str = "global"):
        if flat.dtype != np.float32:
            raise TypeError(f"compression='topk': float32 buckets only, got {flat.dtype}")
        self.comm, self.flat = comm, flat
        self.gpu = not isinstance(flat, np.ndarray)
        zeros = _device_zeros if self.gpu else np.zeros
        self.k = k_of(flat.size, density)
        # the message: k indices (int32), then k values (float32 bits)
        self.message = zeros(2 * self.k, np.int32)
        self.gathered = zeros(comm.size * 2 * self.k, np.int32)
        self.residual = zeros(flat.size, np.float32) if feedback else None
        check_momentum(momentum, momentum_kind, feedback)
        self.momentum = np.float32(momentum)
        local = bool(momentum) and momentum_kind == "local"
        # local: this rank's velocity; global: its share of m x the last result, owed next
        self.velocity = zeros(flat.size, np.float32) if local else None
        self.carry = zeros(flat.size, np.float32) if momentum and not local else None
        self._avg = None  # global momentum: the op of every step (avg, or sum)
        self._work = None

    def set_density(self, density: float) -> None:
        """Send k_of(n, density) values from the next step on (Deep Gradient Compression's
        sparsity warm-up): the message buffers resized, the residual, velocity and carry kept.
        Every rank sets the same density at the same step (the all-gather's sizes must
        agree: otherwise its MismatchError, on every rank)."""
        k = k_of(self.flat.size, density)
        if k != self.k:
            zeros = _device_zeros if self.gpu else np.zeros
            self.k = k
            self.message = zeros(2 * k, np.int32)
            self.gathered = zeros(self.comm.size * 2 * k, np.int32)

    def state(self) -> dict:
        """What this rank carries from step to step, one value per bucket value, by name:
        the residual, velocity and carry that it keeps."""
        return {name: a for name, a in (("residual", self.residual),
                                        ("velocity", self.velocity),
                                        ("carry", self.carry)) if a is not None}

    def sent_bytes(self) -> int:
        """What this rank puts on the wire per step: its pairs."""
        return self.message.nbytes

    def start(self):
        """Select this step's pairs (from the bucket plus the residual, with feedback) and
        start the all-gather (async_op)."""
        if self.gpu:
            return self._start_on_gpu()
        v = self.flat
        if self.velocity is not None:  # momentum correction: owe the velocity, not g
            self.velocity *= self.momentum
            self.velocity += self.flat
            v = self.velocity
        if self.residual is not None:
            self.residual += v  # what is owed: the bucket and everything unsent
            if self.carry is not None:
                self.residual += self.carry  # and this rank's share of the momentum
            v = self.residual
        idx = select(v, self.k)
        k = self.k
        self.message[:k] = idx
        self.message[k:].view(np.float32)[...] = v[idx]
        if self.residual is not None:
            self.residual[idx] = 0  # sent: no longer owed
        if self.velocity is not None:
            self.velocity[idx] = 0  # momentum factor masking
        self._work = self.comm.allgather(self.message, out=self.gathered, async_op=True)
        return self._work

    def _start_on_gpu(self):
        from numba import cuda

        from kernels import topk as gpu
        gpu.owe(self.flat, self.velocity, self.residual, self.momentum, self.carry)
        v = self.residual if self.residual is not None else \
            self.velocity if self.velocity is not None else self.flat
        idx = select_on_gpu(v, self.k)
        if self.k:
            gpu.pack(self.message, cuda.to_device(idx), v, self.residual, self.velocity)
        self._work = self.comm.allgather(self.message, out=self.gathered, async_op=True)
        return self._work

    def share(self, avg: bool) -> np.float32:
        """Global momentum: the factor of the result each rank owes next step (m / K for
        op sum, m for avg: the K shares add up to m x the result)."""
        return self.momentum if avg else np.float32(float(self.momentum) / self.comm.size)

    def finish(self, avg: bool) -> None:
        """Wait for the all-gather, and combine_gathered(avg)."""
        self._work.wait()
        self.combine_gathered(avg)

    def combine_gathered(self, avg: bool) -> None:
        """Write the combined sum of the all-gathered pairs into the bucket (global
        momentum: and this rank's share of it into the carry), once the all-gather has
        run: what finish() does after its wait, and what a done callback of the
        all-gather's Work calls (there a wait would wait for the callback itself)."""
        self._work = None
        if self.carry is not None:  # (the share owed depends on it)
            if self._avg is not None and avg != self._avg:
                raise ValueError("global momentum: the op changed between steps (sum and "
                                 "avg); a bucket keeps one")
            self._avg = avg
        if self.gpu:
            from kernels import topk as gpu
            gpu.combine(self.flat, self.gathered, self.k, self.comm.size, avg)
            if self.carry is not None:
                gpu.scale(self.carry, self.flat, self.share(avg))
            return
        rows = self.gathered.reshape(self.comm.size, 2 * self.k)
        combine(self.flat, [r[:self.k] for r in rows],
                [r[self.k:].view(np.float32) for r in rows], avg)
        if self.carry is not None:
            np.multiply(self.flat, self.share(avg), out=self.carry)
