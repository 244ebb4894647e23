"""The files the harness reads back (model, plot): a sweep's JSON (--json) or a tuning
table (tune --out), or a SystemExit saying which file is neither, and why."""

from __future__ import annotations

import json


def read(path: str) -> dict:
    """A JSON object from path (its reason, not a traceback, where there is none)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise SystemExit(f"{path}: cannot read it: {e.strerror or e}") from None
    except ValueError as e:
        raise SystemExit(f"{path}: not JSON: {e}") from None
    if not isinstance(data, dict):
        raise SystemExit(f"{path}: not a sweep's or a tuning table's JSON (a "
                         f"{type(data).__name__}, not an object)")
    return data


def sweep(path: str) -> dict:
    """A sweep's JSON (python -m harness ... --json PATH): its meta (with the rank count)
    and its results."""
    data = read(path)
    if not isinstance(data.get("meta"), dict) or "ranks" not in data["meta"] or \
            not isinstance(data.get("results"), list):
        raise SystemExit(f"{path}: not a sweep's JSON (python -m harness ... --json): it "
                         "needs 'meta' with 'ranks', and 'results'")
    return data
