"""Cross-memory attach: one process reads another's memory with one copy, by Linux's
process_vm_readv (the single-copy path MPICH and Open MPI take for large messages between
processes of a node). No library of ours wraps it (mpi4py uses it only inside MPI's own
calls), so this is the C library's function through ctypes, which lets go of the GIL
while it copies.

The kernel allows it where the reader may ptrace the other process (the same user, and
no Yama ptrace_scope or container policy against it): transport/exchange.py probes that
once for every pair of ranks on a node and every rank agrees on the answer.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

import numpy as np

from ..errors import RingError
from ..schedule import Collective

C = Collective
# in place, the collectives whose out is the x a rank posts and a peer reads: a copy is
# posted instead (not a reduce's: in one phase only its root reads, and only from its own x)
WRITES_WHAT_IT_POSTS = (C.ALLREDUCE, C.ALLTOALL)
# a communicator's scratch buffers for cma (its full path and its kept calls): the posted
# copy, a reduce's block on a rank that is not its root (two phases), a fold's pieces
POSTED, PARTIAL, PARTS = 0, 1, 2
CLOSING = "to finish reading its peers' arrays (cma)"  # the closing round's wait
REDUCED = "to reduce its block of the all-reduce or reduce (cma)"  # the first phase's (two phases)


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _readv():
    """libc's process_vm_readv, or None where there is none (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        f = libc.process_vm_readv
    except (OSError, AttributeError):
        return None
    f.restype = ctypes.c_ssize_t
    f.argtypes = [ctypes.c_int, ctypes.POINTER(_Iovec), ctypes.c_ulong,
                  ctypes.POINTER(_Iovec), ctypes.c_ulong, ctypes.c_ulong]
    return f


_READV = _readv()


def read(pid: int, address: int, into: np.ndarray) -> None:
    """into's bytes = the into.nbytes bytes at `address` in process `pid` (into
    contiguous). OSError where the kernel refuses or the memory is not mapped there."""
    if _READV is None:
        raise OSError("cross-memory attach: no process_vm_readv on this system")
    n = into.nbytes
    if n == 0:
        return
    here, done = into.ctypes.data, 0
    local, remote = _Iovec(), _Iovec()
    while done < n:  # the kernel may copy less than asked (at most ~2 GiB a call)
        local.base, local.len = here + done, n - done
        remote.base, remote.len = address + done, n - done
        got = _READV(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got <= 0:
            err = ctypes.get_errno() if got < 0 else 0
            raise OSError(err, f"cross-memory attach: reading {n - done} bytes of process "
                               f"{pid} at {address + done:#x}: "
                               f"{os.strerror(err) if err else 'nothing copied'}")
        done += got


def why_not(pid: int, address: int, want: np.ndarray) -> str | None:
    """Why this process cannot read process pid's memory (None: it can): a read of
    want.nbytes bytes at `address` there must give want's bytes."""
    got = np.empty_like(want)
    try:
        read(pid, address, got)
    except OSError as e:
        return str(e)
    if got.tobytes() != want.tobytes():
        return f"cross-memory attach: process {pid}'s memory read back other bytes"
    return None


def posted(x: np.ndarray, copy, collective: Collective, in_place: bool, rank: int,
           size: int) -> np.ndarray:
    """What a rank posts of a call's x (1-D): x, or in place where it writes x, x copied
    into copy (copy() gives the buffer: scratch), but for an all-to-all only the blocks the
    peers read (every block but this rank's own)."""
    if not (in_place and collective in WRITES_WHAT_IT_POSTS):
        return x
    into = copy()
    if collective is C.ALLTOALL:
        b = x.size // size
        np.copyto(into[:rank * b], x[:rank * b])
        np.copyto(into[(rank + 1) * b:], x[(rank + 1) * b:])
    else:
        np.copyto(into, x)
    return into


def raise_failures(ex, seq: int) -> None:
    """After every rank posted round seq, the one after its reads (its record's first
    field: 0, or the errno of a read that failed, -1 for a short one): RingError naming
    every rank whose read failed, if any."""
    failed = {q: e for q in range(ex.size) if (e := int(ex.record(q, seq)[0]))}
    if failed:
        raise RingError("cma: reading a peer's memory by cross-memory attach failed on "
                        + ", ".join(f"rank {q} ({os.strerror(e) if e > 0 else 'short'})"
                                    for q, e in failed.items()))
