"""The persistent kernel's program (ring/cuda/program.py): a plan as a table of integers,
checked as pure data against schedule.py and the host executor's slicing, and across the
ranks of a ring: what a rank sends on its link is what its successor receives, chunk for
chunk, in the same order."""

import pytest
from hypothesis import given, settings, strategies as st

from ring.cuda.program import decode, encode
from ring.schedule import local_slices
from ring.schedule import Collective, plan

ALL = [c for c in Collective if c is not Collective.BARRIER]


def _plans(collective, k, count, itemsize, chunk, align, root):
    if collective.divides or collective in (Collective.ALLGATHER, Collective.GATHER):
        count -= count % k
    return [plan(collective, k, r, count, itemsize, chunk, align, root) for r in range(k)]


cases = st.tuples(st.sampled_from(ALL), st.integers(1, 8), st.integers(0, 3000),
                  st.sampled_from([1, 2, 4, 8]), st.sampled_from([64, 128, 1024, 4096]),
                  st.sampled_from([1, 4, 8]), st.integers(0, 7))


@settings(max_examples=300, deadline=None)
@given(cases)
def test_the_program_is_the_plan(case):
    collective, k, count, itemsize, chunk, align, root = case
    for p in _plans(collective, k, count, itemsize, chunk, align, root % k):
        rows = decode(encode(p))
        assert len(rows) == len(p.units)
        recvs = sends = 0
        for row, (j, step, lo, hi) in zip(rows, p.units):
            s_in, s_out = local_slices(p, step.block, lo, hi)
            assert (row["recv"], row["reduce"], row["final"], row["out"], row["send"]) == \
                (step.recv, step.reduce, step.final, step.out, step.send)
            assert row["n"] == hi - lo and row["chunk"] == j
            assert p.steps[row["step"]] is step  # (the step a timeout's message names)
            reads_x = not step.recv or step.reduce
            assert row["x"] == (s_in.start if reads_x else -1)
            if reads_x:  # the kernel reads x[X : X + N]: inside the input's share
                assert s_in.stop - s_in.start == hi - lo
            assert row["at"] == (s_out.start if step.out else -1)
            assert row["uin"] == (recvs if step.recv else -1)
            assert row["uout"] == (sends if step.send else -1)
            recvs += step.recv
            sends += step.send
        assert (recvs, sends) == (p.recvs, p.sends)


@settings(max_examples=300, deadline=None)
@given(cases)
def test_what_a_rank_sends_its_successor_receives(case):
    """Link r -> r+1: the n-th send of rank r and the n-th receive of rank r+1 are the same
    chunk (its length), so slot (base + n) % nslots holds what the receiver expects."""
    collective, k, count, itemsize, chunk, align, root = case
    ps = _plans(collective, k, count, itemsize, chunk, align, root % k)
    if k == 1:
        assert not any(r["send"] or r["recv"] for r in decode(encode(ps[0])))
        return
    for r in range(k):
        sent = [row["n"] for row in sorted((x for x in decode(encode(ps[r])) if x["send"]),
                                           key=lambda x: x["uout"])]
        got = [row["n"] for row in sorted((x for x in decode(encode(ps[(r + 1) % k]))
                                           if x["recv"]), key=lambda x: x["uin"])]
        assert sent == got


def test_the_table_is_cached_and_read_only():
    p = plan(Collective.ALLREDUCE, 4, 1, 1000, 4, 256, 4)
    rows = encode(p)
    assert encode(p) is rows
    with pytest.raises(ValueError):
        rows[0, 0] = 0


@pytest.mark.parametrize("k", [2, 3, 4])
def test_the_kernel_path_moves_what_the_stream_path_does_less_one_read_per_forward(k):
    """enqueue.traffic, the numerator of "fraction of copy bandwidth": the persistent kernel
    reads a forwarded chunk once for both its writes (output and successor's slot), where
    the stream path's two copies read it twice."""
    from ring.cuda.enqueue import traffic
    for r in range(k):
        p = plan(Collective.ALLREDUCE, k, r, 1000 * k, 4, 256, 4)
        twice = sum(4 * (hi - lo) for _, s, lo, hi in p.units
                    if s.recv and not s.reduce and s.out and s.send)
        assert traffic(p, 4, "kernel") == traffic(p, 4, "stream") - twice
        assert (twice > 0) == (k > 2)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_a_ring_all_reduce_moves_the_bytes_its_formula_says(k):
    """enqueue.traffic in absolute terms, N bytes a rank: the persistent kernel's ring moves
    (6K - 4) N / K (issue 53's count; any all-reduce must move 2N, docs/harness.md's
    vs_min), the stream path's copies (7K - 6) N / K from K = 2 (each forward read twice);
    the reduce-scatter alone (3K - 1) N / K on the kernel path."""
    from ring.cuda.enqueue import traffic
    n = 1024 * k  # float32 elements: blocks of 1024, 16-byte aligned
    nbytes = 4 * n
    for r in range(k):
        p = plan(Collective.ALLREDUCE, k, r, n, 4, 1024, 4)
        assert traffic(p, 4, "kernel") == (6 * k - 4) * nbytes // k
        assert traffic(p, 4, "stream") == (7 * k - 6 if k > 1 else 2) * nbytes // k
        p = plan(Collective.REDUCE_SCATTER, k, r, n, 4, 1024, 4)
        assert traffic(p, 4, "kernel") == (3 * k - 1) * nbytes // k


@pytest.mark.parametrize("k", [2, 3, 4])
def test_an_allgathers_own_block_is_read_once_on_the_kernel_path(k):
    """The all-gather's first step writes the rank's own block into its output and into the
    successor's slot: the persistent kernel reads it once (3n bytes), the stream path's two
    copies twice (4n)."""
    from ring.cuda.enqueue import traffic
    for r in range(k):
        p = plan(Collective.ALLGATHER, k, r, 1000 * k, 4, 256, 4)
        own = sum(4 * (hi - lo) for _, s, lo, hi in p.units
                  if not s.recv and s.out and s.send)
        assert own > 0
        assert traffic(p, 4, "stream") - traffic(p, 4, "kernel") >= own
        assert traffic(p, 4, "kernel", in_place=True) < traffic(p, 4, "kernel")


@settings(max_examples=300, deadline=None)
@given(cases, st.sampled_from([1, 2, 8, 64]))
def test_every_rank_of_a_call_takes_the_same_protocol(case, channels):
    """RING_KERNEL_PROTO=ll: whether a call goes as LL words is decided on each rank from its
    own plan; both ends of every link must decide alike, or one waits for counters the other
    never publishes."""
    from ring.cuda.kernel_path import carries_ll
    collective, k, count, itemsize, chunk, align, root = case
    ps = _plans(collective, k, count, itemsize, chunk, align, root % k)
    assert len({carries_ll("ll", itemsize, p.max_chunk, channels) for p in ps}) == 1
    assert not any(carries_ll("simple", itemsize, p.max_chunk, channels) for p in ps)


def test_a_call_goes_as_ll_words_exactly_where_every_channels_part_fits_its_words():
    """A channel writes and polls one LL word per element of its part of a chunk, from the
    start of its LL_WORDS (persistent.ll_base): a call whose widest part, by the kernel's own
    split (persistent.part), exceeds them would write into the next channel's words, with
    the same flag, where the receiver takes them for that channel's. Every largest chunk
    around the bound, at several channel counts: LL exactly where the parts fit (elements of
    at most 4 bytes)."""
    from ring.cuda.kernel_path import carries_ll
    from ring.cuda.persistent import LL_WORDS, part
    for channels in (1, 2, 3, 8, 64):
        for m in range(1, (LL_WORDS + 2) * channels + 1):
            widest = max(hi - lo for lo, hi in (part.py_func(m, c, channels)
                                                for c in range(channels)))
            for itemsize in (1, 2, 4, 8):
                assert carries_ll("ll", itemsize, m, channels) == \
                    (itemsize <= 4 and widest <= LL_WORDS), (m, channels, itemsize)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 1 << 21), st.integers(1, 64), st.sampled_from([1, 2, 4, 8]),
       st.integers(1, 6))
def test_slots_hold_every_channels_part_and_ll_words_apart(chunk_slot_bytes, channels,
                                                          itemsize, nslots):
    """The kernel path's slot layout, by the functions the kernel itself places data and LL
    words with (persistent.data_base / ll_base, kernel_path.layout): every channel's
    sub-slot of every slot holds its part of the largest chunk, and no two sub-slots or LL
    areas share a byte, within the segment's slots (a simple call's chunk must not write
    where an LL call's words wait, nor the reverse)."""
    from ring.cuda.kernel_path import layout, slot_bytes
    from ring.cuda.persistent import LL_WORDS, data_base, ll_base, sub_slot, vpart
    sb = slot_bytes(chunk_slot_bytes, channels)
    stride, cap = layout(sb, channels, itemsize)
    lanes = 16 // itemsize
    n = chunk_slot_bytes // itemsize  # the most elements a chunk of the slot has
    sub = sub_slot(cap, channels, lanes)
    assert max(hi - lo for lo, hi in (vpart.py_func(n, c, channels, lanes)
                                      for c in range(channels))) <= sub
    assert -(-n // channels) <= sub  # (the LL split's parts too)
    assert sb % 16 == 0 and sub % lanes == 0  # every sub-slot starts a 16-byte vector
    from ring.transport.ipc import HEADER  # (the slots follow the segment's header, and its
    assert HEADER % 16 == 0  # base is a page: else no step would find its slots aligned)
    spans = []
    for s in range(nslots):
        for c in range(channels):
            lo = data_base(s, c, channels, stride, cap, lanes) * itemsize
            assert lo % 16 == 0
            spans.append((lo, lo + sub * itemsize))
            lo = ll_base(s, c, sb // 8, cap * itemsize // 8) * 8
            spans.append((lo, lo + 8 * LL_WORDS))
    spans.sort()
    assert spans[0][0] >= 0 and spans[-1][1] <= nslots * sb
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert end <= start


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 1 << 20), st.integers(1, 128), st.sampled_from([1, 2, 4, 8, 16]))
def test_the_vector_split_covers_a_chunk_once_each_part_starting_a_vector(n, channels, lanes):
    """persistent.vpart (the simple protocol's channel split): the channels' parts are
    disjoint, in order, cover [0, n), and each non-empty one starts at a multiple of
    `lanes` (a 16-byte vector) and is at most ceil(n / C) rounded up to one."""
    from ring.cuda.persistent import vpart
    parts = [vpart.py_func(n, c, channels, lanes) for c in range(channels)]
    widest = -(-(-(-n // channels)) // lanes) * lanes
    at = 0
    for lo, hi in parts:
        assert lo == at or lo == hi == n
        assert lo % lanes == 0 or lo == n
        assert hi - lo <= widest
        at = max(at, hi)
    assert at == n
