"""Faults under mpiexec, each under a wall-clock limit: a rank dies in the middle of a
collective, a rank never makes a call, a rank never creates the communicator. Every
survivor raises the documented exception, the job ends with a non-zero status, and no
process is left behind. (Disagreeing calls, bad arguments and use after close() are in
tests/mpi/check_errors.py.)

mpiexec runs with -disable-auto-cleanup so that the survivors outlive the dead rank long
enough to report; without it MPICH's launcher kills them as soon as one rank dies, which
ends the job too."""

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from . import mpirun
from .gpu import CUDA_OR_SIM, SIMULATED, cuda_or_sim

pytestmark = pytest.mark.mpi

# Every job this pytest process starts carries its pid: another process's jobs of the same
# script (pytest-xdist workers, in the GPU session's suite) are not ours to count as left
# behind. A GPU suite (2026-11-27) failed three of these tests on each other's live jobs.
OWNER = str(os.getpid())


def run(nprocs: int, args: list[str], env: dict | None = None, **kw):
    """mpirun.run, the job marked as ours, with a folder of its own where its ranks keep
    their report lines and mark that they are done (tests/faults/reported.py): the job ends
    as soon as every reporter is. Its output, with the kept lines first: the job's abort
    can cut off a rank's printed lines before mpiexec has forwarded them."""
    with tempfile.TemporaryDirectory(prefix="ring-faults-") as reported:
        rc, out = mpirun.run(nprocs, args, **kw, env={**(env or {}), "RING_TEST_OWNER": OWNER,
                                                      "RING_TEST_REPORTED": reported})
        kept = "".join(Path(reported, name).read_text()
                       for name in sorted(os.listdir(reported)) if name.endswith(".txt"))
    return rc, kept + out


def _ours(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"RING_TEST_OWNER={OWNER}".encode() in f.read().split(b"\0")
    except OSError:  # gone meanwhile, or not ours to read
        return False


def _left_behind(script: str) -> list[str]:
    """Processes of the script that this pytest process started (mpiexec and its ranks)
    still alive a few seconds after mpiexec returned."""
    for _ in range(50):
        out = subprocess.run(["pgrep", "-a", "-f", script], capture_output=True, text=True)
        alive = [ln for ln in out.stdout.splitlines() if _ours(ln.split(None, 1)[0])]
        if not alive:
            return []
        time.sleep(0.1)
    return alive


def test_only_this_processs_jobs_count_as_left_behind():
    """Two processes whose command lines name the script: the one started with this pytest
    process's mark is found, the other (another worker's job, say) is not."""
    script = "tests/faults/dies_mid_collective.py"
    cmd = [sys.executable, "-c", "import time; time.sleep(60)", script]
    procs = [subprocess.Popen(cmd, env={**os.environ, "RING_TEST_OWNER": owner})
             for owner in (OWNER, "1")]
    try:
        time.sleep(0.5)
        left = _left_behind(script)
        assert [ln.split(None, 1)[0] for ln in left] == [str(procs[0].pid)], left
        procs[0].kill()
        procs[0].wait()
        assert _left_behind(script) == []
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _report(out: str, r: int) -> str | None:
    """Rank r's TimeoutError message: from its marker to 'no progress within 2 s' (raised
    in a call, or, for a stream-ordered call on the cuda device, in synchronize())."""
    m = re.search(rf"rank {r}: SURVIVED TimeoutError: ((allreduce \(call \d+, |synchronize \()"
                  rf"rank {r}\).*?no progress within 2 s)", out, re.S)
    return m.group(1) if m else None


# Where each device's survivors say they were stuck: the host executor names the chunk,
# step and peer; the cuda device the counter it spun on (simulator) or the GPU stream the
# host polled (GPU: the enqueue was long done when the peer died).
STUCK = {"host": r"chunk \d+ step \d+: waiting for data from rank \d+",
         "cuda": r"waiting for (the chunks posted to rank \d+|the GPU to finish the call)",
         # the persistent kernel's error word: where it spun, and on which counter
         "cuda-kernel": r"ring kernel channel \d+, chunk \d+ step \d+: waiting for (the chunks "
                        r"posted to rank \d+ by rank \d+|rank \d+ to free a slot)"}


# ... and where the other all-reduce algorithms say they were stuck when a peer died
STUCK_IN = {"oneshot": r"waiting for rank \d+ to join the call",
            "twoshot": r"waiting for rank \d+ to post its reduced block \(twoshot\)",
            # after the agreement: the survivors' reads of the dead rank's x fail or not,
            # and they wait in the round that closes the call (or, in two phases, the
            # round after the first)
            "cma": r"waiting for rank \d+ to (finish reading its peers' arrays|reduce its "
                   r"block of the all-reduce or reduce) \(cma\)",
            "naive": r"waiting for every rank's data \(naive\)",
            "ps": r"(waiting for (every rank's data at the root|the result from rank 0)|"
                  r"sending the result to every rank) \(ps\)",
            # a rank whose parent died may be stuck in its send up as well as in a receive
            "tree": r"waiting for (the children's partial sums|the result from the parent) \(tree \d\)|"
                    r"sending the (partial sums up|result down) \(tree\)"}


# ... and on the cuda device, where oneshot's victim dies before the GPU areas are made
STUCK_CUDA = {"oneshot": r"waiting for every rank to make its GPU area \(oneshot / twoshot\)"}


@pytest.mark.parametrize("device,algorithm", [("host", "ring"),
                                              pytest.param("cuda", "ring", marks=CUDA_OR_SIM),
                                              pytest.param("cuda-kernel", "ring", marks=CUDA_OR_SIM)]
                         + [("host", a) for a in STUCK_IN]
                         + [pytest.param("cuda", a, marks=CUDA_OR_SIM) for a in STUCK_IN
                            if a != "cma"])  # (cma: the host's only)
@pytest.mark.parametrize("nprocs", [2, 3, 4])
def test_a_rank_dies_in_the_middle_of_an_allreduce(nprocs, device, algorithm):
    if algorithm != "ring" and nprocs == 4:
        pytest.skip("2 and 3 ranks cover each algorithm's waits")  # keeps CI time down
    if device == "cuda" and algorithm != "ring" and nprocs != 3:
        pytest.skip("3 ranks cover the cuda device's other algorithms")  # CI time
    script = "tests/faults/dies_mid_collective.py"
    rc, out = run(nprocs, [script, "2", device, algorithm], timeout=120,
                  mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    for r in range(nprocs - 1):  # ranks' lines may interleave mid-line: match, not split
        m = _report(out, r)
        assert m, f"rank {r} did not report:\n{out}"
        want = STUCK_CUDA.get(algorithm) if device == "cuda" else None
        assert re.search(want or STUCK_IN.get(algorithm) or STUCK[device], m), m
        assert f"rank {r}: BROKEN" in out
    assert "NO ERROR" not in out
    assert _left_behind(script) == []


@cuda_or_sim
def test_a_rank_dies_in_a_kept_kernel_path_call():
    """path="kernel", the third call of a signature (ring/cuda/repeated.py): the victim
    agrees on the kept record and dies instead of firing its kept launch; the survivors'
    kernels time out on it and they raise TimeoutError from the kernel's error word."""
    script = "tests/faults/dies_mid_collective.py"
    rc, out = run(2, [script, "2", "cuda-kernel", "ring", "fast"], timeout=120,
                  mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    m = _report(out, 0)
    assert m, f"rank 0 did not report:\n{out}"
    assert re.search(STUCK["cuda-kernel"], m), m
    assert "rank 0: BROKEN" in out and "NO ERROR" not in out
    assert _left_behind(script) == []


# where the survivors of a victim that never fires its one-shot / two-shot kernel say they
# waited (the second call: flag 2; the first call's flags are 1, the unused parity's 0;
# the two-shot's first call took its flags to 1 (record), 2 (staged), 3 (written): the
# second's record waits for 4)
STUCK_SHOT = {"oneshot": r"one-shot kernel block \d+: waiting for element \d+ from rank "
                         r"{victim} flagged 2 \(one flagged 0\)",
              "twoshot": r"two-shot kernel block \d+, round 0: waiting for rank {victim} to "
                         r"start the call \(flag 4, at 1\)"}


@cuda_or_sim
@pytest.mark.parametrize("algorithm,nprocs", [("oneshot", 2), ("oneshot", 3), ("twoshot", 3)])
def test_a_rank_dies_before_its_one_shot_or_two_shot_kernel(algorithm, nprocs):
    """path="kernel": the one-shot kernel (ring/cuda/oneshot_kernel.py) or the two-shot
    kernel (ring/cuda/twoshot_kernel.py); the victim dies instead of firing it (its call
    posted on the call board), after a first call made the areas; the survivors' kernels
    wait for its data (the one-shot) or its record (the two-shot: before any data), time
    out, and synchronize() raises what the error word says."""
    script = "tests/faults/dies_mid_collective.py"
    rc, out = run(nprocs, [script, "2", "cuda-kernel", algorithm], timeout=120,
                  mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    for r in range(nprocs - 1):
        m = _report(out, r)
        assert m, f"rank {r} did not report:\n{out}"
        assert re.search(STUCK_SHOT[algorithm].format(victim=nprocs - 1), m), m
        assert f"rank {r}: BROKEN" in out
    assert "NO ERROR" not in out
    assert _left_behind(script) == []


@cuda_or_sim
@pytest.mark.parametrize("algorithm", ["ring", "oneshot"])
def test_a_rank_that_never_launches_is_found_at_the_call_board(algorithm):
    """path="kernel": the victim dies before its kernel would have posted the call on the
    call board (ring/cuda/board.py); every survivor's kernel waits there, before anything
    of the call's data, times out, and synchronize() names the victim and the launch."""
    script = "tests/faults/dies_mid_collective.py"
    rc, out = run(3, [script, "2", "cuda-kernel", algorithm, "board"], timeout=120,
                  mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    launch = 2 if algorithm == "oneshot" else 1  # (the one-shot's first call made its inbox)
    for r in range(2):
        m = _report(out, r)
        assert m, f"rank {r} did not report:\n{out}"
        assert re.search(rf"kernel block \d+: waiting for rank 2 to start its kernel-path "
                         rf"launch {launch} \(its latest: 0\)", m), m  # (none of its parity)
        assert f"rank {r}: BROKEN" in out
    assert "NO ERROR" not in out
    assert _left_behind(script) == []


@cuda_or_sim
def test_a_stream_ordered_calls_error_is_raised_by_the_next_call():
    """path="kernel", calls stream-ordered (the default): the victim dies instead of
    launching; each survivor's first call returns once enqueued, its kernel times out on
    the GPU, and the error word is raised by its next call (under the simulator, whose
    launch has run by then) or by synchronize() after it (on a GPU, where the next call may
    come before the kernel's timeout), naming the earlier call."""
    script = "tests/faults/dies_mid_collective.py"
    rc, out = run(3, [script, "2", "cuda-kernel", "ring", "next"], timeout=120,
                  mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    for r in range(2):
        m = _report(out, r)
        assert m, f"rank {r} did not report:\n{out}"
        assert re.search(r"in call 1 \(enqueued earlier\), " + STUCK["cuda-kernel"], m), m
        if SIMULATED:
            assert m.startswith(f"allreduce (call 2, rank {r})"), m
        assert f"rank {r}: BROKEN" in out
    assert "NO ERROR" not in out
    assert _left_behind(script) == []


@cuda_or_sim
@pytest.mark.parametrize("blocking", [False, True], ids=["stream-ordered", "blocking"])
@pytest.mark.parametrize("nprocs", [1, 2])
def test_an_error_word_a_work_may_have_left_is_read_by_the_next_call(nprocs, blocking):
    """A call whose kernel ends quickly does not read its error word, unless a Work is
    out: a word its kernel wrote makes the next kernel stop at the first wait it has to
    make. Rank 0's word set behind an async call: its next call raises the word's
    TimeoutError (tests/faults/stale_error_word.py; stream-ordered: at the synchronize()
    after it); the others time out waiting for rank 0, or finish, where rank 0's chunks
    were all there before its kernel had to wait."""
    script = "tests/faults/stale_error_word.py"
    rc, out = run(nprocs, [script, "2"] + (["blocking"] if blocking else []), timeout=120,
                  mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    m = _report(out, 0)
    assert m, f"rank 0 did not report:\n{out}"
    assert re.search(r"ring kernel channel 0, chunk 0 step 0: waiting for the chunks posted "
                     r"to rank 0 by rank \d+ to reach 1 \(at 0\)", m), m
    assert "rank 0: NO ERROR" not in out
    assert _left_behind(script) == []


@cuda_or_sim
def test_a_rank_dies_in_a_kernel_path_call_of_ll_words():
    """path="kernel", a call small enough for LL words (the default protocol: no
    RING_KERNEL_PROTO here): the victim dies instead of launching; the survivor's threads
    each poll their own LL words for a flag that never comes, time out, and the kernel's
    error word says it waited for LL words (one thread's record)."""
    script = "tests/faults/dies_mid_collective.py"
    rc, out = run(2, [script, "2", "cuda-kernel", "ring", "small"], timeout=120,
                  mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    m = _report(out, 0)
    assert m, f"rank 0 did not report:\n{out}"
    assert re.search(r"ring kernel channel \d+, chunk \d+ step \d+: waiting for the chunks "
                     r"posted to rank 0 by rank 1 as LL words", m), m
    assert "rank 0: BROKEN" in out and "NO ERROR" not in out
    assert _left_behind(script) == []


@pytest.mark.parametrize("nprocs,algorithm", [(2, "ring"), (3, "ring"), (3, "oneshot"),
                                             (2, "oneshot fast")])
def test_a_rank_dies_in_the_middle_of_an_allreduce_across_nodes(nprocs, algorithm):
    """One emulated node per rank: every link is MPI, chunks sent from and received into
    the caller's arrays (transport/mpi.py). The survivors raise TimeoutError where they
    waited, for data or for a message to be taken, and cancel their receives. oneshot
    (one MPI allgather there): the victim dies after the agreement, before the data's, on
    the full path and ("fast") on the fast path."""
    script = "tests/faults/dies_mid_collective.py"
    rc, out = run(nprocs, [script, "2", "host", *algorithm.split()], timeout=120,
                  mpi_args=["-disable-auto-cleanup"],
                  env={"RING_NODES": str(nprocs), "RING_TEST_DIRECT": "1"})
    assert rc not in (0, None), out
    stuck = r"waiting for every rank's data \(oneshot\)" if "oneshot" in algorithm else \
        r"chunk \d+ step \d+: waiting for (data from rank \d+|rank \d+ to take a message)"
    for r in range(nprocs - 1):
        m = _report(out, r)
        assert m, f"rank {r} did not report:\n{out}"
        assert re.search(stuck, m), m
        assert f"rank {r}: BROKEN" in out
    assert "NO ERROR" not in out
    assert _left_behind(script) == []


def test_a_rank_lost_before_the_two_level_rings_are_made():
    """2 emulated nodes of 2 ranks, algorithm="hierarchical": the last rank dies after the
    agreement, where its first call would make the two-level rings (collective MPI calls
    that wait forever): the others raise TimeoutError from the barrier before them."""
    script = "tests/faults/dies_mid_collective.py"
    rc, out = run(4, [script, "2", "host", "hierarchical"], timeout=120,
                  mpi_args=["-disable-auto-cleanup"], env={"RING_NODES": "2"})
    assert rc not in (0, None), out
    for r in range(3):
        m = _report(out, r)
        assert m, f"rank {r} did not report:\n{out}"
        assert "waiting for every rank to make the two-level rings (hierarchical)" in m, m
        assert f"rank {r}: BROKEN" in out
    assert _left_behind(script) == []


@pytest.mark.parametrize("nprocs,device", [(2, "host"), (3, "host"),
                                            pytest.param(2, "cuda-kernel", marks=CUDA_OR_SIM)])
def test_a_rank_dies_during_an_async_allreduce(nprocs, device):
    """async_op=True: on the host the call runs on the progress thread; on the kernel path
    its launch is enqueued and the call returns. Its TimeoutError comes out of wait() in
    every survivor, and breaks the communicator there (the next call's CommunicatorError:
    BROKEN); nothing hangs."""
    script = "tests/faults/dies_mid_collective.py"
    rc, out = run(nprocs, [script, "2", device, "ring", "async"], timeout=120,
                  mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    for r in range(nprocs - 1):
        m = _report(out, r)
        assert m, f"rank {r} did not report:\n{out}"
        assert re.search(STUCK[device], m), m
        assert device == "host" or "waited on" in m, m  # (the host's: the call's own)
        assert f"rank {r}: BROKEN" in out
    assert "NO ERROR" not in out
    assert _left_behind(script) == []


@pytest.mark.parametrize("nprocs", [2, 3])
def test_a_rank_never_creates_the_communicator(nprocs):
    """A rank lost before its Communicator: the others' creation (whose MPI_Comm_idup never
    completes, waited for under the timeout rather than in a blocking call) raises
    ring.TimeoutError, and the job ends."""
    script = "tests/faults/skips_creation.py"
    rc, out = run(nprocs, [script, "2"], timeout=120, mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    for r in range(nprocs - 1):
        assert re.search(rf"rank {r}: SURVIVED TimeoutError: Communicator \(rank {r}, creation\)"
                         r": waiting for every rank of mpi_comm to create it: no progress "
                         r"within 2 s", out), out
    assert "NO ERROR" not in out
    assert _left_behind(script) == []


@pytest.mark.parametrize("before", [0, 2], ids=["first-call", "after-two-calls"])
@pytest.mark.parametrize("nprocs", [2, 3])
def test_a_rank_never_makes_the_call(nprocs, before):
    """Also when the others are on the fast path of a repeated call (ring/host/repeated.py)."""
    script = "tests/faults/skips_a_call.py"
    rc, out = run(nprocs, [script, "2", str(before)], timeout=120, mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    assert "did not take the fast path" not in out
    for r in range(nprocs - 1):
        m = _report(out, r)
        assert m, f"rank {r} did not report:\n{out}"
        # one node: the agreement goes through the exchange window, which names the peer
        assert f"waiting for rank {nprocs - 1} to join the call" in m
        assert f"rank(s) [{nprocs - 1}] have not reached this call" in out
        assert f"rank {r}: then broken" in out, out
    assert _left_behind(script) == []


def test_a_timeout_before_the_walk_names_no_step_of_an_earlier_call():
    """A call that times out in its agreement (the last rank never makes it) names no chunk
    and step: not the ones where an earlier call's walk last was (the Python walk notes
    them as it goes: float16 here)."""
    script = "tests/faults/skips_a_call.py"
    rc, out = run(2, [script, "2", "2", "ring-float16"], timeout=120,
                  mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    said = re.search(r"rank 0: SURVIVED TimeoutError: [^\n]*", out)
    assert said, out
    assert "allreduce (call 3, rank 0): waiting for rank 1 to join the call" in said.group(0), \
        said.group(0)
    assert "rank 0: then broken" in out, out
    assert _left_behind(script) == []


def test_a_rank_never_makes_the_call_across_nodes():
    """6 ranks on 2 emulated nodes, the last never making the call: the agreement is an MPI
    allgather there, and a timeout names the ranks of this node that have not reached the
    call (the node's shared headers): the lost rank's node-mates name it, and only it (not
    each other, who have); the other node's ranks cannot see it and name no one."""
    script = "tests/faults/skips_a_call.py"
    rc, out = run(6, [script, "2"], env={"RING_NODES": "2"}, timeout=180,
                  mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    for r in range(5):
        assert _report(out, r), f"rank {r} did not report:\n{out}"
        said = re.search(rf"rank {r}: SURVIVED TimeoutError: [^\n]*", out).group(0)
        assert said.endswith("; rank(s) [5] have not reached this call") == (r >= 3), said
        assert f"rank {r}: then broken" in out, out
    assert _left_behind(script) == []


def test_a_rank_never_makes_its_gradient_buckets():
    """GradientBuckets are made collectively (their layout compared across ranks): a rank
    that never makes them costs the others a ring.TimeoutError there, not at a step."""
    script = "tests/faults/skips_a_call.py"
    rc, out = run(3, [script, "2", "0", "buckets"], timeout=120,
                  mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    for r in range(2):
        assert re.search(rf"rank {r}: SURVIVED TimeoutError: GradientBuckets \(rank {r}\): "
                         r"waiting for every rank to make its GradientBuckets: no progress "
                         r"within 2 s", out), out
        assert f"rank {r}: then broken" in out, out
    assert _left_behind(script) == []


@pytest.mark.parametrize("nprocs", [2, 3])
def test_without_the_check_a_lone_bad_rank_times_out_the_others(nprocs):
    script = "tests/faults/bad_rank_without_check.py"
    rc, out = run(nprocs, [script, "2"], timeout=120, mpi_args=["-disable-auto-cleanup"])
    assert rc not in (0, None), out
    assert "rank 0: RAISED ValueError: x: the array must be contiguous" in out
    assert "rank 0: NO ERROR" not in out
    assert _left_behind(script) == []
