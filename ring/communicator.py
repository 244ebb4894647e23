"""The public Communicator: checks a call, agrees on it across ranks, runs its ring plan.

See shared/API.md for the contract. A call goes through three layers:
  1. local argument checks (device backend: arrays; here: op, sizes, out, in place),
  2. agreement across ranks (agreement.py), unless check=False,
  3. the plan (schedule.py) run by the device backend's executor.
Any error raised by a call breaks the communicator: later calls raise CommunicatorError,
as NCCL aborts a communicator after an error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from . import debug, devices, fatal, hierarchical
from .agreement import agree
from .errors import CommunicatorError, MismatchError, TimeoutError
from .ops import DTYPE_CODE, Op, check_op_dtype, parse_op
from .schedule import Collective, plan
from .topology import discover
from .wait import Waiter, oversubscribed

# Bytes per chunk, the unit that travels through one slot. Measured on the host device
# (results/host-tuning.md: 2 ranks, 16 and 64 MB float32, several runs): 128-256 KiB lose
# to per-chunk Python overhead (~20 us a chunk on the CI machine); 512 KiB to 4 MiB are
# within run-to-run noise of each other, and 1 MiB was never worse than 15% off the best.
DEFAULT_CHUNK_BYTES = 1 << 20
# Slots per link. Two are the minimum that cannot deadlock (schedule.py); more let a fast
# rank run ahead of a slow neighbour.
DEFAULT_SLOTS = 4


ALGORITHMS = ("auto", "ring", "hierarchical")
# How a GPU rank moves a chunk to its successor (ring/cuda/enqueue.py): "fused", the reduce
# kernel writes straight into the successor's slot; "copy", into a local slot that the copy
# engine then copies across. The host device has only the fused path.
PATHS = ("fused", "copy")


def check_slots(chunk_bytes, nslots) -> None:
    """The slot geometry every ring takes: ValueError naming the option if it is off."""
    if int(nslots) != nslots or nslots < 2:
        raise ValueError(f"nslots: need at least 2 slots per link, got {nslots!r}")
    if int(chunk_bytes) != chunk_bytes or chunk_bytes < 64 or chunk_bytes % 64:
        raise ValueError(f"chunk_bytes: must be a positive multiple of 64, got {chunk_bytes!r}")


@dataclass
class _Call:
    collective: Collective
    x: object  # 1-D view of the input
    out: object  # 1-D view of the output
    result: object  # what the call returns
    dtype: object  # the data's dtype (bfloat16 may travel in uint16 views on a GPU)
    op: Op
    count: int  # elements of the full array of the plan
    in_place: bool
    chunk_bytes: int
    algorithm: str  # "ring" or "hierarchical", resolved
    root: int = 0  # broadcast and reduce

    def record(self) -> dict[str, int]:
        rec = {"collective": self.collective.value, "count": self.count,
               "dtype": DTYPE_CODE[self.dtype], "op": int(self.op),
               "chunk_bytes": self.chunk_bytes, "algorithm": ALGORITHMS.index(self.algorithm)}
        if self.collective.rooted:
            rec["root"] = self.root  # in place is the root's own business there
        else:
            rec["in_place"] = int(self.in_place)
        return rec


class Work:
    """Handle of an asynchronous call (async_op=True).

    On the host device the call runs to completion before the handle is returned: NumPy
    collectives have no device stream to run behind, so wait() only returns the result.
    """

    def __init__(self, result):
        self._result = result

    def wait(self):
        return self._result

    def is_completed(self) -> bool:
        return True

    def result(self):
        return self._result


class Communicator:
    def __init__(self, mpi_comm: MPI.Comm | None = None, device: str = "auto", *,
                 timeout: float = 300.0, check: bool = True,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, nslots: int = DEFAULT_SLOTS,
                 algorithm: str = "auto", path: str = "fused"):
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
        self._calls = 0
        self.rank, self.size = self._comm.rank, self._comm.size
        self.check = bool(check)
        self.timeout = float(timeout)
        error = None
        try:
            debug.level_from_env()
            self.device = devices.resolve(device)
            if not (timeout > 0):
                raise ValueError(f"timeout: must be positive seconds, got {timeout!r}")
            check_slots(chunk_bytes, nslots)
            if algorithm not in ALGORITHMS:
                raise ValueError(f"algorithm: expected one of {ALGORITHMS}, got {algorithm!r}")
            if path not in PATHS:
                raise ValueError(f"path: expected one of {PATHS}, got {path!r}")
        except (TypeError, ValueError) as e:
            error = e
            self.device = "?"
        else:
            debug.configure()
        self.chunk_bytes, self.nslots, self.algorithm = int(chunk_bytes), int(nslots), algorithm
        self.path = path
        self._hier = None
        # Ranks must agree on the device and the slot geometry: slots are sized by it.
        mine = (error is not None, self.device, self.chunk_bytes, self.nslots, self.path)
        everyone = self._comm.allgather(mine)
        if error is not None or any(e[0] for e in everyone) or len(set(everyone)) > 1:
            self._comm.Free()
            self._closed = True
            if error is not None:
                raise error
            bad = [r for r, e in enumerate(everyone) if e[0]]
            if bad:
                raise MismatchError(f"Communicator: rank(s) {bad} passed bad arguments")
            raise MismatchError("Communicator: ranks disagree on (device, chunk_bytes, nslots, path): "
                                + ", ".join(f"rank {r}: {e[1:]}" for r, e in enumerate(everyone)))
        self._topo = discover(self._comm)
        self._waiter = Waiter(self.timeout, oversubscribed(self._topo.machine_ranks))
        self._backend = self._make_backend(self._comm, self._topo)
        # Why the two-level algorithm cannot run here (None: it can); built on first use.
        self._hier_why = hierarchical.applies(self._topo, self.size)

    def _make_backend(self, comm, topo):
        return devices.backend(self.device, comm, topo, self.nslots, self.chunk_bytes,
                               self._waiter, self.path)

    # -- lifetime -----------------------------------------------------------------------
    def close(self) -> None:
        """Release windows, slots and communicators. Collective unless the communicator
        is broken (then only local resources are dropped: peers may be gone)."""
        if self._closed:
            return
        self._closed = True
        if self._error is None:
            # Bounded like any collective: a rank that never closes costs a timeout here.
            done = self._comm.Ibarrier()
            self._waiter.start(f"close (rank {self.rank})")
            try:
                self._waiter.until(done.Test, lambda: "waiting for every rank to close")
            except TimeoutError as e:
                self._error, self._backend = e, None
                fatal.peer_lost()
                raise
            if self._hier is not None:
                self._hier.close()
            self._backend.close()
            self._topo.close()
            self._comm.Free()
        self._backend = self._hier = None

    def __enter__(self) -> "Communicator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("broken" if self._error else "ok")
        return f"<ring.Communicator rank {self.rank}/{self.size} device={self.device} {state}>"

    # -- collectives --------------------------------------------------------------------
    def allreduce(self, x, out=None, op="sum", *, async_op: bool = False,
                  chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None):
        """Every rank gets the elementwise reduction of all ranks' x, in x's shape.
        dtype="bfloat16" reads uint16 GPU arrays as bfloat16 (CuPy has no bfloat16)."""
        return self._call(Collective.ALLREDUCE, x, out, op, chunk_bytes, async_op, algorithm, dtype)

    def reduce_scatter(self, x, out=None, op="sum", *, async_op: bool = False,
                       chunk_bytes: int | None = None, algorithm: str | None = None, dtype=None):
        """Rank r gets block r (x.size // size elements, 1-D) of the reduction."""
        return self._call(Collective.REDUCE_SCATTER, x, out, op, chunk_bytes, async_op, algorithm,
                          dtype)

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

    def _usable(self) -> None:
        if self._closed:
            raise CommunicatorError(f"rank {self.rank}: the communicator is closed")
        if self._error is not None:
            raise CommunicatorError(
                f"rank {self.rank}: the communicator is broken by an earlier error: "
                f"{type(self._error).__name__}: {self._error}") from self._error

    def _call(self, collective, x, out, op, chunk_bytes, async_op, algorithm=None, dtype=None,
              root=0):
        self._usable()
        self._calls += 1
        name = f"{collective} (call {self._calls}, rank {self.rank})"
        record = {"call": self._calls, "collective": collective.value}
        call, error = None, None
        try:
            call = self._prepare(collective, x, out, op, chunk_bytes, algorithm, dtype, root)
            record.update(call.record())
        except (TypeError, ValueError) as e:
            error = e
        try:
            self._waiter.start(name)
            self._backend.entered(self._calls)
            if self.check:
                try:
                    agree(self._comm, record, error, self._waiter, name)
                except TimeoutError as e:
                    behind = self._backend.behind(self._calls)
                    if behind:
                        raise TimeoutError(f"{e}; rank(s) {behind} have not reached this call") from None
                    raise
            elif error is not None:
                raise error
            if call.algorithm == "hierarchical":
                if self._hier is None:  # collective: every rank agreed on this call
                    self._hier = hierarchical.Hierarchical(self._comm, self._topo,
                                                           self._make_backend)
                if call.count:
                    self._hier.run(collective, call.op, call.x, call.out,
                                   call.dtype.itemsize, call.chunk_bytes, call.dtype)
            elif call.count:
                item = call.dtype.itemsize
                p = plan(collective, self.size, self.rank, call.count, item, call.chunk_bytes,
                         self._backend.align(collective, item), call.root)
                self._backend.run(p, call.op, call.x, call.out, logical=call.dtype)
        except BaseException as e:
            self._error = e
            if isinstance(e, TimeoutError):
                fatal.peer_lost()
            raise
        debug.call({"rank": self.rank, "call": self._calls, "collective": str(collective),
                    "algorithm": call.algorithm, "count": call.count, "dtype": call.dtype.name,
                    **({"op": str(call.op)} if collective.reduces else {}),
                    **({"root": call.root} if collective.rooted else {})})
        return Work(call.result) if async_op else call.result

    def _resolve(self, algorithm, collective: Collective | None = None) -> str:
        algorithm = self.algorithm if algorithm is None else algorithm
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm: expected one of {ALGORITHMS}, got {algorithm!r}")
        why = self._hier_why
        if collective is not None and collective.rooted:
            why = f"{collective} runs as a chain along the flat ring only"
        if algorithm == "auto":
            return "ring" if why else "hierarchical"
        if algorithm == "hierarchical" and why:
            raise ValueError(f"algorithm: 'hierarchical' cannot run here: {why}")
        return algorithm

    def _prepare(self, collective, x, out, op, chunk_bytes, algorithm=None, dtype=None,
                 root=0) -> _Call:
        b, size = self._backend, self.size
        algorithm = self._resolve(algorithm, collective)
        if collective.rooted and (isinstance(root, bool) or not isinstance(root, (int, np.integer))
                                  or not 0 <= root < size):
            raise ValueError(f"root: must be a rank of the communicator (0..{size - 1}), "
                             f"got {root!r}")
        xf, xdt = b.flat(x, "x", writeable=collective is Collective.BROADCAST, dtype=dtype)
        op = parse_op(op)
        check_op_dtype(op, xdt)
        if chunk_bytes is None:
            chunk_bytes = self.chunk_bytes
        elif int(chunk_bytes) != chunk_bytes or not 0 < chunk_bytes <= self.chunk_bytes:
            raise ValueError(f"chunk_bytes: must be in 1..{self.chunk_bytes} (the slot size "
                             f"this communicator was built with), got {chunk_bytes!r}")
        n = xf.size
        if collective is Collective.REDUCE_SCATTER and n % size:
            raise ValueError(f"x: reduce_scatter needs x.size divisible by {size} ranks, got {n}")
        count = n * size if collective is Collective.ALLGATHER else n
        out_n = n // size if collective is Collective.REDUCE_SCATTER else count
        out_shape = x.shape if collective in (Collective.ALLREDUCE, Collective.REDUCE) else (out_n,)
        as_bits = "bfloat16" if xdt.name == "bfloat16" and xf.dtype != xdt else None
        if collective is Collective.BROADCAST:
            return _Call(collective, xf, xf, x, xdt, op, count, True, int(chunk_bytes), algorithm,
                         int(root))
        if collective is Collective.REDUCE and self.rank != root:
            # Only the root writes; out is neither checked nor touched elsewhere.
            return _Call(collective, xf, xf, None, xdt, op, count, False, int(chunk_bytes),
                         algorithm, int(root))
        if out is None:
            result = b.empty_like(x, out_shape, xdt)
            of, _ = b.flat(result, "out", dtype=as_bits)
            in_place = False
        else:
            of, odt = b.flat(out, "out", writeable=True, dtype=as_bits)
            if odt != xdt:
                raise TypeError(f"out: dtype {odt} differs from x's {xdt}")
            if of.size != out_n:
                raise ValueError(f"out: needs {out_n} elements for {collective} over {size} "
                                 f"ranks of x.size {n}, got {of.size}")
            result = out
            in_place = self._in_place(collective, xf, of)
        return _Call(collective, xf, of, result, xdt, op, count, in_place, int(chunk_bytes),
                     algorithm, int(root))

    def _in_place(self, collective, xf, of) -> bool:
        """In place: out is x (all-reduce), out is x's block r (reduce-scatter), or x is
        out's block r (all-gather), as in NCCL. Any other overlap is an error."""
        b, item = self._backend, xf.dtype.itemsize
        if not b.may_overlap(xf, of):
            return False
        xa, oa = b.address(xf), b.address(of)
        xb, ob = xf.size * item, of.size * item
        if xb == 0 or ob == 0 or xa + xb <= oa or oa + ob <= xa:
            return False
        if collective in (Collective.ALLREDUCE, Collective.REDUCE) and xa == oa:
            return True
        if collective is Collective.REDUCE_SCATTER and oa == xa + self.rank * ob:
            return True
        if collective is Collective.ALLGATHER and xa == oa + self.rank * xb:
            return True
        raise ValueError(f"out: overlaps x but is not the in-place position for {collective}")
