"""The last rank never creates the communicator the others create: it is gone before (as a
process lost in its own set-up would be). The others' creation raises ring.TimeoutError,
naming it as the creation, and the job ends (ring/fatal.py) instead of waiting for ever.
    skips_creation.py [TIMEOUT]"""

import os
import sys

from mpi4py import MPI

import ring
from reported import say, wait_for_reports

W = MPI.COMM_WORLD
if W.rank == W.size - 1:
    say(W.rank, "skipping")
    os._exit(0)
try:
    ring.Communicator(device="host", timeout=float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
    say(W.rank, "NO ERROR")
except ring.TimeoutError as e:
    say(W.rank, f"SURVIVED TimeoutError: {e}")
wait_for_reports(W.rank, W.size - 1)  # the last rank reports nothing
