"""What a fault script's ranks report, and the end of the script.

A survivor's exit aborts the whole MPI job (ring/fatal.py: MPI_Abort after a lost peer),
which cuts short whatever another rank has not yet reported, and even lines a rank has
printed: mpiexec forwards a rank's output on its own time, and the abort can come first
(seen: a survivor's lines missing when the first survivor exited as soon as the other had
printed). So each report line is also kept in the job's own folder (RING_TEST_REPORTED,
made by tests/test_faults.py, which reads the lines from there), and each reporting rank
exits once every reporter has marked there that it is done, or after `limit` seconds.
Without the folder (a script run by hand): printed only, then a fixed two seconds, time
enough where every survivor has the same timeout."""

import os
import time

FOLDER = os.environ.get("RING_TEST_REPORTED")


def say(rank: int, what: str) -> None:
    """Print 'rank R: what' and keep it in the job's folder."""
    line = f"rank {rank}: {what}"
    print(line, flush=True)
    if FOLDER:
        with open(os.path.join(FOLDER, f"rank-{rank}.txt"), "a") as f:
            f.write(line + "\n")


def line_up() -> None:
    """Wait here for every rank of the job, so that a script's short timeout (2-3 s) times
    the communicator, not how far apart the ranks finished their imports (seen in CI: under
    three fault jobs on two cores, one rank's creation timed out, 2 s ahead of the others).
    Not for a script whose rank leaves before creating the communicator."""
    from mpi4py import MPI
    MPI.COMM_WORLD.Barrier()


def wait_for_reports(rank: int, reporters: int, limit: float = 10.0) -> None:
    """Mark this rank done, then wait until `reporters` ranks have (or `limit` seconds)."""
    if not FOLDER:
        time.sleep(2)
        return
    open(os.path.join(FOLDER, f"rank-{rank}.done"), "w").close()
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and \
            sum(n.endswith(".done") for n in os.listdir(FOLDER)) < reporters:
        time.sleep(0.02)
