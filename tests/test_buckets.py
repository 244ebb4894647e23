"""Gradient buckets (ring/buckets.py) against a recording stand-in for the communicator:
DDP's layout (reverse order, a smaller first bucket, one dtype per bucket), buckets started
in order whatever order gradients arrive in, unused gradients as zeros, results unpacked.
The multi-rank runs are the training examples (tests/test_examples.py)."""

import numpy as np
import pytest

from ring.buckets import GradientBuckets


class Recorder:
    """allreduce as K identical ranks would sum: x * K; records each start."""

    def __init__(self, k=2, device="host"):
        self.k, self.size, self.started, self.device = k, k, [], device
        self.compression = []  # each start's compression= (None: float32 on the wire)

    def allreduce(self, x, out=None, op="sum", async_op=False, dtype=None, compression=None):
        self.started.append((x.copy(), op))
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
    from ring.quantize import dequantize_sum, packed_bytes
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
