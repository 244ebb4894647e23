"""The one-shot all-reduce as one kernel with flagged words: for the small messages, where
the ring's 2(K-1) hand-offs cost more than its bytes.

Every rank has an inbox in its GPU's memory that every other rank maps (CUDA IPC; under
Numba's simulator MPI shared memory, as ring/cuda/areas.py): 2 call parities x K senders x
WORDS int64 words. In one launch, each block of a rank takes its part of the elements and

  1. writes each of its elements into every peer's inbox (at this rank's place, the call's
     parity) as LL words: the element's bits below and the call's flag (its sequence
     number) in the high 32 bits, one 64-bit store: no fence, no counter (NCCL's LL). An
     element of 8 bytes goes as two words (its low and its high 32 bits);
  2. waits for the words of every peer in its own inbox to carry the flag (bounded: a wait
     that outlasts the timeout writes the error word, as the ring kernel's, and stops), and
     folds the K values in rank order, ((x0 op x1) op x2) ... op x(K-1), avg dividing once
     at the end: the same bits on every rank, the same as the host-driven oneshot and the
     fold of the MPI algorithms.

Each block posts the call on the call board (board.py) before step 1, and before step 2
checks that every rank's launch is this call (count, dtype, op and the rest of its
record), else MISMATCH in the error word, on every rank, before any peer's data is folded
(ranks whose calls differ are found on the GPU, without the host's agreement). What it
sent meanwhile lands in the peers' inboxes only, which no other kernel reads.

The sequence number lives on the GPU, one per block (`seqs`), read at the start of a
launch and written back at its end: the launch never changes from call to call (a kept
call replays it; it can be captured in a CUDA graph). A parity is written again two calls
later only: a rank writing call s + 2 has received every peer's call s + 1, which each peer
sent after its kernel of call s had read everything (stream order), so no word is
overwritten before it is read. A stale word of parity p carries s - 2, never s.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types

from kernels.dtypes import kernel_dtype
from kernels.inline import inline_ir
from kernels.reduce import OPS
from kernels.spin import sync
from ringtypes import Op

from .arrays import SIMULATED
from .board import hand as on_board
from .board import leave
from .error_word import fail, timeout_ns
from .kernel_cache import compiled
from .persistent import UNSIGNED, bits_of, part
from .together import together

# int64 words of one sender's place in an inbox (a call's parity): an element of up to 4
# bytes takes one, of 8 bytes two. On a GPU 256 K (1 MiB of float32, the top of issue 52's
# small messages; the inbox: 2 parities x K senders x 2 MiB, 16 MiB at K = 4; which sizes
# it should take is the tuning table's to say); under the simulator a few, to keep its
# shared memory small.
WORDS = 1 << 9 if SIMULATED else 1 << 18
SHAPE = (2, 4) if SIMULATED else (16, 512)  # blocks x threads (at most: cut by residency)
WAIT_PEER = 4  # the error word's code: waiting for a peer's flagged word (ERR_UNIT: peer)
LOW = (1 << 32) - 1


def words_per_element(itemsize: int) -> int:
    return 2 if itemsize == 8 else 1


def fits(count: int, itemsize: int) -> bool:
    """Whether a call of `count` elements goes through the inbox."""
    return count * words_per_element(itemsize) <= WORDS


@lru_cache(maxsize=None)
def oneshot_kernel(op: Op, dtype_name: str, k: int):
    """The compiled kernel of oneshot_source (compiled on first request and kept; on a GPU
    also on disk for the next process, kernel_cache.py)."""
    fn, sig = oneshot_source(op, dtype_name, k)
    return compiled(fn, sig, ("oneshot", op.name, dtype_name, k))


def oneshot_source(op: Op, dtype_name: str, k: int):
    """(the kernel's function, its signature) for (op, dtype, K ranks) (stores and loads
    at system scope, as the peers may be other GPUs):
    kernel(x, out, mine, peers, seqs, n, me, timeout_ns, div, err, board, state, record);
    peers: the K inboxes (this rank's own at `me`, unused), mine: this rank's; board,
    state, record: the call board's (board.py)."""
    kd = kernel_dtype(dtype_name)
    if op is Op.AVG and not kd.floating:
        raise TypeError(f"op avg needs a floating-point dtype, got {dtype_name}")
    last = OPS[op](kd)
    mid = OPS[Op.SUM](kd) if op is Op.AVG else last  # avg: sums, then the dividing sum
    w = words_per_element(kd.storage.itemsize)
    elem, bits_t = kd.storage.type, UNSIGNED[kd.storage.itemsize][0]
    hand = sync("sys")
    post, check = on_board("sys").post, on_board("sys").check
    store, wait_flag = hand.store, hand.wait_flag
    to_bits = bits_of(kd)

    @inline_ir
    def value_of(lo, hi):
        tmp = cuda.local.array(1, bits_t)
        tmp[0] = (lo & LOW) | ((hi & LOW) << 32)
        return tmp.view(elem)[0]

    @inline_ir
    def received(mine, at, seq, timeout_ns, err):
        """The element whose words start at mine[at], once flagged seq: (value, 1), or
        (anything, 0) with the error word written."""
        lo = wait_flag(mine, at, seq, timeout_ns, err)
        hi = lo
        if w == 2 and (lo >> 32) == seq:
            hi = wait_flag(mine, at + 1, seq, timeout_ns, err)
        if (lo >> 32) != seq or (hi >> 32) != seq:
            return value_of(0, 0), 0
        return value_of(lo, hi if w == 2 else 0), 1

    def kernel(x, out, mine, peers, seqs, n, me, timeout_ns, div, err, board, state, record):
        b, nb = cuda.blockIdx.x, cuda.gridDim.x
        t, nt = cuda.threadIdx.x, cuda.blockDim.x
        ok = cuda.shared.array(1, types.int64)
        seq = seqs[b] + 1
        flag = seq << 32
        room = mine.size // (2 * k)  # words per sender and parity
        lo, hi = part(n, b, nb)
        mine_at = (seq & 1) * k * room  # this call's parity in an inbox
        if t == 0:  # 0. this rank's call on the board (board.py)
            ok[0] = post(board, state, me, k, record)
        e = lo + t
        while e < hi:  # 1. every peer gets this rank's elements, flagged
            bits = to_bits(x[e])
            at = mine_at + me * room + e * w
            for q in range(k):
                if q != me:
                    store(peers[q], at, (bits & LOW) | flag)
                    if w == 2:
                        store(peers[q], at + 1, ((bits >> 32) & LOW) | flag)
            e += nt
        if t == 0:  # ... and every peer's read back, before any of their data
            ok[0] = check(board, me, k, record, ok[0], timeout_ns, err)
        cuda.syncthreads()
        e = lo + t
        good = ok[0]
        while e < hi and good:  # 2. fold every rank's element in rank order
            if me == 0:
                acc = x[e]
            else:
                acc, good = received(mine, mine_at + e * w, seq, timeout_ns, err)
                if not good:
                    fail(err, WAIT_PEER, b, 0, e, 0, seq, mine[mine_at + e * w] >> 32)
            for q in range(1, k):
                if good:
                    if q == me:
                        v = x[e]
                    else:
                        v, good = received(mine, mine_at + q * room + e * w, seq,
                                           timeout_ns, err)
                        if not good:
                            fail(err, WAIT_PEER, b, q, e, 0, seq,
                                  mine[mine_at + q * room + e * w] >> 32)
                    if good:
                        acc = last(acc, v, div) if q == k - 1 else mid(acc, v, div)
            if good:
                out[e] = acc
            e += nt
        cuda.syncthreads()
        if t == 0:
            seqs[b] = seq
            leave(state)

    arr = kd.numba_type[::1]
    words = types.int64[::1]
    sig = types.void(arr, arr, words, types.UniTuple(words, k), words, types.int64,
                     types.int64, types.int64, types.float64, words, words, words, types.int64)
    return kernel, sig


class OneShot:
    """A communicator's inboxes and the kernel's state: made on the first call that goes
    through it, by every rank of the node at once (collective; every rank agreed on that
    call), kept until close."""

    SHAPE = SHAPE

    @staticmethod
    def blocks(channels: int, threads: int, ranks_per_gpu: int, room=None) -> int:
        """Its grid: SHAPE's blocks, at most the ring kernel's channels (resident beside
        the other ranks' kernels)."""
        return min(SHAPE[0], channels)

    def __init__(self, comm, device: int, waiter, err, board, blocks: int, threads: int,
                 stream):
        from .areas import Areas
        k = comm.size
        self.k, self.me, self.err, self.board = k, comm.rank, err, board
        self.blocks, self.threads, self.stream = blocks, threads, stream
        self.areas = Areas(comm, 2 * k * WORDS * 8, device, waiter, slots=1)
        inboxes = [s[0].view(np.int64) for s in self.areas.slots]
        self.mine, self.peers = inboxes[self.me], tuple(inboxes)
        # no stale word may carry a flag: zeroed before anyone writes
        with together(comm, "zero its one-shot inbox", self.areas.close):
            self.mine.copy_to_device(np.zeros(self.mine.size, np.int64))
            self.seqs = cuda.to_device(np.zeros(blocks, np.int64))
            cuda.synchronize()

    def bind(self, op: Op, dtype_name: str, x, out, n: int, divisor: int, timeout_s: float,
             record: int):
        """The call as one launch, ready to fire (kernels.bound_launch.BoundLaunch); record:
        its board.record_hash."""
        from kernels.bound_launch import BoundLaunch
        kd = kernel_dtype(dtype_name)
        kernel = oneshot_kernel(op, dtype_name, self.k)
        x, out = x.view(kd.storage), out.view(kd.storage)
        args = (x, out, self.mine, self.peers, self.seqs, n, self.me, timeout_ns(timeout_s),
                float(divisor), self.err, self.board.words, self.board.state, record)
        keep = (None, None, self.mine, self.peers, self.seqs, self.err, self.board.words,
                self.board.state)
        return BoundLaunch(kernel, args, self.blocks, self.threads, self.stream, keep)

    def close(self) -> None:
        self.areas.close()
