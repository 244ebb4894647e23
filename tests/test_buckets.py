"""Gradient buckets (ring/buckets.py) against a recording stand-in for the communicator:
DDP's layout (reverse order, a smaller first bucket, one dtype per bucket), buckets started
in order whatever order gradients arrive in, unused gradients as zeros, results unpacked.
The multi-rank runs are the training examples (tests/test_examples.py)."""

import contextlib

import numpy as np
import pytest

from ring.buckets import GradientBuckets


class Recorder:
    """allreduce as K identical ranks would sum: x * K; records each start."""

    def __init__(self, k=2, device="host"):
        self.k, self.size, self.started, self.device = k, k, [], device
        self.compression = []  # each start's compression= (None: float32 on the wire)
        self.arrays = []  # each all-reduce's array as passed

    def allreduce(self, x, out=None, op="sum", async_op=False, dtype=None, compression=None):
        self.started.append((x.copy(), op))
        self.arrays.append(x)  # the array itself: whether it is the gradients' memory
        self.compression.append(compression)
        np.multiply(x, self.k if op == "sum" else 1, out=out)

        class Done:
            def wait(self_):
                return out
        return Done()

    def allgather(self, x, out=None, async_op=False):
        """K identical ranks: K copies of x."""
        self.started.append((x.copy(), "allgather"))
        out.reshape(self.k, -1)[...] = x

        class Done:
            def wait(self_):
                return out
        return Done()


def grads(sizes, dtype=np.float32):
    return [np.full(n, i + 1, dtype) for i, n in enumerate(sizes)]


def test_reverse_order_and_a_smaller_first_bucket():
    g = grads([100, 100, 100, 100, 100])  # 400 bytes each
    b = GradientBuckets(Recorder(), g, first_bucket_bytes=400, bucket_bytes=1000)
    assert b.buckets == [[4], [3, 2], [1, 0]]


def test_a_bucket_holds_one_dtype():
    g = grads([10, 10]) + [np.ones(10, np.float64)] + grads([10])
    b = GradientBuckets(Recorder(), g, first_bucket_bytes=1 << 20, bucket_bytes=1 << 20)
    assert b.buckets == [[3], [2], [1, 0]]


def test_buckets_start_in_order_and_results_are_unpacked():
    rec = Recorder(k=3)
    g = grads([8, 8, 8, 8])
    b = GradientBuckets(rec, g, first_bucket_bytes=32, bucket_bytes=64, op="sum")
    assert b.buckets == [[3], [2, 1], [0]]
    b.ready(0)  # the last bucket is complete, but the first two have not started
    assert rec.started == []
    b.ready(2)
    b.ready(1)
    assert rec.started == []
    b.ready(3)  # now all three start, in order
    assert [len(x) for x, _ in rec.started] == [8, 16, 8]
    assert rec.started[1][0][:8].tolist() == [3] * 8  # bucket 1 packs gradient 2 first
    b.wait()
    for i, a in enumerate(g):
        assert np.array_equal(a, np.full(8, 3 * (i + 1), np.float32))


def test_unused_gradients_count_as_zeros_and_the_next_step_starts_clean():
    rec = Recorder()
    g = grads([4, 4, 4])
    b = GradientBuckets(rec, g, first_bucket_bytes=16, bucket_bytes=16, op="avg")
    b.ready(2)
    b.ready(0)
    b.wait()  # gradient 1 never became ready
    assert np.array_equal(g[1], np.zeros(4, np.float32))
    assert np.array_equal(g[2], np.full(4, 3, np.float32))
    assert [op for _, op in rec.started] == ["avg"] * 3
    for i in range(3):  # a second step marks every gradient again
        b.ready(i)
    b.wait()
    with pytest.raises(ValueError, match="twice"):
        b.ready(1)
        b.ready(1)
    for wrong in (-1, 3):  # not the last gradient, nor past it
        with pytest.raises(IndexError, match=r"ready\(%d\): gradients are numbered 0 to 2" % wrong):
            b.ready(wrong)


@pytest.mark.parametrize("as_view", [False, True])
@pytest.mark.parametrize("compression", [None, "int8", "topk"])
def test_no_sync_accumulates_and_the_next_step_reduces_the_sum_once(as_view, compression):
    """Gradient accumulation (DDP's no_sync()): k-1 micro-batches inside it start nothing
    and leave the gradients to the caller, who adds each micro-batch's into them; the next
    step all-reduces the sum, one all-reduce per bucket (counted by the stand-in, and in
    `allreduces`), packed or as bucket views, on the float32 wire, int8's, or top-k's
    (density 1: every value, the exact sum; one all-gather per bucket)."""
    rec = Recorder(k=2)
    b = GradientBuckets(rec, grads([8, 8, 8]), first_bucket_bytes=32, bucket_bytes=32,
                        op="sum", gradient_as_bucket_view=as_view, compression=compression,
                        **({"density": 1.0} if compression == "topk" else {}))
    g = b.grads
    micro = [np.arange(8, dtype=np.float32) * (m + 1) for m in range(4)]  # 4 micro-batches
    for m, part in enumerate(micro):
        with contextlib.nullcontext() if m == 3 else b.no_sync():
            for i in reversed(range(3)):
                if m == 0:
                    g[i][...] = part * (i + 1)
                else:
                    g[i] += part * (i + 1)
                b.ready(i)
            b.wait()
        assert len(rec.started) == (3 if m == 3 else 0), m  # nothing until the last one
    assert b.allreduces == 3 == len(b.buckets)
    for i in range(3):  # K = 2 identical ranks: twice the accumulated sum
        want = 2 * sum(micro) * (i + 1)
        assert np.allclose(g[i], want, rtol=0.02 if compression else 0), (i, g[i], want)


def test_no_sync_refuses_a_step_under_way_and_nesting():
    b = GradientBuckets(Recorder(), grads([4, 4]), first_bucket_bytes=16, bucket_bytes=16)
    b.ready(0)
    with pytest.raises(ValueError, match="under way"):
        with b.no_sync():
            pass
    b.wait()
    with b.no_sync():
        with pytest.raises(ValueError, match="already inside"):
            with b.no_sync():
                pass
        b.ready(1)
        with pytest.raises(ValueError, match="twice"):
            b.ready(1)


def test_bad_options():
    with pytest.raises(ValueError, match="op"):
        GradientBuckets(Recorder(), grads([4]), op="max")
    with pytest.raises(ValueError, match="positive"):
        GradientBuckets(Recorder(), grads([4]), bucket_bytes=0)


@pytest.mark.parametrize("compression,wire", [("bf16", "bfloat16"), ("fp16", "float16")])
def test_compression_sends_16_bits_and_widens_back(compression, wire):
    """The bucket goes out rounded to the wire type and summed there; wait() widens it and
    divides (avg) in float32. Values the wire holds exactly come back exactly."""
    g = [np.full(6, 3.0, np.float32), np.array([1.0, 1 + 2 ** -12, 0.1, -2.5], np.float32)]
    rec = Recorder(k=4)
    b = GradientBuckets(rec, g, first_bucket_bytes=1 << 20, op="avg", compression=compression,
                        accumulate="wire")
    for i in (1, 0):
        b.ready(i)
    b.wait()
    sent, op = rec.started[0]
    assert str(sent.dtype) == wire and op == "sum"
    assert (g[0] == 3.0).all() and g[1][0] == 1.0 and g[1][3] == -2.5
    assert g[1][1] == 1.0  # 1 + 2^-12 does not survive 16 bits
    assert g[1][2] != np.float32(0.1) and abs(g[1][2] - 0.1) < 1e-3 * (8 if wire == "bfloat16" else 1)


@pytest.mark.parametrize("device,accumulate", [("host", None), ("host", "float32"),
                                               ("cuda", None), ("cuda", "wire")])
def test_compression_accumulates_in_float32_on_the_host_by_default(device, accumulate):
    """accumulate="float32" hands the float32 bucket to the all-reduce with compression=
    (the communicator rounds at each hop); the default on the cuda device is "wire"."""
    rec = Recorder(device=device)
    g = grads([4])
    b = GradientBuckets(rec, g, compression="bf16", accumulate=accumulate)
    b.ready(0)
    b.wait()
    float32 = device == "host"
    assert b.accumulate == ("float32" if float32 else "wire")
    assert rec.compression == ["bf16" if float32 else None]
    assert str(rec.started[0][0].dtype) == ("float32" if float32 else "bfloat16")
    assert rec.started[0][1] == ("avg" if float32 else "sum")


def test_compression_needs_float32_and_a_known_wire():
    with pytest.raises(ValueError, match="accumulate: None"):
        GradientBuckets(Recorder(), grads([4]), compression="bf16", accumulate="int")
    with pytest.raises(ValueError, match="host device only"):
        GradientBuckets(Recorder(device="cuda"), grads([4]), compression="bf16",
                        accumulate="float32")
    with pytest.raises(TypeError, match="float32 gradients only"):
        GradientBuckets(Recorder(), [np.ones(4, np.float64)], compression="bf16")
    with pytest.raises(ValueError, match="compression"):
        GradientBuckets(Recorder(), grads([4]), compression="int4")


@pytest.mark.parametrize("op", ["sum", "avg"])
def test_int8_gathers_the_rounded_bucket_and_sums_it_in_float32(op):
    from ring.training.quantize import dequantize_sum, packed_bytes
    rng = np.random.default_rng(1)
    g = [rng.standard_normal(5000).astype(np.float32), rng.standard_normal(300).astype(np.float32)]
    before = np.concatenate([g[1], g[0]])  # the bucket: reverse registration order
    rec = Recorder(k=3)
    b = GradientBuckets(rec, g, first_bucket_bytes=1 << 20, op=op, compression="int8")
    for i in (1, 0):
        b.ready(i)
    b.wait()
    sent, kind = rec.started[0]
    assert kind == "allgather" and sent.dtype == np.uint8 and sent.size == packed_bytes(5300)
    want = np.empty(5300, np.float32)
    dequantize_sum(np.stack([sent] * 3), 5300, want, op == "avg")
    assert np.concatenate([g[1], g[0]]).tobytes() == want.tobytes()
    assert np.abs(want - before * (3 if op == "sum" else 1)).max() < 0.05 * np.abs(before).max()


def test_int8_error_feedback_carries_the_rounding_into_the_next_step():
    g = [np.zeros(64, np.float32)]
    rec = Recorder(k=1)
    b = GradientBuckets(rec, g, op="sum", compression="int8", error_feedback=True)
    total = np.zeros(64, np.float32)
    for _ in range(20):
        g[0][:] = 0
        g[0][0], g[0][1] = 127, 0.3
        b.ready(0)
        b.wait()
        total += g[0]
    assert abs(total[1] - 6.0) <= 0.5  # without feedback: 0 (0.3 is under half a step)


def test_int8_options():
    with pytest.raises(ValueError, match="accumulate"):
        GradientBuckets(Recorder(), grads([4]), compression="int8", accumulate="wire")
    with pytest.raises(ValueError, match="error_feedback"):
        GradientBuckets(Recorder(), grads([4]), compression="bf16", error_feedback=True)
    with pytest.raises(TypeError, match="float32 gradients only"):
        GradientBuckets(Recorder(), [np.ones(4, np.float64)], compression="int8")
    with pytest.raises(ValueError, match="int8_exchange"):
        GradientBuckets(Recorder(), grads([4]), compression="int8", int8_exchange="ring")
    with pytest.raises(ValueError, match="int8_exchange"):
        GradientBuckets(Recorder(), grads([4]), compression="bf16", int8_exchange="alltoall")


@pytest.mark.parametrize("flag", ["error_feedback", "gradient_as_bucket_view"])
@pytest.mark.parametrize("value", ["no", "False", 0, 1, None])
def test_flags_are_true_or_false(flag, value):
    """Taken by truth value, error_feedback="no" had meant True."""
    with pytest.raises(TypeError, match=f"{flag}: expected True or False, got {value!r}"):
        GradientBuckets(Recorder(), grads([4]), compression="int8", **{flag: value})
    GradientBuckets(Recorder(), grads([4]), compression="int8", **{flag: np.bool_(True)})


@pytest.mark.parametrize("k", [1, 2, 3, 4, 8, 16])
def test_the_int8_exchange_by_bytes(k):
    """None picks the exchange that sends fewer bytes: at K = 2 the same bytes, so one
    rounding and one call (allgather); from K = 3 the all-to-all once a shard holds whole
    blocks' worth; a bucket of a block or two stays all-gathered."""
    from ring.training.int8_reduce import choose, shard_values
    from ringtypes import packed_bytes
    for n in (1, 300, 4096, 3 * 4096, 1 << 16, 10 ** 6 + 7):
        got = choose(None, n, k)
        sent = {"allgather": (k - 1) * packed_bytes(n),  # a ring all-gather, per link
                "alltoall": (k * (k - 1) // 2 + k - 1) * packed_bytes(shard_values(n, k))}
        assert got == ("allgather" if k < 3 or sent["alltoall"] >= sent["allgather"]
                       else "alltoall"), (n, got)
    assert choose(None, 1 << 20, k) == ("alltoall" if k >= 3 else "allgather")


@pytest.mark.parametrize("k", [1, 2, 3, 4, 7, 8])
def test_the_alltoall_shards_cover_the_bucket_in_as_few_whole_blocks_as_may_be(k):
    """shard_values(n, k): whole blocks, K shards of them hold the bucket, and a block
    fewer a shard would not (n = K blocks + 1 needs two blocks a shard; n < K one)."""
    from ring.training.int8_reduce import shard_values
    from ringtypes import QUANT_BLOCK as B
    for n in sorted({1, 2, k - 1, k, k + 1, B - 1, B, B + 1, k * B - 1, k * B, k * B + 1,
                     3 * k * B + 5, 10 ** 6 + 7} - {0}):
        s = shard_values(n, k)
        assert s % B == 0 and k * s >= n > k * (s - B), (n, s)
    assert shard_values(0, k) == 0


# -- where the bucket lies: the gradients' own memory, or a packed copy ----------------

def test_a_bucket_of_one_contiguous_gradient_is_all_reduced_where_it_lies():
    rec = Recorder(k=3)
    g = [np.full((3, 4), 2, np.float32), np.full(5, 1, np.float32)]
    b = GradientBuckets(rec, g, first_bucket_bytes=20, bucket_bytes=48, op="sum")
    assert b.buckets == [[1], [0]]
    b.ready(1)
    b.ready(0)
    b.wait()
    assert np.shares_memory(rec.arrays[0], g[1]) and np.shares_memory(rec.arrays[1], g[0])
    assert (g[0] == 6).all() and g[0].shape == (3, 4) and (g[1] == 3).all()


def test_gradients_end_to_end_in_bucket_order_are_one_bucket_without_packing():
    """Views of one array, laid out as the bucket packs them (reverse registration order),
    are all-reduced there; laid out the other way round, they are packed."""
    for reverse in (True, False):
        rec = Recorder(k=2)
        memory = np.arange(10, dtype=np.float32)
        a, z = memory[6:], memory[:6]  # bucket order: gradient 1 then gradient 0
        g = [a, z] if reverse else [z, a]
        b = GradientBuckets(rec, g, first_bucket_bytes=1 << 20, op="sum")
        for i in (0, 1):
            b.ready(i)
        b.wait()
        assert np.shares_memory(rec.arrays[0], memory) == reverse
        assert np.array_equal(memory, 2 * np.arange(10, dtype=np.float32))


def test_a_strided_gradient_is_packed_and_gets_its_result():
    """A gradient that is not contiguous (a column slice) is packed through its shape and
    unpacked into it (a flattened copy of it would have been all-reduced and dropped)."""
    rec = Recorder(k=2)
    whole = np.ones((4, 6), np.float32)
    g = [whole[:, :3], np.full(2, 5, np.float32)]
    b = GradientBuckets(rec, g, first_bucket_bytes=1 << 20, op="sum")
    assert b.buckets == [[1, 0]]
    for i in (1, 0):
        b.ready(i)
    b.wait()
    assert not np.shares_memory(rec.arrays[0], whole)
    assert (whole[:, :3] == 2).all() and (whole[:, 3:] == 1).all() and (g[1] == 10).all()
    every_other = np.arange(8, dtype=np.float32)  # alone in its bucket, 1-D and strided
    b = GradientBuckets(rec, [every_other[::2]], op="sum")
    b.ready(0)
    b.wait()
    assert rec.arrays[-1].flags.c_contiguous
    assert every_other.tolist() == [0, 1, 4, 3, 8, 5, 12, 7]


def test_a_gradient_passed_twice_is_all_reduced_once():
    """Two buckets over one memory are packed, each all-reduced from the gradient's value
    (in place, the second would sum the first's result again)."""
    rec = Recorder(k=2)
    x = np.full(4, 3, np.float32)
    b = GradientBuckets(rec, [x, x], first_bucket_bytes=16, bucket_bytes=16, op="sum")
    assert b.buckets == [[1], [0]]
    b.ready(1)
    b.ready(0)
    b.wait()
    assert not any(np.shares_memory(a, x) for a in rec.arrays)
    assert (x == 6).all()
    rec = Recorder(k=2)
    whole = np.arange(8, dtype=np.float32)  # two gradients that overlap in part
    b = GradientBuckets(rec, [whole[:6], whole[4:]], first_bucket_bytes=16, bucket_bytes=24,
                        op="sum")
    assert b.buckets == [[1], [0]]
    b.ready(1)
    b.ready(0)
    b.wait()
    assert not any(np.shares_memory(a, whole) for a in rec.arrays)
    assert whole.tolist() == [0, 2, 4, 6, 8, 10, 12, 14]  # each unpacked from its own sum


@pytest.mark.parametrize("compression", [None, "bf16", "int8"])
def test_gradient_as_bucket_view(compression):
    """gradient_as_bucket_view=True (DDP's): buckets.grads are views of the buckets, shaped
    like the given gradients and starting with their values; computed into, they are
    all-reduced where they are, unused ones as zeros."""
    rec = Recorder(k=2)
    given = [np.full((2, 3), 1, np.float32), np.full(4, 2, np.float32), np.full(5, 3, np.float32)]
    b = GradientBuckets(rec, given, first_bucket_bytes=16, bucket_bytes=64, op="sum",
                        compression=compression, gradient_as_bucket_view=True)
    assert b.buckets == [[2], [1, 0]]
    g = b.grads
    assert [x.shape for x in g] == [(2, 3), (4,), (5,)]
    assert not any(np.shares_memory(x, y) for x in g for y in given)
    assert all(np.array_equal(x, y) for x, y in zip(g, given))
    g[0][...] = 7  # computed into the views
    g[1][...] = 8
    b.ready(0)
    b.ready(1)
    b.wait()  # gradient 2 unused
    if compression != "int8":
        assert all(np.shares_memory(a, g[1]) for a in rec.arrays[1:])
    rtol = 1e-2 if compression == "int8" else 0  # (int8: 8 bits a value)
    assert np.allclose(g[0], 14, rtol=rtol, atol=0) and np.allclose(g[1], 16, rtol=rtol, atol=0)
    assert (g[2] == 0).all()
    assert (given[0] == 1).all()  # the given arrays are not the gradients any more


# -- PyTorch CPU tensors (ring/tensors.py) ---------------------------------------------

def test_torch_views_of_one_flat_tensor_are_one_bucket_without_packing():
    """CPU tensors that are views of one flat tensor (FSDP's flat parameters, or a model's
    grads carved from one buffer), end to end in bucket order, are all-reduced where they
    lie, bfloat16 too; views of different tensors, or in the other order, are packed."""
    torch = pytest.importorskip("torch")
    for dtype in (torch.float32, torch.bfloat16):
        for reverse in (True, False):
            rec = Recorder(k=2)
            flat = torch.arange(10, dtype=dtype)
            a, z = flat[6:].view(2, 2), flat[:6]  # bucket order: gradient 1 then gradient 0
            g = [a, z] if reverse else [z, a]
            b = GradientBuckets(rec, g, first_bucket_bytes=1 << 20, op="sum")
            for i in (0, 1):
                b.ready(i)
            b.wait()
            lies = rec.arrays[0].__array_interface__["data"][0] == flat.data_ptr()
            assert lies == reverse, (dtype, reverse)
            assert torch.equal(flat, 2 * torch.arange(10, dtype=dtype))
    rec = Recorder(k=2)
    one, other = torch.ones(4), torch.ones(4)
    b = GradientBuckets(rec, [one[2:], one[:2], other], first_bucket_bytes=1 << 20, op="sum")
    for i in (0, 1, 2):
        b.ready(i)
    b.wait()
    assert rec.arrays[0].__array_interface__["data"][0] not in (one.data_ptr(), other.data_ptr())
    assert one.tolist() == [2.0] * 4 and other.tolist() == [2.0] * 4


def test_torch_cpu_tensors_are_reduced_in_their_memory():
    """Gradients given as CPU tensors (p.grad, say): contiguous, strided and bfloat16 ones
    all come back summed in the tensors themselves; with gradient_as_bucket_view the
    gradients handed back are tensors over the buckets' memory, shaped and typed as given."""
    torch = pytest.importorskip("torch")
    rec = Recorder(k=3)
    g = [torch.full((4,), 1.0), torch.full((2, 3), 2.0)[:, :2],
         torch.full((3,), 1.5, dtype=torch.bfloat16)]
    b = GradientBuckets(rec, g, first_bucket_bytes=6, bucket_bytes=64, op="sum")
    assert b.buckets == [[2], [1, 0]]
    for i in (2, 1, 0):
        b.ready(i)
    b.wait()
    assert g[0].tolist() == [3.0] * 4 and g[1].tolist() == [[6.0, 6.0]] * 2
    assert g[2].dtype == torch.bfloat16 and g[2].tolist() == [4.5] * 3

    b = GradientBuckets(Recorder(k=2), [torch.ones(2, 2), torch.ones(3, dtype=torch.bfloat16)],
                        op="sum", gradient_as_bucket_view=True)
    views = b.grads
    assert [type(v) for v in views] == [torch.Tensor] * 2
    assert [tuple(v.shape) for v in views] == [(2, 2), (3,)]
    assert [v.dtype for v in views] == [torch.float32, torch.bfloat16]
    views[0].fill_(5)  # computed into, in place
    views[1].fill_(0.25)
    b.ready(1)
    b.ready(0)
    b.wait()
    assert views[0].tolist() == [[10.0, 10.0]] * 2 and views[1].tolist() == [0.5] * 3


@pytest.mark.parametrize("compression", [None, "bf16", "int8", "topk"])
def test_no_gradients_make_no_buckets(compression):
    """A model without gradients (DDP refuses it; here: nothing to do): no bucket, no call,
    whatever the compression."""
    rec = Recorder()
    b = GradientBuckets(rec, [], compression=compression,
                        density=0.1 if compression == "topk" else None)
    b.wait()
    assert b.buckets == [] and rec.started == [] and b.allreduces == 0


def test_buckets_whose_memories_touch_are_each_all_reduced_where_they_lie():
    """Two buckets over the two halves of one array, end to end: no byte is shared, so
    neither is packed."""
    rec = Recorder(k=2)
    memory = np.arange(8, dtype=np.float32)
    b = GradientBuckets(rec, [memory[:4], memory[4:]], first_bucket_bytes=16,
                        bucket_bytes=16, op="sum")
    assert b.buckets == [[1], [0]]
    b.ready(1)
    b.ready(0)
    b.wait()
    assert [np.shares_memory(a, memory) for a in rec.arrays] == [True, True]
    assert np.array_equal(memory, 2 * np.arange(8, dtype=np.float32))


def test_a_buckets_gradients_with_a_gap_between_them_are_packed():
    """Views of one array in bucket order but apart (a gap of other values between them)
    are packed: spanning them would all-reduce the gap and leave the last one's tail."""
    rec = Recorder(k=2)
    memory = np.arange(12, dtype=np.float32)
    b = GradientBuckets(rec, [memory[8:], memory[:4]], first_bucket_bytes=1 << 20, op="sum")
    assert b.buckets == [[1, 0]]
    for i in (0, 1):
        b.ready(i)
    b.wait()
    assert not np.shares_memory(rec.arrays[0], memory)
    want = np.arange(12, dtype=np.float32)
    want[:4] *= 2
    want[8:] *= 2
    assert np.array_equal(memory, want)
