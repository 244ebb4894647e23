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

compression="int8" (any device) rounds each bucket to int8 with a float32 scale per block
of 4096 values and all-gathers it (ring/quantize.py: a quarter of the bytes, every rank
sums the K parts in rank order); error_feedback=True keeps what the rounding lost and adds
it to the next step's gradient, so that rounding errors do not pile up over steps.

Each all-reduce is async_op=True, so it runs behind the backward pass: on the cuda device
on the GPU's streams, on the host device on the communicator's progress thread
(ring/progress.py). On the host that saves time only where a core is free while the
backward pass computes (benchmarks/overlap.py: results/README.md).
"""

from __future__ import annotations

import numpy as np

from ringtypes import packed_bytes

from .options import COMPRESSIONS

FIRST_BUCKET_BYTES = 1 << 20  # DDP's defaults
BUCKET_BYTES = 25 << 20
WIRE = COMPRESSIONS  # compression -> the wire dtype
INT8 = "int8"  # all-gathered int8 with scales (ring/quantize.py, kernels/quantize.py)
ACCUMULATE = ("float32", "wire")


def _zero(a) -> None:
    """Zero a slice of a bucket (a NumPy or Numba device array: the buckets' own)."""
    if isinstance(a, np.ndarray):
        a[...] = 0
    else:
        a.copy_to_device(np.zeros(a.shape, a.dtype))


def _flat(a):
    """A 1-D view of a contiguous gradient (NumPy, or any __cuda_array_interface__ array,
    as the cuda device takes it: ring/cuda/arrays.as_device)."""
    if isinstance(a, np.ndarray):
        return a.reshape(-1)
    from .cuda.arrays import as_device
    return as_device(a, "grads")[0]


def _copy(dst, src) -> None:
    if isinstance(dst, np.ndarray):
        np.copyto(dst, src)
    else:
        dst.copy_to_device(src)


def _wire(flat, dtype: str):
    if isinstance(flat, np.ndarray):
        from ringtypes import parse_dtype
        return np.empty(flat.size, parse_dtype(dtype))
    from numba import cuda
    return cuda.device_array(flat.size, np.uint16)


def _cast(dst, src, wire: str, narrow: bool) -> None:
    """float32 <-> the 16-bit wire type, rounded to nearest even (bit for bit NumPy's)."""
    if isinstance(dst, np.ndarray):
        from .host import half
        (half.narrow if narrow else half.widen)(src, dst)
    else:
        from kernels import cast
        cast(dst, src, **({"dst": wire} if narrow else {"src": wire}))


def _quantize(packed, flat, residual) -> None:
    """The int8 message of a bucket (ring/quantize.py on the host, its kernels on a GPU)."""
    if isinstance(flat, np.ndarray):
        from .quantize import quantize
        quantize(flat, packed, residual)
    else:
        from kernels.quantize import quantize
        quantize(packed, flat, residual)


def _dequantize_sum(flat, gathered, avg: bool) -> None:
    if isinstance(flat, np.ndarray):
        from .quantize import dequantize_sum
        dequantize_sum(gathered.reshape(-1, packed_bytes(flat.size)), flat.size, flat, avg)
    else:
        from kernels.quantize import dequantize_sum
        dequantize_sum(flat, gathered, avg=avg)


def _scale(a, factor: float) -> None:
    if isinstance(a, np.ndarray):
        a *= np.float32(factor)
    else:
        import cupy
        view = cupy.asarray(a)
        view *= np.float32(factor)


class GradientBuckets:
    def __init__(self, comm, grads: list, *, bucket_bytes: int = BUCKET_BYTES,
                 first_bucket_bytes: int = FIRST_BUCKET_BYTES, op: str = "avg",
                 compression: str | None = None, accumulate: str | None = None,
                 error_feedback: bool = False):
        if bucket_bytes <= 0 or first_bucket_bytes <= 0:
            raise ValueError(f"bucket sizes must be positive, got {first_bucket_bytes}, {bucket_bytes}")
        if op not in ("sum", "avg"):
            raise ValueError(f"op: gradients are summed or averaged ('sum', 'avg'), got {op!r}")
        if compression is not None and compression not in WIRE and compression != INT8:
            raise ValueError(f"compression: None, 'fp16', 'bf16' or 'int8', got {compression!r}")
        if compression == INT8 and accumulate is not None:
            raise ValueError("accumulate: applies to 'fp16' / 'bf16' (int8 sums in float32 "
                             "after the all-gather)")
        if error_feedback and compression != INT8:
            raise ValueError("error_feedback: with compression='int8' only")
        if accumulate is not None and accumulate not in ACCUMULATE:
            raise ValueError(f"accumulate: None, 'float32' or 'wire', got {accumulate!r}")
        if accumulate == "float32" and compression is not None and comm.device != "host":
            raise ValueError(f"accumulate='float32': on the host device only (not yet on "
                             f"{comm.device}); use 'wire'")
        self.comm, self.op, self.grads = comm, op, list(grads)
        self.compression = compression
        self.accumulate = None if compression in (None, INT8) else \
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
        self._flats = []
        for b, members in enumerate(self.buckets):
            offset = 0
            for i in members:
                self._where[i] = (b, offset)
                offset += self._views[i].size
            self._flats.append(self._empty(self._views[members[0]], offset))
        if compression is not None:
            bad = {str(f.dtype) for f in self._flats} - {"float32"}
            if bad:
                raise TypeError(f"compression: float32 gradients only, got {sorted(bad)}")
        # the 16-bit wire copy of each bucket (uint16 bits on a GPU: CuPy has no bfloat16)
        self._wires = [None if self._wire_dtype is None else _wire(f, self._wire_dtype)
                       for f in self._flats]
        if compression in WIRE and isinstance(self._flats[0], np.ndarray):
            from .host import half
            half.warm()  # compiled (or loaded) now, not in the first step
        # int8: each bucket's message, the K messages gathered, and (error feedback) what
        # the rounding lost, carried into the next step
        self._int8 = compression == INT8
        self._packed = self._gathered = self._residuals = [None] * len(self._flats)
        if self._int8:
            if isinstance(self._flats[0], np.ndarray):
                from .quantize import warm
                warm()  # compiled (or loaded) now, not in the first step
            sizes = [packed_bytes(f.size) for f in self._flats]
            self._packed = [self._empty(f, p, np.uint8) for f, p in zip(self._flats, sizes)]
            self._gathered = [self._empty(f, comm.size * p, np.uint8)
                              for f, p in zip(self._flats, sizes)]
            self._residuals = [None] * len(self._flats)
            if error_feedback:
                self._residuals = [self._empty(f, f.size) for f in self._flats]
                for r in self._residuals:
                    _zero(r)
        self._reset()

    @staticmethod
    def _empty(like, n: int, dtype=None):
        """n elements of dtype (like's by default) where like lives: NumPy or the GPU."""
        dtype = like.dtype if dtype is None else dtype
        if isinstance(like, np.ndarray):
            return np.empty(n, dtype)
        from numba import cuda
        return cuda.device_array(n, dtype)

    def _reset(self) -> None:
        self._pending = [len(m) for m in self.buckets]
        self._marked = [False] * len(self.grads)
        self._works: list = []  # one per started bucket, in bucket order

    def ready(self, i: int) -> None:
        """Gradient i holds its value: pack it; start every bucket that is complete and
        whose predecessors have started."""
        if self._marked[i]:
            raise ValueError(f"gradient {i} was marked ready twice in one step")
        self._marked[i] = True
        b, off = self._where[i]
        v = self._views[i]
        _copy(self._flats[b][off:off + v.size], v)
        self._pending[b] -= 1
        self._start_ready()

    def _start_ready(self) -> None:
        while len(self._works) < len(self.buckets) and self._pending[len(self._works)] == 0:
            b = len(self._works)
            flat, wire = self._flats[b], self._wires[b]
            if self._int8:
                _quantize(self._packed[b], flat, self._residuals[b])
                self._works.append(self.comm.allgather(self._packed[b], out=self._gathered[b],
                                                       async_op=True))
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
        and unpack the results into the gradients; then the next step may begin."""
        for i, marked in enumerate(self._marked):
            if not marked:
                b, off = self._where[i]
                _zero(self._flats[b][off:off + self._views[i].size])
                self._pending[b] -= 1
        self._start_ready()
        for b, work in enumerate(self._works):
            work.wait()
            if self._int8:
                _dequantize_sum(self._flats[b], self._gathered[b], self.op == "avg")
            if self._wires[b] is not None:
                _cast(self._flats[b], self._wires[b], self._wire_dtype, narrow=False)
                if self.op == "avg":
                    _scale(self._flats[b], 1.0 / self.comm.size)
            for i in self.buckets[b]:
                _, off = self._where[i]
                v = self._views[i]
                _copy(v, self._flats[b][off:off + v.size])
        self._reset()
