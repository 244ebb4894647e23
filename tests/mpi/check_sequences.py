"""Sequences of calls, property-based: what one call at a time does not reach.

Each example is a short program of calls drawn from one to three signatures (collective,
dtype, op, count, root, algorithm, a chunk size per call or none, and out: allocated, in
place or given; on the host also in place or given as views of one buffer, the harness's and
an arena's places, which the fast path's key guesses in place), the later ones mostly the
first with one field drawn again, so that signatures repeat (the fast paths, kept plans and
launches, the exchange's call parity) and near-misses follow each other, on two
communicators over the same ranks, some calls async and waited for later, every call with
fresh data. Each result is compared bit for bit with tests/reference.py for the algorithm
that ran (from ring's log, per thread: an async host call runs on its communicator's
progress thread), so a call that reads a stale plan, buffer or slot of an earlier one shows.

RING_TEST_DEVICE: "host" (default) or "cuda" (Numba device arrays: the simulator's or a
GPU's); RING_TEST_PATH: the cuda device's path; RING_TEST_EXAMPLES: how many programs
(test_mpi.py runs a few dozen; a deep run takes thousands); RING_TEST_SEED: another set of
them. Every rank draws the same programs (inputs.drawn) and the verdict is agreed, so all
ranks fail and shrink together.
"""

import logging
import os
import threading

import numpy as np
from hypothesis import given, strategies as st
from mpi4py import MPI

import ring
from ringtypes import FLOATING, parse_dtype

from .. import reference
from ..inputs import DTYPE_NAMES, REDUCIBLE_NAMES, drawn, make
from .conftest import arguments as host_arguments, emulated_nodes, two_level_nodes

WORLD = MPI.COMM_WORLD
K = WORLD.size
DEVICE = os.environ.get("RING_TEST_DEVICE", "host")
PATH = os.environ.get("RING_TEST_PATH")
TWO_LEVEL = two_level_nodes(K)  # > 1: the ranks form equal nodes of two or more
if DEVICE == "cuda":
    from numba import cuda

    from ring.cuda.arrays import SIMULATED, storage_of
    from ring.cuda.enqueue import align as gpu_align
    MAX_PER = 40 if SIMULATED else 3000
else:
    MAX_PER = 300
    # cma as a large call runs, at these counts: its folds in pieces of 6 elements of 8
    # bytes (PIECE_BYTES), its all-reduce and reduce in two phases from 256 bytes at 2
    # ranks, 64 at 3 and 16 from 4 (HALVES_BYTES), so that programs mix one and two
    from ring.algorithms import cma
    cma.PIECE_BYTES, cma.HALVES_BYTES = 48, 16

REDUCING = ("allreduce", "reduce_scatter", "reduce")
DIVIDED = ("reduce_scatter", "scatter", "alltoall")  # x: K blocks
ROOTED = ("broadcast", "reduce", "gather", "scatter")
# the all-reduces that fold x0, x1, ...
IN_RANK_ORDER = ("oneshot", "twoshot", "naive", "ps", "cma")


def algorithms(collective: str) -> list:
    """What a call may ask for (None: the communicator's default)."""
    asks = [None, "auto", "ring"]
    one_node = emulated_nodes(K) == 1
    if collective == "allreduce":
        asks += ["naive", "ps", "tree"]
        # across nodes the host's oneshot goes by MPI; twoshot needs one node
        asks += ["oneshot", "twoshot"] if one_node else ["oneshot"] if DEVICE == "host" else []
        asks += ["cma"] if one_node and DEVICE == "host" else []
    elif DEVICE == "host" and one_node:
        asks += ["oneshot", "cma"]
    if TWO_LEVEL > 1 and collective in ("allreduce", "reduce_scatter", "allgather"):
        asks += ["hierarchical"]
    return asks


CHUNKS = [None, 64, 200, 4096]  # a call's chunk_bytes (None: the communicator's)
# out allocated, at the in-place position, or given; on the host also "views" (in place,
# x and out both views of one buffer, as the harness places them) and "arena" (given, x and
# out views of one buffer, apart): ring/host/repeated.py's key guesses both in place
PLACES = [False, True, "given"] + (["views", "arena"] if DEVICE == "host" else [])


def ops(dtype: str) -> list[str]:
    return ["sum", "prod", "min", "max"] + (["avg"] if parse_dtype(dtype) in FLOATING else [])


@st.composite
def signature(draw):
    coll = draw(st.sampled_from(["allreduce", "reduce_scatter", "allgather", "broadcast",
                                 "reduce", "gather", "scatter", "alltoall"]))
    dtype = draw(st.sampled_from(REDUCIBLE_NAMES if coll in REDUCING else DTYPE_NAMES))
    op = draw(st.sampled_from(ops(dtype))) if coll in REDUCING else "sum"
    return (coll, dtype, op, draw(st.integers(0, MAX_PER)), draw(st.integers(0, K - 1)),
            draw(st.sampled_from(algorithms(coll))), draw(st.sampled_from(CHUNKS)),
            draw(st.sampled_from(PLACES)))


@st.composite
def variant(draw, sig):
    """sig with one field drawn again: calls on the same data that a cache keyed too
    loosely would confuse (another op, root, algorithm, chunk or out)."""
    coll, dtype, op, per, root, algorithm, chunk, place = sig
    field = draw(st.sampled_from((["op"] if coll in REDUCING else []) +
                                 (["root"] if coll in ROOTED else []) +
                                 ["algorithm", "chunk", "place"]))
    if field == "op":
        op = draw(st.sampled_from(ops(dtype)))
    elif field == "root":
        root = draw(st.integers(0, K - 1))
    elif field == "algorithm":
        algorithm = draw(st.sampled_from(algorithms(coll)))
    elif field == "chunk":
        chunk = draw(st.sampled_from(CHUNKS))
    else:
        place = draw(st.sampled_from(PLACES))
    return coll, dtype, op, per, root, algorithm, chunk, place


@st.composite
def program(draw):
    """(signatures, steps); a step: (signature, async_op, data seed, communicator). The
    signatures: a first one, then up to two drawn afresh or as variants of it."""
    sigs = [draw(signature())]
    for _ in range(draw(st.integers(0, 2))):
        sigs.append(draw(variant(sigs[0]) if draw(st.integers(0, 3)) else signature()))
    steps = draw(st.lists(st.tuples(st.integers(0, len(sigs) - 1),
                                    st.sampled_from([False, False, True]),  # async_op
                                    st.integers(0, 10 ** 6),  # the data's seed
                                    st.sampled_from([0, 0, 1])),  # the communicator
                          min_size=1, max_size=8))
    return sigs, steps


class Records(logging.Handler):
    """ring's per-call records, by the thread that logged them."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.by_thread: dict[int, list] = {}

    def emit(self, record):
        call = getattr(record, "ring_call", None)
        if call is not None:
            self.by_thread.setdefault(record.thread, []).append(call)


RECORDS = Records()
logging.getLogger("ring").addHandler(RECORDS)
logging.getLogger("ring").setLevel(logging.INFO)


def _address(a) -> int:
    return a.__array_interface__["data"][0]


def arguments(coll, inputs, r, root, place):
    """conftest.arguments() on the communicator's device: in-place pairs stay one buffer."""
    x, out = host_arguments(coll, inputs, r, root, {"views": True, "arena": "given"}.get(
        place, place))
    if out is not None and place == "views":  # both views of one buffer, in place
        whole, part = (out, x) if x.nbytes < out.nbytes else (x, out)
        at = (_address(part) - _address(whole)) // whole.itemsize
        buf = whole.copy()
        view = buf[at:at + part.size]
        return (view, buf[:]) if part is x else (buf[:], view)
    if out is not None and place == "arena":  # x and out side by side in one buffer
        buf = np.empty(x.size + out.size, x.dtype)
        buf[:x.size] = x.reshape(-1)
        return buf[:x.size].reshape(x.shape), buf[x.size:].reshape(out.shape)
    if DEVICE == "host":
        return x, out
    if out is None or not np.shares_memory(x, out):
        return _device(x), _device(out)
    whole, part = (out, x) if x.nbytes < out.nbytes else (x, out)
    d = _device(whole)
    at = (_address(part) - _address(whole)) // whole.itemsize
    view = d[at:at + part.size]
    return (view, d) if part is x else (d, view)


def _device(a):
    return None if a is None else cuda.to_device(a.view(storage_of(a.dtype)))


def issue(c, coll, dtype, x, out, op, root, algorithm, chunk, async_op):
    kw = {"async_op": async_op}
    if algorithm is not None:
        kw["algorithm"] = algorithm
    if chunk is not None:
        kw["chunk_bytes"] = chunk
    if DEVICE == "cuda" and storage_of(parse_dtype(dtype)) != parse_dtype(dtype):
        kw["dtype"] = dtype  # bfloat16 and float8 travel as their bits
    if coll in ROOTED:
        kw["root"] = root
    if coll in REDUCING:
        kw["op"] = op
    if coll == "broadcast":
        return c.broadcast(x, **kw)
    return getattr(c, coll)(x, out=out, **kw)


def expected(coll, inputs, op, root, algorithm, r):
    """Rank r's exact result of the algorithm that ran."""
    if coll == "allreduce":
        if algorithm == "tree":
            return reference.tree(inputs, op)
        if algorithm in IN_RANK_ORDER:
            return reference.in_rank_order(inputs, op)
        if algorithm == "hierarchical":
            return reference.allreduce(inputs, op, TWO_LEVEL)
        # the GPU's flat ring cuts its blocks at 16 bytes
        step = gpu_align(inputs[0].itemsize) if DEVICE == "cuda" else 1
        return reference.allreduce(inputs, op, align=step)
    if coll == "reduce_scatter":
        return reference.reduce_scatter(inputs, op, TWO_LEVEL if algorithm == "hierarchical"
                                        else 1)[r]
    return reference.expected(coll, inputs, op, root=root)[r]


def verdict(sig, step, record, got, out, inputs) -> str:
    """'' if this rank's result of one call is right, else what is wrong."""
    coll, dtype, op, per, root, algorithm, chunk, place = sig
    where = f"step {step} {sig}"
    if record is None:
        return f"{where}: no record of the call in ring's log"
    ran = record["algorithm"]
    if algorithm not in (None, "auto") and ran != algorithm:
        return f"{where}: asked for {algorithm}, ran {ran}"
    want = expected(coll, inputs, op, root, ran, WORLD.rank)
    if want is None:
        return "" if got is None else f"{where}: a result off the root"
    if got is None or (out is not None and got is not out):
        return f"{where}: returned {type(got).__name__}, not the result in out"
    if DEVICE == "cuda":
        got = got.copy_to_host().view(want.dtype)
    if got.dtype != want.dtype or got.tobytes() != want.tobytes():
        return f"{where} ran {ran}: differs from the reference"
    return ""


def refused(e: Exception, step: int, sig) -> str:
    """'' where a call (or, having broken the communicator, a call before it) asked for an
    algorithm that cannot run here: the program ends there, on every rank; else the error."""
    return "" if "cannot run here" in str(e) else f"step {step} {sig}: {type(e).__name__}: {e}"


def run(sigs, steps) -> str:
    """Run one program on this rank; '' if every result is right."""
    RECORDS.by_thread.clear()  # (thread ids are reused by later communicators' threads)
    r, main = WORLD.rank, threading.get_ident()
    kw = {"path": PATH} if PATH and DEVICE == "cuda" else {}
    dup = WORLD.Dup()
    try:
        with ring.Communicator(WORLD, DEVICE, timeout=30, **kw) as c0, \
                ring.Communicator(dup, DEVICE, timeout=30, chunk_bytes=4096, nslots=2,
                                  **kw) as c1:
            comms, behind, pending = (c0, c1), [0, 0], []

            def settle():
                for step, sig, record, got, out, inputs in pending:
                    if hasattr(got, "wait"):
                        try:
                            got = got.wait()
                        except (ValueError, ring.RingError) as e:  # an async host call's
                            return refused(e, step, sig)
                    if isinstance(record, tuple):  # its j-th call on the progress thread
                        which, j = record
                        logged = RECORDS.by_thread.get(comms[which]._progress._thread.ident, [])
                        record = logged[j] if j < len(logged) else None
                    problem = verdict(sig, step, record, got, out, inputs)
                    if problem:
                        return problem
                pending.clear()
                return ""

            for step, (s, async_op, seed, which) in enumerate(steps):
                coll, dtype, op, per, root, algorithm, chunk, place = sigs[s]
                c = comms[which]
                inputs = [make(q, per * K if coll in DIVIDED else per, dtype, seed=seed, op=op)
                          for q in range(K)]
                x, out = arguments(coll, inputs, r, root, place)
                try:
                    got = issue(c, coll, dtype, x, out, op, root, algorithm, chunk, async_op)
                except (ValueError, ring.RingError) as e:
                    return refused(e, step, sigs[s])
                if async_op and c._progress is not None:
                    record = (which, behind[which])
                    behind[which] += 1
                else:
                    record = RECORDS.by_thread[main][-1]
                if coll == "broadcast":
                    out = x
                pending.append((step, sigs[s], record, got, out, inputs))
                if not async_op or seed % 3 == 0:  # else: waited for after later calls
                    problem = settle()
                    if problem:
                        return problem
            return settle()
    finally:
        dup.Free()


@drawn(40)
@given(program())
def test_call_sequences_match_the_reference(prog):
    problems = WORLD.allgather(run(*prog))
    assert not any(problems), f"{prog}: {problems}"
