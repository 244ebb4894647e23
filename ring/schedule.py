"""Ring schedules as data: which block each rank moves at each step, and how.

Everything here is pure index math; the executors (host, simulator, later CUDA) walk it.

The array of `count` elements is cut into K blocks, block b = [bounds[b], bounds[b+1]).
At every step each rank handles one block; a step may

- recv:    take the block's chunk from the predecessor's slot,
- reduce:  combine it with this rank's own input block (partial op own),
- final:   this is the block's last reduction (where avg divides by K),
- out:     write the result into the output block,
- send:    put the result into the successor's slot.

Ring reduce-scatter, rank r, step s = 0..K-1 works on block (r - 1 - s) mod K: step 0 sends
its own input, steps 1..K-2 receive-reduce-send, step K-1 receive-reduces into the output.
Rank r ends holding block r, reduced in the order x[r+1] op x[r+2] op ... op x[r].
All-gather, rank r, step t = 0..K-1: step 0 copies its own block to the output and sends it,
then each step receives block (r - t) mod K, writes it out and forwards it, except the last.
All-reduce is reduce-scatter then all-gather with the two steps at the seam fused
(NCCL's recvReduceCopySend): each rank sends 2(K-1)/K of the array, independent of K.

Broadcast and reduce are pipelined chains along the ring, as NCCL's ring algorithms: the
whole array is one block (block `root`; the others are empty) and every rank takes one step.
Broadcast starts at the root, each rank receives, writes out and forwards, and the rank
before the root only receives. Reduce starts at the rank after the root, which sends its
input; each rank then receives, reduces its own input in and forwards; the root's reduction
is the final one, into its output: x[root+1] op x[root+2] op ... op x[root].

Gather and scatter are chains along the ring too, over K blocks (block q is rank q's share):
for gather, the rank p places after the root sends its own block and then forwards the
blocks of ranks 1..p-1 places after the root as they arrive, farthest first; the root copies
its own block and receives the others. Scatter is the reverse: the root sends the blocks of
ranks K-1, K-2, ..., 1 places after it, and each rank forwards those for ranks beyond it and
keeps its own. All-to-all moves block j of rank i (destined for rank j) j - i places along
the ring: each rank receives one block per round and sends one, forwarding what is not
addressed to it and sending one of its own blocks (farthest destination first) whenever a
block stops at it. Every link then carries K(K-1)/2 blocks, K/2 times the bytes of a direct
exchange: the ring is the only topology these links have.

Each step is cut into the same number of chunks (`nchunks`) on every rank; a chunk is the
unit that travels through one slot. Executors walk chunk-major, as NCCL does: all steps of
chunk 0, then all steps of chunk 1, ... A rank then has at most one chunk in flight beyond
the one it is working on, so two slots per connection never deadlock, whatever the size;
walking step-major would need more slots than chunks per step (every rank fills its
successor's slots with step 0 before anyone receives).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property, lru_cache


class Collective(Enum):
    ALLREDUCE = 0
    REDUCE_SCATTER = 1
    ALLGATHER = 2
    BROADCAST = 3
    REDUCE = 4
    GATHER = 5
    SCATTER = 6
    ALLTOALL = 7
    BARRIER = 8  # no data: only the agreement step

    # rooted: takes a root; reduces: combines data; divides: the input is cut into one
    # equal block per rank (its size must divide). Plain attributes, set below once: they
    # are read on every call, and an Enum property costs a descriptor call each time.
    rooted: bool
    reduces: bool
    divides: bool
    label: str

    def __str__(self) -> str:
        return self.label

    # a member is its own only equal: hashed by identity, in C (Enum's hashes its name in
    # Python: 0.13 µs, half a kept call's key lookup; ring/host/repeated.py)
    __hash__ = object.__hash__


for _c in Collective:
    _c.rooted = _c.name in ("BROADCAST", "REDUCE", "GATHER", "SCATTER")
    _c.reduces = _c.name in ("ALLREDUCE", "REDUCE_SCATTER", "REDUCE")
    _c.divides = _c.name in ("REDUCE_SCATTER", "SCATTER", "ALLTOALL")
    _c.label = _c.name.lower()
del _c


def collective_named(name, data_only: bool = False) -> Collective:
    """The collective called `name` (any case; data_only: not the barrier, which moves
    none), or a ValueError naming every one it could be."""
    known = {c.label: c for c in Collective if not (data_only and c is Collective.BARRIER)}
    found = known.get(name.lower() if isinstance(name, str) else None)
    if found is None:
        raise ValueError(f"collective: one of {', '.join(map(repr, sorted(known)))}, "
                         f"got {name!r}")
    return found


@dataclass(frozen=True)
class Step:
    block: int
    recv: bool
    reduce: bool
    final: bool
    out: bool
    send: bool


def split(count: int, parts: int, align: int = 1) -> list[int]:
    """Balanced boundaries: parts+1 increasing offsets from 0 to count.

    Inner boundaries are multiples of `align` elements (so chunks start aligned for wide
    loads); piece sizes then differ by at most `align` (plus the unaligned tail in the last).
    """
    if parts < 1 or align < 1 or count < 0:
        raise ValueError(f"split: bad arguments count={count} parts={parts} align={align}")
    units = count // align
    return [(units * i // parts) * align for i in range(parts)] + [count]


def _reduce_scatter_steps(size: int, rank: int, fuse_send: bool) -> list[Step]:
    steps = []
    for s in range(size):
        last = s == size - 1
        steps.append(Step(
            block=(rank - 1 - s) % size,
            recv=s > 0,
            reduce=s > 0,
            final=last,
            out=last,
            send=(not last) or (fuse_send and size > 1),
        ))
    return steps


def _allgather_steps(size: int, rank: int) -> list[Step]:
    return [
        Step(block=(rank - t) % size, recv=t > 0, reduce=False, final=False, out=True,
             send=t < size - 1)
        for t in range(size)
    ]


def _chain_step(collective: Collective, size: int, rank: int, root: int) -> Step:
    pos = (rank - root) % size  # 0 at the root, along the ring
    if collective is Collective.BROADCAST:
        return Step(block=root, recv=pos > 0, reduce=False, final=False, out=pos > 0,
                    send=pos < size - 1)
    first = pos == 1 % size  # the chain's start: the root itself when it is alone
    return Step(block=root, recv=not first, reduce=not first, final=pos == 0,
                out=pos == 0, send=pos != 0)


def _move(block: int, recv: bool, out: bool, send: bool) -> Step:
    """A step that only moves data."""
    return Step(block=block, recv=recv, reduce=False, final=False, out=out, send=send)


def _gather_steps(size: int, rank: int, root: int) -> list[Step]:
    pos, at = (rank - root) % size, lambda p: (root + p) % size
    if pos == 0:  # own block, then the others as they arrive, farthest first
        return [_move(root, False, True, False)] + \
            [_move(at(p), True, True, False) for p in range(size - 1, 0, -1)]
    return [_move(rank, False, False, True)] + \
        [_move(at(p), True, False, True) for p in range(pos - 1, 0, -1)]


def _scatter_steps(size: int, rank: int, root: int) -> list[Step]:
    pos, at = (rank - root) % size, lambda p: (root + p) % size
    if pos == 0:  # own block, then the others, farthest first
        return [_move(root, False, True, False)] + \
            [_move(at(p), False, False, True) for p in range(size - 1, 0, -1)]
    return [_move(at(p), True, False, True) for p in range(size - 1, pos, -1)] + \
        [_move(rank, True, True, False)]


@lru_cache(maxsize=64)
def _alltoall_pattern(size: int) -> tuple[tuple[str, int, int], ...]:
    """Every rank's all-to-all steps relative to itself, as (kind, a, d): the block that
    rank q+a sends to rank q+a+d. kind: "copy" its own block to itself, "own" send one,
    "out" keep a received one, "fwd" forward a received one.

    One own block goes first (farthest destination first); then every round receives one
    block and sends one: a block to forward goes on at once, and a block that stops here
    frees the round for the next own block. So no link ever holds more than one block
    beyond the one being consumed (two slots never deadlock), and the send stream of every
    rank is the same up to the shift: rank q receives what q-1 sends, in that order."""
    if size == 1:
        return (("copy", 0, 0),)
    own = list(range(size - 1, 0, -1))
    sent = [(0, own.pop(0))]  # (a, d) of what this rank sends, in order
    pattern = [("copy", 0, 0), ("own", *sent[0])]
    for i in range(size * (size - 1) // 2):
        a, d = sent[i]
        a -= 1  # what the predecessor sent, seen from here
        if a + d == 0:
            pattern.append(("out", a, d))
            if own:
                sent.append((0, own.pop(0)))
                pattern.append(("own", *sent[-1]))
        else:
            sent.append((a, d))
            pattern.append(("fwd", a, d))
    return tuple(pattern)


@lru_cache(maxsize=64)
def alltoall_overwritten(size: int) -> tuple[int, ...]:
    """The d in 1..K-1 for which an all-to-all in place (out is x) would receive over x
    before reading it: the block from rank q+d lands at block q+d of q's output before q
    has sent its own block q+d, which lies there. The same on every rank (the pattern is
    relative) and for every chunk (executors walk chunk-major, each chunk in step order).
    Empty for K <= 2, where x itself may be the output; from K = 3 the nearer half of the
    successors (K = 4: d = 1)."""
    own, kept = {}, {}
    for i, (kind, a, d) in enumerate(_alltoall_pattern(size)):
        if kind == "own":
            own[d] = i
        elif kind == "out":
            kept[a % size] = i
    return tuple(sorted(d for d in own if kept[d] < own[d]))


def _alltoall_steps(size: int, rank: int) -> list[Step]:
    """Block j of a rank's input goes to rank j, and lands at block i of rank j's output
    when it came from rank i: a step's block is the one it reads or writes locally."""
    out = []
    for kind, a, d in _alltoall_pattern(size):
        if kind == "copy":
            out.append(_move(rank, False, True, False))
        elif kind == "own":
            out.append(_move((rank + d) % size, False, False, True))
        elif kind == "out":
            out.append(_move((rank + a) % size, True, True, False))
        else:
            out.append(_move((rank + a + d) % size, True, False, True))
    return out


def sizes(collective: Collective, n: int, size: int) -> tuple[int, int]:
    """(count, out_n) for an input of n elements: the plan's full array and a rank's
    output. Where the input is cut into blocks (Collective.divides), n must divide."""
    if collective in (Collective.ALLGATHER, Collective.GATHER):
        return n * size, n * size
    if collective in (Collective.REDUCE_SCATTER, Collective.SCATTER):
        return n, n // size
    return n, n


def steps(collective: Collective, size: int, rank: int, root: int = 0) -> list[Step]:
    """The steps rank `rank` of a ring of `size` ranks takes, in order."""
    if not 0 <= rank < size:
        raise ValueError(f"rank {rank} outside a ring of {size}")
    if collective.rooted and not 0 <= root < size:
        raise ValueError(f"root {root} outside a ring of {size}")
    if collective in (Collective.BROADCAST, Collective.REDUCE):
        return [_chain_step(collective, size, rank, root)]
    if collective is Collective.GATHER:
        return _gather_steps(size, rank, root)
    if collective is Collective.SCATTER:
        return _scatter_steps(size, rank, root)
    if collective is Collective.ALLTOALL:
        return _alltoall_steps(size, rank)
    if collective is Collective.REDUCE_SCATTER:
        return _reduce_scatter_steps(size, rank, fuse_send=False)
    if collective is Collective.ALLGATHER:
        return _allgather_steps(size, rank)
    # All-reduce: the last reduce-scatter step also sends (fused with all-gather step 0),
    # then the all-gather steps that receive.
    return _reduce_scatter_steps(size, rank, fuse_send=True) + _allgather_steps(size, rank)[1:]


def nchunks(max_block_bytes: int, chunk_bytes: int) -> int:
    """Chunks per step so that no chunk exceeds chunk_bytes (at least 1)."""
    if chunk_bytes <= 0:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")
    return max(1, -(-max_block_bytes // chunk_bytes))


@dataclass(frozen=True)
class Plan:
    """Everything an executor needs for one collective call on one rank."""

    collective: Collective
    size: int
    rank: int
    count: int  # elements of the full (reduced / gathered) array
    blocks: tuple[int, ...]  # size+1 boundaries
    nchunks: int
    steps: tuple[Step, ...]
    align: int = 1

    def chunk(self, block: int, j: int) -> tuple[int, int]:
        """Element range [lo, hi) of chunk j of `block`, in full-array offsets.

        Chunks start at multiples of `align` from the block start; a chunk holds at most
        ceil(block / nchunks) + align - 1 elements."""
        lo, hi = self.blocks[block], self.blocks[block + 1]
        units, a, k = (hi - lo) // self.align, self.align, self.nchunks
        start = lo + (units * j // k) * a
        end = hi if j == k - 1 else lo + (units * (j + 1) // k) * a
        return start, end

    @cached_property
    def units(self) -> tuple[tuple[int, Step, int, int], ...]:
        """Every (chunk index, step, lo, hi) in execution order: chunk-major."""
        return tuple((j, step, *self.chunk(step.block, j))
                     for j in range(self.nchunks) for step in self.steps)

    @cached_property
    def max_chunk(self) -> int:
        """Largest chunk of this call, in elements (worked out once per plan, kept with it)."""
        return max((hi - lo for b in range(self.size) for j in range(self.nchunks)
                    for lo, hi in [self.chunk(b, j)]), default=0)

    @property
    def sends(self) -> int:
        return self.nchunks * sum(s.send for s in self.steps)

    @property
    def recvs(self) -> int:
        return self.nchunks * sum(s.recv for s in self.steps)


@lru_cache(maxsize=512)
def plan(collective: Collective, size: int, rank: int, count: int, itemsize: int,
         chunk_bytes: int, align: int = 1, root: int = 0) -> Plan:
    """Plan one call. `count` is the full array (schedule.sizes): for reduce-scatter and
    scatter the input, for all-gather and gather the output, so block r is rank r's share
    in both; for all-to-all each rank's array, block j for rank j; for broadcast and reduce
    the whole array is block `root`. Plans are immutable and cached: a repeated call costs a
    dictionary look-up."""
    if collective is Collective.BARRIER:
        raise ValueError("barrier: no data, no plan")
    if collective.rooted and not 0 <= root < size:
        raise ValueError(f"root {root} outside a ring of {size}")
    if collective in (Collective.BROADCAST, Collective.REDUCE):
        blocks = [0] * (root + 1) + [count] * (size - root)
    elif collective is Collective.ALLREDUCE:
        blocks = split(count, size, align)
    else:
        if count % size:
            raise ValueError(f"{collective}: count {count} is not divisible by {size} ranks")
        blocks = split(count, size)
    return plan_blocks(collective, size, rank, tuple(blocks), itemsize, chunk_bytes, align,
                       root)


@lru_cache(maxsize=512)
def plan_blocks(collective: Collective, size: int, rank: int, blocks: tuple[int, ...],
                itemsize: int, chunk_bytes: int, align: int = 1, root: int = 0) -> Plan:
    """Plan one call over given block boundaries, which may be uneven: the two-level
    collectives (hierarchical.py) reduce-scatter and all-gather arrays of any length."""
    if len(blocks) != size + 1 or blocks[0] != 0 or any(a > b for a, b in zip(blocks, blocks[1:])):
        raise ValueError(f"plan: bad block boundaries {blocks} for {size} ranks")
    max_block = max(blocks[b + 1] - blocks[b] for b in range(size))
    return Plan(collective, size, rank, blocks[-1], tuple(blocks),
                nchunks(max_block * itemsize, chunk_bytes),
                tuple(steps(collective, size, rank, root)), align)


def local_slices(plan: Plan, block: int, lo: int, hi: int):
    """Where full-array elements [lo, hi) of `block` sit in this rank's input and output."""
    c = plan.collective
    if c in (Collective.ALLREDUCE, Collective.BROADCAST, Collective.REDUCE, Collective.ALLTOALL):
        return slice(lo, hi), slice(lo, hi)
    base = plan.blocks[plan.rank]
    if c in (Collective.REDUCE_SCATTER, Collective.SCATTER):  # the output is block `rank`
        return slice(lo, hi), slice(lo - base, hi - base)
    # all-gather, gather: the input is block `rank` of the output
    return (slice(lo - base, hi - base) if block == plan.rank else None), slice(lo, hi)
