"""One process driving K ranks' rings on the GPU: every rank's plan, chunk by chunk, put on
that rank's stream, each dependency a CUDA event, nothing waited for on the host.

The slot protocol is the one tests/simulate.py checks: link r -> r+1 has `nslots` slots in
rank r+1's memory; a chunk may be written into a slot once the chunk before it in that slot
has been consumed, and read once written. Here "written" and "consumed" are events:

    receiver:  wait(written[k]) ... kernel reads slot k ... record(freed[k])
    sender:    wait(freed[k])   ... kernel writes slot k ... record(written[k])

A wait refers to the last record enqueued before it (waiting on a never-recorded event is
a no-op), so work is enqueued in an order in which every wait comes after its record: the
ranks advance round-robin, as in the simulator, and a rank whose next chunk would wait on
something not yet enqueued lets the others go first. Any such order is also a valid serial
execution, which is why Numba's simulator, which runs each launch at once, checks it.

Paths for a chunk that goes to the next rank:
  stream the kernel that reduces writes straight into the successor's slot (and into the
         output too, at the seam of all-reduce): one kernel per chunk, no extra copy;
  copy   the kernel writes into a local staging slot, and a second stream copies it into the
         successor's slot (the copy engine, through peer memory on another GPU), so the copy
         of chunk i overlaps the reduction of chunk i+1.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np
from numba import cuda

from kernels.arrays import address
from kernels.dtypes import kernel_dtype
from kernels.reduce import launch_args

from kernels.driver import event
from ringtypes import Op

from ..schedule import Collective, Plan, local_slices
from ..transport.slots import Slots
from .arrays import SIMULATED

# Aligned chunk boundaries (16 bytes) can make a chunk up to 2 x 15 bytes longer than
# chunk_bytes (schedule.Plan.chunk); slots carry that much more.
SLOT_PAD = 64
# Collectives whose blocks start 16-byte aligned (paired 16-bit loads in the reduce kernels)
ALIGNED = (Collective.ALLREDUCE, Collective.REDUCE)


def align(itemsize: int) -> int:
    """Elements per 16 bytes: chunk boundaries that keep the paired 16-bit loads aligned."""
    return max(1, 16 // itemsize)


def copy(dst, src, stream) -> None:
    """dst := src on stream (nothing where they are the same memory, or empty)."""
    if dst.size and address(dst) != address(src):
        dst.copy_to_device(src, stream=stream)


def _reduce(op, target, a, b, out2, divisor, dtype_name, stream) -> None:
    if target.size:
        k, g, t, args = launch_args(op, target, a, b, out2=out2, nranks=divisor, dtype=dtype_name)
        k[g, t, stream](*args)


# (device, op, dtype) whose reduce kernels this process has launched (so loaded) already
_LOADED: set = set()


def load_kernels(op: Op, dtype_name: str, storage, stream, device: int = 0) -> None:
    """Launch once, on tiny scratch arrays, every reduce kernel that a call of (op, dtype)
    may launch (op and, for avg, the sum of the steps before the last; one output and two;
    16-bit types' paired and single loads), before the call puts on the stream anything that
    waits for another process. A kernel is loaded into the context at its first launch
    (CUDA's lazy loading), and loading may wait until the context's work is done: a first
    launch behind a stream wait on a neighbour, whose own progress needs this host (a
    staged link's Isend, a neighbour's first launch waiting likewise), held both. Seen on an
    H200 (suite, 2026-11-27): ranks blocked in a reduce kernel's launch for 50 s while their
    successors across the node timed out. NVIDIA's remedy for kernels that must run
    together is to load them first; once per (device, op, dtype) a process."""
    key = (device, op, dtype_name)
    if key in _LOADED:
        return
    ops = (op, Op.SUM) if op is Op.AVG else (op,)
    sizes = (1, 2) if kernel_dtype(dtype_name).bits16 else (1,)  # n >= 2, aligned: paired
    scratch = cuda.device_array((4, 2), storage)
    for eff in ops:
        for two in (False, True):
            for n in sizes:
                a, b, c, d = (scratch[i, :n] for i in range(4))
                _reduce(eff, a, c, d, b if two else None, 1, dtype_name, stream)
    _LOADED.add(key)


@dataclass
class Link:
    """Rank r -> r+1 inside one process: the receiver's slots, how far each end has been
    enqueued, and the events between them. It is both ends of the link; the multi-process
    ends (ipc.py) have the same methods, with stream memory operations for the events.
    u is the chunk's number on the link; it uses slot u % nslots."""

    slots: Slots
    sent: int = 0
    taken: int = 0

    def can_send(self) -> bool:
        return self.sent - self.taken < len(self.slots.raw)

    def can_recv(self) -> bool:
        return self.taken < self.sent

    def view(self, u: int, storage, n: int):
        return self.slots.view(u % len(self.slots.raw), storage, n)

    # receiving end
    def wait_written(self, u: int, stream) -> None:
        self.slots.written[u % len(self.slots.raw)].wait(stream)

    def mark_freed(self, u: int, stream) -> None:
        self.slots.freed[u % len(self.slots.raw)].record(stream)

    # sending end
    def wait_freed(self, u: int, stream) -> None:
        self.slots.freed[u % len(self.slots.raw)].wait(stream)

    def mark_written(self, u: int, stream) -> None:
        self.slots.written[u % len(self.slots.raw)].record(stream)


@dataclass
class Rank:
    stream: object
    copy_stream: object
    stage: Slots  # local staging for the copy path
    device: int = 0
    staged: int = field(default=0)


def enqueue(plans: list[Plan], op: Op, xs: list, outs: list, ranks: list[Rank],
            links: list[Link], dtype_name: str, storage: np.dtype, divisor: int,
            path: str = "stream") -> None:
    """Put one collective of every rank on its stream. xs / outs: 1-D device views of each
    rank's input and output (storage dtype)."""
    k = len(plans)
    total = [len(p.units) for p in plans]  # chains (gather, scatter): ranks differ
    pos = [0] * k
    switch = not SIMULATED and len(cuda.gpus) > 1  # rank-by-rank device contexts
    while any(pos[r] < total[r] for r in range(k)):
        moved = False
        for r in range(k):
            if pos[r] == total[r]:
                continue
            j, step, lo, hi = plans[r].units[pos[r]]
            inbound, outbound = links[r - 1], links[r]
            if (step.recv and not inbound.can_recv()) or (step.send and not outbound.can_send()):
                continue
            with (cuda.gpus[ranks[r].device] if switch else contextlib.nullcontext()):
                unit(plans[r], step, lo, hi, op, xs[r], outs[r], ranks[r], inbound, outbound,
                      dtype_name, storage, divisor, path)
            pos[r] += 1
            moved = True
        if not moved:  # cannot happen with two or more slots (schedule.py); guard anyway
            raise RuntimeError(f"ring enqueue stalled at chunk positions {pos} of {total}")


def on_device(device: int):
    """The device's context when this process drives several GPUs, else nothing to do."""
    if SIMULATED or len(cuda.gpus) < 2:
        return contextlib.nullcontext()
    return cuda.gpus[device]


def unit(p: Plan, step, lo, hi, op, x, out, rank: Rank, inbound, outbound,
          dtype_name, storage, divisor, path) -> None:
    """One chunk of one step on rank's streams. inbound / outbound: the ends of the links
    from the predecessor and to the successor (Link here, ipc.py's across processes)."""
    n = hi - lo
    s = rank.stream
    s_in, s_out = local_slices(p, step.block, lo, hi)
    src = x[s_in] if s_in is not None else None
    dst = out[s_out]
    uin, uout = inbound.taken if step.recv else None, outbound.sent if step.send else None
    rbuf = sbuf = None
    if step.recv:
        inbound.wait_written(uin, s)
        rbuf = inbound.view(uin, storage, n)
    if step.send:
        sbuf = outbound.view(uout, storage, n)

    if path == "copy" and step.send:
        _unit_copy_path(step, op, src, dst, rbuf, sbuf, rank, inbound, uin, outbound, uout,
                        dtype_name, storage, divisor, n)
    else:
        if step.send:
            outbound.wait_freed(uout, s)
        if not step.recv:
            if step.out and n:
                copy(dst, src, s)
            if step.send and n:
                copy(sbuf, src, s)
        elif step.reduce:
            eff = op if (step.final or op is not Op.AVG) else Op.SUM
            target = dst if step.out else sbuf
            _reduce(eff, target, rbuf, src, sbuf if (step.out and step.send) else None,
                    divisor, dtype_name, s)
        else:
            if step.out and n:
                copy(dst, rbuf, s)
            if step.send and n:
                copy(sbuf, rbuf, s)
        if step.recv:
            inbound.mark_freed(uin, s)
        if step.send:
            outbound.mark_written(uout, s)
    if step.recv:
        inbound.taken += 1
    if step.send:
        outbound.sent += 1


def _unit_copy_path(step, op, src, dst, rbuf, sbuf, rank: Rank, inbound, uin, outbound, uout,
                    dtype_name, storage, divisor, n) -> None:
    """A chunk that goes to the successor, by the copy engine: compute on the rank's stream
    into the output or a staging slot, then copy on the copy stream."""
    s, c = rank.stream, rank.copy_stream
    staged = None
    if not step.recv:
        value = src  # step 0: the input itself goes
        if step.out and n:
            copy(dst, src, s)
    elif step.reduce:
        eff = op if (step.final or op is not Op.AVG) else Op.SUM
        if step.out:
            value = dst
        else:
            staged = rank.staged % len(rank.stage.raw)
            rank.staged += 1
            rank.stage.freed[staged].wait(s)  # its last copy-out has finished
            value = rank.stage.view(staged, storage, n)
        _reduce(eff, value, rbuf, src, None, divisor, dtype_name, s)
    else:
        value = rbuf  # forward what arrived
        if step.out and n:
            copy(dst, rbuf, s)
    ready = event()
    ready.record(s)
    ready.wait(c)
    outbound.wait_freed(uout, c)
    if n:
        copy(sbuf, value, c)
    outbound.mark_written(uout, c)
    if staged is not None:
        rank.stage.freed[staged].record(c)
    if step.recv:
        # the received slot is free once both streams are done reading it
        done = event()
        done.record(c)
        done.wait(s)
        inbound.mark_freed(uin, s)


def traffic(p: Plan, itemsize: int, path: str = "stream", in_place: bool = False) -> int:
    """Bytes one rank's plan reads and writes in device memory (kernels and copies), chunk
    by chunk as unit does them: the numerator of "fraction of the copy roofline"."""
    total = 0
    for _, step, lo, hi in p.units:
        n = (hi - lo) * itemsize
        if not step.recv:
            local_copy = step.out and not in_place  # skipped when out is the input
            if path == "kernel":  # one read of x for both writes (out, successor's slot)
                total += (n if local_copy or step.send else 0) + \
                    (n if local_copy else 0) + (n if step.send else 0)
            else:  # two copies, each reading x
                total += (2 * n if local_copy else 0) + (2 * n if step.send else 0)
        elif step.reduce:
            total += 3 * n
            if step.send:  # the kernel path writes as the stream path does
                one_pass = path in ("stream", "kernel")
                total += n if (one_pass and step.out) else (0 if one_pass else 2 * n)
        elif path == "kernel":  # the persistent kernel reads a forwarded chunk once
            total += n + (n if step.out else 0) + (n if step.send else 0)
        else:
            total += (2 * n if step.out else 0) + (2 * n if step.send else 0)
    return total
