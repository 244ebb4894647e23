"""Memory ordering for compiled code that shares memory with other processes (Numba CPU).

Numba has no atomics on the CPU, and a loop that polls an array element can be compiled to
read it once. These three intrinsics give compiled code what a lock-free handshake needs,
on raw addresses (an MPI shared-memory window's, for instance):

    load_acquire(addr)          the int64 at addr; reads after it see what the writer
                                wrote before its store_release (and the load is re-done
                                every time: a polling loop polls)
    store_release(addr, value)  every write before it is visible before value is
    pointer(addr)               addr as a void pointer, for numba.carray(pointer(a), n, dt)
    yield_core()                sched_yield(): a poll that outnumbers the cores lets the
                                process it waits for run
    poll(addr, need, spins, yields)  the compiled wait built from them (the fast path's
                                round, the host ring's walk)

On x86 both orderings cost nothing beyond stopping the compiler from moving memory
accesses across them; LLVM emits the barriers other CPUs need.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba import njit
from numba.extending import intrinsic


def _int64_pointer(builder, addr):
    return builder.inttoptr(addr, ir.IntType(64).as_pointer())


@intrinsic
def load_acquire(typingctx, addr):
    def codegen(context, builder, sig, args):
        return builder.load_atomic(_int64_pointer(builder, args[0]), "acquire", 8)
    return types.int64(types.int64), codegen


@intrinsic
def store_release(typingctx, addr, value):
    def codegen(context, builder, sig, args):
        builder.store_atomic(args[1], _int64_pointer(builder, args[0]), "release", 8)
        return context.get_dummy_value()
    return types.void(types.int64, types.int64), codegen


@intrinsic
def pointer(typingctx, addr):
    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())
    return types.voidptr(types.int64), codegen


@intrinsic
def yield_core(typingctx):
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []),
                                            "sched_yield")
        builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


@njit(inline="always")
def poll(addr, need, spins, yields):
    """Poll the int64 counter at addr until it reaches need: `spins` polls, then `yields`
    polls each after yield_core(). Returns the (spins, yields) left, or (-1, 0): gave up
    (the caller hands the wait to Python's bounded one)."""
    while load_acquire(addr) < need:
        if spins > 0:
            spins -= 1
        elif yields > 0:
            yields -= 1
            yield_core()
        else:
            return -1, 0
    return spins, yields
