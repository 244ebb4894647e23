"""The last rank never makes the call the others make. The others raise ring.TimeoutError
from the agreement step, naming the rank that has not arrived (on their node).
    skips_a_call.py [TIMEOUT] [CALLS]: CALLS made by every rank before (fast path: ring/host/repeated.py)"""

import os
import sys

import numpy as np

import ring
from reported import say, wait_for_reports

comm = ring.Communicator(device="host", timeout=float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 0):  # calls made together first:
    comm.allreduce(np.ones(8))                                  # the last one on the fast path
if comm._ctx.calls > 1 and not comm._fast:
    say(comm.rank, "the repeated calls did not take the fast path")
if comm.rank == comm.size - 1:
    say(comm.rank, "skipping")
    os._exit(0)
try:
    comm.allreduce(np.ones(8))
except ring.TimeoutError as e:
    say(comm.rank, f"SURVIVED TimeoutError: {e}")
comm.close()  # broken: drops local resources only
wait_for_reports(comm.rank, comm.size - 1)  # the last rank reports nothing
