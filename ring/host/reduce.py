"""The host's "kernels": one ring step applied to one chunk, with NumPy ufuncs.

Used by the host executor and by the in-process simulator, so both compute the same
function in the same order: partial-from-predecessor op own-input.
"""

from __future__ import annotations

import numpy as np

from ringtypes import Op
from ..schedule import Step

UFUNC = {
    Op.SUM: np.add,
    Op.AVG: np.add,
    Op.PROD: np.multiply,
    Op.MIN: np.minimum,  # NaN propagates, as in np.minimum
    Op.MAX: np.maximum,
}


def apply_chunk(step: Step, op: Op, nranks: int, src, dst, rbuf, sbuf) -> None:
    """Do one chunk of `step`.

    src: this rank's input chunk (read when the step does not receive, or reduces);
    dst: the output chunk (written when step.out); rbuf: the received chunk (step.recv);
    sbuf: the successor's slot (written when step.send). All 1-D, the same length.
    """
    if not step.recv:
        if step.out and not np.may_share_memory(dst, src):
            np.copyto(dst, src)
        if step.send:
            np.copyto(sbuf, src)
        return
    target = dst if step.out else sbuf
    if step.reduce:
        UFUNC[op](rbuf, src, out=target)
        if step.final and op is Op.AVG:
            np.divide(target, nranks, out=target)
    else:
        np.copyto(target, rbuf)
    if step.out and step.send:
        np.copyto(sbuf, dst)
