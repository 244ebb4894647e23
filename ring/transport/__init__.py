"""Transports: how a chunk crosses from a rank to its ring successor, host and GPU alike.

A ring link is a pair of ends. Inside a node the receiver's slots are in memory both ranks
map; across nodes the chunks go as MPI messages. Each kind of end has the same few verbs as
the others of its device, so an executor never knows how bytes cross:

host ends (NumPy chunks, ring/host/executor.py)      GPU ends (device chunks on a stream,
                                                      ring/cuda/enqueue.py)
    sender:   slot = send.acquire(dtype)                 out.wait_freed(u, stream)
              send.post(nbytes)                          slot = out.view(u, storage, n)
                                                         out.mark_written(u, stream)
    receiver: recv.begin(nchunks)                        in_.begin(nchunks)
              slot = recv.wait(dtype)                    in_.wait_written(u, stream)
              recv.release()                             slot = in_.view(u, storage, n)
                                                         in_.mark_freed(u, stream)

    inside a node   shm.py: ShmSend / ShmRecv, slots   ipc.py: OutEnd / InEnd, slots in a
                    in an MPI shared-memory window     GPU segment mapped by CUDA IPC, ordered
                                                       by stream memory operations (simipc.py:
                                                       the same in MPI shared memory, for
                                                       Numba's simulator)
    across nodes    mpi.py: MpiSend / MpiRecv, MPI     staged.py: StagedOut / StagedIn, MPI
                    point-to-point (direct from and   through pinned host memory (or device
                    into the arrays where allowed)     memory, for a CUDA-aware MPI)

`ends()` chooses, for both devices. Chunks are numbered in order over the communicator's
life; each end counts its own. Also here: exchange.py (one round through node-shared
memory: the agreement record and the one-shot algorithms' data), messages.py (whole buffers
as MPI messages), keep.py (GPU segments kept for reuse), slots.py (GPU slots and their
events), atomic.py (acquire / release loads and stores for compiled code), cma.py (one
process reading another's memory by cross-memory attach: the cma algorithm's single copy).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol


class HostSend(Protocol):
    direct: bool  # MPI: may send a chunk from the caller's arrays (post_from)

    def acquire(self, dtype) -> Any: ...
    def post(self, nbytes: int) -> None: ...
    def close(self) -> None: ...


class HostRecv(Protocol):
    direct: bool  # MPI: may receive a chunk into the caller's arrays (begin(into=...))

    def begin(self, nchunks: int, into=None) -> None: ...
    def wait(self, dtype, unit: int = 0) -> Any: ...
    def release(self) -> None: ...
    def close(self) -> None: ...


class GpuOut(Protocol):
    def wait_freed(self, u: int, stream) -> None: ...
    def view(self, u: int, storage, n: int) -> Any: ...
    def mark_written(self, u: int, stream) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class GpuIn(Protocol):
    def begin(self, nchunks: int) -> None: ...
    def wait_written(self, u: int, stream) -> None: ...
    def view(self, u: int, storage, n: int) -> Any: ...
    def mark_freed(self, u: int, stream) -> None: ...
    def close(self) -> None: ...


@dataclass
class Kind:
    """How to make one kind of end of a device: inbound(pred) and outbound(succ), given
    the neighbour's rank."""

    inbound: Callable[[int], Any]
    outbound: Callable[[int], Any]


def ends(topo, rank: int, size: int, near: Kind, far: Kind) -> tuple[Any, Any]:
    """(inbound from the predecessor, outbound to the successor) of `rank`'s ring: the
    `near` kind to a neighbour on this node (memory both map), the `far` kind across nodes
    (MPI). The one place that chooses, for the host and the GPU alike."""
    pred, succ = (rank - 1) % size, (rank + 1) % size
    inbound = (near if topo.same_node(pred, rank) else far).inbound(pred)
    outbound = (near if topo.same_node(rank, succ) else far).outbound(succ)
    return inbound, outbound
