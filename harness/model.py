"""The alpha-beta model (T = alpha + beta * n) fitted to a sweep, and what it predicts.

    python -m harness model results/latest.json [--min-bytes 64K] [--max-bytes 1G]
    python -m harness model FILE --predict 256M --ranks 8 --link-GBps 450

Per (implementation, collective, dtype, op), out-of-place results: fit T(S) = a + b*S by
least squares on the relative error (every size counts alike from 8 B to 1 GB). Read
through the ring:
    all-reduce      T = 2(K-1) * alpha_step + 2(K-1)/K * S / B
    reduce-scatter, all-gather: (K-1) steps and (K-1)/K of S
so alpha_step = a / steps(K) is the fixed cost of one ring step (launch, synchronisation,
one hop of latency) and B = factor(K) / b is the bus bandwidth the sweep approaches, the
figure comparable with a link's. A prediction puts another K and, if given, another link
bandwidth into the same formula: a model, marked as such, until measured.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict

import numpy as np

from .collectives import COLLECTIVES
from .sizes import parse_size


def steps(collective: str, k: int) -> int:
    return 2 * (k - 1) if collective == "allreduce" else k - 1


def factor(collective: str, k: int) -> float:
    return COLLECTIVES[collective].bus_factor(k)


def fit(sizes: np.ndarray, times_us: np.ndarray) -> tuple[float, float]:
    """(a [us], b [us per byte]) minimising the relative error; a >= 0, b >= 0."""
    w = 1.0 / times_us
    A = np.stack([w, sizes * w], axis=1)
    (a, b), *_ = np.linalg.lstsq(A, np.ones_like(times_us), rcond=None)
    if a < 0:
        a, b = 0.0, float(np.sum(sizes * w) / np.sum((sizes * w) ** 2))
    if b < 0:
        a, b = float(np.sum(w) / np.sum(w * w)), 0.0
    return float(a), float(b)


def applies(sizes, err, inside, tolerance):
    """(first, last) size of the longest run of consecutive in-window sizes whose error is
    within tolerance: where the fitted line describes the measurement."""
    best, start = (None, None, 0), None
    for i, ok in enumerate(list((np.abs(err) <= tolerance) & inside) + [False]):
        if ok and start is None:
            start = i
        if not ok and start is not None:
            if i - start > best[2]:
                best = (sizes[start], sizes[i - 1], i - start)
            start = None
    return best[0], best[1]


def series(records: list[dict]) -> dict[tuple, list[dict]]:
    out = defaultdict(list)
    for r in records:
        if r.get("skipped") or r["in_place"] or not r["time_us"] or math.isnan(r["time_us"]):
            continue
        out[(r["impl"], r["collective"], r["dtype"], r["op"])].append(r)
    return {k: sorted(v, key=lambda r: r["nbytes"]) for k, v in out.items()}


def report(path: str, min_bytes: int, max_bytes: int, predict: int | None, ranks: int | None,
           link: float | None, tolerance: float = 0.15) -> str:
    with open(path) as f:
        data = json.load(f)
    k = data["meta"]["ranks"]
    lines = [f"# {path}: {k} ranks, {data['meta'].get('gpu') or 'host'}; "
             f"fit window {min_bytes} .. {max_bytes} bytes"]
    for (impl, coll, dtype, op), recs in series(data["results"]).items():
        sizes = np.array([r["nbytes"] for r in recs], float)
        times = np.array([r["time_us"] for r in recs], float)
        inside = (sizes >= min_bytes) & (sizes <= max_bytes) & (sizes > 0)
        if inside.sum() < 2:
            lines.append(f"\n{impl} {coll} {dtype} {op}: fewer than 2 sizes in the window")
            continue
        a, b = fit(sizes[inside], times[inside])
        n_steps = max(steps(coll, k), 1)
        bus = factor(coll, k) / b / 1e3 if b > 0 else float("inf")  # bytes/us -> GB/s
        pred = a + b * sizes
        err = (pred - times) / times
        worst = float(np.max(np.abs(err[inside])))
        lines.append(f"\n{impl} {coll} {dtype} {op}: alpha = {a:.2f} us "
                     f"({a / n_steps:.2f} us per ring step x {n_steps}), "
                     f"bus bandwidth B = {bus:.2f} GB/s; worst error in window {worst:.1%}"
                     f" ({'within' if worst <= tolerance else 'outside'} {tolerance:.0%})")
        lo, hi = applies(sizes, err, inside, tolerance)
        if lo is not None:
            lines.append(f"  the line describes the sweep within {tolerance:.0%} from {int(lo)} to "
                         f"{int(hi)} bytes (the longest run of sizes that close)")
        lines.append(f"  {'size (B)':>12} {'measured us':>12} {'model us':>12} {'error':>8}")
        for s, t, p, e, ins in zip(sizes, times, pred, err, inside):
            mark = "" if ins else "  (outside the fit window)"
            lines.append(f"  {int(s):>12} {t:>12.1f} {p:>12.1f} {e:>+8.1%}{mark}")
        if predict is not None:
            k2 = ranks or k
            b2 = link if link else bus
            t2 = steps(coll, k2) * (a / n_steps) + factor(coll, k2) * predict / (b2 * 1e3)
            lines.append(f"  prediction (model, not a measurement): {predict} B on {k2} ranks at "
                         f"{b2:.1f} GB/s per link -> {t2:.1f} us, algbw "
                         f"{predict / t2 / 1e3:.2f} GB/s, busbw {factor(coll, k2) * predict / t2 / 1e3:.2f} GB/s")
    return "\n".join(lines)


def main(argv) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness model")
    ap.add_argument("file")
    ap.add_argument("--min-bytes", type=parse_size, default=0)
    ap.add_argument("--max-bytes", type=parse_size, default=1 << 62)
    ap.add_argument("--predict", type=parse_size, help="a message size to predict")
    ap.add_argument("--ranks", type=int, help="rank count for the prediction")
    ap.add_argument("--link-GBps", dest="link", type=float, help="link bandwidth for the prediction")
    a = ap.parse_args(argv)
    print(report(a.file, a.min_bytes, a.max_bytes, a.predict, a.ranks, a.link))
    return 0
