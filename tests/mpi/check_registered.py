"""comm.register(x) on the cuda device across processes (path="kernel"): the two-shot kernel
reads registered inputs and writes registered outputs in place (ring/cuda/registered.py,
ring/cuda/twoshot_kernel.py), bit for bit the rank-order reference; a buffer freed and a new
one at its address is staged, never read through a stale mapping, also in programs of
registrations, frees and calls drawn by Hypothesis; ranks whose calls differ get
MismatchError from the kernel's records, with the host's agreement off.

Under Numba's simulator only memory in a node-shared window can be mapped by the other
processes (transport/simipc.shared_array, the stand-in for cudaMalloc'd memory); on a GPU
the buffers are CuPy's (cudaMalloc'd: legacy CUDA IPC exports them)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st
from numba import cuda

import ring
import ringtypes
from ring.cuda.arrays import SIMULATED, storage_of

from .. import reference
from ..inputs import CROSS_CASES, CROSS_SECTION, REDUCIBLE_NAMES, drawn, make
from .conftest import assert_ran, same_everywhere

# under the simulator the two-shot's areas hold 256 float32: 301 elements go in 2 rounds
SIZES = (1, 37, 301) if SIMULATED else (1, 3001, (9 << 20) | 5)


class Buffer:
    """A device buffer every rank's GPU can map (collective: every rank makes one)."""

    def __init__(self, world, n: int, dtype):
        if SIMULATED:
            from ring.transport.simipc import shared_array
            self._shared = shared_array(world, n, dtype)
            self.array = self._shared.array
        else:
            import cupy as cp
            self._shared, self.array = None, cp.zeros(n, dtype)

    def set(self, a: np.ndarray) -> None:
        if SIMULATED:
            self.array.copy_to_device(a)
        else:
            self.array.set(a)

    def get(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        a = self.array[lo:hi]
        return a.copy_to_host() if SIMULATED else a.get()

    def free(self) -> None:
        """Freed for real: the simulator's window closed; on a GPU, CuPy's pool gives the
        memory back to the driver (else the next array reuses the same allocation)."""
        if self._shared is not None:
            self._shared.free()
        self.array = None
        if not SIMULATED:
            import cupy as cp
            cp.get_default_memory_pool().free_all_blocks()


@pytest.fixture(scope="module")
def kcomm():
    c = ring.Communicator(device="cuda", timeout=60, path="kernel")
    assert c._ctx.backend.kernel is not None
    yield c
    c.close()


def _launch_registered(c) -> bool:
    return bool(getattr(c._ctx.backend.last_launch, "registered", False))


def _areas(c):
    """This rank's two-shot areas, [input, output] (as bytes)."""
    made = c._ctx.backend._launchers["twoshot"]
    return made.areas.slots[c.rank][:2]


def _clear_areas(c) -> None:
    if "twoshot" in c._ctx.backend._launchers:  # (made by the first two-shot call)
        for a in _areas(c):
            a.copy_to_device(np.zeros(a.size, np.uint8))


def _untouched(c) -> list[bool]:
    """Whether this rank's input and output areas are still all zero."""
    return [not a.copy_to_host().any() for a in _areas(c)]


# every op x dtype at 2 processes, a cross-section at 1, 3 and 4 (tests/test_mpi.py)
CASES = CROSS_CASES if CROSS_SECTION else \
    [(d, o) for d in REDUCIBLE_NAMES for o in ("sum", "prod", "min", "max", "avg")
     if not (o == "avg" and ringtypes.BY_NAME[d] not in ringtypes.FLOATING)]


def test_one_process_registers_nothing(world):
    """(run alone, at 1 process: tests/test_mpi.py selects)"""
    if world.size != 1:
        pytest.skip("one process only (tests/test_mpi.py runs it so)")
    with ring.Communicator(device="cuda", path="kernel") as c:
        x = cuda.to_device(np.ones(4, np.float32)) if SIMULATED else \
            __import__("cupy").ones(4, np.float32)
        assert c.register(x) is False
        shared = Buffer(world, 4, np.float32)  # (memory a peer could map: none to map it)
        assert c.register(shared.array) is False
        shared.free()
        assert np.array_equal(_host(c.allreduce(x, algorithm="twoshot")), np.ones(4))
        for coll in ("reduce_scatter", "allgather"):  # (a copy, or nothing in place)
            y = _device(np.arange(4, dtype=np.float32))
            # an out that held something else: a new one may sit where a freed array held
            # these very values, and pass unwritten
            out = _device(np.full(4, -1, np.float32))
            assert getattr(c, coll)(y, out=out, algorithm="twoshot") is out
            assert np.array_equal(_host(out), np.arange(4)), coll
            assert np.array_equal(_host(getattr(c, coll)(y, algorithm="twoshot")), np.arange(4))
            assert getattr(c, coll)(y, out=y, algorithm="twoshot") is y


def _host(a):
    return a.copy_to_host() if SIMULATED else a.get()


@pytest.mark.parametrize("dtype,op", CASES)
def test_registered_buffers_are_reduced_in_place(kcomm, world, dtype, op):
    """x and out registered, at offsets that differ between the ranks: in place, every
    count, in place (out = x) and out, each array 16-byte aligned on every rank (16-byte
    vectors) or not (an element at a time), or out of place x aligned and out not (the
    reduce reads in vectors and writes an element at a time); the same bits as the
    rank-order reference."""
    k, r = kcomm.size, kcomm.rank
    logical = ringtypes.BY_NAME[dtype]
    bits = storage_of(logical)
    kw = {"dtype": dtype} if bits != logical else {}
    lanes = 16 // np.dtype(bits).itemsize
    top = max(SIZES) + 2 * lanes * k + 2
    xb, ob = Buffer(world, top, bits), Buffer(world, top, bits)
    assert kcomm.register(xb.array) and kcomm.register(ob.array)
    # (x aligned, out aligned): both, neither, and out of place x only
    shapes = [(n, in_place, xv, ov) for n, in_place, (xv, ov) in itertools.product(
        SIZES, (False, True), ((False, False), (True, True), (True, False)))
        if not (in_place and xv != ov)]
    for n, in_place, xv, ov in shapes:
        inputs = [make(q, n, dtype, op=op) for q in range(k)]
        want = reference.in_rank_order(inputs, op)
        # each rank's x and out at its own offsets: whole vectors apart, or one element
        # off (rank 0's x, every rank's out)
        lo = lanes * (r + 1) if xv else r + 1
        olo = lanes * 2 * r if ov else 2 * r + 1
        xb.set(np.concatenate([np.zeros(lo, bits), inputs[r].view(bits),
                               np.zeros(top - lo - n, bits)]))
        x = xb.array[lo:lo + n]
        out = x if in_place else ob.array[olo:olo + n]
        _clear_areas(kcomm)
        world.Barrier()
        got = kcomm.allreduce(x, out=out, op=op, algorithm="twoshot", **kw)
        kcomm.synchronize()
        assert got is out
        assert_ran("twoshot", "allreduce")
        assert _launch_registered(kcomm)
        aligned = kcomm._ctx.backend.last_launch.aligned
        # (what this rank told the others: bit 0 x 16-byte aligned, bit 1 out; rank 0's x
        # one element off, and an odd offset's out, never are)
        x_al, o_al = bool(aligned & 1), bool(aligned & 2)
        assert x_al if xv else not (r == 0 and x_al), aligned
        assert o_al == (x_al if in_place else ov), aligned
        assert _untouched(kcomm) == [True, True]  # neither staged nor gathered
        host = (xb.get(lo, lo + n) if in_place else ob.get(olo, olo + n))
        assert host.tobytes() == want.view(bits).tobytes(), (n, in_place, xv, ov)
        assert same_everywhere(world, host)
        if in_place:  # around x: untouched
            assert not xb.get(0, lo).any() and not xb.get(lo + n).any()
    assert kcomm.deregister(xb.array) and kcomm.deregister(ob.array)
    assert not kcomm.deregister(xb.array)
    xb.free()
    ob.free()


def test_one_registered_side_reads_or_writes_in_place_the_other_staged(kcomm, world):
    """x registered and out not (and the other way round): the registered side in place,
    the other through the areas, in rounds; the same bits."""
    k, r = kcomm.size, kcomm.rank
    n = max(SIZES)
    inputs = [make(q, n, "float32") for q in range(k)]
    want = reference.in_rank_order(inputs, "sum")
    buf = Buffer(world, n, np.float32)
    assert kcomm.register(buf.array)
    for x_registered in (True, False):
        plain = cuda.to_device(inputs[r]) if SIMULATED else __import__("cupy").asarray(inputs[r])
        if x_registered:
            buf.set(inputs[r])
            x, out = buf.array, (cuda.device_array(n, np.float32) if SIMULATED else
                                 __import__("cupy").empty(n, np.float32))
        else:
            x, out = plain, buf.array
        _clear_areas(kcomm)
        world.Barrier()
        got = kcomm.allreduce(x, out=out, algorithm="twoshot")
        kcomm.synchronize()
        assert _launch_registered(kcomm)
        # the registered side did not go through its area, the other did
        assert _untouched(kcomm) == [x_registered, not x_registered]
        host = got.copy_to_host() if SIMULATED else got.get()
        assert host.tobytes() == want.tobytes(), x_registered
    kcomm.deregister(buf.array)
    buf.free()


def test_deregistering_an_empty_array_drops_nothing(kcomm, world):
    """deregister(x) drops the registrations x's address falls in; an empty x has no
    memory to drop: False, and the buffer its address falls in (an empty view at its start
    or inside it) stays registered until deregistered itself."""
    buf = Buffer(world, 64, np.float32)
    assert kcomm.register(buf.array)
    for empty in (buf.array[:0], buf.array[5:5]):
        assert kcomm.deregister(empty) is False
    assert kcomm.deregister(buf.array)  # (registered until now)
    assert not kcomm.deregister(buf.array)
    buf.free()


@pytest.mark.parametrize("side", ["x", "out"])
def test_a_side_deregistered_on_one_rank_is_staged_on_every_rank(kcomm, world, side):
    """x and out registered on every rank, then one side deregistered on rank 0 only: the
    two-shot's records name no registration for that side on rank 0, so every rank stages
    it (each reads every rank's x, or writes every rank's out), the other side in place;
    the same bits."""
    k, r = kcomm.size, kcomm.rank
    n = max(SIZES)
    inputs = [make(q, n, "float32", seed=5) for q in range(k)]
    xb, ob = Buffer(world, n, np.float32), Buffer(world, n, np.float32)
    assert kcomm.register(xb.array) and kcomm.register(ob.array)
    if r == 0:
        assert kcomm.deregister((xb if side == "x" else ob).array)
    xb.set(inputs[r])
    _clear_areas(kcomm)
    world.Barrier()
    kcomm.allreduce(xb.array, out=ob.array, algorithm="twoshot")
    kcomm.synchronize()
    assert _untouched(kcomm) == [side != "x", side != "out"]
    assert ob.get().tobytes() == reference.in_rank_order(inputs, "sum").tobytes()
    for b in (xb, ob):
        kcomm.deregister(b.array)
        b.free()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8", "float64"])
def test_staged_arrays_copy_in_vectors_where_aligned_and_elements_where_not(kcomm, world,
                                                                            dtype):
    """x and out not registered: staged into the areas and gathered out of them with 16-byte
    vectors where the array is aligned, an element at a time where not (x or out one
    element off its allocation, on some ranks), in rounds; the same bits."""
    k, r = kcomm.size, kcomm.rank
    logical = ringtypes.BY_NAME[dtype]
    bits = storage_of(logical)
    kw = {"dtype": dtype} if bits != logical else {}
    n = max(SIZES)
    inputs = [make(q, n, dtype) for q in range(k)]
    want = reference.in_rank_order(inputs, "sum").view(bits)
    for xoff, ooff in ((0, 0), (1, 0), (0, 1), (r % 2, 1 - r % 2)):
        xa = _device(np.concatenate([np.zeros(xoff, bits), inputs[r].view(bits)]))
        oa = _device(np.zeros(n + ooff, bits))
        x, out = xa[xoff:], oa[ooff:]
        world.Barrier()
        kcomm.allreduce(x, out=out, algorithm="twoshot", **kw)
        kcomm.synchronize()
        assert not _launch_registered(kcomm)
        assert kcomm._ctx.backend.last_launch.aligned == (xoff == 0) | (ooff == 0) << 1
        assert _host(out).tobytes() == want.tobytes(), (xoff, ooff)


def _device(a: np.ndarray):
    return cuda.to_device(a) if SIMULATED else __import__("cupy").asarray(a)


# a block of each rank: one element; odd, in rounds from 3 ranks on (the simulator's areas
# hold 256 float32, a 64 of them a block at 4 ranks) and one element off 16 bytes on rank
# 0; whole vectors, in rounds from 2 ranks on where the elements are 2 bytes or less
BLOCKS = ((1, False), (77, False), (128, True)) if SIMULATED else \
    ((1, False), (3001, False), ((5 << 20) + 64, True))
HALF_DTYPES = sorted({d for d, _ in CASES})


def _half(kcomm, world, collective: str, dtype: str, op: str) -> None:
    """kcomm.<collective>(x, out, algorithm="twoshot") for every block size of BLOCKS, out
    of place and in place, the arrays registered (the one the peers touch: reduce-scatter's
    x, all-gather's out, read or written in place) or not (staged): the same bits as the
    rank-order reference, and the areas the call needs untouched where it went in place."""
    k, r = kcomm.size, kcomm.rank
    logical = ringtypes.BY_NAME[dtype]
    bits = storage_of(logical)
    kw = {"dtype": dtype} if bits != logical else {}
    kw.update(op=op) if collective == "reduce_scatter" else None
    lanes = 16 // np.dtype(bits).itemsize
    rs = collective == "reduce_scatter"
    top = k * max(m for m, _ in BLOCKS) + 2 * lanes
    buf = Buffer(world, top, bits)
    assert kcomm.register(buf.array)
    for (m, vectors), in_place, registered in itertools.product(BLOCKS, (False, True),
                                                                 (False, True)):
        inputs = [make(q, k * m if rs else m, dtype, op=op) for q in range(k)]
        want = (reference.in_rank_order(inputs, op)[r * m:(r + 1) * m] if rs else
                np.concatenate(inputs)).view(bits)
        lo = 0 if vectors or r else 1  # (rank 0's arrays one element off 16 bytes)
        big = np.zeros(top, bits)  # the array of k m: x, or out
        if rs:
            big[lo:lo + k * m] = inputs[r].view(bits)
        else:
            big[lo + r * m:lo + (r + 1) * m] = inputs[r].view(bits)
        if registered:
            buf.set(big)
            whole = buf.array[lo:lo + k * m]
        else:
            whole = _device(big)[lo:lo + k * m]
        mine = whole[r * m:(r + 1) * m]
        if rs:
            x, out = whole, (mine if in_place else _device(np.zeros(m + lo, bits))[lo:])
        else:
            x, out = (mine if in_place else _device(big[lo + r * m:lo + (r + 1) * m])), whole
        _clear_areas(kcomm)
        world.Barrier()
        got = getattr(kcomm, collective)(x, out=out, algorithm="twoshot", **kw)
        kcomm.synchronize()
        assert got is out
        assert_ran("twoshot", collective)
        assert _launch_registered(kcomm) == registered
        aligned = kcomm._ctx.backend.last_launch.aligned
        # (bit 0: x 16-byte aligned at every block it is read from; bit 1: out)
        at = lo == 0 and (not in_place or r * m % lanes == 0)  # this rank's block
        blocks = lo == 0 and m % lanes == 0  # every block of the k m
        want_al = int(blocks) | int(at) << 1 if rs else int(at or not in_place) | int(blocks) << 1
        assert aligned == want_al, (aligned, m, in_place)
        assert aligned == 3 or not vectors
        # reduce-scatter never writes the output areas, all-gather never the input areas;
        # registered, the other is left alone too
        assert _untouched(kcomm) == ([registered, True] if rs else [True, registered])
        assert _host(out).tobytes() == want.tobytes(), (m, in_place, registered)
    assert kcomm.deregister(buf.array)
    buf.free()


@pytest.mark.parametrize("dtype,op", CASES)
def test_two_shot_reduce_scatter_folds_each_block_in_rank_order(kcomm, world, dtype, op):
    """The two-shot kernel's reduce-scatter: block r of every rank's x, read in place
    (registered) or staged, folded in rank order into rank r's out; every op x dtype."""
    _half(kcomm, world, "reduce_scatter", dtype, op)


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_two_shot_all_gather_pushes_each_block_into_every_out(kcomm, world, dtype):
    """The two-shot kernel's all-gather: rank r's x into block r of every rank's out,
    written in place (registered) or through the output areas; every dtype."""
    _half(kcomm, world, "allgather", dtype, "sum")


def test_two_shot_halves_repeat_as_kept_calls(kcomm, world):
    """A reduce-scatter and an all-gather repeated on the same arrays: kept (one launch,
    replayed), right each time with new data."""
    k, r = kcomm.size, kcomm.rank
    m = 37
    x, out = _device(np.zeros(k * m, np.float32)), _device(np.zeros(m, np.float32))
    y, g = _device(np.zeros(m, np.float32)), _device(np.zeros(k * m, np.float32))
    before = len(kcomm._kfast)
    for i in range(3):
        xs = [make(q, k * m, "float32", seed=30 + i) for q in range(k)]
        x.copy_to_device(xs[r]) if SIMULATED else x.set(xs[r])
        y.copy_to_device(xs[r][:m]) if SIMULATED else y.set(xs[r][:m])
        assert kcomm.reduce_scatter(x, out=out, algorithm="twoshot") is out
        assert kcomm.allgather(y, out=g, algorithm="twoshot") is g
        kcomm.synchronize()
        want = reference.in_rank_order(xs, "sum")[r * m:(r + 1) * m]
        assert _host(out).tobytes() == want.tobytes(), i
        assert _host(g).tobytes() == np.concatenate([a[:m] for a in xs]).tobytes(), i
    assert len(kcomm._kfast) == before + 2  # (the two signatures, kept)


def test_two_shot_halves_are_kernel_only(world):
    """Off the kernel path (path="stream") twoshot refuses reduce-scatter and all-gather
    with its reason on every rank; on the host device it says it runs them on cuda."""
    with ring.Communicator(device="cuda", timeout=30, path="stream") as c:
        for coll in ("reduce_scatter", "allgather"):
            why = c.why_not("twoshot", coll, 64)
            assert why is not None and "kernel path" in why, why
        with pytest.raises(ValueError, match="kernel path"):  # (and the communicator
            c.allgather(_device(np.ones(2, np.float32)), algorithm="twoshot")  # broken)
    with ring.Communicator(device="host") as h:
        assert h.why_not("twoshot", "allgather", 64) == \
            "twoshot runs allgather on the cuda device only"


def test_a_freed_buffer_is_staged_and_a_new_one_at_its_address_never_read_stale(kcomm, world):
    """Register a, free it, make b (where the allocator may put it at a's address) and call
    with b unregistered: staged, right; registered: in place, right. Each rank's mapping of
    the others' memory is of b, never of a."""
    k, r = kcomm.size, kcomm.rank
    n = 37
    a = Buffer(world, n, np.float32)
    assert kcomm.register(a.array)
    a.set(np.full(n, 1000 + r, np.float32))
    kcomm.allreduce(a.array, out=a.array, algorithm="twoshot")
    kcomm.synchronize()
    assert _launch_registered(kcomm)
    a.free()
    b = Buffer(world, n, np.float32)
    inputs = [make(q, n, "float32", seed=3) for q in range(k)]
    want = reference.in_rank_order(inputs, "sum")
    for registered in (False, True):
        if registered:
            assert kcomm.register(b.array)
        b.set(inputs[r])
        kcomm.allreduce(b.array, out=b.array, algorithm="twoshot")
        kcomm.synchronize()
        assert _launch_registered(kcomm) == registered
        assert b.get().tobytes() == want.tobytes(), registered
    b.free()


# programs of registrations and calls (the same on every rank: derandomized): register
# (collective), deregister on every rank or on rank 0 only, free a buffer and make a new one
# (where the allocator may reuse the address), and two-shot all-reduces of x into out
# (either buffer, in place where they are the same), each call right bit for bit and each
# side in place exactly where every rank's buffer is registered now
# (RING_TEST_EXAMPLES: how many; 30 at 2 processes, 12 in the cross-section at 3 and 4,
# a deep run more: 100 find the one-round fault of tools/mutants.py, 30 need not;
# RING_TEST_SEED: another set of programs)
PROGRAMS = 12 if CROSS_SECTION else 30
CALL = st.tuples(st.just("call"), st.integers(0, 1), st.integers(0, 1), st.integers(0, 9))
STEP = st.one_of(
    st.tuples(st.sampled_from(["register", "register", "deregister", "deregister on rank 0",
                               "remake", "remake"]), st.integers(0, 1)),
    CALL, CALL)


def run_registrations(kcomm, world, n: int, steps) -> str:
    """One program on this rank, on buffers of n float32: '' where every call is right,
    else what is wrong."""
    k, r = kcomm.size, kcomm.rank
    bufs = [Buffer(world, n, np.float32) for _ in range(2)]
    mine = [False, False]  # whether this rank's registration of each buffer holds
    try:
        for i, step in enumerate(steps):
            kind, s = step[0], step[1]
            if kind == "register":
                if not kcomm.register(bufs[s].array):
                    return f"step {i} {step}: refused"
                mine[s] = True
            elif kind.startswith("deregister"):
                if kind == "deregister" or r == 0:
                    if kcomm.deregister(bufs[s].array) != mine[s]:
                        return f"step {i} {step}: deregister's answer is not {mine[s]}"
                    mine[s] = False
            elif kind == "remake":
                bufs[s].free()
                bufs[s] = Buffer(world, n, np.float32)
                mine[s] = False
            else:
                _, xi, oi, seed = step
                inputs = [make(q, n, "float32", seed=seed) for q in range(k)]
                bufs[xi].set(inputs[r])
                _clear_areas(kcomm)
                world.Barrier()
                kcomm.allreduce(bufs[xi].array, out=bufs[oi].array, algorithm="twoshot")
                kcomm.synchronize()
                if bufs[oi].get().tobytes() != reference.in_rank_order(inputs, "sum").tobytes():
                    return f"step {i} {step}: differs from the reference"
                everywhere = [all(world.allgather(mine[b])) for b in (xi, oi)]
                if _untouched(kcomm) != everywhere:
                    return (f"step {i} {step}: areas untouched {_untouched(kcomm)}, where "
                            f"registered everywhere {everywhere}")
        return ""
    finally:
        for b in bufs:
            b.free()


@drawn(PROGRAMS)
@given(st.sampled_from(SIZES[1:]), st.lists(STEP, min_size=1, max_size=12))
def test_programs_of_registrations_and_calls_are_right_and_in_place_where_registered(
        kcomm, world, n, steps):
    if kcomm.size == 1:
        return  # (one process registers nothing: above)
    problems = world.allgather(run_registrations(kcomm, world, n, steps))
    assert not any(problems), f"{n}, {steps}: {problems}"


def test_kept_calls_on_registered_buffers_ask_that_their_registrations_hold(kcomm, world):
    """The same call again is kept (the per-call fast path) with a check that its
    registrations hold; a buffer freed and a new one at its address (the same signature)
    fails the check, and the call is bound anew, staged, right."""
    k, r = kcomm.size, kcomm.rank
    n = 37
    a = Buffer(world, n, np.float32)
    assert kcomm.register(a.array)
    for i in range(3):
        inputs = [make(q, n, "float32", seed=10 + i) for q in range(k)]
        a.set(inputs[r])
        kcomm.allreduce(a.array, out=a.array, algorithm="twoshot")
        kcomm.synchronize()
        assert a.get().tobytes() == reference.in_rank_order(inputs, "sum").tobytes(), i
    assert _launch_registered(kcomm)
    assert any(known.valid is not None for known in kcomm._kfast.values())  # kept, checked
    a.free()
    b = Buffer(world, n, np.float32)
    inputs = [make(q, n, "float32", seed=20) for q in range(k)]
    b.set(inputs[r])
    kcomm.allreduce(b.array, out=b.array, algorithm="twoshot")
    kcomm.synchronize()
    assert not _launch_registered(kcomm)
    assert b.get().tobytes() == reference.in_rank_order(inputs, "sum").tobytes()
    b.free()


def test_auto_takes_the_rules_for_the_registration_of_the_calls_buffers(world, tmp_path):
    """A tuning table whose all-reduce rules differ by registration (ring/tuning.py): the
    two-shot for registered buffers, the ring for staged ones. "auto" runs each where its
    rule says, right (a call whose x alone is registered is a staged one); a rank that
    deregisters a buffer its peers keep registered resolves otherwise, and every rank gets
    MismatchError (blocking calls: at the call)."""
    import json
    table = tmp_path / "cuda.json"  # (each rank its own copy of the same table)
    table.write_text(json.dumps({"rules": [
        {"ranks": 2, "nodes": 1, "max_bytes": 1 << 30, "algorithm": "twoshot",
         "registered": True},
        {"ranks": 2, "nodes": 1, "max_bytes": 1 << 30, "algorithm": "ring",
         "registered": False},
        *({"collective": coll, "ranks": 2, "nodes": 1, "max_bytes": 1 << 30,
           "algorithm": alg, "registered": reg}
          for coll in ("allgather", "reduce_scatter")
          for alg, reg in (("twoshot", True), ("ring", False)))]}))
    c = ring.Communicator(device="cuda", timeout=60, path="kernel", tuning=str(table),
                          blocking=True)
    k, r = c.size, c.rank
    n = 37
    inputs = [make(q, n, "float32", seed=30) for q in range(k)]
    want = reference.in_rank_order(inputs, "sum").tobytes()
    buf = Buffer(world, n, np.float32)
    assert c.register(buf.array)
    for _ in range(2):  # the full path, then kept
        buf.set(inputs[r])
        c.allreduce(buf.array, out=buf.array)
        assert c.last_algorithm == "twoshot" and _launch_registered(c)
        assert buf.get().tobytes() == want
    x = cuda.to_device(inputs[r]) if SIMULATED else __import__("cupy").asarray(inputs[r])
    c.allreduce(x, out=x)
    assert c.last_algorithm == "ring"  # (its own order of the sums from 3 ranks on)
    np.testing.assert_allclose(x.copy_to_host() if SIMULATED else x.get(),
                               reference.in_rank_order(inputs, "sum"), rtol=1e-5)
    # x registered, out not: the two-shot would stage out, so the call is not registered
    # (every side it takes in place must be) and runs the staged rule
    buf.set(inputs[r])
    c.allreduce(buf.array, out=x)
    assert c.last_algorithm == "ring"
    np.testing.assert_allclose(x.copy_to_host() if SIMULATED else x.get(),
                               reference.in_rank_order(inputs, "sum"), rtol=1e-5)
    # the two-shot's all-gather takes only its out in place, the reduce-scatter only its x:
    # registered, those calls run the registered rule whatever the other side is
    whole = Buffer(world, k * n, np.float32)
    assert c.register(whole.array)
    c.allgather(_device(inputs[r]), out=whole.array)
    assert c.last_algorithm == "twoshot" and _launch_registered(c)
    assert whole.get().tobytes() == np.concatenate(inputs).tobytes()
    everything = [make(q, k * n, "float32", seed=31) for q in range(k)]
    whole.set(everything[r])
    mine = c.reduce_scatter(whole.array)
    assert c.last_algorithm == "twoshot" and _launch_registered(c)
    np.testing.assert_allclose(_host(mine),
                               reference.in_rank_order(everything, "sum")[r * n:(r + 1) * n],
                               rtol=1e-5)
    assert c.deregister(whole.array)
    whole.free()
    if r == k - 1:
        assert c.deregister(buf.array)
    buf.set(inputs[r])
    with pytest.raises(ring.MismatchError, match="algorithm"):
        c.allreduce(buf.array, out=buf.array)
    c.close()
    buf.free()


def test_memory_no_peer_can_map_is_not_registered_on_any_rank(kcomm, world):
    """Rank 0's buffer cannot be mapped (under the simulator: private memory; on a GPU: not
    device memory at all is refused as a bad argument, so the mappable case stands in):
    register is False on every rank, and the calls are staged."""
    r = kcomm.rank
    assert SIMULATED  # (on a GPU every cudaMalloc'd buffer can be mapped: not selected)
    buf = Buffer(world, 8, np.float32)
    x = cuda.to_device(np.ones(8, np.float32)) if r == 0 else buf.array
    assert kcomm.register(x) is False
    assert same_everywhere(world, np.array([0]))
    buf.free()


def test_a_mapping_refused_on_one_rank_leaves_every_rank_staged(kcomm, world, monkeypatch):
    """Every rank's buffer can be exported, but the driver refuses rank 0 its peers'
    mappings: register is False on every rank (not True on the ranks whose mappings were
    made), and the two-shot's calls on the buffer are staged, and right, on every rank."""
    from ring.cuda import registered
    if kcomm.rank == 0:
        def refused(*args, **kwargs):
            raise RuntimeError("the driver refused the mapping (planted by the test)")
        monkeypatch.setattr(registered.PEERS, "get", refused)
    buf = Buffer(world, 8, np.float32)
    buf.set(np.full(8, kcomm.rank + 1, np.float32))
    assert kcomm.register(buf.array) is False
    monkeypatch.undo()
    out = kcomm.allreduce(buf.array, algorithm="twoshot")
    assert not _launch_registered(kcomm)
    want = np.full(8, kcomm.size * (kcomm.size + 1) // 2, np.float32)
    assert np.array_equal(_host(out), want)
    buf.free()


def test_a_bad_argument_to_register_raises_on_every_rank(world):
    """A host array on rank 0: TypeError there, MismatchError on the others, and the
    communicator broken on every rank (as after a collective's bad argument)."""
    r = world.rank
    buf = Buffer(world, 8, np.float32)
    x = np.ones(8, np.float32) if r == 0 else buf.array
    c = ring.Communicator(device="cuda", timeout=60, path="kernel")
    if r == 0:
        with pytest.raises(TypeError, match="x: expected"):
            c.register(x)
    else:
        with pytest.raises(ring.MismatchError, match="rank 0's argument was refused"):
            c.register(x)
    with pytest.raises(ring.CommunicatorError):
        c.register(buf.array)
    c.close()
    buf.free()


@pytest.mark.parametrize("algorithm,differs", [
    ("twoshot", "count"), ("twoshot", "dtype"), ("oneshot", "count"), ("oneshot", "op"),
    ("ring", "count"), ("ring", "op"), ("ring", "collective"), ("twoshot", "collective"),
    ("ring", "algorithm"),
    ("oneshot", "algorithm"), ("ring", "count of a large call")])
def test_ranks_whose_calls_differ_get_mismatch_from_the_call_board(world, algorithm, differs):
    """check=False: no host agreement; rank 0's call differs from the others' (one more
    element, of a small call or a large one, float64 for float32, max for sum, a
    reduce-scatter for the all-reduce, or the two-shot kernel where the others run
    `algorithm`'s, every kernel having run once). Every rank's kernel reads every rank's
    word on the call board before it touches any peer's data, stops, and
    synchronize() raises MismatchError, on every rank; the communicator is broken after."""
    r = world.rank
    odd = r == 0
    # (a large call goes in the ring kernel's simple protocol, a small one as LL words)
    n = (8 if differs != "count of a large call" else 1024) * world.size + \
        (odd and differs.startswith("count"))
    dtype = np.float32 if not (odd and differs == "dtype") else np.float64
    op = "max" if odd and differs == "op" else "sum"
    alg = "twoshot" if odd and differs == "algorithm" else algorithm
    with ring.Communicator(device="cuda", timeout=30, path="kernel", check=False) as c:
        x = cuda.to_device(np.ones(n, dtype)) if SIMULATED else \
            __import__("cupy").ones(n, dtype)
        if differs == "algorithm":  # (a kernel's areas are made by every rank together,
            for a in (algorithm, "twoshot"):  # on its first call: before ranks differ)
                c.allreduce(cuda.to_device(np.ones(8, np.float32)), algorithm=a)
        with pytest.raises(ring.MismatchError, match=r"rank \d+ runs another call than rank "
                                                     rf"{r}: .*found on the GPU"):
            if odd and differs == "collective":
                c.reduce_scatter(x, op=op, algorithm=alg)
            else:
                c.allreduce(x, op=op, algorithm=alg)
            c.synchronize()
        with pytest.raises(ring.CommunicatorError):
            c.allreduce(x, algorithm=algorithm)


def test_a_ranks_refusal_stops_the_peers_kernels_at_the_call_board(world):
    """check=False: rank 0 refuses its call on the host (a bad op: its own ValueError at
    the call) after the others have launched theirs. With no host agreement, what tells
    them is the call board: rank 0 posts REFUSED there (board.refusal), their kernels stop
    on it, and synchronize() raises MismatchError naming rank 0's refusal, found on the
    GPU, not a timeout and not "another call"."""
    r = world.rank
    if world.size == 1:
        pytest.skip("a refusal needs a peer")
    with ring.Communicator(device="cuda", timeout=30, path="kernel", check=False) as c:
        x = _device(np.ones(8 * world.size, np.float32))
        c.allreduce(x)
        c.synchronize()
        if r == 0:
            with pytest.raises(ValueError, match="op"):
                c.allreduce(x, op="bogus")
        else:
            with pytest.raises(ring.MismatchError, match=rf"rank 0 refused the call that rank "
                                                         rf"{r} ran .*found on the GPU"):
                c.allreduce(x)
                c.synchronize()
        with pytest.raises(ring.CommunicatorError):
            c.allreduce(x)


def test_the_call_board_counts_every_kernel_path_launch(world):
    """check=False, every rank alike: calls of the three kernels in turn (and again), all
    right; every launch moves the board's count on by one, whatever its kernel."""
    with ring.Communicator(device="cuda", timeout=30, path="kernel", check=False) as c:
        n = 8 * world.size
        x = cuda.to_device(np.arange(n, dtype=np.float32)) if SIMULATED else \
            __import__("cupy").arange(n, dtype=np.float32)
        algs = ["ring", "oneshot", "twoshot", "ring", "twoshot", "oneshot"]
        for alg in algs:
            out = c.allreduce(x, algorithm=alg)
            c.synchronize()
            got = out.copy_to_host() if SIMULATED else out.get()
            np.testing.assert_array_equal(got, np.arange(n, dtype=np.float32) * world.size)
        m, r = n // world.size, world.rank
        for _ in range(2):  # the two-shot's reduce-scatter and all-gather: launches too
            out = c.reduce_scatter(x, algorithm="twoshot")
            c.synchronize()
            np.testing.assert_array_equal(_host(out), np.arange(r * m, (r + 1) * m) * world.size)
            out = c.allgather(x[:m], algorithm="twoshot")
            c.synchronize()
            np.testing.assert_array_equal(_host(out), np.tile(np.arange(m), world.size))
        board = c._ctx.backend.kernel.board
        assert board.state.copy_to_host().tolist() == [len(algs) + 4, 0]
