"""Compile what the multi-rank jobs would otherwise compile in every rank at once, into
Numba's on-disk cache: the host's float16 / bfloat16 loops (ring/host/half.py), the
compiled exchange rounds (ring/host/compiled_round.py, compiled_cma.py) and ring walk
(ring/host/compiled_walk.py), the int8 loops (ring/training/quantize.py). A fresh clone
would compile them (~15 s each) in every rank of the first job that uses them, while its
peers wait (some tests' peers time out at 2 s). Each pytest session calls warm() first
(tests/conftest.py; quick once the cache holds them); `python -m tests.warm` does it alone."""

from __future__ import annotations


def warm() -> None:
    from ring.host import compiled_cma, compiled_round, compiled_walk, half
    from ring.training import quantize, topk
    quantize.warm()
    topk.warm()
    half.warm()
    compiled_round.warm()  # one per dtype
    compiled_walk.warm()  # one per dtype
    compiled_cma.warm()  # one per dtype


if __name__ == "__main__":
    warm()
