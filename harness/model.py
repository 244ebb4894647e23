"""The alpha-beta model (T = alpha + beta * n) fitted to a sweep, and what it predicts.

    python -m harness model results/latest.json [--min-bytes 64K] [--max-bytes 1G]
    python -m harness model FILE --predict 256M --ranks 8 --link-GBps 450
    python -m harness model FILE --segments 2     # also a line per regime
    python -m harness model RUN1.json RUN2.json RUN3.json   # the best time of each point
    python -m harness model TABLE.json --segments 4   # a tuning table's measurements

Per (implementation, collective, dtype, op), out-of-place results: fit T(S) = a + b*S by
least squares on the relative error (every size counts alike from 8 B to 1 GB). Read
through the ring:
    all-reduce      T = 2(K-1) * alpha_step + 2(K-1)/K * S / B
    reduce-scatter, all-gather: (K-1) steps and (K-1)/K of S
so alpha_step = a / steps(K) is the fixed cost of one ring step (launch, synchronisation,
one hop of latency) and B = factor(K) / b is the bus bandwidth the sweep approaches, the
figure comparable with a link's. A prediction puts another K and, if given, another link
bandwidth into the same formula: a model, marked as such, until measured.

One line rarely holds from 8 B to 1 GB on a real machine: a per-call floor (Python, launch)
below, caches and memory bandwidth above. --segments 2 also fits two lines that meet at the
size where the regime changes (the split that minimises the worse of the two errors), each
with its own alpha and B and the range it describes; --segments 3 or 4, more regimes. Where a sweep has several
implementations, the report ends with the measured crossovers: the sizes between which the
faster of two implementations changes (measured, not modelled).
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from itertools import combinations

import numpy as np

from . import files
from .collectives import COLLECTIVES
from .sizes import at_least, parse_size


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


def worst_error(sizes, times, a, b) -> float:
    return float(np.max(np.abs((a + b * sizes - times) / times)))


def fit_segments(sizes: np.ndarray, times_us: np.ndarray, n: int = 2, least: int = 3):
    """[(first, last, a, b, worst)] for the n lines over consecutive runs of sizes (each of
    >= least sizes) that minimise the largest of their worst relative errors; None when
    there are too few sizes. Brute force over the split points: sweeps have ~10-20 sizes."""
    best = None
    for cuts in combinations(range(least, len(sizes) - least + 1), n - 1):
        bounds = (0, *cuts, len(sizes))
        if any(hi - lo < least for lo, hi in zip(bounds, bounds[1:])):
            continue
        parts = []
        for lo, hi in zip(bounds, bounds[1:]):
            a, b = fit(sizes[lo:hi], times_us[lo:hi])
            parts.append((sizes[lo], sizes[hi - 1], a, b,
                          worst_error(sizes[lo:hi], times_us[lo:hi], a, b)))
        score = max(p[4] for p in parts)
        if best is None or score < best[0]:
            best = (score, parts)
    return None if best is None else best[1]


def crossovers(curves: dict[str, tuple[np.ndarray, np.ndarray]], tie: float = 0.05) -> list[str]:
    """For each pair of implementations measured at the same sizes: where the faster one
    changes, as 'A faster S0 .. S1, then B faster S2 .. S3' (or which one is faster
    throughout). Sizes where the two are within `tie` of each other count for the winner
    around them: a crossover is a change of clear winner, not noise."""
    out, names = [], sorted(curves)
    for i, an in enumerate(names):
        for bn in names[i + 1:]:
            (sa, ta), (sb, tb) = curves[an], curves[bn]
            common = sorted(set(sa.tolist()) & set(sb.tolist()))
            if len(common) < 2:
                continue
            ma, mb = dict(zip(sa.tolist(), ta.tolist())), dict(zip(sb.tolist(), tb.tolist()))
            faster = [an if ma[x] * (1 + tie) < mb[x] else bn if mb[x] * (1 + tie) < ma[x]
                      else None for x in common]
            if all(f is None for f in faster):
                out.append(f"{an} vs {bn}: within {tie:.0%} of each other at every size")
                continue
            for j in list(range(1, len(faster))) + list(range(len(faster) - 2, -1, -1)):
                if faster[j] is None:  # a tie takes its neighbour's winner
                    faster[j] = faster[j - 1] if j and faster[j - 1] else faster[j + 1] \
                        if j + 1 < len(faster) else None
            runs, start = [], 0
            for j in range(1, len(common) + 1):
                if j == len(common) or faster[j] != faster[start]:
                    runs.append((faster[start], common[start], common[j - 1]))
                    start = j
            if len(runs) == 1:
                out.append(f"{an} vs {bn}: {runs[0][0]} faster at every size "
                           f"({int(common[0])} .. {int(common[-1])} B)")
            else:
                out.append(f"{an} vs {bn}: " + ", then ".join(
                    f"{w} faster {int(lo)} .. {int(hi)} B" for w, lo, hi in runs))
    return out


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


def best_of(paths: list[str]) -> dict:
    """Several sweeps of the same command as one: each point's best (lowest) time, the
    first file's metadata. Runs of one machine vary by tens of percent (other work, the
    memory system); the best of several is what the machine can do."""
    merged, data = {}, None
    for path in paths:
        d = files.sweep(path)
        data = data or d
        if d["meta"]["ranks"] != data["meta"]["ranks"]:
            raise SystemExit(f"{path}: {d['meta']['ranks']} ranks, not {data['meta']['ranks']}")
        for r in d["results"]:
            key = (r["impl"], r["collective"], r["dtype"], r["op"], r["in_place"], r["nbytes"])
            t = r.get("time_us")
            old = merged.get(key)
            if old is None or (t is not None and not math.isnan(t) and
                               (old.get("time_us") is None or t < old["time_us"])):
                merged[key] = r
    return {**data, "results": list(merged.values())}


# the algorithms' names as the harness's columns (impls.Ring.NAMES adds "auto")
TUNE_NAMES = {"ring": "ring-flat", "hierarchical": "ring-hier"}


def from_table(table: dict) -> list[dict]:
    """A tuning table's measurements (`harness tune`: interleaved rounds, each point's best)
    as sweeps, one per layout it holds: every algorithm's µs per call as float32 sum
    all-reduce results, named as the harness names them (ring-naive, ...)."""
    out = []
    for layout, m in table["measured"].items():
        # "K ranks, N node(s)", "reduce_scatter, K ranks, N node(s)", "..., registered",
        # "..., in place" (its calls modelled as any layout's: the report's title names it)
        words = [w.strip() for w in layout.split(",")]
        collective = "allreduce" if words[0][0].isdigit() else words.pop(0)
        results = [{"impl": TUNE_NAMES.get(a, f"ring-{a}"), "collective": collective,
                    "nbytes": int(s), "dtype": "float32", "op": "sum", "in_place": False,
                    "time_us": t, "skipped": None}
                   for a, v in m["us_per_call"].items() for s, t in v.items()]
        out.append({"meta": {"ranks": int(words[0].split()[0]), "layout": layout},
                    "results": results})
    return out


def report(path, min_bytes: int, max_bytes: int, predict: int | None, ranks: int | None,
           link: float | None, tolerance: float = 0.15, segments: int = 1) -> str:
    """path: a sweep's JSON, or a list of them (their best times, best_of); or a tuning
    table (`harness tune --out`), each of its layouts in turn."""
    if ranks is not None and ranks < 2:
        raise ValueError(f"a prediction is for 2 ranks or more, got {ranks}")
    if link is not None and not (math.isfinite(link) and link > 0):
        raise ValueError(f"a prediction's link rate is above 0 GB/s, got {link}")
    paths = [path] if isinstance(path, str) else list(path)
    if len(paths) == 1:
        table = files.read(paths[0])
        if "measured" in table and "rules" in table:
            return "\n\n".join(
                _report(d, f"{paths[0]} ({d['meta']['layout']}; {table.get('command')}, at "
                           f"{table.get('git_commit')})", min_bytes, max_bytes, predict,
                        ranks, link, tolerance, segments) for d in from_table(table))
    data = best_of(paths)
    path = paths[0] if len(paths) == 1 else f"best of {len(paths)}: {', '.join(paths)}"
    return _report(data, path, min_bytes, max_bytes, predict, ranks, link, tolerance, segments)


def _report(data: dict, path: str, min_bytes: int, max_bytes: int, predict: int | None,
            ranks: int | None, link: float | None, tolerance: float, segments: int) -> str:
    k = data["meta"]["ranks"]
    lines = [f"# {path}: {k} ranks, {data['meta'].get('gpu') or 'host'}; "
             f"fit window {min_bytes} .. {max_bytes} bytes"]
    curves = defaultdict(dict)  # (collective, dtype, op) -> impl -> (sizes, times)
    for (impl, coll, dtype, op), recs in series(data["results"]).items():
        sizes = np.array([r["nbytes"] for r in recs], float)
        times = np.array([r["time_us"] for r in recs], float)
        inside = (sizes >= min_bytes) & (sizes <= max_bytes) & (sizes > 0)
        curves[(coll, dtype, op)][impl] = (sizes[inside], times[inside])
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
        if segments > 1:
            parts = fit_segments(sizes[inside], times[inside], segments)
            if parts is None:
                lines.append(f"  {segments} lines: too few sizes in the window (3 each)")
            for lo, hi, a2, b2, w2 in parts or ():
                bus2 = factor(coll, k) / b2 / 1e3 if b2 > 0 else float("inf")
                lines.append(f"  line for {int(lo)} .. {int(hi)} B: alpha = {a2:.2f} us, B = "
                             f"{bus2:.2f} GB/s, worst error {w2:.1%} "
                             f"({'within' if w2 <= tolerance else 'outside'} {tolerance:.0%})")
        lines.append(f"  {'size (B)':>12} {'measured us':>12} {'model us':>12} {'error':>8}")
        for s, t, p, e, ins in zip(sizes, times, pred, err, inside):
            mark = "" if ins else "  (outside the fit window)"
            lines.append(f"  {int(s):>12} {t:>12.1f} {p:>12.1f} {e:>+8.1%}{mark}")
        if predict is not None:
            k2 = k if ranks is None else ranks
            b2 = bus if link is None else link
            t2 = steps(coll, k2) * (a / n_steps) + factor(coll, k2) * predict / (b2 * 1e3)
            lines.append(f"  prediction (model, not a measurement): {predict} B on {k2} ranks at "
                         f"{b2:.1f} GB/s per link -> {t2:.1f} us, algbw "
                         f"{predict / t2 / 1e3:.2f} GB/s, busbw {factor(coll, k2) * predict / t2 / 1e3:.2f} GB/s")
    for (coll, dtype, op), by_impl in curves.items():
        if len(by_impl) > 1:
            lines.append(f"\ncrossovers, {coll} {dtype} {op} (measured):")
            lines += [f"  {c}" for c in crossovers(by_impl)]
    return "\n".join(lines)


def _rate(text: str) -> float:
    """--link-GBps: a rate above 0 (at 0 or below the prediction has no meaning)."""
    v = float(text)
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"a rate above 0, got {text}")
    return v


def main(argv) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness model")
    ap.add_argument("file", nargs="+", help="a sweep's JSON; several: each point's best time; "
                    "or a tuning table (harness tune), every layout it measured")
    ap.add_argument("--min-bytes", type=parse_size, default=0)
    ap.add_argument("--max-bytes", type=parse_size, default=1 << 62)
    ap.add_argument("--predict", type=parse_size, help="a message size to predict")
    ap.add_argument("--ranks", type=at_least(2), help="rank count for the prediction")
    ap.add_argument("--link-GBps", dest="link", type=_rate,
                    help="link bandwidth for the prediction")
    ap.add_argument("--segments", type=int, choices=(1, 2, 3, 4), default=1,
                    help="2-4: also fit a line per regime (call floor, caches, memory)")
    a = ap.parse_args(argv)
    print(report(a.file, a.min_bytes, a.max_bytes, a.predict, a.ranks, a.link,
                 segments=a.segments))
    return 0
