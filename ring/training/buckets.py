"""Gradient buckets: many small gradients packed into a few large all-reduces, each started
as soon as its gradients are ready, as PyTorch DDP's Reducer does.

    buckets = ring.buckets.GradientBuckets(comm, grads, bucket_bytes=25 << 20, op="avg")
    for i in reversed(range(len(grads))):   # as the backward pass produces them
        ...compute grads[i] in place...
        buckets.ready(i)                     # packs it; a full bucket starts its all-reduce
    buckets.wait()                           # every bucket done, unpacked into grads

Layout, as DDP's: gradients go into buckets in reverse registration order (the order a
backward pass produces them), the first bucket capped at `first_bucket_bytes` so that
communication starts early, the others at `bucket_bytes`; a bucket holds one dtype. Buckets
start in their order on every rank (a bucket that fills early waits for the ones before it),
so every rank issues the same collectives in the same order. A gradient never marked ready
by wait() counts as zeros (DDP's unused parameters): its bucket starts then.

compression="fp16" | "bf16" puts a float32 bucket on the wire as 16 bits, half the bytes,
in one of two ways (`accumulate`):
  "float32"  the Communicator's compression= (host device): every hop widens what it
             receives, adds its own float32 gradient and rounds the partial sum to the wire
             type for the next hop; the complete sum is rounded once more so that every
             rank holds the same value. One pass over memory per step, no casts around it.
  "wire"     the bucket is rounded to the wire type when it starts, all-reduced as 16-bit
             data (each hop rounds its sum of two 16-bit values), and widened back into
             float32 on wait(), where avg divides (in float32). Any device: on a GPU it
             uses the cast kernels and the 16-bit all-reduce.
The default (None) is "float32" on the host, where it is both faster and closer to the
float32 result, and "wire" on the cuda device, where the 16-bit wire of the ring's kernels
does not exist yet. Speed and error against the float32 all-reduce, both ways: results/
(benchmarks/compression.py).

compression="topk", density=d (either device) sends only the d x n values of each bucket
largest in magnitude, as (index, value) pairs all-gathered and summed in rank order
(ring/training/topk.py); error_feedback=True keeps what was not sent for the next step, as
Deep Gradient Compression does. momentum=m puts the momentum in the buckets (the optimizer
then steps without it): momentum_kind="global" (the default) makes the result the velocity
of the sum, each rank owing its share of m x the last result beside its gradient (Global
Momentum Compression's way); "local" is Deep Gradient Compression's momentum correction
(each rank's own velocity accumulated and masked). Lossy: it changes the training, not only
its rounding.

compression="int8" (any device) rounds each bucket to int8 with a float32 scale per block
of 4096 values (ring/quantize.py: a quarter of the bytes) and exchanges it
(ring/int8_reduce.py, `int8_exchange`): "allgather" (every rank sums the K buckets in rank
order), or "alltoall" (each rank sums a shard of every rank's bucket, rounds the sum again
and all-gathers it: DeepSpeed's compressed all-reduce, whose bytes do not grow with K);
by default the one that sends fewer bytes. error_feedback=True keeps what each rounding
lost and adds it in the next step, so that rounding errors do not pile up over steps.

Packing copies are skipped where the gradients already lie as a bucket would: a bucket of
one contiguous gradient, or of NumPy gradients that lie end to end in one array in bucket
order (CPU tensors: views of one flat tensor), is all-reduced where it lies. gradient_as_bucket_view=True (DDP's option of that
name) makes every bucket so: the buckets allocate the memory and `buckets.grads` are the
gradients, views of it, to be computed into from then on (their values start as the
given arrays'). Either way, between ready(i) and wait() gradient i belongs to the
buckets: its memory may be the all-reduce's, so it is neither read nor written then.

Making the buckets is collective, as DDP's construction is: every rank's gradient sizes and
dtypes, bucket layout and options are compared in one small allgather (agreement.agree_setup),
so that a bad option on one rank, or ranks that differ, raise on every rank there (its own
error on the bad rank, MismatchError naming it or the field on the others) rather than in a
step, where they would wait out the timeout or, with check=False, sum what does not match.

Gradients may be NumPy arrays or PyTorch CPU tensors on the host device (a tensor is taken
as a NumPy view of its memory: keep the same tensor from step to step, as
optimizer.zero_grad(set_to_none=False) does, or use gradient_as_bucket_view, whose grads
are tensors again), and GPU arrays (Numba, CuPy, PyTorch CUDA) on the cuda device.

Gradient accumulation, as DDP's no_sync(): `with buckets.no_sync():` around the first k-1
micro-batches' backward passes (whose gradients the caller adds into `grads`), then one
ordinary step whose ready() / wait() all-reduce the sum: one all-reduce per bucket per
optimizer step, the calls counted in `buckets.allreduces`.

Each all-reduce is async_op=True, so it runs behind the backward pass: on the cuda device
on the GPU's streams, on the host device on the communicator's progress thread
(ring/progress.py). On the host that saves time only where a core is free while the
backward pass computes (benchmarks/overlap.py: results/README.md).
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from .buffers import copy, empty, zero
from .int8_reduce import EXCHANGES, Int8Reduce
from ..options import COMPRESSIONS, check_flags
from .tensors import as_array, as_tensor, is_tensor
from .topk import TopKReduce, a_density, check_momentum

FIRST_BUCKET_BYTES = 1 << 20  # DDP's defaults
BUCKET_BYTES = 25 << 20
WIRE = COMPRESSIONS  # compression -> the wire dtype
INT8 = "int8"  # int8 with scales, exchanged by ring/int8_reduce.py
TOPK = "topk"  # the k largest of each bucket as (index, value) pairs, ring/training/topk.py
ACCUMULATE = ("float32", "wire")


def _flat(a):
    """A 1-D view of a gradient: a NumPy array that is not C-contiguous stays as it is
    (packed and unpacked through its shape); a GPU array (any __cuda_array_interface__
    array, as the cuda device takes it) must be contiguous (ring/cuda/arrays.as_device).
    A PyTorch CPU tensor is taken as a NumPy view of its memory."""
    if is_tensor(a) and not a.is_cuda:
        a = as_array(a)
    if isinstance(a, np.ndarray):
        return a.reshape(-1) if a.flags.c_contiguous else a
    from ..cuda.arrays import as_device
    return as_device(a, "grads")[0]


def _address(a) -> int:
    return a.__array_interface__["data"][0]


try:  # NumPy 2
    from numpy.lib.array_utils import byte_bounds as _byte_bounds
except ImportError:  # NumPy 1
    _byte_bounds = np.byte_bounds


def _bounds(a):
    """(first byte, end) of an array's memory, either device; None where it cannot be told."""
    if isinstance(a, np.ndarray):
        return _byte_bounds(a)
    if hasattr(a, "__cuda_array_interface__"):  # (contiguous: as_device checked)
        start = a.__cuda_array_interface__["data"][0]
    elif isinstance(getattr(a, "_ary", None), np.ndarray):  # Numba's simulator
        start = _address(a._ary)
    else:
        return None
    return start, start + a.size * a.dtype.itemsize


def _span(views: list):
    """One 1-D array over the gradients' views when they already lie as a bucket would:
    one contiguous gradient (either device); NumPy gradients of one dtype end to end in
    this order in one array's memory (or one tensor's storage). None otherwise (the bucket
    is packed)."""
    host = [isinstance(v, np.ndarray) for v in views]
    if len(views) == 1 and not host[0]:
        return views[0]  # (contiguous: ring/cuda/arrays.as_device checked)
    if not all(host) or not all(v.flags.c_contiguous for v in views) or \
            len({v.dtype for v in views}) > 1:
        return None
    if len(views) == 1:
        return views[0]
    owners = [_owner(v) for v in views]
    if None in owners or any(o[0] != owners[0][0] for o in owners):
        return None
    whole = owners[0][1]
    ends = [_address(v) for v in views]
    if any(ends[j] + views[j].nbytes != ends[j + 1] for j in range(len(views) - 1)):
        return None
    offset, n = ends[0] - _address(whole), sum(v.size for v in views)
    if offset < 0 or offset + n * views[0].itemsize > whole.nbytes:
        return None
    span = np.ndarray((n,), views[0].dtype, buffer=whole, offset=offset)
    return span if span.flags.writeable else None


def _owner(v: np.ndarray):
    """(what identifies the memory a NumPy gradient lies in, a uint8 array over all of it):
    the outermost array of its chain of bases; for a view of a PyTorch CPU tensor (which
    as_array makes), that tensor's storage, so that views of one flat tensor are one memory.
    None where the memory is not one contiguous array."""
    while isinstance(v.base, np.ndarray):
        v = v.base
    if is_tensor(v.base):
        import torch
        storage = v.base.untyped_storage()
        whole = torch.empty(0, dtype=torch.uint8).set_(storage).numpy()
        return ("storage", storage.data_ptr(), storage.nbytes()), whole
    if not v.flags.c_contiguous:
        return None
    return ("array", id(v)), v.reshape(-1).view(np.uint8)


def _shared(views: list) -> set:
    """The buckets (views: each bucket's gradients) one of whose gradients shares memory
    with another bucket's (the same gradient passed twice, say): every bucket where that
    cannot be told. A sweep over the gradients in address order."""
    bounds = [(_bounds(v), b) for b, vs in enumerate(views) for v in vs]
    if any(e is None for e, _ in bounds):
        return set(range(len(views)))
    shared, active = set(), []  # active: (end, bucket) of the memory that reaches here
    for (lo, hi), b in sorted((e, b) for e, b in bounds if e[1] > e[0]):
        active = [(end, q) for end, q in active if end > lo]
        for _, q in active:
            if q != b:
                shared |= {b, q}
        active.append((hi, b))
    return shared


def _view_like(view, original):
    """A bucket's view, as the kind of array the gradient was (CuPy, PyTorch, NumPy or Numba),
    sharing the bucket's memory."""
    if type(original).__module__.startswith("cupy"):
        import cupy
        return cupy.asarray(view)
    return as_tensor(view, original) if is_tensor(original) else view


def _wire(flat, dtype: str):
    if isinstance(flat, np.ndarray):
        from ringtypes import parse_dtype
        return np.empty(flat.size, parse_dtype(dtype))
    from numba import cuda  # bfloat16 as its uint16 bits (no GPU array library has it)
    return cuda.device_array(flat.size, np.float16 if dtype == "float16" else np.uint16)


def _cast(dst, src, wire: str, narrow: bool) -> None:
    """float32 <-> the 16-bit wire type, rounded to nearest even (bit for bit NumPy's)."""
    if isinstance(dst, np.ndarray):
        from ..host import half
        (half.narrow if narrow else half.widen)(src, dst)
    else:
        from kernels import cast
        cast(dst, src, **({"dst": wire} if narrow else {"src": wire}))


def _scale(a, factor: float) -> None:
    if isinstance(a, np.ndarray):
        a *= np.float32(factor)
    else:
        from kernels import scale
        scale(a, factor)


# What every rank's buckets must share (checked when they are made, as DDP verifies its
# parameters across processes: a difference would show later as a MismatchError in some
# step's all-reduce, or, with check=False, as a wrong sum or a wait until the timeout)
SHARED = ("gradients", "buckets", "op", "compression", "accumulate", "error_feedback",
          "int8_exchange", "density", "momentum", "momentum_kind")


class GradientBuckets:
    def __init__(self, comm, grads: list, *, bucket_bytes: int = BUCKET_BYTES,
                 first_bucket_bytes: int = FIRST_BUCKET_BYTES, op: str = "avg",
                 compression: str | None = None, accumulate: str | None = None,
                 error_feedback: bool = False, int8_exchange: str | None = None,
                 gradient_as_bucket_view: bool = False, density: float | None = None,
                 momentum: float = 0.0, momentum_kind: str = "global"):
        """Collective on a ring.Communicator: every rank makes its buckets, from gradients
        of the same sizes and dtypes, with the same options (gradient_as_bucket_view aside);
        a bad argument or a difference raises on every rank (its own error there,
        MismatchError on the others), as a call's does."""
        error, shared = None, {}
        try:
            self._build(comm, grads, bucket_bytes, first_bucket_bytes, op, compression,
                        accumulate, error_feedback, int8_exchange, gradient_as_bucket_view,
                        density, momentum, momentum_kind)
            shared = {"gradients": [(str(v.dtype), int(v.size)) for v in self._views],
                      "buckets": [len(m) for m in self.buckets], "op": op,
                      "compression": compression, "accumulate": self.accumulate,
                      "error_feedback": bool(error_feedback), "int8_exchange": int8_exchange,
                      "density": None if density is None else float(density),
                      "momentum": float(momentum), "momentum_kind": momentum_kind}
        except Exception as e:  # noqa: BLE001 - raised below, once every rank knows of it
            error = e
        agree = getattr(comm, "_agree_setup", None)  # (None: a test's stand-in)
        if agree is not None:
            agree("GradientBuckets", SHARED, shared, error)
        elif error is not None:
            raise error

    def _build(self, comm, grads, bucket_bytes, first_bucket_bytes, op, compression,
               accumulate, error_feedback, int8_exchange, gradient_as_bucket_view, density,
               momentum, momentum_kind) -> None:
        check_flags(error_feedback=error_feedback, gradient_as_bucket_view=gradient_as_bucket_view)
        if bucket_bytes <= 0 or first_bucket_bytes <= 0:
            raise ValueError(f"bucket sizes must be positive, got {first_bucket_bytes}, {bucket_bytes}")
        if op not in ("sum", "avg"):
            raise ValueError(f"op: gradients are summed or averaged ('sum', 'avg'), got {op!r}")
        if compression is not None and compression not in WIRE and \
                compression not in (INT8, TOPK):
            raise ValueError(f"compression: None, 'fp16', 'bf16', 'int8' or 'topk', got "
                             f"{compression!r}")
        if compression in (INT8, TOPK) and accumulate is not None:
            raise ValueError(f"accumulate: applies to 'fp16' / 'bf16' ({compression} sums "
                             "in float32 after the all-gather)")
        if error_feedback and compression not in (INT8, TOPK):
            raise ValueError("error_feedback: with compression='int8' or 'topk' only")
        if momentum and compression != TOPK:
            raise ValueError("momentum: the momentum of compression='topk' only")
        check_momentum(momentum, momentum_kind, error_feedback)
        if (density is not None) != (compression == TOPK) or \
                (density is not None and not a_density(density)):
            raise ValueError(f"density: the fraction of each bucket compression='topk' "
                             f"sends, 0 < density <= 1, given with it only; got {density!r}")
        if int8_exchange is not None and (compression != INT8 or int8_exchange not in EXCHANGES):
            raise ValueError(f"int8_exchange: None, 'allgather' or 'alltoall' with "
                             f"compression='int8', got {int8_exchange!r}")
        if accumulate is not None and accumulate not in ACCUMULATE:
            raise ValueError(f"accumulate: None, 'float32' or 'wire', got {accumulate!r}")
        if accumulate == "float32" and compression is not None and comm.device != "host":
            raise ValueError(f"accumulate='float32': on the host device only (not yet on "
                             f"{comm.device}); use 'wire'")
        self.comm, self.op, self.grads = comm, op, list(grads)
        self.compression = compression
        self.accumulate = None if compression in (None, INT8, TOPK) else \
            accumulate or ("float32" if comm.device == "host" else "wire")
        # the dtype of a separate 16-bit copy of each bucket ("wire" only)
        self._wire_dtype = WIRE[compression] if self.accumulate == "wire" else None
        self._views = [_flat(g) for g in self.grads]
        self.buckets: list[list[int]] = []  # gradient indices, in packing order
        cap, size, dtype = first_bucket_bytes, 0, None
        for i in reversed(range(len(self.grads))):
            g = self._views[i]
            nbytes = g.size * g.dtype.itemsize
            if not self.buckets or (size and size + nbytes > cap) or g.dtype != dtype:
                if self.buckets:
                    cap = bucket_bytes
                self.buckets.append([])
                size, dtype = 0, g.dtype
            self.buckets[-1].append(i)
            size += nbytes
        self._where = {}  # gradient -> (bucket, offset)
        for b, members in enumerate(self.buckets):
            offset = 0
            for i in members:
                self._where[i] = (b, offset)
                offset += self._views[i].size
        views = [[self._views[i] for i in m] for m in self.buckets]
        shared = set() if gradient_as_bucket_view else _shared(views)
        # (a bucket whose memory another's gradient shares is packed: no memory all-reduced
        # twice, or read while another call writes it)
        spans = [None if gradient_as_bucket_view or b in shared else _span(vs)
                 for b, vs in enumerate(views)]
        # per bucket: whether it is the gradients' own memory (nothing to pack or unpack)
        self._own = [gradient_as_bucket_view or s is not None for s in spans]
        self._flats = []
        for b, members in enumerate(self.buckets):
            last = members[-1]
            size = self._where[last][1] + self._views[last].size
            self._flats.append(empty(self._views[members[0]], size) if spans[b] is None
                               else spans[b])
            if gradient_as_bucket_view:
                for i in members:
                    off, v, g = self._where[i][1], self._views[i], self.grads[i]
                    mine = self._flats[b][off:off + v.size]
                    copy(mine, v)
                    self._views[i] = mine
                    self.grads[i] = _view_like(mine.reshape(g.shape), g)
        if compression is not None:
            bad = {str(f.dtype) for f in self._flats} - {"float32"}
            if bad:
                raise TypeError(f"compression: float32 gradients only, got {sorted(bad)}")
        # the 16-bit wire copy of each bucket (bfloat16 as uint16 bits on a GPU: _wire)
        self._wires = [None if self._wire_dtype is None else _wire(f, self._wire_dtype)
                       for f in self._flats]
        if compression in WIRE and self._flats and isinstance(self._flats[0], np.ndarray):
            from ..host import half
            half.warm()  # compiled (or loaded) now, not in the first step
        # int8: each bucket's exchange, its buffers and (error feedback) residuals
        self._int8 = None
        if compression == INT8:
            if self._flats and isinstance(self._flats[0], np.ndarray):
                from .quantize import warm
                warm()  # compiled (or loaded) now, not in the first step
            self._int8 = [Int8Reduce(comm, f, int8_exchange, error_feedback)
                          for f in self._flats]
        # top-k: each bucket's selection, message and (error feedback) residual
        self._topk = None
        if compression == TOPK:
            self._topk = [TopKReduce(comm, f, density, error_feedback, momentum,
                                     momentum_kind) for f in self._flats]
        self._syncing = True  # False inside no_sync()
        self.allreduces = 0  # collectives started so far (int8's: its first of each bucket)
        self._reset()

    def _reset(self) -> None:
        self._pending = [len(m) for m in self.buckets]
        self._marked = [False] * len(self.grads)
        self._works: list = []  # one per started bucket, in bucket order

    @contextmanager
    def no_sync(self):
        """Gradient accumulation, as DDP's no_sync(): inside, ready() and wait() start no
        collective and touch no gradient, so the caller adds each micro-batch's gradients
        into `grads` itself; the first step after it (ready() ... wait() outside) all-reduces
        what has accumulated, one all-reduce per bucket. Every rank must skip alike."""
        if self._syncing is False:
            raise ValueError("no_sync(): already inside one")
        if any(self._marked) or self._works:
            raise ValueError("no_sync(): a step is under way (ready() called, wait() not yet)")
        self._syncing = False
        try:
            yield self
        finally:
            self._syncing = True
            self._reset()

    def set_density(self, density: float) -> None:
        """compression="topk": send `density` of each bucket from the next step on, residuals
        and velocities kept (Deep Gradient Compression's sparsity warm-up lowers it over the
        first steps: benchmarks/topk_convergence.py --warmup). Between steps, the same on
        every rank (the all-gathers' sizes differ otherwise: MismatchError)."""
        if self._topk is None:
            raise ValueError("set_density: with compression='topk' only")
        if not a_density(density):
            raise ValueError(f"density: 0 < density <= 1, got {density!r}")
        if any(self._marked) or self._works:
            raise ValueError("set_density(): a step is under way (ready() called, wait() not yet)")
        for t in self._topk:
            t.set_density(density)

    def ready(self, i: int) -> None:
        """Gradient i holds its value: pack it; start every bucket that is complete and
        whose predecessors have started. (Inside no_sync(): nothing but the check.)"""
        if not 0 <= i < len(self._marked):  # (a negative i would mark another gradient)
            raise IndexError(f"ready({i}): gradients are numbered 0 to {len(self._marked) - 1}")
        if self._marked[i]:
            raise ValueError(f"gradient {i} was marked ready twice in one step")
        self._marked[i] = True
        if not self._syncing:
            return
        b, off = self._where[i]
        if not self._own[b]:
            v = self._views[i]
            copy(self._flats[b][off:off + v.size], v)
        self._pending[b] -= 1
        self._start_ready()

    def _start_ready(self) -> None:
        while len(self._works) < len(self.buckets) and self._pending[len(self._works)] == 0:
            b = len(self._works)
            flat, wire = self._flats[b], self._wires[b]
            self.allreduces += 1
            if self._int8 or self._topk:
                self._works.append((self._int8 or self._topk)[b].start())
                continue
            if wire is None:  # float32, or compressed inside the all-reduce
                self._works.append(self.comm.allreduce(flat, out=flat, op=self.op, async_op=True,
                                                       compression=self.compression))
                continue
            _cast(wire, flat, self._wire_dtype, narrow=True)
            self._works.append(self.comm.allreduce(
                wire, out=wire, op="sum", async_op=True,
                dtype=None if isinstance(wire, np.ndarray) else self._wire_dtype))

    def wait(self) -> None:
        """Start what has not started (unready gradients as zeros), wait for every bucket,
        and unpack the results into the gradients; then the next step may begin. (Inside
        no_sync(): the micro-batch ends, nothing else.)"""
        if not self._syncing:
            self._reset()
            return
        for i, marked in enumerate(self._marked):
            if not marked:
                b, off = self._where[i]
                zero(self._flats[b][off:off + self._views[i].size])
                self._pending[b] -= 1
        self._start_ready()
        avg = self.op == "avg"
        for reduce in self._int8 or ():  # (the all-to-all exchange's second collective)
            reduce.middle(avg)
        for b, work in enumerate(self._works):
            if self._int8 or self._topk:
                (self._int8 or self._topk)[b].finish(avg)
            else:
                work.wait()
            if self._wires[b] is not None:
                _cast(self._flats[b], self._wires[b], self._wire_dtype, narrow=False)
                if self.op == "avg":
                    _scale(self._flats[b], 1.0 / self.comm.size)
            if self._own[b]:
                continue
            for i in self.buckets[b]:
                _, off = self._where[i]
                v = self._views[i]
                copy(v, self._flats[b][off:off + v.size])
        self._reset()
