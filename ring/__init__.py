"""ring: collective communication between GPUs at the kernel level.

    import ring
    with ring.Communicator() as comm:          # MPI.COMM_WORLD, device="auto"
        y = comm.allreduce(x, op="sum")

The communicator (and with it MPI) loads on first use, so that `ringtypes` and the kernels
import without an MPI library.
"""

from .errors import CommunicatorError, MismatchError, RingError, TimeoutError
from ringtypes import AVG, MAX, MIN, PROD, SUM, Op

__all__ = [
    "Communicator", "Work", "Group", "Op", "SUM", "PROD", "MIN", "MAX", "AVG",
    "RingError", "MismatchError", "TimeoutError", "CommunicatorError",
]
__version__ = "0.1.0"


def __getattr__(name):
    if name in ("Communicator", "Work"):
        from . import communicator
        return getattr(communicator, name)
    if name == "Group":
        from .cuda.group import Group
        return Group
    raise AttributeError(f"module 'ring' has no attribute {name!r}")
