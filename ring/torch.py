"""torch.distributed on ring's collectives.

    import ring.torch                                  # registers the backend "ring"
    torch.distributed.init_process_group("ring", init_method="file:///tmp/rendezvous",
                                         rank=MPI.COMM_WORLD.rank,
                                         world_size=MPI.COMM_WORLD.size)
    model = DistributedDataParallel(model)             # gradients all-reduced by ring

or, lighter, only DDP's gradient all-reduce on ring (the process group may be gloo or NCCL):

    model.register_comm_hook(ring.Communicator(), ring.torch.allreduce_hook)

ring runs on MPI ranks, so processes are started with mpiexec and torch's rank r must be
MPI rank r of MPI.COMM_WORLD (checked when the group is made). A group holds one
ring.Communicator per device kind its tensors live on: "host" for CPU tensors (NumPy views
of the tensors' memory), "cuda" for CUDA tensors (through __cuda_array_interface__; made on
the first CUDA call, by every rank of the group at once as torch's collectives are called).
all_reduce of a CPU tensor runs behind the caller on the host communicator's progress thread
(ring/progress.py), so DDP's bucket all-reduces overlap its backward pass; its Work completes
when the call has run. Every other call runs to completion before it returns: on CUDA the
torch stream is synchronised first, and ring's own stream has finished when the call returns.

Collectives: all_reduce (SUM, PRODUCT, MIN, MAX, AVG), broadcast, reduce, all_gather,
all_gather_into_tensor, reduce_scatter, reduce_scatter_tensor, gather, scatter,
all_to_all_single with equal splits, barrier. The bitwise ops and PREMUL_SUM, send/recv and
uneven all_to_all raise. Wrong arguments raise on every rank of the group (ring's agreement),
as everywhere in ring.
"""

import datetime

import ml_dtypes
import numpy as np
import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _create_work_from_future
from torch.futures import Future

from .errors import MismatchError

BACKEND = "ring"

_OPS = {dist.ReduceOp.SUM: "sum", dist.ReduceOp.PRODUCT: "prod", dist.ReduceOp.MIN: "min",
        dist.ReduceOp.MAX: "max", dist.ReduceOp.AVG: "avg"}


def _op(reduce_op) -> str:
    """ring's name for a torch ReduceOp; the ones ring lacks keep their own lower-case
    name, which ring's argument check rejects on every rank (a ValueError naming it)."""
    for k, v in _OPS.items():
        if reduce_op == k:
            return v
    for name in ("BAND", "BOR", "BXOR", "PREMUL_SUM"):
        if reduce_op == getattr(dist.ReduceOp, name):
            return name.lower()
    return str(reduce_op)


def _array(t: torch.Tensor):
    """What ring takes for tensor t: a NumPy view of a CPU tensor's memory, the tensor
    itself on CUDA (ring/cuda/arrays.py views bfloat16 as its bits)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"ring: expected a torch.Tensor, got {type(t).__name__}")
    if t.is_cuda:
        return t
    if t.device.type != "cpu":
        raise TypeError(f"ring: tensors on {t.device.type} are not supported (cpu, cuda)")
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _done(result) -> dist.Work:
    f = Future()
    f.set_result(result)
    return _create_work_from_future(f)


class _Behind(dist._Work):
    """torch's Work for a ring call still running on the progress thread: wait() raises
    its error (a Work made from a future would drop it), get_future() is what DDP chains on."""

    def __init__(self, work, result):
        super().__init__()
        self._work, self._future = work, Future()
        work._on_done(lambda _, e: self._future.set_exception(e) if e is not None
                      else self._future.set_result(result))

    def wait(self, timeout=None) -> bool:
        self._work.wait()
        return True

    def is_completed(self) -> bool:
        return self._work.is_completed()

    def get_future(self):
        return self._future


def _mpi_comm(ranks: list[int], group_rank: int, world: int):
    """MPI.COMM_WORLD, or the sub-communicator of `ranks` (torch's global ranks, in group
    order), after checking that torch's ranks are MPI's."""
    from mpi4py import MPI
    w = MPI.COMM_WORLD
    me = ranks[group_rank]
    if w.size != world or w.rank != me:
        raise ValueError(
            f"ring: the torch backend runs on MPI ranks; start the processes with mpiexec so "
            f"that torch's rank r is MPI rank r (here torch rank {me} of {world}, MPI rank "
            f"{w.rank} of {w.size})")
    if ranks == list(range(w.size)):
        return w
    return w.Create_group(w.group.Incl(ranks))


# (no `from __future__ import annotations`: DDP reads the hook's return annotation as an object)


class ProcessGroup(dist.ProcessGroup):
    """A torch.distributed process group whose collectives are ring's."""

    def __init__(self, mpi_comm, rank: int, size: int, timeout: float):
        super().__init__(rank, size)
        from .communicator import Communicator
        self._mpi, self._timeout = mpi_comm, timeout
        self._comms = {"host": Communicator(mpi_comm, device="host", timeout=timeout)}

    def getBackendName(self) -> str:
        return BACKEND

    def _comm(self, t: torch.Tensor):
        kind = "cuda" if t.is_cuda else "host"
        if kind not in self._comms:
            from .communicator import Communicator
            self._comms[kind] = Communicator(self._mpi, device=kind, timeout=self._timeout)
        if kind == "cuda":
            torch.cuda.current_stream(t.device).synchronize()  # the inputs are written
        return self._comms[kind]

    def _agree(self, error: str | None) -> None:
        """Raise on every rank when any rank found its arguments wrong (checks torch's
        argument structure, which ring's own agreement does not see)."""
        bad = np.array([error is not None], np.uint8)
        self._comms["host"].allreduce(bad, out=bad, op="max")
        if error is not None:
            raise ValueError(f"ring: {error}")
        if bad[0]:
            raise MismatchError("ring: another rank passed wrong arguments to this collective")

    # each method: torch's argument lists in, a finished Work out

    def allreduce(self, tensors, opts):
        """On CPU tensors behind the caller, on the host communicator's progress thread
        (so DDP's bucket all-reduces overlap its backward pass); the Work completes there."""
        op = _op(opts.reduceOp)
        if len(tensors) == 1 and not tensors[0].is_cuda:
            x = _array(tensors[0])
            return _Behind(self._comm(tensors[0]).allreduce(x, out=x, op=op,
                                                            async_op=True), tensors)
        for t in tensors:
            x = _array(t)
            self._comm(t).allreduce(x, out=x, op=op)
        return _done(tensors)

    def allreduce_coalesced(self, tensors, opts):
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts):
        for t in tensors:
            x = _array(t)
            self._comm(t).broadcast(x, root=opts.rootRank)
        return _done(tensors)

    def reduce(self, tensors, opts):
        op = _op(opts.reduceOp)
        for t in tensors:
            x = _array(t)
            self._comm(t).reduce(x, out=x, op=op, root=opts.rootRank)
        return _done(tensors)

    def all_gather_single(self, out, x, opts):
        a, o = _array(x), _array(out)
        self._comm(x).allgather(a, out=o)
        return _done([out])

    def allgather(self, outs, xs, opts):
        self._agree(_blocks(outs, xs, self.size(), "output tensor list"))
        for out, x in zip(outs, xs):
            flat = x.new_empty((self.size() * x.numel(),))
            self.all_gather_single(flat, x.contiguous(), opts)
            for r, o in enumerate(out):
                o.copy_(flat[r * x.numel():(r + 1) * x.numel()].view_as(o))
        return _done(outs)

    def reduce_scatter_single(self, out, x, opts):
        a, o = _array(x), _array(out)
        self._comm(x).reduce_scatter(a, out=o, op=_op(opts.reduceOp))
        return _done([out])

    def reduce_scatter(self, outs, xs, opts):
        self._agree(_blocks(xs, outs, self.size(), "input tensor list"))
        for out, x in zip(outs, xs):
            flat = torch.cat([t.reshape(-1) for t in x])
            self.reduce_scatter_single(out, flat, opts)
        return _done(outs)

    def gather(self, outs, xs, opts):
        root = opts.rootRank
        here = self.rank() == root
        self._agree(_blocks(outs, xs, self.size(), "gather list") if here else None)
        for i, x in enumerate(xs):
            a = _array(x.contiguous())
            flat = x.new_empty((self.size() * x.numel(),)) if here else None
            o = _array(flat) if here else None
            self._comm(x).gather(a, out=o, root=root)
            if here:
                for r, t in enumerate(outs[i]):
                    t.copy_(flat[r * x.numel():(r + 1) * x.numel()].view_as(t))
        return _done(outs)

    def scatter(self, outs, xs, opts):
        root = opts.rootRank
        here = self.rank() == root
        self._agree(_blocks(xs, outs, self.size(), "scatter list") if here else None)
        for i, out in enumerate(outs):
            o = _array(out)
            a = _array(torch.cat([t.reshape(-1) for t in xs[i]])) if here else None
            self._comm(out).scatter(a, out=o, root=root)
        return _done(outs)

    def all_to_all_single(self, out, x, out_splits, in_splits, opts):
        k = self.size()
        even = [x.shape[0] // k] * k if x.dim() else []
        uneven = any(s and list(s) != even for s in (out_splits, in_splits))
        self._agree("all_to_all_single: ring runs equal splits only" if uneven else None)
        a, o = _array(x), _array(out)
        self._comm(x).alltoall(a, out=o)
        return _done([out])

    def alltoall(self, outs, xs, opts):
        self._agree(_blocks([xs], [outs[0]] if outs else [], self.size(), "input tensor list")
                    or _blocks([outs], [xs[0]] if xs else [], self.size(), "output tensor list"))
        flat = torch.empty((sum(t.numel() for t in outs),), dtype=outs[0].dtype,
                           device=outs[0].device)
        self.all_to_all_single(flat, torch.cat([t.reshape(-1) for t in xs]), [], [], opts)
        n = outs[0].numel()
        for r, o in enumerate(outs):
            o.copy_(flat[r * n:(r + 1) * n].view_as(o))
        return _done(outs)

    # the names of torch releases before 2.10
    _allgather_base = all_gather_single
    _reduce_scatter_base = reduce_scatter_single
    alltoall_base = all_to_all_single

    def barrier(self, opts=None):
        self._comms["host"].barrier()
        return _done([])


def _blocks(lists, tensors, k: int, what: str) -> str | None:
    """Why a list of K tensors per input does not fit (None: it does)."""
    for ts, x in zip(lists, tensors):
        if len(ts) != k:
            return f"the {what} must hold {k} tensors (one per rank), got {len(ts)}"
        for t in ts:
            if t.numel() != x.numel() or t.dtype != x.dtype:
                return (f"every tensor of the {what} must be like the other argument "
                        f"({x.numel()} x {x.dtype}), got {t.numel()} x {t.dtype}")
    return None


def _create(opts, pg_options=None) -> "ProcessGroup":
    ranks = list(opts.global_ranks_in_group) or list(range(opts.group_size))
    world = dist.get_world_size() if dist.is_initialized() else opts.group_size
    timeout = opts.timeout.total_seconds() if isinstance(opts.timeout, datetime.timedelta) \
        else float(opts.timeout)
    return ProcessGroup(_mpi_comm(ranks, opts.group_rank, world), opts.group_rank,
                        opts.group_size, timeout)


def allreduce_hook(comm, bucket) -> torch.futures.Future[torch.Tensor]:
    """A DDP communication hook: the bucket's gradients averaged by ring.Communicator
    `comm` (DDP.register_comm_hook(comm, ring.torch.allreduce_hook))."""
    grads = bucket.buffer()
    x = _array(grads)
    if grads.is_cuda:
        torch.cuda.current_stream(grads.device).synchronize()
    comm.allreduce(x, out=x, op="avg")
    f = Future()
    f.set_result(grads)
    return f


if BACKEND.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu", "cuda"])
