"""naive: every rank sends its whole x to every other rank and reduces all K, in rank order.

K-1 sends and receives of S bytes per rank, (K-1) S on every rank's links: the pattern the
seed documents compare the ring with, kept as a baseline and for the sizes where one round of
messages beats 2(K-1) ring steps. Element e is ((x[0] op x[1]) op ...) op x[K-1] in the dtype
(avg: one division by K), as ps and oneshot give it. On the cuda device it runs on host
copies of the GPU arrays (the mpich wheel cannot read GPU memory): MPI through host memory.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ringtypes import Op
from ..host.reduce import fold
from ..transport.messages import TAG, Scratch, as_bytes, buffer, own, wait_all
from ..wait import Waiter
from .base import ByMessages


def naive(comm: MPI.Comm, waiter: Waiter, op: Op, x: np.ndarray, out: np.ndarray,
          scratch: Scratch | None = None) -> None:
    k, me = comm.size, comm.rank
    got = [own(scratch, q, x, out) if q == me else buffer(scratch, q, x) for q in range(k)]
    reqs = [comm.Irecv(as_bytes(got[q]), q, TAG) for q in range(k) if q != me]
    reqs += [comm.Isend(as_bytes(got[me]), q, TAG) for q in range(k) if q != me]
    wait_all(reqs, waiter, "waiting for every rank's data (naive)")
    with np.errstate(over="ignore", invalid="ignore"):
        fold(lambda q: got[q], op, k, out)


class Naive(ByMessages):
    name = "naive"
    reduce = staticmethod(naive)


ALGORITHM = Naive()
