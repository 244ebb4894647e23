"""The per-call fast path of a repeated small host all-reduce.

A training loop calls all-reduce with the same dtype, shape and op thousands of times. The
first call of a signature goes the whole way (call.py's checks, agreement.py, the tuning
table); when it ran oneshot (ring/algorithms/oneshot.py) through the exchange window
(transport/exchange.py), what it worked out is kept here, and the next calls of that signature do only what depends on the
arrays themselves, in one compiled call (host/compiled_round.py) after a few Python checks:

    checks     the arrays are NumPy, contiguous, of the signature's dtype and shape, and
               out is new, x (or another view of x's memory), or a writeable array that
               does not overlap x (the compiled round compares the addresses before it
               posts; an out that turns out to be x's memory is looked up again as in
               place, one that overlaps it goes to the full path, which refuses it; views
               that look in place, as MPI places x and out, are looked up in place first);
    agreement  the signature's record, with this call's number, written into this rank's
               slot beside x; after the round every peer's record compared with this one.
               Any difference goes to agreement.verdict, which names it, on every rank,
               exactly as the full path does;
    data       the reduction over the posted arrays, in rank order (reduce.fold's order
               and bits: compiled, or NumPy's loops for float16 / bfloat16 and floating
               min / max).

A round the compiled poll does not see complete (a late peer, or ranks that outnumber the
cores) is waited for in Python, under the call's deadline, as every wait is.

The signature is every argument but the arrays' contents and identities: x's dtype and
shape, op, the kind of out, chunk_bytes, algorithm and dtype as passed (and for the other
collectives, which run oneshot through the window too: the collective, out's shape and
the root). Anything else (another algorithm than oneshot, async_op, a broken
communicator) takes the full path. Another collective posts x where it sends and follows
recipe.recipe instead of the fold, compiled as well. cma's calls are kept the same way
(repeated_cma.py: the window carries addresses, compiled_cma.py reads the peers' arrays).
RING_DEBUG=INFO logs fast calls too, with "path": "fast". What the fast path skips is work
whose result is the same for the same signature, so its errors and results are the full
path's (but for which NaN a NaN is: where two NaNs meet, the compiled fold and NumPy's loops
may keep different ones, sign and payload, as LLVM orders the operands: a NaN either way).
Measured in results/host-call-cost.md.

Across nodes there is no window: a oneshot of up to RIDE_BYTES rides in the agreement's MPI
allgather (ring/algorithms/oneshot.py), and its signature (`Gathered`) keeps that message
and views of every rank's row and data in the gathered buffer. A call then writes its
number and x into
the message and posts the allgather; one compiled call (host/compiled_round.gathered) compares
every rank's record and folds. A larger one keeps the message too; after the compare, x
goes in an allgather of its own, as on the full path, and one compiled call folds it
(host/compiled_round.folded). Two allgathers, always in that order and the second only once
the records agree: a rank that disagrees never posts an allgather of another size.

The same compiled round agrees on a record alone (`Agreement`, `agree_compiled`): every
call on one node whose data do not ride in the round (the Communicator's full path: the ring and
the other algorithms, the stream and kernel paths, barriers) and the kernel path's kept
calls (ring/cuda/repeated.py), on the record they kept. agreement.agree_shared's NumPy
round is left to calls whose oneshot data ride in it and to a rank whose own arguments
are bad: both meet the compiled one in the same window.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ringtypes import FLOATING, Op

from ..agreement import mine, padded, verdict
from ..call import NOTHING, OUT
from ..context import Context
from ..options import RIDE_BYTES
from ..recipe import posted, posts, recipe
from ..schedule import Collective
from ..transport.exchange import RECORD
from ..transport.messages import every_x
from . import compiled_round
from .reduce import fold, follow

KEPT = ("oneshot", "cma")  # the algorithms whose calls are kept (cma's: repeated_cma.py)
ELSEWHERE = object()  # run()'s answer when the call is not of the signature it was given


class Known:
    """What every signature keeps, whichever way its data travel."""

    __slots__ = ("op", "quiet", "name", "log", "wire", "fold")

    def __init__(self, op: Op, n: int, dtype: np.dtype, rank: int,
                 collective: Collective = Collective.ALLREDUCE, root: int = 0,
                 algorithm: str = "oneshot"):
        self.op = op
        # floating sums may overflow to inf; the full path says nothing of it either
        self.quiet = dtype in FLOATING or op is Op.AVG
        self.name = f"{collective} (call %d, rank {rank})"
        # RING_DEBUG=INFO's line for a call, as the full path writes it, marked fast
        self.log = {"rank": rank, "call": 0, "collective": str(collective),
                    "algorithm": algorithm, "count": n, "dtype": dtype.name,
                    **({"op": str(op)} if collective.reduces else {}),
                    **({"root": root} if collective.rooted else {}), "path": "fast"}
        # the compiled round (host/compiled_round.py): x and out as their dtype's bits where
        # Numba has no arithmetic for it; NumPy's own loops fold float16 / bfloat16 and
        # floating min / max (fold False); a collective that only copies copies bits
        self.wire = compiled_round.wire(dtype)
        self.fold = not collective.reduces or self.wire == dtype and not (
            dtype in FLOATING and op in (Op.MIN, Op.MAX))

    def numpy_fold(self, parts: list, out: np.ndarray) -> None:
        """out = the rank-order fold of parts with NumPy's loops (where fold is False)."""
        if self.quiet:
            with np.errstate(over="ignore", invalid="ignore"):
                fold(parts.__getitem__, self.op, len(parts), out)
        else:
            fold(parts.__getitem__, self.op, len(parts), out)


class Signature(Known):
    """What a call of one (dtype, shape, op, out kind) worked out, and the window's views
    for it: records and data of every rank, by call parity. collective: the all-reduce's
    fold, or another collective's recipe (segments; returns: OUT or NOTHING; shape:
    of a new out). memory, delta: what a given out's memory must be (compiled_round.call's).
    algorithm: oneshot's (the data in the window), or cma's (repeated_cma.Kept: the window
    carries x's address, the plan the recipe, or the segments given, and no fold of the
    window's data)."""

    __slots__ = ("row", "records", "data", "plan", "direct", "memory", "segments", "returns",
                 "shape")

    def __init__(self, ex, record: dict, op: Op, n: int, dtype: np.dtype, ndim: int, kind: int,
                 rank: int, entered: int = 0, collective: Collective = Collective.ALLREDUCE,
                 root: int = 0, memory: int | None = None, delta: int = 0,
                 shape: tuple = (), algorithm: str = "oneshot", segments=None):
        super().__init__(op, n, dtype, rank, collective, root, algorithm)
        row = mine(record, None)
        width = row.size
        self.records = [[ex.record(q, p)[:width] for q in range(ex.size)] for p in (0, 1)]
        window = algorithm == "oneshot"  # the data travel in the window
        self.data = [[ex.data(q, p, dtype, posted(collective, n, ex.size))
                      for q in range(ex.size)] for p in (0, 1)] if window else None
        self.segments = recipe(collective, ex.size, ex.rank, root, n) if segments is None \
            else segments
        # the window by address; the all-reduce's recipe is the compiled round's own fold
        self.plan, self.row = compiled_round.plan(
            ex.rank, ex.area, op, self.fold and window, ex.bases, row, entered,
            None if collective is Collective.ALLREDUCE and window else self.segments,
            posts(collective, ex.rank, root), delta)
        self.direct = self.wire == dtype and ndim == 1  # x and out as they come
        # what a given out's memory must be, checked every call (out None: nothing)
        self.memory = (compiled_round.OWN if kind == 2 else compiled_round.SAME) if memory is None \
            else memory
        self.returns = NOTHING if collective in (Collective.REDUCE, Collective.GATHER) \
            and rank != root else OUT
        self.shape = shape

    def numpy(self, parity: int, out: np.ndarray) -> None:
        """The recipe with NumPy's loops (where fold is False)."""
        follow(self.segments, self.data[parity].__getitem__, self.op, out)


class Gathered(Known):
    """What a oneshot of one signature across nodes worked out: the agreement's message
    (this rank's record, then x's bytes when they ride: agreement.agree's layout) and the
    gathered buffer that host/compiled_round.gathered compares (and folds, when x rode)."""

    __slots__ = ("code", "row", "ride", "everyone", "parts", "args", "me", "own")

    def __init__(self, comm: MPI.Comm, record: dict, op: Op, n: int, dtype: np.dtype,
                 kind: int, rank: int):
        super().__init__(op, n, dtype, rank)
        self.code, self.me = int(op), comm.rank
        row = mine(record, None)
        message = padded(row)
        self.row = message[:row.size]  # row[0] is the call's number (agreement.FIELDS)
        nbytes = n * dtype.itemsize
        self.everyone = np.empty((comm.size, message.size), np.int64)
        self.args = ([message, MPI.INT64_T], [self.everyone, MPI.INT64_T])
        self.own = kind == 2  # a given out apart from x (else: x's memory)
        if nbytes > RIDE_BYTES:  # x follows in its own allgather (messages.every_x)
            self.ride = self.parts = None
            return
        self.ride = message[RECORD:].view(np.uint8)[:nbytes]
        self.parts = [self.everyone[q, RECORD:].view(np.uint8)[:nbytes].view(dtype)
                      for q in range(comm.size)]

    def run(self, ctx: Context, x, out):
        return run_gathered(ctx, self, x, out)


def run_gathered(ctx: Context, s: Gathered, x, out):
    """run() for a signature across nodes: x into the message (or, larger, after it in an
    allgather of its own, messages.every_x, as the full path's),
    the allgathers bounded by the call's deadline, then compare and fold."""
    if not (out is None or out is x or (not np.may_share_memory(x, out) if s.own else
                                        _address(out) == _address(x))):
        return ELSEWHERE
    call = ctx.calls + 1
    waiter = ctx.waiter
    waiter.start(s.name % call)
    ctx.backend.entered(call)
    s.row[0] = call
    if s.ride is not None:
        s.ride[...] = x.reshape(-1).view(np.uint8)
    req = ctx.comm.Iallgather(*s.args)
    ctx.calls = call
    waiter.until(req.Test, lambda: "waiting for every rank to join the call")
    result = np.empty(x.shape, x.dtype) if out is None else out
    flat = result.reshape(-1).view(s.wire)
    if compiled_round.gathered(s.everyone, s.me, s.code, s.fold and s.ride is not None,
                          flat) == compiled_round.MISMATCH:
        verdict(s.everyone[:, :s.row.size].copy(), s.row.copy(), None, waiter.context)
    parts = s.parts
    if s.ride is None:  # the records agree: every rank posts x's allgather, of one size
        rows = every_x(ctx.comm, waiter, x, ctx.scratch)
        if s.fold:
            compiled_round.folded(rows, s.code, flat)
            return result
        parts = [row.view(x.dtype) for row in rows]
    if not s.fold:
        s.numpy_fold(parts, result.reshape(-1))
    return result


LIMIT = 64  # signatures kept per communicator (a loop has a few; a sweep starts over)
PLAIN = (str, int, type(None))  # options whose value is the signature's (op, chunk_bytes, ...)


class Agreement:
    """A call's agreement alone, compiled: the round posts the call's record and compares
    every peer's with it, nothing else (agreement.agree_shared's NumPy round costs tens of
    microseconds, this one a few). One per communicator, its row rewritten per call
    (Communicator._enter), and one per kept kernel-path signature on its kept record
    (ring/cuda/repeated.py)."""

    __slots__ = ("row", "records", "plan")

    def __init__(self, ex, record: dict):
        row = mine(record, None)
        self.records = [[ex.record(q, p)[:row.size] for q in range(ex.size)] for p in (0, 1)]
        self.plan, self.row = compiled_round.plan(ex.rank, ex.area, Op.SUM, False, ex.bases, row,
                                             posts=False)


NO_DATA = np.empty(0, np.int64)  # x and out of a round that carries no data


def agree_compiled(ctx: Context, a: Agreement, call: int) -> None:
    """Call number `call`'s agreement on a's record, as agreement.agree_shared (every rank
    on one node, the call's deadline armed): raises on every rank where a rank's record
    differs, naming it."""
    seq = ctx.exchange.next_round()
    waiter = ctx.waiter
    status = compiled_round.call(a.plan, NO_DATA, NO_DATA, call, seq, waiter.spins, waiter.yields,
                            compiled_round.ANY)
    if status != compiled_round.DONE:
        settle_round(ctx, a, status, seq, NO_DATA)


def post_kept(ctx: Context, a: Agreement, call: int) -> None:
    """A kept kernel-path call's agreement on a's record (every rank on one node, the
    call's deadline armed), without waiting for the peers: its record is posted as the
    next round and read back at the next round of any kind (read_back), before this rank
    posts again. Every kernel of the path checks on the GPU that every rank runs the same
    call before it touches any peer's data (ring/cuda/board.py); the host's round is still
    posted for a peer whose call takes the full path (its agreement reads this record),
    and a rank posts round s only once every peer has posted s - 1, so no row is written
    again before it is read (2 parities). The host's wait is one call behind: a kept call
    waits for no peer that is not at least at the call before."""
    posted, ctx.posted = ctx.posted, None
    seq = ctx.exchange.next_round()
    if posted is None:
        compiled_round.post(a.plan, NO_DATA, call, seq)
    else:  # (read_back and the post in one dispatch)
        before, seq_before = posted
        status = compiled_round.settle_then_post(before.plan, seq_before, a.plan, NO_DATA,
                                                 call, seq, ctx.waiter.spins,
                                                 ctx.waiter.yields)
        if status != compiled_round.DONE:
            settle_round(ctx, before, status, seq_before, NO_DATA)  # (waits, or raises)
            compiled_round.post(a.plan, NO_DATA, call, seq)
    ctx.posted = (a, seq)


def read_back(ctx: Context) -> None:
    """Before any exchange round: the rest of a kept call's round posted earlier
    (post_kept), if any: wait (under this call's deadline) for every peer's record of it
    and compare; a difference raises agreement.verdict's error on every rank."""
    posted, ctx.posted = ctx.posted, None
    if posted is not None:
        a, seq = posted
        status = compiled_round.settle(a.plan, NO_DATA, seq, ctx.waiter.spins,
                                       ctx.waiter.yields)
        if status != compiled_round.DONE:
            settle_round(ctx, a, status, seq, NO_DATA)


def settle_round(ctx: Context, s: Signature | Agreement, status: int, seq: int, out) -> None:
    """The rest of compiled round seq that returned WAITING or MISMATCH, the call's deadline
    armed: the peers waited for in Python (a timeout names who is late), then compared; a
    difference raises agreement.verdict's error, as the full path's agreement does."""
    if status == compiled_round.WAITING:
        ctx.wait_round(seq)
        status = compiled_round.finish(s.plan, out, seq)
    if status == compiled_round.MISMATCH:
        records = s.records[seq & 1]
        verdict(np.stack([r.copy() for r in records]), s.row, None, ctx.waiter.context)


def arrays(s: Signature, x, out):
    """(the call's result, x and that result as the compiled round takes them: 1-D, of
    the signature's wire dtype)."""
    result = out if out is not None else np.empty(s.shape or x.shape, x.dtype) \
        if s.returns == OUT else x  # (where nothing is written: x, never written)
    if s.direct and result.ndim == 1:
        return result, x, result
    return result, x.reshape(-1).view(s.wire), result.reshape(-1).view(s.wire)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def plain(op, chunk_bytes, algorithm, dtype) -> bool:
    """Whether the options are values a signature may hold (key's callers test the usual
    call first, inline: the defaults and op by name)."""
    return type(chunk_bytes) in PLAIN and type(algorithm) in PLAIN and type(dtype) in PLAIN \
        and (type(op) is str or isinstance(op, Op))


def _writeable(out: np.ndarray) -> bool:
    flags = out.flags
    return flags.c_contiguous and flags.writeable


def _kind(x: np.ndarray, out: np.ndarray) -> int:
    """A given out's kind: 1 where it looks in place (a view of x's array, or x of out's:
    MPI's places; or views of one array: the harness's), else 2 (apart). The compiled round
    checks out's address either way; a wrong guess costs the other signature's lookup (and,
    where that signature is kept too, one dispatch that posts nothing: views of one array
    that lie apart). Asking NumPy whether two views overlap cost more than the rest of the
    key (np.may_share_memory: 0.4 µs of 1.0)."""
    xb, ob = x.base, out.base
    return 1 if xb is out or ob is x or xb is not None and xb is ob else 2


def key(x, out, op, chunk_bytes=None, algorithm=None, dtype=None):
    """The signature of a call, or None where the fast path cannot take it (arrays not
    plain contiguous NumPy). An out of its own (another array object) is taken as apart
    from x's memory or in place by _kind's guess: the compiled round checks that before it
    posts anything (run returns ELSEWHERE when it does not hold, and other(key) is the
    signature to try next)."""
    if type(x) is not np.ndarray or not (chunk_bytes is algorithm is dtype is None
                                         and type(op) is str
                                         or plain(op, chunk_bytes, algorithm, dtype)):
        return None
    d, shape = x.dtype, x.shape
    if out is None:
        kind = 0
    elif out is x:
        kind = 1
    elif type(out) is np.ndarray and (out.dtype is d or out.dtype == d) and out.shape == shape \
            and _writeable(out):
        kind = _kind(x, out)
    else:
        return None
    return (d, shape, op, kind, chunk_bytes, algorithm, dtype) if x.flags.c_contiguous else None


def key_of(collective: Collective, x, out, op, root, chunk_bytes=None, algorithm=None,
           dtype=None):
    """key() for the other collectives: out of any shape (kind at the same place), then
    the collective, out's shape and the root. x must be an array (scatter's None is not)."""
    if type(x) is not np.ndarray or type(root) is not int \
            or not (chunk_bytes is algorithm is dtype is None and type(op) is str
                    or plain(op, chunk_bytes, algorithm, dtype)):
        return None
    if out is None:
        kind, shape = 0, None
    elif out is x:
        kind, shape = 1, x.shape
    elif type(out) is np.ndarray and (out.dtype is x.dtype or out.dtype == x.dtype) \
            and _writeable(out):
        kind, shape = _kind(x, out), out.shape
    else:
        return None
    return (x.dtype, x.shape, op, kind, chunk_bytes, algorithm, dtype, collective, shape, root) \
        if x.flags.c_contiguous else None


def in_place(k):
    """The signature of the same call with out another view of x's memory (in place)."""
    return k[:3] + (1,) + k[4:]


def other(k):
    """The signature to try where k's (out another array than x) was not this call's: in
    place for an out taken as apart from x, apart for one taken as in place."""
    return k[:3] + (3 - k[3],) + k[4:]


def learnt_key(c, x, out, k, rank: int):
    """Where a oneshot call `c` (call.Call, just run on the full path by rank `rank`) is
    kept: (key, memory, delta), memory and delta what out's memory must be on later calls
    (compiled_round's ANY / OWN / SAME; None: by the key's kind, the all-reduce's), or None
    where there is no key (the call's arrays are not the fast path's)."""
    if k is None:
        return None
    collective = c.collective
    if collective is Collective.ALLREDUCE:  # out's memory looked at once, here
        if out is None or out is x:
            return k, None, 0
        # the kind that holds, whatever _kind guessed (an out that overlaps x elsewhere
        # never gets here: call.in_place_position refused it)
        at = _address(out) - _address(x)
        return k[:3] + (2 if at else 1,) + k[4:], None, 0
    reads = collective is not Collective.SCATTER or rank == c.root  # x is read
    if out is None or collective is Collective.BROADCAST or c.result is None or not reads:
        return k, compiled_round.ANY, 0
    if c.in_place:
        return in_place(k), compiled_round.SAME, _address(out) - _address(x)
    return (other(k) if k[3] == 1 else k), compiled_round.OWN, 0  # (key_of's guess: apart)


def run(ctx: Context, s: Signature | Gathered, x, out):  # (or repeated_cma.Kept)
    """One call of a known signature (the communicator usable, every rank on one node); the result, or the full path's error. ELSEWHERE: out's memory is not what the
    signature says (x's, apart from x's); nothing happened, the caller looks further.
    The call's deadline is armed only when it has to wait in Python (a round that completes
    in the compiled poll cannot time out). Across nodes: run_gathered."""
    if type(s) is not Signature:  # across nodes (Gathered), or cma's (repeated_cma.Kept)
        return s.run(ctx, x, out)
    call = ctx.calls + 1
    seq = ctx.exchange.seq + 1
    result, flat_x, flat_out = arrays(s, x, out)
    waiter = ctx.waiter
    status = compiled_round.call(s.plan, flat_x, flat_out, call, seq, waiter.spins, waiter.yields,
                            compiled_round.ANY if out is None or out is x else s.memory)
    if status >= compiled_round.ALIASED:
        return ELSEWHERE
    ctx.calls, ctx.exchange.seq = call, seq
    if status != compiled_round.DONE:
        waiter.start(s.name % call)
        settle_round(ctx, s, status, seq, flat_out)
    if not s.fold:
        s.numpy(seq & 1, result.reshape(-1))
    return None if s.returns == NOTHING else result
