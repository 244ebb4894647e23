"""The algorithms, one module each, and the registry the communicator, the harness and the
tuner read them from.

    ring          the pipelined ring, every collective (ring.py)
    hierarchical  rings inside nodes, a ring across them (hierarchical.py)
    naive, ps     whole buffers as MPI messages (naive.py, ps.py)
    tree          NCCL's double binary tree of MPI messages (tree.py)
    oneshot       one round through node-shared memory, every collective on the host
                  (oneshot.py)
    twoshot       two rounds: reduce-scatter then all-gather through it (twoshot.py)
    cma           oneshot's reads straight out of the peers' arrays, by cross-memory
                  attach: one copy, any size, every collective on the host (cma.py)

"auto" is not an algorithm: it is the tuning table's choice among these (ring/tuning.py).
To add one: a module with an Algorithm subclass and its ALGORITHM, its name appended to
options.ALGORITHMS (the agreement's wire codes), its order of reduction in
tests/reference.py, and its row in the README's support matrix (generated from `serves`).
"""

from __future__ import annotations

from .. import tuning
from ..context import Context
from ..options import check_algorithm
from ..schedule import Collective
from . import cma, hierarchical, naive, oneshot, ps, ring, tree, twoshot
from .base import Algorithm

AUTO = "auto"  # not an algorithm: the tuning rules' choice among them

# in the order of their wire codes (tests/test_algorithms.py: every name has a module)
BY_NAME: dict[str, Algorithm] = {m.ALGORITHM.name: m.ALGORITHM for m in
                                 (ring, hierarchical, naive, ps, oneshot, twoshot, tree,
                                  cma)}


def get(name: str) -> Algorithm:
    """The algorithm called `name` (checked already: options.check_algorithm)."""
    return BY_NAME[name]


def why_not(ctx: Context, name: str, collective: Collective, nbytes: int) -> str | None:
    """Why algorithm `name` cannot run the call here (None: it can; "auto" always can)."""
    check_algorithm(name)
    return None if name == AUTO else get(name).why_not(ctx, collective, nbytes)


def resolve(ctx: Context, asked: str, collective: Collective, nbytes: int, rules,
            compression: str | None = None) -> str:
    """The algorithm a call runs: the one asked for (ValueError if it cannot run here), or
    for "auto" the tuning rules' choice (ring/tuning.py), else the two-level algorithm
    where it runs, else the flat ring. A compressed call runs where the ring's slots carry
    the compressed wire (Algorithm.why_not_compressed); "auto" there takes the two-level
    all-reduce where it runs (the wire only across nodes), else the flat ring. A function of
    the layout, the agreed arguments and the registration of the buffers (rules: the ones
    for it; registration is collective) only: every rank resolves alike."""
    check_algorithm(asked)
    if compression is not None:
        if ctx.device != "host":
            raise ValueError(f"compression: runs on the host device only (not yet on "
                             f"{ctx.device}; ring.buckets.GradientBuckets casts there)")
        for name in ((hierarchical.ALGORITHM.name, ring.ALGORITHM.name) if asked == AUTO
                     else (asked,)):
            why = get(name).why_not_compressed(ctx, collective, nbytes)
            if why is None:
                return name
        raise ValueError(f"algorithm: {asked!r} cannot run with compression ({why})")
    if asked == AUTO:
        pick = tuning.choose(rules, nbytes, lambda a: get(a).why_not(ctx, collective,
                                                                       nbytes) is None)
        if pick is not None:
            return pick
        two_level = hierarchical.ALGORITHM
        return ring.ALGORITHM.name if two_level.why_not(ctx, collective, nbytes) \
            else two_level.name
    why = get(asked).why_not(ctx, collective, nbytes)
    if why:
        raise ValueError(f"algorithm: {asked!r} cannot run here: {why}")
    return asked


__all__ = ["AUTO", "Algorithm", "BY_NAME", "get", "resolve", "why_not"]
