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
Collectives on CPU tensors run behind the caller on the host communicator's progress thread
(ring/progress.py), in call order, so that DDP's bucket all-reduces (and FSDP's gathers and
reduce-scatters) overlap the compute; a Work completes when its call has run, and wait()
raises the call's error. On CUDA a call is stream-ordered, as NCCL's: ring enqueues it on
the tensors' current torch stream (no synchronisation of it), the work torch puts on that
stream later is ordered after it, and the Work is complete on return; an error the GPU
finds is raised at a later call (or the communicator's synchronize()).

Collectives: all_reduce (SUM, PRODUCT, MIN, MAX, AVG), broadcast, reduce, all_gather,
all_gather_into_tensor, reduce_scatter, reduce_scatter_tensor, gather, scatter,
all_to_all_single with equal splits, barrier. The bitwise ops and PREMUL_SUM, send/recv and
uneven all_to_all raise. Wrong arguments raise on every rank of the group (ring's agreement),
as everywhere in ring.
"""

import datetime

import numpy as np
import torch
import torch.distributed as dist
from numba import cuda
from torch._C._distributed_c10d import _create_work_from_future
from torch.futures import Future

from ..errors import MismatchError
from .buffers import copy, on_host
from .tensors import as_array


def _array(t):
    """as_array(t): a NumPy view of a CPU tensor, a CUDA one itself; a tensor it refuses (on
    another device: meta, say) as an empty stand-in whose dtype names why, which ring's
    argument check refuses on every rank (this rank's TypeError alone would leave the
    others waiting in the collective until its timeout)."""
    try:
        return as_array(t)
    except TypeError as e:
        return np.empty(0, np.dtype([(str(e), "V1")]))

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


def _ready(value) -> Future:
    f = Future()
    f.set_result(value)
    return f


def _done(result) -> dist.Work:
    return _create_work_from_future(_ready(result))


class _Behind(dist._Work):
    """torch's Work for a ring call still running on the progress thread: wait() raises
    its error (a Work made from a future would drop it), get_future() is what DDP chains on;
    finish() (copies into torch's output lists) runs there once the call is done."""

    def __init__(self, work, result, finish=None):
        super().__init__()
        self._work, self._future, self._error = work, Future(), None

        def done(_, error):
            if error is None and finish is not None:
                try:
                    finish()
                except BaseException as e:
                    error = self._error = e
            if error is not None:
                self._future.set_exception(error)
            else:
                self._future.set_result(result)
        work.add_done_callback(done)

    def wait(self, timeout=None) -> bool:
        """timeout: a timedelta (torch's; zero, its default, for none) or seconds."""
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds() or None
        self._work.wait(timeout)
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self) -> bool:
        return self._work.is_completed()

    def get_future(self):
        return self._future


def _call_work(comm, call, result, finish=None) -> dist.Work:
    """call(async_op) makes the ring call; finish() (copies into torch's tensors) runs once
    it is done: with a host communicator on its progress thread, where the Work completes,
    or here with a cuda one, whose calls are stream-ordered: the Work is done on return."""
    if comm.device == "cuda":
        call(False)
        if finish is not None:
            finish()
        return _done(result)
    return _Behind(call(True), result, finish)


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
        from ..communicator import Communicator
        self._mpi, self._timeout = mpi_comm, timeout
        self._comms = {"host": Communicator(mpi_comm, device="host", timeout=timeout)}

    def getBackendName(self) -> str:
        return BACKEND

    def _comm(self, t: torch.Tensor):
        kind = "cuda" if t.is_cuda else "host"
        if kind not in self._comms:
            from ..communicator import Communicator
            self._comms[kind] = Communicator(self._mpi, device=kind, timeout=self._timeout)
        return self._comms[kind]  # (CUDA: ordered on the tensors' current stream)

    def _agree(self, error: str | None) -> None:
        """Raise on every rank when any rank found its arguments wrong (checks torch's
        argument structure, which ring's own agreement does not see)."""
        bad = np.array([error is not None], np.uint8)
        self._comms["host"].allreduce(bad, out=bad, op="max")
        if error is not None:
            raise ValueError(f"ring: {error}")
        if bad[0]:
            raise MismatchError("ring: another rank passed wrong arguments to this collective")

    # Each method: torch's argument lists (one tensor per list: one device per process) in,
    # a Work out. _issue runs the ring call behind the caller for CPU tensors.

    def _issue(self, t: torch.Tensor, call, result, finish=None):
        """call(comm, async_op) makes the ring call on t's communicator (_call_work)."""
        comm = self._comm(t)
        return _call_work(comm, lambda behind: call(comm, behind), result, finish)

    def _each(self, tensors, call):
        """call(comm, array, async_op) on every tensor: behind the caller for one CPU
        tensor (torch's usual one tensor per process), in turn for several."""
        if len(tensors) == 1:
            x = _array(tensors[0])
            return self._issue(tensors[0], lambda c, a: call(c, x, a), tensors)
        for t in tensors:
            call(self._comm(t), _array(t), False)
        return _done(tensors)

    def allreduce(self, tensors, opts):
        op = _op(opts.reduceOp)
        return self._each(tensors, lambda c, x, a: c.allreduce(x, out=x, op=op, async_op=a))

    def allreduce_coalesced(self, tensors, opts):
        op = _op(opts.reduceOp)
        for t in tensors:
            x = _array(t)
            self._comm(t).allreduce(x, out=x, op=op)
        return _done(tensors)

    def broadcast(self, tensors, opts):
        root = opts.rootRank
        return self._each(tensors, lambda c, x, a: c.broadcast(x, root=root, async_op=a))

    def reduce(self, tensors, opts):
        op, root = _op(opts.reduceOp), opts.rootRank
        return self._each(tensors, lambda c, x, a: c.reduce(x, out=x, op=op, root=root,
                                                            async_op=a))

    def all_gather_single(self, out, x, opts):
        a, o = _array(x), _array(out)
        return self._issue(x, lambda c, b: c.allgather(a, out=o, async_op=b), [out])

    def allgather(self, outs, xs, opts):
        self._agree(_one(outs, xs) or _blocks(outs, xs, self.size(), "output tensor list"))
        x, n = xs[0].contiguous(), xs[0].numel()
        flat = x.new_empty((self.size() * n,))
        a, o = _array(x), _array(flat)
        return self._issue(x, lambda c, b: c.allgather(a, out=o, async_op=b), outs,
                           lambda: _split(flat, outs[0]))

    def reduce_scatter_single(self, out, x, opts):
        a, o, op = _array(x), _array(out), _op(opts.reduceOp)
        return self._issue(x, lambda c, b: c.reduce_scatter(a, out=o, op=op, async_op=b), [out])

    def reduce_scatter(self, outs, xs, opts):
        self._agree(_one(outs, xs) or _blocks(xs, outs, self.size(), "input tensor list"))
        return self.reduce_scatter_single(outs[0], torch.cat([t.reshape(-1) for t in xs[0]]),
                                          opts)

    def gather(self, outs, xs, opts):
        root = opts.rootRank
        here = self.rank() == root
        self._agree(_one(xs) or (_blocks(outs, xs, self.size(), "gather list") if here
                                 else None))
        x = xs[0].contiguous()
        flat = x.new_empty((self.size() * x.numel(),)) if here else None
        a, o = _array(x), (_array(flat) if here else None)
        return self._issue(x, lambda c, b: c.gather(a, out=o, root=root, async_op=b), outs,
                           (lambda: _split(flat, outs[0])) if here else None)

    def scatter(self, outs, xs, opts):
        root = opts.rootRank
        here = self.rank() == root
        self._agree(_one(outs) or (_blocks(xs, outs, self.size(), "scatter list") if here
                                   else None))
        o = _array(outs[0])
        a = _array(torch.cat([t.reshape(-1) for t in xs[0]])) if here else None
        return self._issue(outs[0], lambda c, b: c.scatter(a, out=o, root=root, async_op=b),
                           outs)

    def all_to_all_single(self, out, x, out_splits, in_splits, opts):
        k = self.size()
        even = [x.shape[0] // k] * k if x.dim() else []
        uneven = any(s and list(s) != even for s in (out_splits, in_splits))
        # agreed on every call: a rank may pass splits where the others pass none
        self._agree("all_to_all_single: ring runs equal splits only" if uneven else None)
        a, o = _array(x), _array(out)
        return self._issue(x, lambda c, b: c.alltoall(a, out=o, async_op=b), [out])

    def alltoall(self, outs, xs, opts):
        self._agree(_blocks([xs], [outs[0]] if outs else [], self.size(), "input tensor list")
                    or _blocks([outs], [xs[0]] if xs else [], self.size(), "output tensor list"))
        flat = torch.empty((sum(t.numel() for t in outs),), dtype=outs[0].dtype,
                           device=outs[0].device)
        x = torch.cat([t.reshape(-1) for t in xs])
        a, o = _array(x), _array(flat)
        return self._issue(x, lambda c, b: c.alltoall(a, out=o, async_op=b), outs,
                           lambda: _split(flat, outs))

    # the names of torch releases before 2.10
    _allgather_base = all_gather_single
    _reduce_scatter_base = reduce_scatter_single
    alltoall_base = all_to_all_single

    def barrier(self, opts=None):
        self._comms["host"].barrier()
        return _done([])


def _one(*lists) -> str | None:
    if all(len(x) == 1 for x in lists):
        return None
    return "one tensor per argument list (one device per process)"


def _split(flat: torch.Tensor, outs) -> None:
    """Block r of flat into outs[r]."""
    n = flat.numel() // len(outs)
    for r, o in enumerate(outs):
        o.copy_(flat[r * n:(r + 1) * n].view_as(o))


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


def _hook_future(comm, grads: torch.Tensor, call, finish=None) -> Future:
    """What a DDP hook returns, the future of its bucket's `grads` (_call_work): with a host
    communicator the call runs behind the caller, so DDP goes on with the backward pass and
    waits for the future at its end, and each bucket's communication overlaps the
    gradients still being computed, as torch's own hooks over an asynchronous process
    group do; with a cuda one it is enqueued on the bucket's current stream."""
    return _call_work(comm, call, grads, finish).get_future()


def _hook_allreduce(comm, t: torch.Tensor, op: str, grads: torch.Tensor,
                    finish=None) -> Future:
    """t all-reduced in place by ring.Communicator comm, for a DDP hook (_hook_future)."""
    x = _array(t)
    return _hook_future(comm, grads, lambda behind: comm.allreduce(x, out=x, op=op,
                                                                   async_op=behind), finish)


def allreduce_hook(comm, bucket) -> torch.futures.Future[torch.Tensor]:
    """A DDP communication hook: the bucket's gradients averaged by ring.Communicator
    `comm` (DDP.register_comm_hook(comm, ring.torch.allreduce_hook)); on CPU behind the
    caller, so that it overlaps the rest of the backward pass (_hook_future)."""
    grads = bucket.buffer()
    return _hook_allreduce(comm, grads, "avg", grads)


def _compress_hook(dtype, comm, bucket) -> torch.futures.Future[torch.Tensor]:
    grads = bucket.buffer()
    wire = grads.to(dtype).div_(comm.size)  # as torch's own compress hooks: divide first
    return _hook_allreduce(comm, wire, "sum", grads, lambda: grads.copy_(wire))


def allreduce_bf16_hook(comm, bucket) -> torch.futures.Future[torch.Tensor]:
    """allreduce_hook with the bucket on the wire as bfloat16 (divided by the number of
    ranks, summed in bfloat16, copied back), as torch's bf16_compress_hook does over a
    process group. (Not named so: DDP refuses a hook of that name off NCCL.)"""
    return _compress_hook(torch.bfloat16, comm, bucket)


def allreduce_fp16_hook(comm, bucket) -> torch.futures.Future[torch.Tensor]:
    """allreduce_hook with the bucket on the wire as float16 (torch's fp16_compress_hook)."""
    return _compress_hook(torch.float16, comm, bucket)


class TopKState:
    """The state of topk_hook: the communicator, the density, error feedback, the momentum,
    and each DDP bucket's selection, message and residual (ring/training/topk.py), by
    bucket index.

        model.register_comm_hook(ring.torch.TopKState(comm, density=0.01), ring.torch.topk_hook)

    momentum=m puts the momentum in the hook, as GradientBuckets' does (momentum_kind
    "global", the default, or DGC's "local"): the gradients DDP hands the optimizer are
    then the velocity, and the optimizer must step without momentum (SGD, momentum=0).
    With a Communicator(device="cuda") the selection, residual and momentum live on the
    GPU (kernels/topk.py), for CUDA gradients.
    """

    def __init__(self, comm, density: float = 0.01, error_feedback: bool = True,
                 momentum: float = 0.0, momentum_kind: str = "global"):
        from ..options import check_flags
        from .topk import a_density, check_momentum
        if not a_density(density):
            raise ValueError(f"density: 0 < density <= 1, got {density!r}")
        check_flags(error_feedback=error_feedback)
        check_momentum(momentum, momentum_kind, error_feedback)
        self.comm, self.density, self.error_feedback = comm, density, error_feedback
        self.momentum, self.momentum_kind = momentum, momentum_kind
        self.buckets: dict = {}  # bucket index -> (its parameters' layout, TopKReduce)
        self._moving = None  # while DDP's buckets are rebuilt: each parameter's state


def _layout(bucket) -> tuple:
    """The bucket's parameters in order, as (id, number of values) pairs."""
    return tuple((id(p), p.numel()) for p in bucket.parameters())


def _per_parameter(buckets: dict) -> dict:
    """Each parameter's share of its bucket's per-value state (residual, velocity,
    carry), on the host: {parameter id: {name: values}}."""
    out = {}
    for layout, kept in buckets.values():
        state = {name: on_host(a) for name, a in kept.state().items()}
        at = 0
        for key, n in layout:
            out[key] = {name: a[at:at + n].copy() for name, a in state.items()}
            at += n
    return out


def _kept(state: TopKState, bucket, n: int):
    """The bucket's TopKReduce. DDP rebuilds its buckets after the first step (the
    parameters in the order their gradients became ready): where a bucket's layout is
    not the one its state was kept for, a new one is made and each parameter's residual,
    velocity and carry are moved to where the parameter lies now."""
    from .topk import TopKReduce
    layout = _layout(bucket)
    had = state.buckets.get(bucket.index())
    if had is not None and had[0] == layout:
        return had[1]
    if state.buckets and state._moving is None:  # (also where the index is new: a
        state._moving = _per_parameter(state.buckets)  # rebuild may make more buckets)
    on_gpu = state.comm.device == "cuda"
    flat = cuda.device_array(n, np.float32) if on_gpu else np.empty(n, np.float32)
    kept = TopKReduce(state.comm, flat, state.density, state.error_feedback, state.momentum,
                      state.momentum_kind)
    for name, a in kept.state().items() if state._moving else ():  # (new: all zeros)
        values, at = np.zeros(n, np.float32), 0
        for key, size in layout:
            moved = state._moving.get(key, {}).get(name)
            if moved is not None:
                values[at:at + size] = moved
            at += size
        copy(a, values)
    state.buckets[bucket.index()] = (layout, kept)
    return kept


def topk_hook(state: TopKState, bucket) -> torch.futures.Future[torch.Tensor]:
    """A DDP communication hook: the bucket's k = density x n largest gradients of each rank
    as (index, value) pairs, all-gathered and averaged (the others zero; with error feedback
    kept for the next step), as Deep Gradient Compression sends them. float32 gradients;
    the selection runs where the communicator is: on the host (CPU gradients), or on the
    GPU (Communicator(device="cuda"): CUDA gradients, or CPU ones copied over and back).
    The selection runs in the hook; with a host communicator the all-gather and the
    combine then run behind the caller (_hook_future). With a cuda one the hook returns
    once the bucket holds the result: it waits for the current stream before it reads the
    bucket and for the GPU before it returns (the selection reads a sample of the bucket
    on the host each step anyway)."""
    grads = bucket.buffer()
    on_gpu = state.comm.device == "cuda"
    if grads.dtype != torch.float32 or (grads.is_cuda and not on_gpu):
        raise ValueError(f"topk_hook: float32 gradients, on the GPU with a "
                         f"Communicator(device='cuda'); got {grads.dtype} on {grads.device} "
                         f"with a Communicator(device={state.comm.device!r})")
    kept = _kept(state, bucket, grads.numel())
    if bucket.is_last():
        state._moving = None  # (a rebuild's buckets are all made again within one step)
    if grads.is_cuda:  # the backward pass's writes to the bucket, done
        torch.cuda.current_stream(grads.device).synchronize()
        flat = cuda.as_cuda_array(grads.detach().reshape(-1))
    else:
        flat = _array(grads).reshape(-1)
    copy(kept.flat, flat)
    work = kept.start()  # the selection, here; the all-gather, behind the caller on CPU

    def finish():
        if on_gpu:
            kept.finish(avg=True)  # waits for the all-gather, then combines
        else:  # the all-gather's done callback, on the progress thread: it has run
            kept.combine_gathered(avg=True)
        copy(flat, kept.flat)
        if on_gpu:
            cuda.synchronize()  # (the result in the bucket before DDP reads it on its stream)
    return _hook_future(state.comm, grads, lambda behind: work, finish)


if BACKEND.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu", "cuda"])
