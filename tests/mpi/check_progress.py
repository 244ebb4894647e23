"""Ring links across (emulated) nodes over an MPI that moves a message only while its
sender calls MPI, as MPI is allowed to (and networks with a rendezvous protocol do).
tests/test_mpi.py runs this with RING_NODES=2 and MPICH made so:
- its single-copy path off (MPIR_CVAR_CH4_CMA_ENABLE=0): a message of 16 KiB or more goes
  through shared-memory cells, one cell at a time, on the sender's calls; the messages
  here are 64 KiB (32 KiB on the simulator's GPU);
- two cells between a pair (MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_NUM_CELLS=2, RING_TEST_CHUNK=256):
  a small message waits in the sender's queue until a cell is free and the sender calls
  MPI, as it does on a loaded machine once lagging receivers leave no cell free.

Before ring/wait.py's progress hook, a rank whose successor is on the other node Isent a
chunk and then waited on its neighbour on this node (shared memory, or the GPU), calling
no MPI, while that successor waited for the chunk: every all-reduce across the nodes hung
until the timeout (one cause of a timeout on an H100: 6 processes on 3 emulated nodes,
even ranks "waiting for data" from odd ones; on a GPU, a kernel's first launch blocked
the senders too: ring/cuda/enqueue.load_kernels). And a call returned with its last
message still in flight, so a rank back in its own code held its successor's call.
A cell moves on only once its receiver has emptied it, on the receiver's calls: a rank's
receiving end must keep MPI moving too, for every receive it has posted (the last test).
RING_TEST_DEVICE: host or cuda."""

import os
import shutil
import tempfile
import time

import numpy as np
import pytest
from mpi4py import MPI

import ring
from ring.options import DEFAULT_SLOTS

W = MPI.COMM_WORLD
DEVICE = os.environ.get("RING_TEST_DEVICE", "host")
# messages of four 16 KiB cells; of two on the simulator's GPU (whose kernels are slow)
CHUNK = int(os.environ.get("RING_TEST_CHUNK") or (64 if DEVICE == "host" else 32) << 10)
# float64 on the cuda device: half float32's elements for the same bytes (each element of a
# simulated kernel is Python's work); the sums exact in either. Chunks a block: 2, or 1
DTYPE = np.float32 if DEVICE == "host" else np.float64
N = W.size * CHUNK // np.dtype(DTYPE).itemsize * (2 if DEVICE == "host" else 1)
ALGORITHMS = ["ring", "hierarchical"] if DEVICE == "host" else ["ring"]  # (the simulator's
# two-level ring: check_cuda_nodes.py, with links all over MPI at 2 ranks on 2 nodes)

if DEVICE == "cuda":
    from numba import cuda


def _put(a):
    return cuda.to_device(a) if DEVICE == "cuda" else a


def _get(a):
    return a.copy_to_host() if DEVICE == "cuda" else a


def _inputs(rank: int) -> np.ndarray:
    return (np.arange(N) % 1000 + 7 * rank).astype(DTYPE)


WANT = sum(_inputs(r) for r in range(W.size))
SILENT_S = 30  # how long the senders call no MPI at most, well within the communicator's timeout


def _node(rank: int) -> int:
    """Which emulated node a rank is on (RING_NODES=2: the first half, the second)."""
    return rank * 2 // W.size


def _communicator(algorithm: str, timeout: float = 60,
                  nslots: int = DEFAULT_SLOTS) -> ring.Communicator:
    return ring.Communicator(device=DEVICE, timeout=timeout, chunk_bytes=CHUNK,
                             algorithm=algorithm, nslots=nslots)


def test_the_links_cross_nodes_over_an_mpi_that_waits_for_the_sender():
    assert os.environ.get("MPIR_CVAR_CH4_CMA_ENABLE") == "0" or \
        os.environ.get("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_NUM_CELLS") == "2", "run by tests/test_mpi.py"
    with _communicator("ring") as c:
        assert c.nodes == 2 and W.size >= 4  # each node's ring links in shared memory


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_an_allreduce_across_nodes_ends(algorithm):
    """The flat ring (a link of each kind at every rank) and, on the host, the two-level
    one (the node leaders' ring all over MPI), two calls each."""
    with _communicator(algorithm) as c:
        for _ in range(2):
            got = _get(c.allreduce(_put(_inputs(c.rank))))
            assert np.array_equal(got, WANT)


def test_the_flat_ring_still_moves_its_messages_after_the_two_level_one():
    """One communicator, a two-level call and then flat-ring calls: the two-level ring's
    backends add their MPI ends' progress to the waiter the flat ring's already has, and
    must keep the flat ring's (ring/wait.py's add_progress): without it the flat ring's
    rank that waits on its node-mate no longer moves the message its successor on the other
    node waits for, and the call hangs until the timeout."""
    with _communicator("ring") as c:
        for algorithm in ("hierarchical", "ring", "ring"):
            got = _get(c.allreduce(_put(_inputs(c.rank)), algorithm=algorithm))
            assert np.array_equal(got, WANT), algorithm


def test_a_slot_is_written_again_only_once_mpi_is_done_with_it():
    """Two slots a link, so that each is written again within a call: a sender must wait
    until MPI has taken a slot's last message, which MPI here reads on the sender's later
    calls (with RING_CUDA_AWARE_MPI=1 the device slot itself is the send buffer)."""
    with _communicator("ring", nslots=2) as c:
        for _ in range(2):
            assert np.array_equal(_get(c.allreduce(_put(_inputs(c.rank)))), WANT)


def test_every_collective_across_nodes_ends():
    """The other collectives' rings and chains (through a root at either end) over the
    same links: each call ends with the exact result."""
    k, r, b = W.size, W.rank, N // W.size
    xs = [_inputs(q) for q in range(k)]
    blocks = np.concatenate([x[:b] for x in xs])
    with _communicator("ring") as c:
        assert np.array_equal(_get(c.reduce_scatter(_put(xs[r]))), WANT[r * b:(r + 1) * b])
        assert np.array_equal(_get(c.allgather(_put(xs[r][:b]))), blocks)
        want = np.concatenate([x[r * b:(r + 1) * b] for x in xs])
        assert np.array_equal(_get(c.alltoall(_put(xs[r]))), want)
        for root in (0, k - 1):
            x = _put(xs[r].copy())
            c.broadcast(x, root=root)
            assert np.array_equal(_get(x), xs[root])
            got = c.reduce(_put(xs[r]), root=root)
            assert got is None if r != root else np.array_equal(_get(got), WANT)
            got = c.gather(_put(xs[r][:b]), root=root)
            assert got is None if r != root else np.array_equal(_get(got), blocks)
            got = _get(c.scatter(_put(xs[root]), root=root))
            assert np.array_equal(got, xs[root][r * b:(r + 1) * b])


def test_a_rank_back_in_its_own_code_holds_no_peer():
    """After a broadcast from rank 1, the ranks that send to the other node (1 and 3 of
    nodes {0, 1} and {2, 3}) call no MPI until every other rank's call has ended (each
    leaves a file; at most SILENT_S): those calls end all the same, since a call ends once
    MPI is done with its sends. Rank 1's call ends with a send across the node: without that
    wait its last chunk is still in flight there, and the others' calls end only once the
    senders call MPI again. (An all-reduce ends on a receive, which mostly hid it: with the
    cuda device's wait taken out, a test of an all-reduce here passed, then failed.) The
    senders wait for the files, not for a fixed time: a loaded machine's slow call is no
    failure here (a 10 s sleep past a 10 s timeout was one, in CI)."""
    sender = _node(W.rank) != _node((W.rank + 1) % W.size)
    folder = W.bcast(tempfile.mkdtemp(prefix="ring-ended-") if W.rank == 0 else None)
    others = [r for r in range(W.size) if _node(r) == _node((r + 1) % W.size)]
    with _communicator("ring", timeout=4 * SILENT_S) as c:
        x = _put(_inputs(c.rank))
        c.allreduce(x)  # compiled and warm: the broadcast's time is its own
        c.broadcast(x, root=1)
        got = _get(x)
        if not sender:
            open(os.path.join(folder, str(c.rank)), "w").close()
        def others_ended() -> bool:
            return all(os.path.exists(os.path.join(folder, str(r))) for r in others)
        deadline = time.monotonic() + SILENT_S
        while sender and not others_ended() and time.monotonic() < deadline:
            time.sleep(0.05)  # no MPI: the others' calls must end without this rank's
        # MPI's: the others wait here, not in close(), whose wait has a timeout
        ended = W.allreduce(not sender or others_ended(), op=MPI.LAND)
    if W.rank == 0:
        shutil.rmtree(folder)
    assert ended, f"ranks {others}' calls had not ended {SILENT_S} s into the senders' silence"
    assert np.array_equal(got, _inputs(1))


def _receiving_end(kind: str, comm, waiter):
    """Rank 2's end of a link from rank 0, its kind's: (the end, the buffers its messages
    land in, a function listing its receives in flight)."""
    if kind == "mpi":
        from ring.transport.mpi import MpiRecv
        end = MpiRecv(comm, 0, 4, CHUNK, waiter, "rank 0")
        return end, end.raw, lambda: [req for req, _ in end.pending]
    from ring.transport.staged import StagedIn  # the cuda device's, staged through the host
    end = StagedIn(comm, 0, 4, CHUNK, waiter, direct=False)
    return end, end.host, lambda: [req for req in end.reqs if req is not None]


@pytest.mark.parametrize("kind", ["mpi"] if DEVICE == "host" else ["staged"])
def test_a_receivers_progress_moves_every_message_to_it(kind):
    """The receiving end's progress(), called while its rank waits on something else (its
    neighbour on this node, or its GPU), must move on every receive it has posted, not only
    one: rank 0 Isends four messages to rank 2, which waits only on memory (whether they
    have landed) with its end's progress as the waiter's hook, as the communicator's waits
    are. MPI here moves a message only while both ends call MPI, and MPICH's
    MPI_Request_get_status pokes MPI only for a request not yet complete (asking the oldest
    alone, or the first buffer's, moved one message and then nothing). Rank 0's flush times
    out if rank 2's hook moves nothing; both ranks then finish the messages in MPI's own
    waits, so that no failure leaves one waiting."""
    from ring.errors import TimeoutError
    from ring.transport.mpi import MpiSend
    from ring.wait import Waiter

    comm, pattern = W.Dup(), np.arange(CHUNK, dtype=np.uint8) | 1  # no zero byte
    # (milliseconds where the hook works; room for 4 ranks polling on a loaded 2 cores)
    waiter, missed = Waiter(timeout=30), None
    W.Barrier()  # rank 0's wait starts when rank 2's does, give or take its setup
    try:
        if W.rank == 0:
            send = MpiSend(comm, 2, 4, CHUNK, waiter, "rank 2")
            for _ in range(4):
                send.acquire(np.uint8)[:] = pattern
                send.post(CHUNK)
            waiter.start("rank 0's sends")
            try:
                send.flush()  # its own calls: MPI moves what the receiver lets it
            except TimeoutError as e:
                missed = str(e)
                waiter.start("rank 0's sends, again")
                send.flush()
        elif W.rank == 2:
            end, buffers, in_flight = _receiving_end(kind, comm, waiter)
            for b in buffers:
                b[:] = 0
            end.begin(4)
            waiter.add_progress(end)
            waiter.start("rank 2 waiting on its node")
            try:
                waiter.until(lambda: all(b.all() for b in buffers),
                             lambda: "messages from rank 0 landing")
            except TimeoutError as e:
                missed = str(e)
            waiter.start("rank 2's receives, in MPI's waits")
            for req in in_flight():
                waiter.until(req.Test, lambda: "messages from rank 0")
            for b in buffers:
                assert np.array_equal(b, pattern)
    finally:
        W.Barrier()
        comm.Free()
    assert missed is None, missed
