"""ring: collective communication between GPUs at the kernel level.

    import ring
    with ring.Communicator() as comm:          # MPI.COMM_WORLD, device="auto"
        y = comm.allreduce(x, op="sum")
"""

from .communicator import Communicator, Work
from .errors import CommunicatorError, MismatchError, RingError, TimeoutError
from .ops import AVG, MAX, MIN, PROD, SUM, Op

__all__ = [
    "Communicator", "Work", "Op", "SUM", "PROD", "MIN", "MAX", "AVG",
    "RingError", "MismatchError", "TimeoutError", "CommunicatorError",
]
__version__ = "0.1.0"
