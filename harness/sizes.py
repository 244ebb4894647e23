"""Message sizes as nccl-tests reads and steps them: 8, 1K, 64M, 1G; -f factor or -i step."""

from __future__ import annotations


def parse_size(text: str) -> int:
    text = text.strip().upper().rstrip("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(float(text[:-1] if mult > 1 else text) * mult)


def sizes(begin: int, end: int, factor: float, step: int) -> list[int]:
    out, s = [], begin
    while s <= end:
        out.append(s)
        s = s * factor if factor > 1 else s + step
        s = int(s)
        if step == 0 and factor <= 1:
            break
    return out


def parse_sizes(text: str) -> list[int]:
    """A comma list of sizes (--also 64M,1G), each positive."""
    out = [parse_size(t) for t in text.split(",") if t.strip()]
    if not out or any(s <= 0 for s in out):
        raise ValueError(f"sizes must be positive, got {text!r}")
    return out


def with_also(grid: list[int], also: list[int] | None) -> list[int]:
    """grid and the sizes of also (the points a -f grid steps over), in order, each once."""
    return sorted(set(grid) | set(also or ()))


def human(n: float) -> str:
    """A size as people read it: 8 B, 1 KB, 64 MB, 1 GB (binary multiples, as -b / -e)."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{n:.0f} B"
