"""IPC memory kept for the process's lifetime: segments reused, neighbours' kept mapped.

A communicator's segment (ipc.py) is exported by IPC and mapped by its neighbours. Freeing
it at close and mapping a new one for the next communicator is what the CUDA driver does
not take well: under MPS (ranks sharing a GPU) the H100 refused to map a neighbour's new
segment with CUDA_ERROR_ALREADY_MAPPED a few communicators into a run of
tests/mpi/check_cuda.py (without MPS the same runs passed; results/h100/README.md). The
likely reading, not proven on the GPU: the neighbour's earlier segments had been freed and
their addresses handed out again while a mapping of the old memory stood in the way. UCX,
MSCCL++ and PyTorch keep a cache of opened handles for such reasons. So neither side lets
go (and ipc.py gives every segment whole 2 MiB pages, so that no two share one):

  Spares   a closed segment's memory waits here for the next segment of its size, which
           zeroes it (ipc.clear: no stale counter or LL word) and exports the
           same IPC handle again. Memory held: the most segments of each size a process
           had open at once on each GPU, and the segments of broken communicators, which
           are never given back (a neighbour's stuck kernel may still write into them)
           but are not freed either: nothing made here is freed before the process ends.
  Opened   each neighbour's handle is opened once per process and stays mapped; a later
           segment that reuses the memory arrives with the same handle and finds it here.

Both are pure bookkeeping over the functions they are given (allocate, clear, open), so
tests/test_keep.py checks them without a GPU.
"""

from __future__ import annotations

import pickle
import threading


class Spares:
    """Memory blocks by device and size, each with what was made for it once (its IPC
    handle)."""

    def __init__(self, allocate, clear):
        self._allocate, self._clear = allocate, clear
        self._free: dict[tuple, list] = {}
        self.made: list = []  # every block, so that none is ever freed (above)
        self._lock = threading.Lock()  # ring.Group's ranks may close from several threads

    def take(self, device: int, nbytes: int) -> "Block":
        """A block of nbytes on device (the current one, which allocate and clear use), all
        zero: a spare one cleared, else a new one."""
        with self._lock:
            spare = self._free.get((device, nbytes))
            block = spare.pop() if spare else None
        if block is None:
            block = Block(self._allocate(nbytes), device, nbytes)
            with self._lock:
                self.made.append(block)
            return block
        self._clear(block.mem)
        return block

    def give(self, block: "Block") -> None:
        with self._lock:
            self._free.setdefault((block.device, block.nbytes), []).append(block)

    def held(self) -> int:
        """Bytes waiting for reuse."""
        with self._lock:
            return sum(b.nbytes for blocks in self._free.values() for b in blocks)


class Block:
    def __init__(self, mem, device: int, nbytes: int):
        self.mem, self.device, self.nbytes = mem, device, nbytes
        self.handle = None  # made on first export, then sent as it is every time


class Opened:
    """Neighbours' handles, each opened once: the same handle (equal when pickled, as it
    travels) gives the same mapping."""

    def __init__(self):
        self._mapped: dict[bytes, object] = {}
        self._lock = threading.Lock()

    def open(self, handle):
        key = pickle.dumps(handle)
        with self._lock:
            mem = self._mapped.get(key)
            if mem is None:
                mem = self._mapped[key] = handle.open()
        return mem

    def __len__(self) -> int:
        return len(self._mapped)
