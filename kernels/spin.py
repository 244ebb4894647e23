"""Device-side waiting: a clock, a pause, a coherent read of a counter, and a bounded wait.

A persistent kernel waits for its neighbours on counters in peer memory, so every wait must
be bounded: `wait_geq` returns once the counter reaches the target, or when `timeout_ns`
have passed, or when another block has raised the kernel's error word; the caller tells
which from the value it gets back.

On a GPU the clock is the `%globaltimer` register (nanoseconds; read through inline PTX,
which Numba has no stub for), the pause is `nanosleep`, and a counter is read with an
atomic (a plain load in a loop may be hoisted out of it, or served from a stale L1 line).
Numba's simulator has none of these, and it runs device functions as Python, so there the
clock is `time.monotonic_ns`, the pause a short sleep that lets the other processes run,
and a read a plain load.

`sync(scope)` is the lighter hand-off (NCCL's): relaxed loads and stores of the counters at
GPU or system scope and one `fence.acq_rel` on each side, in place of the atomics and the
sequentially consistent fences (`membar`) around them; `sync(scope).wait_geq` pauses, and looks at the
clock and the error word, every POLLS reads only.
"""

from __future__ import annotations

import time
from functools import lru_cache
from types import SimpleNamespace

from numba import cuda, types

from .inline import inline
from .launch import simulated

PAUSE_NS = 256  # the GPU's back-off between two reads of a counter
# sync(scope).wait_geq: reads of a counter between two looks at the clock and the error word
# (and a pause; under the simulator every read pauses, to let the other processes run)
POLLS = 1 if simulated() else 64
SCOPES = ("gpu", "sys")


if simulated():
    @cuda.jit(device=True)
    def now():
        return time.monotonic_ns()

    @cuda.jit(device=True)
    def pause():
        time.sleep(20e-6)

    @cuda.jit(device=True)
    def read(counters, i):
        """counters[i]. A plain load: the simulator's atomics are read-modify-writes under a
        lock of this process only, so an atomic add of 0 could write back a stale value over
        another process's store."""
        return counters[i]

    def _ordering(scope):
        @cuda.jit(device=True)
        def load(counters, i):
            return counters[i]

        @cuda.jit(device=True)
        def store(counters, i, value):
            counters[i] = value

        @cuda.jit(device=True)
        def fence():
            pass

        return load, store, fence
else:
    from llvmlite import ir
    from numba.cuda.extending import intrinsic

    @intrinsic
    def _globaltimer(typingctx):
        def codegen(context, builder, sig, args):
            asm = ir.InlineAsm(ir.FunctionType(ir.IntType(64), []),
                               "mov.u64 $0, %globaltimer;", "=l", side_effect=True)
            return builder.call(asm, [])
        return types.int64(), codegen

    @inline
    def now():
        return _globaltimer()

    def _address(context, builder, aryty, ary, idx, idxty):
        """The address of ary[idx] as a 64-bit integer (an inline-PTX operand)."""
        from numba.cuda import cgutils
        arr = context.make_array(aryty)(context, builder, ary)
        i = context.cast(builder, idx, idxty, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, arr, [i], wraparound=False)
        return builder.ptrtoint(ptr, ir.IntType(64))

    def _ordering(scope):
        """ld.relaxed / st.relaxed of an int64 and fence.acq_rel, all at `scope`."""
        i64 = ir.IntType(64)

        @intrinsic
        def _load(typingctx, counters, i):
            def codegen(context, builder, sig, args):
                addr = _address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
                asm = ir.InlineAsm(ir.FunctionType(i64, [i64]),
                                   f"ld.relaxed.{scope}.u64 $0, [$1];", "=l,l,~{memory}",
                                   side_effect=True)
                return builder.call(asm, [addr])
            return types.int64(counters, i), codegen

        @intrinsic
        def _store(typingctx, counters, i, value):
            def codegen(context, builder, sig, args):
                addr = _address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
                v = context.cast(builder, args[2], sig.args[2], types.int64)
                asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [i64, i64]),
                                   f"st.relaxed.{scope}.u64 [$0], $1;", "l,l,~{memory}",
                                   side_effect=True)
                builder.call(asm, [addr, v])
                return context.get_dummy_value()
            return types.void(counters, i, value), codegen

        @intrinsic
        def _fence(typingctx):
            def codegen(context, builder, sig, args):
                asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []),
                                   f"fence.acq_rel.{scope};", "~{memory}", side_effect=True)
                builder.call(asm, [])
                return context.get_dummy_value()
            return types.void(), codegen

        @inline
        def load(counters, i):
            return _load(counters, i)

        @inline
        def store(counters, i, value):
            _store(counters, i, value)

        @inline
        def fence():
            _fence()

        return load, store, fence

    @inline
    def pause():
        cuda.nanosleep(PAUSE_NS)

    @inline
    def read(counters, i):
        """counters[i], read coherently (an atomic that adds nothing)."""
        return cuda.atomic.add(counters, i, 0)




@cuda.jit(device=True)
def wait_geq(counters, i, target, timeout_ns, err):
    """Wait until counters[i] >= target; give up after timeout_ns, or as soon as err[0] is
    set (another block failed). Returns the last value read: >= target means it arrived."""
    seen = read(counters, i)
    if seen >= target:
        return seen
    start = now()
    while True:
        pause()
        seen = read(counters, i)
        if seen >= target:
            return seen
        if read(err, 0) != 0 or now() - start > timeout_ns:
            return seen


@lru_cache(maxsize=None)
def sync(scope: str) -> SimpleNamespace:
    """The hand-off at `scope` ("gpu": every party on this GPU; "sys": across GPUs):
    load / store: relaxed (coherent at scope, unordered) reads and writes of a counter;
    fence: fence.acq_rel, which after a load that saw a counter makes it an acquire (the
    slot is read after it) and before a store makes it a release (the data are written
    before it); wait_geq: as the module's, pausing only every POLLS reads; wait_flag: the
    same for an LL word (a value's bits below, its flag in the high 32 bits), until the
    word carries the flag."""
    if scope not in SCOPES:
        raise ValueError(f"scope: one of {SCOPES}, got {scope!r}")
    load, store, fence = _ordering(scope)

    def poll(arrived):
        @cuda.jit(device=True)
        def wait(words, i, want, timeout_ns, err):
            """Until arrived(words[i], want), timeout_ns passed or err[0] set: the last value
            read (arrived or not: the caller tells)."""
            seen = load(words, i)
            if arrived(seen, want):
                return seen
            start = now()
            polls = 0
            while True:
                seen = load(words, i)
                if arrived(seen, want):
                    return seen
                polls += 1
                if polls == POLLS:
                    polls = 0
                    pause()
                    if load(err, 0) != 0 or now() - start > timeout_ns:
                        return seen
        return wait

    @inline
    def reached(seen, target):  # a counter: unordered, fence() after it to read what it guards
        return seen >= target

    @inline
    def flagged(word, flag):  # an LL word: its value came in the same store, no fence
        return (word >> 32) == flag

    wait, wait_flag = poll(reached), poll(flagged)
    # a plain store publishes: each counter has one writer
    return SimpleNamespace(load=load, store=store, fence=fence, wait_geq=wait,
                           wait_flag=wait_flag, publish=store)


@lru_cache(maxsize=None)
def fenced(scope: str) -> SimpleNamespace:
    """The first hand-off (RING_KERNEL_SYNC=fence) at `scope`: wait_geq (the module's, an
    atomic read per poll), fence: a sequentially consistent membar at scope, publish: an
    atomic max of the counter."""
    if scope not in SCOPES:
        raise ValueError(f"scope: one of {SCOPES}, got {scope!r}")
    gpu = scope == "gpu"

    @inline
    def fence():
        if gpu:
            cuda.threadfence()
        else:
            cuda.threadfence_system()

    @inline
    def publish(counters, i, value):
        cuda.atomic.max(counters, i, value)

    return SimpleNamespace(fence=fence, wait_geq=wait_geq, publish=publish)
