"""Message sizes as nccl-tests reads and steps them: 8, 1K, 64M, 1G; -f factor or -i step;
and the counts the command lines take (-n calls, --rounds), none below what makes a figure."""

from __future__ import annotations

import argparse
import math


def parse_size(text: str) -> int:
    text = text.strip().upper().rstrip("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(float(text[:-1] if mult > 1 else text) * mult)


def sizes(begin: int, end: int, factor: float, step: int) -> list[int]:
    """-b begin to -e end, times -f factor where it is above 1, else plus -i step. A grid
    that would run nothing or never end is a ValueError saying why (nccl-tests refuses -b
    above -e too); a factor too small to move a size by a byte steps it by one."""
    if begin < 0:
        raise ValueError(f"-b {begin}: sizes are 0 bytes or more")
    if end < begin:
        raise ValueError(f"-e {end} is below -b {begin}: nothing to run")
    if not math.isfinite(factor):
        raise ValueError(f"-f {factor}: a finite factor")
    if end > begin:
        if factor <= 1 and step <= 0:
            raise ValueError(f"-f {factor:g} -i {step}: no step from -b {begin} to -e {end}: "
                             "a factor above 1, or a step above 0")
        if factor > 1 and begin == 0:
            raise ValueError(f"-b 0 times -f {factor:g} stays 0: start at 1 byte or more, "
                             "or step with -i")
    out, s = [], begin
    while s <= end:
        out.append(s)
        if s == end:
            break
        s = max(int(s * factor), s + 1) if factor > 1 else s + step
    return out


def at_least(low: int):
    """An argparse type: an integer, low or more (-n 0 would print the mean time of no call,
    --rounds 0 a best of none); below it, argparse's error names the flag and both numbers."""
    def parse(text: str) -> int:
        n = int(text)
        if n < low:
            raise argparse.ArgumentTypeError(f"at least {low}, got {n}")
        return n
    parse.__name__ = f"integer (at least {low})"  # what argparse calls a word like "two"
    return parse


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
