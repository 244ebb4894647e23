"""The 'cuda' device of ring.Communicator: one rank per process, its ring links to the
neighbours on its node through CUDA IPC (ipc.py), to neighbours on other nodes over MPI
staged through pinned host memory (staged.py), its chunks put on its stream by the same
per-chunk code as ring.Group (enqueue.py). Between ranks of a node the order is kept on the
GPU; across nodes the host hands chunks to MPI as their copies finish.

A call returns when its work is done on the GPU: the host polls an event under the
communicator's timeout, so a lost peer costs a ring.TimeoutError, not a hang. With
async_op=True the call returns once its work is queued, and Work.wait() does that poll.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from mpi4py import MPI
from numba import cuda

from ringtypes import Op
from kernels.driver import event, fired
from kernels import simulator
from ..errors import RingError
from ..schedule import Collective, Plan
from ..topology import Topology
from ..transport import Kind, ends, ipc, staged
from ..transport.slots import Slots
from ..wait import Waiter
from . import enqueue, kernel_path, oneshot_kernel, registered, streams, twoshot_kernel
from .repeated import remember
from .together import together
from .areas import Areas, fold_launch
from .board import Board
from .arrays import SIMULATED, DeviceArrays, any_device, storage_of
from .enqueue import ALIGNED, SLOT_PAD, Rank, align, load_kernels, unit

# The host waits for a kernel-path call this much longer than the kernel's own bound
# (timeout, plus the grace): the kernel's error word says where it was stuck, so it should
# be the one to speak. Measured on an H100 under MPS: with the grace at 0 (host deadline =
# kernel's + timeout) the host spoke first at 2 and 3 processes when a peer died.
KERNEL_GRACE_S = 5.0


class CudaBackend(DeviceArrays):
    name = "cuda"

    def __init__(self, comm: MPI.Comm, topo: Topology, nslots: int, slot_bytes: int,
                 waiter: Waiter, path: str = "stream"):
        self.comm, self.waiter, self.path = comm, waiter, path
        ngpu = len(cuda.gpus)
        self.device = topo.machine_rank % ngpu
        cuda.select_device(self.device)
        simulator.prepare()  # under Numba's simulator: its patches
        self.rank = None  # the rank's streams and slots (Rank), made below
        self.inbound = self.outbound = None
        self.kernel = None  # path="kernel": the persistent kernel's host side
        self.last_launch = None  # the kernel path's latest launch (ring/cuda/repeated.py)
        self.last_stream: int | None = None  # the stream it went on (None: the rank's own)
        # the running call's board.record_hash (set by the Communicator before it runs):
        # what its kernel-path launch shows every peer's on the call board
        self.record = 0
        # The call's stream (streams.py): a kernel-path launch goes on it and returns (with
        # blocking, it is waited for); everything else runs on the rank's own streams
        # after the host has waited for the work already on it (settle)
        self.caller: int | None = None
        self.blocking = True
        self.call = 0
        self.streams = streams.Streams()
        self._polled = -1  # the call whose entered() last asked the streams' events
        self._settled = event()
        self._mapped: list = []
        self.segment = None
        self._areas = None  # oneshot / twoshot's GPU areas (areas.py), made on first use
        # the one-shot and two-shot kernels' areas (oneshot_kernel.py, twoshot_kernel.py),
        # made on first use, and their bound launches
        self._launchers: dict = {}
        self._launches: dict = {}
        self.registry = None  # comm.register's (registered.py), made on first use
        self.devices = [self.device]  # every rank's GPU (of those on this node: theirs too)
        self._peer_access = None  # no_peer_access's answer, once asked
        size, r = comm.size, comm.rank
        busiest = -(-topo.machine_ranks // ngpu)  # the most ranks one GPU of the node runs
        shape = settings = None  # (a bad setting on one rank alone: raised on every rank)
        with together(comm, "read its kernel path's settings", self.close):
            if path in ("kernel", "auto"):
                shape, settings = kernel_path.shape_for(busiest), kernel_path.settings_to_agree()
        self.busiest = busiest
        own = slot_bytes + SLOT_PAD  # the rank's own slots' bytes; its segment's, b:
        b = kernel_path.slot_bytes(own, shape[0]) if shape is not None else own
        pred, succ = (r - 1) % size, (r + 1) % size
        near_pred, near_succ = topo.same_node(pred, r), topo.same_node(r, succ)
        # What this rank makes alone (its streams and slots; on a GPU its IPC segment) may
        # fail on it alone, device memory running out say: the others must not be left in
        # the allgather below, so every rank hears of it first and raises.
        with together(comm, "make its streams, slots and segment", self.close):
            self.rank = Rank(cuda.stream(), cuda.stream(), Slots(nslots, own), self.device)
            if not SIMULATED and size > 1 and (near_pred or near_succ):
                self.segment = ipc.Segment(nslots, b)
        if size == 1:
            if shape is not None:
                self.path = "kernel"
                self.kernel = kernel_path.KernelPath(self.rank.stream, None, None, None, nslots,
                                                     b, *shape, r, size)
            return
        sharing = sum(q % ngpu == self.device for q in range(topo.machine_ranks))
        why = kernel_path.why_not(near_pred and near_succ, sharing, *shape) if shape else None
        if SIMULATED:  # IPC emulated in MPI shared memory (simipc.py): collective per node
            from ..transport.simipc import Segment
            self.segment = Segment(topo.node_comm, nslots, b, waiter)
        handle = self.segment.handle() if self.segment is not None else None
        everyone = comm.allgather((self.device, handle, why, shape, settings))
        self.devices = [e[0] for e in everyone]
        if shape is not None:
            self._choose_kernel(everyone, topo)
        # a rank that cannot map a neighbour (the driver refusing a handle, say) must not
        # leave the others waiting: every rank hears of it and raises
        with together(comm, "link to its ring neighbours", self.close):
            self._connect(everyone, topo, pred, succ, near_pred, near_succ, nslots, b, shape)
        if self.kernel is not None:  # the call board every kernel of the path checks
            try:  # (raised on every rank)
                self.kernel.board = Board.shared(comm, self.device, waiter)
            except RingError:
                self.close()
                raise
        # headers zeroed on every GPU before anyone maps and writes
        with together(comm, "zero its segment's headers", self.close):
            cuda.synchronize()

    def _connect(self, everyone, topo: Topology, pred: int, succ: int, near_pred: bool,
                 near_succ: bool, nslots: int, b: int, shape) -> None:
        """The two ends: mapped neighbours' segments on this node, staged links to other
        nodes; the persistent kernel's host side on path="kernel"."""
        ipc.enable_peer_access(self.device, [everyone[q][0] for q, near in
                                             ((pred, near_pred), (succ, near_succ)) if near])
        maps: dict = {}  # (at 2 ranks pred is succ: mapped once)

        def mapped(q):
            if q not in maps:
                maps[q] = self.segment.open(everyone[q][1])
                self._mapped.append(maps[q])
            return maps[q]

        direct = not (near_pred and near_succ) and staged.cuda_aware()
        comm, waiter = self.comm, self.waiter
        near = Kind(lambda q: ipc.InEnd(self.segment, mapped(q)),
                    lambda q: ipc.OutEnd(self.segment, mapped(q)))
        far = Kind(lambda q: staged.StagedIn(comm, q, nslots, b, waiter, direct),
                   lambda q: staged.StagedOut(comm, q, nslots, b, waiter, direct))
        self.inbound, self.outbound = ends(topo, comm.rank, comm.size, near, far)
        self.waiter.add_progress(self.inbound, self.outbound)  # the staged ends' MPI
        if self.path == "kernel":
            # every rank on this GPU (the kernel path: every rank on this node): the fences
            # and the call board's words need only GPU scope
            one_gpu = all(e[0] == self.device for e in everyone)
            self.kernel = kernel_path.KernelPath(self.rank.stream, self.segment, mapped(pred),
                                                 mapped(succ), nslots, b, *shape,
                                                 self.comm.rank, self.comm.size, one_gpu)

    def _choose_kernel(self, everyone, topo: Topology) -> None:
        """path="kernel" on every rank, or the stream path on every rank with one warning
        (the ranks' counters must match); different kernel shapes or
        settings (kernel_path.settings_to_agree) are an error everywhere.
        path="auto": the kernel where every rank's neighbours run on its GPU (where it was
        measured), else the stream path, without a warning; from `everyone`, so every rank
        decides alike."""
        shapes = {e[3] for e in everyone}
        if len(shapes) > 1:
            raise ValueError(f"path={self.path!r}: ranks disagree on (channels, threads): "
                             f"{sorted(shapes)} (RING_KERNEL_CHANNELS / RING_KERNEL_THREADS)")
        settings = [e[4] for e in everyone]
        if len(set(settings)) > 1:
            raise ValueError(f"path={self.path!r}: ranks disagree on (RING_KERNEL_PROTO, "
                             "RING_TWOSHOT_BLOCKS): " + ", ".join(
                                 f"rank {q}: {v}" for q, v in enumerate(settings)))
        refusals = [(q, e[2]) for q, e in enumerate(everyone) if e[2]]
        if self.path == "auto":
            self.path = "stream" if refusals or not all_on_one_gpu(everyone, topo) else "kernel"
            return
        if refusals:
            q, why = refusals[0]
            if self.comm.rank == 0:
                warnings.warn(f"ring: path='kernel' cannot run (rank {q}: {why}); "
                              f"using the stream path", RuntimeWarning, stacklevel=4)
            self.path = "stream"

    # -- arrays (and flat, empty_like, address, may_overlap from DeviceArrays) ----------
    @staticmethod
    def scratch(n: int, dtype):
        return cuda.device_array(n, dtype)

    storage = staticmethod(storage_of)  # the dtype a GPU array holds logical data in

    @staticmethod
    def compiles(dtype, op, wire=None) -> bool:
        """The host's compiled walk: not here (ring/algorithms/ring.py's chunk)."""
        return False

    def copy(self, dst, src) -> None:
        """dst := src, on the rank's stream."""
        enqueue.copy(dst, src, self.rank.stream)

    def copy_of(self, a):
        """A copy of device array a, made on the rank's stream (ordered before the plan)."""
        dst = cuda.device_array(a.size, a.dtype)
        if a.size:
            self.copy(dst, a)
        return dst

    def fold(self, parts, op: Op, k: int, out, logical) -> None:
        """out = the rank-order fold of parts(0..k-1), on the rank's stream, one launch."""
        fold_launch(parts, op, k, out, np.dtype(logical).name, self.rank.stream)

    def areas(self, cap: int, before):
        """Every rank's GPU area (areas.py), made on first use (collectively: before()
        first, a barrier under the call's deadline) and kept until close."""
        if self._areas is None:
            before()
            self._areas = Areas(self.comm, cap, self.device, self.waiter)
        return self._areas

    def one_launch(self, which: str, c, before, defer: bool = False):
        """The all-reduce c as the one-shot or the two-shot kernel (which: "oneshot",
        oneshot_kernel.py; "twoshot", twoshot_kernel.py, which runs reduce-scatter and
        all-gather too), where the kernel path runs (every rank on this node, co-resident)
        and, for the one-shot, c fits its inbox: fired as the kernel path's launches are
        (on the call's stream, kept for a repeated call): (True, its Pending with defer,
        else None); (False, None) where it cannot: the caller then takes the host-driven
        algorithm. The same answer on every rank (the
        kernel path is chosen by every rank together; the call was agreed). before(): the
        barrier under the call's deadline that the areas' first call makes first."""
        if self.kernel is None or self.comm.size == 1 or (which == "oneshot" and not
                oneshot_kernel.fits(c.count, np.dtype(self.storage(c.dtype)).itemsize)):
            self.settle()
            return False, None
        made = self._launchers.get(which)
        if made is None:
            before()
            maker = oneshot_kernel.OneShot if which == "oneshot" else twoshot_kernel.TwoShot
            threads = min(maker.SHAPE[1], self.kernel.threads)
            made = self._launchers[which] = maker(
                self.comm, self.device, self.waiter, self.kernel.err, self.kernel.board,
                maker.blocks(self.kernel.channels, threads, self.busiest, kernel_path.room),
                threads,
                self.rank.stream)
        regs, more = (), {}
        if which == "twoshot":  # registered arrays: read and written in place
            regs = self._registrations(c)
            more = {"collective": c.collective}
        key = (which, c.collective, c.op, c.dtype.name, c.count, self.waiter.timeout,
               kernel_path.memory_of(c.x), kernel_path.memory_of(c.out), self.record,
               *((twoshot_kernel.index(r), r[1]) for r in regs))
        bound = self._launches.get(key)
        if bound is None:
            bound = made.bind(c.op, c.dtype.name, c.x, c.out, c.count, self.comm.size,
                              self.waiter.timeout, self.record, *regs, **more)
            bound.registered = any(r is not None for r, _ in regs)
            if bound.registered:  # kept calls ask again, cheaply, that they still hold
                bound.valid = registered.still(self.registry, [
                    (a, r) for a, (r, _) in zip((c.x, c.out), regs) if r is not None])
            remember(self._launches, key, bound, kernel_path.BOUND)
        self.last_launch = bound
        return True, self.replay(bound, defer)

    @staticmethod
    def _sides(c) -> tuple[bool, bool]:
        """Whether the two-shot may take call c's x / out in place: an all-reduce both, a
        reduce-scatter only x (it reads), an all-gather only out (it writes)."""
        return c.collective is not Collective.ALLGATHER, \
            c.collective is not Collective.REDUCE_SCATTER

    def _registrations(self, c) -> tuple:
        """registered.find's answer for c's x and out, (None, -1) for a side not taken."""
        size = np.dtype(self.storage(c.dtype)).itemsize
        return tuple(registered.find(self.registry, a, size) if taken else (None, -1)
                     for a, taken in zip((c.x, c.out), self._sides(c)))

    def in_place(self, c) -> bool:
        """Whether call c's buffers that the two-shot takes in place (_sides) are registered
        on this rank: "auto"'s rules may depend on it (ring/tuning.py)."""
        if not self.registry or not c.count:
            return False
        return all(r is not None for (r, _), taken in zip(self._registrations(c),
                                                         self._sides(c)) if taken)

    def no_peer_access(self) -> str | None:
        """Why every rank cannot map every other rank's GPU memory (the one-shot and two-shot
        read it all), None where it can; the same answer on every rank."""
        if self._peer_access is None:  # (the devices never change: asked once)
            self._peer_access = [ipc.missing_peer_access(self.devices, ipc.can_access_peer)]
        return self._peer_access[0]

    def register(self, x, error) -> bool:
        """comm.register(x) (registered.py): collective over the communicator."""
        if self.registry is None:
            self.registry = registered.registry()
        why = None if self.kernel is not None and self.comm.size > 1 else \
            "the two-shot kernel does not run here"
        d = None
        if error is None:
            try:
                d = any_device(x, "x")
            except (TypeError, ValueError) as e:
                error = e
        ok = registered.register(self.comm, self.registry, d, self.device, why, error)
        self._launches.clear()  # bound before: on the areas
        return ok

    def deregister(self, x) -> bool:
        """comm.deregister(x): x's registrations dropped on this rank (its later calls
        stage x; the peers' mappings stay open, registry.PeerMaps)."""
        d = any_device(x, "x")
        if not self.registry or not d.size:
            return False
        self._launches.clear()
        return bool(self.registry.remove(self.address(d)))

    def through_host(self, c, fn) -> None:
        """fn(x, out) on host copies of the call's arrays, the result copied back: the
        MPI algorithms (naive, ps, tree) through host memory (the mpich wheel cannot read
        GPU memory)."""
        self.finish()  # x as the calls before this one left it
        x = c.x.copy_to_host().view(c.dtype)
        out = np.empty_like(x)
        fn(x, out)
        c.out.copy_to_device(out.view(storage_of(c.dtype)))

    def swap_blocks(self, src, dst, rows: int, cols: int, b: int) -> None:
        """dst as [cols][rows][b] := src as [rows][cols][b]: rows x cols copies of b
        elements on the rank's stream (a handful: rows x cols is the number of ranks)."""
        for i in range(rows):
            for j in range(cols):
                self.copy(dst[(j * rows + i) * b:(j * rows + i + 1) * b],
                          src[(i * cols + j) * b:(i * cols + j + 1) * b])

    @staticmethod
    def align(collective: Collective, itemsize: int) -> int:
        return align(itemsize) if collective in ALIGNED else 1

    # -- the caller's stream (streams.py) -------------------------------------------------
    @staticmethod
    def stream_for(stream, x) -> int:
        """The handle of the stream a call of these arguments is ordered on."""
        return streams.of(stream, x)

    def order(self, h: int | None, one_launch: bool) -> None:
        """The call is ordered on stream h. one_launch: it may be one kernel-path launch,
        which goes on h itself (run, replay); anything else waits for h here (settle)."""
        self.caller = h
        if not (one_launch and self.kernel is not None):
            self.settle()

    def settle(self) -> None:
        """Before work on the rank's own streams, under host waits (the stream path, the
        GPU areas, copies through host memory): wait, under the call's deadline, for the
        work already on the caller's stream (its inputs written; the kernel-path launches
        there ended, their errors raised)."""
        h, self.caller = self.caller, None
        if h is None:
            return
        if not SIMULATED:  # (the simulator has run it all already)
            self.streams.record_on(self._settled, h)
            self.waiter.until(lambda: fired(self._settled),
                              lambda: "waiting for the work already on the caller's stream")
        self._ended(h)

    def _ended(self, h: int) -> None:
        """Raise the error of a kernel-path launch on stream h that has ended, if one had
        an error (cheap where none can have: KernelPath.check's elapsed); still running:
        a later call, wait() or synchronize() reads it."""
        since = self.streams.since.get(h)
        if since is None or not fired(self.streams.launched[h]):
            return
        del self.streams.since[h]
        alone = self.kernel.unwaited == 0 and not self.streams.since
        if not self.kernel.clean(self.waiter, time.monotonic() - since[0] if alone else None):
            self.kernel.check(self.waiter, earlier=self._earlier(since[1]))

    def _earlier(self, first: int) -> str:
        """Which calls a failed kernel-path launch left running may have been."""
        last = self.streams.last_call
        return f"call {first}" if first >= last else f"one of calls {first}-{last}"

    def synchronize(self) -> None:
        """Wait, under the deadline (and the kernel's grace), for every call enqueued so
        far; raise the error the GPU found, if any."""
        if self.streams.since:
            self.waiter.deadline += KERNEL_GRACE_S
            for h in list(self.streams.since):
                ev = self.streams.launched[h]
                self.waiter.until(lambda: fired(ev), lambda: "waiting for the GPU to finish "
                                  "the calls enqueued (a peer's kernel may be stuck)")
            first = min(c for _, c in self.streams.since.values())
            self.streams.since.clear()
            self.kernel.check(self.waiter, None, earlier=self._earlier(first))
        Pending(self.rank).wait(self.waiter)

    # -- who has arrived (host shared memory only) ---------------------------------------
    def entered(self, call: int) -> None:
        """Call `call` starts (its deadline armed): first raise the error of any launch an
        earlier call left running that has ended with one (before the call's agreement,
        which would wait for a peer that is gone)."""
        self.call = call  # (the call a launch left running belongs to: _earlier)
        for h in list(self.streams.since):
            self._ended(h)
        self._polled = call  # (replay need not ask the same events again)

    def behind(self, call: int) -> list[int]:
        return []

    # -- running ----------------------------------------------------------------------
    def run(self, plan: Plan, op: Op, x, out, divisor: int | None = None, logical=None,
            defer: bool = False):
        """Put the call on the GPU and wait for it under the timeout; with defer, return a
        Pending for the GPU work still in flight instead (the host's own part, staged links
        included, is done either way)."""
        divisor = plan.size if divisor is None else divisor
        storage = np.dtype(x.dtype)
        name = (logical or storage).name
        if self.kernel is not None:  # the whole plan in one launch
            self.last_launch = self.kernel.bind(plan, op, x, out, divisor, name,
                                                self.waiter.timeout, self.record)
            return self.replay(self.last_launch, defer)
        self.settle()
        if self.inbound is not None:  # None: a ring of one, which neither sends nor receives
            if any(step.reduce for step in plan.steps):
                load_kernels(op, name, storage, self.rank.stream, self.device)
            self.inbound.begin(plan.recvs)
        for _, step, lo, hi in plan.units:
            unit(plan, step, lo, hi, op, x, out, self.rank, self.inbound, self.outbound,
                  name, storage, divisor, self.path)
        if self.outbound is not None:
            self.outbound.flush()
        pending = Pending(self.rank)
        if defer:
            return pending
        pending.wait(self.waiter)
        return None

    def alltoall_in_place(self, plan: Plan, op: Op, a, logical=None, defer: bool = False):
        """An all-to-all whose output is its input a: blocks would land over a before they
        are sent (schedule.alltoall_overwritten), so it runs from a copy of a."""
        return self.run(plan, op, self.copy_of(a), a, logical=logical, defer=defer)

    def replay(self, launch, defer: bool = False):
        """Fire a bound launch of the kernel path: on the call's stream (`caller`), where it
        is left to run unless blocking; else on the rank's own stream, waited for under the
        timeout. With defer: return its Pending (a Work's) instead."""
        h, self.caller = self.caller, None
        prev, self.last_stream = self.last_stream, h
        if h is not None and self._polled != self.call:
            self._ended(h)  # an earlier launch there that failed: its error first
        if h is not None and prev is not None and prev != h:
            self.streams.after_latest(h, prev)  # never beside the last call's launch
        # every earlier launch seen finished without an error: then this one's word may go
        # unread where it finishes quickly (KernelPath.check)
        clean = self.kernel.unwaited == 0 and not self.streams.since
        fired_at = time.monotonic()
        if h is None:
            launch()
        else:
            launch(h)
            if not (defer or self.blocking):
                self.streams.mark(h, fired_at, self.call)
                return None
            if defer:
                self.streams.latest(h)  # (after_latest's event)
        # the kernel's own waits are bounded by the timeout: give it the time to say
        # where it was stuck before the host gives up on it
        pending = Pending(self.rank, self.kernel, self.waiter.timeout + KERNEL_GRACE_S,
                          reuse=not defer, fired=fired_at if clean else None, on=h)
        if defer:
            self.kernel.unwaited += 1
            return pending
        pending.wait(self.waiter)
        return None

    def refuse(self) -> None:
        """This rank raised in a call (on the host) that a peer may have launched its kernel
        for without waiting for this rank (a kept call): post the call board's REFUSED
        (board.refusal) after this rank's latest launch, so that the peers' kernels stop at
        the board at once instead of at the timeout."""
        if self.kernel is None:
            return
        h = self.last_stream
        stream = self.rank.stream if h is None or SIMULATED else cuda.external_stream(h)
        self.kernel.board.refuse(stream)

    def finish(self) -> None:
        """Wait, under the timeout, until the GPU has done everything queued so far (the
        kernel path's launches on callers' streams included: their errors raised)."""
        self.synchronize()

    def close(self) -> None:
        if self.rank is not None:
            self.rank.stream.synchronize()
            self.rank.copy_stream.synchronize()
        for end in (self.inbound, self.outbound):
            if end is not None:
                end.close()
        if self._areas is not None:
            self._areas.close()
            self._areas = None
        self.registry = None
        for made in self._launchers.values():
            made.close()
        self._launchers, self._launches = {}, {}
        if self.kernel is not None:
            self.kernel.board.close()
        for m in self._mapped:
            m.close()
        if self.segment is not None:
            self.segment.close()
        self._mapped, self.segment = [], None
        self.inbound = self.outbound = None


def all_on_one_gpu(everyone, topo: Topology) -> bool:
    """Whether every rank's neighbours run on its node and GPU (everyone[q][0]: rank q's
    device)."""
    k = len(everyone)
    return all(topo.same_node(q, (q + 1) % k) and everyone[q][0] == everyone[(q + 1) % k][0]
               for q in range(k))


class Pending:
    """A call's GPU work in flight: events recorded after it on the rank's streams (and the
    persistent kernel, whose error word is read once it has finished). The kernel path puts
    a call on the rank's stream only: one event there, the kernel path's own (reuse) when
    the call is waited for at once, a new one when a Work keeps it."""

    def __init__(self, rank: Rank, kernel=None, extra_s: float = 0.0, reuse: bool = False,
                 fired: float | None = None, on: int | None = None):
        """on: the stream handle the kernel was launched on (None: the rank's). fired: when
        the kernel's launch was fired (time.monotonic()), for check(); None where its error
        word must be read whatever the time (deferred: a Work's, counted in the kernel
        path's `unwaited` until waited for)."""
        self.kernel, self.extra_s, self.fired = kernel, extra_s, fired
        self.deferred = kernel is not None and not reuse  # a Work's: replay(defer=True)
        self.marks = []
        if SIMULATED:  # the simulator has run it all already
            return
        if kernel is not None:
            ev = kernel.done if reuse else event()
            if on is None:
                ev.record(rank.stream)
            else:
                streams.Streams.record_on(ev, on)
            self.marks.append(ev)
            return
        for s in (rank.stream, rank.copy_stream):
            ev = event()
            ev.record(s)
            self.marks.append(ev)

    def query(self) -> bool:
        return all(fired(e) for e in self.marks)

    def wait(self, waiter) -> None:
        """Until the work is done, under the waiter's deadline (plus extra_s); then raise
        the kernel's own timeout, if it had one."""
        if self.marks:
            waiter.deadline += self.extra_s
            waiter.until(self.query, lambda: "waiting for the GPU to finish the call (a peer's "
                                             "stream may be stuck)")
        if self.kernel is not None:
            self.kernel.check(waiter, None if self.fired is None else
                              time.monotonic() - self.fired)
            if self.deferred:
                self.kernel.unwaited -= 1
