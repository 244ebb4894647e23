"""The int8 kernels (kernels/quantize.py) against the host's compiled loops (ring/quantize.py,
whose own tests hold them to a NumPy statement of the rules), bit for bit: the message, the
residual, and the widened rank-order sum. Under the simulator on tiny arrays; on a GPU also
a large one, where a fused multiply-add would show."""

import numpy as np
import pytest

from kernels.quantize import dequantize_sum, quantize
from ring.training import quantize as hostq
from ringtypes import QUANT_BLOCK, packed_bytes, quant_blocks

from .gpu import SIMULATED, dev, host
from .inputs import same_bits

# 5 QUANT_BLOCK + 3: more blocks than the simulator's grid has thread blocks (launch.SIM_BLOCKS),
# so that a thread block quantizes one block after another, refilling its shared-memory tree
# (tools/mutants.py gpu-int8-tree-race: without the barrier before the refill, this size fails)
SIZES = [0, 1, 37, QUANT_BLOCK + 5, 5 * QUANT_BLOCK + 3] + ([] if SIMULATED else [(1 << 20) + 7])


def values(n, seed, specials):
    rng = np.random.default_rng([seed, n])
    v = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n))).astype(np.float32)
    if specials and n > 8:
        v[:8] = [np.inf, -np.inf, np.nan, 0.0, 3e38, -3e38, 1e-44, -1e-45]
        v[10:13] = 0
    if specials and n > QUANT_BLOCK:
        v[QUANT_BLOCK:QUANT_BLOCK + 5] = [1e-44, 0, -1e-45, 0, 1e-45]  # its scale underflows
    return v


@pytest.mark.filterwarnings("ignore:.*(divide by zero|invalid value)")  # simulated x / 0
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("feedback", [False, True])
@pytest.mark.parametrize("specials", [False, True])
def test_the_message_and_residual_are_the_hosts_bit_for_bit(n, feedback, specials):
    v = values(n, 1, specials)
    residual = (np.random.default_rng(n).standard_normal(n) * 0.01).astype(np.float32)
    want = np.empty(packed_bytes(n), np.uint8)
    want_res = residual.copy()
    hostq.quantize(v, want, want_res if feedback else None)
    p, r = dev(np.full(packed_bytes(n), 0xAB, np.uint8)), dev(residual)
    quantize(p, dev(v), r if feedback else None)
    assert host(p).tobytes() == want.tobytes()
    assert host(r).tobytes() == (want_res if feedback else residual).tobytes()


@pytest.mark.filterwarnings("ignore:.*(divide by zero|invalid value)")  # simulated x / 0
@pytest.mark.parametrize("feedback", [False, True])
def test_a_block_of_zeros_and_a_block_whose_only_nonfinite_value_is_its_last(feedback):
    """Block 0 all zeros (scale 1, as the host's); blocks 1 and 2 each with one NaN or inf,
    at the block's last value: read by the last thread of the block's tree, so the scale is
    NaN only where the tree carries every thread's finding to thread 0
    (tools/mutants.py gpu-int8-zero-block-scale, gpu-int8-nonfinite-one-thread)."""
    n = 3 * QUANT_BLOCK + 2
    v = values(n, 5, specials=False)
    v[:QUANT_BLOCK] = 0
    v[2 * QUANT_BLOCK - 1], v[3 * QUANT_BLOCK - 1] = np.nan, -np.inf
    residual = (np.random.default_rng(n).standard_normal(n) * 0.01).astype(np.float32)
    residual[:QUANT_BLOCK] = 0
    want, want_res = np.empty(packed_bytes(n), np.uint8), residual.copy()
    hostq.quantize(v, want, want_res if feedback else None)
    scales = want[:4 * quant_blocks(n)].view(np.float32)  # the message starts with them
    assert scales[0] == 1 and np.isnan(scales[1:3]).all() and np.isfinite(scales[3])
    p, r = dev(np.full(packed_bytes(n), 0xAB, np.uint8)), dev(residual)
    quantize(p, dev(v), r if feedback else None)
    assert host(p).tobytes() == want.tobytes()
    assert host(r).tobytes() == (want_res if feedback else residual).tobytes()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("k,avg", [(1, False), (3, True), (3, False)])
def test_the_rank_order_sum_is_the_hosts_bit_for_bit(n, k, avg):
    msgs = np.empty((k, packed_bytes(n)), np.uint8)
    for r in range(k):
        hostq.quantize(values(n, 10 + r, specials=r == 1), msgs[r])
    want = np.empty(n, np.float32)
    hostq.dequantize_sum(msgs, n, want, avg)
    out = dev(np.full(n, 7, np.float32))
    dequantize_sum(out, dev(msgs.reshape(-1)), avg=avg)
    assert same_bits(host(out), want)  # NaN for NaN: a GPU's NaN is its own


def test_arguments_of_the_wrong_size_or_type_are_refused():
    v = dev(np.zeros(10, np.float32))
    assert packed_bytes(10) == 4 + 12  # a scale, 10 values, 2 bytes of padding
    with pytest.raises(ValueError, match="packed: a 1-D uint8 array of 16"):
        quantize(dev(np.zeros(15, np.uint8)), v)
    with pytest.raises(ValueError, match="residual"):
        quantize(dev(np.zeros(16, np.uint8)), v, dev(np.zeros(10, np.float64)))
    with pytest.raises(ValueError, match=r"v: a 1-D float32 array of 10 elements, got "
                       r"float32 \(2, 5\)"):
        quantize(dev(np.zeros(16, np.uint8)), dev(np.zeros((2, 5), np.float32)))
    with pytest.raises(ValueError, match="out: a 1-D float32 array of 10 elements"):
        dequantize_sum(dev(np.zeros((2, 5), np.float32)), dev(np.zeros(16, np.uint8)),
                       avg=False)
    with pytest.raises(ValueError, match="fewer than one message of 16"):
        dequantize_sum(v, dev(np.zeros(15, np.uint8)), avg=False)
    with pytest.raises(ValueError, match="gathered: a 1-D uint8 array of 32"):
        dequantize_sum(v, dev(np.zeros(33, np.uint8)), avg=False)
