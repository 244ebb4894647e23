"""The call board: ranks whose calls differ are found on the GPU, by every kernel of the
kernel path (the ring kernel, the one-shot and the two-shot), before any peer's data is
read or written, without the host's agreement.

One int64 area that every rank maps (rank 0's; areas.py: CUDA IPC, or MPI shared memory
under Numba's simulator): 2 launch parities x K words. At the start of every launch,
thread 0 of each block

  1. reads the launch's number s: this rank's kernel-path launches so far, plus one
     (`state[0] + 1`; the count moves on when the launch's last block leaves, leave(), so
     every block of a launch reads the same s, and the launch never changes from call to
     call: a kept call replays it, a graph can capture it);
  2. writes word [s % 2][me] = s << 32 | record, where record is 32 bits of the call
     (agreement.record_hash: crc32 of the row the host's agreement compares, the call
     number left out: collective, count, dtype, op, root, in place, chunk size,
     algorithm);
  3. waits for every peer's word [s % 2][q] to carry s, and compares its record: another
     is MISMATCH in the error word, on every rank (each reads every word), and the block
     stops before it touches anything of the call's data. A wait past the timeout is
     WAIT in the error word.

Every launch of the kernel path counts, whatever its kernel, so a rank that runs another
kernel altogether (the ring kernel where a peer runs the two-shot) is found too. A kernel
may post (steps 1-2) first and check (step 3) later, before it reads anything a peer wrote:
the one-shot before it folds its inbox, the ring kernel before the first chunk it receives
(what it sent before lands in its successor's slots, which the successor's kernel reads
only after its own check); the two-shot checks before it writes anything into a peer's
memory (its record, then every rank's x and out, perhaps the users' own, registered). A parity
is written again two launches later only: a rank's launch s + 2 starts after its launch
s + 1, every block of which saw every peer's word of s + 1, which each peer wrote after its
launch s had read this rank's word of s (stream order). No word is overwritten before it
is read, and a stale word carries s - 2, never s.

A rank that refuses a call on the host posts REFUSED instead (refusal()), so that a peer
whose kernel runs without having waited for the host's agreement stops at once.

A communicator of one rank, and ring.Group (one process calls for every rank: their calls
cannot differ), check nothing (k = 1: Board.alone) but count their launches the same way.
"""

from __future__ import annotations

from functools import lru_cache
from types import SimpleNamespace

import numpy as np
from numba import cuda

from kernels.spin import sync

from .error_word import fail

WAIT, MISMATCH = 10, 11  # the error word's codes (persistent.ERR_CODE), ERR_UNIT: the peer
LOW = (1 << 32) - 1
REFUSED = 0  # the record of a rank that refused its call (agreement.record_hash is never 0)


@lru_cache(maxsize=None)
def hand(scope: str) -> SimpleNamespace:
    """The board's device functions with its words stored and polled relaxed at `scope`
    (kernels.spin.sync: "gpu" where every rank runs on this GPU, else "sys"; a kernel's
    own scope, so that its PTX keeps to one): post, check and enter."""
    h = sync(scope)
    store, wait_flag = h.store, h.wait_flag

    @cuda.jit(device=True)
    def post(board, state, me, k, record):
        """Thread 0 of every block: steps 1 and 2 of the module's docstring; the launch's
        number s."""
        s = state[0] + 1
        store(board, (s & 1) * k + me, (s << 32) | (record & LOW))
        return s

    @cuda.jit(device=True)
    def check(board, me, k, record, s, timeout_ns, err):
        """Thread 0 of every block, after post(): step 3. 1 where every peer runs this
        call, else 0 with the error word written."""
        at = (s & 1) * k
        for q in range(k):
            if q != me:
                word = wait_flag(board, at + q, s, timeout_ns, err)
                if (word >> 32) != s:
                    fail(err, WAIT, cuda.blockIdx.x, q, -1, 0, s, word >> 32)
                    return 0
                if (word & LOW) != (record & LOW):
                    fail(err, MISMATCH, cuda.blockIdx.x, q, 0, 0, record & LOW, word & LOW)
                    return 0
        return 1

    @cuda.jit(device=True)
    def enter(board, state, me, k, record, timeout_ns, err):
        """post(), then check(): for a kernel that writes into its peers' memory (it must
        not before it knows they run this call)."""
        return check(board, me, k, record, post(board, state, me, k, record), timeout_ns,
                     err)

    return SimpleNamespace(post=post, check=check, enter=enter)


@cuda.jit(device=True)
def leave(state):
    """Thread 0 of every block, last (after its block's work, which read state[0] first):
    the last block of the launch to leave counts the launch (state[1]: the blocks that have
    left; an atomic, no fence: nothing else is ordered by it)."""
    if cuda.atomic.add(state, 1, 1) == cuda.gridDim.x - 1:
        state[1] = 0
        state[0] += 1


@lru_cache(maxsize=None)
def refusal():
    """The launch of a rank that refused its call on the host (bad arguments, the host's
    agreement, a timeout) while a peer may have launched its kernel without waiting for
    it (a kept call, ring/host/repeated.py's post_kept): one thread posts REFUSED as this
    rank's next launch, so that every peer's kernel stops at the board with MISMATCH
    instead of waiting there until the timeout."""
    post = hand("sys").post

    @cuda.jit
    def kernel(board, state, me, k):
        post(board, state, me, k, REFUSED)
        leave(state)
    return kernel


class Board:
    """A rank's board (the shared words) and state (its launches so far, and the blocks of
    the running launch that have left), and what a kernel passes to enter()."""

    def __init__(self, words, state, me: int, k: int, areas=None):
        self.words, self.state, self.me, self.k, self._areas = words, state, me, k, areas

    @classmethod
    def alone(cls) -> Board:
        """A board that checks nothing (one rank, or ring.Group): its launches counted."""
        return cls(cuda.to_device(np.zeros(2, np.int64)), cuda.to_device(np.zeros(2, np.int64)),
                   0, 1)

    @classmethod
    def shared(cls, comm, device: int, waiter) -> Board:
        """Every rank's board: rank 0's area, mapped by all (collective over comm, every
        rank on one node)."""
        from .areas import Areas
        from .together import together
        areas = Areas(comm, 2 * comm.size * 8, device, waiter, slots=1)
        words = areas.slots[0][0].view(np.int64)
        with together(comm, "zero the call board (ring/cuda/board.py)", areas.close):
            if comm.rank == 0:  # no stale word may carry a flag
                words.copy_to_device(np.zeros(words.size, np.int64))
            state = cuda.to_device(np.zeros(2, np.int64))
            cuda.synchronize()
        return cls(words, state, comm.rank, comm.size, areas)

    def args(self, record: int) -> tuple:
        """The kernels' arguments: (board, state, me, k, record)."""
        return self.words, self.state, self.me, self.k, record

    def refuse(self, stream) -> None:
        """refusal() on stream (after this rank's launches there), where there are peers."""
        if self.k > 1:
            refusal()[1, 1, stream](self.words, self.state, self.me, self.k)

    def close(self) -> None:
        if self._areas is not None:
            self._areas.close()
            self._areas = None
