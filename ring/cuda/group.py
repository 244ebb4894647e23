"""ring.Group: one process driving several ranks (K streams on one GPU, or K GPUs), as
NCCL's single-process multi-GPU mode does. The same schedules and kernels as the
communicators; the ranks' buffers are all in this process, so slots need no IPC and every
dependency between ranks is a CUDA event.

    g = ring.Group(4)                                   # 4 ranks on the current GPU
    outs = g.allreduce([x0, x1, x2, x3], op="sum")      # one input per rank
    g.synchronize()

Calls are stream-ordered: each rank's stream waits for the work already queued on `stream`
(default: the default stream) and `stream` waits for the collective, so results can be used
there at once, without a host synchronisation.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..communicator import DEFAULT_CHUNK_BYTES, DEFAULT_SLOTS, PATHS, check_slots
from ..errors import CommunicatorError
from ..ops import bfloat16, check_op_dtype, parse_op
from ..schedule import Collective, plan
from . import graphs
from .arrays import as_device, empty_like_kind
from .enqueue import Link, Rank, Slots, enqueue, event, on_device

# Aligned chunk boundaries (16 bytes) can make a chunk up to 2 x 15 bytes longer than
# chunk_bytes (schedule.Plan.chunk); slots carry that much more.
SLOT_PAD = 64


class Group:
    def __init__(self, size: int, *, devices: list[int] | None = None,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, nslots: int = DEFAULT_SLOTS,
                 path: str = "fused"):
        if int(size) != size or size < 1:
            raise ValueError(f"size: need at least one rank, got {size!r}")
        check_slots(chunk_bytes, nslots)
        if path not in PATHS:
            raise ValueError(f"path: expected one of {PATHS}, got {path!r}")
        self.size, self.chunk_bytes, self.nslots, self.path = int(size), int(chunk_bytes), int(nslots), path
        ndev = len(cuda.gpus)
        self.devices = list(devices) if devices is not None else [0] * self.size
        if len(self.devices) != self.size or any(not 0 <= d < ndev for d in self.devices):
            raise ValueError(f"devices: need {self.size} device indices below {ndev}, got {devices}")
        self._ranks, self._links = [], []
        for d in self.devices:
            with on_device(d):
                self._ranks.append(Rank(cuda.stream(), cuda.stream(),
                                        Slots(nslots, chunk_bytes + SLOT_PAD), d))
        for r in range(self.size):  # link r -> r+1 lives in the receiver's memory
            with on_device(self.devices[(r + 1) % self.size]):
                self._links.append(Link(Slots(nslots, chunk_bytes + SLOT_PAD)))
        self._closed = False

    # -- collectives ------------------------------------------------------------------
    def allreduce(self, xs, outs=None, op="sum", *, dtype=None, stream=0):
        return self._call(Collective.ALLREDUCE, xs, outs, op, dtype, stream)

    def reduce_scatter(self, xs, outs=None, op="sum", *, dtype=None, stream=0):
        return self._call(Collective.REDUCE_SCATTER, xs, outs, op, dtype, stream)

    def allgather(self, xs, outs=None, *, dtype=None, stream=0):
        return self._call(Collective.ALLGATHER, xs, outs, "sum", dtype, stream)

    def capture(self, collective: str, xs, outs, op="sum", *, dtype=None):
        """Capture one collective on fixed buffers (outs required) as a CUDA graph; return
        it: graph.replay(stream) reruns the collective on those buffers, one launch."""
        coll = Collective[collective.upper()]
        if outs is None:
            raise ValueError("outs: a captured collective needs its output buffers fixed")
        root = cuda.stream()
        graph = graphs.capture(lambda s: self._call(coll, xs, outs, op, dtype, s), root,
                               keep=(tuple(xs), tuple(outs), root))
        return graph

    def synchronize(self) -> None:
        for r in self._ranks:
            r.stream.synchronize()
            r.copy_stream.synchronize()

    def close(self) -> None:
        if not self._closed:
            self.synchronize()
            self._ranks, self._links, self._closed = [], [], True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- one call -----------------------------------------------------------------------
    def _call(self, collective, xs, outs, op, dtype, stream):
        if self._closed:
            raise CommunicatorError("the group is closed")
        k = self.size
        if len(xs) != k:
            raise ValueError(f"xs: need one array per rank ({k}), got {len(xs)}")
        op = parse_op(op)
        views, logical = [], None
        for r, x in enumerate(xs):
            v, lt = as_device(x, f"xs[{r}]", dtype)
            if logical is not None and (lt != logical or v.size != views[0].size):
                raise ValueError(f"xs[{r}]: {v.size} x {lt} differs from xs[0]'s "
                                 f"{views[0].size} x {logical}")
            views.append(v)
            logical = lt
        check_op_dtype(op, logical)
        n = views[0].size
        if collective is Collective.REDUCE_SCATTER and n % k:
            raise ValueError(f"xs: reduce_scatter needs sizes divisible by {k} ranks, got {n}")
        count = n * k if collective is Collective.ALLGATHER else n
        out_n = n // k if collective is Collective.REDUCE_SCATTER else count
        if outs is None:
            results = [empty_like_kind(x, out_n, logical) for x in xs]
        else:
            if len(outs) != k:
                raise ValueError(f"outs: need one array per rank ({k}), got {len(outs)}")
            results = list(outs)
        ovs = []
        for r, o in enumerate(results):
            v, lt = as_device(o, f"outs[{r}]", "bfloat16" if logical == bfloat16 else None)
            if lt != logical or v.size != out_n:
                raise ValueError(f"outs[{r}]: needs {out_n} x {logical}, got {v.size} x {lt}")
            ovs.append(v)
        if collective is Collective.ALLREDUCE and outs is None:
            results = [res.reshape(x.shape) if hasattr(res, "reshape") and hasattr(x, "shape")
                       else res for res, x in zip(results, xs)]
        if count:
            storage = views[0].dtype
            plans = [plan(collective, k, r, count, storage.itemsize, self.chunk_bytes,
                          _align(storage.itemsize) if collective is Collective.ALLREDUCE else 1)
                     for r in range(k)]
            if plans[0].max_chunk() * storage.itemsize > self.chunk_bytes + SLOT_PAD:
                raise AssertionError("a chunk is larger than a slot")  # schedule.py's bound
            self._order_after(stream)
            enqueue(plans, op, views, ovs, self._ranks, self._links, logical.name,
                    np.dtype(storage), k, self.path)
            self._order_before(stream)
        return results

    def _order_after(self, stream) -> None:
        """Every rank's streams wait for the work already queued on the caller's stream."""
        ev = event()
        ev.record(_stream(stream))
        for r in self._ranks:
            ev.wait(r.stream)
            ev.wait(r.copy_stream)

    def _order_before(self, stream) -> None:
        """The caller's stream waits for every rank's streams."""
        target = _stream(stream)
        for r in self._ranks:
            for s in (r.stream, r.copy_stream):
                ev = event()
                ev.record(s)
                ev.wait(target)


def _align(itemsize: int) -> int:
    """Elements per 16 bytes: chunk boundaries that keep the paired 16-bit loads aligned."""
    return max(1, 16 // itemsize)


def _stream(stream):
    return cuda.default_stream() if stream in (0, None) else stream
