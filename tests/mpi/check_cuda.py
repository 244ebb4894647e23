"""The 'cuda' device across processes, on real ranks of one node. On a GPU: CUDA IPC and
stream memory operations, CuPy arrays in and out, sizes up to 64 K elements. Under Numba's
simulator: the same backend and per-chunk code with IPC emulated in MPI shared memory
(ring/transport/simipc.py), Numba device arrays, tiny sizes. Results are compared bit for bit
with the exact reference of the flat ring's order (tests/reference.py, independent of
ring/), with the GPU's 16-byte block alignment.

RING_TEST_PATH picks the data path of the shared communicator (default "stream"):
test_mpi.py runs the collectives again with "kernel", the persistent kernel, and on a GPU
the whole suite with "auto" (test_cuda_auto_path)."""

import os
import time
import warnings

import numpy as np
import pytest
from numba import cuda

import ring
import ringtypes
from ring.cuda import board
from ring.cuda.arrays import SIMULATED, storage_of
from ring.cuda.enqueue import align
from ring.cuda.persistent import ERR_CODE, ERR_SEEN

from .. import reference
from ..gpu import DEVICE_GROWTH_LIMIT, free_device_bytes
from ..inputs import CROSS_CASES, CROSS_SECTION, DTYPE_NAMES, REDUCIBLE_NAMES, make
from .conftest import assert_ran, same_everywhere

if SIMULATED:
    cp = None
    CHUNK, SIZES, PER = 256, (0, 1, 37, 301), (0, 1, 7, 70)
else:
    import cupy as cp  # on a GPU the test needs it: a missing CuPy fails, never skips
    CHUNK, SIZES, PER = 4096, (0, 1, 37, 3001, 1 << 16 | 5), (0, 1, 7, 5000)


PATH = os.environ.get("RING_TEST_PATH", "stream")


@pytest.fixture(scope="module")
def gcomm():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the kernel path must not fall back unseen
        c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=PATH)
    assert c.device == "cuda"
    if PATH != "auto":  # (auto: either, as measured; test_the_auto_path_... checks which)
        assert (c._ctx.backend.kernel is not None) == (PATH == "kernel")
    yield c
    c.close()


def _gpu(a):
    bits = a.view(storage_of(a.dtype))  # bfloat16 and float8 travel as integer bits
    return cuda.to_device(bits) if cp is None else cp.asarray(bits)


def _host(d, dtype=None):
    a = d.copy_to_host() if cp is None else cp.asnumpy(d)
    return a.view(dtype) if dtype is not None else a


def _kw(dtype):
    """dtype= for the logical dtypes that travel as bits."""
    dt = np.dtype(ringtypes.BY_NAME[dtype]) if isinstance(dtype, str) else np.dtype(dtype)
    return {"dtype": dt.name} if storage_of(dt) != dt else {}


def _same_kind(got, x) -> bool:
    return type(got) is type(x)


CASES = CROSS_CASES if CROSS_SECTION else \
    [(d, o) for d in REDUCIBLE_NAMES for o in ("sum", "prod", "min", "max", "avg")
     if not (o == "avg" and ringtypes.BY_NAME[d] not in ringtypes.FLOATING)]


@pytest.mark.parametrize("dtype,op", CASES)
def test_allreduce_matches_the_exact_reference(gcomm, world, dtype, op):
    k, r = gcomm.size, gcomm.rank
    for n in SIZES:
        inputs = [make(q, n, dtype, op=op) for q in range(k)]
        kw = _kw(dtype)
        x = _gpu(inputs[r])
        got = gcomm.allreduce(x, op=op, **kw)
        assert _same_kind(got, x)
        assert_ran("ring", "allreduce")
        want = reference.allreduce(inputs, op, align=align(inputs[0].dtype.itemsize))
        host = _host(got, inputs[0].dtype)
        assert host.tobytes() == want.tobytes(), (dtype, op, n)
        assert same_everywhere(world, host)


@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
def test_reduce_scatter_and_allgather(gcomm, collective):
    k, r = gcomm.size, gcomm.rank
    for per in PER:
        n = per * k if collective == "reduce_scatter" else per
        inputs = [make(q, n, "float32") for q in range(k)]
        got = getattr(gcomm, collective)(_gpu(inputs[r]))
        want = reference.expected(collective, inputs, "sum")[r]
        assert _host(got).tobytes() == want.tobytes()


def test_in_place_and_out(gcomm):
    k = gcomm.size
    base = np.arange(1000, dtype=np.float32)
    x = _gpu(base)
    assert gcomm.allreduce(x, out=x) is x
    assert np.array_equal(_host(x), base * k)
    out = _gpu(np.empty(1000, np.float32))
    assert gcomm.allreduce(_gpu(np.ones(1000, np.float32)), out=out, op="max") is out
    assert np.array_equal(_host(out), np.ones(1000, np.float32))


def _set(d, a):
    """Write host array a into device array d (in place: same memory)."""
    if cp is None:
        d.copy_to_device(a)
    else:
        d.set(a)


def test_repeated_calls_reuse_their_kernel_launch(gcomm):
    """On the kernel path a repeated call of one signature agrees on its kept record and
    fires its kept launch (ring/cuda/repeated.py): new contents are read, other arrays
    and other collectives get signatures of their own, a new out (out=None) never is one."""
    r, k = gcomm.rank, gcomm.size
    x, out, other = (_gpu(np.zeros(37, np.float32)) for _ in range(3))
    kept = len(gcomm._kfast) if PATH == "kernel" else None
    for i in range(3):
        _set(x, np.full(37, r + i, np.float32))
        assert gcomm.allreduce(x, out=out, algorithm="ring") is out
        assert np.array_equal(_host(out), np.full(37, k * i + k * (k - 1) // 2, np.float32))
    assert gcomm.allreduce(x, out=other, algorithm="ring") is other  # only out differs
    assert np.array_equal(_host(other), _host(out))
    assert gcomm.allreduce(x, out=other, algorithm="ring", op="max") is other
    assert np.array_equal(_host(other), np.full(37, k + 1, np.float32))
    assert np.array_equal(_host(gcomm.allreduce(x, algorithm="ring")), _host(out))
    got = gcomm.allgather(x, out=_gpu(np.zeros(37 * k, np.float32)))
    assert np.array_equal(_host(got), np.repeat(np.arange(k, dtype=np.float32) + 2, 37))
    third = _gpu(np.zeros(37, np.float32))
    for i in range(2):  # async_op: learnt from a Work's call, then kept calls return Works
        _set(x, np.full(37, r + 10 * i, np.float32))
        works = [gcomm.allreduce(x, out=o, algorithm="ring", async_op=True)
                 for o in (out, third)]
        assert [w.wait() for w in works] == [out, third]
        for o in (out, third):
            assert np.array_equal(_host(o), np.full(37, 10 * i * k + k * (k - 1) // 2,
                                                    np.float32))
    if PATH == "kernel":
        # x -> out, x -> other (sum, max), the all-gather, x -> third; not out=None (a new
        # array each call)
        assert len(gcomm._kfast) == kept + 5


def _links_and_sums(world, path: str, algorithm=None) -> None:
    """A new communicator on `path` sums the ranks' 1..K (the set-up after a refused one)."""
    with ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=path) as c:
        x = _gpu(np.full(5, c.rank + 1.0, np.float32))
        got = _host(c.allreduce(x, algorithm=algorithm))
        assert np.array_equal(got, np.full(5, world.size * (world.size + 1) / 2)), path


def test_ranks_with_other_kernel_shapes_are_refused_on_every_rank(world, monkeypatch):
    """RING_KERNEL_CHANNELS set on one rank only: the kernel path's shapes differ, so a
    communicator that may take it (path "auto" or "kernel") is refused on every rank with
    one ValueError naming both shapes (no rank left in the set-up); the stream path, which
    has no kernel shape, is made; and the next communicator links as usual."""
    if world.size == 1:
        return  # (nothing to differ from)
    if world.rank == 0:
        monkeypatch.setenv("RING_KERNEL_CHANNELS", "3")
    for path in ("auto", "kernel"):
        with pytest.raises(ValueError, match=rf"^path='{path}': ranks disagree on \(channels, "
                           r"threads\): \[[^]]*\(3, \d+\)[^]]*\]"):
            ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=path)
    _links_and_sums(world, "stream")


@pytest.mark.parametrize("name,value,other", [("RING_KERNEL_PROTO", "simple", "ll"),
                                               ("RING_TWOSHOT_BLOCKS", "1", None)])
def test_ranks_with_other_kernel_settings_are_refused_on_every_rank(world, monkeypatch, name,
                                                                    value, other):
    """A kernel-path setting both ends of a link read alike, set otherwise on rank 0 (an LL
    sender beside a simple receiver waited out the timeout): a communicator that may take
    the kernel path is refused on every rank with one ValueError naming every rank's;
    the stream path is made; set alike (also where one rank names the default), it runs."""
    if world.size == 1:
        return
    if world.rank == 0:
        monkeypatch.setenv(name, value)
    elif other is not None:
        monkeypatch.setenv(name, other)
    for path in ("auto", "kernel"):
        with pytest.raises(ValueError, match=rf"^path='{path}': ranks disagree on "
                           r"\(RING_KERNEL_PROTO, RING_TWOSHOT_BLOCKS\): rank 0: \('"):
            ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=path)
    _links_and_sums(world, "stream")
    alike = [{name: value}, {name: "ll"} if world.rank == 0 else {}]  # ("ll": the default)
    for env in alike if name == "RING_KERNEL_PROTO" else alike[:1]:
        monkeypatch.undo()
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        _links_and_sums(world, PATH, "ring")


@pytest.mark.parametrize("name,value", [("RING_KERNEL_THREADS", "2000"),
                                        ("RING_KERNEL_CHANNELS", "0"),
                                        ("RING_KERNEL_PROTO", "ll128")])
def test_a_bad_kernel_setting_on_one_rank_is_raised_on_every_rank(world, monkeypatch, name,
                                                                  value):
    """Read on rank 0 alone before the ranks' first exchange, a bad setting raised there
    while its peers waited in that exchange for ever; now every rank raises, naming rank 0
    and the setting, and the next communicator runs."""
    if world.rank == 0:
        monkeypatch.setenv(name, value)
    for path in ("auto", "kernel"):
        with pytest.raises(ring.RingError, match=rf"rank 0 could not read its kernel path's "
                                                 rf"settings: ValueError: {name}: "):
            ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=path)
    monkeypatch.undo()
    _links_and_sums(world, PATH)


def test_what_a_kept_signature_holds(world):
    """A kept kernel-path call is its arrays' layout, not only their address and shape
    (ring/cuda/repeated.py): a strided view of a kept x's memory and shape is refused, as
    on the full path, on every rank; and an in-place all-to-all is never kept (its launch
    reads a copy of x that its call makes), so each call reads x as it is then."""
    with ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=PATH) as c:
        k, r = c.size, c.rank
        x = _gpu(np.zeros(4 * k, np.float32))
        for i in range(3):
            inputs = [np.arange(4 * k, dtype=np.float32) + 100 * q + 1000 * i
                      for q in range(k)]
            _set(x, inputs[r])
            assert c.alltoall(x, out=x) is x
            assert np.array_equal(_host(x), reference.expected("alltoall", inputs)[r]), i
        n = 37
        both, out = _gpu(np.ones(2 * n, np.float32)), _gpu(np.zeros(n, np.float32))
        for _ in range(3):  # kept from the first on the kernel path
            assert c.allreduce(both[:n], out=out, algorithm="ring") is out
        assert np.array_equal(_host(out), np.full(n, k, np.float32))
        # (the all-reduce's signature kept: wherever the kernel path runs)
        assert bool(c._kfast) == (c._ctx.backend.kernel is not None)
        with pytest.raises(ValueError, match="x: the array must be contiguous"):
            c.allreduce(both[::2], out=out, algorithm="ring")


def test_calls_agree_in_a_compiled_round(gcomm, monkeypatch):
    """Calls agree on their records in one compiled round (ring/host/repeated.py's Agreement), not
    through agreement.agree_shared's NumPy calls: a kept kernel-path call on the record it
    kept, others on theirs. Where rank 0 comes late, the others' rounds give up polling
    and wait in Python, under the call's deadline; a kept kernel-path call's round,
    stream-ordered, waits for no one (post_kept: its kernel checks the peers' calls on the
    GPU), and is read back at the next round (synchronize's here). A kept call that ends
    quickly does not read its kernel's error word (kernel_path.KernelPath.check)."""
    r, k = gcomm.rank, gcomm.size
    x, out = _gpu(np.full(53, r, np.float32)), _gpu(np.zeros(53, np.float32))
    gcomm.allreduce(x, out=out, algorithm="ring")  # kept here on the kernel path

    def refuse(*args, **kwargs):
        raise AssertionError("a call agreed through agreement.agree_shared")

    waited = []
    wait_round = gcomm._ctx.wait_round
    kernel = gcomm._ctx.backend.kernel
    err = None if kernel is None else _Counted(kernel.err)  # read only when slow
    if kernel is not None:
        monkeypatch.setattr(kernel, "err", err)
    monkeypatch.setattr(ring.communicator, "agree_shared", refuse)
    monkeypatch.setattr(gcomm._ctx, "wait_round", lambda seq: (waited.append(seq), wait_round(seq)))
    for late in (False, True):
        _set(x, np.full(53, r + 3 * late, np.float32))
        if late and r == 0:
            time.sleep(0.5)
        assert gcomm.allreduce(x, out=out, algorithm="ring") is out
        assert np.array_equal(_host(out), np.full(53, k * (k - 1) // 2 + 3 * k * late,
                                                  np.float32))
    assert err is None or err.reads == 0
    seq = gcomm._ctx.exchange.seq
    if kernel is not None and not gcomm.blocking:  # posted, not waited for: read back
        assert gcomm._ctx.posted[1] == seq and seq not in waited, (seq, waited)
        gcomm.synchronize()  # (which reads the error word, as it always does)
        assert gcomm._ctx.posted is None
    elif r != 0:  # (rank 0 may wait too: where ranks outnumber cores its polls are few)
        assert seq in waited, (seq, waited)


class _Counted:
    """A device array whose copies to the host are counted."""

    def __init__(self, a):
        self.a, self.reads = a, 0

    def copy_to_host(self, *args, **kwargs):
        self.reads += 1
        return self.a.copy_to_host(*args, **kwargs)


@pytest.mark.parametrize("blocking", [False, True])
def test_a_rank_leaving_a_kept_signature_is_caught_on_every_rank(world, blocking):
    """Rank 0 repeats a kept kernel-path call while the others change its count: the kept
    record is agreed on like any other, so every rank raises MismatchError naming the
    count: at the call, but on rank 0 where calls are stream-ordered (its kept call posts
    its record without waiting, ring/host/repeated.py's post_kept): there at synchronize(),
    which reads the round back (its kernel stopped at the call board meanwhile)."""
    c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=PATH,
                          blocking=blocking)
    x, out = _gpu(np.ones(40, np.float32)), _gpu(np.zeros(40, np.float32))
    c.allreduce(x, out=out, algorithm="ring")
    if PATH == "kernel":
        assert len(c._kfast) == 1
    mine = (x, out) if c.rank == 0 else (x[:20], out[:20])
    if c.size == 1:  # no one to differ: the kept call again
        assert c.allreduce(*mine, algorithm="ring") is out
        assert np.array_equal(_host(out), _host(x))
    elif c.rank == 0 and c._kfast is not None and not blocking:
        assert c.allreduce(*mine, algorithm="ring") is out  # enqueued
        with pytest.raises(ring.MismatchError, match="count"):
            c.synchronize()
    else:
        with pytest.raises(ring.MismatchError, match="count"):
            c.allreduce(*mine, algorithm="ring")
    c.close()


def test_a_kept_call_beside_a_peer_on_the_full_path(world):
    """Stream-ordered: rank 0's out is new memory every call (the full path: the host's
    agreement, which waits for every rank's record), the others' is the same (a kept call:
    its record posted without waiting). Every call right on every rank, and the rounds
    stay in step."""
    c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=PATH)
    k = c.size
    x, out = _gpu(np.full(33, c.rank + 1, np.float32)), _gpu(np.zeros(33, np.float32))
    for i in range(4):
        if c.rank == 0:
            out = _gpu(np.zeros(33, np.float32))
        assert c.allreduce(x, out=out, algorithm="ring") is out
        c.synchronize()
        assert np.array_equal(_host(out), np.full(33, k * (k + 1) / 2, np.float32))
    if c._kfast is not None:
        assert len(c._kfast) == (4 if c.rank == 0 else 1)
    c.close()


def test_the_auto_path_runs_the_kernel_where_every_neighbour_shares_the_gpu(world):
    """path="auto", every process on this node's GPU 0: the kernel path where it can run
    (under the simulator; on a GPU, one process, or several under MPS), else the stream
    path, without a warning either way; the same choice on every rank."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path="auto")
    from ring.cuda.kernel_path import mps_running
    runs = SIMULATED or c.size == 1 or mps_running()
    assert c.path == ("kernel" if runs else "stream")
    assert (c._ctx.backend.kernel is not None) == runs
    assert len(set(world.allgather(c.path))) == 1
    k = c.size
    x = _gpu(np.full(301, c.rank + 1, np.float32))
    assert np.array_equal(_host(c.allreduce(x, out=x)), np.full(301, k * (k + 1) / 2))
    c.close()


def test_async_op_returns_work_to_wait_on(gcomm):
    """async_op=True: the call returns once queued; wait() gives the result. Several calls
    in flight, waited on in reverse order."""
    k, r = gcomm.size, gcomm.rank
    xs = [_gpu(np.full(300, r + i, np.float32)) for i in range(3)]
    works = [gcomm.allreduce(x, async_op=True) for x in xs]
    for i in reversed(range(3)):
        got = works[i].wait(timeout=120) if i == 1 else works[i].wait()  # (a limit, as torch's)
        assert works[i].is_completed()
        assert np.array_equal(_host(got), np.full(300, sum(range(k)) + k * i, np.float32))
    w = gcomm.allgather(_gpu(np.full(5, r, np.int32)), async_op=True)
    assert np.array_equal(_host(w.wait()), np.repeat(np.arange(k, dtype=np.int32), 5))
    # result() waits as wait() does; a callback gets (result, None) once the call has run
    w = gcomm.allreduce(_gpu(np.full(3, r, np.float32)), async_op=True)
    done = []
    w.add_done_callback(lambda result, error: done.append((result, error)))
    assert len(done) == 1 and done[0][1] is None and done[0][0] is w.result()
    assert np.array_equal(_host(w.result()), np.full(3, sum(range(k)), np.float32))


# -- stream-ordered calls (shared/API.md, "Streams and completion on the cuda device") --
def _a_stream():
    """A stream of the arrays' library (under the simulator, whose launches run at once
    and whose streams have no handle: a made-up handle, for the bookkeeping)."""
    if SIMULATED:
        return 7
    return cp.cuda.Stream(non_blocking=True)


def _handle(s) -> int:
    from ring.cuda.streams import handle
    return handle(s)


def test_a_call_is_left_running_on_the_callers_stream_until_synchronize(gcomm):
    """The kernel path: a call returns once its launch is on the given stream, which the
    communicator keeps as one to wait for; synchronize() waits for it. Every other path
    waits for its GPU work before returning."""
    k, r = gcomm.size, gcomm.rank
    s = _a_stream()
    x = _gpu(np.full(37, r + 1, np.float32))
    out = _gpu(np.zeros(37, np.float32))
    got = gcomm.allreduce(x, out=out, stream=s)
    assert got is out
    running = gcomm._ctx.backend.streams.since
    if gcomm.path == "kernel":
        assert list(running) == [_handle(s)]
    else:
        assert not running
    gcomm.synchronize()
    assert not gcomm._ctx.backend.streams.since
    assert np.array_equal(_host(out), np.full(37, k * (k + 1) / 2, np.float32))


def test_a_call_on_another_stream_waits_for_the_last_calls_launch(gcomm, monkeypatch):
    """The kernel path: calls on stream s, s again, then t, then s (the full path, then
    kept launches): each launch on a stream other than the previous launch's is ordered
    after that launch (streams.Streams.after_latest; the kernels read what the last one
    left: the ring's counters, the call board's count), as NCCL orders a communicator's
    calls; one on the same stream needs nothing (the other paths wait on the host for the
    caller's stream: no such order is needed). Every result right."""
    from ring.cuda.streams import Streams
    k, r = gcomm.size, gcomm.rank
    waits = []
    real = Streams.after_latest
    monkeypatch.setattr(Streams, "after_latest",
                        lambda self, h, prev: (waits.append((h, prev)), real(self, h, prev)))
    s, t = _a_stream(), (8 if SIMULATED else cp.cuda.Stream(non_blocking=True))
    x = _gpu(np.full(41, r + 1, np.float32))
    out = _gpu(np.zeros(41, np.float32))
    gcomm.allreduce(x, out=out, stream=s)  # (the last launch before: another stream, or
    waits.clear()  # none)
    for stream in (s, t, s, t):
        assert gcomm.allreduce(x, out=out, stream=stream) is out
    gcomm.synchronize()
    hs, ht = _handle(s), _handle(t)
    assert waits == ([(ht, hs), (hs, ht), (ht, hs)] if gcomm.path == "kernel" else [])
    assert np.array_equal(_host(out), np.full(41, k * (k + 1) / 2, np.float32))


def test_a_call_is_ordered_after_its_streams_producer(gcomm):
    """x is written by a slow kernel on stream s, the all-reduce is called with stream=s
    and read back on s: it must see x as written (and, on a GPU, not the zeros under it)."""
    k, r = gcomm.size, gcomm.rank
    n = 301
    spins = 10 if SIMULATED else 1 << 22

    @cuda.jit
    def slow_fill(a, v, spins):
        i = cuda.grid(1)
        acc = 0
        for j in range(spins):  # the producer takes its time
            acc += j & 1
        if i < a.size:
            a[i] = v + acc * 0

    s = _a_stream()
    x = cuda.to_device(np.zeros(n, np.float32))
    out = cuda.device_array(n, np.float32)
    nstream = cuda.stream() if SIMULATED else cuda.external_stream(_handle(s))
    slow_fill[(n + 127) // 128, 128, nstream](x, np.float32(r + 1), spins)
    gcomm.allreduce(x, out=out, stream=s)
    got = out.copy_to_host(stream=nstream)
    nstream.synchronize()
    gcomm.synchronize()
    assert np.array_equal(got, np.full(n, k * (k + 1) / 2, np.float32))


def test_blocking_calls_wait_for_their_result(world):
    """Communicator(blocking=True): every call has finished on the GPU when it returns
    (its errors raised at the call): nothing is left running."""
    c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=PATH,
                          blocking=True)
    x = _gpu(np.full(70, c.rank, np.int32))
    out = _gpu(np.zeros(70, np.int32))
    for _ in range(3):  # the full path, then the kept launch
        c.allreduce(x, out=out, stream=_a_stream())
        assert not c._ctx.backend.streams.since
    assert np.array_equal(_host(out), np.full(70, sum(range(c.size)), np.int32))
    c.close()


@pytest.mark.parametrize("blocking", [False, True])
def test_a_bad_stream_is_refused_on_every_rank(world, blocking):
    """A stream argument that is no stream: TypeError at the call on its rank, and
    MismatchError on the others: at the call on the full path (the host's agreement), and
    on a kept signature's where calls block. Stream-ordered, a kept kernel-path call does
    not wait for the peers' records (ring/host/repeated.py's post_kept): the others'
    kernels run, stop at the call board on the refusing rank's REFUSED (at once, not at
    the timeout: their error word says so), and synchronize() raises the MismatchError
    (reading the call's round back, as the host's agreement would have said it)."""
    for kept in (False, True):
        c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=PATH,
                              blocking=blocking)
        x, out = _gpu(np.ones(8, np.float32)), _gpu(np.zeros(8, np.float32))
        if kept:
            c.allreduce(x, out=out)
        later = kept and not blocking and c.rank != 0 and c._kfast is not None
        if later:  # enqueued; the GPU finds it
            c.allreduce(x, out=out)
            with pytest.raises(ring.MismatchError, match=r"rank\(s\) \[0\] passed bad"):
                c.synchronize()  # (the round read back says it as the host's agreement)
            err = c._ctx.backend.kernel.err.copy_to_host()
            assert (err[ERR_CODE], err[ERR_SEEN]) == (board.MISMATCH, board.REFUSED)
        else:
            exc = TypeError if c.rank == 0 else ring.MismatchError
            with pytest.raises(exc, match="stream: expected a CUDA stream" if c.rank == 0
                               else r"rank\(s\) \[0\]"):
                c.allreduce(x, out=out, stream="not a stream" if c.rank == 0 else None)
            with pytest.raises(ring.CommunicatorError):
                c.synchronize()
        c.close()


def test_ranks_disagreeing_on_count_all_raise(world):
    c = ring.Communicator(device="cuda", timeout=60)
    with pytest.raises(ring.MismatchError):
        c.allreduce(_gpu(np.ones(10 + c.rank, np.float32)))
    c.close()


def test_host_arrays_are_refused_on_every_rank(world):
    c = ring.Communicator(device="cuda", timeout=60)
    exc = TypeError if c.rank == 0 else ring.MismatchError
    with pytest.raises(exc, match="x: " if c.rank == 0 else r"rank\(s\) \[0\]"):
        c.allreduce(np.ones(4) if c.rank == 0 else _gpu(np.ones(4)))
    c.close()


def test_a_rank_that_cannot_map_its_neighbour_raises_on_every_rank(world, monkeypatch):
    """Rank 0's driver refuses a neighbour's handle (the H100 under MPS once answered
    CUDA_ERROR_ALREADY_MAPPED): every rank raises ring.RingError naming rank 0, none waits
    in the constructor's barrier; the next communicator links as usual."""
    if world.size == 1:
        pytest.skip("a ring of one maps nothing")  # (test_mpi.py runs this suite at 2-4)
    from ring.transport import ipc, simipc

    def refuse(self, handle):
        raise RuntimeError("the driver says no")
    if world.rank == 0:
        monkeypatch.setattr(simipc.Segment if SIMULATED else ipc.Segment, "open", refuse)
    with pytest.raises(ring.RingError, match="rank 0 could not link to its ring neighbours: "
                                              "RuntimeError: the driver says no"):
        ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=PATH)
    monkeypatch.undo()
    with ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=PATH) as c:
        got = c.allreduce(_gpu(np.full(50, c.rank, np.int32)))
        assert np.array_equal(_host(got), np.full(50, sum(range(c.size))))


def test_a_rank_out_of_device_memory_at_construction_raises_on_every_rank(world, monkeypatch):
    """The last rank cannot make its slots (device memory gone, say): every rank raises
    ring.RingError naming it, none is left in the constructor's allgathers, and the next
    communicator is made and runs as usual."""
    from ring.cuda import backend

    def out_of_memory(nslots, slot_bytes):
        raise MemoryError(f"no room for {nslots} slots")
    last = world.size - 1
    if world.rank == last:
        monkeypatch.setattr(backend, "Slots", out_of_memory)
    with pytest.raises(ring.RingError, match=f"rank {last} could not make its streams, slots and "
                                             f"segment: MemoryError: no room for 2 slots"):
        ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, nslots=2, path=PATH)
    monkeypatch.undo()
    with ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=PATH) as c:
        got = c.allreduce(_gpu(np.full(50, c.rank, np.int32)))
        assert np.array_equal(_host(got), np.full(50, sum(range(c.size))))


@pytest.mark.parametrize("algorithm", ["oneshot", "twoshot"])
def test_a_rank_that_cannot_map_a_peers_area_at_a_first_call_raises_on_every_rank(
        world, monkeypatch, algorithm):
    """The areas (and on the kernel path the one-shot inbox, the two-shot's flags) are made
    at the first call that needs them: where rank 0's driver refuses a peer's handle then,
    every rank raises ring.RingError naming rank 0 and none waits in the set-up's
    collectives; every rank lets go of the area it had made; the communicator is broken on
    every rank, closes, and the next one runs."""
    if world.size == 1:
        pytest.skip("a ring of one maps nothing")
    from ring.transport import ipc, simipc
    segment = simipc.Segment if SIMULATED else ipc.Segment
    c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=PATH)
    x = _gpu(np.full(50, c.rank, np.int32))
    assert np.array_equal(_host(c.allreduce(x)), np.full(50, sum(range(c.size))))

    def refuse(self, handle):
        raise RuntimeError("the driver says no")
    if world.rank == 0:
        monkeypatch.setattr(segment, "open", refuse)
    closed, close = [], segment.close

    def closing(self):
        closed.append(self)
        close(self)
    monkeypatch.setattr(segment, "close", closing)
    with pytest.raises(ring.RingError, match="rank 0 could not map its peers' GPU areas: "
                                              "RuntimeError: the driver says no"):
        c.allreduce(x, algorithm=algorithm)
    monkeypatch.undo()
    assert len(closed) == 1, "the area this rank made for the failed call is not let go"
    with pytest.raises(ring.CommunicatorError, match="broken"):
        c.allreduce(x)
    c.close()
    with ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK, path=PATH) as c:
        got = c.allreduce(x, algorithm=algorithm)
        assert np.array_equal(_host(got), np.full(50, sum(range(c.size))))


def test_many_communicators_release_their_slots(world):
    """Create, use and close communicators repeatedly: every one gives back its slots (and,
    on a GPU, its IPC mappings) so the next one starts clean. On a GPU, 1000 cycles, and
    the device memory in use does not grow (the simulator: 20, nothing to measure)."""
    cycles = 20 if SIMULATED else 1000
    free = None
    for i in range(cycles):
        with ring.Communicator(device="cuda", timeout=60, chunk_bytes=CHUNK) as c:
            got = c.allreduce(_gpu(np.full(50, i + c.rank, np.int32)))
            assert np.array_equal(_host(got), np.full(50, i * c.size + sum(range(c.size))))
        if not SIMULATED and i == cycles // 4:
            # the baseline after the one-time costs: on the H100 the first ~200 cycles took
            # 140 MiB (the driver's, once), then free memory stayed the same to the MiB
            free = free_device_bytes(world)
    if not SIMULATED:  # (the GPU is shared: measured when every rank has closed its last)
        grown = free - free_device_bytes(world)
        assert grown < DEVICE_GROWTH_LIMIT, \
            f"device memory in use grew by {grown} bytes over the last {cycles - cycles // 4 - 1} cycles"


@pytest.mark.parametrize("path", ["stream", "copy", "kernel"])
def test_two_slots_and_many_chunks(world, path):
    """The tightest flow control: two slots per link, dozens of chunks in flight."""
    c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=64, nslots=2, path=path)
    k, r = c.size, c.rank
    inputs = [make(q, 999, "float32") for q in range(k)]
    got = c.allreduce(_gpu(inputs[r]))
    want = reference.allreduce(inputs, "sum", align=align(4))
    assert _host(got).tobytes() == want.tobytes()
    c.close()


@pytest.mark.parametrize("path", ["stream", "copy"])
def test_a_call_loads_its_kernels_before_its_stream_waits_on_a_neighbour(world, monkeypatch, path):
    """The stream path launches each of a call's reduce kernels once, on scratch, before it
    puts on its stream the first wait on a neighbour's counter (enqueue.load_kernels): a
    kernel's first launch loads it, and the load may wait for the stream, held by that wait
    (an H200 suite: ranks blocked 50 s in a reduce kernel's launch, their successors across
    the node timing out). Checked in the order of the host's enqueues: within a call, no
    kernel is launched for the first time after a wait. Fails without load_kernels."""
    from ring.cuda import enqueue
    monkeypatch.setattr(enqueue, "_LOADED", set())  # as in a fresh process
    log = []
    real = enqueue.launch_args

    def launch_args(*a, **kw):
        launch = real(*a, **kw)
        log.append(launch[0])
        return launch

    monkeypatch.setattr(enqueue, "launch_args", launch_args)
    c = ring.Communicator(device="cuda", timeout=60, chunk_bytes=64, nslots=2, path=path)
    for end, method in ((c._ctx.backend.inbound, "wait_written"), (c._ctx.backend.outbound, "wait_freed")):
        def waits(*a, _real=getattr(end, method)):
            log.append("wait")
            return _real(*a)
        monkeypatch.setattr(end, method, waits)
    k, r = c.size, c.rank
    for dtype, op in [("float32", "sum"), ("float16", "max"), ("float32", "avg"), ("int32", "min")]:
        inputs = [make(q, 99, dtype, op=op) for q in range(k)]
        log.append("call")
        got = c.allreduce(_gpu(inputs[r]), op=op)
        want = reference.allreduce(inputs, op, align=align(np.dtype(dtype).itemsize))
        assert _host(got).tobytes() == want.tobytes(), (dtype, op)
    c.close()
    seen, waited, late = set(), False, []
    for entry in log:
        if entry == "call":
            waited = False
        elif entry == "wait":
            waited = True
        elif entry not in seen:
            seen.add(entry)
            if waited:
                late.append(entry)
    assert "wait" in log and seen and not late, f"first launched after a wait: {late}"


@pytest.mark.parametrize("dtype,op", [("float32", "sum"), ("bfloat16", "avg"), ("int64", "max")])
def test_broadcast_and_reduce(gcomm, dtype, op):
    k, r = gcomm.size, gcomm.rank
    kw = _kw(dtype)
    for root in range(k):
        for n in SIZES:
            inputs = [make(q, n, dtype, op=op) for q in range(k)]
            x = _gpu(inputs[r])
            assert gcomm.broadcast(x, root=root, **kw) is x
            assert _host(x, inputs[0].dtype).tobytes() == inputs[root].tobytes()
            got = gcomm.reduce(_gpu(inputs[r]), op=op, root=root, **kw)
            if r != root:
                assert got is None
                continue
            want = reference.reduce(inputs, op, root)
            assert _host(got, inputs[0].dtype).tobytes() == want.tobytes(), (dtype, op, n, root)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_gather_scatter_alltoall(gcomm, world, dtype):
    k, r = gcomm.size, gcomm.rank
    kw = _kw(dtype)
    for per in PER:
        inputs = [make(q, per * k, dtype, seed=9) for q in range(k)]
        got = gcomm.alltoall(_gpu(inputs[r]), **kw)
        assert_ran("ring", "alltoall")
        want = reference.expected("alltoall", inputs)[r]
        assert _host(got, want.dtype).tobytes() == want.tobytes(), (dtype, per)
        x = _gpu(inputs[r])
        assert gcomm.alltoall(x, out=x, **kw) is x  # in place
        assert _host(x, want.dtype).tobytes() == want.tobytes(), (dtype, per, "in place")
        for root in range(k):
            got = gcomm.scatter(_gpu(inputs[r]), root=root, **kw)
            want = reference.expected("scatter", inputs, root=root)[r]
            assert _host(got, want.dtype).tobytes() == want.tobytes(), (dtype, per, root)
            mine = [x[:per] for x in inputs]
            got = gcomm.gather(_gpu(mine[r]), root=root, **kw)
            if r != root:
                assert got is None
                continue
            want = reference.expected("gather", mine, root=root)[r]
            assert _host(got, want.dtype).tobytes() == want.tobytes(), (dtype, per, root)


def test_float8_reductions_are_refused(world):
    c = ring.Communicator(device="cuda", timeout=60)
    with pytest.raises(TypeError, match="float8_e4m3fn is carried by the collectives"):
        c.allreduce(_gpu(np.ones(4, ringtypes.float8_e4m3fn)), dtype="float8_e4m3fn")
    c.close()


def test_a_bad_root_raises_on_every_rank(world):
    c = ring.Communicator(device="cuda", timeout=60)
    exc = ValueError if c.rank == 0 else ring.MismatchError
    with pytest.raises(exc, match="root: must be a rank" if c.rank == 0 else r"rank\(s\) \[0\]"):
        c.scatter(_gpu(np.ones(2 * c.size, np.float32)), root=c.size if c.rank == 0 else 0)
    c.close()


def test_an_array_not_aligned_to_its_elements_is_refused_on_every_rank(world):
    """Rank 0's x starts one byte into uint8 memory, viewed as float32: no GPU kernel can
    load it (a misaligned address ends the CUDA context), so it is a bad argument:
    ValueError there, MismatchError on the others, before anything runs; register says
    the same."""
    raw = cuda.to_device(np.zeros(20, np.uint8))  # (Numba's view: on a GPU as here)
    odd = raw[1:17].view(np.float32)
    for call in (lambda c, x: c.allreduce(x), lambda c, x: c.register(x)):
        c = ring.Communicator(device="cuda", timeout=60)
        x = odd if c.rank == 0 else _gpu(np.ones(4, np.float32))
        exc, match = (ValueError, "x: its address 0x[0-9a-f]+ is not a multiple of its "
                      "element size") if c.rank == 0 else \
            (ring.MismatchError, r"rank\(s\) \[0\]|rank 0's argument")
        with pytest.raises(exc, match=match):
            call(c, x)
        c.close()
    assert raw.copy_to_host().tobytes() == bytes(20)


# The all-reduce algorithms besides the ring (ring/cuda/areas.py): oneshot and twoshot
# through areas in GPU memory, naive, ps and tree on host copies (their folds are the host
# device's, tested there for every case). Every case (the cross-section where asked).
ALGORITHM_CASES = [(a, d, o) for a in ("oneshot", "twoshot", "naive", "ps", "tree")
                   for d, o in CASES]


@pytest.mark.parametrize("algorithm,dtype,op", ALGORITHM_CASES)
def test_every_allreduce_algorithm(gcomm, world, algorithm, dtype, op):
    """Bit for bit the reference of the algorithm's order, the same bits on every rank,
    in place and out, every count (fewer elements than ranks included)."""
    k, r = gcomm.size, gcomm.rank
    kw = _kw(dtype)
    for n in SIZES:
        inputs = [make(q, n, dtype, op=op) for q in range(k)]
        want = reference.tree(inputs, op) if algorithm == "tree" else \
            reference.in_rank_order(inputs, op)
        for in_place in (False, True):
            x = _gpu(inputs[r])
            got = gcomm.allreduce(x, out=x if in_place else None, op=op, algorithm=algorithm, **kw)
            assert (got is x) == in_place and _same_kind(got, x)
            assert_ran(algorithm, "allreduce")
            host = _host(got, inputs[0].dtype)
            assert host.tobytes() == want.tobytes(), (algorithm, dtype, op, n, in_place)
        assert same_everywhere(world, host)


@pytest.mark.parametrize("algorithm", ["oneshot", "twoshot"])
def test_every_allreduce_algorithm_runs_each_op_on_one_buffer(gcomm, world, algorithm):
    """The same x and out, op after op (and the first again): each call folds with its own
    op (a launch bound for one op is never fired for another; on the kernel path, the
    one-shot and two-shot kernels)."""
    k, r = gcomm.size, gcomm.rank
    n = 37
    inputs = [make(q, n, "float32", op="prod") for q in range(k)]
    x, out = _gpu(inputs[r]), _gpu(np.zeros(n, np.float32))
    for op in ("sum", "max", "min", "prod", "sum"):
        got = gcomm.allreduce(x, out=out, op=op, algorithm=algorithm)
        assert got is out
        assert_ran(algorithm, "allreduce")
        want = reference.in_rank_order(inputs, op)
        assert _host(got, np.float32).tobytes() == want.tobytes(), (algorithm, op)


@pytest.mark.parametrize("timeout", [float("inf"), 1e300])
def test_a_timeout_longer_than_the_kernels_count_is_their_longest_wait(world, timeout):
    """A timeout past what the kernels' int64 nanoseconds hold (inf: never, as the host's
    waits take it) is their longest wait, not an OverflowError at every call on the kernel
    path: the ring, one-shot and two-shot all-reduces run."""
    with ring.Communicator(device="cuda", timeout=timeout, chunk_bytes=CHUNK, path=PATH) as c:
        assert c.timeout == timeout
        for algorithm in ("ring", "oneshot", "twoshot"):
            got = c.allreduce(_gpu(np.full(9, c.rank + 1, np.int32)), algorithm=algorithm)
            assert_ran(algorithm, "allreduce")
            assert np.array_equal(_host(got), np.full(9, c.size * (c.size + 1) // 2)), algorithm


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_one_shot_kernel_takes_what_its_inbox_holds_and_no_more(gcomm, monkeypatch, dtype):
    """A sender's place in the one-shot kernel's inbox holds oneshot_kernel.WORDS words (an
    element of 8 bytes takes two): on the kernel path a call that fills it goes through the
    kernel; one element more through the host-driven oneshot where its window holds that
    (under the simulator; on a GPU place and window are both 1 MiB: refused, why_not says,
    and not called, which would break this module's communicator; the window's test below
    makes such a call); each bit for bit the fold in rank order, three calls each (both
    parities of the inbox, then the first again)."""
    from ring.cuda import oneshot_kernel
    k, r = gcomm.size, gcomm.rank
    itemsize = np.dtype(dtype).itemsize
    full = oneshot_kernel.WORDS // oneshot_kernel.words_per_element(itemsize)
    bound, bind = [], oneshot_kernel.OneShot.bind

    def binding(self, op, dtype_name, x, out, n, *rest):
        bound.append(n)
        return bind(self, op, dtype_name, x, out, n, *rest)
    monkeypatch.setattr(oneshot_kernel.OneShot, "bind", binding)
    for n in (full, full + 1):
        why = gcomm.why_not("oneshot", "allreduce", n * itemsize)
        if why is not None:
            assert n > full and "it carries at most" in why, why
            continue
        for call in range(3):
            inputs = [make(q, n, dtype, seed=call) for q in range(k)]
            got = gcomm.allreduce(_gpu(inputs[r]), algorithm="oneshot")
            assert_ran("oneshot", "allreduce")
            want = reference.in_rank_order(inputs, "sum")
            assert _host(got, inputs[0].dtype).tobytes() == want.tobytes(), (n, call)
    assert (full in bound) == (PATH == "kernel" and k > 1), bound
    assert full + 1 not in bound, bound


@pytest.mark.parametrize("check", [True, False])
def test_algorithms_taking_turns_reuse_their_areas_safely(world, check):
    """Calls alternate between the algorithms, so each parity of the GPU areas is written
    again while the ranks run at their own pace; async_op returns completed work."""
    k, r = world.size, world.rank
    with ring.Communicator(device="cuda", timeout=60, check=check, chunk_bytes=CHUNK) as c:
        for i in range(12):
            algorithm = ("oneshot", "twoshot", "ring", "naive")[i % 4]
            n = 37 + i
            inputs = [make(q, n, "float32", seed=i) for q in range(k)]
            work = c.allreduce(_gpu(inputs[r]), algorithm=algorithm, async_op=i % 3 == 0)
            got = work.wait() if i % 3 == 0 else work
            want = reference.allreduce(inputs, "sum", align=align(4)) if algorithm == "ring" \
                else reference.in_rank_order(inputs, "sum")
            assert _host(got).tobytes() == want.tobytes(), (i, algorithm)


def test_ranks_disagreeing_on_the_algorithm_all_raise(world):
    c = ring.Communicator(device="cuda", timeout=60)
    x = _gpu(np.ones(8, np.float32))
    if c.size == 1:  # nobody to disagree with
        assert np.array_equal(_host(c.allreduce(x, algorithm="oneshot")), np.ones(8))
    else:
        with pytest.raises(ring.MismatchError, match="algorithm"):
            c.allreduce(x, algorithm="oneshot" if c.rank == 0 else "ring")
    c.close()


@pytest.mark.parametrize("algorithm", ["oneshot", "twoshot"])
def test_shared_memory_algorithms_refuse_what_their_areas_cannot_hold(world, algorithm):
    """The host-driven oneshot and twoshot (the stream path): at most the window's bytes;
    on the kernel path the two-shot kernel runs any size, in rounds of its areas."""
    c = ring.Communicator(device="cuda", timeout=60, path="stream")
    too_big = _gpu(np.ones((1 << 18) + 1, np.float32))
    with pytest.raises(ValueError, match=f"'{algorithm}' cannot run here: it carries at most"):
        c.allreduce(too_big, algorithm=algorithm)
    c.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (on a GPU without MPS it falls back, saying so)
        c = ring.Communicator(device="cuda", timeout=60, path="kernel")
    why = c.why_not(algorithm, "allreduce", 64 << 20)
    assert (why is None) == (algorithm == "twoshot" and c.path == "kernel"), why
    c.close()


def test_the_default_chunk_is_the_devices(world):
    """Measured per device kind (ring/options.py): 1 MiB on the host, 4 MiB on a GPU."""
    with ring.Communicator(device="cuda", timeout=60) as c:
        assert c.chunk_bytes == 4 << 20
        got = c.allreduce(_gpu(np.full(10, c.rank + 1, np.float32)))
        assert np.array_equal(_host(got), np.full(10, c.size * (c.size + 1) / 2, np.float32))
    with ring.Communicator(device="host", timeout=60) as c:
        assert c.chunk_bytes == 1 << 20
    with ring.Group(2) as g:
        assert g.chunk_bytes == 4 << 20


def _bucket_step(b, grads: list, k: int, r: int, step: int, scale: float) -> list:
    """One step of GradientBuckets b over two gradients: every rank's values drawn (known to
    every rank, returned), this rank's set into grads and marked ready as a backward pass
    would (1, then 0), then waited for."""
    values = [[np.random.default_rng([q, step, g.size]).standard_normal(g.size)
               .astype(np.float32) * scale for g in grads] for q in range(k)]
    for i in (1, 0):
        _set(grads[i], values[r][i])
        b.ready(i)
    b.wait()
    return values


@pytest.mark.parametrize("exchange", ["allgather", "alltoall"])
@pytest.mark.parametrize("op", ["sum", "avg"])
def test_int8_gradient_buckets_are_the_hosts_bit_for_bit(gcomm, world, op, exchange):
    """GradientBuckets(compression="int8", error_feedback=True) on the cuda device, both
    exchanges: the kernels' messages (kernels/quantize.py) exchanged, each rank's result the
    bits that the host's loops (ring/quantize.py) give for the same gradients by the
    protocol of ring/int8_reduce.py (tests/int8_reference.py); two buckets (one shorter
    than a shard), two steps, so that the residuals carry."""
    from ring.buckets import GradientBuckets

    from ..int8_reference import Int8Bucket
    k, r = gcomm.size, gcomm.rank
    sizes = (300, 37) if SIMULATED else (70000, 5000)
    grads = [_gpu(np.zeros(n, np.float32)) for n in sizes]
    b = GradientBuckets(gcomm, grads, op=op, compression="int8", error_feedback=True,
                        int8_exchange=exchange, first_bucket_bytes=4 * sizes[1])
    assert b.buckets == [[1], [0]]
    refs = [Int8Bucket(sizes[i], k, exchange, True) for i in (1, 0)]
    for step in range(2):
        values = _bucket_step(b, grads, k, r, step, scale=10)
        for bucket, i in enumerate((1, 0)):
            want = refs[bucket].step([values[q][i] for q in range(k)], op == "avg")
            assert _host(grads[i]).tobytes() == want.tobytes(), (step, i)


@pytest.mark.parametrize("feedback,momentum,kind,op", [
    (False, 0.0, "global", "avg"), (True, 0.0, "global", "avg"), (True, 0.9, "local", "avg"),
    (True, 0.9, "global", "avg"), (True, 0.9, "global", "sum")])
def test_topk_gradient_buckets_match_the_reference_on_the_gpu(gcomm, world, feedback,
                                                              momentum, kind, op):
    """GradientBuckets(compression="topk") on the cuda device (kernels/topk.py): each
    rank's result the bits of tests/topk_reference.py's definition for the same gradients
    (a full sort, summed densely in rank order), without and with error feedback, with
    DGC's momentum correction (local) and with global momentum (sum and avg); two buckets
    (one smaller than the sample), three steps, so that residuals, velocities and carries
    carry over; ties in magnitude in one step."""
    from ring.buckets import GradientBuckets
    from ring.training.topk import k_of

    from ..topk_reference import TopKBucket
    k, r = gcomm.size, gcomm.rank
    sizes = (300, 37) if SIMULATED else (70000, 5000)
    density = 0.05
    grads = [_gpu(np.zeros(n, np.float32)) for n in sizes]
    b = GradientBuckets(gcomm, grads, op=op, compression="topk", density=density,
                        error_feedback=feedback, momentum=momentum, momentum_kind=kind,
                        first_bucket_bytes=4 * sizes[1])
    refs = [TopKBucket(sizes[i], k, k_of(sizes[i], density), feedback, momentum, kind)
            for i in (1, 0)]
    for step in range(3):
        rng = [np.random.default_rng([q, step]) for q in range(k)]
        values = [[(np.round(g.standard_normal(n) * 4) if step == 1 else
                    g.standard_normal(n) * 10).astype(np.float32) for n in sizes] for g in rng]
        for i in (1, 0):
            _set(grads[i], values[r][i])
            b.ready(i)
        b.wait()
        for bucket, i in enumerate((1, 0)):
            want = refs[bucket].step([values[q][i] for q in range(k)], op == "avg")
            assert _host(grads[i]).tobytes() == want.tobytes(), (step, i)


def _sum_of(algorithm: str, inputs: list, nodes: int):
    """The reference of the all-reduce (sum) that `algorithm` ran."""
    if algorithm == "tree":
        return reference.tree(inputs, "sum")
    if algorithm in ("ring", "hierarchical"):
        return reference.allreduce(inputs, "sum", nodes if algorithm == "hierarchical" else 1,
                                   align(inputs[0].itemsize))
    return reference.in_rank_order(inputs, "sum")


@pytest.mark.parametrize("compression", ["bf16", "fp16"])
@pytest.mark.parametrize("op", ["sum", "avg"])
def test_16_bit_gradient_buckets_on_the_gpu(gcomm, world, op, compression):
    """GradientBuckets(compression="bf16" / "fp16") on the cuda device (its "wire" way):
    each rank's bucket rounded to the wire type by the cast kernel, all-reduced as 16-bit
    data, widened, and divided by K for avg (kernels/casts.scale; it once needed CuPy, and
    fp16's wire copy was an array of uint16 that the all-reduce refused): the bits of the
    reference of the algorithm that ran, on the rounded inputs, widened and scaled as NumPy
    does, the same on every rank; two steps, the gradients packed into one bucket."""
    import ml_dtypes

    from ring.buckets import GradientBuckets
    k, r = gcomm.size, gcomm.rank
    wire = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16}[compression]
    sizes = (37, 300)
    grads = [_gpu(np.zeros(n, np.float32)) for n in sizes]
    b = GradientBuckets(gcomm, grads, op=op, compression=compression)
    assert b.buckets == [[1, 0]] and b.accumulate == "wire"
    for step in range(2):
        values = _bucket_step(b, grads, k, r, step, scale=100)
        rounded = [np.concatenate([values[q][1], values[q][0]]).astype(wire) for q in range(k)]
        algorithm = gcomm.last_algorithm
        want = _sum_of(algorithm, rounded, gcomm.nodes).astype(np.float32)
        if op == "avg":
            want *= np.float32(1.0 / k)
        got = np.concatenate([_host(grads[1]), _host(grads[0])])
        assert got.tobytes() == want.tobytes(), (step, algorithm)
        assert same_everywhere(world, got)


def test_gradient_buckets_as_views_on_the_gpu(gcomm, world):
    """gradient_as_bucket_view=True on the cuda device: the gradients are views of the
    buckets' device memory, of the kind given (CuPy on a GPU), shaped as given; what is
    computed into them is all-reduced there (one bucket of two, one of one)."""
    from ring.buckets import GradientBuckets
    k, r = gcomm.size, gcomm.rank
    given = [_gpu(np.zeros((3, 5), np.float32)), _gpu(np.zeros(4, np.float32)),
             _gpu(np.zeros(6, np.float32))]
    b = GradientBuckets(gcomm, given, op="sum", first_bucket_bytes=24, bucket_bytes=96,
                        gradient_as_bucket_view=True)
    assert b.buckets == [[2], [1, 0]]
    g = b.grads
    assert [type(x) for x in g] == [type(x) for x in given]
    assert [tuple(x.shape) for x in g] == [(3, 5), (4,), (6,)]
    for i in (2, 1, 0):
        _set(g[i], np.full(given[i].shape, r + i + 1, np.float32))
        b.ready(i)
    b.wait()
    for i in range(3):
        assert (_host(g[i]) == sum(q + i + 1 for q in range(k))).all(), i
        assert (_host(given[i]) == 0).all()
