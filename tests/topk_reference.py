"""Top-K sparsification by its definition, with plain NumPy and nothing of ring/: the k
largest magnitudes by a full sort (ties to the lower index), each rank's (index, value)
pairs summed densely in rank order, error feedback's residual carried step to step."""

from __future__ import annotations

import numpy as np


def top(v: np.ndarray, k: int) -> np.ndarray:
    """The indices of the k largest |v| (NaN as the largest), ties to the lower index,
    ascending."""
    mag = np.abs(v.astype(np.float64))
    mag[np.isnan(mag)] = np.inf
    order = np.lexsort((np.arange(v.size), -mag))  # by magnitude down, then index up
    return np.sort(order[:k])


class TopKBucket:
    """Every rank's residual for one bucket; step() -> the combined result of one step."""

    def __init__(self, n: int, k_ranks: int, k: int, feedback: bool, momentum: float = 0.0,
                 kind: str = "global"):
        """momentum, kind "local": Deep Gradient Compression's momentum correction (Lin et
        al. 2018, algorithm 4): u = m u + g, v = v + u, send the top of v, clear v and u
        there. Kind "global": every rank owes, beside its gradient, its share of m x the
        last step's result (m / K of it for a sum, m for an average)."""
        self.k, self.feedback, self.m = k, feedback, np.float32(momentum)
        self.local = kind == "local"
        self.residual = [np.zeros(n, np.float32) for _ in range(k_ranks)]
        self.velocity = [np.zeros(n, np.float32) for _ in range(k_ranks)]
        self.last = np.zeros(n, np.float32)

    def step(self, buckets: list, avg: bool) -> np.ndarray:
        out = np.zeros(buckets[0].size, np.float32)
        share = self.m if avg else np.float32(float(self.m) / len(buckets))
        for q, b in enumerate(buckets):  # rank order
            if self.m and self.local:
                self.velocity[q] = self.m * self.velocity[q] + b
                b = self.velocity[q]
            v = (self.residual[q] + b) if self.feedback else b.copy()
            if self.m and not self.local:
                v = v + self.last * share
            idx = top(v, self.k)
            out[idx] += v[idx]
            if self.feedback:
                self.residual[q] = v
                self.residual[q][idx] = 0
            if self.m:
                self.velocity[q][idx] = 0
        if avg:
            out /= np.float32(len(buckets))
        self.last = out.copy()
        return out
