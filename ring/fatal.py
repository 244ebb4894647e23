"""After a lost peer, end the MPI job instead of hanging in MPI_Finalize.

Once a collective has timed out, a peer is dead or stuck and requests towards it can never
complete; MPICH's MPI_Finalize then waits for it forever. So the first ring.TimeoutError
arms an exit hook that aborts the job (MPI_Abort, exit status 1) when the process exits,
as torch.distributed's NCCL watchdog tears a process down after a timeout. Errors that
leave MPI clean (a MismatchError found by the agreement step) arm nothing.
"""

from __future__ import annotations

import atexit
import sys

_armed = False


def _abort() -> None:
    from mpi4py import MPI
    if MPI.Is_initialized() and not MPI.Is_finalized():
        sys.stdout.flush()
        sys.stderr.write("ring: a collective lost a peer earlier (ring.TimeoutError); aborting "
                         "the MPI job rather than waiting for it in MPI_Finalize\n")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)


def peer_lost() -> None:
    """Arm the abort-at-exit hook (once). It runs before mpi4py's MPI_Finalize."""
    global _armed
    if not _armed:
        _armed = True
        atexit.register(_abort)
