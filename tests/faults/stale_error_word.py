"""Rank 0's error word is set after an async call, as if that call's kernel had timed out,
and its Work is left out (not waited for). Rank 0's next call, whose kernel stops on the
word at the first wait it has to make, must raise the word's TimeoutError (the word is
read: a Work is out), never return what it may not have computed; the other ranks' kernels
wait for rank 0 and time out (or finish, where rank 0 never had to wait).

    stale_error_word.py TIMEOUT [blocking]

With 'blocking' (Communicator(blocking=True)) the next call raises it; else (calls
stream-ordered) the next call returns once enqueued and comm.synchronize() raises it.
"""

import sys

import numpy as np
from numba import cuda

import ring
from reported import line_up, say, wait_for_reports
from ring.cuda.persistent import ERR_CODE, ERR_NEED, WAIT_DATA

blocking = len(sys.argv) > 2 and sys.argv[2] == "blocking"
line_up()
comm = ring.Communicator(device="cuda", timeout=float(sys.argv[1]), path="kernel",
                         chunk_bytes=1024, blocking=blocking)
x = cuda.to_device(np.ones(301, np.float32))
out = cuda.device_array_like(x)
comm.allreduce(x, out=out)
work = comm.allreduce(x, out=out, async_op=True)
if comm.rank == 0:
    kernel = comm._ctx.backend.kernel
    cuda.synchronize()  # that call's kernel has ended; its Work is out
    word = np.zeros(kernel.err.size, np.int64)
    word[[ERR_CODE, ERR_NEED]] = WAIT_DATA, 1
    kernel.err.copy_to_device(word)
try:
    comm.allreduce(x, out=out)
    if not blocking:
        comm.synchronize()
    say(comm.rank, "NO ERROR")
except ring.TimeoutError as e:
    say(comm.rank, f"SURVIVED TimeoutError: {e}")
comm.close()  # broken: drops local resources only
wait_for_reports(comm.rank, comm.size)
