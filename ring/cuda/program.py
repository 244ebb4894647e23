"""A rank's Plan as a small table of integers: what the persistent kernel walks.

One row per unit of the plan, in its execution order (chunk-major, Plan.units):

    FLAGS  the step's bits: RECV, REDUCE, FINAL, OUT, SEND
    N      elements in the chunk
    X      where the chunk starts in this rank's input (-1: the step reads no input)
    OUT    where it starts in this rank's output (-1: the step writes no output)
    UIN    its number among the call's receives (-1: it receives nothing): the kernel waits
           for inbound counter >= base + UIN + 1 and reads slot (base + UIN) % nslots
    UOUT   its number among the call's sends (-1), likewise on the outbound link
    CHUNK, STEP   the chunk index and the step's index, for error messages

Pure data: built once per Plan (plans are cached, so is this) and decoded back in the
tests, which check it against schedule.py and its local_slices.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..schedule import Plan, Step, local_slices

FLAGS, N, X, OUT, UIN, UOUT, CHUNK, STEP = range(8)
NCOL = 8
RECV, REDUCE, FINAL, WRITE_OUT, SEND = 1, 2, 4, 8, 16


def flags(step: Step) -> int:
    return (RECV * step.recv | REDUCE * step.reduce | FINAL * step.final
            | WRITE_OUT * step.out | SEND * step.send)


@lru_cache(maxsize=256)
def encode(p: Plan) -> np.ndarray:
    """The plan's units as an int64 table of NCOL columns (read-only)."""
    rows = np.empty((len(p.units), NCOL), np.int64)
    nsteps, recvs, sends = len(p.steps), 0, 0
    for i, (j, step, lo, hi) in enumerate(p.units):
        s_in, s_out = local_slices(p, step.block, lo, hi)
        uses_x = s_in is not None and (not step.recv or step.reduce)
        rows[i] = (flags(step), hi - lo, s_in.start if uses_x else -1,
                   s_out.start if step.out else -1, recvs if step.recv else -1,
                   sends if step.send else -1, j, i % nsteps)
        recvs += step.recv
        sends += step.send
    rows.flags.writeable = False
    return rows


def decode(rows: np.ndarray) -> list[dict]:
    """The table back as dictionaries (for tests and error messages)."""
    out = []
    for r in rows.tolist():
        f = r[FLAGS]
        out.append({"recv": bool(f & RECV), "reduce": bool(f & REDUCE), "final": bool(f & FINAL),
                    "out": bool(f & WRITE_OUT), "send": bool(f & SEND), "n": r[N], "x": r[X],
                    "at": r[OUT], "uin": r[UIN], "uout": r[UOUT], "chunk": r[CHUNK],
                    "step": r[STEP]})
    return out
