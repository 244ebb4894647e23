"""The per-call fast path of a repeated cma call (ring/algorithms/cma.py), as repeated.py's
for oneshot: the first call of a signature goes the whole way; the next ones do, after
repeated.py's checks of the arrays, one compiled call (host/compiled_cma.py's whole: call,
then rest, where every peer is there in call's poll; else the two apart, the round settled
in Python between them):

    call   out's memory checked, then the agreement round: the call's record and the
           address of what this rank posts (x, or in place where it writes x, a copy:
           transport/cma.posted), every peer's record compared with it
    rest   the recipe's reads out of the peers' memory (copies straight into out, folds
           in pieces), then the closing round, which keeps every rank in the call until
           every peer has read its x, and carries each rank's read status

An all-reduce or a reduce in two phases (recipe.halves) runs rest twice: its block of every
x (a reduce's other ranks: into a buffer of theirs), a round, then the other blocks out of
their owners' out (a reduce: its root alone), the closing round.

A round the compiled poll does not see complete is waited for in Python under the call's
deadline (the agreement's as repeated.settle_round does; the closing round's naming who has
not finished reading, as the full path does), a record that differs raises
agreement.verdict's error, and a read that failed raises RingError on every rank
(transport/cma.raise_failures): the full path's errors. Kept only where the fold is
compiled (not float16 / bfloat16 and floating min / max, whose NumPy loops the full path
keeps).
"""

from __future__ import annotations

import numpy as np

from ringtypes import Op

from ..context import Context
from ..recipe import halves
from ..schedule import Collective
from ..transport import cma
from ..transport.cma import PARTIAL, PARTS, POSTED
from . import compiled_cma, compiled_round
from .repeated import ELSEWHERE, NO_DATA, NOTHING, Signature, arrays, settle_round

BYTES = np.empty(0, np.uint8)


class Kept(Signature):
    """A cma signature: the window's records, the plan (the recipe, no fold of the
    window's data; in two phases: the reduce-scatter's, and `gather` the gather's), the
    ranks' process ids, a fold's piece, whether a call posts a copy (in place, where it
    writes x) and whether its first phase writes a buffer of its own (`partial`: a reduce's
    rank that is not its root)."""

    __slots__ = ("pids", "piece", "copies", "parts", "collective", "gather", "partial")

    def __init__(self, ex, record: dict, op: Op, n: int, dtype: np.dtype, ndim: int, kind: int,
                 rank: int, entered: int, collective: Collective, root: int, memory: int | None,
                 delta: int, shape: tuple, piece: int, in_place: bool, in_halves: bool):
        reduce = collective is Collective.REDUCE
        mine, others = halves(ex.size, ex.rank, n, root if reduce else None) if in_halves \
            else (None, None)
        self.partial = in_halves and reduce and ex.rank != root
        super().__init__(ex, record, op, n, dtype, ndim, kind, rank, entered, collective, root,
                         memory, delta, shape, algorithm="cma", segments=mine)
        self.collective = collective
        # cma.posted's in place: a copy posted, of the x this rank is about to write
        self.copies = in_place and not in_halves and collective in cma.WRITES_WHAT_IT_POSTS
        self.gather = None if others is None else \
            compiled_round.plan(ex.rank, ex.area, op, False, ex.bases, self.row.copy(),
                                segments=others)[0]
        self.pids = np.array(ex.pids, np.int64)
        self.piece = max(piece, dtype.itemsize)  # (a piece holds one element at least)
        sources = len(self.segments[0][2]) if self.segments else 0
        self.parts = sources * self.piece if sources > 1 else 0  # a fold's scratch, in bytes

    def run(self, ctx: Context, x, out):
        """repeated.run's, for cma: the result, the full path's error, or ELSEWHERE."""
        ex, waiter = ctx.exchange, ctx.waiter
        call, seq = ctx.calls + 1, ex.seq + 1
        result, flat_x, flat_out = arrays(self, x, out)
        if self.partial:  # (its block of a reduce, read by the root: cma.target's)
            flat_out = ctx.scratch.get(PARTIAL, flat_x)
        sent = cma.posted(flat_x, lambda: ctx.scratch.get(POSTED, flat_x), self.collective,
                          True, ex.rank, ex.size) if self.copies else flat_x
        parts = ctx.scratch.get(PARTS, BYTES, self.parts) if self.parts else BYTES
        spins, yields, pids, piece = waiter.spins, waiter.yields, self.pids, self.piece
        status = compiled_cma.whole(self.plan, flat_x, flat_out, sent, call, seq, spins, yields,
                                    compiled_round.ANY if out is None or out is x else
                                    self.memory, pids, parts, piece)
        if compiled_round.ALIASED <= status <= compiled_round.OVERLAP:
            return ELSEWHERE
        ctx.calls, ex.seq = call, seq
        named = status == compiled_round.WAITING or status == compiled_round.MISMATCH
        if named:  # the agreement not seen complete in the poll: settled here (the call's
            waiter.start(self.name % call)  # deadline armed), then the first phase's reads
            settle_round(ctx, self, status, seq, NO_DATA)
            status = compiled_cma.rest(self.plan, flat_x, flat_out, seq, 0, pids, parts, piece,
                                       spins, yields, seq + 1)
        if self.gather is None:
            if status == compiled_round.DONE:
                ex.seq = seq + 1
            else:
                self._then(ctx, call, status, seq + 1, cma.CLOSING, named)
        else:  # two phases: every rank's block reduced into its out, a round, before any is read
            named = self._then(ctx, call, status, seq + 1, cma.REDUCED, named)
            status = compiled_cma.rest(self.gather, flat_x, flat_out, seq, 1, pids, parts, piece,
                                       spins, yields, seq + 2)
            self._then(ctx, call, status, seq + 2, cma.CLOSING, named)
        return None if self.returns == NOTHING else result

    def _then(self, ctx: Context, call: int, status: int, seq: int, what: str,
              named: bool) -> bool:
        """After compiled_cma.rest posted round seq: a round the poll did not see complete
        waited for in Python (under the call's deadline, armed here unless `named`; its
        timeout names who has not posted it: `what`), then RingError on every rank where a
        read failed. Whether the deadline is armed now."""
        ex = ctx.exchange
        ex.seq = seq
        if status == compiled_cma.LATE:
            if not named:
                ctx.waiter.start(self.name % call)
            named = True
            ex.wait(seq, what=what)
            status = compiled_cma.statuses(self.plan, seq)
        if status == compiled_cma.FAILED:
            cma.raise_failures(ex, seq)
        return named
