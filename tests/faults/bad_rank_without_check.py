"""check=False skips the agreement step: the rank with a bad argument raises its ValueError
at once, and its peers, waiting for it in the data path, raise ring.TimeoutError at the
timeout instead of hanging."""

import sys

import numpy as np

import ring
from reported import line_up, say, wait_for_reports

line_up()
comm = ring.Communicator(device="host", check=False, timeout=float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
bad = comm.rank == 0
try:
    comm.allreduce(np.ones(8)[::2] if bad else np.ones(4))
    say(comm.rank, "NO ERROR")
except ValueError as e:
    say(comm.rank, f"RAISED ValueError: {e}")
except ring.TimeoutError as e:
    say(comm.rank, f"SURVIVED TimeoutError: {e}")
comm.close()
wait_for_reports(comm.rank, comm.size)
