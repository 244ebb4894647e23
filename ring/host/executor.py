"""Walk a ring plan over NumPy buffers, chunk-major, through a pair of transport ends.

Per chunk: wait for the predecessor's slot, wait for a free successor slot, apply the
step (reduce straight from the received slot into the successor's slot or the output),
release and post. Peers work on neighbouring chunks at the same time, so a rank's
reduction of chunk i overlaps its predecessor's production of chunk i+1.
"""

from __future__ import annotations

import numpy as np

from ringtypes import Op
from ..options import DIRECT_MIN_BYTES
from ..schedule import Collective, Plan, alltoall_overwritten, local_slices
from .reduce import apply_chunk, apply_wire


def in_place(plan: Plan, a: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """(x, from_out) to walk an all-to-all in place on a (a is out): x holds a copy of
    only the blocks that would be written over before they are sent
    (schedule.alltoall_overwritten), the walk reads the others from a (from_out)."""
    k, b = plan.size, plan.blocks
    kept = {(plan.rank + d) % k for d in alltoall_overwritten(k)}
    held = np.empty_like(a)  # only the kept blocks are written (and paged in)
    for q in kept:
        held[b[q]:b[q + 1]] = a[b[q]:b[q + 1]]
    return held, tuple(q for q in range(k) if q not in kept)


def run(plan: Plan, op: Op, x: np.ndarray, out: np.ndarray, send, recv, waiter,
        divisor: int | None = None, wire: np.dtype | None = None,
        from_out: tuple[int, ...] = ()) -> None:
    """x, out: 1-D contiguous. send / recv: transport ends (None when the ring is one rank).
    divisor: what avg divides by (default: this ring's size; the two-level collectives
    pass the whole job's). wire: float16 / bfloat16 for float32 data whose slots carry
    that type (reduce.apply_wire; the plan is cut for the wire's itemsize). waiter.at is
    kept at the current (chunk, step) so that a timeout can say where. from_out: blocks
    whose input is read from out, at x's offsets (an all-to-all in place through
    shared-memory ends: in_place, the compiled_walk walk's FROM_OUT).

    Through `direct` ends (MPI) chunks are sent from x and out, and received into out,
    where that is safe (`sends_from_x`, `receives_into`), instead of through staging slots."""
    divisor = plan.size if divisor is None else divisor
    dtype = x.dtype if wire is None else wire
    itemsize = dtype.itemsize
    apply = apply_chunk if wire is None else apply_wire
    # not for a 16-bit wire (its slots hold another type than the arrays), nor small chunks
    direct = wire is None and plan.max_chunk * itemsize >= DIRECT_MIN_BYTES
    # out's chunks go from out once written; x's from x unless that memory is written over
    send_out = send is not None and direct and send.direct
    from_x = send_out and sends_from_x(plan, x, out)
    into = None
    if recv is not None:
        if direct and recv.direct:
            into = receives_into(plan, x, out)
        recv.begin(plan.recvs, into)
    try:
        for i, (j, step, lo, hi) in enumerate(plan.units):
            waiter.at = (j, i % len(plan.steps))
            s_in, s_out = local_slices(plan, step.block, lo, hi)
            src, dst = None if s_in is None else \
                (out if step.block in from_out else x)[s_in], out[s_out]
            rbuf = sbuf = source = None
            if step.recv:
                rbuf = recv.wait(dtype, i)  # None: it landed in dst
                rbuf = None if rbuf is None else rbuf[:hi - lo]
            if step.send:
                source = (dst if step.recv and step.out and send_out else
                          src if not step.recv and from_x else None)
                if source is None:
                    sbuf = send.acquire(dtype)[:hi - lo]
            apply(step, op, divisor, src, dst, rbuf, sbuf)
            if step.recv:
                recv.release()
            if step.send:
                if source is None:
                    send.post((hi - lo) * itemsize)
                else:
                    send.post_from(source)
        if send is not None and send.direct:  # MPI: every message taken (transport/mpi.py)
            send.flush()
    except BaseException:
        if into is not None:
            recv.abandon()
        raise


# Sending from x and out, receiving into out, as MPI would (no staging copy). MPI's rules:
# a pending send's memory must not be written, and a pending receive's not touched at all,
# until they complete. Every element of out is written once in a call (by the unit that
# receives or reduces it) and only read after; x is only read.

def sends_from_x(plan: Plan, x, out) -> bool:
    """Whether a unit's chunk may be sent from x as it is (a step that does not receive):
    unless out overlaps x and this rank writes out (in place, the chunk would be written
    over while it is still being sent). A chunk of out, once its unit has written it, may
    always be sent from there."""
    overlap = x.size > 0 and out.size > 0 and np.may_share_memory(x, out)
    return not (overlap and any(s.out for s in plan.steps))


def receives_into(plan: Plan, x, out) -> list | None:
    """For each receive of the call, in order: (the part of out it may land in straight,
    or None for a slot; the unit after which its receive may be posted, or -1). Only
    chunks that are written to out as they came (not reduced) land in out. Where out
    overlaps x, a receive must not be posted over x while this rank still reads it there:
    for an all-reduce in place (x is out), after the unit that reads that chunk of x in
    the reduce-scatter; for any other overlap, a chunk that would land over x takes a
    slot. None: no receive lands in out."""
    gate: dict | None = {}  # block -> the reduce-scatter step that reads it; None: no gate
    if x.size and out.size and np.may_share_memory(x, out) and \
            any(not s.recv or s.reduce for s in plan.steps):
        exact = x.__array_interface__["data"][0] == out.__array_interface__["data"][0] and \
            x.size == out.size
        if exact and plan.collective is Collective.ALLREDUCE:
            gate = {s.block: i for i, s in enumerate(plan.steps[:plan.size])}
        else:
            gate = None
    n, into = len(plan.steps), []
    for j, step, lo, hi in plan.units:
        if step.recv:
            view = out[local_slices(plan, step.block, lo, hi)[1]]
            if not step.out or step.reduce or (gate is None and np.may_share_memory(view, x)):
                into.append((None, -1))
            elif gate is None or step.block not in gate:
                into.append((view, -1))
            else:
                into.append((view, j * n + gate[step.block]))
    return into if any(v is not None for v, _ in into) else None
