"""Implementations behind one call interface, so one timing routine serves them all.

An implementation is made once per sweep with the world communicator and the buffers'
device, and called as impl(coll, x, out, op, dtype, root) on that device's arrays (dtype is
the logical dtype: bfloat16 and float8 arrays are integer bits on a GPU); sync() waits until
every call made so far has finished. available(coll, dtype, op, in_place, nbytes) returns
None, or the reason it cannot run that case, which the table prints; an implementation that cannot
run at all says why in `unavailable`. Collectives that only move data run any dtype as its
bits (unsigned integers of its width), so MPI and NCCL carry bfloat16 and float8 there.
"""

from __future__ import annotations

import os

import numpy as np
from mpi4py import MPI

import ring
from ring.algorithms import BY_NAME
from ringtypes import bfloat16, packed_bytes

from . import nccl_lib
from .collectives import COLLECTIVES
from .model import TUNE_NAMES

_MPI_OPS = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX, "avg": MPI.SUM}


def _bits(a):
    """a's elements as unsigned integers of their width (NumPy or CuPy, same memory)."""
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _mpi_name() -> str:
    """'MPICH 5.0.2', 'Open MPI v4.1.6', ... from the library's version string."""
    first = " ".join(MPI.Get_library_version().splitlines()[0].split(",")[0].split())
    return first.replace(" Version:", "")


def _address(a) -> int:
    iface = getattr(a, "__cuda_array_interface__", None) or a.__array_interface__
    return iface["data"][0]


def _in_place(coll: str, x, out) -> bool:
    """As NCCL and MPI place in-place buffers: out is x (all-reduce, broadcast, reduce,
    all-to-all), out is x's block r (reduce-scatter, scatter), x is out's block r
    (all-gather, gather)."""
    xa, oa = _address(x), _address(out)
    layout = COLLECTIVES[coll].layout
    if layout == "same":
        return xa == oa
    lo, hi = (xa, xa + x.nbytes) if layout == "split" else (oa, oa + out.nbytes)
    inner = oa if layout == "split" else xa
    return lo <= inner < hi


class Ring:
    """ring.Communicator running one `algorithm` (its option: "auto" or a name of
    ring.algorithms.BY_NAME). last_algorithm() names what the latest call ran, which for auto
    depends on the size (the table's algo column)."""

    NAMES = {"auto": "ring", **TUNE_NAMES}

    def __init__(self, world: MPI.Comm, bufs, algorithm: str = "auto", name: str | None = None,
                 compression: str | None = None, register: bool = False, **tuning):
        self.bufs, self.algorithm, self.compression = bufs, algorithm, compression
        self.register, self.registered = register, []
        self.registration = {"cases": 0, "registered": 0}  # -R: cases tried, cases mapped
        self.name = name or self.NAMES.get(algorithm, f"ring-{algorithm}")
        self.comm = ring.Communicator(world, device=bufs.name, algorithm="auto", **tuning)
        self.unavailable = None if self.comm.device == bufs.name else \
            f"ring has no {bufs.name} device yet (it resolved to {self.comm.device})"
        self.label = f"ring ({self.comm.device}, {algorithm})"
        # the cuda device's ring data path, as the communicator resolved it ("auto": the
        # kernel where every rank shares one GPU and can run it, the stream path elsewhere)
        alg = BY_NAME.get(algorithm)
        via = alg.via.get(self.comm.device) if alg is not None else None
        if via:
            self.label = f"ring ({self.comm.device}, {algorithm}, {via})"
        elif self.comm.device == "cuda" and (alg is None or alg.walks_ring):
            resolved = self.comm.path
            how = "persistent kernel" if resolved == "kernel" else f"stream path {resolved!r}"
            self.label = f"ring ({self.comm.device}, {algorithm}, {how})"
        if compression:
            self.label = f"ring ({self.comm.device}, {compression} on the wire, float32 sums)"
            if self.comm.device != "host":
                self.unavailable = f"compression runs on the host device only (not yet on " \
                                   f"{self.comm.device})"
        if self.comm.device == "cuda" and not compression:
            self.label = self.label[:-1] + (", blocking calls)" if self.comm.blocking else
                                            ", stream-ordered calls)")
        if register and self.comm.device == "cuda":
            self.label = self.label[:-1] + ", registered buffers)"
        if tuning.get("path") == "kernel":
            if self.comm.path != "kernel":
                self.unavailable = "path='kernel' runs on the cuda device, on one node (MPS when " \
                                   "processes share a GPU); here it fell back to the stream path"

    def runs(self, coll: str) -> None:
        """An algorithm that cannot run this collective here at any size is left out, with
        its reason (two-level on one node, an all-reduce algorithm for broadcast, ...)."""
        if self.compression and coll not in ("allreduce", "reduce_scatter"):
            self.unavailable = "compression: all-reduce and reduce-scatter only"
        if self.unavailable is None and self.algorithm != "auto":
            why = self.comm.why_not(self.algorithm, coll, 0)
            if why:
                self.unavailable = f"{self.algorithm!r} cannot run here: {why}"

    def available(self, coll: str, dtype, op, in_place: bool, nbytes: int = 0) -> str | None:
        if self.compression and not self.unavailable and (np.dtype(dtype) != np.float32
                                                          or op not in ("sum", "avg")):
            return "compression: float32 sum and avg only"
        if self.unavailable or self.algorithm == "auto":
            return self.unavailable
        return self.comm.why_not(self.algorithm, coll, nbytes)

    def last_algorithm(self) -> str | None:
        return self.comm.last_algorithm

    def __call__(self, coll: str, x, out, op: str, dtype, root: int = 0):
        kw = {"algorithm": self.algorithm, "dtype": np.dtype(dtype).name}
        if self.compression:
            kw["compression"] = self.compression
        c = self.comm
        if coll == "allreduce":
            c.allreduce(x, out=out, op=op, **kw)
        elif coll == "reduce_scatter":
            c.reduce_scatter(x, out=out, op=op, **kw)
        elif coll == "allgather":
            c.allgather(x, out=out, **kw)
        elif coll == "broadcast":  # in place only: out of place, the root copies x first
            if out is not x and c.rank == root:
                out[...] = x
            c.broadcast(out, root=root, **kw)
        elif coll == "reduce":
            c.reduce(x, out=out, op=op, root=root, **kw)
        elif coll == "gather":
            c.gather(x, out=out, root=root, **kw)
        elif coll == "scatter":
            c.scatter(x, out=out, root=root, **kw)
        else:
            c.alltoall(x, out=out, **kw)

    def prepare(self, x, out) -> None:
        """--register (as nccl-tests' -R 1): x and out registered before the case's calls
        (comm.register, collective: every rank runs the same cases in the same order)."""
        if self.register and self.comm.device == "cuda":
            arrays = [x] if out is None or out is x else [x, out]
            self.registered = [a for a in arrays if self.comm.register(a)]
            self.registration["cases"] += 1
            self.registration["registered"] += len(self.registered) == len(arrays)

    def release(self) -> None:
        for a in self.registered:
            self.comm.deregister(a)
        self.registered = []

    def sync(self):
        self.comm.synchronize()  # the calls left running on the GPU, their errors raised
        self.bufs.sync()

    def close(self):
        self.comm.close()


class Int8(Ring):
    """ring's int8 wire (GradientBuckets(compression="int8")'s), as an all-reduce of float32
    sum / avg: each rank rounds x to int8 with a scale per 4096 values, the messages are
    all-gathered, and every rank widens and sums them in rank order (ring/quantize.py on the
    host, kernels/quantize.py on a GPU). Lossy, so the check holds it bit for bit to those
    rules applied to every rank's input on the host (expected), and the error column gives
    its distance from the float32 sum."""

    def __init__(self, world: MPI.Comm, bufs, **tuning):
        super().__init__(world, bufs, name="ring-int8", **tuning)
        self.compression = "int8"  # the table's error column
        self.label = f"ring ({self.comm.device}, int8 all-gathered, a scale per 4096 values)"
        self._buffers: dict = {}

    def runs(self, coll: str) -> None:
        if coll != "allreduce":
            self.unavailable = "int8: all-reduce only"

    def available(self, coll: str, dtype, op, in_place: bool, nbytes: int = 0) -> str | None:
        if self.unavailable is None and (np.dtype(dtype) != np.float32 or op not in ("sum", "avg")):
            return "int8: float32 sum and avg only"
        return self.unavailable

    def __call__(self, coll: str, x, out, op: str, dtype, root: int = 0):
        n = x.size
        if n not in self._buffers:
            m = packed_bytes(n)
            self._buffers = {n: (self.bufs.empty(m, np.uint8),
                                 self.bufs.empty(self.comm.size * m, np.uint8))}
        packed, gathered = self._buffers[n]
        if self.bufs.name == "host":
            from ring.training import quantize
            quantize.quantize(x, packed)
            self.comm.allgather(packed, out=gathered)
            quantize.dequantize_sum(gathered.reshape(self.comm.size, -1), n, out, op == "avg")
        else:
            from kernels import quantize
            quantize.quantize(packed, x)
            self.comm.allgather(packed, out=gathered)
            quantize.dequantize_sum(out, gathered, avg=op == "avg")

    def expected(self, coll, rank: int, k: int, in_count: int, dtype, op: str, seed: int = 0,
                 root: int = 0) -> np.ndarray:
        """The int8 rules' result for every rank's check input, on the host."""
        from ring.training import quantize
        msgs = np.empty((k, packed_bytes(in_count)), np.uint8)
        for q in range(k):
            quantize.quantize(coll.input(q, in_count, dtype, op, seed), msgs[q])
        want = np.empty(in_count, np.float32)
        quantize.dequantize_sum(msgs, in_count, want, op == "avg")
        return want


class Mpi:
    """mpi4py: Allreduce, Reduce_scatter_block, Allgather, Bcast, Reduce, Gather, Scatter,
    Alltoall. The mpich wheel is not CUDA-aware, so GPU buffers are staged through pinned
    host memory, and the label says so."""

    name = "mpi"

    def __init__(self, world: MPI.Comm, bufs, **tuning):
        self.comm, self.bufs = world.Dup(), bufs
        self.staged = bufs.name != "host"
        self.label = f"mpi ({_mpi_name()}" + (", GPU buffers staged through host)" if self.staged else ")")
        self.unavailable = None
        self._pinned: dict[tuple, np.ndarray] = {}

    def available(self, coll: str, dtype, op, in_place: bool, nbytes: int = 0) -> str | None:
        if COLLECTIVES[coll].reduces and np.dtype(dtype) == bfloat16:
            return "the MPI library has no bfloat16 datatype to reduce"
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
        layout = COLLECTIVES[coll].layout
        if not COLLECTIVES[coll].reduces:  # moved as bits: any dtype, bfloat16 and float8 too
            x, out = _bits(x), _bits(out)
        hx = self._host(x, "x")
        ho = hx if (in_place and layout == "same") else \
            self._host(out, "out", fetch=in_place and layout == "join")
        at_root = self.comm.rank == root
        if coll == "broadcast":
            if ho is not hx and at_root:
                ho[...] = hx
            self.comm.Bcast(ho, root=root)
        elif coll == "reduce":
            mine = MPI.IN_PLACE if in_place and at_root else hx
            self.comm.Reduce(mine, ho, _MPI_OPS[op], root=root)
            if not at_root:
                return  # out is not defined off the root
        elif coll == "gather":
            self.comm.Gather(MPI.IN_PLACE if in_place and at_root else hx,
                             ho if at_root else None, root=root)
            if not at_root:
                return
        elif coll == "scatter":
            self.comm.Scatter(hx if at_root else None,
                              MPI.IN_PLACE if in_place and at_root else ho, root=root)
            if in_place and at_root and ho is not out:  # staged: the root's block is in hx
                ho[...] = hx[root * ho.size:(root + 1) * ho.size]
        elif coll == "alltoall":
            self.comm.Alltoall(MPI.IN_PLACE if in_place else hx, ho)
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
        if op == "avg" and COLLECTIVES[coll].reduces:
            np.divide(ho, self.comm.size, out=ho)
        if self.staged:
            out.set(ho)

    def sync(self):
        self.bufs.sync()

    def close(self):
        self.comm.Free()


class Nccl:
    """NCCL through cupy.cuda.nccl, bootstrapped over MPI (GPU buffers only), on the
    nvidia-nccl wheel's library where it is installed (harness/nccl_lib.py).

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
        where = nccl_lib.preload()  # the nvidia-nccl wheel's library (>= 2.30), if there
        import cupy as cp
        from cupy.cuda import nccl
        self.cp, self.nccl = cp, nccl
        version = nccl.get_version()
        vtext = f"{version // 10000}.{version // 100 % 100}.{version % 100}"
        self.version, self.library = vtext, where
        node = world.Split_type(MPI.COMM_TYPE_SHARED)
        per_gpu = -(-node.size // cp.cuda.runtime.getDeviceCount())
        shared = per_gpu > 1
        node.Free()
        how = ""
        if shared and version >= self.MULTI_RANK_GPU:
            os.environ["NCCL_MULTI_RANK_GPU_ENABLE"] = "1"
            how = ", several ranks per GPU (NCCL_MULTI_RANK_GPU_ENABLE=1"
            # every rank's blocks resident at once: at 4 ranks under MPS NCCL 2.30.7's own
            # grid hung at 2 MiB, NCCL_MAX_CTAS=16 ran (an H200); 64 at 2 ranks ran
            if per_gpu > 2 and "NCCL_MAX_CTAS" not in os.environ:
                os.environ["NCCL_MAX_CTAS"] = str(max(1, 64 // per_gpu))
            if "NCCL_MAX_CTAS" in os.environ:
                how += f", NCCL_MAX_CTAS={os.environ['NCCL_MAX_CTAS']}"
            how += ")"
        elif shared and hostid:
            os.environ["NCCL_HOSTID"] = f"ring-harness-rank-{world.rank}"
            how = ", ranks sharing a GPU as separate hosts over sockets (NCCL_HOSTID per rank)"
        elif shared:
            self.unavailable = (f"ranks share a GPU and NCCL {vtext} refuses that (needs 2.30 "
                                "for NCCL_MULTI_RANK_GPU_ENABLE); --nccl-hostid runs it over sockets")
        self.label = f"nccl {vtext} ({where}){how}"
        ok = self.unavailable is None
        if not all(world.allgather(ok)):
            self.unavailable = self.unavailable or "NCCL is unavailable on another rank"
            return
        uid = world.bcast(nccl.get_unique_id() if world.rank == 0 else None)
        self.comm = nccl.NcclCommunicator(world.size, uid, world.rank)
        self.size, self.rank = world.size, world.rank
        self.types = {np.dtype(np.float16): nccl.NCCL_FLOAT16, bfloat16: nccl.NCCL_BFLOAT16,
                      np.dtype(np.float32): nccl.NCCL_FLOAT32, np.dtype(np.float64): nccl.NCCL_FLOAT64,
                      np.dtype(np.int8): nccl.NCCL_INT8, np.dtype(np.uint8): nccl.NCCL_UINT8,
                      np.dtype(np.int32): nccl.NCCL_INT32, np.dtype(np.uint32): nccl.NCCL_UINT32,
                      np.dtype(np.int64): nccl.NCCL_INT64, np.dtype(np.uint64): nccl.NCCL_UINT64}
        # data that only moves travels as bits; NCCL has no 16-bit integer type, and
        # copying float16 copies its bits
        self.bits = {1: nccl.NCCL_UINT8, 2: nccl.NCCL_FLOAT16, 4: nccl.NCCL_UINT32,
                     8: nccl.NCCL_UINT64}
        self.ops = {"sum": nccl.NCCL_SUM, "prod": nccl.NCCL_PROD, "min": nccl.NCCL_MIN,
                    "max": nccl.NCCL_MAX, "avg": getattr(nccl, "NCCL_AVG", 4)}

    def available(self, coll: str, dtype, op, in_place: bool, nbytes: int = 0) -> str | None:
        if self.unavailable:
            return self.unavailable
        if COLLECTIVES[coll].reduces and np.dtype(dtype) not in self.types:
            return f"NCCL has no {np.dtype(dtype).name} reductions"
        if coll == "alltoall" and in_place:
            return "NCCL has no in-place all-to-all (nccl-tests does not check it either)"
        return None

    def __call__(self, coll: str, x, out, op: str, dtype, root: int = 0):
        stream = self.cp.cuda.get_current_stream().ptr
        dt = np.dtype(dtype)
        t = self.types[dt] if COLLECTIVES[coll].reduces else self.bits[dt.itemsize]
        xp, op_ = x.data.ptr, out.data.ptr
        if coll == "allreduce":
            self.comm.allReduce(xp, op_, x.size, t, self.ops[op], stream)
        elif coll == "reduce_scatter":
            self.comm.reduceScatter(xp, op_, out.size, t, self.ops[op], stream)
        elif coll == "allgather":
            self.comm.allGather(xp, op_, x.size, t, stream)
        elif coll == "broadcast":
            self.comm.broadcast(xp, op_, x.size, t, root, stream)
        elif coll == "reduce":
            self.comm.reduce(xp, op_, x.size, t, self.ops[op], root, stream)
        else:  # gather, scatter, alltoall: grouped send / recv, as nccl-tests runs them
            self._p2p(coll, xp, op_, x, out, t, root, stream)

    def _p2p(self, coll, xp, op_, x, out, t, root, stream):
        k, me, nccl = self.size, self.rank, self.nccl
        block = (x.size if coll == "gather" else out.size if coll == "scatter" else x.size // k)
        nbytes = block * x.itemsize
        nccl.groupStart()
        if coll == "gather":
            self.comm.send(xp, block, t, root, stream)
            if me == root:
                for r in range(k):
                    self.comm.recv(op_ + r * nbytes, block, t, r, stream)
        elif coll == "scatter":
            if me == root:
                for r in range(k):
                    self.comm.send(xp + r * nbytes, block, t, r, stream)
            self.comm.recv(op_, block, t, root, stream)
        else:
            for r in range(k):
                self.comm.send(xp + r * nbytes, block, t, r, stream)
                self.comm.recv(op_ + r * nbytes, block, t, r, stream)
        nccl.groupEnd()

    def sync(self):
        self.bufs.sync()

    def close(self):
        if self.comm is not None:
            self.comm.destroy()


IMPLS = {
    "ring": Ring,  # the algorithm "auto" picks
    "ring-flat": lambda world, bufs, **kw: Ring(world, bufs, algorithm="ring", **kw),
    "ring-hier": lambda world, bufs, **kw: Ring(world, bufs, algorithm="hierarchical", **kw),
    "ring-kernel": lambda world, bufs, **kw: Ring(world, bufs, name="ring-kernel", path="kernel", **kw),
    "ring-stream": lambda world, bufs, **kw: Ring(world, bufs, name="ring-stream", path="stream", **kw),
    **{f"ring-{a}": (lambda a: lambda world, bufs, **kw: Ring(world, bufs, algorithm=a, **kw))(a)
       for a in BY_NAME if a not in TUNE_NAMES},
    **{f"ring-{c}": (lambda c: lambda world, bufs, **kw: Ring(world, bufs, name=f"ring-{c}",
                                                              compression=c, **kw))(c)
       for c in ("bf16", "fp16")},
    "ring-int8": Int8,
    "mpi": Mpi,
    "nccl": Nccl,
}
