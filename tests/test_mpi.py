"""Multi-rank tests: each launches the inner tests of tests/mpi under mpiexec with a
wall-clock limit, so a hang fails the test instead of stalling the run. Every rank must
report its own pytest summary, with tests run and none skipped (assert_inner_passed)."""

import os

import pytest

from .gpu import CUDA_OR_SIM, HAVE_GPU, SIMULATED, cuda_or_sim
from .mpirun import assert_inner_passed, pytest_under_mpi

INNER = {"collectives": "tests/mpi/check_collectives.py", "errors": "tests/mpi/check_errors.py",
         "harness": "tests/mpi/check_harness.py", "lifetime": "tests/mpi/check_lifetime.py",
         "buckets": "tests/mpi/check_buckets.py"}
ENV = {"RING_INNER_MPI": "1"}


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_on_ranks(nprocs):
    """Every inner suite of INNER on nprocs ranks, in one job (one start-up of the ranks)."""
    rc, out, reports = pytest_under_mpi(nprocs, list(INNER.values()), timeout=600, env=ENV)
    assert_inner_passed(rc, out, reports, nprocs)


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs,nodes", [pytest.param(3, 1, id="3"), pytest.param(4, 1, id="4"),
                                          pytest.param(4, 2, id="4-on-2-nodes")])
def test_fuzz(nprocs, nodes):
    """Property-based: random (ranks <= nprocs, count, dtype, op, chunk, slots, in place,
    collective), every rank drawing the same examples; on emulated nodes the flat ring's
    links cross them through MPI."""
    rc, out, reports = pytest_under_mpi(nprocs, "tests/mpi/check_fuzz.py", timeout=420,
                                        env={**ENV, "RING_NODES": str(nodes)})
    assert_inner_passed(rc, out, reports, nprocs)


SEQUENCES = [pytest.param(3, 1, "host", None, id="host-3"),
             pytest.param(4, 2, "host", None, id="host-2x2"),
             pytest.param(3, 1, "cuda", "stream", id="cuda-stream-3", marks=CUDA_OR_SIM),
             pytest.param(2, 1, "cuda", "kernel", id="cuda-kernel-2", marks=CUDA_OR_SIM)]


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs,nodes,device,path", SEQUENCES)
def test_call_sequences(nprocs, nodes, device, path):
    """Property-based programs of calls (tests/mpi/check_sequences.py): signatures that
    repeat, two communicators, async calls waited for late, every algorithm; each result
    against the reference of the algorithm that ran. RING_TEST_EXAMPLES sets how many
    (a deep run: thousands)."""
    env = {**ENV, "RING_NODES": str(nodes), "RING_TEST_DEVICE": device,
           "RING_TEST_EXAMPLES": os.environ.get("RING_TEST_EXAMPLES", "40"),
           **({"RING_TEST_PATH": path} if path else {})}
    rc, out, reports = pytest_under_mpi(nprocs, "tests/mpi/check_sequences.py", timeout=420,
                                        env=env)
    assert_inner_passed(rc, out, reports, nprocs)


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs,nodes", [(4, 2), (6, 2), (6, 3), (4, 3), (2, 2)])
def test_across_emulated_nodes(nprocs, nodes):
    """RING_NODES splits the ranks into nodes that talk only through MPI point-to-point;
    with equal nodes of several ranks "auto" takes the two-level algorithm, otherwise the
    flat ring (4 ranks on 3 nodes, 2 ranks on 2 nodes). At 6 ranks, whose point is the
    layouts (nodes of 3, three nodes), every test over a cross-section of dtypes and ops
    (tests/inputs.py); the whole lists run at 4 ranks and on one node. Up to 4 ranks the
    MPI links send every chunk from and into the arrays (RING_TEST_DIRECT), at 6 through
    their slots, as they do chunks under options.DIRECT_MIN_BYTES."""
    rc, out, reports = pytest_under_mpi(nprocs, INNER["collectives"], timeout=600,
                               env={**ENV, "RING_NODES": str(nodes),
                                    "RING_TEST_CROSS_SECTION": "1" if nprocs > 4 else "0",
                                    "RING_TEST_DIRECT": "0" if nprocs > 4 else "1"})
    assert_inner_passed(rc, out, reports, nprocs)


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs,nodes", [(4, 2), (3, 3)])
def test_errors_across_emulated_nodes(nprocs, nodes):
    """Bad input raises on every rank across nodes too, where the agreement is one MPI
    allgather instead of the node's shared window, and a small all-reduce's data ride in
    it on a fast path of its own (ring/host/repeated.py's Gathered)."""
    rc, out, reports = pytest_under_mpi(nprocs, INNER["errors"], timeout=300,
                                        env={**ENV, "RING_NODES": str(nodes)})
    assert_inner_passed(rc, out, reports, nprocs)


@cuda_or_sim
@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [2, 3, 4])
def test_cuda_device_processes_sharing_a_gpu(nprocs):
    """device='cuda' with nprocs processes on the machine's GPUs (CUDA IPC between them);
    under the simulator, the same code with IPC emulated in shared memory, and every op x
    dtype on 2 processes, a cross-section of them on 3 and 4 (tests/inputs.py)."""
    cross = "1" if SIMULATED and nprocs > 2 else "0"
    # RING_TEST_INNER_K narrows the inner suite (a GPU session looking for one failure)
    inner = os.environ.get("RING_TEST_INNER_K")
    rc, out, reports = pytest_under_mpi(nprocs, "tests/mpi/check_cuda.py", timeout=420,
                                        env={**ENV, "RING_TEST_CROSS_SECTION": cross},
                                        extra=["-k", inner] if inner else None)
    assert_inner_passed(rc, out, reports, nprocs)


@cuda_or_sim
@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_cuda_registered_buffers(nprocs):
    """comm.register(x) (ring/cuda/registered.py): the two-shot kernel reads and writes
    registered buffers in place, at offsets that differ between the ranks (every op x dtype
    at 2 processes under the simulator, else a cross-section (on a GPU: what it adds is the
    driver's IPC, each kernel a compile); at 1, register says False); a freed buffer
    and a new one at its address are never read through a stale mapping (also in drawn
    programs of registrations, frees and calls); ranks whose calls
    differ get MismatchError from the kernel's records with the host's agreement off
    (tests/mpi/check_registered.py)."""
    select = "one_process" if nprocs == 1 else \
        "not one_process" + ("" if SIMULATED else " and not no_peer_can_map")
    rc, out, reports = pytest_under_mpi(nprocs, "tests/mpi/check_registered.py", timeout=300,
                                        env={**ENV, "RING_TEST_CROSS_SECTION":
                                             "0" if nprocs == 2 and SIMULATED else "1"},
                                        extra=["-k", select])
    assert_inner_passed(rc, out, reports, nprocs)


@cuda_or_sim
@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_cuda_kernel_path(nprocs):
    """path="kernel": every collective in one persistent kernel per rank, waiting on
    counters (or, for the calls whose chunks fit, LL words) in the neighbours' segments
    (under the simulator: in MPI shared memory, each process's kernel spinning on the
    others'). The collective tests of check_cuda.py."""
    env = {**ENV, "RING_TEST_PATH": "kernel"}
    # every op x dtype on 2 processes (under the simulator too: 15 s since kernels/simulator.py);
    # a cross-section on 1, 3 and 4
    wide = "matches_the_exact or gather_scatter or broadcast_and"
    narrow = ("(matches_the_exact and (float32-sum or bfloat16-avg or int8-prod or float64-max"
              " or uint64-min)) or (gather_scatter and float32) or "
              "(broadcast_and and bfloat16)")
    first = wide if nprocs == 2 else narrow
    # the one-shot and two-shot kernels (more than one rank): every op x dtype on 2
    # processes under the simulator, a cross-section on 3 and 4 and on a GPU
    shots = "every_allreduce_algorithm and (oneshot or twoshot)"
    if nprocs > 2 or not SIMULATED:  # (on a GPU each op x dtype is two compiles: the
        # bits are the simulator's to check, the GPU's the memory and the waits)
        shots += " and (float32-sum or bfloat16-avg or int8-prod or float64-max or uint64-min)"
    select = (f"({first}) or scatter_and_allgather or in_place or two_slots or async_op or "
              f"kernel_launch or kept_signature or compiled_round or left_running or "
              f"ordered_after or blocking_calls or bad_stream or kept_call_beside or "
              f"another_stream or inbox_holds" +
              (f" or ({shots})" if nprocs > 1 else ""))
    rc, out, reports = pytest_under_mpi(nprocs, "tests/mpi/check_cuda.py", timeout=420,
                                        env=env, extra=["-k", select])
    assert_inner_passed(rc, out, reports, nprocs)


@cuda_or_sim
@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [2, 4])
def test_cuda_kernel_path_fence(nprocs):
    """path="kernel" with RING_KERNEL_SYNC=fence, the hand-off that is not the default: the
    counters read and written with atomics between sequentially consistent fences (across
    processes: in the IPC segments; under the simulator, in MPI shared memory). A
    cross-section of check_cuda.py."""
    env = {**ENV, "RING_TEST_PATH": "kernel", "RING_KERNEL_SYNC": "fence"}
    select = ("(matches_the_exact and (float32-sum or bfloat16-avg or int8-prod)) or "
              "two_slots or scatter_and_allgather")
    rc, out, reports = pytest_under_mpi(nprocs, "tests/mpi/check_cuda.py", timeout=420,
                                        env=env, extra=["-k", select])
    assert_inner_passed(rc, out, reports, nprocs)


@cuda_or_sim
@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [2, 4])
def test_cuda_kernel_path_simple(nprocs):
    """path="kernel" with RING_KERNEL_PROTO=simple: every chunk through the slot and a
    counter, the small calls too (by default, test_cuda_kernel_path, the calls whose chunks
    fit go as LL words: each element with its flag in one 64-bit store, persistent.LL_WORDS;
    sizes 1 and 37 fit, 301 does not, under the simulator; two slots of 64 bytes make every
    chunk wait for its slot's credit)."""
    env = {**ENV, "RING_TEST_PATH": "kernel", "RING_KERNEL_PROTO": "simple"}
    select = ("(matches_the_exact and (float32-sum or bfloat16-avg or int8-prod or "
              "float64-max)) or two_slots or scatter_and_allgather or in_place or "
              "(gather_scatter and (uint8 or float64))")
    rc, out, reports = pytest_under_mpi(nprocs, "tests/mpi/check_cuda.py", timeout=420,
                                        env=env, extra=["-k", select])
    assert_inner_passed(rc, out, reports, nprocs)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs a real NVIDIA GPU (under the simulator "
                    "path='auto' is the kernel path, which test_cuda_kernel_path runs)")
@pytest.mark.mpi
@pytest.mark.parametrize("nprocs,part", [(2, "matches_the_exact"), (2, "not matches_the_exact"),
                                         (3, ""), (4, "")],
                         ids=["2-exact", "2-others", "3", "4"])
def test_cuda_auto_path(nprocs, part):
    """path="auto" (issue 14's default-to-be): the whole of check_cuda.py on a communicator
    that takes the kernel path where every rank shares the GPU under MPS, the stream path
    elsewhere: the other all-reduce algorithms, int8 buckets and bucket views included, which
    test_cuda_kernel_path's selection leaves out. Every op x dtype on 2 processes (in two
    parts, which a GPU session's workers run side by side), a cross-section on 3 and 4; the
    lifetime test (default path, free memory) is test_cuda_device_processes_sharing_a_gpu's."""
    env = {**ENV, "RING_TEST_PATH": "auto", "RING_TEST_CROSS_SECTION": "1" if nprocs > 2 else "0"}
    select = "not many_communicators" + (f" and ({part})" if part else "")
    rc, out, reports = pytest_under_mpi(nprocs, "tests/mpi/check_cuda.py", timeout=600,
                                        env=env, extra=["-k", select])
    assert_inner_passed(rc, out, reports, nprocs)


# MPICH made to move a message only on its sender's calls (tests/mpi/check_progress.py)
SENDER_MOVES = {"no-single-copy": {"MPIR_CVAR_CH4_CMA_ENABLE": "0"},
                "two-cells": {"MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_NUM_CELLS": "2",
                              "RING_TEST_CHUNK": "256"}}


@pytest.mark.mpi
@pytest.mark.parametrize("device,mpi", [
    *(("host", m) for m in SENDER_MOVES),
    *(pytest.param("cuda", m, marks=CUDA_OR_SIM) for m in SENDER_MOVES),
    # device slots handed to MPI as they are (RING_CUDA_AWARE_MPI=1: only the simulator's
    # "device memory" is host memory that the mpich wheel can take), read by MPI on the
    # sender's later calls
    pytest.param("cuda-direct", "no-single-copy", marks=pytest.mark.skipif(
        not SIMULATED, reason="needs CUDA-aware MPI"))])
def test_links_across_nodes_over_an_mpi_that_moves_messages_on_the_senders_calls(device, mpi):
    """4 ranks on 2 emulated nodes where MPI moves a message only while its sender calls
    MPI: large messages without MPICH's single-copy path, small ones once the cells between
    a pair are taken (tests/mpi/check_progress.py). Every wait keeps the rank's MPI
    messages moving, and a call ends once MPI is done with its sends; without either, the
    ring across nodes hung (one cause of a GPU session's timeout, 2026-11-27). A buffer is
    written again only once its send is done: MPI still reads it until then."""
    env = {**ENV, "RING_NODES": "2", "RING_TEST_DEVICE": device.split("-")[0],
           "RING_CUDA_AWARE_MPI": "1" if device == "cuda-direct" else "0", **SENDER_MOVES[mpi]}
    rc, out, reports = pytest_under_mpi(4, "tests/mpi/check_progress.py", timeout=300, env=env)
    assert_inner_passed(rc, out, reports, 4)


@cuda_or_sim
@pytest.mark.mpi
@pytest.mark.parametrize("nprocs,nodes,aware", [
    (4, 2, None), (6, 3, None), (2, 2, None),
    # device buffers straight to MPI: only the simulator's "device memory" is host memory
    # that the (not CUDA-aware) mpich wheel can take
    pytest.param(4, 2, "1", marks=pytest.mark.skipif(not SIMULATED, reason="needs CUDA-aware MPI"))])
def test_cuda_device_across_emulated_nodes(nprocs, nodes, aware):
    """device='cuda' with links between nodes over MPI (staged through pinned host memory,
    or direct with RING_CUDA_AWARE_MPI=1), flat ring and two-level."""
    env = {**ENV, "RING_NODES": str(nodes), "RING_CUDA_AWARE_MPI": aware or "0"}
    rc, out, reports = pytest_under_mpi(nprocs, "tests/mpi/check_cuda_nodes.py", timeout=420, env=env)
    assert_inner_passed(rc, out, reports, nprocs)
