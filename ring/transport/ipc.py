"""Links between processes on one node: CUDA IPC for the memory, stream memory operations
for the order. Nothing on the data path goes through MPI or host memory, and the host never
waits per chunk.

Each rank allocates one segment on its GPU: a header of 64-bit counters, each on its own
128-byte line, then `nslots` slots. The stream path uses the first two:
    POSTED  chunks the predecessor has written into my slots  (written by the predecessor)
    ACKED   chunks of mine the successor has consumed         (written by the successor)
The segment's IPC handle goes once to each ring neighbour over MPI, which maps it. Then:
    receiver  wait POSTED(mine) >= u+1 ... kernel reads my slot ... ACKED(pred) := u+1
    sender    wait ACKED(mine) >= u+1-nslots ... kernel writes succ's slot ... POSTED(succ) := u+1
cuStreamWaitValue64 compares cyclically (GEQ), so the counters never need resetting, and
cuStreamWriteValue64 fences the kernel's writes before the counter (its default flags).
Why not IPC events: a wait on an event refers to its last record, and across processes the
host cannot know that the peer's record was enqueued first without a round trip per chunk.
Several ranks may share one GPU (IPC works between processes of one device); on separate
GPUs peer access is enabled for the neighbours.

The persistent kernel (persistent.py) keeps its own pair per channel after them, the same
two counters for each of its channels: channel c's POSTED at int64 index KERNEL_BASE +
KERNEL_STRIDE * c, its ACKED KERNEL_ACKED further, and on a third line (KERNEL_TOTALS
further) the chunks the channel has received and sent over all calls so far, which only the
owner reads and writes: each launch starts from them, so a replayed graph does too.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.driver import driver, ok, simulated, stream_handle

from .keep import Opened, Spares
from .registry import Allocation
from .shm import Typed

SIMULATED = simulated()

POSTED, ACKED = 0, 128  # byte offsets in the header
KERNEL_BASE, KERNEL_STRIDE, KERNEL_ACKED, KERNEL_TOTALS = 32, 48, 16, 32  # int64 indices
# the most channels a persistent kernel may run (RING_KERNEL_CHANNELS; shape_for's default
# is 64): the header keeps a line of counters for each, 128 for measuring more at K = 2,
# where 64 channels of 512 threads leave an H200's multiprocessors half full
MAX_CHANNELS = 128
HEADER = 8 * (KERNEL_BASE + KERNEL_STRIDE * MAX_CHANNELS)


class Counter:
    """A 64-bit counter in device memory that streams wait on and write."""

    def __init__(self, addr: int):
        self.addr = addr

    def wait_geq(self, stream, value: int) -> None:
        drv = driver()
        ok(drv.cuStreamWaitValue64(stream_handle(stream), drv.CUdeviceptr(self.addr),
                                   drv.cuuint64_t(value),
                                   drv.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ))

    def write(self, stream, value: int) -> None:
        drv = driver()
        ok(drv.cuStreamWriteValue64(stream_handle(stream), drv.CUdeviceptr(self.addr),
                                    drv.cuuint64_t(value),
                                    drv.CUstreamWriteValue_flags.CU_STREAM_WRITE_VALUE_DEFAULT))


class _Memory:
    """A segment's memory, local or mapped: its slots and its counters."""

    mem = None
    nslots = slot_bytes = 0

    def slots(self) -> list:
        b = self.slot_bytes
        return [self.mem[HEADER + i * b:HEADER + (i + 1) * b] for i in range(self.nslots)]

    def counter(self, offset: int) -> Counter:
        return Counter(self.mem.device_ctypes_pointer.value + offset)

    def header(self):
        """The counters as int64 (for the persistent kernel)."""
        return self.mem[:HEADER].view(np.int64)

    def region(self):
        """All slots as one byte array (for the persistent kernel)."""
        return self.mem[HEADER:HEADER + self.nslots * self.slot_bytes]


def zeroed(nbytes: int):
    """nbytes of new device memory, all zero (clear)."""
    mem = cuda.device_array(nbytes, np.uint8)
    clear(mem)
    return mem


def clear(mem) -> None:
    """Zero mem: the counters start at 0, and no slot holds a word that an LL wait could
    take for a chunk (a closed communicator's segment comes back, from the allocator or
    keep.py's spares, flags and all: persistent.py's LL words are flagged 1, 2, ... on
    every new link)."""
    if SIMULATED:
        mem.copy_to_device(np.zeros(mem.size, np.uint8))
    elif mem.size:
        from numba.cuda.cudadrv.driver import device_memset
        device_memset(mem, 0, mem.size)
        # cuMemsetD8 returns before the GPU has run it, and the neighbours (other
        # processes, other streams) write here as soon as they have the handle
        cuda.synchronize()


# kept for the process's lifetime: segments for reuse, neighbours' mapped (keep.py)
SPARES = Spares(zeroed, clear)
OPENED = Opened()
# A segment takes whole 2 MiB pages on a GPU (cuMemAlloc aligns what it hands out at 2 MiB
# and more to 2 MiB): no two segments share a page that a neighbour maps, a second way the
# driver could find the memory of a new handle already mapped.
PAGE = 1 if SIMULATED else 2 << 20


def whole_pages(nbytes: int) -> int:
    return -(-nbytes // PAGE) * PAGE


class Segment(_Memory):
    """This rank's header and slots, exported by IPC; at close its memory waits in SPARES
    for the next segment of its size on its GPU."""

    def __init__(self, nslots: int, slot_bytes: int):
        self.nslots, self.slot_bytes = nslots, slot_bytes
        device = 0 if SIMULATED else cuda.get_current_device().id  # (the simulator's has none)
        self._block = SPARES.take(device, whole_pages(HEADER + nslots * slot_bytes))
        self.mem = self._block.mem

    def handle(self):
        """What a neighbour needs to map this segment (sent to it over MPI): made once
        for the memory, so that a reuse sends the handle its neighbours have open."""
        if self._block.handle is None:
            self._block.handle = self.mem.get_ipc_handle()
        return self._block.handle

    def open(self, handle) -> Mapped:
        """A neighbour's segment (of the same geometry) from its handle."""
        return Mapped(handle, self.nslots, self.slot_bytes)

    def close(self) -> None:
        if self._block is not None:
            SPARES.give(self._block)
            self._block = self.mem = None


class Mapped(_Memory):
    """A neighbour's segment, opened from its IPC handle once per process (OPENED keeps
    the mapping for a later segment on the same memory)."""

    def __init__(self, handle, nslots: int, slot_bytes: int):
        self.nslots, self.slot_bytes = nslots, slot_bytes
        self.mem = OPENED.open(handle)

    def close(self) -> None:
        self.mem = None


class _End:
    def __init__(self, slots: list):
        self.raw = slots
        self.nslots = len(slots)
        self._typed = Typed(slots)

    def view(self, u: int, storage, n: int):
        return self._typed.get(storage)[u % self.nslots][:n]

    def close(self) -> None:
        """Nothing to release: the mappings belong to the backend."""


class InEnd(_End):
    """From the predecessor: my slots; POSTED in my header; ACKED in the predecessor's."""

    def __init__(self, mine, pred):
        super().__init__(mine.slots())
        self.posted, self.pred_acked = mine.counter(POSTED), pred.counter(ACKED)
        self.taken = 0

    def begin(self, nchunks: int) -> None:
        """Nothing to post ahead: the predecessor writes straight into my slots."""

    def wait_written(self, u: int, stream) -> None:
        self.posted.wait_geq(stream, u + 1)

    def mark_freed(self, u: int, stream) -> None:
        self.pred_acked.write(stream, u + 1)


class OutEnd(_End):
    """To the successor: its slots (mapped); ACKED in my header; POSTED in the successor's."""

    def __init__(self, mine, succ):
        super().__init__(succ.slots())
        self.acked, self.succ_posted = mine.counter(ACKED), succ.counter(POSTED)
        self.sent = 0

    def wait_freed(self, u: int, stream) -> None:
        if u >= self.nslots:
            self.acked.wait_geq(stream, u + 1 - self.nslots)

    def mark_written(self, u: int, stream) -> None:
        self.succ_posted.write(stream, u + 1)

    def flush(self) -> None:
        """Nothing left for the host: the GPU posts every chunk itself."""


def missing_peer_access(devices, can_access) -> str | None:
    """Why the GPUs in `devices` cannot all map each other's memory (can_access(a, b): a's
    kernels reach b's memory), None where they can (one GPU; every pair with peer access).
    What the one-shot and two-shot need: every rank reads every other rank's memory."""
    ds = sorted(set(devices))
    for a in ds:
        for b in ds:
            if a != b and not can_access(a, b):
                return f"GPU {a} cannot access GPU {b}'s memory (no peer access between them)"
    return None


def can_access_peer(a: int, b: int) -> bool:
    import cupy
    return bool(cupy.cuda.runtime.deviceCanAccessPeer(a, b))


def enable_peer_access(device: int, peers: list[int]) -> None:
    """Map neighbours' memory on other GPUs (no-op for ranks that share this GPU)."""
    others = set(peers) - {device}
    if not others:
        return
    import cupy
    for p in others:
        if not cupy.cuda.runtime.deviceCanAccessPeer(device, p):
            raise RuntimeError(f"GPU {device} cannot access GPU {p} (no peer access)")
        try:
            cupy.cuda.runtime.deviceEnablePeerAccess(p)
        except cupy.cuda.runtime.CUDARuntimeError as e:  # already enabled is fine
            if "PeerAccessAlreadyEnabled" not in str(e):
                raise


# -- registered user buffers (registry.py) on a GPU ------------------------------------
class _Whole:
    """An allocation as a byte array (__cuda_array_interface__), for Numba's IPC calls."""

    def __init__(self, base: int, size: int):
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1", "strides": None,
                                         "data": (base, False), "version": 3}


def describe(ptr: int):
    """The allocation that holds ptr (registry.Allocation), None where the driver cannot
    say (not device memory, or memory that legacy IPC cannot export)."""
    drv = driver()
    try:  # (any failure: this memory is staged, never a rank left raising alone)
        err, base, size = drv.cuMemGetAddressRange(drv.CUdeviceptr(ptr))
        if err != drv.CUresult.CUDA_SUCCESS:
            return None
        err, ident = drv.cuPointerGetAttribute(
            drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_BUFFER_ID, drv.CUdeviceptr(ptr))
        if err != drv.CUresult.CUDA_SUCCESS:
            return None
        return Allocation(int(base), int(size), int(ident))
    except Exception:  # noqa: BLE001
        return None


def whole(alloc):
    """This rank's own allocation as a byte array."""
    return cuda.as_cuda_array(_Whole(alloc.base, alloc.size))


def export(alloc):
    """The whole allocation's IPC handle (a peer maps all of it once)."""
    return whole(alloc).get_ipc_handle()


def open_mapping(handle):
    """(the handle, to close it; the peer's allocation as a byte array)"""
    return handle, handle.open()


def close_mapping(mem) -> None:
    mem[0].close()
