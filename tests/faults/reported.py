"""The end of a fault script: wait until every rank that reports has reported.

A survivor's exit aborts the whole MPI job (ring/fatal.py: MPI_Abort after a lost peer),
which would cut short a slower survivor's report. So each reporting rank marks a file in
the job's own folder (RING_TEST_REPORTED, made by tests/test_faults.py) and exits once
every reporter's mark is there, or after `limit` seconds. Without the folder (a script run
by hand): a fixed two seconds, time enough where every survivor has the same timeout."""

import os
import time


def wait_for_reports(rank: int, reporters: int, limit: float = 10.0) -> None:
    folder = os.environ.get("RING_TEST_REPORTED")
    if not folder:
        time.sleep(2)
        return
    open(os.path.join(folder, f"rank-{rank}"), "w").close()
    deadline = time.monotonic() + limit
    while len(os.listdir(folder)) < reporters and time.monotonic() < deadline:
        time.sleep(0.02)
