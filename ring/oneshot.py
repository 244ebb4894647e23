"""All-reduce in one or two rounds through node-shared memory (transport/exchange.py), for
the messages where the ring's 2(K-1) synchronised steps cost more than its bytes.

    oneshot   every rank posts its x in the round that carries the agreement record, then
              reduces all K posted arrays into its own out: one round trip per call.
    twoshot   the same post; then rank r reduces block r (schedule.split(n, K)) of all K
              into its result slot, a second round, and every rank copies the K blocks.
              Each rank reads 2n elements instead of oneshot's K n.

Both reduce element e as ((x[0] op x[1]) op x[2]) ... op x[K-1], in the dtype, and avg
divides once by K: the same bits on every rank, and the same as naive and ps (p2p.py).
This is the host device's; the cuda device's keeps its data in GPU memory (cuda/shared.py).
"""

from __future__ import annotations

import numpy as np

from ringtypes import Op

from .host.reduce import combine, divide
from .schedule import split
from .transport.exchange import ROUND2, Exchange


def post(ex: Exchange, seq: int, x: np.ndarray) -> None:
    """Put x where the peers read it (before the round is posted)."""
    ex.data(ex.rank, seq, x.dtype, x.size)[...] = x


def fold(parts, op: Op, k: int, out: np.ndarray) -> None:
    """out = ((parts(0) op parts(1)) op ...) op parts(k-1), avg divided by k."""
    np.copyto(out, parts(0))
    for q in range(1, k):
        combine(op, out, parts(q), out)
    if op is Op.AVG:
        divide(out, k)


def oneshot(ex: Exchange, seq: int, op: Op, out: np.ndarray) -> None:
    """After the round of call `seq` (everyone's x posted): the reduction into out."""
    n, dt = out.size, out.dtype
    with np.errstate(over="ignore", invalid="ignore"):
        fold(lambda q: ex.data(q, seq, dt, n), op, ex.size, out)


def twoshot(ex: Exchange, seq: int, op: Op, out: np.ndarray) -> None:
    n, dt, k, me = out.size, out.dtype, ex.size, ex.rank
    b = split(n, k)
    lo, hi = b[me], b[me + 1]
    mine = ex.result(me, seq, dt, hi - lo)
    with np.errstate(over="ignore", invalid="ignore"):
        fold(lambda q: ex.data(q, seq, dt, n)[lo:hi], op, k, mine)
    ex.post(seq, ROUND2)
    ex.wait(seq, ROUND2, "to post its reduced block (twoshot)")
    for q in range(k):
        out[b[q]:b[q + 1]] = ex.result(q, seq, dt, b[q + 1] - b[q])
