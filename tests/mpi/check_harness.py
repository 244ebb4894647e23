"""run_case on real ranks: a correct implementation has no wrong elements, a broken one
is caught and counted on every rank; the time is the mean over the ranks (harness tune's:
the slowest rank's)."""

import numpy as np
import pytest

from harness.buffers import HostBuffers
from harness.collectives import COLLECTIVES
from harness.impls import Int8, Mpi
from harness.sweep import run_case

from ..queued import Enqueuing, QueuedComm, QueuedDevice


class Corrupting(Mpi):
    name = "broken"

    def __call__(self, coll, x, out, op, dtype, root=0):
        super().__call__(coll, x, out, op, dtype, root)
        out.reshape(-1)[::7] += 1  # every 7th element wrong on every rank


def test_wrong_elements_are_counted(world):
    bufs = HostBuffers()
    good, bad = Mpi(world, bufs), Corrupting(world, bufs)
    coll = COLLECTIVES["allreduce"]
    n = 100
    r = run_case(good, coll, world, bufs, n * 4, np.float32, "sum", False, 2, 1, True)
    assert r.wrong == 0 and r.time_us > 0 and r.busbw >= 0
    r = run_case(bad, coll, world, bufs, n * 4, np.float32, "sum", False, 2, 1, True)
    assert r.wrong == world.size * len(range(0, n, 7))
    good.close()
    bad.close()


def test_a_compressed_wire_is_checked_exactly_and_its_error_measured(world):
    """ring-bf16: the check's small integers are exact on a 16-bit wire (#wrong 0); the
    error column comes from normal data, the same on every rank, within bfloat16's
    rounding over K hops, and absent for float32 implementations."""
    from harness.impls import IMPLS
    bufs = HostBuffers()
    bf16 = IMPLS["ring-bf16"](world, bufs)
    for coll in ("allreduce", "reduce_scatter"):
        r = run_case(bf16, COLLECTIVES[coll], world, bufs, 4096 * world.size, np.float32, "avg",
                     False, 2, 1, True)
        assert r.wrong == 0 and r.error is not None
        assert (r.error == 0) == (world.size == 1) and r.error < world.size * 2.0 ** -8
        assert world.allgather(r.error) == [r.error] * world.size
    assert bf16.available("allreduce", np.float64, "sum", False) == \
        "compression: float32 sum and avg only"
    bf16.runs("allgather")
    assert bf16.unavailable == "compression: all-reduce and reduce-scatter only"
    bf16.close()
    plain = Mpi(world, bufs)
    assert run_case(plain, COLLECTIVES["allreduce"], world, bufs, 400, np.float32, "sum", False,
                    1, 0, True).error is None
    plain.close()


class BrokenInt8(Int8):
    name = "ring-int8-broken"

    def __call__(self, coll, x, out, op, dtype, root=0):
        super().__call__(coll, x, out, op, dtype, root)
        out.reshape(-1)[::7] += 1


def test_the_int8_wire_is_checked_against_its_own_rules(world):
    """ring-int8 is lossy: the check holds it bit for bit to the int8 rules applied to every
    rank's input (its expected(), not the exact sum; #wrong 0 in place and out, and a
    corrupted result counted), and the error column measures it against float32."""
    from harness.impls import IMPLS
    bufs = HostBuffers()
    int8 = IMPLS["ring-int8"](world, bufs)
    coll, n = COLLECTIVES["allreduce"], 5000
    for op, in_place in (("avg", False), ("sum", True)):
        r = run_case(int8, coll, world, bufs, 4 * n, np.float32, op, in_place, 2, 1, True)
        assert r.wrong == 0 and r.error is not None and 0 < r.error < 0.05
        assert world.allgather(r.error) == [r.error] * world.size
    bad = BrokenInt8(world, bufs)  # and the check against the rules is a real one
    r = run_case(bad, coll, world, bufs, 4 * n, np.float32, "sum", False, 1, 0, True)
    assert r.wrong == world.size * len(range(0, n, 7))
    bad.close()
    assert int8.available("allreduce", np.float32, "max", False) == "int8: float32 sum and avg only"
    int8.runs("reduce_scatter")
    assert int8.unavailable == "int8: all-reduce only"
    int8.close()


def test_the_time_is_the_mean_over_ranks_and_busbw_has_the_bus_factor(world, monkeypatch):
    """Rank r's calls take (r + 1) ms each on its device: every rank reports the mean over
    the ranks, (K + 1) / 2 ms a call, and busbw is algbw x nccl-tests' bus factor."""
    from harness import sweep
    k = world.size
    device = QueuedDevice(host=1e-6, work=(world.rank + 1) * 1e-3)
    monkeypatch.setattr(sweep, "time", device)
    for name in ("allreduce", "allgather"):
        coll = COLLECTIVES[name]
        r = run_case(Enqueuing(device), coll, world, HostBuffers(), 1200 * k, np.float32, "sum",
                     False, 4, 1, False)
        # (+ the first timed call's 1 us of host time, before the device starts: over 4)
        mean_us = sum((q + 1) * 1e3 for q in range(k)) / k + 1 / 4
        assert r.time_us == pytest.approx(mean_us, rel=1e-9)
        times = world.allgather(r.time_us)  # (one sum, however MPI ordered it)
        assert max(times) == pytest.approx(min(times), rel=1e-12)
        assert r.busbw == pytest.approx(r.algbw * coll.bus_factor(k), rel=1e-12)
        assert r.algbw == pytest.approx(1200 * k / (mean_us * 1e-6) / 1e9, rel=1e-9)


def test_a_tune_round_is_the_slowest_ranks(world, monkeypatch):
    """harness tune's rounds: rank r's calls take (r + 1) ms each; every rank gets the
    slowest rank's time per call (K ms), as it is the one the others wait for."""
    from harness import tune
    k = world.size
    device = QueuedDevice(host=1e-6, work=(world.rank + 1) * 1e-3)
    monkeypatch.setattr(tune, "time", device)
    n = int(min(500, max(3, 0.02 / (k * 1e-3 + 1e-6))))  # (sized by the slowest rank too)
    got = tune.per_call_us(world, QueuedComm(device), None, None, "ring")
    assert got == pytest.approx(k * 1e3 + 1 / n, rel=1e-9)
