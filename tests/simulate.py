"""Run every rank of a ring schedule in one process, with NumPy, and check the protocol.

Each connection (rank r -> r+1) is a ring of `nslots` slots. Ranks walk chunk-major, as
NCCL does: every step of chunk 0, then every step of chunk 1, ... A rank's next chunk may run
only when its receive slot has been written and, if it sends, its send slot has been
consumed. Ranks are advanced round-robin; a pass in which no rank can move is a deadlock.
Every slot access is checked: no read before write, no overwrite before read.

This tests the schedule for any rank count, size and chunking in milliseconds, without
MPI or a GPU. It computes with the schedule's own local_slices and the host's apply_chunk, so
agreeing with the host device proves the transport and the walk, not the arithmetic: the
tests compare results with tests/reference.py, which derives each algorithm's order of
reduction from the documentation alone, and check this simulator against it too.
"""

from __future__ import annotations

import numpy as np

from ring.host.reduce import apply_chunk, apply_wire
from ring.schedule import Collective, local_slices, plan, sizes
from ringtypes import Op


class ProtocolError(AssertionError):
    pass


class _Link:
    """Slots between a sender and a receiver, with the state of each slot."""

    def __init__(self, nslots: int, cap: int, dtype):
        self.slots = [np.empty(cap, dtype) for _ in range(nslots)]
        self.full = [False] * nslots
        self.sent = 0  # chunks written by the sender
        self.taken = 0  # chunks consumed by the receiver

    def can_send(self) -> bool:
        return self.sent - self.taken < len(self.slots)

    def can_recv(self) -> bool:
        return self.taken < self.sent

    def send_slot(self):
        i = self.sent % len(self.slots)
        if self.full[i]:
            raise ProtocolError(f"slot {i} overwritten before it was read")
        return i, self.slots[i]

    def recv_slot(self):
        i = self.taken % len(self.slots)
        if not self.full[i]:
            raise ProtocolError(f"slot {i} read before it was written")
        return i, self.slots[i]


def run(collective: Collective, inputs: list[np.ndarray], op: Op = Op.SUM,
        chunk_bytes: int = 1 << 20, nslots: int = 2, align: int = 1,
        root: int = 0, wire=None, in_place: bool = False) -> list[np.ndarray]:
    """Execute `collective` over len(inputs) ranks; return each rank's output (broadcast:
    every rank's array after the call; reduce and gather: only the root's output means
    anything; scatter: only the root's input is read). wire: the 16-bit dtype the slots
    carry for float32 inputs (compression=, reduce.apply_wire). in_place (all-to-all):
    each rank's output is a copy of its input, read and written as the walk goes."""
    size = len(inputs)
    dtype = inputs[0].dtype
    carried = dtype if wire is None else np.dtype(wire)
    step_fn = apply_chunk if wire is None else apply_wire
    count, out_n = sizes(collective, inputs[0].size, size)
    plans = [plan(collective, size, r, count, carried.itemsize, chunk_bytes, align, root)
             for r in range(size)]
    cap = max(plans[0].max_chunk, 1)
    links = [_Link(nslots, cap, carried) for _ in range(size)]  # links[r]: r -> r+1
    outs = [np.full(out_n, 123, dtype) for _ in range(size)]  # poisoned
    if collective is Collective.BROADCAST:  # in place: the root's array is its output
        outs = [inputs[root].copy() if r == root else outs[r] for r in range(size)]
    if in_place:
        if collective is not Collective.ALLTOALL:
            raise ValueError(f"in_place: all-to-all only, not {collective}")
        outs = inputs = [x.copy() for x in inputs]
    pos = [0] * size  # next (step, chunk) index of each rank
    total = [len(p.steps) * p.nchunks for p in plans]  # chains: ranks take different counts

    while any(pos[r] < total[r] for r in range(size)):
        moved = False
        for r in range(size):
            if pos[r] == total[r]:
                continue
            p = plans[r]
            j, step = divmod(pos[r], len(p.steps))
            step = p.steps[step]
            inbound, outbound = links[r - 1], links[r]
            if (step.recv and not inbound.can_recv()) or (step.send and not outbound.can_send()):
                continue
            lo, hi = p.chunk(step.block, j)
            s_in, s_out = local_slices(p, step.block, lo, hi)
            src = None if s_in is None else inputs[r][s_in]
            dst = outs[r][s_out]
            rbuf = sbuf = None
            if step.recv:
                ri, rslot = inbound.recv_slot()
                rbuf = rslot[:hi - lo]
            if step.send:
                si, sslot = outbound.send_slot()
                sbuf = sslot[:hi - lo]
            step_fn(step, op, size, src, dst, rbuf, sbuf)
            if step.recv:
                inbound.full[ri] = False
                inbound.taken += 1
            if step.send:
                outbound.full[si] = True
                outbound.sent += 1
            pos[r] += 1
            moved = True
        if not moved:
            raise ProtocolError(f"deadlock: positions {pos} of {total}")
    for link in links:
        if link.sent != link.taken:
            raise ProtocolError(f"{link.sent - link.taken} chunks sent but never received")
    return outs
