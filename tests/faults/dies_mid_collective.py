"""The last rank dies (os._exit) after posting a few chunks of an all-reduce. Every
survivor must raise ring.TimeoutError naming the call, the step and the peer, and find the
communicator broken afterwards."""

import os
import sys
import time

import numpy as np

import ring

comm = ring.Communicator(device="host", timeout=float(sys.argv[1]) if len(sys.argv) > 1 else 3.0,
                         chunk_bytes=4096)
victim = comm.size - 1
if comm.rank == victim:
    send = comm._backend.send
    post, posted = send.post, [0]

    def dying_post(nbytes):
        post(nbytes)
        posted[0] += 1
        if posted[0] == 5:
            os._exit(3)  # no MPI_Finalize, no clean-up: as a crash
    send.post = dying_post

x = np.ones(1 << 18, np.float32)  # 1 MiB: 64 chunks per step
try:
    comm.allreduce(x)
    print(f"rank {comm.rank}: NO ERROR", flush=True)
except ring.TimeoutError as e:
    print(f"rank {comm.rank}: SURVIVED TimeoutError: {e}", flush=True)
try:
    comm.allreduce(x)
except ring.CommunicatorError:
    print(f"rank {comm.rank}: BROKEN", flush=True)
comm.close()  # broken: drops local resources only
time.sleep(2)  # let every survivor report before the first one's exit aborts the job
