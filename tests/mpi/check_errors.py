"""Bad input: a clear error on every rank, never a hang. Each case breaks its communicator,
so each builds its own."""

import numpy as np
import pytest

import ring
import ringtypes
from ring.schedule import Collective

LAST = -1


def fresh(**kw):
    return ring.Communicator(device=kw.pop("device", "host"), timeout=kw.pop("timeout", 60), **kw)


def raised(info, exc) -> None:
    """The error is exc itself: a MismatchError (a ValueError) is not the culprit's own
    ValueError, and the culprit's own error is not a MismatchError."""
    if exc is ring.MismatchError:
        assert isinstance(info.value, ring.MismatchError), repr(info.value)
    else:
        assert not isinstance(info.value, ring.MismatchError), repr(info.value)


def expect_everywhere(call, culprit_exc, culprit, match=None):
    """call(comm) raises culprit_exc on rank `culprit` and MismatchError elsewhere."""
    c = fresh()
    culprit %= c.size
    exc = culprit_exc if c.rank == culprit else ring.MismatchError
    with pytest.raises(exc, match=match if c.rank == culprit else None) as info:
        call(c)
    raised(info, exc)
    if exc is ring.MismatchError:
        assert "rank" in str(info.value)
    # broken from now on, on every rank
    with pytest.raises(ring.CommunicatorError):
        c.allreduce(np.ones(3))
    c.close()


def test_async_bad_call_raises_at_wait_on_every_rank():
    """Host async_op: the bad argument's error comes from wait(), on every rank."""
    expect_everywhere(
        lambda c: c.allreduce(np.ones(8), out=np.empty(8 - (c.rank == 0)), async_op=True).wait(),
        ValueError, 0, match="out: needs 8 elements")


def test_a_stream_on_the_host_device_is_refused_on_every_rank():
    """The host device has no streams (its calls are synchronous): stream= is a bad
    argument there, raised at the call."""
    expect_everywhere(lambda c: c.allreduce(np.ones(4), stream=0 if c.rank == 0 else None),
                      TypeError, 0, match="stream: the host device has no CUDA streams")


def test_register_on_the_host_is_false_everywhere_and_checks_its_argument():
    """The host device has nothing to map (its algorithms copy): register is False on
    every rank; a non-array on one rank is its TypeError and MismatchError elsewhere."""
    c = fresh()
    assert c.register(np.ones(4)) is False
    assert c.deregister(np.ones(4)) is False
    c.close()
    expect_everywhere(lambda c: c.register([1.0] if c.rank == 0 else np.ones(4)), TypeError,
                      0, match="x: expected a NumPy array, got list")


@pytest.mark.parametrize("flag", ["check", "blocking"])
def test_check_and_blocking_must_be_bools_on_every_rank(flag):
    """A string ("no" would be True) or an array (whose truth is an error) on rank 0 alone:
    its TypeError there, MismatchError naming it elsewhere, no rank left waiting."""
    for bad in ("no", np.ones(2)):
        exc = TypeError if _rank() == 0 else ring.MismatchError
        match = rf"{flag}: expected True or False, got " if _rank() == 0 else r"rank\(s\) \[0\]"
        with pytest.raises(exc, match=match) as info:
            ring.Communicator(device="host", timeout=60, **{flag: bad if _rank() == 0 else True})
        raised(info, exc)
    for numpys in (np.True_, np.False_):  # NumPy's bools are bools, taken as they say
        with ring.Communicator(device="host", timeout=60, **{flag: numpys}) as c:
            assert getattr(c, flag) is bool(numpys)
            assert c.allreduce(np.ones(3, np.float32))[0] == c.size


def test_ranks_that_disagree_on_check_are_refused_at_creation():
    """A rank that checks its calls waits for its peers' agreement, one that does not for
    their data: each would wait out the timeout at the first call. Refused on every rank."""
    if _size() == 1:
        return
    with pytest.raises(ring.MismatchError,
                       match=r"disagree on \(.*check, .*\): rank 0: \(.*True, '\w{8}', \d+\), "
                             r"rank 1: \(.*False, '\w{8}', \d+\)"):
        ring.Communicator(device="host", timeout=60, check=_rank() == 0)
    with ring.Communicator(device="host", timeout=60, check=False) as c:  # agreed: it runs
        assert np.array_equal(c.allreduce(np.ones(3), algorithm="ring"), np.full(3, c.size))


@pytest.mark.parametrize("check", [True, False])
def test_ranks_whose_tuning_tables_differ_are_refused_at_creation(tmp_path, check):
    """"auto" picks by the tuning table's rules: where the ranks' tables differ their picks
    may (rank 0's ring beside rank 1's naive waited out the timeout with check=False),
    so the communicator is refused on every rank; the same rules from two files are one."""
    import json
    algorithm = "ring" if _rank() == 0 else "naive"
    for rules in ([{"ranks": _size(), "nodes": 1, "max_bytes": 1 << 30, "algorithm": algorithm}],
                  [] if _rank() == 0 else [{"ranks": 64, "nodes": 1, "max_bytes": 8,
                                            "algorithm": "ring"}]):
        table = tmp_path / f"rank{_rank()}.json"
        table.write_text(json.dumps({"rules": rules}))
        if _size() == 1:
            ring.Communicator(device="host", timeout=60, check=check, tuning=str(table)).close()
            continue
        with pytest.raises(ring.MismatchError,
                           match=r"tuning rules' CRC-32, RING_NODES\): rank 0: \(.*'\w{8}', \d+\)"):
            ring.Communicator(device="host", timeout=60, check=check, tuning=str(table))
    table.write_text(json.dumps({"machine": f"rank {_rank()}", "rules": [  # (any RING_NODES)
        {"ranks": _size(), "nodes": n, "max_bytes": 1 << 30, "algorithm": "naive"}
        for n in range(1, _size() + 1)]}))
    with ring.Communicator(device="host", timeout=60, check=check, tuning=str(table)) as c:
        assert np.array_equal(c.allreduce(np.ones(3)), np.full(3, c.size))
        assert c.last_algorithm == "naive"


def test_synchronize_on_the_host_returns_after_the_calls():
    c = fresh()
    w = c.allreduce(np.ones(5), async_op=True)
    c.synchronize()  # the progress thread's call has run
    assert w.is_completed()
    assert np.array_equal(w.wait(), np.full(5, float(c.size)))
    c.close()


def test_non_contiguous_on_one_rank():
    expect_everywhere(
        lambda c: c.allreduce(np.ones(20)[:: 2 if c.rank == c.size - 1 else 1][:10]),
        ValueError, LAST, match="x: the array must be contiguous")


@pytest.mark.parametrize("off", [-1, 1], ids=["short", "long"])
def test_wrong_out_size(off):
    """out of one element too few or too many (a longer out would keep a tail the call
    never wrote)."""
    expect_everywhere(lambda c: c.allreduce(np.ones(8), out=np.empty(8 + off * (c.rank == 0))),
                      ValueError, 0, match="out: needs 8 elements")


def test_wrong_out_dtype():
    expect_everywhere(lambda c: c.allreduce(
        np.ones(8), out=np.empty(8, np.float32 if c.rank == 0 else np.float64)),
        TypeError, 0, match="out: dtype")


def test_unknown_op():
    expect_everywhere(lambda c: c.allreduce(np.ones(4), op="bogus" if c.rank == 0 else "sum"),
                      ValueError, 0, match="op: unknown op 'bogus'")


def test_avg_on_integers():
    expect_everywhere(lambda c: c.allreduce(np.ones(4, np.int32 if c.rank == 0 else np.float32),
                                            op="avg" if c.rank == 0 else "sum"),
                      ValueError, 0, match="op: 'avg' needs a floating-point dtype")


def test_unsupported_dtype():
    expect_everywhere(lambda c: c.allreduce(np.ones(4, np.complex64 if c.rank == 0 else np.float32)),
                      TypeError, 0, match="x: unsupported dtype complex64")


def test_not_an_array():
    expect_everywhere(lambda c: c.allreduce([1.0, 2.0] if c.rank == 0 else np.ones(2)),
                      TypeError, 0, match="x: expected a NumPy array")


def test_a_dtype_that_is_not_the_arrays_on_one_rank():
    """dtype= says how to read an array's bits (bfloat16 in uint16 on a GPU); a host array
    has its dtype, and another one named is refused. The same one named is taken."""
    c = fresh()
    assert np.array_equal(c.allreduce(np.ones(4, np.float32), dtype="float32"),
                          np.full(4, c.size, np.float32))
    c.close()
    expect_everywhere(lambda c: c.allreduce(np.ones(4, np.float32),
                                            dtype="float64" if c.rank == 0 else None),
                      TypeError, 0, match="dtype: float64 does not match x's float32")


class _OnAGpu:
    """What a CuPy array or a torch CUDA tensor shows: __cuda_array_interface__."""
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0, False),
                                "version": 3}


def test_a_gpu_array_on_the_host_device_on_one_rank():
    expect_everywhere(lambda c: c.allreduce(_OnAGpu() if c.rank == 0 else np.ones(4)),
                      TypeError, 0,
                      match="x: a GPU array was passed to a communicator on the 'host' device")


@pytest.mark.parametrize("bad", [0, 1.5, 2 << 20, "abc"])
def test_a_calls_chunk_outside_the_slot_on_one_rank(bad):
    """A call's chunk_bytes is at most the slot the communicator was built with (1 MiB
    here, the host's default), a whole positive number of bytes."""
    expect_everywhere(lambda c: c.allreduce(np.ones(64), chunk_bytes=bad if c.rank == 0 else None),
                      ValueError, 0, match=rf"chunk_bytes: must be in 1\.\.{1 << 20} .*got {bad!r}")


def test_reduce_scatter_indivisible():
    if _size() == 1:  # every size divides by one rank
        with fresh() as c:
            assert c.reduce_scatter(np.ones(3)).tolist() == [1.0, 1.0, 1.0]
        return
    expect_everywhere(lambda c: c.reduce_scatter(np.ones(c.size + (c.rank == 0))), ValueError, 0,
                      match="x: reduce_scatter needs x.size divisible")


@pytest.mark.parametrize("kept", [False, True], ids=["first-call", "after-kept-calls"])
def test_a_read_only_out_on_one_rank(kept):
    """out must be writeable: rank 0's read-only out is its ValueError, MismatchError on
    the others, and the array is left as it was; also where calls of the same signature
    with a writeable out came first (on one node the host keeps them: ring/host/repeated.py,
    whose compiled round would write any memory it is given)."""
    frozen = np.full(8, 7.0)
    frozen.flags.writeable = False

    def call(c):
        if kept:
            for _ in range(3):
                c.allreduce(np.ones(8), out=np.empty(8))
        return c.allreduce(np.ones(8), out=frozen if c.rank == 0 else np.empty(8))
    expect_everywhere(call, ValueError, 0, match="out: the array is read-only")
    assert np.array_equal(frozen, np.full(8, 7.0))


@pytest.mark.parametrize("kept", [False, True], ids=["first-call", "after-kept-calls"])
def test_overlapping_out(kept):
    """An out that overlaps x elsewhere than the in-place position, on rank 0: also after
    calls of the same signature with an out apart from x, which the host keeps (on one
    node and across nodes: ring/host/repeated.py)."""
    def call(c):
        if kept:
            for _ in range(3):
                c.allreduce(np.ones(8), out=np.empty(8))
        buf = np.ones(10)
        return c.allreduce(buf[:8], out=buf[1:9] if c.rank == 0 else np.empty(8))
    expect_everywhere(call, ValueError, 0, match="out: overlaps x")


@pytest.mark.parametrize("what", ["count", "dtype", "op", "collective", "in_place"])
def test_ranks_disagree(what):
    c = fresh()
    odd = c.rank == 0 and c.size > 1
    x = np.ones(6, np.float32)
    if what == "count":
        call = lambda: c.allreduce(np.ones(7 if odd else 6, np.float32))  # noqa: E731
    elif what == "dtype":
        call = lambda: c.allreduce(x.astype(np.float64) if odd else x)  # noqa: E731
    elif what == "op":
        call = lambda: c.allreduce(x, op="max" if odd else "sum")  # noqa: E731
    elif what == "collective":
        call = lambda: (c.allgather(x) if odd else c.allreduce(x))  # noqa: E731
    else:
        call = lambda: c.allreduce(x, out=x if odd else None)  # noqa: E731
    if c.size == 1:
        call()  # nothing to disagree with
        c.close()
        return
    with pytest.raises(ring.MismatchError, match="disagree"):
        call()
    c.close()


@pytest.mark.parametrize("what", ["count", "op", "chunk_bytes", "root", "bad arguments"])
def test_ranks_disagree_in_the_compiled_round(what, monkeypatch):
    """A call whose data do not ride in the agreement (here the ring's) agrees in one
    compiled round (ring/host/repeated.py's Agreement), never in agreement.agree_shared's NumPy
    round; a difference is named there on every rank, as the NumPy round names it. A rank
    whose own arguments are bad posts its row from the NumPy round and raises its own
    error; the others, in the compiled round, name it."""
    c = fresh()
    agree_shared = ring.communicator.agree_shared

    def refuse(exchange, seq, record, error, *args, **kwargs):
        assert error is not None, "agreed through agreement.agree_shared"
        agree_shared(exchange, seq, record, error, *args, **kwargs)

    monkeypatch.setattr(ring.communicator, "agree_shared", refuse)
    odd = c.rank == 0 and c.size > 1
    x = np.ones(64, np.float32)
    assert np.array_equal(c.allreduce(x, algorithm="ring"), x * c.size)  # all agree
    if what == "root":
        call = lambda: c.broadcast(x, root=1 if odd else 0, algorithm="ring")  # noqa: E731
    elif what == "bad arguments":
        out = np.empty(63 if odd else 64, np.float32)
        call = lambda: c.allreduce(x, out=out, algorithm="ring")  # noqa: E731
    else:
        kw = {"count": {"x": x[:32] if odd else x}, "op": {"x": x, "op": "max" if odd else "sum"},
              "chunk_bytes": {"x": x, "chunk_bytes": 128 if odd else 256}}[what]
        call = lambda: c.allreduce(algorithm="ring", **kw)  # noqa: E731
    if c.size == 1:
        call()  # nothing to disagree with
    elif what == "bad arguments":
        with pytest.raises(ValueError, match="out: needs 64 elements" if odd else
                           r"rank\(s\) \[0\] passed bad arguments"):
            call()
    else:
        with pytest.raises(ring.MismatchError, match=f"disagree on {what}"):
            call()
    c.close()


@pytest.mark.parametrize("bad", ["name", "dtype", "op", "algorithm", "collective"])
def test_bad_compression_on_one_rank(bad):
    """compression= is checked on every rank: the culprit's own error, MismatchError
    elsewhere (a 16-bit wire carries float32 sums and averages on the rings only)."""
    x = np.ones(8, np.float32)
    culprit = {"name": (ValueError, "compression: None, 'fp16' or 'bf16'"),
               "dtype": (TypeError, "compression: x must be float32"),
               "op": (ValueError, "compression: op must be sum or avg"),
               "algorithm": (ValueError, "cannot run with compression"),
               "collective": (ValueError, "all-reduce and reduce-scatter only")}[bad]

    def call(c):
        if c.rank != 0:
            return c.allreduce(x, compression="bf16")
        if bad == "name":
            return c.allreduce(x, compression="int4")
        if bad == "dtype":
            return c.allreduce(x.astype(np.float64), compression="bf16")
        if bad == "op":
            return c.allreduce(x, op="max", compression="bf16")
        if bad == "algorithm":
            return c.allreduce(x, algorithm="oneshot", compression="bf16")
        return c._call(Collective.REDUCE, x, None, "sum", None, False,
                       compression="bf16")
    expect_everywhere(call, culprit[0], 0, match=culprit[1])


def test_ranks_disagree_on_compression():
    c = fresh()
    x = np.ones(6, np.float32)
    if c.size == 1:
        c.close()
        return
    with pytest.raises(ring.MismatchError, match=r"disagree on compression \(rank 0: bf16"):
        c.allreduce(x, compression="bf16" if c.rank == 0 else None)
    c.close()


@pytest.mark.parametrize("bad", ["size", "-1", "True", "1.0"])
def test_bad_root_on_one_rank(bad):
    """A root that is not a rank: past the end, negative, a bool (True is not rank 1, as
    torch and mpi4py would not take it either) or a float."""
    def root(c):
        return {"size": c.size, "-1": -1, "True": True, "1.0": 1.0}[bad]
    expect_everywhere(lambda c: c.broadcast(np.ones(4), root=root(c) if c.rank == 0 else 0),
                      ValueError, 0, match="root: must be a rank of the communicator")


def test_ranks_disagree_on_the_root():
    c = ring.Communicator(device="host", timeout=60)
    if c.size > 1:
        with pytest.raises(ring.MismatchError, match="root"):
            c.reduce(np.ones(4), root=c.rank)
    c.close()


def test_rooted_collectives_have_no_two_level_algorithm():
    c = ring.Communicator(device="host", timeout=60)
    with pytest.raises(ValueError, match="'hierarchical' cannot run here") as info:
        c.broadcast(np.ones(4), algorithm="hierarchical")  # bad on every rank alike
    raised(info, ValueError)
    c.close()


def _refuses_every_use(c, match: str) -> None:
    """Every method of c raises CommunicatorError matching `match`: the collectives (a
    signature it kept too), barrier, synchronize, register, deregister and why_not."""
    x = np.ones(2)
    uses = {"allreduce": lambda: c.allreduce(np.ones(2)),
            "a kept call": lambda: c.allreduce(x, algorithm="oneshot"),
            "barrier": c.barrier, "synchronize": c.synchronize,
            "register": lambda: c.register(x), "deregister": lambda: c.deregister(x),
            "why_not": lambda: c.why_not("ring")}
    for name, use in uses.items():
        with pytest.raises(ring.CommunicatorError, match=match):
            use()
            pytest.fail(f"{name} ran")


def test_use_after_close():
    """Every use of a closed communicator is refused: a call, a call of a signature it
    kept (ring/host/repeated.py), barrier, synchronize, register, deregister, why_not."""
    c = fresh()
    x = np.ones(2)
    for _ in range(2):  # the second call kept
        assert (c.allreduce(x, algorithm="oneshot") == c.size).all()
    c.close()
    c.close()  # idempotent
    _refuses_every_use(c, "closed")


def test_use_after_an_error():
    """An error breaks the communicator on every rank: every later use is refused, naming
    the error (API.md), until close(), which drops what this rank holds."""
    c = fresh()
    x = np.ones(2)
    for _ in range(2):
        assert (c.allreduce(x, algorithm="oneshot") == c.size).all()
    with pytest.raises(ValueError, match="op: unknown op 'bogus'"):
        c.allreduce(np.ones(4), op="bogus")  # (on every rank alike)
    _refuses_every_use(c, "broken by an earlier error: ValueError: op: unknown op 'bogus'")
    c.close()
    _refuses_every_use(c, "closed")


def test_errors_derive_from_ring_error():
    assert issubclass(ring.MismatchError, ValueError)
    assert issubclass(ring.TimeoutError, TimeoutError)
    for e in (ring.MismatchError, ring.TimeoutError, ring.CommunicatorError):
        assert issubclass(e, ring.RingError)


def _bad_on_rank_0(match: str, **options) -> None:
    """Communicator(**options) raises the ValueError naming the option on rank 0, whose
    options are bad, and MismatchError naming rank 0 on the others."""
    exc = ValueError if _rank() == 0 else ring.MismatchError
    with pytest.raises(exc, match=match if _rank() == 0 else r"rank\(s\) \[0\]") as info:
        ring.Communicator(**options)
    raised(info, exc)


def test_communicator_options_are_checked_on_every_rank():
    first = _rank() == 0
    _bad_on_rank_0("nslots", device="host", nslots=1 if first else 4)
    _bad_on_rank_0("device", device="tpu" if first else "host")
    _bad_on_rank_0("path", device="host", path="dma" if first else "stream")
    _bad_on_rank_0("timeout: must be positive seconds, got 0", device="host",
                   timeout=0 if first else 60)
    _bad_on_rank_0("chunk_bytes: must be a positive multiple of 64, got 100", device="host",
                   chunk_bytes=100 if first else 1024)
    # not numbers at all: their conversions once raised on rank 0 alone, before the ranks
    # compared their options, and left the others in that comparison for ever
    _bad_on_rank_0("timeout: must be positive seconds, got None", device="host",
                   timeout=None if first else 60)
    _bad_on_rank_0("nslots: need at least 2 slots per link, got None", device="host",
                   nslots=None if first else 4)
    _bad_on_rank_0("chunk_bytes: must be a positive multiple of 64, got 'abc'", device="host",
                   chunk_bytes="abc" if first else 1024)
    if _size() > 1:
        with pytest.raises(ring.MismatchError, match="disagree"):
            ring.Communicator(device="host", chunk_bytes=1024 if _rank() == 0 else 2048)
        with pytest.raises(ring.MismatchError, match="chunk_bytes given"):  # the same value,
            # but calls naming no chunk are cut by its default rule only where it was not given
            ring.Communicator(device="host", chunk_bytes=None if _rank() == 0 else 1 << 20)
        with pytest.raises(ring.MismatchError, match="disagree"):
            ring.Communicator(device="host", path="copy" if _rank() == 0 else "stream")


def test_ranks_that_emulate_other_nodes_are_refused_on_every_rank(monkeypatch):
    """RING_NODES splits the ranks into emulated nodes, a collective split: set on rank 0
    alone (or to something else there) it left the others waiting in it for ever, and
    where it was no number rank 0 raised alone. Now: its ValueError on rank 0 and
    MismatchError elsewhere, or one MismatchError naming every rank's RING_NODES."""
    if _rank() == 0:
        monkeypatch.setenv("RING_NODES", "x")
    _bad_on_rank_0("RING_NODES must be a positive integer, got 'x'", device="host", timeout=60)
    if _size() == 1:
        return
    for mine, others in (("2", None), ("2", "1")):
        monkeypatch.undo()
        if _rank() == 0:
            monkeypatch.setenv("RING_NODES", mine)
        elif others is not None:
            monkeypatch.setenv("RING_NODES", others)
        else:  # (the suite may run under RING_NODES)
            monkeypatch.delenv("RING_NODES", raising=False)
        with pytest.raises(ring.MismatchError,
                           match=rf"RING_NODES\): rank 0: \(.*, {mine}\), rank 1: \(.*, "
                                 rf"{others or 0}\)"):
            ring.Communicator(device="host", timeout=60)
    monkeypatch.setenv("RING_NODES", "2")  # alike: it runs
    with ring.Communicator(device="host", timeout=60) as c:
        assert c.nodes == 2
        assert np.array_equal(c.allreduce(np.ones(3)), np.full(3, c.size))


def test_why_not_names_a_bad_collective_or_size():
    """why_not's collective is one's name (any case) or a Collective, its nbytes a whole
    number >= 0: an unknown name was a KeyError 'BOGUS', -5 or "x" bytes answered None."""
    c = fresh()
    assert c.why_not("ring", "ALLREDUCE", 8.0) is None
    assert c.why_not("ring", Collective.ALLGATHER, 8) is None
    for bad in ("bogus", "all_reduce", 3, None):
        with pytest.raises(ValueError, match=rf"collective: one of 'allgather', .*, got {bad!r}"):
            c.why_not("ring", bad, 8)
    for bad in (-5, "x", 1.5, None, True):
        with pytest.raises(ValueError, match=rf"nbytes: .* got {bad!r}"):
            c.why_not("ring", "allreduce", bad)
    c.close()


def test_mpi_comm_must_be_an_mpi4py_intracommunicator():
    with pytest.raises(TypeError, match="mpi_comm: expected an mpi4py intracommunicator, got str"):
        ring.Communicator("world", device="host")
    from mpi4py import MPI
    freed = MPI.COMM_WORLD.Dup()
    freed.Free()
    with pytest.raises(ValueError, match=r"mpi_comm: the communicator has been freed"):
        ring.Communicator(freed, device="host")


def _rank():
    from mpi4py import MPI
    return MPI.COMM_WORLD.rank


def _size():
    from mpi4py import MPI
    return MPI.COMM_WORLD.size


@pytest.mark.parametrize("collective", ["gather", "scatter"])
def test_bad_root_for_gather_and_scatter(collective):
    expect_everywhere(lambda c: getattr(c, collective)(np.ones(2 * c.size),
                                                       root=-1 if c.rank == 0 else 0),
                      ValueError, 0, match="root: must be a rank of the communicator")


def test_ranks_disagree_on_the_gather_root():
    c = fresh()
    if c.size > 1:
        with pytest.raises(ring.MismatchError, match="root"):
            c.gather(np.ones(3), root=c.rank)
    c.close()


@pytest.mark.parametrize("collective", ["scatter", "alltoall"])
def test_scatter_and_alltoall_need_divisible_sizes(collective):
    if _size() == 1:  # every size divides by one rank
        with fresh() as c:
            assert getattr(c, collective)(np.ones(3)).tolist() == [1.0, 1.0, 1.0]
        return
    expect_everywhere(lambda c: getattr(c, collective)(np.ones(c.size + (c.rank == 0))),
                      ValueError, 0, match=f"x: {collective} needs x.size divisible")


def test_scatter_off_the_root_needs_x_or_out():
    if _size() == 1:  # the only rank is the root, whose x is read
        c = fresh()
        with pytest.raises(TypeError, match="x: expected a NumPy array, got NoneType"):
            c.scatter(None)
        c.close()
        return
    expect_everywhere(lambda c: c.scatter(np.ones(2 * c.size) if c.rank != 1 else None,
                                          root=0),
                      ValueError, 1, match="x: scatter needs x or out on every rank")


def test_float8_carries_data_but_refuses_reductions():
    f8 = ringtypes.float8_e4m3fn
    with fresh() as c:
        x = np.ones(2 * c.size, f8)
        assert c.allgather(x).view(np.uint8).tolist() == [x.view(np.uint8)[0]] * (2 * c.size ** 2)
    expect_everywhere(lambda c: c.allreduce(np.ones(4, f8 if c.rank == 0 else np.float32)),
                      TypeError, 0, match="x: float8_e4m3fn is carried by the collectives "
                                          "that only move data")


def test_alltoall_out_overlapping_x_elsewhere():
    def call(c):
        buf = np.ones(4 * c.size)
        return c.alltoall(buf[:2 * c.size], out=buf[1:2 * c.size + 1] if c.rank == 0 else None)
    expect_everywhere(call, ValueError, 0, match="out: overlaps x")
