"""Which algorithm "auto" picks, from a table measured on the machine (`python -m harness
tune` writes one), as NCCL's tuner plugins choose per size.

A table is JSON:

    {"device": "host", "command": "...", "machine": "...",
     "rules": [{"ranks": 2, "nodes": 1, "max_bytes": 16384, "algorithm": "oneshot"}, ...,
               {"collective": "allgather", "ranks": 2, ...}, ...]}

A rule without "collective" is an all-reduce's. A rule with "registered" applies only to
calls whose buffers are (true) or are not (false) registered (comm.register: the ones the
two-shot would read or write in place: an all-reduce's x and out, a reduce-scatter's x, an
all-gather's out), as `harness tune` writes them on the cuda device with and without -R:
registered, the two-shot moves 2N bytes a rank; staged, 6N. For a call of S bytes (the
call's full array: call.Call.count elements, so an all-gather's output) on K ranks over N
nodes, the first rule of its collective (and registration) with ranks == K (or, when no
rule names K, the largest ranks below it), nodes == N and S <= max_bytes names the
algorithm, if it can run here; otherwise the ring (two-level where it applies). ring ships
one table per device kind (ring/tables/<device>.json); Communicator(tuning=PATH) or the
RING_TUNING environment variable names another. The choice is a pure function of the call's
size, the communicator's layout and the registration of the call's buffers, which every rank
shares (register is collective; a rank that deregisters a buffer its peers keep registered
is found by the agreement step, MismatchError on every rank), so ranks never diverge: a
communicator is refused on every rank where their tables' rules differ (digest), also with
check=False, which skips the agreement step that would find a choice that differs.

A rule with "in_place": true applies to in-place calls only (out is x, or x's block where
MPI places it: call.Call.in_place), as `harness tune -I` writes them: where a layout has
such rules, its in-place calls take those and its other calls the rest; elsewhere its rules
serve both. An all-reduce in place on the host costs cma a copy that out of place it
saves, so the fastest algorithm can differ. Collectives without a root only: every rank's
in place is compared by the agreement step there, a rooted one's is its root's own business.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

from .schedule import Collective

ALLREDUCE = "allreduce"  # a rule's collective when it names none
NAMES = {c.label for c in Collective if c is not Collective.BARRIER}
ROOTED = {c.label for c in Collective if c.rooted}
TABLES = Path(__file__).resolve().parent / "tables"


def load(path: str | None, device: str) -> dict:
    """The table to use: `path`, else RING_TUNING, else the one shipped for `device` (an
    empty table where none is). ValueError naming the source when it cannot be read."""
    if path is not None and not isinstance(path, (str, os.PathLike)):
        # (open() takes an int as a file descriptor: tuning=1 read, then closed, stdout)
        raise ValueError(f"tuning: expected the path of a table, got {path!r}")
    source = path or os.environ.get("RING_TUNING") or str(TABLES / f"{device}.json")
    if not path and not os.environ.get("RING_TUNING") and not Path(source).exists():
        return {"rules": []}
    try:
        with open(source) as f:
            table = json.load(f)
        rules = table["rules"]
        for r in rules:
            int(r["ranks"]), int(r["nodes"]), int(r["max_bytes"]), str(r["algorithm"])
            if r.get("collective", ALLREDUCE) not in NAMES:
                raise ValueError(f"collective {r['collective']!r} is none of {sorted(NAMES)}")
            if not isinstance(r.get("registered", False), bool):
                raise ValueError(f"registered: true or false, got {r['registered']!r}")
            if not isinstance(r.get("in_place", False), bool):
                raise ValueError(f"in_place: true or false, got {r['in_place']!r}")
            if "in_place" in r and r.get("collective", ALLREDUCE) in ROOTED:
                raise ValueError(f"in_place: a rule of {r['collective']}, whose in place is "
                                 "its root's own business (the ranks would not agree on it)")
    except (OSError, ValueError, KeyError, TypeError) as e:
        what = "tuning" if path else ("RING_TUNING" if os.environ.get("RING_TUNING") else "tuning table")
        raise ValueError(f"{what}: cannot read a tuning table from {source!r}: {e}") from None
    return table


def rules_for(table: dict, ranks: int, nodes: int, collective: str = "allreduce",
              registered: bool = False, in_place: bool = False) -> list[tuple[int, str]]:
    """(max_bytes, algorithm) for this layout and collective, and calls whose buffers are
    (or are not) registered and that are (or are not) in place, in the table's order."""
    mine = [r for r in table["rules"] if int(r["nodes"]) == nodes
            and r.get("collective", ALLREDUCE) == collective
            and r.get("registered", registered) == registered]
    known = sorted({int(r["ranks"]) for r in mine if int(r["ranks"]) <= ranks})
    if not known:
        return []
    k = ranks if ranks in known else known[-1]
    mine = [r for r in mine if int(r["ranks"]) == k]
    placed = in_place and any(r.get("in_place") for r in mine)
    return [(int(r["max_bytes"]), str(r["algorithm"])) for r in mine
            if r.get("in_place", False) == placed]


def digest(table: dict) -> str:
    """The table's rules in eight hex digits (CRC-32 of their canonical JSON), for ranks to
    compare at a communicator's creation: where their tables differ, "auto" may differ."""
    return f"{zlib.crc32(json.dumps(table['rules'], sort_keys=True).encode()):08x}"


def by_registration(table: dict) -> bool:
    """Whether any rule depends on the registration of the call's buffers."""
    return any("registered" in r for r in table["rules"])


def choose(rules: list[tuple[int, str]], nbytes: int, runs) -> str | None:
    """The algorithm of the first rule that covers nbytes, if it can run here (runs(name)
    -> bool); None: the ring's. A rule for other sizes is never taken instead."""
    for max_bytes, algorithm in rules:
        if nbytes <= max_bytes:
            return algorithm if runs(algorithm) else None
    return None
