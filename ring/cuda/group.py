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

path="kernel" runs each call as one persistent kernel per rank (persistent.py), the ranks'
segments allocated here as a process's would be for IPC; a kernel that waits longer than
`timeout` seconds stops, and synchronize() raises its ring.TimeoutError. path="auto" (the
default) runs plain calls so on one GPU and captures on the stream path ("stream"), as
measured; ranks on several GPUs take "stream".
"""

from __future__ import annotations

import numbers

import numpy as np
from numba import cuda

from ..call import prepare
from ..devices import gpu_usable
from ..errors import CommunicatorError
from ..options import (DEFAULT_CHUNK_BYTES, DEFAULT_SLOTS, check_path, check_slots,
                       check_timeout, whole_number)
from ..schedule import Collective, collective_named, plan
from ..wait import Waiter
from kernels.driver import event
from kernels import simulator

from ..transport import ipc
from ..transport.slots import Slots
from . import graphs, kernel_path, repeated
from .arrays import SIMULATED, DeviceArrays
from .enqueue import ALIGNED, SLOT_PAD, Link, Rank, align, copy, enqueue, on_device
from .streams import handle


class Group:
    def __init__(self, size: int, *, devices: list[int] | None = None,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES["cuda"], nslots: int = DEFAULT_SLOTS,
                 path: str = "auto", timeout: float = 300.0):
        if not whole_number(size) or size < 1:
            raise ValueError(f"size: need at least one rank, got {size!r}")
        check_slots(chunk_bytes, nslots)
        timeout = check_timeout(timeout)
        path = check_path(path)
        if path == "kernel" and SIMULATED and size > 1:
            # the simulator runs one kernel at a time, to its end: K persistent kernels that
            # wait on each other cannot run there (the Communicator's, one per process, can)
            raise ValueError("path: 'kernel' with several ranks in one process needs a GPU "
                             "(Numba's simulator runs one kernel at a time)")
        self.size, self.chunk_bytes, self.nslots, self.path = int(size), int(chunk_bytes), int(nslots), path
        if not (SIMULATED or gpu_usable()):  # (else the driver's "Error at driver init")
            raise ValueError("ring.Group: needs a usable NVIDIA GPU (or, for tests, Numba's "
                             "simulator: NUMBA_ENABLE_CUDASIM=1)")
        ndev = len(cuda.gpus)
        given = [0] * self.size if devices is None else None
        if devices is not None and not isinstance(devices, (str, bytes)):
            try:
                given = list(devices)
            except TypeError:  # (not a sequence: refused below)
                pass
        if given is None or len(given) != self.size or any(
                not (isinstance(d, numbers.Integral) and not isinstance(d, bool) and 0 <= d < ndev)
                for d in given):  # (a str, a number, 0.5 or True: not a list of indices)
            raise ValueError(f"devices: need {self.size} device indices below {ndev}, "
                             f"got {devices!r}")
        self.devices = [int(d) for d in given]
        if path == "auto":  # the kernel for plain calls where it was measured: one GPU
            one_gpu = len(set(self.devices)) == 1 and not (SIMULATED and self.size > 1)
            self.path = path = "auto" if one_gpu else "stream"
        # path="auto" keeps both: the kernel's segments and the stream path's links
        # (disjoint memory, so calls of either path may follow each other)
        kernel = path in ("kernel", "auto")
        simulator.prepare()  # under Numba's simulator: its patches
        self._ranks, self._links = [], []
        for d in self.devices:
            with on_device(d):
                self._ranks.append(Rank(cuda.stream(), cuda.stream(),
                                        Slots(nslots, chunk_bytes + SLOT_PAD), d))
        for r in range(self.size if path != "kernel" else 0):  # link r -> r+1: receiver's memory
            with on_device(self.devices[(r + 1) % self.size]):
                self._links.append(Link(Slots(nslots, chunk_bytes + SLOT_PAD)))
        self._segments: list = []  # path="kernel": the ranks' (ipc.Segment)
        self._kernels = self._kernel_path(nslots, chunk_bytes + SLOT_PAD) if kernel else None
        # the events that order a plain call after and before the caller's stream, made
        # once (a capture makes its own): the kernel path uses the ranks' streams only
        self._streams = [q for r in self._ranks for q in
                         ((r.stream,) if path == "kernel" else (r.stream, r.copy_stream))]
        self._marks = [event() for _ in range(len(self._streams) + 1)]
        self._known: dict = {}  # path="kernel": kept signatures (repeated.py)
        self._waiter = Waiter(timeout)
        self._error: BaseException | None = None
        self._closed = False

    def _kernel_path(self, nslots: int, slot_bytes: int) -> list:
        """path="kernel": each rank's segment (counters + slots, as a process's, without
        IPC) and persistent kernel. Every rank's channels must be resident at once."""
        channels, threads = kernel_path.shape_for(max(map(self.devices.count, self.devices)))
        if not SIMULATED:
            for d in set(self.devices):
                with on_device(d):
                    why = kernel_path.not_resident(channels, self.devices.count(d), threads)
                    if why:
                        raise ValueError(f"path={self.path!r} on GPU {d}: {why} "
                                         "(RING_KERNEL_CHANNELS)")
                    ipc.enable_peer_access(d, [q for q in self.devices if q != d])
        b = kernel_path.slot_bytes(slot_bytes, channels)
        k, segs = self.size, []
        for d in self.devices:
            with on_device(d):
                segs.append(ipc.Segment(nslots, b))
        self._segments = segs
        kernels = []
        for r in range(k):
            with on_device(self.devices[r]):
                ends = (segs[r], segs[r - 1], segs[(r + 1) % k]) if k > 1 else (None, None, None)
                kernels.append(kernel_path.KernelPath(self._ranks[r].stream, *ends, nslots, b,
                                                      channels, threads, r, k,
                                                      len(set(self.devices)) == 1))
        return kernels

    # -- collectives (xs: one array per rank; the result: one per rank) ----------------
    def allreduce(self, xs, outs=None, op="sum", *, dtype=None, stream=0):
        return self._call(Collective.ALLREDUCE, xs, outs, op, dtype, stream)

    def reduce_scatter(self, xs, outs=None, op="sum", *, dtype=None, stream=0):
        return self._call(Collective.REDUCE_SCATTER, xs, outs, op, dtype, stream)

    def allgather(self, xs, outs=None, *, dtype=None, stream=0):
        return self._call(Collective.ALLGATHER, xs, outs, "sum", dtype, stream)

    def broadcast(self, xs, root: int = 0, *, dtype=None, stream=0):
        """In place: every xs[r] ends as xs[root]. Returns xs."""
        return self._call(Collective.BROADCAST, xs, xs, "sum", dtype, stream, root)

    def reduce(self, xs, outs=None, op="sum", root: int = 0, *, dtype=None, stream=0):
        """The root's entry holds the reduction; the others are None."""
        return self._call(Collective.REDUCE, xs, outs, op, dtype, stream, root)

    def gather(self, xs, outs=None, root: int = 0, *, dtype=None, stream=0):
        """The root's entry holds every xs[r] at block r; the others are None."""
        return self._call(Collective.GATHER, xs, outs, "sum", dtype, stream, root)

    def scatter(self, xs, outs=None, root: int = 0, *, dtype=None, stream=0):
        """Entry r holds block r of xs[root]; only xs[root] is read (the others may be None
        when outs is given)."""
        return self._call(Collective.SCATTER, xs, outs, "sum", dtype, stream, root)

    def alltoall(self, xs, outs=None, *, dtype=None, stream=0):
        """Block j of xs[i] lands at block i of entry j."""
        return self._call(Collective.ALLTOALL, xs, outs, "sum", dtype, stream)

    def capture(self, collective: str, xs, outs, op="sum", *, dtype=None, root: int = 0):
        """Capture one collective on fixed buffers (outs required) as a CUDA graph; return
        it: graph.replay(stream) reruns the collective on those buffers, one launch."""
        coll = collective_named(collective, data_only=True)
        if outs is None:
            raise ValueError("outs: a captured collective needs its output buffers fixed")
        origin = cuda.stream()
        programs = ()
        if self._kernel_for(True):  # tables on the device first: a capture cannot upload
            programs = tuple(kp.program(p) for kp, p in
                             zip(self._kernels, self._plans(coll, xs, outs, op, dtype, root)[1]))
        # the capture's waits must not refer to events of calls before it: fresh events for
        # the capture (the replay is ordered after earlier calls by its stream), and the old
        # ones back for the plain calls after it
        slots = [link.slots for link in self._links] + [r.stage for r in self._ranks]
        saved = [sl.swap_events() for sl in slots]
        try:
            return graphs.capture(lambda s: self._call(coll, xs, outs, op, dtype, s, root, True), origin,
                                  keep=(tuple(xs), tuple(outs), origin, programs))
        finally:
            for sl, events in zip(slots, saved):
                sl.swap_events(events)

    def synchronize(self) -> None:
        """Wait for every rank's streams; then raise a persistent kernel's timeout, if one
        gave up (path="kernel"; the group is broken afterwards)."""
        for r in self._ranks:
            r.stream.synchronize()
            r.copy_stream.synchronize()
        if self._kernels is not None and self._error is None:
            self._waiter.start(f"ring.Group({self.size})")
            try:
                for kp in self._kernels:
                    kp.check(self._waiter)
            except BaseException as e:
                self._error = e
                raise

    def close(self) -> None:
        if not self._closed:
            self.synchronize()
            self._ranks, self._links, self._closed = [], [], True
            for seg in self._segments:  # every stream has ended: the memory waits for reuse
                seg.close()
            self._kernels, self._segments = None, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- one call -----------------------------------------------------------------------
    def _call(self, collective, xs, outs, op, dtype, stream, root=0, capturing=False):
        stream = _stream(stream)
        key, kernel = None, self._kernel_for(capturing)
        if kernel:  # a repeated call: its launches as kept (repeated.py)
            key = repeated.group_key(collective, xs, outs, op, root, dtype, self.size)
            known = self._known.get(key)
            if known is not None and self._error is None and not self._closed:
                marks = self._marks_for(capturing)
                self._order_after(stream, marks[0])
                self._fire([kept.launch for kept in known])
                self._order_before(stream, marks[1:])
                return [kept.result(x, o) for kept, x, o in zip(known, xs, outs)]
        calls, plans = self._plans(collective, xs, outs, op, dtype, root)
        first, k = calls[0], self.size
        if plans:
            storage = np.dtype(first.x.dtype)
            marks = self._marks_for(capturing)
            self._order_after(stream, marks[0])
            views = [self._copy_of(c.x, r) if collective is Collective.ALLTOALL and c.in_place
                     else c.x for r, c in enumerate(calls)]
            if kernel:  # one launch per rank, all bound before any fires
                launches = []
                for r, kp in enumerate(self._kernels):
                    with on_device(self.devices[r]):
                        launches.append(kp.bind(plans[r], first.op, views[r], calls[r].out, k,
                                                first.dtype.name, self._waiter.timeout))
                self._fire(launches)
                self._learn(key, calls, xs, outs, launches)
            else:
                enqueue(plans, first.op, views, [c.out for c in calls], self._ranks, self._links,
                        first.dtype.name, storage, k, "stream" if self.path == "auto" else self.path)
            self._order_before(stream, marks[1:])
        return [c.result for c in calls]

    def _kernel_for(self, capturing: bool) -> bool:
        """Whether a call runs the persistent kernel: always on path="kernel"; on "auto"
        except in a capture, whose graph replays faster on the stream path (measured on
        an H100: results/h100/kernel-path.md)."""
        return self._kernels is not None and not (capturing and self.path == "auto")

    def _marks_for(self, capturing: bool) -> list:
        """The ordering events of a call: the group's own, or new ones for a capture."""
        return [event() for _ in self._marks] if capturing else self._marks

    def _fire(self, launches) -> None:
        """Every rank's bound launch, each on its rank's device."""
        for r, fire in enumerate(launches):
            with on_device(self.devices[r]):
                fire()

    def _learn(self, key, calls, xs, outs, launches) -> None:
        """Keep a kernel-path call's launches (every rank's repeated.Known) for the next
        calls of its signature."""
        if key is None:
            return
        kept = [repeated.learnt(c, {}, x, o, launch, r)
                for r, (c, x, o, launch) in enumerate(zip(calls, xs, outs, launches))]
        if all(k is not None for k in kept):
            repeated.remember(self._known, key, kept)

    def _plans(self, collective, xs, outs, op, dtype, root):
        """Every rank's checked call and plan ([] when there is no data)."""
        if self._closed:
            raise CommunicatorError("the group is closed")
        if self._error is not None:
            raise CommunicatorError(f"the group is broken by an earlier error: "
                                    f"{type(self._error).__name__}: {self._error}") from self._error
        k = self.size
        if len(xs) != k:
            raise ValueError(f"xs: need one array per rank ({k}), got {len(xs)}")
        if outs is not None and len(outs) != k:
            raise ValueError(f"outs: need one array per rank ({k}), got {len(outs)}")
        outs = [None] * k if outs is None else outs
        # each rank's arguments as a Communicator's rank would check them (ring/call.py)
        calls = [prepare(DeviceArrays, k, r, collective, xs[r], outs[r], op, self.chunk_bytes,
                         "ring", dtype, root, names=(f"xs[{r}]", f"outs[{r}]"))
                 for r in range(k)]
        first = calls[0]
        for r, c in enumerate(calls):
            if (c.count, c.dtype) != (first.count, first.dtype):
                raise ValueError(f"xs[{r}]: {c.count} x {c.dtype} for {collective} differs from "
                                 f"xs[0]'s {first.count} x {first.dtype}")
        if not first.count:
            return calls, []
        storage = np.dtype(first.x.dtype)
        step = align(storage.itemsize) if collective in ALIGNED else 1
        plans = [plan(collective, k, r, first.count, storage.itemsize, self.chunk_bytes,
                      step, first.root) for r in range(k)]
        if plans[0].max_chunk * storage.itemsize > self.chunk_bytes + SLOT_PAD:
            raise AssertionError("a chunk is larger than a slot")  # schedule.py's bound
        return calls, plans

    def _copy_of(self, a, r: int):
        """A copy of rank r's input on its stream: in-place all-to-all reads every block of
        x after other blocks have landed over it."""
        with on_device(self.devices[r]):
            dst = cuda.device_array(a.size, a.dtype)
            if a.size:
                copy(dst, a, self._ranks[r].stream)
        return dst

    def _order_after(self, stream, ev) -> None:
        """Every rank's streams wait for the work already queued on the caller's stream
        (Numba's: _stream), through event ev: a wait binds to the record before it, so
        events can be reused."""
        ev.record(stream)
        for s in self._streams:
            ev.wait(s)

    def _order_before(self, stream, events) -> None:
        """The caller's stream waits for every rank's streams (one event each)."""
        for s, ev in zip(self._streams, events):
            ev.record(s)
            ev.wait(stream)


# what capture() takes by name: every collective that moves data (the barrier has none)
_EXTERNAL: dict = {}  # handle -> Numba's stream of it, made once


def _stream(stream):
    """The caller's stream as Numba's: 0 or None its default stream, a Numba stream itself,
    any other stream object or handle as the Communicator takes them (streams.handle: a
    TypeError or ValueError for what is none) as an external stream; the simulator has
    none of those, and there every launch has run by its return: its default stream."""
    if stream is None or (type(stream) is int and stream == 0):  # (the default: per call)
        return cuda.default_stream()
    if type(stream).__module__.startswith("numba"):
        return stream
    h = handle(stream)
    if h == 0 or SIMULATED:
        return cuda.default_stream()
    s = _EXTERNAL.get(h)
    if s is None:
        s = _EXTERNAL[h] = cuda.external_stream(h)
    return s
