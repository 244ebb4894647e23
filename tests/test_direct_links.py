"""The host executor through direct links (MPI's: chunks sent from x and out, received into
out, no staging copy), with every rank a thread and fake MPI ends that hold the executor to
MPI's rules for nonblocking calls, so that a rule of executor.sends_from_x / receives_into
that is too loose shows as an error or a wrong result:

- a send's memory must not change until its request completes (where MpiSend tests it:
  when its place in the ring of requests is reused, or at flush): checked there;
- a receive's memory is undefined from when it is posted until it completes: filled with
  garbage when posted (as early as MpiRecv would post it);
- "early": a message is read from the sender's array when it is sent and written into the
  receiver's array as soon as both are posted; "late": both only when the receiver takes
  it. Each rank poisons its arrays as soon as its call returns (the caller may reuse them).

Results are compared bit for bit with the in-process simulator's (tests/simulate.py), which
walks the same steps through slots. Beside them, the executor's other choices: what goes
through slots whatever its size (a 16-bit wire), the in-place all-to-all's blocks kept
aside over shared memory (executor.in_place), and the chunk and step a timeout names.
"""

import threading

import ml_dtypes
import numpy as np
import pytest

from . import simulate
from ring.host import executor
from ring.schedule import Collective, alltoall_overwritten, plan, sizes
from ring.transport.mpi import MpiRecv
from ring.wait import Waiter
from ringtypes import Op

TIMEOUT = 20.0


class Stuck(AssertionError):
    pass


class Wire:
    """Messages from one rank to its successor."""

    def __init__(self):
        self.cv = threading.Condition()
        self.msgs = []  # [bytes copy or the sender's array (late), delivered]
        self.consumed = 0
        self.posted = {}  # message index -> the receiver's array (its receive is posted)

    def until(self, ready, what):
        if not self.cv.wait_for(ready, TIMEOUT):
            raise Stuck(what)


class Send:
    direct = True

    def __init__(self, wire, nslots, early, cap):
        self.w, self.nslots, self.early, self.cap = wire, nslots, early, cap
        self.direct_sends = 0
        self.pending = []  # sends from the caller's arrays: (message, array, its bytes then)

    def _free(self):
        """Wait for a free request (nslots in flight at most), completing the old ones."""
        w = self.w
        with w.cv:
            w.until(lambda: len(w.msgs) - w.consumed < self.nslots, "no free request")
        self._complete(len(self.w.msgs) - self.nslots)

    def _complete(self, upto):
        for m, view, then in [p for p in self.pending if p[0] <= upto]:
            if not np.array_equal(view.view(np.uint8), then):
                raise AssertionError(f"message {m}: its memory was written while it was sent")
        self.pending = [p for p in self.pending if p[0] > upto]

    def acquire(self, dtype):
        self._free()
        self.slot = np.empty(self.cap, np.uint8)
        return self.slot.view(dtype)

    def _put(self, data):
        w = self.w
        with w.cv:
            m = len(w.msgs)
            w.msgs.append([data, False])
            if self.early and m in w.posted:
                deliver(w, m)
            w.cv.notify_all()
            return m

    def post(self, nbytes):
        self._put(self.slot[:nbytes].copy())

    def post_from(self, view):
        self._free()
        self.direct_sends += 1
        then = view.view(np.uint8).copy()
        m = self._put(then.copy() if self.early else view)
        self.pending.append((m, view, then))

    def flush(self):
        w = self.w
        with w.cv:
            w.until(lambda: w.consumed == len(w.msgs), "sends never taken")
        self._complete(len(w.msgs))


def deliver(w, m):
    data, done = w.msgs[m]
    if not done:
        w.posted[m].view(np.uint8)[...] = np.asarray(data).view(np.uint8)
        w.msgs[m][1] = True


class Recv:
    direct = True

    def __init__(self, wire, nslots, early, cap):
        self.w, self.nslots, self.early, self.cap = wire, nslots, early, cap
        self.received = 0
        self.direct_recvs = 0

    def begin(self, nchunks, into=None):
        self.base, self.unit = self.received, 0
        self.into = [(None, -1)] * nchunks if into is None else list(into)
        self.direct_recvs += sum(v is not None for v, _ in self.into)
        self._post()

    def _post(self):
        """Post the receives into the caller's arrays that MpiRecv would have posted by
        now (in order, nslots ahead, each once its gate has passed): garbage until they
        complete; early, the data too if it was sent."""
        w = self.w
        with w.cv:
            for k in range(self.received - self.base,
                           min(len(self.into), self.received - self.base + self.nslots)):
                view, gate = self.into[k]
                if gate >= self.unit:
                    break
                m = self.base + k
                if view is not None and m not in w.posted:
                    w.posted[m] = view
                    view.view(np.uint8)[...] = 0xA5
                    if self.early and m < len(w.msgs):
                        deliver(w, m)

    def wait(self, dtype, unit=0):
        self.unit = unit
        self._post()
        w, m = self.w, self.received
        view = self.into[m - self.base][0]
        with w.cv:
            w.until(lambda: m < len(w.msgs), "no data")
            if view is not None:
                assert m in w.posted, "a receive into the caller's array was never posted"
                deliver(w, m)
                return None
            slot = np.empty(self.cap, np.uint8)
            data = np.asarray(w.msgs[m][0]).view(np.uint8)
            slot[:data.size] = data
            w.msgs[m][1] = True
        return slot.view(dtype)

    def release(self):
        w = self.w
        with w.cv:
            self.received += 1
            w.consumed += 1
            w.cv.notify_all()
        self._post()

    def abandon(self):
        pass


class At:
    at = None


def run_threads(collective, xs, outs, op, chunk_bytes, nslots, early, root=0, wire=None,
                from_out=None):
    """Each rank's executor.run in a thread, through fake MPI ends. wire: a 16-bit type the
    slots carry (float32 data); from_out: per rank, the blocks read from out
    (executor.in_place)."""
    k = len(xs)
    carried = xs[0].dtype if wire is None else np.dtype(wire)
    count = sizes(collective, xs[0].size, k)[0]
    plans = [plan(collective, k, r, count, carried.itemsize, chunk_bytes, 1, root)
             for r in range(k)]
    cap = max(plans[0].max_chunk, 1) * carried.itemsize
    wires = [Wire() for _ in range(k)]  # wires[r]: r -> r + 1
    sends = [Send(wires[r], nslots, early, cap) for r in range(k)]
    recvs = [Recv(wires[r - 1], nslots, early, cap) for r in range(k)]
    results, errors = [None] * k, []

    def rank(r):
        try:
            executor.run(plans[r], op, xs[r], outs[r], sends[r], recvs[r], At(),
                         wire=None if wire is None else carried,
                         from_out=() if from_out is None else from_out[r])
            results[r] = outs[r].copy()
            xs[r][...] = 0  # poison: the call has returned, the caller may reuse both
            outs[r][...] = 0
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            for w in wires:
                with w.cv:
                    w.cv.notify_all()

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 3)
    if errors:
        raise errors[0]
    assert not any(t.is_alive() for t in threads), "a rank never finished"
    return results, sum(s.direct_sends for s in sends), sum(r.direct_recvs for r in recvs)


def inputs(k, n, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return [rng.standard_normal(n).astype(dtype) for _ in range(k)]
    return [rng.integers(-3, 4, n).astype(dtype) for _ in range(k)]


MODES = ["early", "late"]


@pytest.fixture
def direct_at_any_size(monkeypatch):
    """Tiny arrays here: let every chunk go direct (options.DIRECT_MIN_BYTES)."""
    monkeypatch.setattr(executor, "DIRECT_MIN_BYTES", 0)


@pytest.mark.usefixtures("direct_at_any_size")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("n,nslots", [(37, 2), (301, 4)])
def test_allreduce_through_direct_links(mode, k, in_place, n, nslots):
    for dtype, op in ((np.float32, Op.SUM), (np.int32, Op.PROD), (np.float64, Op.AVG)):
        xs = inputs(k, n, dtype, k * n)
        want = simulate.run(Collective.ALLREDUCE, [x.copy() for x in xs], op, 32, nslots)
        outs = xs if in_place else [np.full_like(x, 99) for x in xs]
        got, sent, received = run_threads(Collective.ALLREDUCE, xs, outs, op, 32, nslots,
                                          mode == "early")
        for r in range(k):
            np.testing.assert_array_equal(got[r], want[r], err_msg=f"rank {r}")
        assert sent > 0 and received > 0  # the direct paths ran


def views(collective, xs, k, in_place):
    """(x, out) per rank, as the Communicator passes them: in place, x is out's block r
    (all-gather, gather) or out is x's block r (reduce-scatter), or x itself (all-to-all);
    broadcast is in place."""
    n = xs[0].size
    if collective is Collective.BROADCAST or (in_place and collective is Collective.ALLTOALL):
        return xs, xs
    if collective in (Collective.ALLGATHER, Collective.GATHER):
        if in_place:
            outs = [np.full(n * k, 99, xs[0].dtype) for _ in range(k)]
            for r in range(k):
                outs[r][r * n:(r + 1) * n] = xs[r]
            return [o[r * n:(r + 1) * n] for r, o in enumerate(outs)], outs
        return xs, [np.full(n * k, 99, xs[0].dtype) for _ in range(k)]
    if collective in (Collective.REDUCE_SCATTER, Collective.SCATTER):
        b = n // k
        if in_place:
            return xs, [x[r * b:(r + 1) * b] for r, x in enumerate(xs)]
        return xs, [np.full(b, 99, xs[0].dtype) for _ in range(k)]
    return xs, [np.full(n, 99, xs[0].dtype) for _ in range(k)]


@pytest.mark.usefixtures("direct_at_any_size")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("collective", [c for c in Collective if c not in (
    Collective.ALLREDUCE, Collective.BARRIER)], ids=str)
def test_every_collective_through_direct_links(mode, k, in_place, collective):
    if in_place and collective is Collective.ALLTOALL and alltoall_overwritten(k):
        pytest.skip("over MPI links this in-place all-to-all runs from a copy of x "
                    "(HostBackend.alltoall_in_place)")
    n, root = 6 * 13, 1
    xs = inputs(k, n, np.float32, 7 * k)
    op = Op.SUM
    want = simulate.run(collective, [x.copy() for x in xs], op, 32, 2, root=root)
    x_views, outs = views(collective, xs, k, in_place)
    got, _, _ = run_threads(collective, x_views, outs, op, 32, 2, mode == "early", root)
    ranks = [root] if collective in (Collective.REDUCE, Collective.GATHER) else range(k)
    for r in ranks:
        np.testing.assert_array_equal(got[r], want[r], err_msg=f"rank {r}")


@pytest.mark.usefixtures("direct_at_any_size")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("wire", [np.float16, ml_dtypes.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("in_place", [False, True])
def test_a_16_bit_wire_goes_through_slots_whatever_its_size(mode, wire, in_place):
    """compression=: a float32 call whose slots carry float16 or bfloat16 never sends from
    or receives into the arrays (they hold another type than the wire), even where its
    chunks are past the threshold; it gives the simulator's bits of that wire."""
    k, n = 3, 301
    for op in (Op.SUM, Op.AVG):
        xs = inputs(k, n, np.float32, 5 * k)
        want = simulate.run(Collective.ALLREDUCE, [x.copy() for x in xs], op, 32, 2,
                            wire=wire)
        outs = xs if in_place else [np.full_like(x, 99) for x in xs]
        got, sent, received = run_threads(Collective.ALLREDUCE, xs, outs, op, 32, 2,
                                          mode == "early", wire=wire)
        assert (sent, received) == (0, 0)
        for r in range(k):
            np.testing.assert_array_equal(got[r], want[r], err_msg=f"rank {r}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [3, 4, 5])
def test_an_alltoall_in_place_through_slots_keeps_aside_what_it_would_overwrite(mode, k):
    """Over shared memory (slots, no direct ends) an all-to-all in place walks from out
    itself but for the blocks it would receive over before sending them
    (schedule.alltoall_overwritten), which executor.in_place copies aside first: the
    simulator's result out of place, bit for bit."""
    n = 7 * k
    xs = inputs(k, n, np.float32, 11 * k)
    want = simulate.run(Collective.ALLTOALL, [x.copy() for x in xs], Op.SUM, 32, 2)
    held, from_out = zip(*(executor.in_place(plan(Collective.ALLTOALL, k, r, n, 4, 32), xs[r])
                           for r in range(k)))
    assert all(len(f) < k for f in from_out)
    got, sent, received = run_threads(Collective.ALLTOALL, list(held), xs, Op.SUM, 32, 2,
                                      mode == "early", from_out=from_out)
    assert (sent, received) == (0, 0)
    for r in range(k):
        np.testing.assert_array_equal(got[r], want[r], err_msg=f"rank {r}")


def test_chunks_under_the_threshold_go_through_slots():
    xs = inputs(2, 301, np.float32, 1)
    outs = [np.empty_like(x) for x in xs]
    got, sent, received = run_threads(Collective.ALLREDUCE, xs, outs, Op.SUM, 256, 2, True)
    assert (sent, received) == (0, 0)
    want = simulate.run(Collective.ALLREDUCE, inputs(2, 301, np.float32, 1), Op.SUM, 256, 2)
    for r in range(2):
        np.testing.assert_array_equal(got[r], want[r])


class _Request:
    def Test(self, status=None):  # noqa: N802 - MPI's name
        return True


class _Comm:
    """Records what MpiRecv posts: the buffers of its Irecvs, in order."""

    def __init__(self):
        self.posted = []

    def Irecv(self, buf, source, tag):  # noqa: N802
        self.posted.append(buf[0])
        return _Request()


def test_the_mpi_receiver_posts_into_an_array_only_past_its_gate():
    """The real MpiRecv keeps the rule the fake Recv above holds the executor to: a
    receive into the caller's array is posted only once the walk is past the unit named
    as its gate (the last that still reads that memory), not at it; one into a slot at
    once (nslots ahead)."""
    comm, a = _Comm(), np.zeros(4, np.float32)
    recv = MpiRecv(comm, 0, 2, 64, Waiter(10.0), "rank 0")
    recv.begin(2, into=[(None, -1), (a, 1)])
    assert len(comm.posted) == 1 and comm.posted[0] is not None  # the slot's
    assert recv.wait(np.float32, unit=1) is not None  # the first message: in its slot
    recv.release()
    assert len(comm.posted) == 1  # still at unit 1: a's receive waits
    assert recv.wait(np.float32, unit=2) is None  # past it: posted, landed in a
    assert len(comm.posted) == 2 and np.shares_memory(comm.posted[1], a)


class _Zeros:
    """Both ends of one rank's ring, the peers standing in: every receive finds a chunk of
    zeros, every send a free slot; each receive notes where the waiter says the walk is,
    and the one numbered `fail` gives up as a receive past its deadline does."""

    direct = False

    def __init__(self, cap, waiter, fail):
        self.cap, self.waiter, self.fail, self.seen = cap, waiter, fail, []

    def begin(self, nchunks, into=None):
        pass

    def wait(self, dtype, unit=0):
        self.seen.append(self.waiter.at)
        if len(self.seen) == self.fail:
            raise self.waiter.failure("waiting for data from rank 0")
        return np.zeros(self.cap, dtype)

    def release(self):
        pass

    def acquire(self, dtype):
        return np.empty(self.cap, dtype)

    def post(self, nbytes):
        pass


@pytest.mark.parametrize("collective", [Collective.ALLREDUCE, Collective.ALLGATHER], ids=str)
@pytest.mark.parametrize("k", [2, 3, 4])
def test_a_timeout_names_the_chunk_and_the_step_it_waited_in(collective, k):
    """A host call that times out says where (ring/wait.py): the executor keeps the
    waiter at (chunk, step of the plan) for every unit it walks, chunk-major; the first
    receive of the second chunk gives up, and its error names chunk 1 and that step."""
    p = plan(collective, k, 1, 40 * k, 4, 32)
    recvs = [s for s, step in enumerate(p.steps) if step.recv]
    assert p.nchunks > 1 and recvs
    waiter = Waiter(10.0)
    waiter.start("allreduce (call 3, rank 1)")
    ends = _Zeros(p.max_chunk, waiter, fail=len(recvs) + 1)
    x, out = np.ones(p.count // (k if collective is Collective.ALLGATHER else 1),
                     np.float32), np.empty(p.count, np.float32)
    with pytest.raises(TimeoutError, match=rf"rank 1\), chunk 1 step {recvs[0]}: waiting for "
                                           r"data from rank 0: no progress within 10 s"):
        executor.run(p, Op.SUM, x, out, ends, ends, waiter)
    assert ends.seen == [(j, s) for j in (0, 1) for s in recvs][:len(recvs) + 1]
