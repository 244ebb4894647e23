"""The public Communicator: checks a call, agrees on it across ranks, runs its algorithm.

See shared/API.md for the contract. A call goes through three layers:
  1. local argument checks (device backend: arrays; call.py: op, sizes, out, in place),
     and the algorithm resolved (the one asked for, or "auto"'s: tuning.py),
  2. agreement across ranks (agreement.py), unless check=False,
  3. the algorithm (ring/algorithms/) run on the Context (context.py): the communicator's
     MPI communicator, layout, device backend and waiter, nothing of this API.
Repeated calls of a signature take a per-call fast path (host: ring/host/repeated.py;
cuda's kernel path: ring/cuda/repeated.py).
Any error raised by a call breaks the communicator: later calls raise CommunicatorError,
as NCCL aborts a communicator after an error.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from mpi4py import MPI

from . import algorithms, debug, devices, fatal, progress
from . import tuning as _tuning
from .agreement import (agree, agree_setup, agree_shared, mine, raise_refused, record_hash,
                        refusal)
from .call import Call, check_chunk, prepare
from .context import Context
from .errors import CommunicatorError, MismatchError, TimeoutError
from .host import compiled_round, repeated, repeated_cma
from .options import (DEFAULT_CHUNK_BYTES, DEFAULT_SLOTS, EXCHANGE_BYTES, check_algorithm,
                      check_flags, check_path, check_slots, check_timeout, is_flag,
                      whole_number)
from .schedule import Collective, collective_named
from .topology import discover, emulated_nodes
from .transport.exchange import Exchange
from .wait import CallName, Waiter, napping, oversubscribed


# the algorithms whose call may be one kernel launch on the caller's stream (cuda: the ring
# on the kernel path, the one-shot and two-shot kernels); every other one waits for the
# stream first
ONE_LAUNCH = ("ring", "oneshot", "twoshot")
# the collectives by a module's name: reading an Enum's member costs 0.1 µs, every call
ALLREDUCE, REDUCE_SCATTER, ALLGATHER, ALLTOALL = (
    Collective.ALLREDUCE, Collective.REDUCE_SCATTER, Collective.ALLGATHER, Collective.ALLTOALL)
BROADCAST, REDUCE, GATHER, SCATTER = (
    Collective.BROADCAST, Collective.REDUCE, Collective.GATHER, Collective.SCATTER)


class Work:
    """Handle of an asynchronous call (async_op=True), as torch.distributed's.

    On the cuda device the call returns once its work is queued on the GPU: wait() waits
    for it under the communicator's timeout (a ring.TimeoutError there breaks the
    communicator, as it would have in the call) and is_completed() asks without waiting.
    On the host device the call runs on the communicator's progress thread, behind the
    caller and in call order (ring/progress.py): wait() waits for it and raises its error
    (argument errors included, on every rank, as the call would have).
    wait(timeout) waits at most `timeout` seconds (as torch's Work.wait and a Future's
    result do): a call not finished by then raises ring.TimeoutError on this rank only, and
    nothing is broken: the call goes on, and a later wait() waits for it again.
    Until wait() returns, the call's buffers belong to it.
    """

    def __init__(self, result, pending=None, comm: "Communicator | None" = None, name: str = ""):
        self._result, self._pending, self._comm, self._name = result, pending, comm, name

    def wait(self, timeout: float | None = None):
        limit = None if timeout is None else check_timeout(timeout)
        if limit is not None and limit >= threading.TIMEOUT_MAX:  # (inf: none; an Event's
            limit = None  # wait takes no more)
        if isinstance(self._pending, progress.Task):
            if limit is not None and not self._pending.done_within(self._comm._progress, limit):
                raise self._unfinished(limit)
            self._result, self._pending = self._pending.wait(self._comm._progress), None
        if self._pending is not None:
            pending, comm = self._pending, self._comm
            waiter = comm._ctx.waiter
            waiter.start(f"{self._name}, waited on")
            try:
                unfinished = limit is not None and time.monotonic() + limit < waiter.deadline \
                    and not self._done_within(waiter, pending, limit)
                if not unfinished:
                    pending.wait(waiter)
            except BaseException as e:
                comm._broken(e)
                raise
            if unfinished:
                raise self._unfinished(limit)
            self._pending = None
        return self._result

    @staticmethod
    def _done_within(waiter, pending, limit: float) -> bool:
        """Whether the queued call's work is done within `limit` s (this rank's MPI
        messages moved meanwhile, as in any wait)."""
        armed = waiter.deadline
        waiter.deadline = time.monotonic() + limit
        try:
            waiter.until(pending.query, lambda: "")
            return True
        except TimeoutError:
            return False
        finally:
            waiter.deadline = armed

    def _unfinished(self, limit: float) -> TimeoutError:
        return TimeoutError(f"{self._name}: not finished within wait()'s {limit:g} s; the call "
                            f"goes on (the communicator is not broken): wait() again for it")

    def is_completed(self) -> bool:
        """Whether the work has finished (without waiting; its errors come from wait())."""
        return self._pending is None or self._pending.query()

    def result(self):
        """The call's result, once it has run: wait()'s (as concurrent.futures' Future's
        result(); a host call still on the progress thread has none before it runs)."""
        return self.wait()

    def add_done_callback(self, fn) -> None:
        """fn(result, error) once the call has run (ring.torch completes torch's futures
        so): at once, or on the progress thread for a host call still running. Called once:
        an error of fn's own, called at once, is raised here (not given to fn as the call's)."""
        if isinstance(self._pending, progress.Task):
            self._pending.on_done(fn)
            return
        try:
            result = self.wait()
        except BaseException as e:
            fn(None, e)
            return
        fn(result, None)


class Communicator:
    """Collectives over the ranks of an mpi4py communicator, on NumPy arrays (device="host")
    or GPU arrays (device="cuda"). Attributes: rank, size, device (what "auto" resolved to),
    path (the cuda ring's data path as resolved: "kernel" or "stream"; the host's is
    "stream"), nodes (how many nodes the ranks span), last_algorithm (what the latest call
    ran), and the options as given (timeout, check, chunk_bytes, nslots, algorithm)."""

    def __init__(self, mpi_comm: MPI.Comm | None = None, device: str = "auto", *,
                 timeout: float = 300.0, check: bool = True,
                 chunk_bytes: int | None = None, nslots: int = DEFAULT_SLOTS,
                 algorithm: str = "auto", path: str = "auto", tuning: str | None = None,
                 blocking: bool = False):
        base = MPI.COMM_WORLD if mpi_comm is None else mpi_comm
        if not isinstance(base, MPI.Intracomm):
            raise TypeError(f"mpi_comm: expected an mpi4py intracommunicator, got {type(base).__name__}")
        if base == MPI.COMM_NULL:  # (a freed one: else MPI's "Invalid communicator")
            raise ValueError("mpi_comm: the communicator has been freed (MPI.COMM_NULL)")
        # A non-blocking duplicate, so that a rank that never arrives costs a timeout, not a
        # hang; once it completes every rank is here and the set-up below is quick.
        self._comm, arrived = base.Idup()
        try:  # (a bad timeout is raised below with the other options, on every rank)
            creating = Waiter(check_timeout(timeout))
        except ValueError:
            creating = Waiter(300.0)
        creating.start(f"Communicator (rank {base.rank}, creation)")
        try:
            creating.until(arrived.Test, lambda: "waiting for every rank of mpi_comm to create it")
        except TimeoutError:
            fatal.peer_lost()
            raise
        self._ctx: Context | None = None
        self._error: BaseException | None = None
        self._closed = False
        self._progress = None
        self._kfast = None
        self.rank, self.size = self._comm.rank, self._comm.size
        # True or NumPy's True only: a bad flag is refused below, on every rank (bool() of
        # an array could raise here, on one rank)
        self.check = is_flag(check) and bool(check)
        self.blocking = is_flag(blocking) and bool(blocking)
        error = None
        self._chunk_given = chunk_bytes is not None
        try:
            debug.level_from_env()
            self.device = devices.resolve(device)
            if chunk_bytes is None:  # the device kind's measured default
                chunk_bytes = DEFAULT_CHUNK_BYTES[self.device]
            self.timeout = check_timeout(timeout)
            check_slots(chunk_bytes, nslots)
            check_algorithm(algorithm)
            path = check_path(path)
            check_flags(check=check, blocking=blocking)
            table = _tuning.load(tuning, self.device)
            rules = _tuning.digest(table)
            emulated = emulated_nodes()
        except Exception as e:  # noqa: BLE001 - raised below, once every rank knows of it
            # (raised here, on this rank alone, it would leave the others in the allgather)
            error = e
            self.device, chunk_bytes, nslots, path, rules, emulated = "?", 0, 0, "?", "?", 0
        else:
            debug.configure()
        self.chunk_bytes, self.nslots, self.algorithm = int(chunk_bytes), int(nslots), algorithm
        self.path = path
        # Ranks must agree on: the device and the slot geometry (slots are sized by it);
        # whether chunk_bytes was given (calls that name none are cut by it: the algorithms'
        # chunk_bytes); check (a rank that checks waits for its peers' agreement at each
        # call, one that does not for their data); the tuning table's rules ("auto" picks by
        # them: with check=False nothing else would find a choice that differs); RING_NODES
        # (the topology's split, collective, differs with it).
        mine = (error is not None, self.device, self.chunk_bytes, self._chunk_given, self.nslots,
                self.path, self.check, rules, emulated)
        if error is None:  # Numba's first load here, where no peer waits under a deadline
            compiled_round.warm_agreement()
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
                                "given, nslots, path, check, tuning rules' CRC-32, RING_NODES): "
                                + ", ".join(f"rank {r}: {e[1:]}" for r, e in enumerate(everyone)))
        topo = discover(self._comm, emulated)
        self.nodes = topo.nnodes  # the nodes the ranks span (RING_NODES=N emulates N)
        waiter = Waiter(self.timeout, oversubscribed(topo.machine_ranks))
        asked = self.path  # as passed: every backend (the two-level rings' too) resolves it
        try:  # the cuda backend's failures are raised on every rank: what is made is let go
            backend = self._make_backend(self._comm, topo, waiter, asked)
        except Exception:
            topo.close()
            self._comm.Free()
            self._closed = True
            raise
        self.path = backend.path  # as the device resolved it ("auto": kernel or stream)
        backend.blocking = self.blocking
        # Every rank on one node: the agreement (and oneshot / twoshot data) goes through
        # node-shared memory, one round per call; across nodes, an MPI allgather.
        exchange = Exchange(self._comm, EXCHANGE_BYTES, waiter) if topo.nnodes == 1 else None
        self._ctx = Context(self._comm, topo, self.device, backend, waiter, exchange,
                            lambda comm, topo: self._make_backend(comm, topo, waiter, asked))
        # the agreement's compiled round (_enter: its row written per call)
        self._round = repeated.Agreement(exchange, {}) if exchange is not None else None
        # signatures of oneshot calls seen, for the host's repeated calls (host/repeated.py)
        self._fast = {} if self.device == "host" else None
        # "auto"'s rules, by collective, by whether the call's buffers are registered (only
        # where a rule says: _registered asks the backend then) and by whether it is in place
        self._rules_of = {(c, reg, placed): _tuning.rules_for(table, self.size, topo.nnodes,
                                                              c.label, reg, placed)
                          for c in Collective if c is not Collective.BARRIER
                          for reg in (False, True) for placed in (False, True)}
        self._by_registration = _tuning.by_registration(table)
        self.last_algorithm: str | None = None  # what the latest call ran (as RING_DEBUG logs)
        # kernel-path signatures seen, for the cuda device's repeated calls (cuda/repeated.py)
        self._kfast = {} if getattr(backend, "kernel", None) is not None else None
        if self._kfast is not None:
            from .cuda import repeated as kept  # (numba: the cuda device only)
            self._kept = kept
        # host async_op calls run here, in order (started on the first one)
        self._progress = progress.Progress(f"ring-progress-{self.rank}") \
            if self.device == "host" else None

    def _make_backend(self, comm, topo, waiter, path):
        return devices.backend(self.device, comm, topo, self.nslots, self.chunk_bytes,
                               waiter, path)

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
        ctx, self._ctx = self._ctx, None
        if self._error is None:
            # Bounded like any collective: a rank that never closes costs a timeout here.
            ctx.waiter.start(f"close (rank {self.rank})")
            try:
                # this rank's GPU work ends before the barrier: after it, a neighbour reuses
                # its segment's memory (ring/transport/keep.py), which a Work never waited
                # for could still be writing to
                ctx.backend.finish()
                ctx.everyone_here("close")
            except TimeoutError as e:
                self._error = e
                fatal.peer_lost()
                raise
            ctx.close_kept()
            if ctx.exchange is not None:
                ctx.exchange.close()
            ctx.backend.close()
            ctx.topo.close()
            self._comm.Free()
        ctx.kept.clear()
        ctx.scratch.clear()

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
                  compression: str | None = None, stream=None):
        """Every rank gets the elementwise reduction of all ranks' x, in x's shape.
        dtype="bfloat16" reads uint16 GPU arrays as bfloat16 (CuPy has no bfloat16).
        compression="bf16" | "fp16" (float32 sum / avg, host device; the flat ring, or
        the two-level algorithm with the wire across nodes only): the wire carries 16
        bits, each hop sums in float32 (ring/host/reduce.apply_wire)."""
        if self._fast and not async_op and compression is None and stream is None \
                and self._progress.idle():
            k = repeated.key(x, out, op, chunk_bytes, algorithm, dtype)
            if k is not None:
                result = self._fast_call(k, x, out)
                if result is not repeated.ELSEWHERE:
                    return result
        return self._call(ALLREDUCE, x, out, op, chunk_bytes, async_op, algorithm, dtype,
                          0, compression, stream)

    def reduce_scatter(self, x, out=None, op="sum", *, async_op: bool = False,
                       chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None,
                       compression: str | None = None, stream=None):
        """Rank r gets block r (x.size // size elements, 1-D) of the reduction.
        compression: as allreduce's (the block each rank keeps is summed in float32 and
        not rounded to the wire type)."""
        return self._call(REDUCE_SCATTER, x, out, op, chunk_bytes, async_op, algorithm,
                          dtype, 0, compression, stream)

    def allgather(self, x, out=None, *, async_op: bool = False, chunk_bytes: int | None = None,
                  algorithm: str | None = None, dtype=None, stream=None):
        """Rank r's x lands at block r of a 1-D result of size * x.size elements."""
        return self._call(ALLGATHER, x, out, "sum", chunk_bytes, async_op, algorithm,
                          dtype, stream=stream)

    def broadcast(self, x, root: int = 0, *, async_op: bool = False,
                  chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None,
                  stream=None):
        """In place: every rank's x ends as root's x. Returns x."""
        return self._call(BROADCAST, x, x, "sum", chunk_bytes, async_op, algorithm,
                          dtype, root, stream=stream)

    def reduce(self, x, out=None, op="sum", root: int = 0, *, async_op: bool = False,
               chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None,
               stream=None):
        """The root gets the elementwise reduction of all ranks' x in out (allocated when
        None, x's shape); the other ranks get None (their out is not touched)."""
        return self._call(REDUCE, x, out, op, chunk_bytes, async_op, algorithm, dtype,
                          root, stream=stream)

    def gather(self, x, out=None, root: int = 0, *, async_op: bool = False,
               chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None,
               stream=None):
        """The root gets every rank's x, rank r's at block r of a 1-D result of
        size * x.size elements; the other ranks get None (their out is not touched)."""
        return self._call(GATHER, x, out, "sum", chunk_bytes, async_op, algorithm,
                          dtype, root, stream=stream)

    def scatter(self, x, out=None, root: int = 0, *, async_op: bool = False,
                chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None,
                stream=None):
        """Rank r gets block r (x.size // size elements, 1-D) of the root's x. x is read at
        the root only: elsewhere it may be None when out is given."""
        return self._call(SCATTER, x, out, "sum", chunk_bytes, async_op, algorithm,
                          dtype, root, stream=stream)

    def alltoall(self, x, out=None, *, async_op: bool = False, chunk_bytes: int | None = None,
                 algorithm: str | None = None, dtype=None, stream=None):
        """Block j of x (x.size // size elements) goes to rank j; block i of the 1-D result
        comes from rank i. out=x is in place."""
        return self._call(ALLTOALL, x, out, "sum", chunk_bytes, async_op, algorithm,
                          dtype, stream=stream)

    def barrier(self) -> None:
        """Returns on every rank once every rank has called it (bounded by timeout)."""
        self._drain()
        self._usable()
        ctx = self._ctx
        ctx.calls += 1
        name = f"barrier (call {ctx.calls}, rank {self.rank})"
        try:
            self._enter(name, {"call": ctx.calls, "collective": Collective.BARRIER.value},
                        None, synchronize=True)
        except BaseException as e:
            self._broken(e)
            raise
        if debug.enabled():
            debug.call({"rank": self.rank, "call": ctx.calls, "collective": "barrier",
                        "algorithm": "mpi"})

    def synchronize(self) -> None:
        """Wait until every call made so far has finished (on the cuda device: the work
        enqueued on every stream the calls were ordered on), bounded by the timeout; raise
        what the GPU found (a ring.TimeoutError naming the call's kernel and the peer it
        waited for), or a peer's refusal of a kept call that did not wait for it (as the
        host's agreement says it: MismatchError), which breaks the communicator. On the
        host device calls are synchronous: it returns at once (after the progress thread's
        calls)."""
        self._drain()
        self._usable()
        ctx = self._ctx
        ctx.waiter.start(f"synchronize (rank {self.rank})")
        try:
            repeated.read_back(ctx)  # a kept call's round: a peer's refusal, said in full
            ctx.backend.synchronize()
        except BaseException as e:
            self._broken(e)
            raise

    def register(self, x) -> bool:
        """Let every rank's GPU read and write x in place (as ncclCommRegister): the
        two-shot all-reduce then takes a registered x and out without staging them through
        its areas. Collective: every rank passes its own buffer, in the same order. True on
        every rank where every rank's buffer is now mapped by every other rank; False on
        every rank where one cannot be (the host device; memory that CUDA IPC cannot
        export; the kernel path not running): never needed for correctness, unregistered
        buffers are staged. x stays registered until deregister(x) or close(); a buffer
        freed meanwhile is found out at the next call and staged. A bad argument raises on
        every rank (its TypeError there, MismatchError on the others) and breaks the
        communicator, as a collective's does."""
        self._drain()
        self._usable()
        ctx = self._ctx
        ctx.waiter.start(f"register (rank {self.rank})")
        try:
            ctx.everyone_here("register a buffer")
            if self.device != "cuda":  # nothing to map: the host's algorithms copy
                error = None if isinstance(x, np.ndarray) else \
                    TypeError(f"x: expected a NumPy array, got {type(x).__name__}")
                raise_refused(ctx.comm.allgather(refusal(error)), error, "register")
                return False
            ctx.backend.finish()
            if self._kfast:
                self._kfast.clear()  # kept calls bound to stage what may now be registered
            return ctx.backend.register(x, None)
        except BaseException as e:  # (a bad argument too, as for a collective)
            self._broken(e)
            raise

    def _agree_setup(self, name: str, fields: tuple, values: dict,
                     error: Exception | None) -> None:
        """Collective: a set-up made on every rank that moves no data (GradientBuckets'), its
        layout and options the same everywhere (agreement.agree_setup). A bad argument or a
        disagreement raises on every rank and leaves the communicator as it was (nothing
        moved); a rank that never comes costs a TimeoutError, which breaks it."""
        self._drain()
        self._usable()
        ctx = self._ctx
        ctx.waiter.start(f"{name} (rank {self.rank})")
        try:
            agree_setup(ctx.comm, fields, values, error, ctx.waiter, name)
        except TimeoutError as e:
            self._broken(e)
            raise

    def deregister(self, x) -> bool:
        """Undo register(x) on this rank (not collective): its later calls stage x. True
        where x was registered."""
        self._usable()
        return self.device == "cuda" and self._ctx.backend.deregister(x)

    def why_not(self, algorithm: str, collective="allreduce", nbytes: int = 0) -> str | None:
        """Why `algorithm` cannot run `collective` ("allreduce", ... or a Collective) of
        `nbytes` per rank on this communicator (None: it can; "auto" always can). The same
        answer on every rank: it depends on the layout, the device and the size only."""
        if not isinstance(collective, Collective):  # (a KeyError 'BOGUS' before)
            collective = collective_named(collective)
        if not whole_number(nbytes) or nbytes < 0:  # (-5 or "x" once answered None)
            raise ValueError(f"nbytes: the bytes per rank, a whole number >= 0, got {nbytes!r}")
        self._usable()
        return algorithms.why_not(self._ctx, algorithm, collective, int(nbytes))

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
              root=0, compression=None, stream=None):
        if (self._fast and collective is not ALLREDUCE and not async_op
                and compression is None and stream is None
                and self._progress.idle()):  # (allreduce: its own)
            k = repeated.key_of(collective, x, out, op, root, chunk_bytes, algorithm, dtype)
            if k is not None:
                result = self._fast_call(k, x, out)
                if result is not repeated.ELSEWHERE:
                    return result
        if self._kfast is not None and compression is None:
            kept = self._kept
            known = kept.lookup(self._kfast, collective, x, out, op, root, chunk_bytes,
                                algorithm, dtype)
            if known is not None and known.valid is not None and not known.valid():
                self._kfast.clear()  # a registered buffer freed since: bind anew (staged)
                known = None
            if known is not None:
                h = kept.stream_of(stream, x if x is not None else out)
                if h is not None:  # (a bad stream: the full path says so on every rank)
                    return self._kernel_call(known, x, out, async_op, h)
        if async_op and self._progress is not None:  # (no closure here: cells cost every call)
            return self._submit((collective, x, out, op, chunk_bytes, False, algorithm, dtype,
                                 root, compression, stream))
        self._drain()
        return self._call_now(collective, x, out, op, chunk_bytes, async_op, algorithm, dtype,
                              root, compression, stream)

    def _submit(self, args: tuple) -> Work:
        """A call with async_op, run by _behind(*args) on the progress thread in its turn:
        its Work."""
        self._usable()
        return Work(None, self._progress.submit(lambda: self._behind(*args)), self)

    def _behind(self, *args):
        """_call_now(*args) on the progress thread: waits that nap, leaving the core to
        the caller."""
        with napping(self._ctx.waiter, self._progress.urgent):
            return self._call_now(*args)

    def _call_now(self, collective, x, out, op, chunk_bytes, async_op, algorithm=None,
                  dtype=None, root=0, compression=None, stream=None):
        self._usable()
        ctx = self._ctx
        ctx.calls += 1
        name = f"{collective} (call {ctx.calls}, rank {self.rank})"
        record = {"call": ctx.calls, "collective": collective.value}
        c, error, h = None, None, None
        try:
            h = ctx.backend.stream_for(stream, x if x is not None else out)
            c = prepare(ctx.backend, self.size, self.rank, collective, x, out, op,
                        check_chunk(chunk_bytes, self.chunk_bytes), "ring", dtype, root,
                        compression=compression)
            c.algorithm = self._resolve(algorithm, collective, c.count * c.dtype.itemsize,
                                        c.compression, self._registered(c),
                                        c.in_place and not collective.rooted)
            if chunk_bytes is None:  # the algorithm's, for a call that names none
                c.chunk_bytes = algorithms.get(c.algorithm).chunk_bytes(ctx, c, self._chunk_given)
            record.update(c.record())
        except (TypeError, ValueError) as e:
            error = e
        pending = None
        try:
            self._enter(name, record, error, c)
            if self._kfast is not None:
                ctx.backend.last_launch = None
                ctx.backend.record = record_hash(record)  # (the call board's, board.py)
            if c.count:
                ctx.backend.order(h, c.algorithm in ONE_LAUNCH)
                pending = algorithms.get(c.algorithm).run(ctx, c, defer=async_op)
        except BaseException as e:
            self._broken(e)
            raise
        self.last_algorithm = c.algorithm
        if self._kfast is not None and ctx.backend.last_launch is not None:  # kernel path ran
            self._learn_kernel(c, record, x, out, op, root, chunk_bytes, algorithm, dtype)
        if self._fast is not None and c.algorithm in repeated.KEPT and not async_op \
                and (c.count or c.algorithm == "oneshot"):  # (an empty call: its agreement)
            k = repeated.key(x, out, op, chunk_bytes, algorithm, dtype) \
                if collective is Collective.ALLREDUCE else \
                repeated.key_of(collective, x, out, op, root, chunk_bytes, algorithm, dtype)
            self._learn(repeated.learnt_key(c, x, out, k, self.rank), record, c)
        if debug.enabled():
            debug.call({"rank": self.rank, "call": ctx.calls, "collective": str(collective),
                        "algorithm": c.algorithm, "count": c.count, "dtype": c.dtype.name,
                        **({"op": str(c.op)} if collective.reduces else {}),
                        **({"root": c.root} if collective.rooted else {})})
        return Work(c.result, pending, self, name) if async_op else c.result

    def _learn_kernel(self, c: Call, record: dict, x, out, op, root, chunk_bytes, algorithm,
                      dtype) -> None:
        """Keep what a kernel-path call worked out, for the next calls like it
        (ring/cuda/repeated.py; the arguments as passed)."""
        from .cuda import repeated as kept
        k = kept.key(c.collective, x, out, op, root, chunk_bytes, algorithm, dtype)
        known = None if k is None else \
            kept.learnt(c, record, x, out, self._ctx.backend.last_launch, self.rank)
        if known is not None:
            if self._ctx.exchange is not None:
                known.agreement = repeated.Agreement(self._ctx.exchange, record)
            kept.remember(self._kfast, k, known)

    def _kernel_call(self, known, x, out, async_op: bool, h: int):
        """A call of a kept kernel-path signature: agree on its record, fire its launch on
        stream h (with async_op: return a Work whose wait() waits for it)."""
        if self._closed or self._error is not None:
            self._usable()  # (raises)
        ctx = self._ctx
        ctx.calls += 1
        name = CallName(known.name, ctx.calls, self.rank)  # (formatted only if it is said)
        try:
            if self.check and known.agreement is not None:  # the record's round
                ctx.waiter.start(name)
                ctx.backend.entered(ctx.calls)
                if self.blocking:  # waited for: a peer's refusal raises here
                    repeated.agree_compiled(ctx, known.agreement, ctx.calls)
                else:  # posted, read back at the next round (the kernel checks every
                    repeated.post_kept(ctx, known.agreement, ctx.calls)  # rank's call
                    # on the GPU before it touches their data: ring/cuda/board.py)
            else:
                self._enter(name, dict(known.record, call=ctx.calls), None)
            ctx.backend.caller = h
            pending = ctx.backend.replay(known.launch, defer=async_op)
        except BaseException as e:
            self._broken(e)
            raise
        self.last_algorithm = known.algorithm
        if debug.enabled():
            debug.call({**known.log, "call": ctx.calls})
        result = known.result(x, out)
        return Work(result, pending, self, name) if async_op else result

    def _fast_call(self, k, x, out):
        """The call through ring/host/repeated.py, of signature k or, where out is another
        array than x, repeated.other(k) (in place for one taken as apart from x, or the
        other way round); repeated.ELSEWHERE if neither is known or this call's."""
        fast, ctx, elsewhere = self._fast, self._ctx, repeated.ELSEWHERE
        known = fast.get(k)
        try:
            result = elsewhere if known is None else repeated.run(ctx, known, x, out)
            if result is elsewhere and out is not None and out is not x:
                known = fast.get(repeated.other(k))
                if known is None:
                    return elsewhere
                result = repeated.run(ctx, known, x, out)
        except BaseException as e:
            self._broken(e)
            raise
        if result is not elsewhere:
            self.last_algorithm = known.log["algorithm"]
            if debug.enabled():
                debug.call({**known.log, "call": ctx.calls})
        return result

    def _learn(self, learnt, record: dict, c: Call) -> None:
        """Keep what this oneshot or cma call worked out, for the next calls like it
        (learnt: repeated.learnt_key's answer)."""
        if learnt is None:
            return
        k, memory, delta = learnt
        if len(self._fast) >= repeated.LIMIT:
            self._fast.clear()
        ctx = self._ctx
        if ctx.exchange is None:  # across nodes (all-reduce): the agreement's allgather
            self._fast[k] = repeated.Gathered(ctx.comm, record, c.op, c.count, c.x.dtype, k[3],
                                              self.rank)
            return
        args = (ctx.exchange, record, c.op, c.count, c.x.dtype, len(k[1]), k[3], self.rank,
                ctx.backend.entered_address(), c.collective, c.root, memory, delta,
                () if c.result is None or c.collective is Collective.ALLREDUCE else c.result.shape)
        if c.algorithm == "cma":
            kept = repeated_cma.Kept(*args, algorithms.cma.PIECE_BYTES, c.in_place,
                                     algorithms.cma.in_halves(ctx, c))
            if kept.fold:  # (else the full path's NumPy loops, every call)
                self._fast[k] = kept
            return
        self._fast[k] = repeated.Signature(*args)

    def _enter(self, name: str, record: dict, error, c: Call | None = None,
               synchronize: bool = False) -> None:
        """Start the call's clock and agree on it: through the exchange window when every
        rank is on one node (then the data of an algorithm that rides with the agreement,
        the host's oneshot and twoshot, travel in the same round), else one MPI allgather
        (where a small oneshot's data ride too). check=False skips the agreement, except
        for a barrier and for an algorithm whose data ride with it."""
        ctx = self._ctx
        ctx.waiter.start(name)
        ctx.backend.entered(ctx.calls)
        ex = ctx.exchange
        repeated.read_back(ctx)  # (a kept kernel-path call's round, posted earlier)
        alg = algorithms.get(c.algorithm) if error is None and c is not None else None
        rides = alg is not None and alg.rides(ctx)
        data = alg.posts(ctx, c) if rides else None
        if ex is not None and (self.check or rides or synchronize):
            if error is None and data is None:  # the record alone: one compiled round
                self._round.row[:] = mine(record, None)
                repeated.agree_compiled(ctx, self._round, record["call"])
                return
            seq = ex.next_round()
            post = (lambda: ex.put(seq, data)) if data is not None else None
            agree_shared(ex, seq, record, error, name, post, ctx.wait_round)
            return
        if self.check or rides:
            try:
                rode = agree(ctx.comm, record, error, ctx.waiter, name, data)
            except TimeoutError as e:
                behind = ctx.backend.behind(ctx.calls)
                if behind:
                    raise TimeoutError(f"{e}; rank(s) {behind} have not reached this call") from None
                raise
            if data is not None:
                c.rode = rode
        elif error is not None:
            raise error
        elif synchronize:
            ctx.everyone_here("reach the barrier")

    def _broken(self, e: BaseException) -> None:
        self._error = e
        self._fast = self._kfast = None  # every later call takes the full path, which refuses it
        if isinstance(e, TimeoutError):
            fatal.peer_lost()
        refuse = getattr(getattr(self._ctx, "backend", None), "refuse", None)
        # (cuda: peers' kernels must not wait for this rank's; where its own kernel found the
        # error, they find it too)
        if refuse is not None and not getattr(e, "found_on_gpu", False):
            try:
                refuse()
            except Exception:  # noqa: BLE001 - the call's own error is the one to raise
                pass

    def _resolve(self, algorithm, collective: Collective, nbytes: int,
                 compression: str | None = None, registered: bool = False,
                 in_place: bool = False) -> str:
        """The algorithm a call runs (algorithms.resolve), "auto" by this communicator's
        tuning rules for the collective, the registration of its buffers and whether it is
        in place (a collective without a root's: every rank's is agreed on)."""
        algorithm = self.algorithm if algorithm is None else algorithm
        rules = self._rules_of.get((collective, registered, in_place), ())
        return algorithms.resolve(self._ctx, algorithm, collective, nbytes, rules, compression)

    def _registered(self, c) -> bool:
        """Whether call c's buffers are registered, where a tuning rule depends on it (the
        ones the two-shot would take in place: ring/cuda/backend.py's in_place)."""
        return self._by_registration and self._ctx.backend.in_place(c)
