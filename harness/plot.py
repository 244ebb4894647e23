"""Time per call (log-log: where the small-message gap shows), bus bandwidth against size,
per implementation, and each ring variant's speed-up over each baseline; sizes labelled
8 B, 1 KB, 1 MB.

    python -m harness plot results/latest.json [more.json ...] --out results/latest.png
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict

from . import files
from .sizes import human


def _label(meta: dict, many: bool) -> str:
    where = meta.get("gpu") or "host"
    return f"{meta['ranks']} ranks, {where}: " if many else ""


def short(label: str) -> str:
    """An implementation's label for a legend: its name and version, and the mode NCCL ran in
    ("nccl 2.30.7 (<library>), several ranks per GPU (...)" -> "nccl 2.30.7, several ranks
    per GPU"); the JSON's meta keeps the whole label."""
    head, _, rest = label.partition(" (")
    mode = rest.split("), ", 1)[1].split(" (")[0] if "), " in rest else ""
    return f"{head}, {mode}" if mode else head


def _size_tick(v: float, _pos=None) -> str:
    """Tick labels at 1, 8, 64 of each unit (8 B, 64 B, 1 KB, 8 KB, ..., 1 GB)."""
    if v < 1:
        return ""
    k = round(math.log2(v))
    return human(v) if abs(math.log2(v) - k) < 1e-9 and k % 10 in (0, 3, 6) else ""


def require() -> None:
    """SystemExit with the install line when matplotlib is missing (checked before a sweep,
    on every rank, so no rank runs a sweep whose plot cannot be drawn)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit("plot: needs matplotlib, which is not installed: "
                         "pip install 'ring[plot]' (make test and make bench install it)") from None


def speedups(curves: dict) -> list[tuple[str, list[int], list[float]]]:
    """(label, sizes, baseline time / ring time) of every ring variant (ring, ring-kernel,
    ...) over every baseline, out of place: the table's speed-up columns. curves:
    (impl, collective, dtype, op, in_place) -> [(nbytes, busbw, time_us)]."""
    rings = sorted({key[0] for key in curves if key[0].startswith("ring")})
    found = []
    for (impl, coll, dtype, op, inplace), pts in sorted(curves.items()):
        if impl.startswith("ring") or inplace:
            continue
        for mine in rings:
            ring = {s: t for s, _, t in curves.get((mine, coll, dtype, op, False), [])}
            xs = [s for s, _, _ in sorted(pts) if s in ring]
            if xs:
                ys = [t / ring[s] for s, _, t in sorted(pts) if s in ring]
                found.append((f"{mine} vs {impl} {coll} {dtype}", xs, ys))
    return found


def draw(paths: list[str], out: str) -> None:
    require()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matplotlib.ticker import FuncFormatter, LogLocator

    fig, (times, top, bottom) = plt.subplots(3, 1, figsize=(9, 11), sharex=True,
                                             gridspec_kw={"height_ratios": [3, 3, 2]})
    title = []
    for path in paths:
        data = files.sweep(path)
        meta, prefix = data["meta"], _label(data["meta"], len(paths) > 1)
        title.append(f"{meta['ranks']} ranks, {meta.get('gpu') or 'host device'}")
        curves = defaultdict(list)
        for r in data["results"]:
            if r.get("skipped") or math.isnan(r["busbw"]) or r["nbytes"] <= 0:
                continue
            key = (r["impl"], r["collective"], r["dtype"], r["op"], r["in_place"])
            curves[key].append((r["nbytes"], r["busbw"], r["time_us"]))
        labels = meta.get("implementations", {})
        for (impl, coll, dtype, op, inplace), pts in sorted(curves.items()):
            pts.sort()
            name = f"{prefix}{short(labels.get(impl, impl))} {coll} {dtype} {op}" + (" in place" if inplace else "")
            style = {"marker": "o", "ms": 3, "linestyle": "--" if inplace else "-", "label": name}
            top.plot([p[0] for p in pts], [p[1] for p in pts], **style)
            times.plot([p[0] for p in pts], [p[2] for p in pts], **style)
        for label, xs, ys in speedups(curves):
            bottom.plot(xs, ys, marker="o", ms=3, label=prefix + label)
    times.set_xscale("log", base=2)
    times.set_yscale("log")
    times.set_ylabel("time per call (µs)")
    times.grid(True, which="both", alpha=0.3)
    top.set_xscale("log", base=2)
    top.set_ylabel("bus bandwidth (GB/s)")
    top.grid(True, which="both", alpha=0.3)
    top.legend(fontsize=7)
    times.set_title("; ".join(dict.fromkeys(title)))
    bottom.axhline(1.0, color="grey", lw=1)
    bottom.set_xscale("log", base=2)
    bottom.set_yscale("log", base=2)
    bottom.set_xlabel("size")
    bottom.xaxis.set_major_locator(LogLocator(base=2, numticks=40))
    bottom.xaxis.set_major_formatter(FuncFormatter(_size_tick))
    bottom.set_ylabel("speed-up of ring (x)")
    bottom.grid(True, which="both", alpha=0.3)
    if bottom.lines[1:]:
        bottom.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness plot")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    draw(a.files, a.out)
    print(f"# wrote {a.out}")
    return 0
