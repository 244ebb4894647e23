"""The public Communicator: checks a call, agrees on it across ranks, runs its ring plan.

See shared/API.md for the contract. A call goes through three layers:
  1. local argument checks (device backend: arrays; call.py: op, sizes, out, in place),
  2. agreement across ranks (agreement.py), unless check=False,
  3. the plan (schedule.py) run by the device backend's executor.
Any error raised by a call breaks the communicator: later calls raise CommunicatorError,
as NCCL aborts a communicator after an error.
"""

from __future__ import annotations

from mpi4py import MPI

from . import debug, devices, fast, fatal, hierarchical, oneshot, p2p
from . import tuning as _tuning
from .agreement import agree, agree_shared, mine
from .call import Call, check_chunk, prepare
from .errors import CommunicatorError, MismatchError, TimeoutError
from .host.reduce import compiled_walk
from .options import (ALLREDUCE_ONLY, COMPILED_CHUNK_BYTES, DEFAULT_CHUNK_BYTES, DEFAULT_SLOTS,
                      EXCHANGE_BYTES, RIDE_BYTES, SHARED, check_algorithm, check_path, check_slots)
from .schedule import Collective, plan
from .topology import discover
from .transport.exchange import Exchange
from .wait import Waiter, napping, oversubscribed
from . import progress


class Work:
    """Handle of an asynchronous call (async_op=True), as torch.distributed's.

    On the cuda device the call returns once its work is queued on the GPU: wait() waits
    for it under the communicator's timeout (a ring.TimeoutError there breaks the
    communicator, as it would have in the call) and is_completed() asks without waiting.
    On the host device the call runs on the communicator's progress thread, behind the
    caller and in call order (ring/progress.py): wait() waits for it and raises its error
    (argument errors included, on every rank, as the call would have).
    Until wait() returns, the call's buffers belong to it.
    """

    def __init__(self, result, pending=None, comm: "Communicator | None" = None, name: str = ""):
        self._result, self._pending, self._comm, self._name = result, pending, comm, name

    def wait(self):
        if isinstance(self._pending, progress.Task):
            self._result, self._pending = self._pending.wait(self._comm._progress), None
        if self._pending is not None:
            pending, comm = self._pending, self._comm
            comm._waiter.start(f"{self._name}, waited on")
            try:
                pending.wait(comm._waiter)
            except BaseException as e:
                comm._broken(e)
                raise
            self._pending = None
        return self._result

    def is_completed(self) -> bool:
        """Whether the work has finished (without waiting; its errors come from wait())."""
        return self._pending is None or self._pending.query()

    def result(self):
        return self._result

    def _on_done(self, fn) -> None:
        """fn(result, error) once the call has run (ring.torch completes torch's futures
        so): at once, or on the progress thread for a host call still running."""
        if isinstance(self._pending, progress.Task):
            self._pending.on_done(fn)
        else:
            try:
                fn(self.wait(), None)
            except BaseException as e:
                fn(None, e)


class Communicator:
    def __init__(self, mpi_comm: MPI.Comm | None = None, device: str = "auto", *,
                 timeout: float = 300.0, check: bool = True,
                 chunk_bytes: int | None = None, nslots: int = DEFAULT_SLOTS,
                 algorithm: str = "auto", path: str = "auto", tuning: str | None = None):
        base = MPI.COMM_WORLD if mpi_comm is None else mpi_comm
        if not isinstance(base, MPI.Intracomm):
            raise TypeError(f"mpi_comm: expected an mpi4py intracommunicator, got {type(base).__name__}")
        # A non-blocking duplicate, so that a rank that never arrives costs a timeout, not a
        # hang; once it completes every rank is here and the set-up below is quick.
        self._comm, arrived = base.Idup()
        creating = Waiter(float(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else 300.0)
        creating.start(f"Communicator (rank {base.rank}, creation)")
        try:
            creating.until(arrived.Test, lambda: "waiting for every rank of mpi_comm to create it")
        except TimeoutError:
            fatal.peer_lost()
            raise
        self._backend = None
        self._topo = None
        self._error: BaseException | None = None
        self._closed = False
        self._progress = None
        self._kfast = None
        self._calls = 0
        self.rank, self.size = self._comm.rank, self._comm.size
        self.check = bool(check)
        self.timeout = float(timeout)
        error = None
        self._chunk_given = chunk_bytes is not None
        try:
            debug.level_from_env()
            self.device = devices.resolve(device)
            if chunk_bytes is None:  # the device kind's measured default
                chunk_bytes = DEFAULT_CHUNK_BYTES[self.device]
            if not (timeout > 0):
                raise ValueError(f"timeout: must be positive seconds, got {timeout!r}")
            check_slots(chunk_bytes, nslots)
            check_algorithm(algorithm)
            check_path(path)
            table = _tuning.load(tuning, self.device)
        except (TypeError, ValueError) as e:
            error = e
            self.device = "?"
            chunk_bytes = DEFAULT_CHUNK_BYTES["host"] if chunk_bytes is None else chunk_bytes
        else:
            debug.configure()
        self.chunk_bytes, self.nslots, self.algorithm = int(chunk_bytes), int(nslots), algorithm
        self.path = path
        self._hier = None
        self._scratch = p2p.Scratch()  # naive / ps / tree's receive buffers, kept
        # Ranks must agree on the device and the slot geometry (slots are sized by it), and
        # on whether chunk_bytes was given (calls that name none are cut by it: _chunk).
        mine = (error is not None, self.device, self.chunk_bytes, self._chunk_given, self.nslots,
                self.path)
        everyone = self._comm.allgather(mine)
        if error is not None or any(e[0] for e in everyone) or len(set(everyone)) > 1:
            self._comm.Free()
            self._closed = True
            if error is not None:
                raise error
            bad = [r for r, e in enumerate(everyone) if e[0]]
            if bad:
                raise MismatchError(f"Communicator: rank(s) {bad} passed bad arguments")
            raise MismatchError("Communicator: ranks disagree on (device, chunk_bytes, chunk_bytes "
                                "given, nslots, path): "
                                + ", ".join(f"rank {r}: {e[1:]}" for r, e in enumerate(everyone)))
        self._topo = discover(self._comm)
        self._waiter = Waiter(self.timeout, oversubscribed(self._topo.machine_ranks))
        self._backend = self._make_backend(self._comm, self._topo)
        # Why the two-level algorithm cannot run here (None: it can); built on first use.
        self._hier_why = hierarchical.applies(self._topo, self.size)
        # Every rank on one node: the agreement (and oneshot / twoshot data) goes through
        # node-shared memory, one round per call; across nodes, an MPI allgather.
        self._exchange = Exchange(self._comm, EXCHANGE_BYTES, self._waiter) \
            if self._topo.nnodes == 1 else None
        # the agreement's compiled round (_enter: its row written per call)
        self._round = fast.Agreement(self._exchange, {}) if self._exchange is not None else None
        self._xseq = 0  # rounds of the exchange so far
        # signatures of oneshot all-reduces seen, for the per-call fast path (fast.py)
        self._fast = {} if self.device == "host" else None
        # "auto"'s rules: the all-reduce's, and every other collective's by collective
        self._rules = _tuning.rules_for(table, self.size, self._topo.nnodes)
        self._rules_of = {c: _tuning.rules_for(table, self.size, self._topo.nnodes, c.label)
                          for c in Collective if c not in (Collective.ALLREDUCE,
                                                           Collective.BARRIER)}
        self.last_algorithm: str | None = None  # what the latest call ran (as RING_DEBUG logs)
        # kernel-path signatures seen, for the cuda device's per-call fast path (fastcall.py)
        self._kfast = {} if getattr(self._backend, "kernel", None) is not None else None
        # host async_op calls run here, in order (started on the first one)
        self._progress = progress.Progress(f"ring-progress-{self.rank}") \
            if self.device == "host" else None

    def _make_backend(self, comm, topo):
        return devices.backend(self.device, comm, topo, self.nslots, self.chunk_bytes,
                               self._waiter, self.path)

    # -- lifetime -----------------------------------------------------------------------
    def close(self) -> None:
        """Release windows, slots and communicators. Collective unless the communicator
        is broken (then only local resources are dropped: peers may be gone)."""
        if self._closed:
            return
        if self._progress is not None:
            self._progress.close()  # the calls handed to it end first
        self._closed = True
        self._fast = self._kfast = None  # every later call takes the full path, which refuses it
        if self._error is None:
            # Bounded like any collective: a rank that never closes costs a timeout here.
            self._waiter.start(f"close (rank {self.rank})")
            try:
                # this rank's GPU work ends before the barrier: after it, a neighbour reuses
                # its segment's memory (ring/cuda/keep.py), which a Work never waited for
                # could still be writing to
                self._backend.finish()
                done = self._comm.Ibarrier()
                self._waiter.until(done.Test, lambda: "waiting for every rank to close")
            except TimeoutError as e:
                self._error, self._backend = e, None
                fatal.peer_lost()
                raise
            if self._hier is not None:
                self._hier.close()
            if self._exchange is not None:
                self._exchange.close()
            self._backend.close()
            self._topo.close()
            self._comm.Free()
        self._backend = self._hier = self._exchange = None
        self._scratch.bufs.clear()

    def __enter__(self) -> "Communicator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("broken" if self._error else "ok")
        return f"<ring.Communicator rank {self.rank}/{self.size} device={self.device} {state}>"

    # -- collectives --------------------------------------------------------------------
    def allreduce(self, x, out=None, op="sum", *, async_op: bool = False,
                  chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None,
                  compression: str | None = None):
        """Every rank gets the elementwise reduction of all ranks' x, in x's shape.
        dtype="bfloat16" reads uint16 GPU arrays as bfloat16 (CuPy has no bfloat16).
        compression="bf16" | "fp16" (float32 sum / avg, host device; the flat ring, or
        the two-level algorithm with the wire across nodes only): the wire carries 16
        bits, each hop sums in float32 (ring/host/reduce.apply_wire)."""
        if self._fast and not async_op and compression is None and self._progress.idle():
            k = fast.key(x, out, op, chunk_bytes, algorithm, dtype)
            if k is not None:
                result = self._fast_call(k, x, out)
                if result is not fast.ELSEWHERE:
                    return result
        return self._call(Collective.ALLREDUCE, x, out, op, chunk_bytes, async_op, algorithm, dtype,
                          0, compression)

    def reduce_scatter(self, x, out=None, op="sum", *, async_op: bool = False,
                       chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None,
                       compression: str | None = None):
        """Rank r gets block r (x.size // size elements, 1-D) of the reduction.
        compression: as allreduce's (the block each rank keeps is summed in float32 and
        not rounded to the wire type)."""
        return self._call(Collective.REDUCE_SCATTER, x, out, op, chunk_bytes, async_op, algorithm,
                          dtype, 0, compression)

    def allgather(self, x, out=None, *, async_op: bool = False, chunk_bytes: int | None = None,
                  algorithm: str | None = None, dtype=None):
        """Rank r's x lands at block r of a 1-D result of size * x.size elements."""
        return self._call(Collective.ALLGATHER, x, out, "sum", chunk_bytes, async_op, algorithm,
                          dtype)

    def broadcast(self, x, root: int = 0, *, async_op: bool = False,
                  chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None):
        """In place: every rank's x ends as root's x. Returns x."""
        return self._call(Collective.BROADCAST, x, x, "sum", chunk_bytes, async_op, algorithm,
                          dtype, root)

    def reduce(self, x, out=None, op="sum", root: int = 0, *, async_op: bool = False,
               chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None):
        """The root gets the elementwise reduction of all ranks' x in out (allocated when
        None, x's shape); the other ranks get None (their out is not touched)."""
        return self._call(Collective.REDUCE, x, out, op, chunk_bytes, async_op, algorithm, dtype,
                          root)

    def gather(self, x, out=None, root: int = 0, *, async_op: bool = False,
               chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None):
        """The root gets every rank's x, rank r's at block r of a 1-D result of
        size * x.size elements; the other ranks get None (their out is not touched)."""
        return self._call(Collective.GATHER, x, out, "sum", chunk_bytes, async_op, algorithm,
                          dtype, root)

    def scatter(self, x, out=None, root: int = 0, *, async_op: bool = False,
                chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None):
        """Rank r gets block r (x.size // size elements, 1-D) of the root's x. x is read at
        the root only: elsewhere it may be None when out is given."""
        return self._call(Collective.SCATTER, x, out, "sum", chunk_bytes, async_op, algorithm,
                          dtype, root)

    def alltoall(self, x, out=None, *, async_op: bool = False, chunk_bytes: int | None = None,
                 algorithm: str | None = None, dtype=None):
        """Block j of x (x.size // size elements) goes to rank j; block i of the 1-D result
        comes from rank i. out=x is in place."""
        return self._call(Collective.ALLTOALL, x, out, "sum", chunk_bytes, async_op, algorithm,
                          dtype)

    def barrier(self) -> None:
        """Returns on every rank once every rank has called it (bounded by timeout)."""
        self._drain()
        self._usable()
        self._calls += 1
        name = f"barrier (call {self._calls}, rank {self.rank})"
        try:
            self._enter(name, {"call": self._calls, "collective": Collective.BARRIER.value},
                        None, synchronize=True)
        except BaseException as e:
            self._broken(e)
            raise
        if debug.enabled():
            debug.call({"rank": self.rank, "call": self._calls, "collective": "barrier",
                        "algorithm": "mpi"})

    def _usable(self) -> None:
        if self._closed:
            raise CommunicatorError(f"rank {self.rank}: the communicator is closed")
        if self._error is not None:
            raise CommunicatorError(
                f"rank {self.rank}: the communicator is broken by an earlier error: "
                f"{type(self._error).__name__}: {self._error}") from self._error

    def _drain(self) -> None:
        """Calls keep their order: the progress thread's go first."""
        if self._progress is not None:
            self._progress.drain()

    def _call(self, collective, x, out, op, chunk_bytes, async_op, algorithm=None, dtype=None,
              root=0, compression=None):
        if self._kfast is not None and compression is None:
            from .cuda import fastcall  # (numba: the cuda device only)
            known = self._kfast.get(fastcall.key(collective, x, out, op, root, chunk_bytes,
                                                 algorithm, dtype))
            if known is not None:
                return self._kernel_call(known, x, out, async_op)
        if (self._fast and collective is not Collective.ALLREDUCE and not async_op
                and compression is None and self._progress.idle()):  # (allreduce: its own)
            k = fast.key_of(collective, x, out, op, root, chunk_bytes, algorithm, dtype)
            if k is not None:
                result = self._fast_call(k, x, out)
                if result is not fast.ELSEWHERE:
                    return result
        if async_op and self._progress is not None:
            self._usable()
            return Work(None, self._progress.submit(lambda: self._behind(
                collective, x, out, op, chunk_bytes, False, algorithm, dtype, root,
                compression)), self)
        self._drain()
        return self._call_now(collective, x, out, op, chunk_bytes, async_op, algorithm, dtype,
                              root, compression)

    def _behind(self, *args):
        """_call_now(*args) on the progress thread: waits that nap, leaving the core to
        the caller."""
        with napping(self._waiter, self._progress.urgent):
            return self._call_now(*args)

    def _call_now(self, collective, x, out, op, chunk_bytes, async_op, algorithm=None,
                  dtype=None, root=0, compression=None):
        self._usable()
        self._calls += 1
        name = f"{collective} (call {self._calls}, rank {self.rank})"
        record = {"call": self._calls, "collective": collective.value}
        c, error = None, None
        try:
            c = prepare(self._backend, self.size, self.rank, collective, x, out, op,
                        check_chunk(chunk_bytes, self.chunk_bytes), "ring", dtype, root,
                        compression=compression)
            c.algorithm = self._resolve(algorithm, collective, c.count * c.dtype.itemsize,
                                        c.compression)
            if chunk_bytes is None:
                c.chunk_bytes = self._chunk(c)
            record.update(c.record())
        except (TypeError, ValueError) as e:
            error = e
        pending = None
        try:
            self._enter(name, record, error, c)
            if self._kfast is not None:
                self._backend.last_launch = None
            if c.count:
                pending = self._run(c, defer=async_op)
        except BaseException as e:
            self._broken(e)
            raise
        self.last_algorithm = c.algorithm
        if self._kfast is not None and c.algorithm == "ring":
            self._learn_kernel(c, record, x, out, op, root, chunk_bytes, algorithm, dtype)
        if self._fast is not None and c.count and c.algorithm == "oneshot" and not async_op:
            k = fast.key(x, out, op, chunk_bytes, algorithm, dtype) \
                if collective is Collective.ALLREDUCE else \
                fast.key_of(collective, x, out, op, root, chunk_bytes, algorithm, dtype)
            self._learn(fast.learnt_key(c, x, out, k, self.rank), record, c)
        if debug.enabled():
            debug.call({"rank": self.rank, "call": self._calls, "collective": str(collective),
                        "algorithm": c.algorithm, "count": c.count, "dtype": c.dtype.name,
                        **({"op": str(c.op)} if collective.reduces else {}),
                        **({"root": c.root} if collective.rooted else {})})
        return Work(c.result, pending, self, name) if async_op else c.result

    def _learn_kernel(self, c: Call, record: dict, x, out, op, root, chunk_bytes, algorithm,
                      dtype) -> None:
        """Keep what a kernel-path call worked out, for the next calls like it
        (ring/cuda/fastcall.py; the arguments as passed)."""
        from .cuda import fastcall
        k = fastcall.key(c.collective, x, out, op, root, chunk_bytes, algorithm, dtype)
        known = None if k is None else \
            fastcall.learnt(c, record, x, out, self._backend.last_launch, self.rank)
        if known is not None:
            if self._exchange is not None:
                known.agreement = fast.Agreement(self._exchange, record)
            fastcall.remember(self._kfast, k, known)

    def _kernel_call(self, known, x, out, async_op: bool = False):
        """A call of a kept kernel-path signature: agree on its record, fire its launch
        (with async_op: return a Work whose wait() waits for it)."""
        self._usable()
        self._calls += 1
        name = f"{known.name} (call {self._calls}, rank {self.rank})"
        try:
            if self.check and known.agreement is not None:  # the record's compiled round
                self._waiter.start(name)
                fast.agree(self, known.agreement, self._calls)
            else:
                self._enter(name, dict(known.record, call=self._calls), None)
            pending = self._backend.replay(known.launch, defer=async_op)
        except BaseException as e:
            self._broken(e)
            raise
        self.last_algorithm = known.algorithm
        if debug.enabled():
            debug.call({**known.log, "call": self._calls})
        result = known.result(x, out)
        return Work(result, pending, self, name) if async_op else result

    def _chunk(self, c: Call) -> int:
        """The chunk of a call that names none: the communicator's chunk_bytes (the slot
        size), except on the host with every rank on one node, where the ring's walk is
        compiled (host/fastring.py) for c's dtype and op: there COMPILED_CHUNK_BYTES,
        unless the communicator was given chunk_bytes. A function of agreed arguments only,
        so every rank cuts the same plan."""
        if (self._chunk_given or self.device != "host" or self._topo.nnodes != 1
                or c.algorithm != "ring" or not compiled_walk(c.dtype, c.op, c.wire)):
            return c.chunk_bytes
        return min(COMPILED_CHUNK_BYTES, c.chunk_bytes)

    def _fast_call(self, k, x, out):
        """The call through ring/fast.py, of signature k or, where out may be another view
        of x, k in place; fast.ELSEWHERE if neither is known or this call's."""
        result = self._fast_as(self._fast.get(k), x, out)
        if result is fast.ELSEWHERE and k[3] == 2:
            result = self._fast_as(self._fast.get(fast.in_place(k)), x, out)
        return result

    def _fast_as(self, known: fast.Signature | fast.Gathered | None, x, out):
        if known is None:
            return fast.ELSEWHERE
        try:
            result = fast.run(self, known, x, out)
        except BaseException as e:
            self._broken(e)
            raise
        if result is not fast.ELSEWHERE:
            self.last_algorithm = "oneshot"
            if debug.enabled():
                debug.call({**known.log, "call": self._calls})
        return result

    def _learn(self, learnt, record: dict, c: Call) -> None:
        """Keep what this oneshot call worked out, for the next calls like it (learnt:
        fast.learnt_key's answer)."""
        if learnt is None:
            return
        k, memory, delta = learnt
        if len(self._fast) >= fast.LIMIT:
            self._fast.clear()
        if self._exchange is None:  # across nodes (all-reduce): the agreement's allgather
            self._fast[k] = fast.Gathered(self._comm, record, c.op, c.count, c.x.dtype, k[3],
                                          self.rank)
            return
        self._fast[k] = fast.Signature(
            self._exchange, record, c.op, c.count, c.x.dtype, len(k[1]), k[3], self.rank,
            self._backend.entered_address(), c.collective, c.root, memory, delta,
            () if c.result is None or c.collective is Collective.ALLREDUCE else c.result.shape)

    def _wait_round(self, seq: int) -> None:
        """Until every rank has posted exchange round seq; a timeout names who has not."""
        try:
            self._exchange.wait(seq)
        except TimeoutError as e:
            behind = self._exchange.behind(seq)
            raise TimeoutError(f"{e}; rank(s) {behind} have not reached this call") \
                if behind else e from None

    def _enter(self, name: str, record: dict, error, c: Call | None = None,
               synchronize: bool = False) -> None:
        """Start the call's clock and agree on it: through the exchange window when every
        rank is on one node (then oneshot / twoshot data rides in the same round), else
        one MPI allgather (where a small oneshot's data rides too). check=False skips the
        agreement, except for a barrier and for oneshot / twoshot, whose data travel with
        it or right after it."""
        self._waiter.start(name)
        self._backend.entered(self._calls)
        ex = self._exchange
        rides = (error is None and c is not None and c.algorithm in SHARED
                 and self.device == "host")  # on the GPU: ring/cuda/shared.py
        if ex is not None and (self.check or rides or synchronize):
            posts = rides and c.count and oneshot.posts(c.collective, self.rank, c.root)
            if error is None and not posts:  # the record alone: one compiled round
                self._round.row[:] = mine(record, None)
                fast.agree(self, self._round, record["call"])
                return
            self._xseq += 1
            seq = self._xseq
            post = (lambda: oneshot.post(ex, seq, c.x)) if posts else None
            agree_shared(ex, seq, record, error, name, post, self._wait_round)
            return
        # oneshot across nodes (host) always agrees: its data follow in a message sized by
        # the call; up to RIDE_BYTES they ride in the agreement's own message
        by_mpi = error is None and c is not None and c.algorithm == "oneshot" and \
            self.device == "host"
        if self.check or by_mpi:
            ride = c.x if by_mpi and c.count * c.dtype.itemsize <= RIDE_BYTES else None
            try:
                rode = agree(self._comm, record, error, self._waiter, name, ride)
            except TimeoutError as e:
                behind = self._backend.behind(self._calls)
                if behind:
                    raise TimeoutError(f"{e}; rank(s) {behind} have not reached this call") from None
                raise
            if ride is not None:
                c.rode = rode
        elif error is not None:
            raise error
        elif synchronize:
            done = self._comm.Ibarrier()
            self._waiter.until(done.Test, lambda: "waiting for every rank to reach the barrier")

    def _run(self, c: Call, defer: bool = False):
        """Run the call; with defer, what is still in flight on the device may be returned
        (a Pending for Work.wait(); None when nothing is)."""
        if c.algorithm in ALLREDUCE_ONLY and self.device == "cuda":
            from .cuda import shared  # numba.cuda: imported with the cuda device only
            (shared.run if c.algorithm in SHARED else shared.staged)(self, c)
            return
        if c.algorithm == "oneshot" and self._exchange is None:
            p2p.allgathered(self._comm, self._waiter, c.op, c.x, c.out, c.rode, self._scratch)
            return
        if c.algorithm == "oneshot":
            oneshot.run(self._exchange, self._xseq, c.collective, c.op, c.root, c.count, c.out)
            return
        if c.algorithm == "twoshot":
            oneshot.twoshot(self._exchange, self._xseq, c.op, c.out)
            return
        if c.algorithm == "naive":
            p2p.naive(self._comm, self._waiter, c.op, c.x, c.out, scratch=self._scratch)
            return
        if c.algorithm == "ps":
            p2p.ps(self._comm, self._waiter, c.op, c.x, c.out, scratch=self._scratch)
            return
        if c.algorithm == "tree":
            p2p.tree(self._comm, self._waiter, c.op, c.x, c.out, scratch=self._scratch)
            return
        x = c.x
        in_place_alltoall = c.collective is Collective.ALLTOALL and c.in_place
        if in_place_alltoall and self.device != "host":
            # blocks would land over x before they are sent (schedule.alltoall_overwritten);
            # the host walks copy no more than they must (HostBackend.alltoall_in_place)
            x = self._backend.copy_of(x)
        if c.algorithm == "hierarchical":
            if self._hier is None:  # collective: every rank agreed on this call
                self._everyone_here("make the two-level rings (hierarchical)")
                self._hier = hierarchical.Hierarchical(self._comm, self._topo, self._make_backend)
            self._hier.run(c.collective, c.op, x, c.out, c.dtype.itemsize, c.chunk_bytes, c.dtype,
                           wire=c.wire)
            return
        item = c.dtype.itemsize if c.wire is None else c.wire.itemsize
        p = plan(c.collective, self.size, self.rank, c.count, item, c.chunk_bytes,
                 self._backend.align(c.collective, item), c.root)
        if c.wire is not None:  # the host backend's (_resolve refuses it elsewhere)
            return self._backend.run(p, c.op, x, c.out, wire=c.wire)
        if in_place_alltoall and self.device == "host":
            return self._backend.alltoall_in_place(p, c.op, c.out)
        return self._backend.run(p, c.op, x, c.out, logical=c.dtype, defer=defer)

    def _everyone_here(self, what: str) -> None:
        """A barrier under the call's deadline, before a set-up that a call makes on first
        use (collective MPI calls, unbounded): a rank lost since the agreement costs a
        TimeoutError here instead of a hang there."""
        done = self._comm.Ibarrier()
        self._waiter.until(done.Test, lambda: f"waiting for every rank to {what}")

    def _broken(self, e: BaseException) -> None:
        self._error = e
        self._fast = self._kfast = None  # every later call takes the full path, which refuses it
        if isinstance(e, TimeoutError):
            fatal.peer_lost()

    def _resolve(self, algorithm, collective: Collective, nbytes: int,
                 compression: str | None = None) -> str:
        """The algorithm a call runs: the one asked for (ValueError if it cannot run
        here), or for "auto" the tuning table's choice, else the two-level or flat ring.
        A compressed call runs on the host device: its all-reduce on the two-level
        algorithm where "auto" would take it (the wire only across nodes), else the flat
        ring."""
        algorithm = self.algorithm if algorithm is None else algorithm
        check_algorithm(algorithm)
        if compression is not None:
            if self.device != "host":
                raise ValueError(f"compression: runs on the host device only (not yet on "
                                 f"{self.device}; ring.buckets.GradientBuckets casts there)")
            two_level = collective is Collective.ALLREDUCE and \
                self._why_not("hierarchical", collective, nbytes) is None
            if algorithm not in ("auto", "ring", "hierarchical") or \
                    (algorithm == "hierarchical" and not two_level):
                raise ValueError(f"algorithm: {algorithm!r} cannot run with compression "
                                 "(the ring's slots carry the compressed wire: the flat "
                                 "ring, or the two-level all-reduce across nodes)")
            # two-level: only its ring across nodes carries the 16-bit wire
            return "hierarchical" if algorithm != "ring" and two_level else "ring"
        if algorithm == "auto":
            rules = self._rules if collective is Collective.ALLREDUCE else \
                self._rules_of.get(collective, ())
            pick = _tuning.choose(rules, nbytes,
                                  lambda a: self._why_not(a, collective, nbytes) is None)
            if pick is not None:
                return pick
            return "ring" if self._why_not("hierarchical", collective, nbytes) else "hierarchical"
        why = self._why_not(algorithm, collective, nbytes)
        if why:
            raise ValueError(f"algorithm: {algorithm!r} cannot run here: {why}")
        return algorithm

    def _why_not(self, algorithm: str, collective: Collective, nbytes: int) -> str | None:
        """Why `algorithm` cannot run this call here (None: it can)."""
        if algorithm == "ring":
            return None
        if algorithm == "hierarchical":
            if collective.rooted:
                return f"{collective} runs as a chain along the flat ring only"
            if collective is Collective.ALLTOALL:
                return "alltoall runs on the flat ring only"
            return self._hier_why
        allreduce = collective is Collective.ALLREDUCE
        if algorithm == "oneshot" and not allreduce:  # every collective, on the host
            if self.device != "host":
                return f"oneshot runs {collective} on the host device only"
        elif not allreduce and algorithm in ALLREDUCE_ONLY:
            return f"it is an all-reduce algorithm; {collective} runs on the ring"
        if algorithm in SHARED:
            # across nodes, the host's oneshot all-reduce goes by MPI (p2p.allgathered)
            if self._exchange is None and not (algorithm == "oneshot" and allreduce
                                               and self.device == "host"):
                return "it needs every rank of the communicator on one node"
            posted = oneshot.posted(collective, nbytes, self.size)
            if posted > EXCHANGE_BYTES:
                return f"it carries at most {EXCHANGE_BYTES} bytes per rank, got {posted}"
        return None
