"""The table nccl-tests users read every day, one block of columns per implementation."""

from __future__ import annotations

import math

from .sweep import Result


def _num(v: float, width: int, digits: int) -> str:
    return f"{'n/a':>{width}}" if (v is None or math.isnan(v)) else f"{v:>{width}.{digits}f}"


def header(impls: list, ranks: int, device: str, minimum: bool = False) -> str:
    """minimum: each block has a vs_min column (every rank on one GPU: sweep.Result's)."""
    lines = [f"# ranks: {ranks}  device: {device}  implementations: "
             + ", ".join(f"{i.name} = {i.label}" for i in impls)]
    top = f"#{'':>54}"
    sub = f"#{'size':>12} {'count':>12} {'type':>9} {'redop':>6} {'root':>5}"
    units = f"#{'(B)':>12} {'(elements)':>12} {'':>9} {'':>6} {'':>5}"
    for i in impls:
        algo = _algo(i)
        for place in ("out-of-place", "in-place"):
            top += f"  {i.name + ' ' + place:^{32 + (13 if algo else 0) + (7 if minimum else 0)}}"
            sub += "  " + f"{'time':>8} {'algbw':>7} {'busbw':>7} {'#wrong':>7}"
            units += "  " + f"{'(us)':>8} {'(GB/s)':>7} {'(GB/s)':>7} {'':>7}"
            if minimum:
                sub += f" {'vs_min':>6}"
                units += f" {'(x)':>6}"
            if algo:
                sub += f" {'algo':>12}"
                units += f" {'':>12}"
            if _err(i):
                top += " " * 10
                sub += f" {'error':>9}"
                units += f" {'(rel)':>9}"
    for r, o in _pairs(impls):
        name = f"{r.name}/{o.name}"
        w = max(9, len(name))
        top += f" {'':>{w}}"
        sub += f" {name:>{w}}"
        units += f" {'(x)':>{w}}"
    return "\n".join(lines + [top, sub, units])


def _algo(impl) -> bool:
    """Whether the block has an algo column: ring's, where "auto" picks per size."""
    return hasattr(impl, "last_algorithm")


def _err(impl) -> bool:
    """Whether the block has an error column: a compressed wire's, against float32."""
    return bool(getattr(impl, "compression", None))


def _pairs(impls: list):
    """(ring variant, baseline) for every speed-up column."""
    rings = [i for i in impls if i.name.startswith("ring")]
    others = [i for i in impls if not i.name.startswith("ring")]
    return [(r, o) for r in rings for o in others]


def row(results: dict[tuple[str, bool], Result], impls: list, minimum: bool = False) -> str:
    first = next(iter(results.values()))
    line = (f" {first.nbytes:>12} {first.count:>12} {first.dtype:>9} {first.op:>6} "
            f"{first.root:>5}")
    for i in impls:
        for place in (False, True):
            r = results[(i.name, place)]
            wrong = "n/a" if r.wrong < 0 else str(r.wrong)
            line += "  " + (f"{_num(r.time_us, 8, 1)} {_num(r.algbw, 7, 2)} "
                            f"{_num(r.busbw, 7, 2)} {wrong:>7}")
            if minimum:
                line += f" {_num(r.vs_min, 6, 2)}"
            if _algo(i):
                line += f" {r.algo or '-':>12}"
            if _err(i):
                line += f" {'n/a':>9}" if r.error is None else f" {r.error:9.2e}"
    for r, o in _pairs(impls):
        tr, to = results[(r.name, False)].time_us, results[(o.name, False)].time_us
        w = max(9, len(f"{r.name}/{o.name}"))
        line += f" {_num(to / tr if tr else float('nan'), w, 2)}"
    return line


def footer(all_results: list[Result], impls: list) -> str:
    wrong = sum(r.wrong for r in all_results if r.wrong > 0)
    lines = [f"# Out of bounds values : {wrong} {'OK' if wrong == 0 else 'FAILED'}"]
    for i in impls:
        bw = [r.busbw for r in all_results if r.impl == i.name and not math.isnan(r.busbw)]
        avg = sum(bw) / len(bw) if bw else float("nan")
        lines.append(f"# Avg bus bandwidth    : {_num(avg, 0, 3).strip()}  ({i.name})")
    skipped = {(r.impl, r.skipped) for r in all_results if r.skipped}
    lines += [f"# {impl}: not run: {why}" for impl, why in sorted(skipped)]
    return "\n".join(lines)
