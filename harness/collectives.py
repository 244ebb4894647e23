"""One descriptor per collective, as in nccl-tests: byte counts, bus factor, inputs and the
exact expected output. The shared harness owns sizes, timing, the check and the table.

Inputs are small integers from rank and index, so every rank computes the exact result
locally in any dtype (sums stay under 256, exact even in bfloat16; products are powers of two).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


# Every input is periodic in the index (period 4 for the reducing collectives, 199 for the
# others), and so is every reduction of them: inputs and expected outputs are one period,
# computed once, then tiled. At 1 GiB that is one pass over memory, where index arithmetic
# in int64 took seconds an array, and checking a sweep's large sizes took longer than
# running them.
REDUCE_PERIOD, MOVE_PERIOD = 4, 199


def tile(period: np.ndarray, count: int) -> np.ndarray:
    """`period` repeated over `count` elements (contiguous)."""
    return np.tile(period, -(-count // len(period)))[:count]


def fill(rank: int, count: int, dtype, op: str, seed: int = 0) -> np.ndarray:
    """Element i: (rank + i + seed) % 4, or 1 + (rank + i + seed) % 2 for prod."""
    return tile(_fill_period(rank, dtype, op, seed), count)


def _fill_period(rank: int, dtype, op: str, seed: int) -> np.ndarray:
    i = np.arange(REDUCE_PERIOD, dtype=np.int64) + seed
    vals = 1 + (rank + i) % 2 if op == "prod" else (rank + i) % 4
    return vals.astype(dtype)


def _reduce(nranks: int, count: int, dtype, op: str, seed: int) -> np.ndarray:
    fn = {"sum": np.add, "avg": np.add, "prod": np.multiply, "min": np.minimum,
          "max": np.maximum}[op]
    acc = _fill_period(0, dtype, op, seed)
    for q in range(1, nranks):
        fn(acc, _fill_period(q, dtype, op, seed), out=acc)
    if op == "avg":
        np.divide(acc, nranks, out=acc)
    return tile(acc, count)


@dataclass(frozen=True)
class Descriptor:
    """A collective as the harness times it (nccl-tests' descriptor): its name, whether it
    reduces, how its buffers relate to the sweep's size, its root and bus factor."""

    name: str
    reduces: bool
    # how the input and output relate to the sweep's size S (bytes), as nccl-tests reads
    # it: "same" both S (all-reduce, broadcast, reduce, all-to-all); "split" the input is S
    # and the output its K-th (reduce-scatter, scatter); "join" the input is the K-th and
    # the output S (all-gather, gather)
    layout: str = "same"
    rooted: bool = False  # -r names the root
    chain: bool = False  # every link carries the array once: busbw = algbw

    def counts(self, nbytes: int, itemsize: int, nranks: int) -> tuple[int, int]:
        """(input count, output count) per rank for a sweep size in bytes."""
        n = nbytes // itemsize
        if self.layout == "same" and self.name != "alltoall":
            return n, n
        n -= n % nranks
        if self.layout == "split":
            return n, n // nranks
        if self.layout == "join":
            return n // nranks, n
        return n, n  # all-to-all: K blocks in and out

    def min_bytes(self, in_count: int, out_count: int, itemsize: int, nranks: int) -> int:
        """The bytes of memory traffic any implementation must make when every rank shares
        one GPU: each rank reads its input once and writes its output once, where it has
        them (the root's only, for the rooted ones; broadcast is in place: the root reads,
        the others write). All-reduce: 2 K N."""
        i, o, k = in_count * itemsize, out_count * itemsize, nranks
        if self.name == "broadcast":
            return k * i
        if self.name in ("reduce", "gather"):
            return k * i + o
        if self.name == "scatter":
            return i + k * o
        return k * (i + o)

    def size_bytes(self, in_count: int, out_count: int, itemsize: int) -> int:
        return max(in_count, out_count) * itemsize

    def bus_factor(self, nranks: int) -> float:
        """nccl-tests' factors: all-reduce 2(K-1)/K; broadcast and reduce 1; reduce-scatter,
        all-gather, gather, scatter and all-to-all (K-1)/K."""
        if nranks == 1 or self.chain:
            return 1.0
        if self.name == "allreduce":
            return 2 * (nranks - 1) / nranks
        return (nranks - 1) / nranks

    def input(self, rank: int, in_count: int, dtype, op: str, seed: int = 0) -> np.ndarray:
        if self.reduces:
            return fill(rank, in_count, dtype, op, seed)
        # the collectives that move data: distinct values per rank, so data from the wrong
        # rank or landing in the wrong place shows
        i = np.arange(MOVE_PERIOD, dtype=np.int64)
        return tile(((i + 7 * rank + seed) % MOVE_PERIOD).astype(dtype), in_count)

    def expected(self, rank: int, nranks: int, in_count: int, dtype, op: str,
                 seed: int = 0, root: int = 0) -> np.ndarray | None:
        """What rank's output must hold; None where it is not defined (reduce and gather off
        the root)."""
        def inp(q):
            return self.input(q, in_count, dtype, op, seed)

        b = in_count // nranks
        if self.name == "broadcast":
            return inp(root)
        if self.name in ("reduce", "gather") and rank != root:
            return None
        if self.name in ("allgather", "gather"):
            return np.concatenate([inp(q) for q in range(nranks)])
        if self.name == "scatter":
            return inp(root)[rank * b:(rank + 1) * b]
        if self.name == "alltoall":
            return np.concatenate([inp(q)[rank * b:(rank + 1) * b] for q in range(nranks)])
        full = _reduce(nranks, in_count, dtype, op, seed)
        if self.name in ("allreduce", "reduce"):
            return full
        return full[rank * b:(rank + 1) * b]

    def in_place_views(self, buf: np.ndarray, rank: int, in_count: int, out_count: int):
        """(x, out) views of one buffer for the in-place run, as NCCL and MPI place them;
        where they are the same memory, one array passed as both (Python's out=x)."""
        if self.layout == "same":
            view = buf[:in_count]
            return view, view
        if self.layout == "split":
            return buf[:in_count], buf[rank * out_count:(rank + 1) * out_count]
        return buf[rank * in_count:(rank + 1) * in_count], buf[:out_count]


COLLECTIVES = {c.name: c for c in (
    Descriptor("allreduce", True),
    Descriptor("reduce_scatter", True, "split"),
    Descriptor("allgather", False, "join"),
    Descriptor("broadcast", False, rooted=True, chain=True),
    Descriptor("reduce", True, rooted=True, chain=True),
    Descriptor("gather", False, "join", rooted=True),
    Descriptor("scatter", False, "split", rooted=True),
    Descriptor("alltoall", False),
)}
# nccl-tests' names (its binaries are all_reduce_perf, all_gather_perf, ...) for the same
ALIASES = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reduce_scatter",
           "all_to_all": "alltoall", **{f"{n}_perf": n for n in ("broadcast", "reduce", "gather",
                                                                  "scatter", "alltoall")},
           "all_reduce_perf": "allreduce", "all_gather_perf": "allgather",
           "reduce_scatter_perf": "reduce_scatter"}
