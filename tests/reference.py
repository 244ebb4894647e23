"""Exact references: what each algorithm must produce, bit for bit, in any dtype.

A reduction in float16 or float32 rounds after every step, so its bits depend on the
order in which the ranks' values are combined. Each algorithm documents that order; this
module follows the documentation (ring/schedule.py, ring/algorithms/hierarchical.py) with plain NumPy
and shares no code with ring/, so that a bug in the library's arithmetic, its block
boundaries or its ordering cannot hide behind the same bug in the reference.

The orders, for K ranks:
- flat ring all-reduce and reduce-scatter: the array is cut into K blocks (`split`); block
  b is reduced as ((x[b+1] op x[b+2]) op ...) op x[b], indices mod K;
- two-level, N nodes of L consecutive ranks: element e lies in inner block j (of the L
  blocks of the whole array, or of the node's share) and, inside it, in outer block c (of
  N); each node's partial is the flat-ring order over its own ranks starting after local
  rank j, and the partials are combined in the flat-ring order over nodes starting after
  node c;
- reduce, a chain along the ring: x[root+1] op x[root+2] op ... op x[root];
- naive, ps, oneshot, twoshot: rank order, ((x[0] op x[1]) op x[2]) ... op x[K-1];
- tree: per half of the array, up a binary heap of ranks (tree below);
- avg: the sum in that order, then one division by K in the dtype;
- compression (float32 data, a 16-bit wire): the flat ring's order, the partial rounded
  to the wire type before every hop and summed in float32 with the next rank's value; an
  all-reduce rounds the final sum too, a reduce-scatter keeps it (`compressed`). Its
  two-level all-reduce: each node's float32 partial of inner block j exactly as the
  two-level order above, then those N partials through the compressed ring over nodes
  (outer blocks of the inner block; avg divides by K);
Gather, scatter and all-to-all only move data: block j of rank i's input lands at block i
of rank j's output (gather: all at the root; scatter: the root's blocks, one per rank).
Every step is `partial op own` in the dtype: np.add / np.multiply / np.minimum /
np.maximum with out= in the inputs' dtype (float16 and ml_dtypes' bfloat16 round each
step, as the GPU kernels do).
"""

from __future__ import annotations

import numpy as np

UFUNC = {"sum": np.add, "avg": np.add, "prod": np.multiply, "min": np.minimum,
         "max": np.maximum}


def split(count: int, parts: int, align: int = 1) -> list[int]:
    """Block boundaries as documented in ring/schedule.py: inner boundaries at
    floor(units * i / parts) * align, units = count // align; the last block takes the rest."""
    units = count // align
    return [units * i // parts * align for i in range(parts)] + [count]


def _after(start: int, k: int) -> list[int]:
    """start, start+1, ..., start-1 (mod k): the ring order beginning at `start`."""
    return [(start + i) % k for i in range(k)]


def fold(parts: list[np.ndarray], op: str, order: list[int]) -> np.ndarray:
    """((parts[o0] op parts[o1]) op parts[o2]) ... in the parts' dtype."""
    acc = parts[order[0]].copy()
    with np.errstate(all="ignore"):  # integers wrap and inf - inf is NaN, as on the device
        for q in order[1:]:
            UFUNC[op](acc, parts[q], out=acc)
    return acc


def _finish(acc: np.ndarray, op: str, k: int) -> np.ndarray:
    if op == "avg":
        with np.errstate(all="ignore"):
            np.divide(acc, k, out=acc)
    return acc


def _two_level(inputs, op: str, nodes: int, lo: int, hi: int, inner: int, outer: int):
    """Elements [lo, hi) of inner block `inner` and outer block `outer`, not yet divided."""
    per = len(inputs) // nodes
    partial = "sum" if op == "avg" else op
    node_sums = [fold([x[lo:hi] for x in inputs[a * per:(a + 1) * per]], partial,
                      _after(inner + 1, per)) for a in range(nodes)]
    return fold(node_sums, partial, _after(outer + 1, nodes))


def in_rank_order(inputs: list[np.ndarray], op: str) -> np.ndarray:
    """naive, ps, oneshot, twoshot and cma: every element folded over ranks 0, 1, ..., K-1."""
    partial = "sum" if op == "avg" else op
    return _finish(fold(inputs, partial, list(range(len(inputs)))), op, len(inputs))


RANK_ORDER = ("naive", "ps", "oneshot", "twoshot", "cma")


def tree(inputs: list[np.ndarray], op: str) -> np.ndarray:
    """The double binary tree: the first half of the array reduced over the heap of ranks
    0, 1, ..., K-1 (children of position p at 2p+1, 2p+2), the second half over the same
    heap of ranks K-1, K-2, ..., 0; each position's value is (own op left) op right."""
    k, n = len(inputs), inputs[0].size
    partial = "sum" if op == "avg" else op
    out = np.empty_like(inputs[0])
    for t, (lo, hi) in enumerate([(0, n // 2), (n // 2, n)]):
        rank_at = (lambda p: k - 1 - p) if t else (lambda p: p)

        def value(p, lo=lo, hi=hi, rank_at=rank_at):
            parts = [inputs[rank_at(p)][lo:hi]] + [value(c) for c in (2 * p + 1, 2 * p + 2)
                                                    if c < k]
            return fold(parts, partial, list(range(len(parts))))

        out[lo:hi] = value(0)
    return _finish(out, op, k)


def allreduce(inputs: list[np.ndarray], op: str, nodes: int = 1, align: int = 1) -> np.ndarray:
    """The all-reduce every rank must hold. nodes=1: the flat ring, its blocks cut at
    multiples of `align` elements (the GPU aligns them to 16 bytes); nodes=N: the two-level
    algorithm (its blocks are never aligned)."""
    k, n = len(inputs), inputs[0].size
    if k % nodes:
        raise ValueError(f"{k} ranks do not make {nodes} equal nodes")
    out = np.empty_like(inputs[0])
    inner = split(n, k // nodes, align if nodes == 1 else 1)
    for j in range(k // nodes):
        outer = split(inner[j + 1] - inner[j], nodes)
        for c in range(nodes):
            lo, hi = inner[j] + outer[c], inner[j] + outer[c + 1]
            out[lo:hi] = _two_level(inputs, op, nodes, lo, hi, j, c)
    return _finish(out, op, k)


def reduce_scatter(inputs: list[np.ndarray], op: str, nodes: int = 1) -> list[np.ndarray]:
    """Rank r's block r of the reduction, in the order its algorithm reduces it."""
    k, n = len(inputs), inputs[0].size
    b, per = n // k, k // nodes
    return [_finish(_two_level(inputs, op, nodes, r * b, (r + 1) * b, r % per, r // per), op, k)
            for r in range(k)]


def reduce(inputs: list[np.ndarray], op: str, root: int) -> np.ndarray:
    """The root's result of the chain."""
    partial = "sum" if op == "avg" else op
    return _finish(fold(inputs, partial, _after(root + 1, len(inputs))), op, len(inputs))


def compressed(inputs: list[np.ndarray], op: str, wire, collective: str = "allreduce",
               nodes: int = 1, divisor: int | None = None):
    """compression=: the all-reduce every rank holds, or the list of reduce-scatter blocks;
    nodes=N: the two-level all-reduce. Rounding is NumPy's / ml_dtypes' astype (nearest
    even); avg divides in float32, by `divisor` (default: the ranks given)."""
    k, n = len(inputs), inputs[0].size
    f32 = np.float32
    if nodes > 1:
        per, out = k // nodes, np.empty(n, f32)
        inner = split(n, per)
        for j in range(per):
            lo, hi = inner[j], inner[j + 1]
            partials = [fold([x[lo:hi] for x in inputs[a * per:(a + 1) * per]], "sum",
                             _after(j + 1, per)) for a in range(nodes)]
            out[lo:hi] = compressed(partials, op, wire, divisor=k)
        return out
    divisor = k if divisor is None else divisor

    def block(lo, hi, b, settle):
        order = _after(b + 1, k)
        if k == 1:
            return inputs[0][lo:hi].copy()
        acc = inputs[order[0]][lo:hi].astype(wire)
        for q in order[1:-1]:
            acc = (acc.astype(f32) + inputs[q][lo:hi]).astype(wire)
        total = acc.astype(f32) + inputs[order[-1]][lo:hi]
        return total.astype(wire).astype(f32) if settle else total

    def finish(a):
        return np.divide(a, f32(divisor), dtype=f32) if op == "avg" else a

    if collective == "reduce_scatter":
        b = n // k
        return [finish(block(r * b, (r + 1) * b, r, False)) for r in range(k)]
    bounds = split(n, k)
    return finish(np.concatenate([block(bounds[b], bounds[b + 1], b, True) for b in range(k)]))


def allgather(inputs: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(inputs)


def expected(collective: str, inputs: list[np.ndarray], op: str = "sum", nodes: int = 1,
             align: int = 1, root: int = 0) -> list[np.ndarray | None]:
    """Every rank's exact result (None where a rank gets none: reduce off the root)."""
    k = len(inputs)
    if collective == "allreduce":
        return [allreduce(inputs, op, nodes, align)] * k
    if collective == "reduce_scatter":
        return reduce_scatter(inputs, op, nodes)
    if collective == "allgather":
        return [allgather(inputs)] * k
    if collective == "broadcast":
        return [inputs[root]] * k
    if collective == "reduce":
        return [reduce(inputs, op, root) if r == root else None for r in range(k)]
    if collective == "gather":
        return [allgather(inputs) if r == root else None for r in range(k)]
    b = inputs[0].size // k
    if collective == "scatter":
        return [inputs[root][r * b:(r + 1) * b] for r in range(k)]
    if collective == "alltoall":
        return [np.concatenate([x[r * b:(r + 1) * b] for x in inputs]) for r in range(k)]
    raise ValueError(f"no reference for {collective!r}")
