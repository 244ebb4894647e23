"""cma's compiled calls (ring/host/compiled_cma.py) in one process: K segments laid out as
the exchange window's, the peers' rounds posted by hand with the addresses of arrays of this
process (a process may read its own memory by process_vm_readv), and the result compared
bit for bit with reduce.follow over the recipe (NumPy's loops, the full path's), in pieces
as small as one element, in place and out."""

import errno
import os
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ring.host import compiled_cma, compiled_round
from ring.host.reduce import follow
from ring.recipe import halves, posts, recipe
from ring.schedule import Collective
from ring.transport.exchange import RECORD
from ringtypes import FLOATING, Op

from .inputs import same_bits
from .test_compiled_round import AREA, NATIVE, Window, values

C = Collective
NUMBER = 41  # the call's number, in every record
BLOCKS = (C.REDUCE_SCATTER, C.SCATTER, C.ALLTOALL)  # x holds K blocks of a rank's count


class Round:
    """Rank `me` of k, the others' rounds posted by hand: call seq's record and the
    address of what each peer posts, then the closing round seq + 1 with each status."""

    def __init__(self, k, me, collective, root, op, count, seq=7, segments=None):
        self.w, self.k, self.me, self.seq = Window(k), k, me, seq
        self.row = np.arange(6, dtype=np.int64)
        self.row[0] = NUMBER  # (call() writes the call's number there)
        self.segments = recipe(collective, k, me, root, count) if segments is None \
            else segments
        self.plan, _ = compiled_round.plan(me, AREA, op, False, self.w.bases, self.row,
                                           segments=self.segments,
                                           posts=posts(collective, me, root))
        self.pids = np.full(k, os.getpid(), np.int64)

    def peers_post(self, xs, row=None, outs=None):
        for q in range(self.k):
            if q != self.me:
                address = np.array([xs[q].ctypes.data,
                                    0 if outs is None else outs[q].ctypes.data], np.int64)
                self.w.post(q, self.seq, self.row if row is None else row, address)

    def peers_close(self, statuses=None, seq=None):
        for q in range(self.k):
            if q != self.me:
                status = 0 if statuses is None else statuses[q]
                self.w.post(q, self.seq + 1 if seq is None else seq,
                            np.array([status], np.int64), np.empty(0, np.uint8))

    def mine(self, seq, field=0):
        b = self.w.slot(self.me, seq)
        return int(self.w.segs[self.me][b:b + RECORD * 8].view(np.int64)[field])

    def posted_address(self, field=0):
        d = self.w.slot(self.me, self.seq) + RECORD * 8
        return int(self.w.segs[self.me][d:d + 16].view(np.int64)[field])

    def counter(self):
        return int(np.frombuffer(self.w.segs[self.me][:8], np.int64)[0])


def arrays(collective, k, me, root, n, dtype, in_place, rng):
    """(every rank's posted x, this rank's x and out, the call's count), n elements a
    rank (a block, where x holds K)."""
    per = n * k if collective in BLOCKS else n
    xs = [values(dtype, per, rng) for _ in range(k)]
    count = n * k if collective in (C.ALLGATHER, C.GATHER) else per
    x = xs[me].copy()
    if not in_place:
        return xs, x, np.full(count if collective is not C.REDUCE_SCATTER and collective
                              is not C.SCATTER else n, 7, dtype), count
    if collective in (C.ALLGATHER, C.GATHER):
        out = np.full(count, 7, dtype)
        out[me * n:(me + 1) * n] = x
        return xs, out[me * n:(me + 1) * n], out, count
    if collective in (C.REDUCE_SCATTER, C.SCATTER):
        return xs, x, x[me * n:(me + 1) * n], count
    return xs, x, x, count


@settings(max_examples=200, deadline=None)
@given(k=st.integers(1, 4), me=st.integers(0, 3), root=st.integers(0, 3),
       collective=st.sampled_from([c for c in C if c is not C.BARRIER]),
       dtype=st.sampled_from(NATIVE), op=st.sampled_from(list(Op)), n=st.integers(1, 40),
       piece=st.sampled_from([1, 3, 1 << 18]), in_place=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_the_reads_follow_the_recipe_with_numpys_bits(k, me, root, collective, dtype, op, n,
                                                      piece, in_place, seed):
    """Every collective, rank and root: out is reduce.follow's over the peers' posted arrays
    and this rank's x, bit for bit (a NaN with any NaN), whatever the piece (in elements
    here) and in place (out over x, where the fold writes this rank's part before it reads
    it); the agreement round posts the address of what this rank sends and the call's
    number, the closing round status 0."""
    me, root = me % k, root % k
    if not collective.reduces:
        op = Op.SUM
    elif op is Op.AVG and dtype not in FLOATING or dtype in FLOATING and op in (Op.MIN, Op.MAX):
        return  # refused before any round, or the full path's NumPy loops (not kept)
    if in_place and collective in (C.BROADCAST, C.SCATTER):
        in_place = False  # (their in-place position: x is the root's out, or a block)
    rng = np.random.default_rng(seed)
    xs, x, out, count = arrays(collective, k, me, root, n, dtype, in_place, rng)
    r = Round(k, me, collective, root, op, count)
    want = out.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        follow(r.segments, xs.__getitem__, op, want)
    sent = x.copy() if in_place else x  # (what the peers would read: here they read xs)
    r.peers_post(xs)
    assert compiled_cma.call(r.plan, x, out, sent, NUMBER, r.seq, 100, 0,
                             compiled_round.ANY) == compiled_round.DONE
    assert r.mine(r.seq) == NUMBER and r.counter() == r.seq
    if posts(collective, me, root):
        assert r.posted_address() == sent.ctypes.data
        assert r.posted_address(1) == out.ctypes.data
    r.peers_close()
    parts = np.empty(4 * piece * dtype.itemsize, np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = compiled_cma.rest(r.plan, x, out, r.seq, 0, r.pids, parts,
                                   piece * dtype.itemsize, 100, 0, r.seq + 1)
    assert status == compiled_round.DONE
    assert r.counter() == r.seq + 1 and r.mine(r.seq + 1) == 0
    assert same_bits(out, want), (out, want)


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 4), me=st.integers(0, 3),
       collective=st.sampled_from([C.ALLGATHER, C.ALLREDUCE, C.ALLTOALL, C.GATHER]),
       n=st.integers(1, 20), seed=st.integers(0, 2**32 - 1))
def test_whole_is_call_then_rest_in_one_dispatch(k, me, collective, n, seed):
    """whole(): with every peer's record there, call's round and rest's reads and closing
    round, as the two apart (the same bits, the same rounds posted); with a peer's round
    missing, call's WAITING and nothing read or closed; with out's memory other than the
    signature says, nothing posted."""
    me = me % k
    rng = np.random.default_rng(seed)
    xs, x, out, count = arrays(collective, k, me, 0, n, np.dtype(np.float32), False, rng)
    parts = np.empty(4 * 64, np.uint8)
    apart = Round(k, me, collective, 0, Op.SUM, count)
    apart.peers_post(xs)
    apart.peers_close()
    want = out.copy()
    assert compiled_cma.call(apart.plan, x, want, x, NUMBER, apart.seq, 100, 0,
                             compiled_round.ANY) == compiled_round.DONE
    assert compiled_cma.rest(apart.plan, x, want, apart.seq, 0, apart.pids, parts, 64, 100, 0,
                             apart.seq + 1) == compiled_round.DONE
    r = Round(k, me, collective, 0, Op.SUM, count)
    r.peers_post(xs)
    r.peers_close()
    got = out.copy()
    assert compiled_cma.whole(r.plan, x, got, x, NUMBER, r.seq, 100, 0, compiled_round.ANY,
                              r.pids, parts, 64) == compiled_round.DONE
    assert same_bits(got, want), (got, want)
    assert r.counter() == r.seq + 1 and r.mine(r.seq) == NUMBER and r.mine(r.seq + 1) == 0
    if k == 1:
        return
    r = Round(k, me, collective, 0, Op.SUM, count)  # no peer there: the agreement waits
    got = out.copy()
    assert compiled_cma.whole(r.plan, x, got, x, NUMBER, r.seq, 50, 0, compiled_round.ANY,
                              r.pids, parts, 64) == compiled_round.WAITING
    assert r.counter() == r.seq and r.mine(r.seq) == NUMBER  # posted, then nothing more
    assert got.tobytes() == out.tobytes()
    r = Round(k, me, collective, 0, Op.SUM, count)
    assert compiled_cma.whole(r.plan, x, x, x, NUMBER, r.seq, 50, 0, compiled_round.OWN,
                              r.pids, parts, 64) == compiled_round.ALIASED
    assert r.counter() == 0


def test_a_read_that_fails_fails_the_call_and_says_why():
    """A peer's address this process cannot read: the read's errno goes into the closing
    round's record (FAILED once every peer has posted it); a peer's failure fails this
    rank's call too; a peer not there is LATE, then statuses() says the rest."""
    r = Round(3, 0, C.ALLGATHER, 0, Op.SUM, 6)
    xs = [np.arange(2, dtype=np.float32) + q for q in range(3)]
    out = np.zeros(6, np.float32)
    r.peers_post(xs)
    r.w.post(2, r.seq, r.row, np.array([8], np.int64))  # rank 2's: an address nobody maps
    assert compiled_cma.call(r.plan, xs[0], out, xs[0], NUMBER, r.seq, 100, 0,
                             compiled_round.ANY) == compiled_round.DONE
    parts = np.empty(0, np.uint8)
    assert compiled_cma.rest(r.plan, xs[0], out, r.seq, 0, r.pids, parts, 64, 100, 0,
                             r.seq + 1) == \
        compiled_cma.LATE  # no peer has closed yet
    assert r.mine(r.seq + 1) == errno.EFAULT
    r.peers_close()
    assert compiled_cma.statuses(r.plan, r.seq + 1) == compiled_cma.FAILED

    r = Round(2, 1, C.ALLGATHER, 0, Op.SUM, 4)  # this rank reads fine, its peer did not
    xs = [np.arange(2, dtype=np.int32) + q for q in range(2)]
    out = np.zeros(4, np.int32)
    r.peers_post(xs)
    assert compiled_cma.call(r.plan, xs[1], out, xs[1], NUMBER, r.seq, 100, 0,
                             compiled_round.ANY) == compiled_round.DONE
    r.peers_close({0: errno.EPERM})
    assert compiled_cma.rest(r.plan, xs[1], out, r.seq, 0, r.pids, np.empty(0, np.uint8), 64,
                             100, 0, r.seq + 1) == compiled_cma.FAILED
    assert r.mine(r.seq + 1) == 0 and out.tolist() == [0, 1, 1, 2]


def test_a_process_that_is_gone_is_a_failure_not_a_crash():
    """A read from a process id that names no process: ESRCH, returned."""
    into = np.zeros(4, np.uint8)
    assert compiled_cma.read(2**31 - 1, into.ctypes.data, into.ctypes.data, 4,
                             np.empty(4, np.int64)) == errno.ESRCH


def test_a_peer_late_to_the_agreement_or_with_another_record_is_python_s():
    """call(): WAITING where a peer has not posted the round (nothing read), MISMATCH where
    its record differs; out's memory other than the signature says: nothing posted."""
    r = Round(2, 0, C.ALLGATHER, 0, Op.SUM, 4)
    x, out = np.ones(2, np.float32), np.zeros(4, np.float32)
    assert compiled_cma.call(r.plan, x, out, x, NUMBER, r.seq, 50, 0,
                             compiled_round.ANY) == compiled_round.WAITING
    other = r.row.copy()
    other[3] += 1
    r.peers_post([x, x], row=other)
    assert compiled_round.finish(r.plan, out[:0], r.seq) == compiled_round.MISMATCH
    assert (out == 0).all()
    r = Round(2, 0, C.ALLGATHER, 0, Op.SUM, 4)
    assert compiled_cma.call(r.plan, x, out[:2], x, NUMBER, r.seq, 50, 0,
                             compiled_round.SAME) == compiled_round.APART
    assert r.counter() == 0  # nothing posted


@settings(max_examples=150, deadline=None)
@given(k=st.integers(2, 4), me=st.integers(0, 3), dtype=st.sampled_from(NATIVE),
       op=st.sampled_from(list(Op)), n=st.integers(1, 40), piece=st.sampled_from([1, 3, 64]),
       in_place=st.booleans(), root=st.none() | st.integers(0, 3),
       seed=st.integers(0, 2**32 - 1))
def test_a_reduction_in_two_phases_reads_x_then_the_owners_out(k, me, dtype, op, n, piece,
                                                              in_place, root, seed):
    """recipe.halves compiled: rest() with the reduce-scatter's plan reads this rank's block
    of every peer's x (the first address each posts) and closes round seq + 1; rest() with
    the gather's plan reads every other block out of its owner's out (the second address)
    and closes round seq + 2: the one-phase recipe's bits, out over x or not (an all-reduce:
    rank order; a reduce, root not None: the ring's order, and on the other ranks a
    buffer that holds their block, the rest untouched)."""
    me %= k
    if op is Op.AVG and dtype not in FLOATING or dtype in FLOATING and op in (Op.MIN, Op.MAX):
        return
    collective = C.ALLREDUCE if root is None else C.REDUCE
    root = None if root is None else root % k
    rng = np.random.default_rng(seed)
    xs = [values(dtype, n, rng) for _ in range(k)]
    want = np.empty(n, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        at = me if root is None else root  # (the reduce's fold: its root's recipe)
        follow(recipe(collective, k, at, at, n), xs.__getitem__, op, want)
    mine, others = halves(k, me, n, root)
    r = Round(k, me, collective, 0 if root is None else root, op, n, segments=mine)
    gather, _ = compiled_round.plan(me, AREA, op, False, r.w.bases, r.row.copy(),
                                    segments=others)
    x = xs[me].copy()
    out = x if in_place and root in (None, me) else np.full(n, 7, dtype)
    outs = [want.copy() for _ in range(k)]  # the peers' outs after the first phase
    r.peers_post(xs, outs=outs)
    assert compiled_cma.call(r.plan, x, out, x, NUMBER, r.seq, 100, 0,
                             compiled_round.ANY) == compiled_round.DONE
    r.peers_close()
    parts = np.empty(k * piece * dtype.itemsize, np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert compiled_cma.rest(r.plan, x, out, r.seq, 0, r.pids, parts,
                                 piece * dtype.itemsize, 100, 0, r.seq + 1) == compiled_round.DONE
    block = np.zeros(n, bool)
    for lo, m, _ in mine:
        assert same_bits(out[lo:lo + m], want[lo:lo + m])
        block[lo:lo + m] = True
    assert compiled_cma.rest(gather, x, out, r.seq, 1, r.pids, parts, piece * dtype.itemsize,
                             100, 0, r.seq + 2) == compiled_cma.LATE  # (no peer there yet)
    r.peers_close(seq=r.seq + 2)
    assert compiled_cma.statuses(r.plan, r.seq + 2) == compiled_round.DONE
    if root is None or me == root:
        assert same_bits(out, want)
    else:
        assert others == [] and (out[~block] == 7).all()
