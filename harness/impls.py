"""Implementations behind one call interface, so one timing routine serves them all.

An implementation is made once per sweep with the world communicator and the buffers'
device, and called as impl(coll, x, out, op, dtype, root) on that device's arrays (dtype is
the logical dtype: bfloat16 and float8 arrays are integer bits on a GPU); sync() waits until
every call made so far has finished. impl.bind(coll, x, out, op, dtype, root) returns the
call as a function of no arguments, with what does not change from call to call (the
options, the in-place test, the MPI or NCCL datatype, the pointers) worked out once, as
nccl-tests sets up its arguments before its timed loop: that Python is the harness's, not
the library's, and cost 5-7 µs a call on the CI machine, ring's and MPI's alike.
available(coll, dtype, op, in_place, nbytes) returns None, or the reason it cannot run that
case, which the table prints; an implementation that cannot run at all says why in
`unavailable`. Collectives that only move data run any dtype as its bits (unsigned integers
of its width), so MPI and NCCL carry bfloat16 and float8 there.
"""

from __future__ import annotations

import os
from functools import partial

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


class Impl:
    """An implementation defines bind (then a call is its bound call, made at once) or
    __call__ (then bind is the whole call, each time)."""

    def __call__(self, coll: str, x, out, op: str, dtype, root: int = 0):
        self.bind(coll, x, out, op, dtype, root)()

    def bind(self, coll: str, x, out, op: str, dtype, root: int = 0):
        """The call as a function of no arguments (the module's docstring)."""
        return partial(self, coll, x, out, op, dtype, root)


class Ring(Impl):
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

    def bind(self, coll: str, x, out, op: str, dtype, root: int = 0):
        """The call as a user writes it: the options named only where they differ from the
        defaults (algorithm "auto", the arrays' dtype, op "sum", root 0); the harness's
        earlier calls named them all, which took the fast path's slower check of options
        (0.3-0.6 µs a call on the CI machine)."""
        kw = {}
        if self.algorithm != "auto":
            kw["algorithm"] = self.algorithm
        if (x if x is not None else out).dtype != np.dtype(dtype):  # (a GPU's bfloat16 bits)
            kw["dtype"] = np.dtype(dtype).name
        if self.compression:
            kw["compression"] = self.compression
        c = self.comm
        if COLLECTIVES[coll].reduces and op != "sum":
            kw["op"] = op
        if coll in ("reduce", "gather", "scatter") and root != 0:
            kw["root"] = root
        if coll != "broadcast":
            return partial(getattr(c, coll), x, out, **kw)
        if out is x or c.rank != root:
            return partial(c.broadcast, out, root=root, **kw)

        def broadcast():  # in place only: out of place, the root copies x first
            out[...] = x
            c.broadcast(out, root=root, **kw)
        return broadcast

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

    bind = Impl.bind  # (its call is the whole of __call__)

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


class Mpi(Impl):
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

    def bind(self, coll: str, x, out, op: str, dtype, root: int = 0):
        in_place = _in_place(coll, x, out)
        layout = COLLECTIVES[coll].layout
        reduces = COLLECTIVES[coll].reduces
        if not reduces:  # moved as bits: any dtype, bfloat16 and float8 too
            x, out = _bits(x), _bits(out)
        c, mop, at_root = self.comm, _MPI_OPS[op], self.comm.rank == root
        divide = op == "avg" and reduces and (coll != "reduce" or at_root)
        mpi = self._mpi(coll, c, mop, root, in_place, at_root, self.staged)
        writes = at_root or coll not in ("reduce", "gather")  # (out is not defined off the root)

        def staged():
            hx = self._host(x, "x")
            ho = hx if (in_place and layout == "same") else \
                self._host(out, "out", fetch=in_place and layout == "join")
            mpi(hx, ho)
            if divide:
                np.divide(ho, c.size, out=ho)
            if writes:
                out.set(ho)

        def average():
            mpi(x, out)
            np.divide(out, c.size, out=out)
        return staged if self.staged else average if divide else partial(mpi, x, out)

    @staticmethod
    def _mpi(coll: str, c, mop, root: int, in_place: bool, at_root: bool, staged: bool):
        """The MPI call of coll on the host buffers (hx, ho) it is given."""
        if coll == "broadcast":
            def broadcast(hx, ho):
                if ho is not hx and at_root:
                    ho[...] = hx
                c.Bcast(ho, root=root)
            return broadcast
        if coll == "reduce":
            return lambda hx, ho: c.Reduce(MPI.IN_PLACE if in_place and at_root else hx, ho,
                                           mop, root=root)
        if coll == "gather":
            return lambda hx, ho: c.Gather(MPI.IN_PLACE if in_place and at_root else hx,
                                           ho if at_root else None, root=root)
        if coll == "scatter":
            def scatter(hx, ho):
                c.Scatter(hx if at_root else None,
                          MPI.IN_PLACE if in_place and at_root else ho, root=root)
                if in_place and at_root and staged:  # (the root's block is in hx)
                    ho[...] = hx[root * ho.size:(root + 1) * ho.size]
            return scatter
        if coll == "alltoall":
            return lambda hx, ho: c.Alltoall(MPI.IN_PLACE if in_place else hx, ho)
        if coll == "allreduce":
            return lambda hx, ho: c.Allreduce(MPI.IN_PLACE if in_place else hx, ho, mop)
        if coll == "reduce_scatter":
            def reduce_scatter(hx, ho):
                if in_place:  # MPI's in-place reduce-scatter works on the whole input buffer
                    c.Reduce_scatter_block(MPI.IN_PLACE, hx, mop)
                    ho[...] = hx[:ho.size]
                else:
                    c.Reduce_scatter_block(hx, ho, mop)
            return reduce_scatter
        return lambda hx, ho: c.Allgather(MPI.IN_PLACE if in_place else hx, ho)

    def sync(self):
        self.bufs.sync()

    def close(self):
        self.comm.Free()


class Nccl(Impl):
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

    def bind(self, coll: str, x, out, op: str, dtype, root: int = 0):
        stream = self.cp.cuda.get_current_stream().ptr
        dt = np.dtype(dtype)
        t = self.types[dt] if COLLECTIVES[coll].reduces else self.bits[dt.itemsize]
        xp, op_, c = x.data.ptr, out.data.ptr, self.comm
        if coll == "allreduce":
            return partial(c.allReduce, xp, op_, x.size, t, self.ops[op], stream)
        if coll == "reduce_scatter":
            return partial(c.reduceScatter, xp, op_, out.size, t, self.ops[op], stream)
        if coll == "allgather":
            return partial(c.allGather, xp, op_, x.size, t, stream)
        if coll == "broadcast":
            return partial(c.broadcast, xp, op_, x.size, t, root, stream)
        if coll == "reduce":
            return partial(c.reduce, xp, op_, x.size, t, self.ops[op], root, stream)
        # gather, scatter, alltoall: grouped send / recv, as nccl-tests runs them
        return partial(self._p2p, coll, xp, op_, x, out, t, root, stream)

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
