"""Slots in MPI shared memory, for ranks on one node: the host analogue of CUDA IPC.

One MPI shared-memory window over the node; each rank's segment holds a header and the
slots its predecessor writes into. The sender copies (or reduces) straight into the
receiver's slot, so a chunk crosses with one write, never a second copy inside MPI.

Header of each segment, each counter on its own 128-byte line:
    POSTED  chunks the predecessor has put into my slots   (written by the predecessor)
    ACKED   chunks of mine the successor has consumed      (written by the successor)
    CALLS   collective calls this rank has entered         (written by the rank; read by
            node peers only to name who is missing when a call times out)
Counters only grow, over the communicator's life. MPI_Win_sync orders the data and the
counter (it is a full memory barrier): sync before publishing, sync after observing.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ..wait import Waiter

HEADER = 4096
POSTED, ACKED, CALLS = 0, 16, 32  # int64 indices into the header, 128 bytes apart


class ShmWindow:
    def __init__(self, node_comm: MPI.Comm, nslots: int, slot_bytes: int, receives: bool,
                 header_bytes: int = HEADER):
        self.nslots, self.slot_bytes, self.header_bytes = nslots, slot_bytes, header_bytes
        size = header_bytes + (nslots * slot_bytes if receives else 0)
        info = MPI.Info.Create()
        info.Set("alloc_shared_noncontig", "true")
        self.win = MPI.Win.Allocate_shared(size, 1, info=info, comm=node_comm)
        info.Free()
        self.win.Lock_all(MPI.MODE_NOCHECK)
        self._segments: dict[int, np.ndarray] = {}
        mine = self.segment(node_comm.rank)
        mine[:header_bytes] = 0
        self.win.Sync()
        node_comm.Barrier()

    def segment(self, local_rank: int) -> np.ndarray:
        seg = self._segments.get(local_rank)
        if seg is None:
            buf, _ = self.win.Shared_query(local_rank)
            seg = self._segments[local_rank] = np.frombuffer(buf, np.uint8)
        return seg

    def header(self, local_rank: int) -> np.ndarray:
        return self.segment(local_rank)[:self.header_bytes].view(np.int64)

    def slots(self, local_rank: int) -> list[np.ndarray]:
        seg, b, h = self.segment(local_rank), self.slot_bytes, self.header_bytes
        return [seg[h + i * b:h + (i + 1) * b] for i in range(self.nslots)]

    def region(self, local_rank: int) -> np.ndarray:
        """All of a rank's slots as one byte array."""
        h = self.header_bytes
        return self.segment(local_rank)[h:h + self.nslots * self.slot_bytes]

    def sync(self) -> None:
        self.win.Sync()

    def close(self) -> None:
        if self.win != MPI.WIN_NULL:
            self._segments.clear()
            self.win.Unlock_all()
            self.win.Free()


class Typed:
    """Slots viewed as one dtype, cached per dtype (NumPy or device arrays)."""

    def __init__(self, slots: list):
        self.raw, self.cache = slots, {}

    def get(self, dtype) -> list:
        views = self.cache.get(dtype)
        if views is None:
            views = self.cache[dtype] = [s.view(dtype) for s in self.raw]
        return views


class ShmSend:
    direct = False  # the successor reads the slots: every chunk goes through one

    def __init__(self, win: ShmWindow, me: int, succ: int, waiter: Waiter, peer_name: str):
        self.win, self.waiter, self.peer = win, waiter, peer_name
        self.acked = win.header(me)[ACKED:ACKED + 1]
        self.posted = win.header(succ)[POSTED:POSTED + 1]
        self.slots = Typed(win.slots(succ))
        self.sent = 0

    def acquire(self, dtype) -> np.ndarray:
        need = self.sent - self.win.nslots + 1
        acked = self.acked
        self.waiter.until(lambda: acked[0] >= need,
                          lambda: f"waiting for {self.peer} to free a slot")
        return self.slots.get(dtype)[self.sent % self.win.nslots]

    def post(self, nbytes: int) -> None:
        self.win.sync()
        self.sent += 1
        self.posted[0] = self.sent

    def close(self) -> None:
        pass


class ShmRecv:
    direct = False

    def __init__(self, win: ShmWindow, me: int, pred: int, waiter: Waiter, peer_name: str):
        self.win, self.waiter, self.peer = win, waiter, peer_name
        self.posted = win.header(me)[POSTED:POSTED + 1]
        self.acked = win.header(pred)[ACKED:ACKED + 1]
        self.slots = Typed(win.slots(me))
        self.received = 0

    def begin(self, nchunks: int, into=None) -> None:
        pass

    def wait(self, dtype, unit: int = 0) -> np.ndarray:
        need = self.received + 1
        posted = self.posted
        self.waiter.until(lambda: posted[0] >= need,
                          lambda: f"waiting for data from {self.peer}")
        self.win.sync()
        return self.slots.get(dtype)[self.received % self.win.nslots]

    def release(self) -> None:
        self.win.sync()
        self.received += 1
        self.acked[0] = self.received

    def close(self) -> None:
        pass
