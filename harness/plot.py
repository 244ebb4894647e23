"""Bus bandwidth against size, per implementation, and ring's speed-up over each baseline.

    python -m harness plot results/latest.json [more.json ...] --out results/latest.png
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict


def _label(meta: dict, many: bool) -> str:
    where = meta.get("gpu") or "host"
    return f"{meta['ranks']} ranks, {where}: " if many else ""


def require() -> None:
    """SystemExit with the install line when matplotlib is missing (checked before a sweep,
    on every rank, so no rank runs a sweep whose plot cannot be drawn)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit("plot: needs matplotlib, which is not installed: "
                         "pip install 'ring[plot]' (make test and make bench install it)") from None


def draw(paths: list[str], out: str) -> None:
    require()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 8), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    title = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
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
            name = f"{prefix}{labels.get(impl, impl)} {coll} {dtype} {op}" + (" in place" if inplace else "")
            top.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3,
                     linestyle="--" if inplace else "-", label=name)
        for (impl, coll, dtype, op, inplace), pts in sorted(curves.items()):
            if impl == "ring" or inplace:
                continue
            ring = dict((s, t) for s, _, t in curves.get(("ring", coll, dtype, op, False), []))
            xs = [s for s, _, _ in pts if s in ring]
            if xs:
                ys = [t / ring[s] for s, _, t in sorted(pts) if s in ring]
                bottom.plot(xs, ys, marker="o", ms=3, label=f"{prefix}ring vs {impl} {coll} {dtype}")
    top.set_xscale("log", base=2)
    top.set_ylabel("bus bandwidth (GB/s)")
    top.grid(True, which="both", alpha=0.3)
    top.legend(fontsize=7)
    top.set_title("; ".join(dict.fromkeys(title)))
    bottom.axhline(1.0, color="grey", lw=1)
    bottom.set_xscale("log", base=2)
    bottom.set_yscale("log", base=2)
    bottom.set_xlabel("size (bytes)")
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
