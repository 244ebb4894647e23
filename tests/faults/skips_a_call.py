"""The last rank never makes the call the others make. The others raise ring.TimeoutError
from the agreement step, naming the rank that has not arrived (on their node).
    skips_a_call.py [TIMEOUT] [CALLS] [WHAT]: CALLS made by every rank before (fast path:
    ring/host/repeated.py); WHAT the call skipped: "allreduce" (the default), "buckets"
    (making GradientBuckets, collective though it moves no data) or "ring-float16" (every
    call, those before too, a float16 ring all-reduce: the Python walk, whose waiter notes
    the chunk and step it is at)"""

import os
import sys

import numpy as np

import ring
from ring.buckets import GradientBuckets
from reported import line_up, say, wait_for_reports

WHAT = sys.argv[3] if len(sys.argv) > 3 else "allreduce"
X, KW = (np.ones(64, np.float16), {"algorithm": "ring"}) if WHAT == "ring-float16" else \
    (np.ones(8), {})
line_up()
comm = ring.Communicator(device="host", timeout=float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 0):  # calls made together first:
    comm.allreduce(X, **KW)                                     # the last one on the fast path
if comm._ctx.calls > 1 and not comm._fast and not KW:
    say(comm.rank, "the repeated calls did not take the fast path")
if comm.rank == comm.size - 1:
    say(comm.rank, "skipping")
    os._exit(0)
try:
    if WHAT == "buckets":
        GradientBuckets(comm, [np.ones(8, np.float32)])
    else:
        comm.allreduce(X, **KW)
except ring.TimeoutError as e:
    say(comm.rank, f"SURVIVED TimeoutError: {e}")
    try:  # a peer may be lost: the communicator is broken
        comm.allreduce(np.ones(8))
    except ring.CommunicatorError:
        say(comm.rank, "then broken")
comm.close()  # broken: drops local resources only
wait_for_reports(comm.rank, comm.size - 1)  # the last rank reports nothing
