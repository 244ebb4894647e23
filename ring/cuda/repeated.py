"""Repeated calls on the kernel path (path="kernel"): the per-call fast path.

A training loop calls a collective on the same buffers thousands of times. The first call
of a signature goes the whole way (call.py's checks, the tuning rules, the plan, the bound
launch of kernel_path.KernelPath.bind); what it worked out is kept here: its agreement
record, its algorithm, what it returns and its launch. A later call of the same signature
agrees on the kept record (with this call's number, so a rank whose call differs is named
exactly as on the full path, on every rank) and fires the launch: no argument checks, no
views, no plan, no packing.

The signature is every argument as passed but the arrays' contents: the collective, op,
root, chunk_bytes, algorithm and dtype, and of x and out their type, address, shape,
strides and dtype (where they are is part of it: the launch was bound to that memory).
Only calls that return what they were given (out, or x for a broadcast) and put nothing
but the kernel on the GPU are kept: not out=None (a new array each call), not in-place
all-to-all (a copy of x each call), not compressed. With async_op=True a kept call returns
a Work, as the full path does (gradient buckets call so, on the same buffers every step).
ring.Group keeps its calls the same way (group_key: every rank's Known, no agreement).
ring/host/repeated.py is the host's counterpart.
"""

from __future__ import annotations

from kernels.arrays import address

from ..call import NOTHING, OUT, X
from ..schedule import Collective
from .arrays import SIMULATED
from .streams import current, handle

LIMIT = 64  # signatures a communicator keeps (the oldest goes first)


def remember(kept: dict, k, value, limit: int = LIMIT) -> None:
    """kept[k] = value, dropping the oldest entry first when kept holds `limit`."""
    if len(kept) >= limit:
        del kept[next(iter(kept))]
    kept[k] = value


def _hashable(k):
    """k, or None where an argument in it cannot be hashed (the full path then says what
    is wrong with it)."""
    try:
        hash(k)
    except TypeError:
        return None
    return k


def _numba(a):  # Numba's device arrays (the simulator's too)
    return type(a), address(a), a.shape, a.strides, a.dtype


def _cupy(a):
    return type(a), a.data.ptr, a.shape, a.strides, a.dtype


def _torch(a):
    return type(a), a.data_ptr(), a.shape, a.stride(), a.dtype


def _interface(a):
    cai = a.__cuda_array_interface__
    return type(a), cai["data"][0], tuple(cai["shape"]), cai.get("strides"), cai["typestr"]


def _reader(cls):
    """How to read where an array of class cls is, cheaply (no interface dict built)."""
    mod = cls.__module__
    if SIMULATED or hasattr(cls, "device_ctypes_pointer"):
        return _numba
    if mod.startswith("cupy"):
        return _cupy
    if mod.startswith("torch"):
        return _torch
    return _interface


_READERS: dict = {}


def where(a):
    """(type, address, shape, strides, dtype) of a device array; None where it has no
    array interface this path reads cheaply (then the call takes the full path)."""
    if a is None:
        return ()
    read = _READERS.get(type(a))
    if read is None:
        read = _READERS[type(a)] = _reader(type(a))
    try:
        return read(a)
    except (AttributeError, TypeError, KeyError, ValueError, RuntimeError):
        return None  # (PyTorch's bfloat16 tensors have no interface: the full path)


def stream_of(stream, x) -> int | None:
    """The handle of the stream a kept call is ordered on (streams.of); None where the
    stream argument is bad (then the full path raises on this rank, MismatchError on the
    others)."""
    try:
        return current(x) if stream is None else handle(stream)  # (streams.of)
    except (TypeError, ValueError, AttributeError):
        return None


def _signature(collective: Collective, x, out, op, root, chunk_bytes, algorithm, dtype):
    """The call's signature, not yet known to hash (None: it cannot be one). The collective
    goes in as its value: an Enum member's hash is a Python call, an int's is not."""
    if out is None and collective is not Collective.BROADCAST:
        return None
    wx, wo = where(x), where(out)
    if wx is None or wo is None:
        return None
    return (collective.value, op, root, chunk_bytes, algorithm, dtype, wx, wo)


def key(collective: Collective, x, out, op, root, chunk_bytes, algorithm, dtype):
    """The call's signature, or None if it cannot be one."""
    return _hashable(_signature(collective, x, out, op, root, chunk_bytes, algorithm, dtype))


def lookup(kept: dict, collective: Collective, x, out, op, root, chunk_bytes, algorithm,
           dtype) -> Known | None:
    """The Known kept for this call's signature (key's), None where there is none or it
    cannot be one: the per-call lookup, its signature hashed once (by the dict)."""
    try:
        return kept.get(_signature(collective, x, out, op, root, chunk_bytes, algorithm,
                                   dtype))
    except TypeError:  # (an argument that does not hash: the full path says what is wrong)
        return None


class Known:
    """A signature's kept call: the agreement record, the algorithm, what it returns;
    agreement: the record's compiled round (ring/host/repeated.py's Agreement), set by the
    Communicator where every rank is on one node (None: agreed as on the full path)."""

    __slots__ = ("record", "algorithm", "returns", "launch", "name", "log", "agreement",
                 "valid")

    def __init__(self, record: dict, algorithm: str, returns: int, launch, name: str,
                 log: dict):
        self.record, self.algorithm, self.returns = record, algorithm, returns
        self.launch, self.name, self.log = launch, name, log
        self.agreement = None
        # a launch bound to registered memory: whether its registrations still hold (the
        # memory still the allocation registered, registered.py), asked before each call
        self.valid = getattr(launch, "valid", None)

    def result(self, x, out):
        return out if self.returns == OUT else x if self.returns == X else None


def group_key(collective: Collective, xs, outs, op, root, dtype, size: int):
    """A ring.Group call's signature (every rank's arrays), or None if it cannot be one."""
    if outs is None or len(xs) != size or len(outs) != size:
        return None
    wx, wo = tuple(where(x) for x in xs), tuple(where(o) for o in outs)
    if None in wx or None in wo:
        return None
    return _hashable((collective, op, root, dtype, wx, wo))


def learnt(c, record: dict, x, out, launch, rank: int) -> Known | None:
    """What a full-path call c of (x, out), agreed as record, leaves for its signature
    (None: nothing: it returned a new array, or its launch read a copy of x). Its
    RING_DEBUG=INFO line is the full path's, marked "path": "fast"."""
    if launch is None or c.wire is not None or not c.count:
        return None
    if c.collective is Collective.ALLTOALL and c.in_place:
        return None
    returns = OUT if c.result is out and out is not None else X if c.result is x else \
        NOTHING if c.result is None else None
    if returns is None:
        return None
    log = {"rank": rank, "call": 0, "collective": str(c.collective), "algorithm": c.algorithm,
           "count": c.count, "dtype": c.dtype.name,
           **({"op": str(c.op)} if c.collective.reduces else {}),
           **({"root": c.root} if c.collective.rooted else {}), "path": "fast"}
    return Known(dict(record), c.algorithm, returns, launch, str(c.collective), log)
