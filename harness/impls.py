"""Implementations behind one call interface, so one timing routine serves them all.

An implementation is made once per sweep with the world communicator and the buffers'
device, and called as impl(coll, x, out, op, dtype) on that device's arrays (dtype is the
logical dtype: bfloat16 arrays are uint16 bits on a GPU); sync() waits until
every call made so far has finished. available(dtype, op) returns None, or the reason it
cannot run that case, which the table prints; an implementation that cannot run at all
says why in `unavailable`.
"""

from __future__ import annotations

import os

import numpy as np
from mpi4py import MPI

import ring
from ring.ops import bfloat16

_MPI_OPS = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX, "avg": MPI.SUM}


def _mpi_name() -> str:
    """'MPICH 5.0.2', 'Open MPI v4.1.6', ... from the library's version string."""
    first = " ".join(MPI.Get_library_version().splitlines()[0].split(",")[0].split())
    return first.replace(" Version:", "")


def _address(a) -> int:
    iface = getattr(a, "__cuda_array_interface__", None) or a.__array_interface__
    return iface["data"][0]


def _in_place(coll: str, x, out) -> bool:
    """As NCCL places in-place buffers: out is x (all-reduce, broadcast, reduce), out is x's block r
    (reduce-scatter), x is out's block r (all-gather)."""
    xa, oa = _address(x), _address(out)
    if coll in ("allreduce", "broadcast", "reduce"):
        return xa == oa
    lo, hi = (xa, xa + x.nbytes) if coll == "reduce_scatter" else (oa, oa + out.nbytes)
    inner = oa if coll == "reduce_scatter" else xa
    return lo <= inner < hi


class Ring:
    """ring.Communicator; `algorithm` as its option: auto, ring (flat), hierarchical."""

    def __init__(self, world: MPI.Comm, bufs, algorithm: str = "auto", **tuning):
        self.bufs = bufs
        self.name = {"auto": "ring", "ring": "ring-flat", "hierarchical": "ring-hier"}[algorithm]
        self.comm = ring.Communicator(world, device=bufs.name, algorithm="auto", **tuning)
        self.unavailable = None if self.comm.device == bufs.name else \
            f"ring has no {bufs.name} device yet (it resolved to {self.comm.device})"
        try:
            self.algorithm = self.comm._resolve(algorithm)
        except ValueError as e:
            self.algorithm, self.unavailable = algorithm, str(e)
        self.label = f"ring ({self.comm.device}, {self.algorithm})"

    def rooted(self, coll: str) -> None:
        """Broadcast and reduce run as a chain on the flat ring: "auto" takes it, an explicit
        two-level request cannot run."""
        if self.algorithm == "hierarchical" and self.unavailable is None:
            if self.name == "ring":
                self.algorithm, self.label = "ring", f"ring ({self.comm.device}, ring)"
            else:
                self.unavailable = f"{coll} runs as a chain on the flat ring only"

    def available(self, dtype, op) -> str | None:
        return self.unavailable

    def __call__(self, coll: str, x, out, op: str, dtype, root: int = 0):
        kw = {"algorithm": self.algorithm, "dtype": np.dtype(dtype).name}
        if coll == "allreduce":
            self.comm.allreduce(x, out=out, op=op, **kw)
        elif coll == "reduce_scatter":
            self.comm.reduce_scatter(x, out=out, op=op, **kw)
        elif coll == "allgather":
            self.comm.allgather(x, out=out, **kw)
        elif coll == "broadcast":  # in place only: out of place, the root copies x first
            if out is not x and self.comm.rank == root:
                out[...] = x
            self.comm.broadcast(out, root=root, **kw)
        else:
            self.comm.reduce(x, out=out, op=op, root=root, **kw)

    def sync(self):
        self.bufs.sync()

    def close(self):
        self.comm.close()


class Mpi:
    """mpi4py: Allreduce / Reduce_scatter_block / Allgather. The mpich wheel is not
    CUDA-aware, so GPU buffers are staged through pinned host memory, and the label says so."""

    name = "mpi"

    def __init__(self, world: MPI.Comm, bufs, **tuning):
        self.comm, self.bufs = world.Dup(), bufs
        self.staged = bufs.name != "host"
        self.label = f"mpi ({_mpi_name()}" + (", GPU buffers staged through host)" if self.staged else ")")
        self.unavailable = None
        self._pinned: dict[tuple, np.ndarray] = {}

    def available(self, dtype, op) -> str | None:
        if np.dtype(dtype) == bfloat16:
            return "the MPI library has no bfloat16 datatype"
        return None

    def _host(self, a, key, fetch=True):
        """The host buffer MPI works on: `a` itself, or a pinned copy of a GPU array."""
        if not self.staged:
            return a
        import cupyx
        buf = self._pinned.get(key)
        if buf is None or buf.nbytes != a.nbytes or buf.dtype != a.dtype:
            buf = self._pinned[key] = cupyx.empty_pinned(a.shape, a.dtype)
        if fetch:
            a.get(out=buf)
        return buf

    def __call__(self, coll: str, x, out, op: str, dtype, root: int = 0):
        in_place = _in_place(coll, x, out)
        hx = self._host(x, "x")
        ho = hx if (in_place and coll in ("allreduce", "broadcast", "reduce")) else \
            self._host(out, "out", fetch=in_place and coll == "allgather")
        if coll == "broadcast":
            if ho is not hx and self.comm.rank == root:
                ho[...] = hx
            self.comm.Bcast(ho, root=root)
        elif coll == "reduce":
            mine = MPI.IN_PLACE if in_place and self.comm.rank == root else hx
            self.comm.Reduce(mine, ho, _MPI_OPS[op], root=root)
            if self.comm.rank != root:
                return  # out is not defined off the root
        elif coll == "allreduce":
            self.comm.Allreduce(MPI.IN_PLACE if in_place else hx, ho, _MPI_OPS[op])
        elif coll == "reduce_scatter":
            if in_place:  # MPI's in-place reduce-scatter works on the whole input buffer
                self.comm.Reduce_scatter_block(MPI.IN_PLACE, hx, _MPI_OPS[op])
                ho[...] = hx[:ho.size]
            else:
                self.comm.Reduce_scatter_block(hx, ho, _MPI_OPS[op])
        else:
            self.comm.Allgather(MPI.IN_PLACE if in_place else hx, ho)
        if op == "avg":
            np.divide(ho, self.comm.size, out=ho)
        if self.staged:
            out.set(ho)

    def sync(self):
        self.bufs.sync()

    def close(self):
        self.comm.Free()


class Nccl:
    """NCCL through cupy.cuda.nccl, bootstrapped over MPI (GPU buffers only).

    Several ranks on one GPU: NCCL before 2.30 refuses them ("Duplicate GPU detected"); from
    2.30 NCCL_MULTI_RANK_GPU_ENABLE=1 allows it. With --nccl-hostid each rank gets its own
    NCCL_HOSTID instead, so NCCL takes the ranks for separate hosts and talks over its socket
    transport: a real but very different baseline, labelled so."""

    name = "nccl"
    MULTI_RANK_GPU = 23000  # first NCCL version with NCCL_MULTI_RANK_GPU_ENABLE

    def __init__(self, world: MPI.Comm, bufs, *, hostid: bool = False, **tuning):
        self.bufs, self.comm, self.unavailable = bufs, None, None
        self.label = "nccl"
        if bufs.name != "cuda":
            self.unavailable = "NCCL needs GPU buffers (--device cuda)"
            return
        import cupy as cp
        from cupy.cuda import nccl
        self.cp, self.nccl = cp, nccl
        version = nccl.get_version()
        vtext = f"{version // 10000}.{version // 100 % 100}.{version % 100}"
        node = world.Split_type(MPI.COMM_TYPE_SHARED)
        shared = node.size > cp.cuda.runtime.getDeviceCount()
        node.Free()
        how = ""
        if shared and version >= self.MULTI_RANK_GPU:
            os.environ["NCCL_MULTI_RANK_GPU_ENABLE"] = "1"
            how = ", several ranks per GPU (NCCL_MULTI_RANK_GPU_ENABLE=1)"
        elif shared and hostid:
            os.environ["NCCL_HOSTID"] = f"ring-harness-rank-{world.rank}"
            how = ", ranks sharing a GPU as separate hosts over sockets (NCCL_HOSTID per rank)"
        elif shared:
            self.unavailable = (f"ranks share a GPU and NCCL {vtext} refuses that (needs 2.30 "
                                "for NCCL_MULTI_RANK_GPU_ENABLE); --nccl-hostid runs it over sockets")
        self.label = f"nccl {vtext}{how}"
        ok = self.unavailable is None
        if not all(world.allgather(ok)):
            self.unavailable = self.unavailable or "NCCL is unavailable on another rank"
            return
        uid = world.bcast(nccl.get_unique_id() if world.rank == 0 else None)
        self.comm = nccl.NcclCommunicator(world.size, uid, world.rank)
        self.size = world.size
        self.types = {np.dtype(np.float16): nccl.NCCL_FLOAT16, bfloat16: nccl.NCCL_BFLOAT16,
                      np.dtype(np.float32): nccl.NCCL_FLOAT32, np.dtype(np.float64): nccl.NCCL_FLOAT64,
                      np.dtype(np.int32): nccl.NCCL_INT32, np.dtype(np.int64): nccl.NCCL_INT64,
                      np.dtype(np.uint8): nccl.NCCL_UINT8}
        self.ops = {"sum": nccl.NCCL_SUM, "prod": nccl.NCCL_PROD, "min": nccl.NCCL_MIN,
                    "max": nccl.NCCL_MAX, "avg": getattr(nccl, "NCCL_AVG", 4)}

    def available(self, dtype, op) -> str | None:
        return self.unavailable

    def __call__(self, coll: str, x, out, op: str, dtype, root: int = 0):
        stream = self.cp.cuda.get_current_stream().ptr
        t = self.types[np.dtype(dtype)]
        if coll == "allreduce":
            self.comm.allReduce(x.data.ptr, out.data.ptr, x.size, t, self.ops[op], stream)
        elif coll == "reduce_scatter":
            self.comm.reduceScatter(x.data.ptr, out.data.ptr, out.size, t, self.ops[op], stream)
        elif coll == "allgather":
            self.comm.allGather(x.data.ptr, out.data.ptr, x.size, t, stream)
        elif coll == "broadcast":
            self.comm.broadcast(x.data.ptr, out.data.ptr, x.size, t, root, stream)
        else:
            self.comm.reduce(x.data.ptr, out.data.ptr, x.size, t, self.ops[op], root, stream)

    def sync(self):
        self.bufs.sync()

    def close(self):
        if self.comm is not None:
            self.comm.destroy()


IMPLS = {
    "ring": Ring,  # the algorithm "auto" picks
    "ring-flat": lambda world, bufs, **kw: Ring(world, bufs, algorithm="ring", **kw),
    "ring-hier": lambda world, bufs, **kw: Ring(world, bufs, algorithm="hierarchical", **kw),
    "mpi": Mpi,
    "nccl": Nccl,
}
