"""run_case on real ranks: a correct implementation has no wrong elements, a broken one
is caught and counted on every rank."""

import numpy as np

from harness.buffers import HostBuffers
from harness.collectives import COLLECTIVES
from harness.impls import Mpi
from harness.sweep import run_case


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
