"""The options that tune a ring's data path, their measured defaults and their checks: one
place that the Communicator, ring.Group and the agreement step all read."""

from __future__ import annotations

import numbers
import os
import warnings

import numpy as np

# Bytes per chunk, the unit that travels through one slot, by device kind.
#   host: measured on the CI machine (results/host-tuning.md: 2 ranks, 16 and 64 MB float32,
#     several runs): 128-256 KiB lose to per-chunk Python overhead (~20 us a chunk); 512 KiB
#     to 4 MiB are within run-to-run noise, and 1 MiB was never worse than 15% off the best.
#   cuda: measured on an H100 (results/h100/README.md): ring.Group K = 4, 256 MiB, graph
#     replay, 4 MiB chunks 1.75 ms against 2.35 (1 MiB) and 1.99 (16 MiB); and a plain call
#     is host-bound at ~340 us of Python per enqueued operation, so there fewer, larger
#     chunks win at every size.
DEFAULT_CHUNK_BYTES = {"host": 1 << 20, "cuda": 4 << 20}
# The chunk of a host call whose ring walk is compiled (host/compiled_walk.py: every rank on one
# node, a dtype and op it computes) when the communicator was not given chunk_bytes:
# without Python between chunks, chunks that stay in cache pipeline best. Measured on the
# CI machine (2-4 ranks, 1-16 MB float32, interleaved, best of 7): 256 KiB beat 1 MiB by
# 15-35% from 2 MB up and 64 KiB by 0-15% (results/host-compiled-walk.md).
COMPILED_CHUNK_BYTES = 256 << 10
# The smallest chunk an MPI link sends from / receives into the caller's arrays (smaller
# ones are copied through its staging slots, transport/mpi.py): deciding which chunks may
# go direct costs a few microseconds a call, more than copying small chunks. Measured on
# the CI machine (2 ranks on 2 emulated nodes, interleaved, best of 5): direct 7 us slower
# at 8 B, even at 64 KB (32 KiB chunks), 7% faster at 256 KB, 20% at 1 MB.
DIRECT_MIN_BYTES = 64 << 10
# The bytes of an all-reduce that ride in the agreement's allgather across nodes (oneshot
# without an exchange window: oneshot.allgathered): every agreement there carries this area,
# used or not, so that its message has one size whatever the ranks passed. Measured on the
# CI machine (2 ranks on 2 emulated nodes, mpich, best of 5): an Iallgather of 88 B took
# 2.56 us, of 344 B 2.67, of 1 KiB 2.65.
RIDE_BYTES = 256
# Slots per link. Two are the minimum that cannot deadlock (schedule.py); more let a fast
# rank run ahead of a slow neighbour. 2, 4 and 8 were within 4% of each other on both the
# host (64 MB, 2 ranks) and the H100 (K = 4, 256 MiB).
DEFAULT_SLOTS = 4


# The values of algorithm= (ring/algorithms/, one module each; "auto": the tuning table's
# choice, ring/tuning.py). The position of a name is its code in the agreement's record:
# the wire format, so append only.
ALGORITHMS = ("auto", "ring", "hierarchical", "naive", "ps", "oneshot", "twoshot", "tree",
              "cma")
# Bytes per rank the exchange window carries per call: the largest oneshot / twoshot
# message (each rank holds 4 x this in shared memory: two calls in flight, data and result).
EXCHANGE_BYTES = 1 << 20
# How a GPU rank moves a chunk to its successor (ring/cuda/enqueue.py): "stream", the reduce
# kernel writes straight into the successor's slot; "copy", into a local slot that the copy
# engine then copies across; "kernel", one persistent kernel per call runs the whole plan
# (ring/cuda/persistent.py; ring.Group, and the Communicator on one node: elsewhere it falls
# back to the stream path with a warning). The host device has only the stream path.
# "auto": the persistent kernel where it was measured to win (every neighbour on the
# rank's GPU; ring.Group: its plain calls, while captures take "stream"), else "stream"
PATHS = ("stream", "copy", "kernel", "auto")


# Wire compression of a float32 sum / avg (ring/host/reduce.apply_wire): the name -> the
# 16-bit type the slots carry. The position + 1 is the agreement's code (0: none): append.
COMPRESSIONS = {"fp16": "float16", "bf16": "bfloat16"}


def check_compression(compression) -> None:
    if compression is not None and compression not in COMPRESSIONS:
        raise ValueError(f"compression: None, 'fp16' or 'bf16', got {compression!r}")


def whole_number(v) -> bool:
    """A whole number (4, 4.0, NumPy's), not a string, None, a bool, NaN or infinity."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and float(v).is_integer()


def is_flag(v) -> bool:
    """Whether v is True or False (Python's or NumPy's), not a value with a truth."""
    return isinstance(v, (bool, np.bool_))


def check_flags(**flags) -> None:
    """TypeError naming the first option that is not True or False ("no", "false" or 0
    would be taken by truth value: "no" as True)."""
    for name, flag in flags.items():
        if not is_flag(flag):
            raise TypeError(f"{name}: expected True or False, got {flag!r}")


def env_whole(name: str, default: int | None) -> int | None:
    """An environment variable read as a whole number (default where unset), or a ValueError
    naming it (int()'s own would name nothing)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}: a whole number, got {raw!r}") from None


def check_slots(chunk_bytes, nslots) -> None:
    """The slot geometry every ring takes: ValueError naming the option if it is off."""
    if not whole_number(nslots) or nslots < 2:
        raise ValueError(f"nslots: need at least 2 slots per link, got {nslots!r}")
    if not whole_number(chunk_bytes) or chunk_bytes < 64 or chunk_bytes % 64:
        raise ValueError(f"chunk_bytes: must be a positive multiple of 64, got {chunk_bytes!r}")


def check_timeout(timeout) -> float:
    """The seconds a wait may take without progress, or ValueError naming the option."""
    if not isinstance(timeout, numbers.Real) or isinstance(timeout, bool) or not timeout > 0:
        raise ValueError(f"timeout: must be positive seconds, got {timeout!r}")
    return float(timeout)


def check_path(path) -> str:
    """The path's name (ValueError if there is none such). "fused", the stream path's name
    until 2026-11, is still taken, with a DeprecationWarning."""
    if path == "fused":
        warnings.warn("path='fused' is now called 'stream'", DeprecationWarning, stacklevel=3)
        return "stream"
    if path not in PATHS:
        raise ValueError(f"path: expected one of {PATHS}, got {path!r}")
    return path


def check_algorithm(algorithm) -> None:
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm: expected one of {ALGORITHMS}, got {algorithm!r}")
