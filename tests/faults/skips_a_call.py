"""The last rank never makes the call the others make. The others raise ring.TimeoutError
from the agreement step, naming the rank that has not arrived (on their node)."""

import os
import sys
import time

import numpy as np

import ring

comm = ring.Communicator(device="host", timeout=float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
if comm.rank == comm.size - 1:
    print(f"rank {comm.rank}: skipping", flush=True)
    os._exit(0)
try:
    comm.allreduce(np.ones(8))
except ring.TimeoutError as e:
    print(f"rank {comm.rank}: SURVIVED TimeoutError: {e}", flush=True)
comm.close()  # broken: drops local resources only
time.sleep(2)  # let every survivor report before the first one's exit aborts the job
