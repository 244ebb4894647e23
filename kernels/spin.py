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
"""

from __future__ import annotations

import time

from numba import cuda, types

from .launch import simulated

PAUSE_NS = 256  # the GPU's back-off between two reads of a counter


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

    @cuda.jit(device=True, inline=True)
    def now():
        return _globaltimer()

    @cuda.jit(device=True, inline=True)
    def pause():
        cuda.nanosleep(PAUSE_NS)

    @cuda.jit(device=True, inline=True)
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
