"""ring.Group: one process, several ranks on the GPU, bit for bit against the exact
reference of the flat ring's order (tests/reference.py, independent of ring/). Under Numba's
simulator without a GPU: launches run at once there, so these tests check that every rank's
chunks are enqueued in an order that respects the slot protocol, and that each chunk
computes the right thing; on a GPU they run for real."""

import ml_dtypes
from numba import cuda
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ring
from ring.cuda.enqueue import align
from ring.cuda.arrays import storage_of
from ringtypes import FLOATING, parse_dtype
from ring.schedule import Collective

from . import reference
from .gpu import DEVICE_GROWTH_LIMIT, HAVE_GPU, SIMULATED, dev, free_device_bytes, host, needs_gpu
from .inputs import DTYPE_NAMES, REDUCIBLE_NAMES, make

# the ring collectives proper (the chains and all-to-all have their own tests below)
GROUP_COLLECTIVES = [Collective.ALLREDUCE, Collective.REDUCE_SCATTER, Collective.ALLGATHER]

BF16 = np.dtype(ml_dtypes.bfloat16)
# uint8 sums wrap on purpose; the simulator's NumPy scalars warn about it
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


def _dev(a):
    return dev(a.view(storage_of(a.dtype)))  # bfloat16 and float8 travel as integer bits


def _host(d, dtype):
    return host(d).view(dtype)


def _kw(dtype):
    return {"dtype": dtype.name} if storage_of(dtype) != dtype else {}


def run(collective, k, n, dtype, op, path="stream", chunk=64, nslots=2, in_place=False,
        seed=3):
    dtype = parse_dtype(dtype)
    per = n // k if collective is Collective.REDUCE_SCATTER else n
    inputs = [make(q, n, dtype, seed=seed, op=op) for q in range(k)]
    xs = [_dev(x) for x in inputs]
    g = ring.Group(k, chunk_bytes=chunk, nslots=nslots, path=path)
    kw = _kw(dtype)
    if collective is Collective.ALLREDUCE:
        outs = g.allreduce(xs, outs=xs if in_place else None, op=op, **kw)
    elif collective is Collective.REDUCE_SCATTER:
        outs = g.reduce_scatter(xs, outs=[x[q * per:(q + 1) * per] for q, x in enumerate(xs)]
                                if in_place else None, op=op, **kw)
    else:
        outs = g.allgather(xs, **kw)
    g.synchronize()
    got = [_host(o, dtype) for o in outs]
    # all-reduce blocks start 16-byte aligned on the GPU, and block boundaries decide each
    # element's order of reduction: the reference must cut the same blocks
    step = align(dtype.itemsize) if collective is Collective.ALLREDUCE else 1
    want = reference.expected(str(collective), inputs, op, align=step)
    for r in range(k):
        assert got[r].tobytes() == want[r].tobytes(), (collective, k, n, dtype, op, path, r)
    g.close()


CASES = [(d, o) for d in REDUCIBLE_NAMES for o in ("sum", "prod", "min", "max", "avg")
         if not (o == "avg" and parse_dtype(d) not in FLOATING)]


@pytest.mark.parametrize("dtype,op", CASES, ids=[f"{d}-{o}" for d, o in CASES])
def test_allreduce_every_op_and_dtype(dtype, op):
    run(Collective.ALLREDUCE, 3, 37, dtype, op)


@needs_gpu
@pytest.mark.parametrize("dtype,op", CASES, ids=[f"{d}-{o}" for d, o in CASES])
def test_the_kernel_path_every_op_and_dtype(dtype, op):
    run(Collective.ALLREDUCE, 3, 1001, dtype, op, path="kernel")


@needs_gpu
@pytest.mark.parametrize("dtype,op", [("float32", "sum"), ("bfloat16", "avg"),
                                      ("int64", "max"), ("float16", "prod")])
def test_the_kernel_path_with_chunks_wide_enough_for_its_unrolled_loop(dtype, op):
    """Each channel's part of a 1 MiB chunk spans several strides of the loop that loads
    four elements a thread before it stores (the small chunks above only reach its tail)."""
    run(Collective.ALLREDUCE, 4, (1 << 19) + 37, dtype, op, path="kernel", chunk=1 << 20)


@needs_gpu
def test_the_kernel_path_cuts_its_channels_to_fit_eight_ranks(monkeypatch):
    """The default shape fits as many ranks as share the GPU; a shape set by hand that
    cannot all be resident is refused at creation, not left to deadlock."""
    run(Collective.ALLREDUCE, 8, 1001, "float32", "sum", path="kernel")
    monkeypatch.setenv("RING_KERNEL_CHANNELS", "64")
    monkeypatch.setenv("RING_KERNEL_THREADS", "1024")
    with pytest.raises(ValueError, match="resident"):
        ring.Group(8, path="kernel")


@needs_gpu
@pytest.mark.parametrize("proto", ["simple", "ll"])
@pytest.mark.parametrize("sync", ["acqrel", "fence"])
@pytest.mark.parametrize("scope", ["gpu", "sys"])
@pytest.mark.parametrize("k", [2, 3, 4])
def test_the_kernel_path_with_either_hand_off(monkeypatch, k, scope, sync, proto):
    """RING_KERNEL_SYNC=acqrel (the default: relaxed loads and stores of the counters, one
    fence.acq_rel a side) and fence (atomics between sequentially consistent fences), and
    RING_KERNEL_PROTO=ll (64-byte chunks as LL words, the 1 MiB ones not): many small
    chunks through two slots (every hand-off reused at once), and chunks wide enough for
    the unrolled loop, for the three ring collectives."""
    monkeypatch.setenv("RING_KERNEL_SYNC", sync)
    monkeypatch.setenv("RING_KERNEL_PROTO", proto)
    monkeypatch.setenv("RING_KERNEL_SCOPE", scope)
    for collective in GROUP_COLLECTIVES:
        run(collective, k, 1001 * k, "float32", "sum", path="kernel")
    run(Collective.ALLREDUCE, k, (1 << 19) + 37, "bfloat16", "avg", path="kernel", chunk=1 << 20)


def test_segments_start_all_zero(monkeypatch):
    """A rank's segment is zero from its first byte to its last, slots included: device
    memory comes back as it was left (a closed group's LL words, flagged 1, 2, ... as a new
    link's are), and an LL wait would take a stale word for a chunk. Here the allocator
    hands out memory filled with 0xAB."""
    from ring.transport import ipc
    real = ipc.cuda.device_array

    def dirty(n, dtype):
        mem = real(n, dtype)
        mem.copy_to_device(np.full(n, 0xAB, np.uint8))
        return mem
    monkeypatch.setattr(ipc.cuda, "device_array", dirty)
    seg = ipc.Segment(3, 4096)
    assert not host(seg.mem).any()
    seg.close()


@pytest.mark.skipif(not SIMULATED, reason="Numba's simulator (ring/transport/simipc.py)")
def test_simulated_segments_start_all_zero(monkeypatch):
    """The simulator's segments (an MPI shared-memory window, simipc.py) are zero from their
    first byte to their last, slots included, as ipc.py's are on a GPU: MPI may hand back a
    freed window's memory, and an LL wait (the default for small calls) would take a stale
    word for a chunk. Here the window comes with its slots filled with 0xAB."""
    from mpi4py import MPI

    from ring.transport import simipc
    from ring.wait import Waiter

    class Dirty(simipc.ShmWindow):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.segment(0)[self.header_bytes:] = 0xAB
    monkeypatch.setattr(simipc, "ShmWindow", Dirty)
    seg = simipc.Segment(MPI.COMM_SELF, 3, 4096, Waiter(5.0))
    try:
        assert not seg.window.segment(0).any()
    finally:
        seg.close()


@needs_gpu
def test_ll_calls_on_a_group_made_where_a_closed_one_was(monkeypatch):
    """RING_KERNEL_PROTO=ll: a group's LL words stay in its slots when it closes, and the
    next group of the same shape is likely to get the same memory; its calls must not take
    the old words (flagged 1, 2, ... as its own) for its own chunks."""
    monkeypatch.setenv("RING_KERNEL_PROTO", "ll")
    for seed in range(3):  # different inputs each time: a stale word would be wrong
        for collective in GROUP_COLLECTIVES:  # each run() a group of its own, closed after
            run(collective, 2, 40, "float32", "sum", path="kernel", seed=seed)


# path="kernel": K persistent kernels that wait on each other need a GPU (the simulator runs
# one kernel at a time); a group of one runs it anywhere
KERNEL = pytest.param("kernel", marks=(pytest.mark.gpu, pytest.mark.skipif(
    not HAVE_GPU, reason="needs a real NVIDIA GPU")))


@pytest.mark.parametrize("path", ["stream", "copy", KERNEL])
@pytest.mark.parametrize("collective", GROUP_COLLECTIVES)
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_paths_collectives_and_rank_counts(path, collective, k):
    for n in (0, 1, 5 * k + 1, 61 * k):
        if collective is Collective.REDUCE_SCATTER:
            n -= n % k
        run(collective, k, n, "float32", "sum", path=path)


def test_the_kernel_path_rebinds_for_other_memory_only():
    """A repeated call on the same arrays reuses its bound launch (one per plan, op, dtype
    and memory) and skips the checks (the group keeps its signature); new contents are
    read, and other arrays, or the same arrays for another collective, get launches of
    their own."""
    g = ring.Group(1, path="kernel")
    kp = g._kernels[0]
    x, out, other = (dev(np.zeros(37, np.float32)) for _ in range(3))
    for i in range(3):
        x.copy_to_device(np.arange(37, dtype=np.float32) + i)
        g.allreduce([x], outs=[out])
        g.synchronize()
        assert (host(out) == np.arange(37) + i).all()
    assert len(kp._bound) == 1
    g.allreduce([x], outs=[other])
    g.allgather([x], outs=[out])
    g.synchronize()
    assert (host(other) == np.arange(37) + 2).all() and (host(out) == host(x)).all()
    assert len(kp._bound) == 3
    assert len(g._known) == 3  # the signatures kept (ring/cuda/repeated.py)
    assert g.allreduce([x], op="max")[0] is not out  # a new out each call: not kept
    assert len(g._known) == 3
    g.close()


def test_a_kept_calls_lookup_finds_its_signature_and_nothing_else():
    """ring/cuda/repeated.lookup, a kept call's per-call lookup: the Known kept under
    key()'s signature; None for other memory, another op, no out (a new array each call),
    and an argument that does not hash (the full path then says what is wrong with it)."""
    from ring.cuda import repeated
    x, out, other = (dev(np.zeros(5, np.float32)) for _ in range(3))
    args = (Collective.ALLREDUCE, x, out, "sum", 0, None, None, None)
    kept = {repeated.key(*args): "known"}
    assert repeated.lookup(kept, *args) == "known"
    assert repeated.lookup(kept, Collective.ALLREDUCE, x, other, "sum", 0, None, None,
                           None) is None
    assert repeated.lookup(kept, Collective.ALLREDUCE, x, out, "max", 0, None, None,
                           None) is None
    assert repeated.lookup(kept, Collective.ALLREDUCE, x, None, "sum", 0, None, None,
                           None) is None
    # dtype= as passed is part of it: the same float32 arrays called as bfloat16 are the
    # full path's to refuse, not the kept float32 launch's to run
    assert repeated.lookup(kept, Collective.ALLREDUCE, x, out, "sum", 0, None, None,
                           "bfloat16") is None
    assert repeated.key(Collective.ALLREDUCE, x, out, ["sum"], 0, None, None, None) is None
    assert repeated.lookup(kept, Collective.ALLREDUCE, x, out, ["sum"], 0, None, None,
                           None) is None


def test_a_full_store_of_kept_signatures_lets_its_oldest_go_first():
    """ring/cuda/repeated.remember: at its limit the store drops the signature kept first,
    so that a loop over a few signatures keeps the ones it calls now."""
    from ring.cuda import repeated
    kept = {}
    for i in range(5):
        repeated.remember(kept, i, f"known {i}", limit=3)
        assert list(kept) == list(range(max(0, i - 2), i + 1))
    assert kept[4] == "known 4"


@needs_gpu
def test_the_kernel_path_repeats_kept_calls_on_four_ranks():
    """Kept signatures with several ranks: new contents every call, a rooted collective
    (the root returns out, the others None), and the same arrays for another op."""
    k, n = 4, 1001
    g = ring.Group(k, path="kernel")
    xs = [dev(np.zeros(n, np.float32)) for _ in range(k)]
    outs = [dev(np.zeros(n, np.float32)) for _ in range(k)]
    for i in range(3):
        for r, x in enumerate(xs):
            x.copy_to_device(np.full(n, r + i, np.float32))
        assert g.allreduce(xs, outs=outs) == outs
        g.synchronize()
        for o in outs:
            assert (host(o) == k * i + k * (k - 1) // 2).all()
        got = g.reduce(xs, outs=outs, op="max", root=2)
        assert [o is None for o in got] == [True, True, False, True] and got[2] is outs[2]
        g.synchronize()
        assert (host(outs[2]) == k - 1 + i).all()
    assert len(g._known) == 2
    g.close()


def test_the_auto_path_is_the_kernel_for_plain_calls_on_one_gpu():
    """path="auto": the persistent kernel for plain calls where the ranks share one GPU (a
    group of one under the simulator, which runs no K > 1 kernels: there the stream path)."""
    g = ring.Group(1, path="auto")
    assert g._kernels is not None and g._links and g._kernel_for(False)
    assert not g._kernel_for(True)  # captures: the stream path
    x = dev(np.arange(37, dtype=np.float32))
    out = dev(np.zeros(37, np.float32))
    g.allreduce([x], outs=[out])
    g.synchronize()
    assert (host(out) == np.arange(37)).all() and len(g._known) == 1
    g.close()
    if SIMULATED:
        g = ring.Group(3, path="auto")
        assert g.path == "stream" and g._kernels is None
        g.close()


def test_the_auto_path_of_a_communicator_wants_every_rank_on_one_gpu():
    """backend.all_on_one_gpu: the rule path="auto" adds to the kernel path's own (every
    rank's neighbours on its node and GPU), from the devices every rank reported."""
    from types import SimpleNamespace

    from ring.cuda.backend import all_on_one_gpu

    def topo(nodes):
        return SimpleNamespace(same_node=lambda a, b: nodes[a] == nodes[b])

    def reported(devices):
        return [(d, None, None, (2, 4)) for d in devices]

    assert all_on_one_gpu(reported([0, 0, 0]), topo([0, 0, 0]))
    assert all_on_one_gpu(reported([1]), topo([0]))
    assert not all_on_one_gpu(reported([0, 1, 0, 1]), topo([0, 0, 0, 0]))  # 2 GPUs
    assert not all_on_one_gpu(reported([0, 0, 0, 1]), topo([0, 0, 0, 0]))  # one apart
    assert not all_on_one_gpu(reported([0, 0]), topo([0, 1]))  # device 0 of two nodes


@needs_gpu
def test_the_auto_path_mixes_kernel_calls_and_captured_stream_calls():
    """On a GPU, path="auto" keeps both paths' memory: plain calls (kernel) and a captured
    graph (stream path) follow each other on the same buffers, each result exact."""
    k, n = 4, (1 << 18) + 5
    g = ring.Group(k, path="auto")
    xs = [dev(np.full(n, r + 1, np.float32)) for r in range(k)]
    outs = [dev(np.zeros(n, np.float32)) for _ in range(k)]
    graph = g.capture("allreduce", xs, outs)
    for i in range(3):
        for o in outs:
            o.copy_to_device(np.zeros(n, np.float32))
        if i % 2:
            graph.replay(0)
        else:
            g.allreduce(xs, outs=outs)
        g.synchronize()
        cuda.synchronize()
        for o in outs:
            assert (host(o) == k * (k + 1) / 2).all(), i
    graph.close()
    g.close()


@pytest.mark.parametrize("var,value", [("RING_KERNEL_SYNC", "sc"), ("RING_KERNEL_UNROLL", "2"),
                                       ("RING_KERNEL_SCOPE", "cta"),
                                       ("RING_KERNEL_THREADS", "2048"),
                                       ("RING_KERNEL_PROTO", "ll128")])
def test_the_kernel_path_refuses_unknown_settings(monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=var):
        ring.Group(1, path="kernel")


@pytest.mark.parametrize("sync", ["fence", "acqrel"])
@pytest.mark.parametrize("collective", GROUP_COLLECTIVES)
def test_the_kernel_path_of_a_group_of_one(collective, sync, monkeypatch):
    """One rank: the persistent kernel's copy-only program, on the simulator too, with
    either hand-off (RING_KERNEL_SYNC)."""
    monkeypatch.setenv("RING_KERNEL_SYNC", sync)
    for n in (0, 1, 37):
        run(collective, 1, n, "float32", "sum", path="kernel")
    run(Collective.ALLREDUCE, 1, 37, "bfloat16", "avg", path="kernel")


@pytest.mark.parametrize("path", ["stream", "copy", KERNEL])
def test_in_place(path):
    run(Collective.ALLREDUCE, 3, 50, "float32", "max", path=path, in_place=True)
    run(Collective.REDUCE_SCATTER, 3, 48, "int32", "sum", path=path, in_place=True)


@given(k=st.integers(1, 4), n=st.integers(0, 80), chunk=st.sampled_from([64, 128, 192]),
       nslots=st.integers(2, 3), path=st.sampled_from(["stream", "copy"]),
       collective=st.sampled_from(GROUP_COLLECTIVES),
       dtype=st.sampled_from(["float16", "bfloat16", "float32", "int64", "uint8"]))
@settings(max_examples=100 if SIMULATED else 200, deadline=None)
def test_random_cases(k, n, chunk, nslots, path, collective, dtype):
    if collective is Collective.REDUCE_SCATTER:
        n -= n % k
    run(collective, k, n, dtype, "sum", path=path, chunk=chunk, nslots=nslots)


def test_results_are_the_kind_passed_in_and_shaped():
    g = ring.Group(2, chunk_bytes=64)
    xs = [dev(np.ones((3, 4), np.float32)) for _ in range(2)]
    outs = g.allreduce(xs)
    g.synchronize()
    assert type(outs[0]) is type(xs[0]) and outs[0].shape == (3, 4)
    assert (host(outs[1]) == 2).all()


def test_bad_calls_name_the_argument(monkeypatch):
    from ring.cuda import group
    g = ring.Group(2, chunk_bytes=64)
    with pytest.raises(ValueError, match="xs: need one array per rank"):
        g.allreduce([dev(np.ones(4))])
    with pytest.raises(ValueError, match=r"xs\[1\]"):
        g.allreduce([dev(np.ones(4)), dev(np.ones(5))])
    with pytest.raises(ValueError, match=r"xs\[1\]: 4 x float32 .* xs\[0\]'s 4 x float64"):
        g.allreduce([dev(np.ones(4)), dev(np.ones(4, np.float32))])  # one count, two dtypes
    # dtype= names the arrays' dtype, or bfloat16 / float8 on integer bits of their width
    with pytest.raises(TypeError, match=r"dtype: float64 does not match xs\[0\]'s float32"):
        g.allreduce([dev(np.ones(4, np.float32))] * 2, dtype="float64")
    with pytest.raises(TypeError, match=r"xs\[0\]: bfloat16 travels as 16-bit integer bits, "
                                        "got uint32"):
        g.allreduce([dev(np.ones(4, np.uint32))] * 2, dtype="bfloat16")
    with pytest.raises(ValueError, match="op: 'avg' needs a floating-point dtype"):
        g.allreduce([dev(np.ones(4, np.int32))] * 2, op="avg")
    with pytest.raises(ValueError, match="divisible"):
        g.reduce_scatter([dev(np.ones(5))] * 2)
    with pytest.raises(TypeError, match=r"xs\[0\]: expected"):
        g.allreduce([[1.0], [2.0]])
    with pytest.raises(ValueError, match="outs"):
        g.allreduce([dev(np.ones(4))] * 2, outs=[dev(np.ones(3))] * 2)
    with pytest.raises(ValueError, match=r"outs: need one array per rank \(2\), got 1"):
        g.allreduce([dev(np.ones(4))] * 2, outs=[dev(np.ones(4))])
    # stream= takes what the Communicator's does (any stream object, or its handle); the
    # rest is refused by name (the simulator took anything, a GPU failed inside Numba)
    for bad, exc, why in (("x", TypeError, "expected a CUDA stream"),
                          (True, TypeError, "expected a CUDA stream"),
                          (-1, ValueError, "a handle is not negative")):
        with pytest.raises(exc, match=f"stream: {why}"):
            g.allreduce([dev(np.ones(4))] * 2, stream=bad)
    for good in (0, None, cuda.stream(), cuda.default_stream()):
        assert (host(g.allreduce([dev(np.ones(4))] * 2, stream=good)[0]) == 2).all()
    # capture names one of the eight collectives (a KeyError 'BOGUS' before; the barrier,
    # which moves no data, has nothing to capture), before anything is captured
    for bad in ("bogus", "barrier", 3, None):
        with pytest.raises(ValueError, match=f"collective: one of 'allgather', .*, got {bad!r}"):
            g.capture(bad, [dev(np.ones(4))] * 2, [dev(np.ones(4))] * 2)
    # (also what is no list of indices: 0.0 ran as a device index, the rest were TypeErrors
    # that named nothing)
    for devices in ([0], [0, 0, 0], [0, len(cuda.gpus)], [-1, 0], [0.0, 0.0], [True, False],
                    "00", 5, [None, 0]):
        with pytest.raises(ValueError, match=r"devices: need 2 device indices below \d+, got"):
            ring.Group(2, devices=devices)
    monkeypatch.setattr(group, "SIMULATED", False)  # no GPU, no simulator: said so
    monkeypatch.setattr(group, "gpu_usable", lambda: False)
    with pytest.raises(ValueError, match="ring.Group: needs a usable NVIDIA GPU"):
        ring.Group(2)
    monkeypatch.undo()
    g2 = ring.Group(2, devices=np.zeros(2, np.int64))  # (any sequence of indices)
    assert g2.devices == [0, 0] and all(type(d) is int for d in g2.devices)
    g2.close()
    with pytest.raises(ValueError, match="path"):
        ring.Group(2, path="teleport")
    if SIMULATED:
        with pytest.raises(ValueError, match="'kernel' with several ranks in one process needs a GPU"):
            ring.Group(2, path="kernel")
    with pytest.raises(ValueError, match="nslots"):
        ring.Group(2, nslots=1)
    for bad in ("2", 0, 1.5, None):
        with pytest.raises(ValueError, match=f"size: need at least one rank, got {bad!r}"):
            ring.Group(bad)
    for bad in (0, -1.0, "10", None, float("nan")):
        with pytest.raises(ValueError, match=f"timeout: must be positive seconds, got {bad!r}"):
            ring.Group(2, timeout=bad)
    g.close()
    with pytest.raises(ring.CommunicatorError):
        g.allreduce([dev(np.ones(4))] * 2)


@needs_gpu
def test_a_call_is_ordered_on_a_stream_given_by_its_handle():
    """stream= as an int handle (or any stream object: torch's, CuPy's) is Numba's external
    stream of it: the call waits for the work queued there before it, and work after it on
    that stream sees its result."""
    k, n = 2, 1 << 16
    g = ring.Group(k, path="stream")
    s = cuda.stream()
    xs = [cuda.device_array(n, np.float32, stream=s) for _ in range(k)]
    for r, x in enumerate(xs):
        x.copy_to_device(np.full(n, r + 1, np.float32), stream=s)  # queued on s, before
    outs = g.allreduce(xs, stream=int(s.handle.value))
    got = [o.copy_to_host(stream=s) for o in outs]
    s.synchronize()
    assert all((a == k * (k + 1) / 2).all() for a in got)
    g.close()


@needs_gpu
@pytest.mark.parametrize("path", ["stream", "copy", "kernel"])
@pytest.mark.parametrize("called_before", [False, True], ids=["fresh", "after-a-call"])
def test_captured_graph_replays_the_collective(path, called_before):
    """Also after plain calls on the same group: their events must not leak into the capture
    (on the H100 that invalidated it: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED). On the kernel
    path each replay starts from the counters the last launch left (kept on the device)."""
    k, n = 4, 100_003
    g = ring.Group(k, chunk_bytes=64 << 10, path=path)
    xs = [dev(make(q, n, np.float32, seed=5)) for q in range(k)]
    outs = [dev(np.zeros(n, np.float32)) for _ in range(k)]
    if called_before:
        g.allreduce(xs, outs=outs)
        g.allreduce(xs, outs=outs)
    graph = g.capture("allreduce", xs, outs)
    want = reference.expected("allreduce", [host(x) for x in xs], "sum", align=align(4))
    for _ in range(3):
        for o in outs:
            o.copy_to_device(np.zeros(n, np.float32))
        graph.replay()
        g.synchronize()
        cuda.synchronize()
        for r in range(k):
            assert host(outs[r]).tobytes() == want[r].tobytes()
    graph.close()
    g.close()


@pytest.mark.parametrize("path", ["stream", "copy", KERNEL])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_chains_and_alltoall_move_every_dtype(path, dtype):
    """broadcast, gather, scatter (from every root) and all-to-all, in place and out, on
    3 ranks: bit for bit the reference's blocks."""
    k, per = 3, 7
    dt = parse_dtype(dtype)
    kw = _kw(dt)
    inputs = [make(q, per * k, dt, seed=4) for q in range(k)]
    with ring.Group(k, chunk_bytes=64, nslots=2, path=path) as g:
        got = g.alltoall([_dev(x) for x in inputs], **kw)
        g.synchronize()
        want = reference.expected("alltoall", inputs)
        assert [_host(o, dt).tobytes() for o in got] == [w.tobytes() for w in want]
        xs = [_dev(x) for x in inputs]
        assert g.alltoall(xs, outs=xs, **kw) == xs  # in place
        g.synchronize()
        assert [_host(o, dt).tobytes() for o in xs] == [w.tobytes() for w in want]
        for root in range(k):
            xs = [_dev(x) for x in inputs]
            assert g.broadcast(xs, root=root, **kw) == xs
            g.synchronize()
            assert all(_host(x, dt).tobytes() == inputs[root].tobytes() for x in xs)
            got = g.scatter([_dev(inputs[root]) if q == root else None for q in range(k)],
                            outs=[_dev(np.zeros(per, dt)) for _ in range(k)], root=root, **kw)
            g.synchronize()
            want = reference.expected("scatter", inputs, root=root)
            assert [_host(o, dt).tobytes() for o in got] == [w.tobytes() for w in want]
            mine = [x[:per] for x in inputs]
            got = g.gather([_dev(x) for x in mine], root=root, **kw)
            g.synchronize()
            assert [o is None for o in got] == [q != root for q in range(k)]
            assert _host(got[root], dt).tobytes() == np.concatenate(mine).tobytes()


@pytest.mark.parametrize("path", ["stream", "copy"])
@pytest.mark.parametrize("k", [3, 4])
def test_chains_of_many_chunks_wait_for_their_successors_slots(path, k):
    """Gather and scatter from every root with blocks of several chunks through two slots:
    a rank of a chain sends its own block and forwards the ones it receives, faster than
    its successor takes them, so enqueue must hold a send until a slot is free (the
    credit check binds here; the test above, three ranks and blocks of one chunk, never
    meets it)."""
    per = 61  # float32: 244 bytes a block, four chunks of 64
    inputs = [make(q, per * k, np.float32, seed=8) for q in range(k)]
    mine = [x[:per] for x in inputs]
    with ring.Group(k, chunk_bytes=64, nslots=2, path=path) as g:
        for root in range(k):
            got = g.gather([_dev(x) for x in mine], root=root)
            g.synchronize()
            assert _host(got[root], np.float32).tobytes() == np.concatenate(mine).tobytes()
            got = g.scatter([_dev(inputs[root]) if q == root else None for q in range(k)],
                            outs=[_dev(np.zeros(per, np.float32)) for _ in range(k)],
                            root=root)
            g.synchronize()
            want = reference.expected("scatter", inputs, root=root)
            assert [_host(o, np.float32).tobytes() for o in got] == [w.tobytes() for w in want]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("collective", [Collective.ALLREDUCE, Collective.REDUCE_SCATTER])
def test_the_copy_path_divides_avg_once(collective, dtype):
    """The copy path (a kernel into a staging slot, the copy engine to the successor)
    reduces with sum at every step but the final one, which divides by K."""
    run(collective, 3, 3 * 37, dtype, "avg", path="copy")


def test_a_closed_group_refuses_a_kept_call():
    """A kernel-path call kept from before close() is refused as every call is, not
    fired on the memory close() let go of."""
    g = ring.Group(1, path="kernel")
    x, out = dev(np.ones(5, np.float32)), dev(np.zeros(5, np.float32))
    for _ in range(2):
        g.allreduce([x], outs=[out])
    g.synchronize()
    assert len(g._known) == 1
    g.close()
    with pytest.raises(ring.CommunicatorError, match="the group is closed"):
        g.allreduce([x], outs=[out])


@pytest.mark.parametrize("dtype,op", [("float32", "sum"), ("bfloat16", "avg"), ("int8", "prod"),
                                      ("uint64", "max")])
def test_reduce_to_every_root(dtype, op):
    k, n = 3, 45
    dt = parse_dtype(dtype)
    inputs = [make(q, n, dt, seed=6, op=op) for q in range(k)]
    with ring.Group(k, chunk_bytes=64, nslots=2) as g:
        for root in range(k):
            got = g.reduce([_dev(x) for x in inputs], op=op, root=root, **_kw(dt))
            g.synchronize()
            assert [o is None for o in got] == [q != root for q in range(k)]
            want = reference.reduce(inputs, op, root)
            assert _host(got[root], dt).tobytes() == want.tobytes(), (dtype, op, root)


def test_float8_reductions_are_refused():
    with ring.Group(2, chunk_bytes=64) as g:
        x = _dev(np.ones(4, parse_dtype("float8_e5m2")))
        with pytest.raises(TypeError, match="float8_e5m2 is carried by the collectives"):
            g.allreduce([x, x], dtype="float8_e5m2")


@needs_gpu
def test_a_thousand_groups_give_back_their_device_memory():
    x = [dev(np.ones(1000, np.float32)) for _ in range(4)]
    before = None
    for i in range(1000):
        with ring.Group(4, chunk_bytes=1 << 20) as g:
            outs = g.allreduce(x)
        assert host(outs[0])[0] == 4
        del outs
        if i == 9:  # after the first cycles' one-time costs (kernels loaded)
            before = free_device_bytes()
    grown = before - free_device_bytes()
    assert grown < DEVICE_GROWTH_LIMIT, f"device memory in use grew by {grown} bytes over 1000 groups"
