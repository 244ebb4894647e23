"""One round trip through node-shared memory: every rank posts into its own slot, then
reads everyone's. The agreement check rides in it (each rank's call record), and so does
the data of the one-shot algorithms: one exchange replaces the agreement's message round
and the collective's own.

One MPI shared-memory window over the node (every rank of the communicator on it). Each
rank's segment:

    header     ROUND1, ROUND2: rounds this rank has posted (call numbers; only grow),
               each counter on its own 128-byte line; PID, BASE: the rank's process id and
               its segment's address in its own memory (for cross-memory attach)
    2 x area   by call parity: [record: RECORD int64][data: cap bytes][result: cap bytes]

A rank writes call n's area n % 2 only after every peer has posted call n-1 (it waited for
them in call n-1), and a peer posts n-1 only after it has read everything of call n-2, the
last call that used that area. So two areas never let a fast rank overwrite what a slow
one still reads. MPI_Win_sync orders data and counters (sync before posting, after seeing).
"""

from __future__ import annotations

import os

import numpy as np
from mpi4py import MPI

from ..wait import Waiter
from . import cma

HEADER = 256
ROUND1, ROUND2 = 0, 16  # int64 indices, 128 bytes apart
PID, BASE = 24, 25  # int64 indices, the header's last line
RECORD = 16  # int64 fields of a call record (agreement.FIELDS and the bad flag fit)


class Exchange:
    def __init__(self, comm: MPI.Comm, cap: int, waiter: Waiter):
        """Collective over comm, whose ranks must share one node. cap: bytes of data (and
        of result) one rank can post per call."""
        self.comm, self.size, self.rank, self.waiter = comm, comm.size, comm.rank, waiter
        self.cap = cap
        self.area = RECORD * 8 + 2 * cap
        info = MPI.Info.Create()
        info.Set("alloc_shared_noncontig", "true")
        self.win = MPI.Win.Allocate_shared(HEADER + 2 * self.area, 1, info=info, comm=comm)
        info.Free()
        self.win.Lock_all(MPI.MODE_NOCHECK)
        self.segs = []
        for q in range(self.size):
            buf, _ = self.win.Shared_query(q)
            self.segs.append(np.frombuffer(buf, np.uint8))
        self.segs[self.rank][:HEADER] = 0
        self.heads = [s[:HEADER].view(np.int64) for s in self.segs]
        # the segments' addresses, for compiled code (host/compiled_round.py)
        self.bases = np.array([s.ctypes.data for s in self.segs], np.int64)
        self.seq = 0  # rounds posted so far (every rank posts every round, in order)
        self.heads[self.rank][PID] = os.getpid()
        self.heads[self.rank][BASE] = self.bases[self.rank]
        self.win.Sync()
        comm.Barrier()
        self.win.Sync()
        self.pids = [int(h[PID]) for h in self.heads]
        self.cma = self._probe()

    def _probe(self) -> str | None:
        """Why the ranks cannot read each other's memory by cross-memory attach (None: every
        rank can read every other's), the same answer on every rank: each reads every
        peer's header where that peer's own memory holds it (collective, at creation)."""
        why = None
        for q in range(self.size):
            if q != self.rank and why is None:
                head = self.heads[q][:BASE + 1].copy()
                why = cma.why_not(self.pids[q], int(head[BASE]), head)
                if why is not None:
                    why = f"rank {self.rank} cannot read rank {q}'s memory ({why})"
        whys = [w for w in self.comm.allgather(why) if w is not None]
        return whys[0] if whys else None

    def close(self) -> None:
        if self.win != MPI.WIN_NULL:
            self.segs, self.heads, self.bases = [], [], self.bases[:0]
            self.win.Unlock_all()
            self.win.Free()

    # -- one slot ---------------------------------------------------------------------------
    def _base(self, call: int) -> int:
        return HEADER + (call % 2) * self.area

    def record(self, q: int, call: int) -> np.ndarray:
        b = self._base(call)
        return self.segs[q][b:b + RECORD * 8].view(np.int64)

    def data(self, q: int, call: int, dtype, n: int) -> np.ndarray:
        b = self._base(call) + RECORD * 8
        return self.segs[q][b:b + self.cap].view(dtype)[:n]

    def result(self, q: int, call: int, dtype, n: int) -> np.ndarray:
        b = self._base(call) + RECORD * 8 + self.cap
        return self.segs[q][b:b + self.cap].view(dtype)[:n]

    def put(self, call: int, x: np.ndarray) -> None:
        """x into this rank's data of round `call`, where the peers read it (before the
        round is posted)."""
        self.data(self.rank, call, x.dtype, x.size)[...] = x

    # -- rounds -----------------------------------------------------------------------------
    def next_round(self) -> int:
        """The number of the next round, counted as begun."""
        self.seq += 1
        return self.seq

    def post(self, call: int, counter: int = ROUND1) -> None:
        """This rank's slot of round `counter` for call `call` is written: publish it."""
        self.win.Sync()
        self.heads[self.rank][counter] = call

    def wait(self, call: int, counter: int = ROUND1, what: str = "to join the call") -> None:
        """Until every rank has posted round `counter` of exchange round `call`."""
        heads = self.heads
        for q in range(self.size):
            if q == self.rank:
                continue
            h = heads[q]
            self.waiter.until(lambda: h[counter] >= call, lambda: f"waiting for rank {q} {what}")
        self.win.Sync()

    def behind(self, call: int) -> list[int]:
        """Ranks that have not posted call `call` (for timeout messages)."""
        return [q for q in range(self.size) if q != self.rank and self.heads[q][ROUND1] < call]
