"""Walk a ring plan over NumPy buffers, chunk-major, through a pair of transport ends.

Per chunk: wait for the predecessor's slot, wait for a free successor slot, apply the
step (reduce straight from the received slot into the successor's slot or the output),
release and post. Peers work on neighbouring chunks at the same time, so a rank's
reduction of chunk i overlaps its predecessor's production of chunk i+1.
"""

from __future__ import annotations

import numpy as np

from ringtypes import Op
from ..schedule import Collective, Plan
from .reduce import apply_chunk, apply_wire


def local_slices(plan: Plan, block: int, lo: int, hi: int):
    """Where full-array elements [lo, hi) of `block` sit in this rank's input and output."""
    c = plan.collective
    if c in (Collective.ALLREDUCE, Collective.BROADCAST, Collective.REDUCE, Collective.ALLTOALL):
        return slice(lo, hi), slice(lo, hi)
    base = plan.blocks[plan.rank]
    if c in (Collective.REDUCE_SCATTER, Collective.SCATTER):  # the output is block `rank`
        return slice(lo, hi), slice(lo - base, hi - base)
    # all-gather, gather: the input is block `rank` of the output
    return (slice(lo - base, hi - base) if block == plan.rank else None), slice(lo, hi)


def run(plan: Plan, op: Op, x: np.ndarray, out: np.ndarray, send, recv, waiter,
        divisor: int | None = None, wire: np.dtype | None = None) -> None:
    """x, out: 1-D contiguous. send / recv: transport ends (None when the ring is one rank).
    divisor: what avg divides by (default: this ring's size; the two-level collectives
    pass the whole job's). wire: float16 / bfloat16 for float32 data whose slots carry
    that type (reduce.apply_wire; the plan is cut for the wire's itemsize). waiter.at is
    kept at the current (chunk, step) so that a timeout can say where."""
    divisor = plan.size if divisor is None else divisor
    dtype = x.dtype if wire is None else wire
    itemsize = dtype.itemsize
    apply = apply_chunk if wire is None else apply_wire
    if recv is not None:
        recv.begin(plan.recvs)
    for i, (j, step, lo, hi) in enumerate(plan.units):
        waiter.at = (j, i % len(plan.steps))
        s_in, s_out = local_slices(plan, step.block, lo, hi)
        rbuf = recv.wait(dtype)[:hi - lo] if step.recv else None
        sbuf = send.acquire(dtype)[:hi - lo] if step.send else None
        apply(step, op, divisor, None if s_in is None else x[s_in], out[s_out], rbuf, sbuf)
        if step.recv:
            recv.release()
        if step.send:
            send.post((hi - lo) * itemsize)
