"""The fast path's exchange round (ring/host/repeated.py), compiled: one call from Python does what
an 8-byte all-reduce needs, so that its cost is a Numba dispatch, not a dozen NumPy calls.

    post     the call's number where the peers' timeout messages read it; this call's
             record row and x into this rank's slot of the exchange window
             (transport/exchange.py's layout), then its round counter, store-release
    poll     every peer's counter, load-acquire, `spins` times, then `yields` times each
             after sched_yield (ranks that outnumber the cores); a peer not there by then
             leaves the rest to Python (WAITING), whose wait is bounded by the
             communicator's timeout and names who is late
    compare  every peer's record with this one, field by field (MISMATCH: Python's
             agreement.verdict names the difference, on every rank)
    fold     out = ((x0 op x1) op ...) op x(K-1), avg divided by K once: oneshot.fold's
             order, and the same values (float32 avg divides in float64 and rounds once,
             which gives the correctly rounded float32 quotient)

Any other collective (oneshot.recipe) posts x only where it sends (broadcast and scatter:
the root) and, instead of the fold, follows its recipe: segments of out, each the fold (or,
from one rank, the copy) of a stretch of the posted data, kept in the plan.

gathered() compares and folds the same way over the agreement's allgather across nodes;
folded() folds a larger oneshot's own allgather there.

fold=False stops after compare (dtypes and ops whose NumPy loops the caller keeps:
float16 / bfloat16, floating min / max, whose signed zeros NumPy orders its own way).
The window's segments are addressed by their base addresses, kept with the rest of what a
signature fixes in one int64 array (`plan`).
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit

from ringtypes import DTYPES, REDUCIBLE, Op

from .reduce import HALF
from ..transport.atomic import pointer, poll, store_release
from ..transport.exchange import HEADER, RECORD, ROUND1

DONE, WAITING, MISMATCH, ALIASED, APART, OVERLAP = 0, 1, 2, 3, 4, 5
# what out's memory must be: unchecked, apart from x's, x's (at the plan's DELTA bytes
# from x: the in-place position, call.py's)
ANY, OWN, SAME = 0, 1, 2
SUM, PROD, MIN, MAX, AVG = int(Op.SUM), int(Op.PROD), int(Op.MIN), int(Op.MAX), int(Op.AVG)
# a signature's plan: one int64 array (one argument is cheaper to pass than several):
# these fields, then K segment addresses, the record row (NROW int64s), the recipe
# (NSEG rows of WIDTH: out_lo, n, then (rank, lo) per source; NSEG -1: the all-reduce's,
# every rank's data folded in rank order into all of out)
ME, AREA, OP, FOLD, K, ENTERED, POSTS, DELTA, NROW, NSEG, WIDTH, BASES = range(12)


def plan(rank: int, area: int, op: Op, fold: bool, bases: np.ndarray, row: np.ndarray,
         entered: int = 0, segments=None, posts: bool = True, delta: int = 0):
    """The plan of a signature, and its record row (a view into it; call() writes the call
    number into row[0]). entered: the address where this rank notes the number of the call
    it is in, for the peers' timeout messages (host/backend.py's header; 0: nowhere).
    segments: oneshot.recipe's (None: the all-reduce's); posts: whether x is posted;
    delta: out's address less x's when out must be x's (SAME)."""
    k = bases.size
    if segments is None:
        nseg, width, flat = -1, 0, []
    else:
        nseg, width = len(segments), 2 + 2 * max((len(s[2]) for s in segments), default=0)
        flat = [v for lo, n, sources in segments
                for v in (lo, n, *[i for src in sources for i in src])
                + (0,) * (width - 2 - 2 * len(sources))]
    p = np.concatenate([[rank, area, int(op), int(fold), k, entered, int(posts), delta,
                         row.size, nseg, width], bases, row, flat]).astype(np.int64)
    return p, p[BASES + k:BASES + k + row.size]


@njit(inline="always")
def slot_of(plan, seq):
    return HEADER + (seq & 1) * plan[AREA]


@njit(inline="always")
def _at(address, like, n):
    """n elements of like's dtype at address."""
    return carray(pointer(address), n * like.itemsize, np.uint8).view(like.dtype)


@njit(inline="always")
def _part(base, slot, like, n):
    """The data of the slot at base + slot, as n elements of like's dtype."""
    return _at(base + slot + RECORD * 8, like, n)


@njit(inline="always")
def combine(op, a, b):
    if op == PROD:
        return a * b
    if op == MIN:
        return a if a < b else b
    if op == MAX:
        return a if a > b else b
    return a + b


@njit(inline="always")
def fold_at(out, op, starts):
    """out = the rank-order fold of the data at `starts` (addresses, one per rank)."""
    n, k = out.size, starts.size
    first = _at(starts[0], out, n)
    for i in range(n):
        out[i] = first[i]
    for q in range(1, k):
        part = _at(starts[q], out, n)
        for i in range(n):
            out[i] = combine(op, out[i], part[i])
    if op == AVG:
        for i in range(n):
            out[i] = out[i] / k


@njit(inline="always")
def _follow(out, op, plan, data):
    """The recipe: each segment of out folded (or copied) from the posted data; data: the
    addresses of every rank's posted data."""
    start = BASES + plan[K] + plan[NROW]
    width, nsources = plan[WIDTH], (plan[WIDTH] - 2) // 2
    for s in range(plan[NSEG]):
        seg = plan[start + s * width:start + (s + 1) * width]
        lo, n = seg[0], seg[1]
        starts = np.empty(nsources, np.int64)
        for i in range(nsources):
            starts[i] = data[seg[2 + 2 * i]] + seg[3 + 2 * i] * out.itemsize
        fold_at(out[lo:lo + n], op, starts)


@njit(nogil=True, cache=True)
def finish(plan, out, seq):
    """compare, then fold or follow the recipe (after every peer has posted round seq)."""
    k, me, op = plan[K], plan[ME], plan[OP]
    row = plan[BASES + k:BASES + k + plan[NROW]]
    slot = slot_of(plan, seq)
    for q in range(k):
        if q == me:
            continue
        theirs = carray(pointer(plan[BASES + q] + slot), row.size, np.int64)
        for i in range(row.size):
            if theirs[i] != row[i]:
                return MISMATCH
    if plan[FOLD]:
        data = plan[BASES:BASES + k] + (slot + RECORD * 8)
        if plan[NSEG] < 0:
            fold_at(out, op, data)
        else:
            _follow(out, op, plan, data)
    return DONE


@njit(nogil=True, cache=True)
def gathered(everyone, me, op, fold, out):
    """finish() for the agreement's allgather across nodes (fast.Gathered): row q of
    everyone is rank q's message, its record (RECORD int64s) then its data."""
    k, width = everyone.shape
    for q in range(k):
        for i in range(RECORD):
            if everyone[q, i] != everyone[me, i]:
                return MISMATCH
    if fold:
        fold_at(out, op, everyone.ctypes.data + np.arange(k) * (width * 8) + RECORD * 8)
    return DONE


@njit(nogil=True, cache=True)
def folded(rows, op, out):
    """out = the rank-order fold of the rows of rows (K rows of out's bytes, rank q's x
    at row q: a oneshot's own allgather after the agreement's, fast.Gathered)."""
    fold_at(out, op, rows.ctypes.data + np.arange(rows.shape[0]) * rows.shape[1])


@njit(nogil=True, cache=True)
def call(plan, x, out, number, seq, spins, yields, memory):
    """post call `number` as exchange round `seq`, poll, then finish. A peer not there
    within `spins` polls, then `yields` polls each after giving the core away: WAITING.
    memory: what the signature says of out (ANY: nothing to check; OWN: apart from x's;
    SAME: x's own, at the plan's DELTA from it: in place). Where out says otherwise
    (ALIASED: x's memory, APART: not in place, OVERLAP: overlapping x otherwise), nothing
    is posted."""
    status = memory_status(plan, x, out, memory)
    if status != DONE:
        return status
    _post(plan, x, number, seq)
    return settle(plan, out, seq, spins, yields)


@njit(inline="always")
def memory_status(plan, x, out, memory):
    """DONE where out's memory is what `memory` says (call's), else ALIASED, APART or
    OVERLAP. Empty arrays are nowhere: an empty call's out is never x's memory (its full
    path is never in place) and is what any signature says."""
    if memory != ANY and x.size and out.size:
        xa, oa = np.int64(x.ctypes.data), np.int64(out.ctypes.data)  # (uintp in Numba)
        xb, ob = x.size * x.itemsize, out.size * out.itemsize
        if memory == SAME:
            if oa - xa != plan[DELTA]:
                return APART
        elif oa == xa:
            return ALIASED
        elif oa < xa + xb and xa < oa + ob:
            return OVERLAP
    return DONE


@njit(nogil=True, cache=True, inline="always")
def _post(plan, x, number, seq):
    k, me = plan[K], plan[ME]
    if plan[ENTERED]:
        store_release(plan[ENTERED], number)
    row = plan[BASES + k:BASES + k + plan[NROW]]
    row[0] = number  # agreement.FIELDS[0]
    slot = slot_of(plan, seq)
    mine = plan[BASES + me]
    record = carray(pointer(mine + slot), row.size, np.int64)
    for i in range(row.size):
        record[i] = row[i]
    if plan[POSTS]:
        data = _part(mine, slot, x, x.size)
        for i in range(x.size):
            data[i] = x[i]
    store_release(mine + ROUND1 * 8, seq)


@njit(nogil=True, cache=True)
def post(plan, x, number, seq):
    """call()'s post alone: the record (and x) of call `number` as round seq, published;
    settle() does the rest, later (a kept kernel-path call: ring/host/repeated.py's
    post_kept)."""
    _post(plan, x, number, seq)


@njit(nogil=True, cache=True)
def settle_then_post(before, seq_before, plan, none, number, seq, spins, yields):
    """settle(before, none, seq_before), then, where it is DONE, post(plan, none, number,
    seq): a kept call's round read back and the next posted in one dispatch (none: an
    empty array, the data of rounds that carry none). settle's status (nothing posted
    unless DONE)."""
    status = settle(before, none, seq_before, spins, yields)
    if status == DONE:
        _post(plan, none, number, seq)
    return status


@njit(nogil=True, cache=True)
def settle(plan, out, seq, spins, yields):
    """call()'s poll and finish of round seq (posted already): DONE, WAITING or MISMATCH."""
    k, me = plan[K], plan[ME]
    for q in range(k):
        if q == me:
            continue
        spins, yields = poll(plan[BASES + q] + ROUND1 * 8, seq, spins, yields)
        if spins < 0:
            return WAITING
    return finish(plan, out, seq)


def warm_agreement() -> None:
    """Load (from Numba's cache, else compile) the round that agrees on a call's record
    alone, on a private buffer laid out as one rank's segment. A process's first load of
    any compiled function also sets up Numba's CPU target: 0.25 s of the first call on an
    idle 2-core machine, over a second where nine ranks share its cores, during which a
    rank's peers wait for it under the call's deadline. The Communicator's constructor
    calls this where no deadline runs, so that a short timeout does not expire on a peer
    that is only loading code."""
    seg = np.zeros(HEADER + 2 * (RECORD * 8 + 64), np.uint8)
    p, _ = plan(0, RECORD * 8 + 64, Op.SUM, False, np.array([seg.ctypes.data]),
                np.zeros(4), posts=False)
    none = np.empty(0, np.int64)
    call(p, none, none, 1, 1, 0, 0, ANY)


def warm() -> None:
    """Compile (or load from Numba's cache) the rounds of every dtype the fast path takes,
    on a private buffer laid out as one rank's segment."""
    seg = np.zeros(HEADER + 2 * (RECORD * 8 + 64), np.uint8)
    p, _ = plan(0, RECORD * 8 + 64, Op.SUM, True, np.array([seg.ctypes.data]), np.zeros(4))
    everyone = np.zeros((2, RECORD + 2), np.int64)
    for dt in DTYPES:
        if dt in REDUCIBLE:
            x = np.zeros(2, wire(dt))
            call(p, x, x.copy(), 1, 1, 0, 0, OWN)
            gathered(everyone, 0, SUM, True, x)
            folded(np.zeros((2, x.nbytes), np.uint8), SUM, x)


def wire(dtype: np.dtype) -> np.dtype:
    """The dtype the compiled round sees dtype's elements as: float16 and bfloat16 as their
    bits (Numba has no bfloat16; their arithmetic is half.py's), and so every dtype that is
    not NumPy's own (ml_dtypes' float8: only moved, never reduced)."""
    return np.dtype(f"u{dtype.itemsize}") if dtype in HALF or dtype.isbuiltin != 1 else dtype
