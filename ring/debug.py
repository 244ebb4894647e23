"""RING_DEBUG: what ring says about itself, as NCCL_DEBUG does for NCCL.

    RING_DEBUG=INFO mpiexec -n 4 python -m mpi4py train.py

logs one line per collective call on every rank (which algorithm ran, the count, dtype, op
and root) to stderr; WARN (the default) logs only warnings. The logger is the standard
`logging.getLogger("ring")`; its level is set here, so an application that turns its own
root logger to INFO does not get a line per call, and one that wants them without the
environment variable sets that logger's level itself. Each per-call record also carries the
call as a dict in its `ring_call` attribute, for tests and tools that read the log.
"""

from __future__ import annotations

import logging
import os
import sys

LEVELS = {"WARN": logging.WARNING, "WARNING": logging.WARNING, "INFO": logging.INFO,
          "DEBUG": logging.DEBUG}

log = logging.getLogger("ring")
_configured: str | None = None


def level_from_env() -> int:
    """RING_DEBUG's level, or ValueError naming the variable (checked at Communicator
    creation, so every rank raises it)."""
    raw = os.environ.get("RING_DEBUG", "").strip().upper()
    if not raw:
        return logging.WARNING
    if raw not in LEVELS:
        raise ValueError(f"RING_DEBUG: expected one of {sorted(set(LEVELS))}, got "
                         f"{os.environ['RING_DEBUG']!r}")
    return LEVELS[raw]


def configure() -> None:
    """Apply RING_DEBUG once per value: the logger's level, and a stderr handler when the
    variable asks for more than warnings."""
    global _configured
    raw = os.environ.get("RING_DEBUG", "")
    if raw == _configured:
        return
    level = level_from_env()
    _configured = raw
    if not raw.strip() and log.level != logging.NOTSET:
        return  # set by the application: keep it
    log.setLevel(level)
    if level < logging.WARNING and not any(getattr(h, "_ring", False) for h in log.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("ring %(process)d %(levelname)s %(message)s"))
        handler._ring = True
        log.addHandler(handler)


def enabled() -> bool:
    """Whether per-call records are logged (check before building one: it is not free)."""
    return log.isEnabledFor(logging.INFO)


def call(record: dict) -> None:
    """One line for one collective call (INFO): who, what, and the algorithm that ran."""
    if log.isEnabledFor(logging.INFO):
        extra = "".join(f", {k} {record[k]}" for k in ("count", "dtype", "op", "root", "path")
                        if k in record)
        log.info("rank %d %s call %d: algorithm %s%s", record["rank"], record["collective"],
                 record["call"], record["algorithm"], extra, extra={"ring_call": record})
