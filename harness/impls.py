"""Implementations behind one call interface, so one timing routine serves them all.

An implementation is made once per sweep and called as impl(coll, x, out, op); sync() waits
until every call made so far has finished (a no-op on the host). available(dtype, op)
returns None or the reason it cannot run that case, which the table prints.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

import ring
from ring.ops import bfloat16

_MPI_OPS = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX, "avg": MPI.SUM}


class Ring:
    name = "ring"

    def __init__(self, world: MPI.Comm, device: str, **tuning):
        self.comm = ring.Communicator(world, device=device, **tuning)
        self.label = f"ring ({self.comm.device})"

    def available(self, dtype, op) -> str | None:
        return None

    def __call__(self, coll: str, x, out, op: str):
        if coll == "allreduce":
            self.comm.allreduce(x, out=out, op=op)
        elif coll == "reduce_scatter":
            self.comm.reduce_scatter(x, out=out, op=op)
        else:
            self.comm.allgather(x, out=out)

    def sync(self):
        pass

    def close(self):
        self.comm.close()


class Mpi:
    """mpi4py on host buffers: Allreduce / Reduce_scatter_block / Allgather."""

    name = "mpi"

    def __init__(self, world: MPI.Comm, device: str, **tuning):
        self.comm = world.Dup()
        self.label = f"mpi ({MPI.Get_library_version().split(',')[0].split(chr(10))[0].strip()})"

    def available(self, dtype, op) -> str | None:
        if np.dtype(dtype) == bfloat16:
            return "the MPI library has no bfloat16 datatype"
        return None

    def __call__(self, coll: str, x, out, op: str):
        in_place = x.__array_interface__["data"][0] == out.__array_interface__["data"][0] \
            if coll == "allreduce" else _overlaps(x, out)
        send = MPI.IN_PLACE if in_place else x
        if coll == "allreduce":
            self.comm.Allreduce(send, out, _MPI_OPS[op])
            if op == "avg":
                np.divide(out, self.comm.size, out=out)
        elif coll == "reduce_scatter":
            if in_place:  # MPI's in-place reduce-scatter works on the whole input buffer
                self.comm.Reduce_scatter_block(MPI.IN_PLACE, x, _MPI_OPS[op])
                if self.comm.rank:
                    out[...] = x[:out.size]
            else:
                self.comm.Reduce_scatter_block(x, out, _MPI_OPS[op])
            if op == "avg":
                np.divide(out, self.comm.size, out=out)
        else:
            self.comm.Allgather(send, out)

    def sync(self):
        pass

    def close(self):
        self.comm.Free()


def _overlaps(a: np.ndarray, b: np.ndarray) -> bool:
    return np.may_share_memory(a, b)


IMPLS = {"ring": Ring, "mpi": Mpi}
