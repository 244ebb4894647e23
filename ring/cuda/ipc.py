"""Links between processes on one node: CUDA IPC for the memory, stream memory operations
for the order. Nothing on the data path goes through MPI or host memory, and the host never
waits per chunk.

Each rank allocates one segment on its GPU: a header of two 64-bit counters, each on its own
128-byte line, then `nslots` slots.
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
"""

from __future__ import annotations

import numpy as np
from numba import cuda

HEADER = 256
POSTED, ACKED = 0, 128  # byte offsets in the header


def _drv():
    from cuda.bindings import driver
    return driver


def _ok(result):
    from .graphs import _ok as ok
    return ok(result)


def _handle(stream):
    from .graphs import handle
    return handle(stream)


class Segment:
    """This rank's header and slots, exported by IPC."""

    def __init__(self, nslots: int, slot_bytes: int):
        self.nslots, self.slot_bytes = nslots, slot_bytes
        self.mem = cuda.device_array(HEADER + nslots * slot_bytes, np.uint8)
        self.mem[:HEADER].copy_to_device(np.zeros(HEADER, np.uint8))
        self.base = self.mem.device_ctypes_pointer.value

    def ipc_handle(self):
        return self.mem.get_ipc_handle()


class Mapped:
    """A neighbour's segment, opened from its IPC handle."""

    def __init__(self, handle, nslots: int, slot_bytes: int):
        self.handle, self.nslots, self.slot_bytes = handle, nslots, slot_bytes
        self.mem = handle.open()
        self.base = self.mem.device_ctypes_pointer.value

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = self.mem = None


def _slots(mem, nslots, slot_bytes):
    return [mem[HEADER + i * slot_bytes:HEADER + (i + 1) * slot_bytes] for i in range(nslots)]


class _End:
    def __init__(self, slots_mem, nslots, slot_bytes):
        self.raw = _slots(slots_mem, nslots, slot_bytes)
        self.nslots = nslots
        self._typed: dict = {}

    def view(self, u: int, storage, n: int):
        views = self._typed.get(storage)
        if views is None:
            views = self._typed[storage] = [r.view(storage) for r in self.raw]
        return views[u % self.nslots][:n]


def _wait(stream, addr: int, value: int) -> None:
    drv = _drv()
    _ok(drv.cuStreamWaitValue64(_handle(stream), drv.CUdeviceptr(addr), drv.cuuint64_t(value),
                                drv.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ))


def _write(stream, addr: int, value: int) -> None:
    drv = _drv()
    _ok(drv.cuStreamWriteValue64(_handle(stream), drv.CUdeviceptr(addr), drv.cuuint64_t(value),
                                 drv.CUstreamWriteValue_flags.CU_STREAM_WRITE_VALUE_DEFAULT))


class InEnd(_End):
    """From the predecessor: my slots; POSTED in my header; ACKED in the predecessor's."""

    def __init__(self, mine: Segment, pred: Mapped):
        super().__init__(mine.mem, mine.nslots, mine.slot_bytes)
        self.posted, self.pred_acked = mine.base + POSTED, pred.base + ACKED
        self.taken = 0

    def wait_written(self, u: int, stream) -> None:
        _wait(stream, self.posted, u + 1)

    def mark_freed(self, u: int, stream) -> None:
        _write(stream, self.pred_acked, u + 1)


class OutEnd(_End):
    """To the successor: its slots (mapped); ACKED in my header; POSTED in the successor's."""

    def __init__(self, mine: Segment, succ: Mapped):
        super().__init__(succ.mem, succ.nslots, succ.slot_bytes)
        self.acked, self.succ_posted = mine.base + ACKED, succ.base + POSTED
        self.sent = 0

    def wait_freed(self, u: int, stream) -> None:
        if u >= self.nslots:
            _wait(stream, self.acked, u + 1 - self.nslots)

    def mark_written(self, u: int, stream) -> None:
        _write(stream, self.succ_posted, u + 1)


def enable_peer_access(device: int, peers: list[int]) -> None:
    """Map neighbours' memory on other GPUs (no-op for ranks that share this GPU)."""
    import cupy
    for p in set(peers) - {device}:
        if not cupy.cuda.runtime.deviceCanAccessPeer(device, p):
            raise RuntimeError(f"GPU {device} cannot access GPU {p} (no peer access)")
        try:
            cupy.cuda.runtime.deviceEnablePeerAccess(p)
        except cupy.cuda.runtime.CUDARuntimeError as e:  # already enabled is fine
            if "PeerAccessAlreadyEnabled" not in str(e):
                raise
