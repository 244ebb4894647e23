"""The options that tune a ring's data path, their measured defaults and their checks: one
place that the Communicator, ring.Group and the agreement step all read."""

from __future__ import annotations

# Bytes per chunk, the unit that travels through one slot. Measured on the host device
# (results/host-tuning.md: 2 ranks, 16 and 64 MB float32, several runs): 128-256 KiB lose
# to per-chunk Python overhead (~20 us a chunk on the CI machine); 512 KiB to 4 MiB are
# within run-to-run noise of each other, and 1 MiB was never worse than 15% off the best.
DEFAULT_CHUNK_BYTES = 1 << 20
# Slots per link. Two are the minimum that cannot deadlock (schedule.py); more let a fast
# rank run ahead of a slow neighbour.
DEFAULT_SLOTS = 4


# How a call runs (the order is part of the agreement's wire format: append only).
# "auto" picks from the tuning table (tuning.py); the all-reduce algorithms are:
#   ring          the pipelined ring (schedule.py)       hierarchical  rings in and across nodes
#   naive, ps     whole-buffer MPI messages (p2p.py)     oneshot, twoshot  node-shared memory
#   tree          a double binary tree of MPI messages (p2p.py)
ALGORITHMS = ("auto", "ring", "hierarchical", "naive", "ps", "oneshot", "twoshot", "tree")
ALLREDUCE_ONLY = ("naive", "ps", "oneshot", "twoshot", "tree")
SHARED = ("oneshot", "twoshot")  # through the exchange window (transport/exchange.py)
# Bytes per rank the exchange window carries per call: the largest oneshot / twoshot
# message (each rank holds 4 x this in shared memory: two calls in flight, data and result).
EXCHANGE_BYTES = 1 << 20
# How a GPU rank moves a chunk to its successor (ring/cuda/enqueue.py): "fused", the reduce
# kernel writes straight into the successor's slot; "copy", into a local slot that the copy
# engine then copies across. The host device has only the fused path.
PATHS = ("fused", "copy")


def check_slots(chunk_bytes, nslots) -> None:
    """The slot geometry every ring takes: ValueError naming the option if it is off."""
    if int(nslots) != nslots or nslots < 2:
        raise ValueError(f"nslots: need at least 2 slots per link, got {nslots!r}")
    if int(chunk_bytes) != chunk_bytes or chunk_bytes < 64 or chunk_bytes % 64:
        raise ValueError(f"chunk_bytes: must be a positive multiple of 64, got {chunk_bytes!r}")


def check_path(path) -> None:
    if path not in PATHS:
        raise ValueError(f"path: expected one of {PATHS}, got {path!r}")


def check_algorithm(algorithm) -> None:
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm: expected one of {ALGORITHMS}, got {algorithm!r}")
