"""The host's "kernels": one ring step applied to one chunk, with NumPy ufuncs (sum, avg
and prod of float16 / bfloat16 through half.py's compiled loops, bit for bit the same).

Used by the host executor and by the in-process simulator, so both compute the same
function in the same order: partial-from-predecessor op own-input.

apply_wire is the same step for float32 data with a 16-bit wire (compression="bf16" /
"fp16"): what goes into a slot is rounded to the wire type, what comes out of one is
widened, and the sum runs in float32 at every hop. The final sum of an all-reduce is
rounded once more, by the rank that completes it, so that every rank's output is the
same wire value widened (then divided by K for avg); a reduce-scatter's block is never
sent again and keeps its float32 sum.
"""

from __future__ import annotations

import numpy as np

from ringtypes import FLOATING, REDUCIBLE, Op, bfloat16
from ..schedule import Step

UFUNC = {
    Op.SUM: np.add,
    Op.AVG: np.add,
    Op.PROD: np.multiply,
    Op.MIN: np.minimum,  # NaN propagates, as in np.minimum
    Op.MAX: np.maximum,
}


HALF = (np.dtype(np.float16), bfloat16)  # through half.py (imported on first use: Numba)
HALF_OPS = (Op.SUM, Op.AVG, Op.PROD)


def walk_compiles(dtype: np.dtype, op: Op, wire=None) -> bool:
    """Whether a ring step of this dtype and op is computed by the compiled walk
    (compiled_walk.py): not for a 16-bit wire, float16 / bfloat16 (half.py's loops), floating
    min / max (NumPy's NaN and signed-zero choices) or the data-only float8 types."""
    return wire is None and dtype in REDUCIBLE and dtype not in HALF and not (
        dtype in FLOATING and op in (Op.MIN, Op.MAX))


def combine(op: Op, a, b, out) -> None:
    """out = a op b, elementwise, as the ufunc (avg: the sum)."""
    if out.dtype in HALF and op in HALF_OPS:
        from . import half
        half.combine(half.PROD if op is Op.PROD else half.SUM, a, b, out)
    else:
        UFUNC[op](a, b, out=out)


def divide(out, k: int) -> None:
    """out /= k in place (avg's last step), as np.divide."""
    if out.dtype in HALF:
        from . import half
        half.divide(out, k)
    else:
        np.divide(out, k, out=out)


def fold(parts, op: Op, k: int, out) -> None:
    """out = ((parts(0) op parts(1)) op ...) op parts(k-1), avg divided by k: the rank-order
    fold of the whole-buffer algorithms (naive, ps, tree, oneshot, twoshot)."""
    np.copyto(out, parts(0))
    for q in range(1, k):
        combine(op, out, parts(q), out)
    if op is Op.AVG:
        divide(out, k)


def follow(segments, parts, op: Op, out) -> None:
    """Do a recipe (ring/recipe.py): parts(q) is rank q's posted array (out's dtype)."""
    for lo, n, sources in segments:
        if len(sources) == 1:
            q, at = sources[0]
            out[lo:lo + n] = parts(q)[at:at + n]
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            fold(lambda i: parts(sources[i][0])[sources[i][1]:sources[i][1] + n], op,
                 len(sources), out[lo:lo + n])


def apply_chunk(step: Step, op: Op, nranks: int, src, dst, rbuf, sbuf) -> None:
    """Do one chunk of `step`.

    src: this rank's input chunk (read when the step does not receive, or reduces);
    dst: the output chunk (written when step.out); rbuf: the received chunk (step.recv);
    sbuf: the successor's slot (written when step.send). All 1-D, the same length.
    Through a direct MPI link (executor.py) sbuf may be None where the chunk is sent from
    src or dst as it is, and rbuf None where the chunk was received straight into dst.
    """
    if not step.recv:
        if step.out and not np.may_share_memory(dst, src):
            np.copyto(dst, src)
        if step.send and sbuf is not None:
            np.copyto(sbuf, src)
        return
    target = dst if step.out else sbuf
    if step.reduce:
        combine(op, rbuf, src, target)
        if step.final and op is Op.AVG:
            divide(target, nranks)
    elif rbuf is not None:
        np.copyto(target, rbuf)
    if step.out and step.send and sbuf is not None:
        np.copyto(sbuf, dst)


def apply_wire(step: Step, op: Op, nranks: int, src, dst, rbuf, sbuf) -> None:
    """apply_chunk for float32 src / dst and 16-bit rbuf / sbuf; op is sum or avg."""
    from . import half
    d = nranks if op is Op.AVG else 1
    if not step.recv:  # a first send (or one rank alone: a copy)
        if step.out and not np.may_share_memory(dst, src):
            np.copyto(dst, src)
        if step.send:
            half.narrow(src, sbuf)
    elif not step.reduce:  # an all-gathered chunk: forward the wire value as it came
        half.land(rbuf, dst, d)
        if step.send:
            np.copyto(sbuf, rbuf)
    elif not step.final:
        half.hop(rbuf, src, sbuf)
    elif step.send:  # all-reduce's seam: every rank will hold this wire value
        half.settle(rbuf, src, dst, sbuf, d)
    else:
        half.accumulate(rbuf, src, dst, d)
