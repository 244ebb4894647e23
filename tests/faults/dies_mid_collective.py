"""The last rank dies (os._exit) after posting a few chunks of an all-reduce. Every
survivor must raise ring.TimeoutError naming the call, the step and the peer, and find the
communicator broken afterwards.

    dies_mid_collective.py TIMEOUT [host|cuda|cuda-kernel] [ALGORITHM] [async|fast|small|next|board]

On 'cuda' the victim dies after enqueuing its fifth chunk for its successor (on a GPU the
chunks are still in flight on its stream; under Numba's simulator they ran at once). On
'cuda-kernel' (path="kernel") it dies instead of launching its kernel (oneshot: the
one-shot kernel, after a first call made the inboxes), having posted the call on the call
board (ring/cuda/board.py) as its kernel would have first, so that the others'
kernels spin on its data (with 'small', a call of 64 values, which goes as LL words by
default, on its LL words; with 'board', without posting: they spin on the board). With
another all-reduce algorithm (host) it dies where that algorithm needs it: oneshot before
posting its data (across nodes, after the agreement, before the data's allgather),
twoshot after the first round, naive, ps and tree before sending (on
'cuda', oneshot before its first call makes the GPU areas, and twoshot, after a call that
made them, before the reduced blocks' round; hierarchical, under RING_NODES, before its
first call makes the two-level rings). With
'async' the survivors make the call with async_op=True and meet the error in wait()
(on the host: from the communicator's progress thread). With 'fast' (oneshot across nodes)
every rank makes two calls first, and the victim dies in the third, on the fast path
(ring/host/repeated.py), after the agreement's allgather and before the data's; with 'cuda-kernel',
on the kept call (ring/cuda/repeated.py), after the agreement, instead of firing its
launch. A cuda call on the kernel path returns once its kernel is enqueued (stream-ordered):
the survivors meet the error in comm.synchronize() after the call, or, with 'next', in
their next call (under the simulator, whose launches run at once: that call; on a GPU that
call or the synchronize() after it)."""

import os
import sys

import numpy as np
from mpi4py import MPI

import ring
from reported import line_up, say, wait_for_reports
from ring.host import compiled_round

timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
device = sys.argv[2] if len(sys.argv) > 2 else "host"
algorithm = sys.argv[3] if len(sys.argv) > 3 else "ring"
behind = len(sys.argv) > 4 and sys.argv[4] == "async"
fast = len(sys.argv) > 4 and sys.argv[4] == "fast"
small = len(sys.argv) > 4 and sys.argv[4] == "small"
again = len(sys.argv) > 4 and sys.argv[4] == "next"
unposted = len(sys.argv) > 4 and sys.argv[4] == "board"
device, path = ("cuda", "kernel") if device == "cuda-kernel" else (device, "stream")
line_up()
comm = ring.Communicator(device=device, timeout=timeout, algorithm=algorithm, path=path,
                         chunk_bytes=4096 if device == "host" else 1024)
victim = comm.size - 1
# the agreement's compiled rounds loaded from Numba's cache now (about 1 s a process, in the
# first call otherwise: under the short timeout, beside two more fault jobs on two cores,
# a rank could take past 2 s to join it)
compiled_round.warm()
direct = os.environ.get("RING_TEST_DIRECT") == "1"
if direct:  # every rank: MPI links send and receive every chunk in the arrays
    from ring.host import executor
    executor.DIRECT_MIN_BYTES = 0


def posts_then_dies(backend):
    """Replace backend.replay by a launch that posts the call on the call board, as the
    victim's kernel would before anything else, and nothing more; then the death."""
    from numba import cuda as numba_cuda

    from ring.cuda.board import hand, leave
    post = hand("sys").post

    @numba_cuda.jit
    def posts(words, state, me, k, record):
        post(words, state, me, k, record)
        leave(state)

    def dying(*args, **kwargs):
        b = backend.kernel.board
        posts[1, 1](b.words, b.state, b.me, b.k, backend.record)
        numba_cuda.synchronize()
        os._exit(3)
    backend.replay = dying


def die_after(obj, name, count):
    """Replace obj.name by a version that kills the process on its count-th call."""
    real, calls = getattr(obj, name), [0]

    def dying(*args, **kwargs):
        if count == 0:
            os._exit(3)  # before doing anything: no MPI_Finalize, no clean-up, as a crash
        real(*args, **kwargs)
        calls[0] += 1
        if calls[0] == count:
            os._exit(3)
    setattr(obj, name, dying)


if device == "host":
    x = np.ones(1 << 18, np.float32)  # 1 MiB: 64 chunks per step
else:
    from numba import cuda
    # 64 KiB: 16 chunks per step of the ring; the other algorithms' kernels take the
    # whole array at once, slow under the simulator next to the 2 s timeout: 1 KiB
    # ('small': 64 values, one chunk of 16 a channel per block of 2 ranks, so that the
    # call goes as LL words, unless RING_KERNEL_PROTO=simple, and the survivors time out
    # polling them)
    n = 1 << 6 if small else \
        1 << 14 if algorithm == "ring" else 1 << 8
    x = cuda.to_device(np.ones(n, np.float32))
if device == "cuda" and (algorithm == "twoshot" or (algorithm == "oneshot" and path == "kernel")):
    # (path="kernel": the one-shot and two-shot kernels)
    if path == "stream":  # the areas made under a generous deadline (beside two more
        comm._ctx.waiter.timeout = max(timeout, 30.0)  # fault jobs on two cores, rank 0
        # took over 2 s), the fault met under the short one (on the kernel path a launch
        # keeps the deadline it was bound with, and the fault's call is this one again)
    comm.allreduce(x)  # makes the GPU areas (the one-shot kernel's inboxes): the victim
    comm.synchronize()  # dies in the next call's rounds (instead of firing its kernel)
    comm._ctx.waiter.timeout = timeout

out = None
if fast and path == "kernel":  # kept signatures need out given (ring/cuda/repeated.py)
    out = cuda.device_array_like(x)
if fast:  # the signature learnt, then taken by the fast path
    comm.allreduce(x, out=out)
    comm.allreduce(x, out=out)
    assert path != "kernel" or len(comm._kfast) == 1

# every rank here before the fault's call, its short timeout (beside two more fault jobs on
# two cores, a rank's imports and first arrays could leave it 2 s behind: a join timeout,
# not the fault)
MPI.COMM_WORLD.Barrier()
if comm.rank == victim:
    if fast and device == "host":  # the agreement's allgather has completed when its records are compared
        from ring.host import compiled_round
        die_after(compiled_round, "gathered", 0)
    elif path == "kernel" and unposted:  # the kernel not fired, the board not posted
        die_after(comm._ctx.backend, "replay", 0)
    elif path == "kernel":  # the kernel not fired (its call posted on the board)
        posts_then_dies(comm._ctx.backend)
    elif algorithm == "oneshot" and device == "cuda":
        # after the agreement's round, before its first call makes the GPU areas
        die_after(comm._ctx, "everyone_here", 0)
    elif algorithm == "twoshot" and device == "cuda":
        # after the agreement's and the data's rounds, before the reduced blocks' (the
        # agreement's round is compiled, ring/host/repeated.py: the data's is the first post)
        die_after(comm._ctx.exchange, "post", 1)
    elif algorithm == "oneshot" and comm._ctx.exchange is None:  # across nodes: by MPI
        from ring.algorithms import oneshot
        die_after(oneshot, "allgathered", 0)
    elif algorithm == "oneshot":  # before it posts its data in the agreement's round
        die_after(comm._ctx.exchange, "put", 0)
    elif algorithm in ("twoshot", "hierarchical", "naive", "ps", "tree", "cma"):
        # after the agreement (twoshot: its data posted), before the algorithm runs
        # (hierarchical: before the two-level rings are made)
        from ring.algorithms import BY_NAME
        die_after(BY_NAME[algorithm], "run", 0)
    elif device == "host":
        # the victim walks in Python (executor.py), where the death is planted; the
        # survivors' walks are compiled (host/compiled_walk.py) and meet it there
        # (across nodes, RING_NODES, with RING_TEST_DIRECT=1: through MPI, every chunk
        # that can be is sent from the arrays, executor.DIRECT_MIN_BYTES lowered to 0)
        backend = comm._ctx.backend
        backend._shm = False
        die_after(backend.send, "post_from" if direct else "post", 5)
    else:
        die_after(comm._ctx.backend.outbound, "mark_written", 5)

try:
    if behind:
        comm.allreduce(x, async_op=True).wait()
    else:
        comm.allreduce(x, out=out)
        if again:
            comm.allreduce(x, out=out)
        comm.synchronize()  # a stream-ordered call's error, found on the GPU
    say(comm.rank, "NO ERROR")
except ring.TimeoutError as e:
    say(comm.rank, f"SURVIVED TimeoutError: {e}")
try:
    comm.allreduce(x)
except ring.CommunicatorError:
    say(comm.rank, "BROKEN")
comm.close()  # broken: drops local resources only
wait_for_reports(comm.rank, comm.size - 1)  # the victim reports nothing
