"""Ring links that cross nodes, for the cuda device: chunks go over MPI point-to-point,
staged through pinned host buffers (or straight from device memory when the MPI library is
CUDA-aware). The ends have the methods of ipc.py's, so ring/cuda/enqueue.py's per-chunk code is the
same on every link; what differs is that MPI needs the host, so the host waits here.

    sender    the kernel writes chunk u into device slot k = u % nslots; mark_written
              enqueues its copy into pinned buffer k and records an event; once the event
              has fired the host Isends buffer k (progress(), called at every wait).
    receiver  Irecvs are posted ahead into the pinned buffers; wait_written(u) waits on the
              host for chunk u, then enqueues its copy into device slot k; the buffer is
              posted again once that copy has finished.

MPI moves a message only while its ranks call MPI, so every wait of the communicator calls
both ends' progress() (Waiter.progress: Isend what is copied out, test the sends and
receives in flight), and a call's flush waits until MPI is done with its sends. Before, a
rank waiting on its GPU, which waited on its neighbour on this node, while the next node
waited for the rank's message, hung the ring wherever MPI moves a message only on its
sender's calls (tests/mpi/check_progress.py; one of the two causes of a GPU's timeouts at 6
processes on 3 emulated nodes, 2026-11-27; the other: enqueue.load_kernels).

With nslots buffers per end, the device-to-host copy of chunk u+1, the MPI transfer of
chunk u and the host-to-device copy of chunk u-1 overlap. A device slot is reused in stream
order (an event after its last copy), a pinned buffer only after its Isend completed or its
copy to the device finished (host checks). Every host wait is bounded by the call's deadline.
"""

from __future__ import annotations

import ctypes
import os
from collections import deque

import numpy as np
from mpi4py import MPI
from numba import cuda

from kernels.driver import event, fired, simulated

from ..wait import Waiter
from .mpi import TAG, cancel, poke, reap
from .slots import Slots

SIMULATED = simulated()

ENV_AWARE = "RING_CUDA_AWARE_MPI"


def _buffer(a):
    """What MPI is given for a device or pinned buffer."""
    if SIMULATED and hasattr(a, "_ary"):
        return a._ary
    return a


def cuda_aware() -> bool:
    """Whether MPI takes device pointers: RING_CUDA_AWARE_MPI=1/0 decides; otherwise the
    loaded MPI library's answer, and no when it gives none."""
    env = os.environ.get(ENV_AWARE)
    if env is not None:
        if env not in ("0", "1"):
            raise ValueError(f"{ENV_AWARE}: expected 0 or 1, got {env!r}")
        return env == "1"
    return bool(library_cuda_support())


def library_cuda_support() -> bool | None:
    """MPIX_Query_cuda_support() of the libmpi this process loaded (MPICH and Open MPI have
    it), or None where there is no such library or function."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "libmpi" in line.rsplit("/", 1)[-1]}
    except OSError:  # not Linux
        return None
    for path in sorted(libs):
        try:
            query = getattr(ctypes.CDLL(path), "MPIX_Query_cuda_support", None)
        except OSError:
            continue
        if query is not None:
            return bool(query())
    return None


def _pinned(nbytes: int):
    return cuda.pinned_array(nbytes, np.uint8)


class _StagedEnd:
    """What both ends hold: nslots device slots, the buffers MPI works on (pinned host
    buffers, or the device slots themselves when direct), one request per buffer."""

    def __init__(self, comm: MPI.Comm, peer_rank: int, nslots: int, slot_bytes: int,
                 waiter: Waiter, direct: bool):
        self.comm, self.peer_rank, self.waiter, self.direct = comm, peer_rank, waiter, direct
        self.peer = f"rank {peer_rank}"
        self.nslots = nslots
        self.dev = Slots(nslots, slot_bytes)
        self.host = self.dev.raw if direct else [_pinned(slot_bytes) for _ in range(nslots)]
        self.reqs: list[MPI.Request | None] = [None] * nslots

    def close(self) -> None:
        cancel(self.reqs)


class StagedOut(_StagedEnd):
    """To the successor on another node."""

    def __init__(self, comm: MPI.Comm, dest: int, nslots: int, slot_bytes: int,
                 waiter: Waiter, direct: bool):
        super().__init__(comm, dest, nslots, slot_bytes, waiter, direct)
        self.nbytes = [0] * nslots
        self.copied = [None] * nslots  # event: the last copy out of device slot k is done
        self.pending: deque = deque()  # (k, event, nbytes): copied out, not yet Isent
        self.sent = 0

    def view(self, u: int, storage, n: int):
        k = u % self.nslots
        self.nbytes[k] = n * np.dtype(storage).itemsize
        return self.dev.view(k, storage, n)

    def wait_freed(self, u: int, stream) -> None:
        k = u % self.nslots
        if self.direct:  # the device slot is the send buffer: its last Isend must be done
            self._free(k)
        ev = self.copied[k]
        if ev is not None:
            ev.wait(stream)

    def mark_written(self, u: int, stream) -> None:
        k = u % self.nslots
        nbytes = self.nbytes[k]
        if not self.direct:  # into pinned buffer k, once its last chunk has left
            self._free(k)
            if nbytes:
                self.dev.raw[k][:nbytes].copy_to_host(self.host[k][:nbytes], stream=stream)
        ev = event()
        ev.record(stream)
        self.copied[k] = ev
        self.pending.append((k, ev, nbytes))
        self.progress()

    def progress(self) -> None:
        """Isend, in order, every chunk whose copy out has finished; test the sends in
        flight (MPI moves them on meanwhile) and free those done."""
        while self.pending and fired(self.pending[0][1]):
            k, _, nbytes = self.pending.popleft()
            self.reqs[k] = self.comm.Isend([_buffer(self.host[k])[:nbytes], MPI.BYTE],
                                           self.peer_rank, TAG)
        reap(self.reqs)

    def _send_head(self) -> None:
        """Wait for the oldest chunk's copy out, and Isend it."""
        head = self.pending[0][1]
        self.waiter.until(lambda: fired(head), lambda: "waiting for the GPU to copy a chunk out")
        self.progress()

    def _free(self, k: int) -> None:
        """Wait until buffer k's last chunk has left (its Isend completed)."""
        while any(p[0] == k for p in self.pending):
            self._send_head()
        req = self.reqs[k]
        if req is not None:
            self.waiter.until(req.Test, lambda: f"waiting for {self.peer} to take a message")
            self.reqs[k] = None

    def flush(self) -> None:
        """The end of a call: Isend everything copied out, and wait until MPI is done with
        every send (none then waits for this rank's next MPI call)."""
        for k in range(self.nslots):
            self._free(k)


class StagedIn(_StagedEnd):
    """From the predecessor on another node."""

    def __init__(self, comm: MPI.Comm, source: int, nslots: int, slot_bytes: int,
                 waiter: Waiter, direct: bool):
        super().__init__(comm, source, nslots, slot_bytes, waiter, direct)
        self.busy = [None] * nslots  # event: the last use of buffer k is done
        self.status = MPI.Status()
        self.planned = self.posted = 0
        self.taken = 0

    def begin(self, nchunks: int) -> None:
        """This rank will take nchunks more chunks: post their receives as buffers allow."""
        self.planned += nchunks
        self._post()

    def progress(self) -> None:
        """Post the receives that buffers allow; ask MPI about one in flight and not yet
        complete (without completing it: wait_written reads its status), which moves the
        messages on."""
        self._post()
        poke(self.reqs)

    def _post(self) -> None:
        while self.posted < self.planned:
            k = self.posted % self.nslots
            if self.reqs[k] is not None or (self.busy[k] is not None and not fired(self.busy[k])):
                return
            self.busy[k] = None
            self.reqs[k] = self.comm.Irecv([_buffer(self.host[k]), MPI.BYTE], self.peer_rank, TAG)
            self.posted += 1

    def wait_written(self, u: int, stream) -> None:
        k = u % self.nslots

        def arrived() -> bool:
            self._post()
            return self.posted > u and self.reqs[k].Test(self.status)

        self.waiter.until(arrived, lambda: f"waiting for data from {self.peer}")
        self.reqs[k] = None
        nbytes = self.status.Get_count(MPI.BYTE)
        if not self.direct:
            if nbytes:
                self.dev.raw[k][:nbytes].copy_to_device(self.host[k][:nbytes], stream=stream)
            ev = event()
            ev.record(stream)
            self.busy[k] = ev

    def view(self, u: int, storage, n: int):
        return self.dev.view(u % self.nslots, storage, n)

    def mark_freed(self, u: int, stream) -> None:
        if self.direct:  # the device slot is the receive buffer: free once consumed
            ev = event()
            ev.record(stream)
            self.busy[u % self.nslots] = ev
        self._post()
