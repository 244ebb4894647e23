"""Property-based fuzzing of the host collectives against the exact reference, on real
ranks: the flat ring, named (one machine; or, under RING_NODES, emulated nodes that its
links cross through MPI, where "auto" would take the two-level ring).

Every rank draws the same examples (inputs.drawn: RING_TEST_EXAMPLES, RING_TEST_SEED),
builds a ring on the first k ranks of the job, runs the call and checks it; the verdict is
agreed over the whole job, so that all ranks fail (and shrink) together.
"""

import numpy as np
from hypothesis import given, strategies as st
from mpi4py import MPI

import ring
from ringtypes import FLOATING, parse_dtype
from ring.schedule import Collective

from .. import reference
from ..inputs import DTYPE_NAMES, REDUCIBLE_NAMES, drawn, make
from .conftest import last_call

WORLD = MPI.COMM_WORLD


@st.composite
def cases(draw):
    coll = draw(st.sampled_from([c for c in Collective if c is not Collective.BARRIER]))
    dtype = draw(st.sampled_from(REDUCIBLE_NAMES if coll.reduces else DTYPE_NAMES))
    ops = ["sum", "prod", "min", "max"] + (["avg"] if parse_dtype(dtype) in FLOATING else [])
    op = draw(st.sampled_from(ops))
    k = draw(st.integers(1, WORLD.size))
    per = draw(st.integers(0, 70))
    chunk = draw(st.sampled_from([64, 128, 320, 4096]))
    nslots = draw(st.integers(2, 4))
    in_place = draw(st.booleans())
    root = draw(st.integers(0, k - 1))
    return coll, dtype, op, k, per, chunk, nslots, in_place, root


def run_one(coll, dtype, op, k, per, chunk, nslots, in_place, root) -> str:
    """'' if this rank's result is right (or it is not in the ring), else what went wrong."""
    group = WORLD.group.Incl(list(range(k)))
    sub = WORLD.Create_group(group)
    group.Free()
    if sub == MPI.COMM_NULL:
        return ""
    try:
        r = sub.rank
        n = per * k if coll.divides else per
        inputs = [make(q, n, dtype, seed=7, op=op) for q in range(k)]
        with ring.Communicator(sub, "host", timeout=60, chunk_bytes=chunk, nslots=nslots,
                               algorithm="ring") as c:
            x = inputs[r].copy()
            if coll is Collective.BROADCAST:
                got = c.broadcast(x, root=root)
            elif coll is Collective.REDUCE:
                got = c.reduce(x, out=x if in_place and r == root else None, op=op, root=root)
                if r != root:
                    return "" if got is None else "reduce returned a result off the root"
            elif coll is Collective.ALLREDUCE:
                got = c.allreduce(x, out=x if in_place else None, op=op)
            elif coll is Collective.REDUCE_SCATTER:
                got = c.reduce_scatter(x, out=x[r * per:(r + 1) * per] if in_place else None, op=op)
            elif coll is Collective.GATHER:
                got = c.gather(x, root=root)
                if r != root:
                    return "" if got is None else "gather returned a result off the root"
            elif coll is Collective.SCATTER:
                got = c.scatter(x if r == root or not in_place else None,
                                out=np.empty(per, x.dtype) if in_place else None, root=root)
            elif coll is Collective.ALLTOALL:
                got = c.alltoall(x, out=x if in_place else None)
            else:
                buf = np.empty(k * n, x.dtype)
                buf[r * n:(r + 1) * n] = x
                got = c.allgather(buf[r * n:(r + 1) * n] if in_place else x,
                                  out=buf if in_place else None)
        if last_call()["algorithm"] != "ring":
            return f"ran {last_call()}, not the flat ring"
        want = reference.expected(str(coll), inputs, op, root=root)[r]
        if got.tobytes() != want.tobytes():
            return "differs from the exact reference"
        return ""
    finally:
        sub.Free()


@drawn(60)
@given(cases())
def test_host_collectives_match_the_exact_reference(case):
    problem = run_one(*case)
    problems = WORLD.allgather(problem)
    assert not any(problems), f"{case}: {problems}"
