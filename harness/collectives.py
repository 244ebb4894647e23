"""One descriptor per collective, as in nccl-tests: byte counts, bus factor, inputs and the
exact expected output. The shared harness owns sizes, timing, the check and the table.

Inputs are small integers from rank and index, so every rank computes the exact result
locally in any dtype (sums stay under 256, exact even in bfloat16; products are powers of two).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def fill(rank: int, count: int, dtype, op: str, seed: int = 0) -> np.ndarray:
    i = np.arange(count, dtype=np.int64) + seed
    vals = 1 + (rank + i) % 2 if op == "prod" else (rank + i) % 4
    return vals.astype(dtype)


def _reduce(nranks: int, count: int, dtype, op: str, seed: int) -> np.ndarray:
    fn = {"sum": np.add, "avg": np.add, "prod": np.multiply, "min": np.minimum,
          "max": np.maximum}[op]
    acc = fill(0, count, dtype, op, seed)
    for q in range(1, nranks):
        fn(acc, fill(q, count, dtype, op, seed), out=acc)
    if op == "avg":
        np.divide(acc, nranks, out=acc)
    return acc


@dataclass(frozen=True)
class Collective:
    name: str
    reduces: bool
    rooted: bool = False  # broadcast and reduce: -r names the root

    def counts(self, nbytes: int, itemsize: int, nranks: int) -> tuple[int, int]:
        """(input count, output count) per rank for a sweep size in bytes, as nccl-tests
        reads it: all-reduce = bytes per rank; reduce-scatter / all-gather = the whole array."""
        n = nbytes // itemsize
        if self.name == "allreduce" or self.rooted:
            return n, n
        n -= n % nranks
        if self.name == "reduce_scatter":
            return n, n // nranks
        return n // nranks, n

    def size_bytes(self, in_count: int, out_count: int, itemsize: int) -> int:
        return max(in_count, out_count) * itemsize

    def bus_factor(self, nranks: int) -> float:
        if nranks == 1 or self.rooted:  # a chain: every link carries the array once
            return 1.0
        if self.name == "allreduce":
            return 2 * (nranks - 1) / nranks
        return (nranks - 1) / nranks

    def input(self, rank: int, in_count: int, dtype, op: str, seed: int = 0) -> np.ndarray:
        if self.reduces:
            return fill(rank, in_count, dtype, op, seed)
        # all-gather and broadcast: distinct values per rank, so data from the wrong rank
        # or landing in the wrong place shows
        return ((np.arange(in_count, dtype=np.int64) + 7 * rank + seed) % 199).astype(dtype)

    def expected(self, rank: int, nranks: int, in_count: int, dtype, op: str,
                 seed: int = 0, root: int = 0) -> np.ndarray | None:
        """What rank's output must hold; None where it is not defined (reduce off the root)."""
        if self.name == "broadcast":
            return self.input(root, in_count, dtype, op, seed)
        if self.name == "reduce" and rank != root:
            return None
        if self.name == "allgather":
            return np.concatenate([self.input(q, in_count, dtype, op, seed) for q in range(nranks)])
        full = _reduce(nranks, in_count, dtype, op, seed)
        if self.name in ("allreduce", "reduce"):
            return full
        n = in_count // nranks
        return full[rank * n:(rank + 1) * n]

    def in_place_views(self, buf: np.ndarray, rank: int, in_count: int, out_count: int):
        """(x, out) views of one buffer for the in-place run, as NCCL places them."""
        if self.name == "allreduce" or self.rooted:
            return buf[:in_count], buf[:in_count]
        if self.name == "reduce_scatter":
            return buf[:in_count], buf[rank * out_count:(rank + 1) * out_count]
        return buf[rank * in_count:(rank + 1) * in_count], buf[:out_count]


COLLECTIVES = {c.name: c for c in (
    Collective("allreduce", True),
    Collective("reduce_scatter", True),
    Collective("allgather", False),
    Collective("broadcast", False, rooted=True),
    Collective("reduce", True, rooted=True),
)}
