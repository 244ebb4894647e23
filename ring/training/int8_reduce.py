"""One bucket's int8 all-reduce (GradientBuckets(compression="int8")): a float32 bucket
rounded to int8 with a float32 scale per block of QUANT_BLOCK values (ring/quantize.py on
the host, kernels/quantize.py on a GPU, the same bits), exchanged one of two ways:

  "allgather"  every rank's whole message all-gathered; every rank widens the K messages
               and sums them in rank order in float32. One rounding per value; each rank
               receives (K - 1) x the bucket's int8 bytes.
  "alltoall"   the bucket cut into K shards of whole blocks; shard j of every rank goes to
               rank j (an all-to-all), which widens and sums the K parts in rank order,
               rounds the sum to int8 once more and all-gathers it; every rank widens the K
               shards. DeepSpeed's compressed all-reduce (1-bit Adam): about 2 (K - 1) / K
               x the int8 bytes as a ring all-reduce's sends (K (K - 1) / 2 shards on each
               link for ring's all-to-all, which forwards, then K - 1), at the price of the
               second rounding.
  None         "alltoall" where it sends fewer bytes (K >= 3 and shards of several blocks),
               "allgather" otherwise (K = 2: the same bytes, one rounding, one call).

Either way every rank ends with the same bits. Error feedback (error_feedback=True): what
a rank's rounding lost is added to its next step's bucket before it is rounded; with
"alltoall" the shard's owner also keeps what the second rounding lost and adds it to the
next step's sum of its shard (DeepSpeed's server error), so neither rounding's error piles
up over steps.

start() rounds and starts the first collective (async_op); middle() ("alltoall": waits for
the all-to-all, sums, rounds and starts the all-gather); finish() waits and widens into the
bucket. Every rank calls them in the same order, so the collectives match.
"""

from __future__ import annotations

import numpy as np

from ringtypes import QUANT_BLOCK, packed_bytes, quant_blocks

from .buffers import copy, empty, zero

EXCHANGES = ("allgather", "alltoall")


def _quantize(packed, flat, residual) -> None:
    """packed = flat (+ residual) rounded; residual = what was lost."""
    if isinstance(flat, np.ndarray):
        from .quantize import quantize
        quantize(flat, packed, residual)
    else:
        from kernels.quantize import quantize
        quantize(packed, flat, residual)


def _dequantize_sum(out, gathered, avg: bool) -> None:
    """out = the messages in gathered (back to back) widened and summed in order."""
    if out.size == 0:
        return
    if isinstance(out, np.ndarray):
        from .quantize import dequantize_sum
        dequantize_sum(gathered.reshape(-1, packed_bytes(out.size)), out.size, out, avg)
    else:
        from kernels.quantize import dequantize_sum
        dequantize_sum(out, gathered, avg=avg)


def shard_values(n: int, k: int) -> int:
    """Values per shard of the "alltoall" exchange: n / k rounded up to whole blocks."""
    return quant_blocks(-(-n // k)) * QUANT_BLOCK


def choose(exchange: str | None, n: int, k: int) -> str:
    """The exchange for a bucket of n values on k ranks (None: by the bytes each sends)."""
    if exchange is not None:
        return exchange
    if k < 3:
        return "allgather"
    shard = packed_bytes(shard_values(n, k))
    return "alltoall" if (k + 2) * shard < 2 * packed_bytes(n) else "allgather"


class Int8Reduce:
    def __init__(self, comm, flat, exchange: str | None, feedback: bool):
        self.comm, self.flat = comm, flat
        k, n = comm.size, flat.size
        self.exchange = choose(exchange, n, k)
        # error feedback: what this rank's rounding of its bucket lost
        self.residual = None
        if feedback:
            self.residual = empty(flat, n)
            zero(self.residual)
        self._work = None
        if self.exchange == "allgather":
            self.packed = empty(flat, packed_bytes(n), np.uint8)
            self.gathered = empty(flat, k * packed_bytes(n), np.uint8)
            return
        s = shard_values(n, k)
        self.shards = [(min(j * s, n), min((j + 1) * s, n)) for j in range(k)]
        self.msg = packed_bytes(s)  # each shard's slot in the exchanged buffers
        self.send = empty(flat, k * self.msg, np.uint8)
        self.recv = empty(flat, k * self.msg, np.uint8)
        zero(self.send)  # the slots' tails past a short shard's message: the same bytes
        zero(self.recv)  # on every rank, every step
        lo, hi = self.shards[comm.rank]
        mine = packed_bytes(hi - lo)
        # a shard shorter than the slots: its K messages gathered back to back
        self.compact = empty(flat, k * mine, np.uint8) if 0 < mine < self.msg else None
        self.server = None  # error feedback: what rounding this rank's shard sum lost
        if feedback:
            self.server = empty(flat, hi - lo)
            zero(self.server)

    def start(self):
        """Round the bucket and start the first collective (async_op)."""
        if self.exchange == "allgather":
            _quantize(self.packed, self.flat, self.residual)
            self._work = self.comm.allgather(self.packed, out=self.gathered, async_op=True)
            return self._work
        for j, (lo, hi) in enumerate(self.shards):
            if hi > lo:
                at = j * self.msg
                _quantize(self.send[at:at + packed_bytes(hi - lo)], self.flat[lo:hi],
                          None if self.residual is None else self.residual[lo:hi])
        self._work = self.comm.alltoall(self.send, out=self.recv, async_op=True)
        return self._work

    def middle(self, avg: bool) -> None:
        """"alltoall": wait for it, sum this rank's shard, round the sum and start the
        all-gather of the shards."""
        if self.exchange == "allgather":
            return
        self._work.wait()
        lo, hi = self.shards[self.comm.rank]
        mine = packed_bytes(hi - lo)
        if hi > lo:
            parts = self.recv
            if self.compact is not None:
                for q in range(self.comm.size):
                    copy(self.compact[q * mine:(q + 1) * mine],
                          self.recv[q * self.msg:q * self.msg + mine])
                parts = self.compact
            _dequantize_sum(self.flat[lo:hi], parts, avg)
            _quantize(self.send[:mine], self.flat[lo:hi], self.server)
        self._work = self.comm.allgather(self.send[:self.msg], out=self.recv, async_op=True)

    def finish(self, avg: bool) -> None:
        """Wait, and widen the result into the bucket."""
        self._work.wait()
        self._work = None
        if self.exchange == "allgather":
            _dequantize_sum(self.flat, self.gathered, avg)
            return
        for j, (lo, hi) in enumerate(self.shards):
            if hi > lo:
                at = j * self.msg
                _dequantize_sum(self.flat[lo:hi], self.recv[at:at + packed_bytes(hi - lo)],
                                False)
