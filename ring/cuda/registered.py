"""comm.register(x) on the cuda device: every rank's x mapped in every rank's process, so
the two-shot kernel (twoshot_kernel.py) reads the inputs and writes the outputs in place,
without staging them through its areas. The bookkeeping is transport/registry.py's; the
driver's answers come from transport/ipc.py on a GPU and transport/simipc.py under Numba's
simulator (where only arrays made by simipc.shared_array can be mapped, as only device
memory can on a GPU).

register is collective over the communicator: every rank passes its own buffer (sizes and
offsets may differ) and every rank gets the same answer, True where every rank's buffer is
now mapped by every other rank. It is False, on every rank, where any rank's cannot be
(memory that legacy CUDA IPC cannot export, such as a pool of cuMemCreate memory; a rank
whose process holds another rank too; the driver refusing a mapping): the buffers are then
staged, as unregistered ones always are. A call finds its arrays' registrations again every
time (registry.Registry.find: the allocation must still be the one registered; a kept call
asks the same of the ones it was bound to, still()).
"""

from __future__ import annotations

import os
import socket

from kernels.arrays import address

from ..agreement import raise_refused, refusal
from ..transport import ipc
from ..transport.registry import PeerMaps, Registry
from .arrays import SIMULATED

if SIMULATED:
    from ..transport import simipc as side
else:
    side = ipc

PEERS = PeerMaps(side.open_mapping, side.close_mapping)  # the process's, kept (registry.py)


def registry() -> Registry:
    return Registry(side.describe)


def register(comm, reg: Registry, x, device: int, why_not: str | None, error) -> bool:
    """Collective over comm (the communicator's ranks, one node): map every rank's x in
    every rank. error: this rank's bad argument (raised here, MismatchError on the others).
    why_not: why this rank cannot (the kernel path not running, say): False everywhere."""
    me = (socket.gethostname(), os.getpid())
    alloc = handle = None
    if error is None and why_not is None and x.size:
        ptr, nbytes = address(x), x.size * x.dtype.itemsize
        alloc = side.describe(ptr)
        if alloc is not None:
            try:
                handle = side.export(alloc)
            except Exception:  # noqa: BLE001 - this memory is staged, on every rank
                alloc = None
    everyone = comm.allgather((refusal(error), me, device, alloc, handle))
    raise_refused([e[0] for e in everyone], error, "register")
    if any(a is None for _, _, _, a, _ in everyone) or \
            len({p for _, p, _, _, _ in everyone}) < comm.size:
        return False
    views, mapped = [], True
    try:
        ipc.enable_peer_access(device, [d for _, _, d, _, _ in everyone])
        for q, (_, who, _, a, h) in enumerate(everyone):
            views.append(side.whole(a) if q == comm.rank else PEERS.get(who, a, h)[1])
    except Exception:  # noqa: BLE001 - this rank cannot map them: staged, on every rank
        mapped = False
    if not all(comm.allgather(mapped)):
        return False
    reg.add(alloc, ptr, ptr + nbytes, views)
    return True


def find(reg: Registry | None, a, itemsize: int):
    """(the registration holding array a, a's element offset in this rank's allocation),
    or (None, -1) where a is not registered (or is no longer the registered memory)."""
    if not reg or a is None or not a.size:
        return None, -1
    ptr = address(a)
    r = reg.find(ptr, a.size * a.dtype.itemsize)
    if r is None or (ptr - r.mine.base) % itemsize:
        return None, -1
    return r, (ptr - r.mine.base) // itemsize


def still(reg: Registry, held: list):
    """A check that the registrations a launch was bound to hold yet: held, (array,
    registration) pairs; each array's memory must still be found in its registration (the
    same allocation: registry.Registry.find, one driver query each)."""
    spans = [(address(a), a.size * a.dtype.itemsize, r) for a, r in held]

    def valid() -> bool:
        return all(reg.find(ptr, nbytes) is r for ptr, nbytes, r in spans)
    return valid
