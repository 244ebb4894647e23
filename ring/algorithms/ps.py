"""ps: the parameter server. Rank 0 receives every x, reduces them in rank order, and sends
the result back to each rank.

2 (K-1) S bytes through rank 0's link, S elsewhere: what the ring was invented to avoid,
kept as a baseline. The same bits as naive and oneshot. On the cuda device it runs on host
copies of the GPU arrays (MPI through host memory).
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ringtypes import Op
from ..host.reduce import fold
from ..transport.messages import TAG, Scratch, as_bytes, buffer, own, wait_all
from ..wait import Waiter
from .base import ByMessages


def ps(comm: MPI.Comm, waiter: Waiter, op: Op, x: np.ndarray, out: np.ndarray,
       root: int = 0, scratch: Scratch | None = None) -> None:
    k, me = comm.size, comm.rank
    if me != root:
        mine = comm.Isend(as_bytes(x), root, TAG)
        back = comm.Irecv(as_bytes(out), root, TAG)
        wait_all([mine, back], waiter, f"waiting for the result from rank {root} (ps)")
        return
    got = [own(scratch, q, x, out) if q == me else buffer(scratch, q, x) for q in range(k)]
    wait_all([comm.Irecv(as_bytes(got[q]), q, TAG) for q in range(k) if q != me], waiter,
             "waiting for every rank's data at the root (ps)")
    with np.errstate(over="ignore", invalid="ignore"):
        fold(lambda q: got[q], op, k, out)
    wait_all([comm.Isend(as_bytes(out), q, TAG) for q in range(k) if q != me], waiter,
             "sending the result to every rank (ps)")


class ParameterServer(ByMessages):
    name = "ps"
    reduce = staticmethod(ps)


ALGORITHM = ParameterServer()
