"""The host side of path="kernel": one persistent kernel launch per call (persistent.py).

The host encodes each plan once (program.py; kept on the device per plan), launches the
kernel on the rank's stream (the links' running counts live on the device, in the
segments: the host keeps none), and afterwards reads the kernel's error word: a wait that timed out on the GPU becomes a ring.TimeoutError
naming the channel, chunk, step and the counter the kernel spun on. No per-chunk Python.

The links are the same segments as the stream path's (ipc.py across processes of a node;
under Numba's simulator simipc.py's shared memory): the kernel reads the predecessor's
chunks from this rank's slots and writes straight into the successor's, with its own
counters per channel in the segments' headers.

Where it cannot run, the communicator falls back to the stream path with one warning,
decided on every rank together (why_not): links across nodes (MPI in between), or several
processes on one GPU without MPS (their persistent kernels would time-slice, not run
concurrently), or more channels than the GPU can keep resident beside its neighbours.
"""

from __future__ import annotations

import os

import numpy as np
from numba import cuda

from kernels.dtypes import kernel_dtype
from kernels.arrays import address
from kernels.bound_launch import BoundLaunch
from .repeated import remember
from ringtypes import Op
from ..errors import MismatchError, RingError
from ..options import env_whole
from ..schedule import Plan
from .arrays import SIMULATED
from .board import MISMATCH as BOARD_MISMATCH
from .board import REFUSED as BOARD_REFUSED
from .board import WAIT as BOARD_WAIT
from .board import Board
from .error_word import timeout_ns
from ..transport.ipc import HEADER, MAX_CHANNELS
from .oneshot_kernel import WAIT_PEER
from .twoshot_kernel import WAIT_RECORD, WAIT_STAGED, WAIT_WRITTEN
from .program import encode
from .persistent import (ERR_CHANNEL, ERR_CHUNK, ERR_CODE, ERR_LEN, ERR_NEED, ERR_SEEN,
                         ERR_STEP, ERR_UNIT, LL_WORDS, UNROLL, VECTOR_BYTES, WAIT_DATA, WAIT_LL,
                         ring_kernel, sub_slot, vpart)

# Channels x threads per channel. Under the simulator every thread is a Python thread: two
# small channels still run the channel split. On a GPU the best measured on an H100 (four
# ranks sharing it, results/h100/kernel-path.md): 64 channels of 512 threads, cut to fit
# when more ranks share the GPU (shape_for).
SHAPE = (2, 4) if SIMULATED else (64, 512)
# The dtype whose kernel moves the bits of a non-reducing collective, by element width
MOVER = {n: np.dtype(t) for n, t in ((1, np.uint8), (2, np.int16), (4, np.uint32), (8, np.uint64))}


BOUND = 64  # launches KernelPath.bind keeps (the oldest goes first)


def memory_of(a) -> tuple[int, int] | None:
    """Where an array's elements are: (address, bytes); None for no array."""
    return None if a is None else (address(a), a.size * a.dtype.itemsize)


def shape_for(ranks_per_gpu: int) -> tuple[int, int]:
    """(channels, threads) when up to ranks_per_gpu ranks share a GPU:
    RING_KERNEL_CHANNELS / RING_KERNEL_THREADS where set, else SHAPE's, with the channels
    cut so that every rank's kernel stays resident beside the others (not_resident)."""
    t = env_whole("RING_KERNEL_THREADS", SHAPE[1])
    if not 1 <= t <= 1024:
        raise ValueError(f"RING_KERNEL_THREADS: need 1..1024, got {t}")
    c = env_whole("RING_KERNEL_CHANNELS", None)
    if c is None:
        if SIMULATED:
            return SHAPE[0], t
        return max(1, min(SHAPE[0], room(t) // max(1, ranks_per_gpu))), t
    if not 1 <= c <= MAX_CHANNELS:
        raise ValueError(f"RING_KERNEL_CHANNELS: need 1..{MAX_CHANNELS}, got {c}")
    return c, t


def unroll_from_env() -> int:
    """RING_KERNEL_UNROLL (1 or 4; default persistent.UNROLL): elements a thread loads
    before it stores."""
    u = env_whole("RING_KERNEL_UNROLL", UNROLL)
    if u not in (1, 4):
        raise ValueError(f"RING_KERNEL_UNROLL: 1 or 4, got {u}")
    return u


def vectors_from_env() -> bool:
    """RING_KERNEL_VECTORS (1, the default, or 0): whether the ring kernel moves a channel's
    part in 16-byte vectors where its arrays are aligned (persistent.source's vectors), or
    always RING_KERNEL_UNROLL elements at a time (the kernel measured before vectors)."""
    v = os.environ.get("RING_KERNEL_VECTORS", "1")
    if v not in ("0", "1"):
        raise ValueError(f"RING_KERNEL_VECTORS: 0 or 1, got {v!r}")
    return v == "1"


SYNCS = ("fence", "acqrel")  # RING_KERNEL_SYNC: how the counters are handed over


def sync_from_env() -> bool:
    """RING_KERNEL_SYNC: "acqrel" (the default: relaxed loads and stores with one
    fence.acq_rel a side, pausing every 64 polls, persistent.source's acqrel; on an H200 it
    cut the 8-byte graph replay from 11.2 to 10.3 us at K = 2 and from 28.2 to 25.2 us at
    K = 4, at the same 256 MiB bandwidth: results/h200/README.md) or "fence" (atomics
    between sequentially consistent fences, results/h100/kernel-path.md). Whether the
    kernel hands over the acqrel way."""
    s = os.environ.get("RING_KERNEL_SYNC", "acqrel")
    if s not in SYNCS:
        raise ValueError(f"RING_KERNEL_SYNC: one of {SYNCS}, got {s!r}")
    return s == "acqrel"


PROTOS = ("simple", "ll")  # RING_KERNEL_PROTO: how a chunk is handed over


def proto_from_env() -> str:
    """RING_KERNEL_PROTO: "ll" (the default: the calls whose chunks fit as NCCL's LL
    words, persistent.LL_WORDS: the element and its flag in one 64-bit store, no fence;
    the larger ones as "simple") or "simple" (every chunk in the slot, then a counter
    behind a fence). On an H100 (results/h100/kernel-shapes-4.txt) LL replays an 8-byte
    all-reduce of ring.Group in 7.4 us at K = 2 (simple: 10.0) and 14.1 us at K = 4 (21.7),
    and a 256 MiB one at the same bandwidth (it goes as simple there). Every rank must set
    it alike."""
    p = os.environ.get("RING_KERNEL_PROTO", "ll")
    if p not in PROTOS:
        raise ValueError(f"RING_KERNEL_PROTO: one of {PROTOS}, got {p!r}")
    return p


def settings_to_agree() -> tuple[str, str]:
    """What of the environment both ends of a link must read alike, beside the shape
    (shape_for): RING_KERNEL_PROTO (how a chunk is handed over: an LL sender beside a
    simple receiver waits out the timeout) and RING_TWOSHOT_BLOCKS as set (the two-shot's
    grid: its blocks wait for their namesakes on every peer). Every rank compares them when
    its communicator is made (backend.py)."""
    return proto_from_env(), os.environ.get("RING_TWOSHOT_BLOCKS", "").strip()


def carries_ll(proto: str, itemsize: int, max_chunk: int, channels: int) -> bool:
    """Whether a call goes as LL words: asked for, elements of at most 4 bytes (one a
    word), and no channel's part of any chunk over LL_WORDS elements. The same on every
    rank of a call (the same plan, dtype and shape), as both ends of a link must agree."""
    return proto == "ll" and itemsize <= 4 and -(-max_chunk // channels) <= LL_WORDS


def ll_bytes(channels: int) -> int:
    """The LL words a slot holds after its data: LL_WORDS a channel."""
    return 8 * LL_WORDS * channels


def slot_bytes(chunk_slot_bytes: int, channels: int) -> int:
    """A slot of the kernel path: room for each channel's part of any chunk (ceil(n / C)
    elements rounded up to whole 16-byte vectors, persistent.vpart) in its own sub-slot
    (cut to whole vectors, persistent.sub_slot): 48 bytes per channel more than the stream
    path's slot, rounded up to whole vectors; then each channel's LL words (ll_bytes)."""
    return -(-(chunk_slot_bytes + 48 * channels) // 16) * 16 + ll_bytes(channels)


def layout(slot_bytes: int, channels: int, itemsize: int) -> tuple[int, int]:
    """(stride, cap) in elements of itemsize bytes: how far apart the slots are (the whole
    slot, its LL words included) and how many elements of data each holds at its start
    (persistent.data_base / ll_base place a channel's part and its LL words)."""
    return slot_bytes // itemsize, (slot_bytes - ll_bytes(channels)) // itemsize


def mps_running() -> bool:
    """Whether an MPS control daemon is up (its control pipe exists)."""
    pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
    return os.path.exists(os.path.join(pipe, "control"))


def why_not(one_node: bool, ranks_on_my_gpu: int, channels: int, threads: int) -> str | None:
    """Why the persistent kernel cannot run on this rank (None: it can)."""
    if not one_node:
        return "a ring link crosses nodes (the kernel path needs every neighbour on this node)"
    if SIMULATED:
        return None
    if ranks_on_my_gpu > 1 and not mps_running():
        return (f"{ranks_on_my_gpu} processes share this GPU without MPS: their persistent "
                f"kernels would time-slice (start nvidia-cuda-mps-control -d)")
    return not_resident(channels, ranks_on_my_gpu, threads)


def room(threads: int) -> int:
    """Blocks of `threads` threads the current GPU keeps resident at once: per
    multiprocessor 64 K registers at up to 64 a thread (tools/compile_kernels.py checks
    every variant fits 1024 threads in them), so 1024 / threads blocks (2048 threads)."""
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    return sms * max(1, 1024 // threads)


def not_resident(channels: int, ranks: int, threads: int) -> str | None:
    """Why `ranks` kernels of `channels` blocks of `threads` each might not all be resident
    on the current GPU at once (None: they fit)."""
    fits = room(threads)
    if channels * ranks > fits:
        return (f"{channels} channels x {ranks} ranks on this GPU exceed the {fits} blocks of "
                f"{threads} threads it keeps resident: the ranks' kernels could not all run "
                f"at once")
    return None


def scope_from_env(one_gpu: bool) -> bool:
    """Whether the kernel's fences are GPU-scoped: where every neighbour runs on this GPU
    (across GPUs they must be system-scoped), unless RING_KERNEL_SCOPE=sys forces system
    scope (the default, gpu, never widens what is allowed)."""
    scope = os.environ.get("RING_KERNEL_SCOPE", "gpu")
    if scope not in ("gpu", "sys"):
        raise ValueError(f"RING_KERNEL_SCOPE: gpu or sys, got {scope!r}")
    return one_gpu and scope == "gpu"


class KernelPath:
    def __init__(self, stream, mine, pred, succ, nslots: int, slot_bytes: int,
                 channels: int, threads: int, rank: int, size: int, one_gpu: bool = False,
                 board: Board | None = None):
        """mine / pred / succ: this rank's segment and its neighbours' (header() and
        region()); None for a ring of one. one_gpu: every rank runs on this rank's GPU
        (the fences need only GPU scope). board: the call board every kernel of the path
        checks (board.py; None: one that checks nothing, Board.alone)."""
        self.stream, self.nslots, self.slot_bytes = stream, nslots, slot_bytes
        self.channels, self.threads, self.rank, self.size = channels, threads, rank, size
        if mine is None:  # a ring of one: nothing is sent or received
            hdr = cuda.to_device(np.zeros(HEADER // 8, np.int64))  # the totals live here
            region = cuda.device_array(0, np.uint8)
            self.headers, self.regions = (hdr, hdr, hdr), (region, region)
        else:
            self.headers = (mine.header(), pred.header(), succ.header())
            self.regions = (mine.region(), succ.region())
        self.err = cuda.to_device(np.zeros(ERR_LEN, np.int64))
        self.board = Board.alone() if board is None else board
        self._err_host = cuda.pinned_array(ERR_LEN, np.int64)  # check() reads it into this
        self.done = None if SIMULATED else cuda.event(timing=False)  # see backend.Pending
        self.unroll, self.gpu_scope = unroll_from_env(), scope_from_env(one_gpu)
        self.vectors = vectors_from_env()
        self.acqrel = sync_from_env()
        self.proto = proto_from_env()
        self._programs: dict = {}
        self._empty: dict = {}
        self._bound: dict = {}  # bind()'s launches, by plan, op, dtype and the arrays' memory
        self.unwaited = 0  # launches of Works not yet waited for (check(), backend.replay)

    def program(self, p: Plan):
        """The plan's table on the device (uploaded once; before a capture, as a capture
        cannot copy from host memory)."""
        prog = self._programs.get(p)
        if prog is None:
            if len(self._programs) >= 256:
                self._programs.clear()
            prog = self._programs[p] = cuda.to_device(encode(p))
        return prog

    def bind(self, p: Plan, op: Op, x, out, divisor: int, dtype_name: str, timeout_s: float,
             record: int = 0):
        """The whole plan as one kernel launch on the rank's stream, whose every wait gives
        up after timeout_s, ready to fire (kernels.bound_launch.BoundLaunch: arguments packed, the
        module loaded). ring.Group binds every rank's launch before firing any: a kernel
        already spinning on its neighbours must not wait for the host, and an upload, a
        free or a module load between two launches could synchronise with it.

        A launch is kept for the next call of the same plan, op and dtype on the same memory
        (x's and out's address and size): a repeated call costs a lookup, not the views and
        the argument packing. It keeps this rank's buffers alive, never x or out.
        record: the call's board.record_hash (what every peer's call must show)."""
        key = (p, op, dtype_name, divisor, timeout_s, memory_of(x), memory_of(out), record)
        bound = self._bound.get(key)
        if bound is None:
            bound = self._bind(p, op, x, out, divisor, dtype_name, timeout_s, record)
            remember(self._bound, key, bound, BOUND)
        return bound

    def _bind(self, p: Plan, op: Op, x, out, divisor: int, dtype_name: str, timeout_s: float,
              record: int):
        if p.collective.reduces:  # in the kernel dtype's storage (16-bit floats: bits)
            storage = kernel_dtype(dtype_name).storage
        else:  # only copies: any dtype of the width moves the bits
            storage = MOVER[np.dtype(out.dtype).itemsize]
        ll = carries_ll(self.proto, storage.itemsize, p.max_chunk, self.channels)
        kernel = ring_kernel(op if p.collective.reduces else Op.SUM,
                             dtype_name if p.collective.reduces else storage.name,
                             self.unroll, self.gpu_scope, self.acqrel, ll, self.vectors)
        x, out = (None if a is None else a.view(storage) for a in (x, out))
        if x is None:  # scatter away from the root reads no input
            x = self._empty.get(storage)
            if x is None:
                x = self._empty[storage] = cuda.device_array(0, storage)
        stride, cap = layout(self.slot_bytes, self.channels, storage.itemsize)
        lanes = VECTOR_BYTES // storage.itemsize
        _, q = vpart.py_func(p.max_chunk, 0, self.channels, lanes)  # (channel 0's: widest)
        if q > sub_slot(cap, self.channels, lanes):  # slots are sized for it (slot_bytes)
            raise AssertionError(f"a channel's part of a chunk ({q}) exceeds its sub-slot")
        inslots, outslots = (r.view(storage) for r in self.regions)
        inll, outll = (r.view(np.int64) for r in self.regions)
        mine, pred, succ = self.headers
        prog = self.program(p)
        args = (prog, x, out, inslots, outslots, mine, pred, succ, self.err,
                p.recvs, p.sends, self.nslots, stride, timeout_ns(timeout_s), float(divisor),
                inll, outll, self.slot_bytes // 8, cap * storage.itemsize // 8,
                *self.board.args(record))
        # kept alive by the launch: everything but x and out (the empty x is this rank's)
        keep = (prog, inslots, outslots, inll, outll, mine, pred, succ, self.err,
                x if x is self._empty.get(storage) else None, self.board.words,
                self.board.state)
        return BoundLaunch(kernel, args, self.channels, self.threads, self.stream, keep)

    def check(self, waiter, elapsed: float | None = None, earlier: str = "") -> None:
        """After the launch has finished: raise the kernel's timeout, if it had one
        (earlier: which earlier call's launch, left running on its stream, it was).
        elapsed: the seconds from firing the launch to seeing it finished, where every
        earlier launch was seen finished without an error (None: read the word). A kernel
        writes its error word only when a wait has outlasted the timeout on the GPU's own
        clock, so one seen finished within half of it cannot have, and the word is not
        read (a device-to-host copy less per call). A word an earlier launch wrote makes
        the next kernel stop at the first wait it has to make, quickly: a Work not yet
        waited for (`unwaited`) could have left one, so a launch fired while one is out
        is always read."""
        if self.clean(waiter, elapsed):
            return
        err = self.err.copy_to_host(self._err_host)
        if err[ERR_CODE] == 0:
            return
        try:
            self._raise(waiter, err, earlier)
        except RingError as e:
            e.found_on_gpu = True  # (Communicator._broken: no REFUSED after it, board.py)
            raise

    @staticmethod
    def clean(waiter, elapsed: float | None) -> bool:
        """Whether a launch seen finished `elapsed` seconds after it was fired (None: not
        known, or an earlier launch's word may be set) cannot have written the error word:
        check()'s shortcut, which a caller takes before it names the launch (a string
        formatted only where the word is read)."""
        return elapsed is not None and elapsed < waiter.timeout / 2

    def _raise(self, waiter, err, earlier: str) -> None:
        """check()'s raise of the error word err."""
        pred, succ = (self.rank - 1) % self.size, (self.rank + 1) % self.size
        need, seen = int(err[ERR_NEED]), int(err[ERR_SEEN])
        code = err[ERR_CODE]
        said = f"in {earlier} (enqueued earlier), " if earlier else ""
        if code == BOARD_MISMATCH and seen == BOARD_REFUSED:  # (board.refusal)
            raise MismatchError(f"{said}rank {int(err[ERR_UNIT])} refused the call that rank "
                                f"{self.rank} ran (it raised its error there; found on the "
                                f"GPU)")
        if code == BOARD_MISMATCH:  # the call board (board.py), any kernel of the path
            raise MismatchError(
                f"{said}rank {int(err[ERR_UNIT])} runs another call than rank {self.rank}: "
                f"another collective, count, dtype, op, root, in place, chunk size or "
                f"algorithm (their call records' hashes {seen:#010x} and {need:#010x}; found "
                f"on the GPU)")
        if code == BOARD_WAIT:
            raise waiter.failure(f"{said}kernel block {int(err[ERR_CHANNEL])}: waiting for "
                                 f"rank {int(err[ERR_UNIT])} to start its kernel-path launch "
                                 f"{need} (its latest: {seen})")
        if code in (WAIT_STAGED, WAIT_WRITTEN, WAIT_RECORD):  # the two-shot kernel
            what = {WAIT_STAGED: "stage its input", WAIT_WRITTEN: "write its reduced block",
                    WAIT_RECORD: "start the call"}[int(code)]
            raise waiter.failure(f"{said}two-shot kernel block {int(err[ERR_CHANNEL])}, round "
                                 f"{int(err[ERR_CHUNK])}: waiting for rank "
                                 f"{int(err[ERR_UNIT])} to {what} (flag {need}, at {seen})")
        if code == WAIT_PEER:  # the one-shot kernel (oneshot_kernel.py)
            raise waiter.failure(f"{said}one-shot kernel block {int(err[ERR_CHANNEL])}: "
                                 f"waiting for element {int(err[ERR_CHUNK])} from rank "
                                 f"{int(err[ERR_UNIT])} flagged {need} (one flagged {seen})")
        what = (f"waiting for the chunks posted to rank {self.rank} by rank {pred} to reach "
                f"{need} (at {seen})" if code == WAIT_DATA else
                f"waiting for the chunks posted to rank {self.rank} by rank {pred} as LL "
                f"words: a word flagged {need} (one flagged {seen})" if code == WAIT_LL else
                f"waiting for rank {succ} to free a slot: the chunks of rank {self.rank} it "
                f"consumed to reach {need} (at {seen})")
        raise waiter.failure(f"{said}ring kernel channel {int(err[ERR_CHANNEL])}, chunk "
                             f"{int(err[ERR_CHUNK])} step {int(err[ERR_STEP])}: {what}")

