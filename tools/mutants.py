"""Plant known faults one at a time and show that the test suite catches each.

    .venv/bin/python tools/mutants.py [--only NAME ...] [--json results/mutants.json]
    .venv/bin/python tools/mutants.py --only two-level-avg-divisor --tests "tests/test_mpi.py -k cuda"
    .venv/bin/python tools/mutants.py --own-tests --only kernel-ll-threshold torch-avg-as-sum

Each mutant is a one-place edit of the library, applied to a copy of the working tree (the
checkout itself is never touched); the copy then runs the same pytest command as `make
test` with -x, under the simulator when there is no GPU. A mutant is caught when the run
fails. A run of the unmodified copy comes first: if it fails, nothing else means anything.
The faults are the ones that once passed the whole suite (the tests issue): two-level
disabled, a wrong avg divisor, a precision loss, an off-by-one block boundary, a chunk
that is never written out; plus one in the GPU's per-chunk code. SINCE: faults planted
since, across the library (which, and by which test each is caught:
results/mutants-since.md), each with the tests that cover it (OWN_TESTS, run alone with
--own-tests).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name: (file, the text replaced (exactly once), its replacement, what the fault is)
MUTANTS = {
    "two-level-disabled": (
        "ring/algorithms/hierarchical.py",
        '    nodes = topo.nnodes\n    if nodes < 2:',
        '    return "disabled (planted fault)"\n    nodes = topo.nnodes\n    if nodes < 2:',
        "hierarchical.applies() always refuses: 'auto' silently takes the flat ring"),
    "two-level-avg-divisor": (
        "ring/algorithms/hierarchical.py",
        "op, mine, mine, divisor=self.size, logical=logical,",
        "op, mine, mine, divisor=self.nodes, logical=logical,",
        "the two-level all-reduce divides avg by the node count instead of the rank count"),
    "two-level-precision-loss": (
        "ring/algorithms/hierarchical.py",
        "        self.inner.run(plan_blocks(Collective.ALLGATHER, L, j, blocks, itemsize, chunk_bytes),",
        "        if hasattr(mine, 'astype') and mine.dtype.kind == 'f' and mine.dtype.itemsize > 2:\n"
        "            mine[...] = mine.astype('float16')\n"
        "        self.inner.run(plan_blocks(Collective.ALLGATHER, L, j, blocks, itemsize, chunk_bytes),",
        "the two-level all-reduce rounds float32/float64 partial results through float16"),
    "block-boundary-off-by-one": (
        "ring/schedule.py",
        "    return [(units * i // parts) * align for i in range(parts)] + [count]",
        "    return [0] + [min(count, (units * i // parts) * align + 1) for i in range(1, parts)] + [count]",
        "every inner block boundary moves one element up: blocks still tile the array, only "
        "the order of reduction of the moved elements changes"),
    "host-chunk-not-written": (
        "ring/host/executor.py",
        "            apply(step, op, divisor, src, dst, rbuf, sbuf)\n",
        "            if not (j == 1 and step.out and not step.send):\n"
        "                apply(step, op, divisor, src, dst, rbuf, sbuf)\n",
        "the host executor skips the second chunk of every step that only writes the output"),
    "cuda-chunk-not-forwarded": (
        "ring/cuda/enqueue.py",
        "        else:\n            if step.out and n:\n                copy(dst, rbuf, s)",
        "        else:\n            if step.out and n and lo:\n                copy(dst, rbuf, s)",
        "the GPU's stream path never writes out the first chunk of the array that it receives "
        "and forwards (all-gather and broadcast steps)"),
}

# Faults in the parts built since (the persistent kernel, the one-round algorithms, int8,
# torch, the waits across nodes), each with the tests that cover its code (OWN_TESTS,
# --own-tests): results/mutants-since.md. A planted fault a campaign found no test for
# (empty-no-post, host-walk-ignores-divisor, still-any-registration, find-misaligned-offset,
# sim-buffers-get-no-view (planted four times: look here first), int8-alltoall-avg-twice,
# cuda-deregister-keeps-launches: equivalent, see there) is not listed.
P, KP = "ring/cuda/persistent.py", "ring/cuda/kernel_path.py"
SINCE = {
    "kernel-credit-early": (
        P, "if good == 1 and f & SEND and uout >= nslots:\n"
           "                    good = waited(mine, a_out, uout + 1 - nslots,",
        "if good == 1 and f & SEND and uout >= nslots:\n"
        "                    good = waited(mine, a_out, uout - nslots,",
        "the ring kernel writes a chunk into the successor's slot one credit early"),
    "kernel-ll-credit-early": (
        P, "if good == 1 and f & SEND and uout >= nslots:\n"
           "                        good = waited(mine, a_out, uout + 1 - nslots,",
        "if good == 1 and f & SEND and uout >= nslots:\n"
        "                        good = waited(mine, a_out, uout - nslots,",
        "the LL protocol writes a chunk's words one credit early"),
    "kernel-empty-no-ack": (
        P, "fence()  # release, as after a unit's data\n                    if f & RECV:",
        "fence()  # release, as after a unit's data\n                    if False:",
        "a channel with no part of a chunk never gives its slot's credit back"),
    "kernel-sends-total-lost": (
        P, "mine[tot + 1] = base_out + sends", "mine[tot + 1] = base_out",
        "the kernel does not keep its count of sent chunks for the next call"),
    "kernel-avg-every-step": (
        P, "        if f & FINAL:\n            return final(v, w, div)",
        "        if True:\n            return final(v, w, div)",
        "the ring kernel's avg divides at every step, not at the last"),
    "kernel-ll-flag-off": (
        P, "fin, fout = (uin + 1) & FLAG_MASK, ((uout + 1) & FLAG_MASK) << 32",
        "fin, fout = uin & FLAG_MASK, (uout & FLAG_MASK) << 32",
        "LL words flagged with the chunk count, so the first chunk matches zeroed memory"),
    "kernel-ll-no-ack": (
        P, "if t == 0 and f & RECV:\n                    publish(pred, a_out, uin + 1)  # the",
        "if False:\n                    publish(pred, a_out, uin + 1)  # the",
        "the LL protocol never frees a slot"),
    "kernel-wide-past-part": (
        P, "while e + 3 * nt < hi:", "while e + 3 * nt <= hi:",
        "the unrolled loop reaches one element past the channel's part"),
    "kernel-subslot-overlap": (
        P, "return s * stride + c * (cap // nch // lanes * lanes)",
        "return s * stride + c * (cap // nch // lanes * lanes - 1)",
        "the channels' sub-slots overlap by an element"),
    "kernel-vector-unaligned": (
        P, "(xo < 0 or aligned16(x, xo + lo)) and", "True and",
        "the ring kernel reads x in 16-byte vectors where x is not 16-byte aligned"),
    "kernel-vector-no-fold": (
        P, "folds(f, va, vb, u * LW, div)", "pass",
        "the ring kernel's vector loop passes the received part on without x's"),
    "kernel-ll-threshold": (
        KP, "-(-max_chunk // channels) <= LL_WORDS", "-(-max_chunk // channels) <= LL_WORDS + 1",
        "a call goes as LL words with a channel's part one word over its LL area"),
    "kernel-error-unread": (
        KP, "return elapsed is not None and elapsed < waiter.timeout / 2",
        "return elapsed is not None and elapsed < waiter.timeout * 2",
        "the host skips the error word of a kernel that timed out within twice the timeout"),
    "exchange-no-parity": (
        "ring/transport/exchange.py", "return HEADER + (call % 2) * self.area", "return HEADER",
        "the node-shared exchange window reuses one area for consecutive calls"),
    "oneshot-reduce-scatter-order": (
        "ring/recipe.py",
        "return [(0, b, tuple((q, rank * b) for q in ring_order(rank, k)))]",
        "return [(0, b, tuple((q, rank * b) for q in range(k)))]",
        "oneshot's reduce-scatter folds in rank order, not the ring's (other bits)"),
    "oneshot-reduce-order": (
        "ring/recipe.py",
        "order = range(k) if collective is C.ALLREDUCE else ring_order(root, k)",
        "order = range(k)", "oneshot's reduce folds in rank order, not the ring's"),
    "twoshot-no-wait": (
        "ring/algorithms/twoshot.py",
        "        ex.wait(seq, ROUND2, WAITING)\n        for q in range(k):\n            c.out[",
        "        for q in range(k):\n            c.out[",
        "the host's twoshot copies the reduced blocks without waiting for them"),
    "cuda-areas-no-parity": (
        "ring/cuda/areas.py", "return self.slots[q][2 * (seq % 2) + which]",
        "return self.slots[q][which]", "the cuda oneshot / twoshot areas without call parity"),
    "cuda-twoshot-no-wait": (
        "ring/algorithms/twoshot.py",
        "            ex.wait(seq, ROUND2, WAITING)\n            for q in range(k):\n                dev.copy(",
        "            for q in range(k):\n                dev.copy(",
        "the cuda twoshot copies the reduced blocks without waiting for them"),
    "int8-server-feedback-lost": (
        "ring/training/int8_reduce.py", "_quantize(self.send[:mine], self.flat[lo:hi], self.server)",
        "_quantize(self.send[:mine], self.flat[lo:hi], None)",
        "int8's all-to-all exchange drops the shard owner's error feedback"),
    "int8-choice-inverted": (
        "ring/training/int8_reduce.py", "(k + 2) * shard < 2 * packed_bytes(n)",
        "(k + 2) * shard > 2 * packed_bytes(n)", "int8's exchange chosen against its bytes"),
    "torch-avg-as-sum": (
        "ring/training/torch.py", 'dist.ReduceOp.AVG: "avg"}', 'dist.ReduceOp.AVG: "sum"}',
        "the torch backend takes ReduceOp.AVG for a sum"),
    "torch-hook-in-the-hook": (
        "ring/training/torch.py", '    return _call_work(comm, call, grads, finish).get_future()',
        '    call(False)\n    if finish is not None:\n        finish()\n    return _ready(grads)',
        "ring's DDP hooks on a host communicator run their call in the hook (DDP's backward "
        "pass waits for each bucket's communication)"),
    "wait-no-progress": (
        "ring/wait.py", "        while not ready():\n            if progress is not None:\n",
        "        while not ready():\n            if False:\n",
        "a wait past its spins keeps no MPI message moving (the ring across nodes hangs)"),
    "staged-flush-returns": (
        "ring/transport/staged.py", "        for k in range(self.nslots):\n            self._free(k)",
        "        for k in range(self.nslots):\n            pass",
        "a cuda call across nodes returns with its last sends in flight"),
    "host-flush-skipped": (
        "ring/host/executor.py",
        "        if send is not None and send.direct:  # MPI: every message taken (transport/mpi.py)\n"
        "            send.flush()", "        pass",
        "a host call across nodes returns with its last sends in flight"),
    "board-no-compare": (
        "ring/cuda/board.py", "if (word & LOW) != (record & LOW):", "if False:",
        "the call board never compares the ranks' calls: a rank in another call goes on"),
    "board-no-refusal": (
        "ring/cuda/board.py", "        if self.k > 1:\n            refusal()",
        "        if False:\n            refusal()",
        "a rank that raises on the host leaves its peers' kernels waiting at the board"),
    "in-place-gather-offset": (
        "ring/call.py", "if collective in (C.ALLGATHER, C.GATHER) and xa == oa + rank * xb:",
        "if collective in (C.ALLGATHER, C.GATHER) and xa == oa:",
        "an in-place all-gather is taken at block 0 instead of the rank's block"),
    "twoshot-rs-wrong-block": (
        "ring/cuda/twoshot_kernel.py", "load16(vals, (q * U + u) * LW, ins[q], me * cap + e)",
        "load16(vals, (q * U + u) * LW, ins[q], q * cap + e)",
        "the two-shot reduce-scatter folds each rank's own block, not this rank's, of the "
        "staged inputs (16-byte vectors)"),
    "twoshot-ag-gather-offset": (
        "ring/cuda/twoshot_kernel.py",
        "copy(out, q * n + r0, outs[me], q * cap, lo, hi, vgather, words)",
        "copy(out, q * cap + r0, outs[me], q * cap, lo, hi, vgather, words)",
        "the two-shot all-gather copies each block out of its area to the area's offset, "
        "not the block's"),
    "twoshot-tail-no-divide": (
        "ring/cuda/twoshot_kernel.py",
        "                    v = xs[q][offx[q] + r0 + e] if inx else ins[q][e]\n"
        "                    acc = last(acc, v, div) if q == k - 1 else mid(acc, v, div)",
        "                    v = xs[q][offx[q] + r0 + e] if inx else ins[q][e]\n"
        "                    acc = mid(acc, v, div)",
        "the two-shot all-reduce's elements past its 16-byte vectors are never divided "
        "(avg) nor finished by the last rank's fold"),
    "twoshot-one-round-x-only": (
        "ring/cuda/twoshot_kernel.py",
        "step = max(n, 1) if inx and ino else cap", "step = max(n, 1) if inx else cap",
        "the two-shot all-reduce takes the whole array in one round where x alone is "
        "registered, writing past the output areas that hold a round of cap elements"),
    "registry-stale-ident": (
        "ring/transport/registry.py",
        "if now is not None and now.ident == r.mine.ident:", "if now is not None:",
        "a buffer freed and a new one made at its address is still found registered (its "
        "peers' mappings are of the freed memory)"),
    "peer-map-stale": (
        "ring/transport/registry.py", "if had is not None and had[0] == alloc.ident:",
        "if had is not None:",
        "a peer's new allocation at a freed one's base is served the old mapping"),
    "kept-registration-not-asked": (
        "ring/communicator.py",
        "if known is not None and known.valid is not None and not known.valid():",
        "if known is not None and known.valid is not None and False:",
        "a kept call bound to registered memory fires after that memory was freed and made "
        "again (the launch reads and writes through the stale mappings)"),
    "auto-ignores-registration": (
        "ring/tuning.py",
        "and r.get(\"registered\", registered) == registered]", "]",
        "auto takes the rules for registered buffers and for staged ones alike (the first "
        "rule of either that covers the size)"),
    # issue 55: gradient accumulation and top-k
    "no-sync-starts-allreduce": (
        "ring/training/buckets.py",
        "        if not self._syncing:\n            return\n        b, off = self._where[i]",
        "        b, off = self._where[i]",
        "inside no_sync() ready() still packs and starts the bucket's all-reduce: every "
        "micro-batch communicates"),
    "topk-sent-still-owed": (
        "ring/training/topk.py",
        "            self.residual[idx] = 0  # sent: no longer owed",
        "            pass  # (planted fault)",
        "error feedback keeps what was sent in the residual: it is sent again next step"),
    "topk-ties-to-higher": (
        "ring/training/topk.py",
        "    at = cand[magnitudes == kth][:k - above.size]",
        "    at = cand[magnitudes == kth][::-1][:k - above.size]",
        "ties at the k-th magnitude go to the higher indices: the ranks still agree, the "
        "choice is not the definition's"),
    "topk-combine-overwrites": (
        "ring/training/topk.py",
        "        out[idx] += val  # a rank's",
        "        out[idx] = val  # a rank's",
        "the combine writes each rank's values instead of adding them: where two ranks send "
        "the same index, the later rank's value wins"),
    "topk-room-overflow-kept": (
        "ring/training/topk.py",
        "    if count > room:  # the sample underestimated",
        "    if False:  # the sample underestimated",
        "more candidates above the sampled threshold than room: the first `room` (the lowest "
        "indices) are kept and larger values past them missed"),
    "topk-global-share-whole": (
        "ring/training/topk.py",
        "        return self.momentum if avg else np.float32(float(self.momentum) / self.comm.size)",
        "        return self.momentum",
        "global momentum under op sum: every rank owes all of m R', not its K-th: the "
        "momentum counted K times"),
    "topk-gpu-pack-keeps-residual": (
        "kernels/topk.py",
        "            residual[j] = float32(0)",
        "            residual[j] = residual[j]",
        "the GPU's pack leaves the sent values in the residual: sent again next step"),
    # the agreement before data moves, the baseline algorithms, int8's residual, 16-bit bits
    "agreement-ignores-op": (
        "ring/agreement.py",
        "    return np.array([record.get(f, NONE) for f in FIELDS]",
        "    return np.array([record.get(f, NONE) if f != 'op' else NONE for f in FIELDS]",
        "the agreement's record leaves out the op: ranks calling sum and max go ahead, each "
        "with its own"),
    "agreement-bad-rank-unnamed": (
        "ring/agreement.py",
        "    bad = [r for r in range(everyone.shape[0]) if everyone[r, BAD]]",
        "    bad = []",
        "a rank's bad argument is not looked for in the records: the others compare the rest "
        "and, where it agrees, go ahead without it"),
    "tree-avg-undivided": (
        "ring/algorithms/tree.py",
        "        elif op is Op.AVG:\n            divide(out[lo:hi], k)",
        "        elif op is Op.AVG:\n            pass",
        "the tree's root never divides avg's sum by K"),
    "tree-children-first": (
        "ring/algorithms/tree.py",
        "        parts = [mine[lo:hi]] + got",
        "        parts = got + [mine[lo:hi]]",
        "a tree node folds its children's partials before its own: the same bits on every "
        "rank, not the documented order"),
    "ps-reversed-order": (
        "ring/algorithms/ps.py",
        "        fold(lambda q: got[q], op, k, out)",
        "        fold(lambda q: got[k - 1 - q], op, k, out)",
        "the parameter server folds in reverse rank order: not naive's and oneshot's bits"),
    "naive-reversed-order": (
        "ring/algorithms/naive.py",
        "        fold(lambda q: got[q], op, k, out)",
        "        fold(lambda q: got[k - 1 - q], op, k, out)",
        "naive folds in reverse rank order: the same on every rank, not ps's and oneshot's bits"),
    "int8-nan-residual-kept": (
        "ring/training/quantize.py",
        "            rb[i] = lost if abs(lost) < INF else np.float32(0)",
        "            rb[i] = lost",
        "int8's residual keeps the NaN of a block with inf or NaN: every later step of that "
        "block is NaN"),
    "bf16-truncates": (
        "ring/host/half.py",
        "    rounded = _shr(_add(_add(u, U(0x7FFF)), _and(hi, U(1))), U(16))",
        "    rounded = hi",
        "float32 -> bfloat16 on the host truncates instead of rounding to nearest even"),
    "f16-nan-payload-lost": (
        "ring/host/half.py",
        "    nan = _or(U(0x7C00), payload if payload > U(0) else U(1))",
        "    nan = U(0x7E00)",
        "float32 -> float16 on the host makes every NaN the one quiet NaN (NumPy keeps the "
        "payload)"),
    "f16-subnormal-edge": (
        "ring/host/half.py",
        "    h = sub if f < U(0x38800000) else normal",
        "    h = sub if f < U(0x38000000) else normal",
        "float32 -> float16 on the host takes [2^-15, 2^-14) for normal float16 values"),
    # the host's compiled agreement rounds, the progress thread, the abort after a lost peer
    "compiled-round-no-compare": (
        "ring/host/compiled_round.py",
        "            if theirs[i] != row[i]:",
        "            if False:",
        "the compiled agreement round (one node) never compares the peers' records: ranks "
        "that disagree go ahead"),
    "compiled-round-one-slot": (
        "ring/host/compiled_round.py",
        "    return HEADER + (seq & 1) * plan[AREA]",
        "    return HEADER",
        "the compiled rounds use one slot, not two by parity: a fast rank's next round can "
        "overwrite the record (and data) a slow rank is still reading"),
    "gathered-no-compare": (
        "ring/host/compiled_round.py",
        "            if everyone[q, i] != everyone[me, i]:",
        "            if False:",
        "the agreement across nodes (an allgather) never compares the records"),
    "progress-no-drain": (
        "ring/communicator.py",
        "            self._progress.drain()",
        "            pass",
        "a call without async_op does not wait for the async calls before it: calls "
        "overtake each other"),
    "fatal-not-armed": (
        "ring/fatal.py",
        "        atexit.register(_abort)",
        "        pass",
        "after a ring.TimeoutError the job is not aborted at exit: the survivors wait for "
        "the lost peer in MPI_Finalize"),
    # the host ring's compiled walk, the GPU's int8 kernels
    "walk-slot-off-by-one": (
        "ring/host/compiled_walk.py",
        "            spins, yields = poll(link[ACKED_IN], link[SENT] - nslots + 1, spins, yields)",
        "            spins, yields = poll(link[ACKED_IN], link[SENT] - nslots, spins, yields)",
        "the compiled walk waits for one acknowledgement too few: a sender nslots chunks "
        "ahead overwrites a slot its successor has not read (a race)"),
    "walk-avg-every-step": (
        "ring/host/compiled_walk.py",
        "                avg = flags & FINAL and op == AVG",
        "                avg = op == AVG",
        "the compiled walk divides avg at every reduce step, not at the final one"),
    "gpu-int8-signed-wrap": (
        "kernels/quantize.py",
        "            part = mul_rn(float32(q - 256 if q >= 128 else q), scales[row // 4 + b])",
        "            part = mul_rn(float32(q), scales[row // 4 + b])",
        "the GPU's int8 sum reads the value bytes as unsigned: negative values come out "
        "near +256 steps"),
    "gpu-int8-tree-race": (
        "kernels/quantize.py",
        "        cuda.syncthreads()  # everyone has read the tree before the next block refills it",
        "        pass",
        "the GPU's int8 quantize lets a thread refill the block-maximum tree before the others "
        "have read the last block's maximum (a race)"),
    "twoshot-flag-before-writes": (
        "ring/cuda/twoshot_kernel.py",
        "        cuda.syncthreads()\n        if cuda.threadIdx.x == 0:\n            ok[0] = barrier(",
        "        if cuda.threadIdx.x == 0:\n            ok[0] = barrier(",
        "the two-shot kernel's thread 0 raises its flag for the peers before the block's "
        "other threads have written their part (a race)"),
    "twoshot-records-unread": (
        "ring/cuda/twoshot_kernel.py",
        "                       rx, ox, ro, oo, al, offx, offo)\n        cuda.syncthreads()",
        "                       rx, ox, ro, oo, al, offx, offo)",
        "the two-shot kernel's threads read the verdict and the peers' offsets before thread 0 "
        "has written them (a race)"),
    "shm-slot-off-by-one": (
        "ring/transport/shm.py",
        "        need = self.sent - self.win.nslots + 1",
        "        need = self.sent - self.win.nslots",
        "the Python walk's shared-memory sender waits for one acknowledgement too few: "
        "nslots chunks ahead it overwrites a slot its successor has not read (a race)"),
    # the campaign of 2026-11-29: the library's files that no fault had been planted in
    "gpu-min-nan-lost": (
        "kernels/reduce.py",
        "def _take_min(a, b):  # keep a?  NaN propagates, as np.minimum\n"
        "    return a != a or (b == b and a <= b)",
        "def _take_min(a, b):  # keep a?  NaN propagates, as np.minimum\n"
        "    return b == b and a <= b",
        "the GPU's min keeps the other input where the first is NaN (np.minimum keeps the NaN)"),
    "gpu-paired-tail-one-output": (
        "kernels/reduce.py",
        "                out[j] = v\n                out2[j] = v\n",
        "                out[j] = v\n",
        "the 16-bit reduce kernel with two outputs writes an odd last element to the first "
        "only (the successor's slot misses it)"),
    "gpu-fold-avg-every-step": (
        "kernels/reduce.py",
        "    mid = OPS[Op.SUM](kd) if op is Op.AVG else last  # avg: sums, then the dividing sum\n"
        "    arr = kd.numba_type[::1]\n    sig = types.void(arr, types.UniTuple(arr, k)",
        "    mid = last\n"
        "    arr = kd.numba_type[::1]\n    sig = types.void(arr, types.UniTuple(arr, k)",
        "the GPU's K-input fold divides avg at every step, not once at the end"),
    "oneshot-kernel-high-word-lost": (
        "ring/cuda/oneshot_kernel.py",
        "return value_of(lo, hi if w == 2 else 0), 1",
        "return value_of(lo, 0), 1",
        "the one-shot kernel drops the high 32 bits of a peer's 8-byte element"),
    "cuda-run-ignores-divisor": (
        "ring/cuda/backend.py",
        "        divisor = plan.size if divisor is None else divisor\n        storage = np.dtype(x.dtype)",
        "        divisor = plan.size\n        storage = np.dtype(x.dtype)",
        "the GPU's ring divides avg by its own ring's size, not the divisor it was given "
        "(the two-level all-reduce's inner rings: the node's size)"),
    "cuda-link-error-on-one-rank": (  # (ring/cuda/backend.py's own check, until it moved)
        "ring/cuda/together.py",
        "    failed = next((q for q, f in enumerate(said) if f is not None), None)",
        "    failed = comm.rank if mine is not None else None",
        "a rank that cannot link to its neighbours raises alone; the others go on to the "
        "barrier"),
    "host-alltoall-mpi-in-place": (
        "ring/host/backend.py",
        "            return self.run(plan, op, a.copy(), a)",
        "            return self.run(plan, op, a, a)",
        "an in-place all-to-all over MPI links runs from x itself, which receives land on "
        "before their blocks are sent"),
    "walk-takes-float-min": (
        "ring/host/reduce.py",
        "    return wire is None and dtype in REDUCIBLE and dtype not in HALF and not (\n"
        "        dtype in FLOATING and op in (Op.MIN, Op.MAX))",
        "    return wire is None and dtype in REDUCIBLE and dtype not in HALF",
        "the compiled walk takes floating min / max, whose NaNs and signed zeros it does not "
        "treat as NumPy does"),
    "recipe-copy-wrong-offset": (
        "ring/host/reduce.py",
        "            out[lo:lo + n] = parts(q)[at:at + n]",
        "            out[lo:lo + n] = parts(q)[lo:lo + n]",
        "a recipe's one-source segment is read at its offset in out, not in the posted array"),
    "fast-path-read-only-out": (
        "ring/host/repeated.py",
        "and out.shape == shape \\\n            and _writeable(out):",
        "and out.shape == shape \\\n            and out.flags.c_contiguous:",
        "a repeated host all-reduce takes a read-only out on the fast path, which writes it"),
    "kept-alltoall-in-place": (
        "ring/cuda/repeated.py",
        "    if c.collective is Collective.ALLTOALL and c.in_place:\n        return None",
        "    if False:\n        return None",
        "a kept in-place all-to-all replays its launch, which reads the first call's copy of x"),
    "kept-signature-no-strides": (
        "ring/cuda/repeated.py",
        "    return type(a), address(a), a.shape, a.strides, a.dtype",
        "    return type(a), address(a), a.shape, a.dtype",
        "a kept call's signature leaves out the arrays' strides: a strided view of the same "
        "address and shape replays the launch bound to the contiguous one"),
    "group-dtypes-unchecked": (
        "ring/cuda/group.py",
        "if (c.count, c.dtype) != (first.count, first.dtype):",
        "if c.count != first.count:",
        "ring.Group takes ranks' inputs of different dtypes (of one count)"),
    "one-slot-allowed": (
        "ring/options.py",
        "if not whole_number(nslots) or nslots < 2:",
        "if not whole_number(nslots) or nslots < 1:",
        "a link of one slot is allowed (schedule.py: two are the minimum that cannot deadlock)"),
    "mpi-recv-one-too-many": (
        "ring/transport/mpi.py",
        "while planned and len(pending) < n:",
        "while planned and len(pending) <= n:",
        "an MPI link keeps nslots + 1 receives posted: the last lands in the slot of the "
        "oldest, not yet read"),
    "oneshot-limit-exclusive": (
        "ring/algorithms/oneshot.py",
        "    if sent > EXCHANGE_BYTES:",
        "    if sent >= EXCHANGE_BYTES:",
        "oneshot refuses a call of exactly the exchange window's bytes"),
    "pack-offsets-are-ends": (
        "kernels/pack.py",
        "np.cumsum((0,) + sizes[:-1], dtype=np.int64)",
        "np.cumsum(sizes, dtype=np.int64)",
        "the GPU's pack puts each array at the end of its place in the bucket, not its start"),
    "strided-pack-column-major": (
        "kernels/pack.py",
        "r, c = i // cols, i % cols",
        "r, c = i % rows, i // rows",
        "the GPU's strided pack walks a 2-D view column by column"),
    "emulated-nodes-round-robin": (
        "ring/topology.py",
        "color = shared.rank * min(n, shared.size) // shared.size",
        "color = shared.rank % min(n, shared.size)",
        "RING_NODES deals the ranks to emulated nodes round-robin, not as consecutive ranks"),
    "own-never-copies": (
        "ring/transport/messages.py",
        "    if not np.may_share_memory(x, out):\n        return x",
        "    if True:\n        return x",
        "an in-place whole-buffer algorithm folds x after out, x's memory, was written over"),
    "progress-done-before-callbacks": (
        "ring/progress.py",
        "            for fn in callbacks:\n                try:\n                    fn(self._value, self._error)\n"
        "                except BaseException:  # a callback's bug must not stop the thread\n"
        "                    traceback.print_exc()\n"
        "            self._done.set()  # after the callbacks: wait() returns with them done",
        "            self._done.set()\n"
        "            for fn in callbacks:\n                try:\n                    fn(self._value, self._error)\n"
        "                except BaseException:  # a callback's bug must not stop the thread\n"
        "                    traceback.print_exc()",
        "a task is marked done before its callbacks have run: wait() may return first (a race)"),
    "progress-late-callback-lost": (
        "ring/progress.py",
        "                self._callbacks.append(fn)\n                return\n        fn(self._value, self._error)",
        "                self._callbacks.append(fn)\n                return",
        "a callback given to a task that has already run is never called"),
    "progress-error-lost": (
        "ring/progress.py",
        "        if self._error is not None:\n            raise self._error",
        "        if False:\n            raise self._error",
        "an async call's error is never raised by wait()"),
    # the harness: what every figure it prints is made of
    "sweep-own-rank-time": (
        "harness/sweep.py",
        "    dt = world.allreduce(dt / max(iters, 1), op=MPI.SUM) / k",
        "    dt = dt / max(iters, 1)",
        "each rank reports its own time per call, not the mean over ranks (the JSON and "
        "table: rank 0's)"),
    "sweep-timed-without-sync": (
        "harness/sweep.py",
        "        call()\n    impl.sync()\n    dt = time.perf_counter() - t0",
        "        call()\n    dt = time.perf_counter() - t0",
        "the clock stops once the timed calls are enqueued, not once they have finished"),
    "sweep-warmup-timed": (
        "harness/sweep.py",
        "        call()\n    impl.sync()\n    world.Barrier()",
        "        call()\n    world.Barrier()",
        "the warm-up calls still running are left to finish inside the timed interval"),
    "sweep-algbw-per-element": (
        "harness/sweep.py",
        "    algbw = size / dt / 1e9 if dt > 0 else 0.0",
        "    algbw = count / dt / 1e9 if dt > 0 else 0.0",
        "algbw counts elements, not bytes"),
    "sweep-busbw-is-algbw": (
        "harness/sweep.py",
        "algbw * coll.bus_factor(k), wrong",
        "algbw, wrong",
        "busbw is algbw: nccl-tests' bus factor never applied"),
    "sweep-wrong-own-rank": (
        "harness/sweep.py",
        "        wrong = world.allreduce(mine, op=MPI.SUM)",
        "        wrong = mine",
        "#wrong counts this rank's wrong elements only (the table: rank 0's)"),
    "sweep-error-own-rank": (
        "harness/sweep.py",
        "    return world.allreduce(mine, op=MPI.MAX)",
        "    return mine",
        "a compressed wire's error column is this rank's, not the largest over ranks"),
    "table-speedup-inverted": (
        "harness/table.py",
        "to / tr if tr else",
        "tr / to if tr else",
        "the ring/baseline column is the baseline's speed-up over ring"),
    "table-in-place-shows-out-of-place": (
        "harness/table.py",
        "            r = results[(i.name, place)]",
        "            r = results[(i.name, False)]",
        "the table's in-place block prints the out-of-place result"),
    "footer-busbw-every-impl": (
        "harness/table.py",
        "if r.impl == i.name and not math.isnan(r.busbw)]",
        "if not math.isnan(r.busbw)]",
        "each implementation's average bus bandwidth is over every implementation's results"),
    "harness-exit-ignores-wrong": (
        "harness/__main__.py",
        "    return 1 if wrong else 0",
        "    return 0",
        "a sweep with wrong elements exits 0"),
    "vs-min-one-rank": (
        "harness/roofline.py",
        "coll.min_bytes(i, o, itemsize, nranks) / (time_us * 1e-6) / hbm",
        "coll.min_bytes(i, o, itemsize, 1) / (time_us * 1e-6) / hbm",
        "vs_min counts one rank's minimum bytes, not every rank's on the GPU"),
    "mpi-avg-undivided": (
        "harness/impls.py",
        "            np.divide(out, c.size, out=out)",
        "            pass",
        "the MPI baseline's avg is its sum"),
    "mpi-in-place-by-address": (
        "harness/impls.py",
        "    return lo <= inner < hi",
        "    return xa == oa",
        "the MPI baseline takes a reduce-scatter / all-gather in place only where x and out "
        "start at one address (rank 0's block)"),
    # links and mappings between processes on one GPU
    "spare-not-cleared": (
        "ring/transport/keep.py",
        "        self._clear(block.mem)\n        return block",
        "        return block",
        "a segment given back is handed to the next link with its counters as they were"),
    "opened-not-cached": (
        "ring/transport/keep.py",
        "            mem = self._mapped.get(key)",
        "            mem = None",
        "a neighbour's handle is opened again every time it arrives (the driver refuses a "
        "second mapping of one allocation in a process)"),
    "peer-access-one-way": (
        "ring/transport/ipc.py",
        "            if a != b and not can_access(a, b):",
        "            if a < b and not can_access(a, b):",
        "peer access asked one way only: a GPU that the others can read but that cannot "
        "read them passes"),
    "ipc-sender-one-slot-early": (
        "ring/transport/ipc.py",
        "self.acked.wait_geq(stream, u + 1 - self.nslots)",
        "self.acked.wait_geq(stream, u - self.nslots)",
        "the stream path's sender writes a slot before its successor has read the chunk "
        "before in it"),
    "ipc-receiver-acks-early": (
        "ring/transport/ipc.py",
        "self.pred_acked.write(stream, u + 1)",
        "self.pred_acked.write(stream, u + 2)",
        "the stream path's receiver frees the slot of its next chunk too"),
    "register-mapped-one-rank": (
        "ring/cuda/registered.py",
        "    if not all(comm.allgather(mapped)):",
        "    if not mapped:",
        "register is True on the ranks that mapped every peer's buffer even where another "
        "rank could not"),
    "misaligned-array-accepted": (
        "ring/cuda/arrays.py",
        "    if d.size and at % size:",
        "    if False:",
        "an array whose address is not a multiple of its element size goes to the kernels "
        "(on a GPU: a misaligned load, the CUDA context lost)"),
    # harness tune: the table algorithm="auto" reads
    "tune-slowest-wins": (
        "harness/tune.py",
        "        winner = min((t[s], a) for a, t in best.items() if s in t)[1]\n        if out",
        "        winner = max((t[s], a) for a, t in best.items() if s in t)[1]\n        if out",
        "tune's rules give each size to the slowest algorithm"),
    "tune-rule-ends-at-first-size": (
        "harness/tune.py",
        '            out[-1]["max_bytes"] = s',
        "            pass",
        "a rule ends at the first size its algorithm won, not the last of the run"),
    "tune-last-round-kept": (
        "harness/tune.py",
        'best[a][nbytes] = min(best[a].get(nbytes, float("inf")), t)',
        "best[a][nbytes] = t",
        "tune keeps the last round's time, not the best round's"),
    "tune-fastest-rank": (
        "harness/tune.py",
        "    return world.allreduce((time.perf_counter() - t0) / n * 1e6, op=MPI.MAX)",
        "    return world.allreduce((time.perf_counter() - t0) / n * 1e6, op=MPI.MIN)",
        "a round's time is the fastest rank's, not the slowest's"),
    "tune-timed-without-sync": (
        "harness/tune.py",
        "        call()\n    comm.synchronize()\n    return world.allreduce",
        "        call()\n    return world.allreduce",
        "tune's clock stops once the calls are enqueued (stream-ordered on the cuda device)"),
    # set-up that every rank takes together; the commit a figure names; buffers and casts
    "together-nothing-let-go": (
        "ring/cuda/together.py",
        "        let_go()",
        "        pass",
        "a failed set-up keeps what the ranks had made (slots, segments, mappings)"),
    "meta-changes-unmarked": (
        "harness/meta.py",
        '            return out.stdout.strip() + ("+changes" if dirty else "")',
        "            return out.stdout.strip()",
        "a figure made from changed code names the commit as if it were that commit's"),
    "meta-results-are-changes": (
        "harness/meta.py",
        '"--", ".", ":!results"],',
        '"--", "."],',
        "a result file rewritten by the sweep marks the commit +changes"),
    "grad-copy-into-a-copy": (
        "ring/training/buffers.py",
        "        np.copyto(dst, src.reshape(dst.shape))",
        "        np.copyto(dst.reshape(src.shape), src)",
        "a gradient that is not contiguous is written through a reshaped copy: lost"),
    "tensor-bf16-as-int16": (
        "ring/training/tensors.py",
        "            return torch.from_numpy(a.view(BITS[name])).view(getattr(torch, name))",
        "            return torch.from_numpy(a.view(BITS[name]))",
        "a bfloat16 (or float8) result goes back to torch as its integer bits"),
    "model-allreduce-steps": (
        "harness/model.py",
        '    return 2 * (k - 1) if collective == "allreduce" else k - 1',
        "    return k - 1",
        "the model's all-reduce has K-1 ring steps, not 2(K-1): alpha_step doubled"),
    "model-negative-alpha-kept-b": (
        "harness/model.py",
        "        a, b = 0.0, float(np.sum(sizes * w) / np.sum((sizes * w) ** 2))",
        "        a = 0.0",
        "a fit whose alpha came out negative keeps the slope fitted beside it"),
    "cast-bf16-widen-shift": (
        "kernels/casts.py",
        "    return as_f32(uint32(h) << 16)",
        "    return as_f32(uint32(h) << 15)",
        "bfloat16 widened to float32 one bit off"),
    "cast-size-unchecked": (
        "kernels/casts.py",
        '    if out.size != x.size:\n        raise ValueError(f"cast: out has',
        '    if out.size > x.size:\n        raise ValueError(f"cast: out has',
        "a cast into an output shorter than its input is let through"),
    # what the harness expects and how it sizes; the refusals of algorithms; RING_DEBUG
    "expected-avg-undivided": (
        "harness/collectives.py",
        "    if op == \"avg\":\n        np.divide(acc, nranks, out=acc)",
        "    if False:\n        np.divide(acc, nranks, out=acc)",
        "the harness expects avg to be the sum: a right avg counts as wrong"),
    "expected-without-rank-1": (
        "harness/collectives.py",
        "    for q in range(1, nranks):",
        "    for q in range(2, nranks):",
        "the expected reduction leaves out rank 1's input"),
    "expected-alltoall-transposed": (
        "harness/collectives.py",
        "np.concatenate([inp(q)[rank * b:(rank + 1) * b] for q in range(nranks)])",
        "np.concatenate([inp(rank)[q * b:(q + 1) * b] for q in range(nranks)])",
        "the expected all-to-all is this rank's own blocks, not its block of every rank"),
    "min-bytes-rooted-as-every-rank": (
        "harness/collectives.py",
        "            return k * i + o\n",
        "            return k * (i + o)\n",
        "reduce and gather's minimum counts an output on every rank, not the root's only"),
    "busfactor-gather-as-allreduce": (
        "harness/collectives.py",
        "        return (nranks - 1) / nranks\n",
        "        return 2 * (nranks - 1) / nranks\n",
        "every collective but all-reduce gets all-reduce's bus factor"),
    "in-place-split-at-zero": (
        "harness/collectives.py",
        "            return buf[:in_count], buf[rank * out_count:(rank + 1) * out_count]",
        "            return buf[:in_count], buf[:out_count]",
        "the in-place reduce-scatter's out is the buffer's first block on every rank, not "
        "the rank's own block (where NCCL and MPI put it)"),
    "counts-split-not-whole-blocks": (
        "harness/collectives.py",
        "        n -= n % nranks\n",
        "",
        "a split or join size that is not a whole number of blocks per rank is taken as is"),
    "sizes-end-exclusive": (
        "harness/sizes.py",
        "    while s <= end:",
        "    while s < end:",
        "-e's size is left out of the sweep"),
    "why-not-any-device": (
        "ring/algorithms/base.py",
        "        if collective in self.serves[ctx.device]:\n            return None",
        "        if any(collective in s for s in self.serves.values()):\n            return None",
        "an algorithm that serves a collective on one device takes it on the other"),
    "debug-app-level-overridden": (
        "ring/debug.py",
        "    if not raw.strip() and log.level != logging.NOTSET:\n        return",
        "    if False:\n        return",
        "without RING_DEBUG, a communicator resets the level the application gave ring's "
        "logger"),
    "debug-configured-once-ever": (
        "ring/debug.py",
        "    if raw == _configured:\n        return",
        "    if _configured is not None:\n        return",
        "RING_DEBUG read at the first communicator only: a later value is ignored"),
    "bits-f16-ties-away": (
        "kernels/bits.py",
        "    if rest > 0x1000 or (rest == 0x1000 and (h & 1) == 1):",
        "    if rest >= 0x1000:",
        "float32 to float16 rounds ties away from zero, not to even"),
    # which NCCL the baseline's label names; the plot's speed-ups
    "nccl-late-load-unsaid": (
        "harness/nccl_lib.py",
        '        if "cupy.cuda.nccl" in sys.modules:',
        "        if False:",
        "the NCCL label names the wheel's library where CuPy's binding, imported first, runs "
        "another"),
    "nccl-loaded-every-call": (
        "harness/nccl_lib.py",
        '    if "where" in _loaded:\n        return _loaded["where"]\n',
        "",
        "the chosen NCCL is loaded again at every preload()"),
    "nccl-symbols-local": (
        "harness/nccl_lib.py",
        "mode=ctypes.RTLD_GLOBAL",
        "mode=ctypes.RTLD_LOCAL",
        "the preloaded NCCL's symbols are local: CuPy's binding does not bind to them"),
    "plot-speedup-inverted": (
        "harness/plot.py",
        "                ys = [t / ring[s] for s, _, t in sorted(pts) if s in ring]",
        "                ys = [ring[s] / t for s, _, t in sorted(pts) if s in ring]",
        "the plot's speed-up is ring's time over the baseline's"),
    # the compiled host wait; the simulator's IPC segments
    "poll-never-gives-up": (
        "ring/transport/atomic.py",
        "        else:\n            return -1, 0",
        "        else:\n            spins = 1 << 30",
        "the compiled host wait never hands over to the bounded one: a lost peer is a hang"),
    "simipc-slots-not-zeroed": (
        "ring/transport/simipc.py",
        "        self.window.region(comm.rank)[:] = 0\n",
        "",
        "a simulated segment keeps what a freed window's memory held"),
    # what a closed communicator lets go of (tests/mpi/check_lifetime.py)
    "close-keeps-backend": (
        "ring/communicator.py",
        "            ctx.backend.close()\n",
        "",
        "close() keeps the backend's windows, slots and links"),
    "close-keeps-comm": (
        "ring/communicator.py",
        "            ctx.topo.close()\n            self._comm.Free()\n",
        "            ctx.topo.close()\n",
        "close() keeps its duplicate of the MPI communicator"),
    "close-keeps-topo": (
        "ring/communicator.py",
        "            ctx.topo.close()\n            self._comm.Free()\n",
        "            self._comm.Free()\n",
        "close() keeps its node communicators (the topology's)"),
    "close-keeps-kept": (
        "ring/context.py",
        "            if hasattr(thing, \"close\"):\n                thing.close()\n",
        "            pass\n",
        "close() keeps what algorithms made on first use (the two-level rings, say)"),
    # the flat ring's module; the kernels' error word; a lost rank named
    "ring-chunk-ignores-given": (
        "ring/algorithms/ring.py",
        "        if given or ctx.topo.nnodes != 1",
        "        if ctx.topo.nnodes != 1",
        "the host's compiled ring takes its own chunk size where the communicator was given one"),
    "ring-alltoall-in-place-as-out": (
        "ring/algorithms/ring.py",
        "        if c.collective is Collective.ALLTOALL and c.in_place:",
        "        if False:",
        "an in-place all-to-all on the ring walks as if out were another array"),
    "error-word-last-wins": (
        "ring/cuda/error_word.py",
        "    if cuda.atomic.cas(err, ERR_CODE, 0, code) == 0:",
        "    err[ERR_CODE] = code\n    if True:",
        "a kernel's later failure overwrites the first in the error word"),
    "round-behind-unnamed": (
        "ring/context.py",
        "            behind = self.exchange.behind(seq)",
        "            behind = []",
        "a one-round call's timeout does not name the ranks that never reached it"),
    # the device's choice, the algorithms' registry, the links' kinds, the kernels' dtypes and
    # copy, a stream's oldest launch
    "devices-auto-simulated": (
        "ring/devices.py",
        '    return "cuda" if usable or device == "cuda" else "host"',
        '    return "cuda" if usable or simulated() else "host"',
        "device='auto' takes the simulator's cuda device where there is no GPU"),
    "devices-cuda-unchecked": (
        "ring/devices.py",
        '    if device == "cuda" and not (usable or simulated()):',
        "    if False:",
        "device='cuda' is taken with neither a GPU nor the simulator"),
    "compressed-auto-flat-first": (
        "ring/algorithms/__init__.py",
        "(hierarchical.ALGORITHM.name, ring.ALGORITHM.name) if asked == AUTO",
        "(ring.ALGORITHM.name, hierarchical.ALGORITHM.name) if asked == AUTO",
        "a compressed 'auto' call takes the flat ring where the two-level one runs"),
    "auto-ignores-the-table": (
        "ring/algorithms/__init__.py",
        "        if pick is not None:\n            return pick\n",
        "",
        "'auto' ignores the tuning table's choice"),
    "auto-never-two-level": (
        "ring/algorithms/__init__.py",
        "        return ring.ALGORITHM.name if two_level.why_not(ctx, collective, nbytes) \\\n",
        "        return ring.ALGORITHM.name if True \\\n",
        "'auto' without a table's rule never takes the two-level algorithm across nodes"),
    "ends-inbound-by-successor": (
        "ring/transport/__init__.py",
        "    inbound = (near if topo.same_node(pred, rank) else far).inbound(pred)",
        "    inbound = (near if topo.same_node(rank, succ) else far).inbound(pred)",
        "a ring's inbound link chosen by where the successor is, not the predecessor"),
    "int16-kernels-unsigned": (
        "kernels/dtypes.py",
        'KernelDtype("int16", np.int16, types.int16,',
        'KernelDtype("int16", np.uint16, types.uint16,',
        "int16 reduced by the kernels as uint16"),
    "copy-lanes-swapped": (
        "kernels/copy.py",
        "= a0, a1, a2, a3",
        "= a0, a1, a3, a2",
        "the copy kernel's unrolled loop stores two of its four loads in each other's place"),
    "streams-since-newest": (
        "ring/cuda/streams.py",
        "        self.since.setdefault(h, (fired, call))",
        "        self.since[h] = (fired, call)",
        "a stream's oldest launch not known to have ended is forgotten for the newest"),
    # the kernel path's disk cache (ring/cuda/kernel_cache.py)
    "kernel-cache-without-twoshot": (
        "ring/cuda/kernel_cache.py",
        '"ring/cuda/twoshot_kernel.py", "ring/cuda/board.py"',
        '"ring/cuda/board.py"',
        "the kernels' disk cache keys ignore an edit to the two-shot kernel's source"),
    "kernel-cache-without-layouts": (
        "ring/cuda/kernel_cache.py",
        '"ring/cuda/program.py", "ring/transport/ipc.py", "ring/schedule.py"',
        '"ring/schedule.py"',
        "the kernels' disk cache keys ignore an edit to the program's or the segment's layout"),
    "kernel-cache-key-without-variant": (
        "ring/cuda/kernel_cache.py",
        '    tail = ("ring", variant, sources_digest())',
        '    tail = ("ring", sources_digest())',
        "the kernels' disk cache keys ignore the variant (op, protocol, K, collective)"),
    "persistent-variant-without-vectors": (
        "ring/cuda/persistent.py",
        "    variant = (\"persistent\", op.name, dtype_name, unroll, gpu_scope, acqrel, ll, vectors)",
        "    variant = (\"persistent\", op.name, dtype_name, unroll, gpu_scope, acqrel, ll)",
        "the ring kernel's cache variant leaves out its 16-byte vectors"),
    "oneshot-variant-without-k": (
        "ring/cuda/oneshot_kernel.py",
        "(\"oneshot\", op.name, dtype_name, k))",
        "(\"oneshot\", op.name, dtype_name))",
        "the one-shot kernel's cache variant leaves out K"),
    # the last library files without a fault (bar the GPU-only ones: results/mutants-since.md)
    "slots-all-one": (
        "ring/transport/slots.py",
        "        return self._typed.get(storage)[k][:n]",
        "        return self._typed.get(storage)[0][:n]",
        "every slot of a link's or a rank's staging is one buffer: chunks in flight overwrite "
        "each other"),
    "harness-put-no-storage": (
        "harness/buffers.py",
        "        return self.cuda.to_device(a.view(self.storage(a.dtype)))",
        "        return self.cuda.to_device(a)",
        "the harness puts bfloat16 and float8 on the simulated GPU as themselves, not as "
        "integer bits"),
    "harness-auto-simulated": (
        "harness/buffers.py",
        '        device = "cuda" if gpu_usable() else "host"',
        '        device = "cuda" if gpu_usable() or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" '
        'else "host"',
        "the harness's device 'auto' takes the simulator's GPU where there is none (make "
        "bench on a CPU machine would run the simulator)"),
    "grid-floor": (
        "kernels/launch.py",
        "    want = -(-max(n, 1) // (threads * per_thread))",
        "    want = max(n, 1) // (threads * per_thread)",
        "a launch's blocks round down: fewer elements than a block's threads launch no block"),
    "handle-of-version": (
        "kernels/driver.py",
        "        return int(stream.__cuda_stream__()[1])",
        "        return int(stream.__cuda_stream__()[0])",
        "a CuPy or cuda.core stream's handle read from __cuda_stream__'s version field"),
    "setup-own-error-unraised": (
        "ring/agreement.py",
        "    waiter.until(req.Test, lambda: f\"waiting for every rank to make its {name}\")\n"
        "    if error is not None:\n        raise error\n",
        "    waiter.until(req.Test, lambda: f\"waiting for every rank to make its {name}\")\n",
        "a set-up's bad argument is not raised on its own rank (the others raise MismatchError)"),
    "buckets-layout-unshared": (
        "ring/training/buckets.py",
        '"buckets": [len(m) for m in self.buckets], "op": op,',
        '"buckets": len(self.buckets), "op": op,',
        "ranks whose buckets hold other gradients (another bucket_bytes), as many of them, "
        "are not told apart when the buckets are made"),
    "setup-timeout-unbroken": (
        "ring/communicator.py",
        "            agree_setup(ctx.comm, fields, values, error, ctx.waiter, name)\n"
        "        except TimeoutError as e:\n            self._broken(e)\n",
        "            agree_setup(ctx.comm, fields, values, error, ctx.waiter, name)\n"
        "        except TimeoutError as e:\n            pass\n",
        "a set-up that timed out (a peer that never came) leaves the communicator usable"),
    "callback-twice": (
        "ring/communicator.py",
        "        try:\n            result = self.wait()\n        except BaseException as e:\n"
        "            fn(None, e)\n            return\n        fn(result, None)",
        "        try:\n            fn(self.wait(), None)\n        except BaseException as e:\n"
        "            fn(None, e)",
        "a done callback that raises, called at once, is called again with its own error "
        "as the call's"),
    "fp16-wire-as-bits": (
        "ring/training/buckets.py",
        "np.float16 if dtype == \"float16\" else np.uint16)",
        "np.uint16)",
        "GradientBuckets' float16 wire copy on a GPU is an array of uint16, which the "
        "all-reduce refuses as float16"),
    "gpu-avg-unscaled": (
        "ring/training/buckets.py",
        "        from kernels import scale\n        scale(a, factor)\n",
        "        pass\n",
        "GradientBuckets' 16-bit wire on a GPU never divides by K for avg"),
    "topk-no-fallback": (
        "ring/training/topk.py",
        "    if count >= k:\n        cand = passes.candidates(cand, count)",
        "    if count >= 0:\n        cand = passes.candidates(cand, count)",
        "top-k's selection keeps the sample's threshold when fewer than k values reach it "
        "(no fallback to the bucket's exact k-th magnitude)"),
    "momentum-one-allowed": (
        "ring/training/topk.py",
        "not 0 <= momentum < 1:", "not 0 <= momentum <= 1:",
        "top-k's momentum of 1 (a velocity that never decays) is taken"),
    "chunk-tail-dropped": (
        "ring/schedule.py",
        "end = hi if j == k - 1 else lo + (units * (j + 1) // k) * a",
        "end = lo + (units * (j + 1) // k) * a",
        "a block's last chunk ends at its last aligned element: the unaligned tail (the "
        "GPU's blocks cut at 16 bytes) is never moved"),
    "nchunks-floor": (
        "ring/schedule.py",
        "return max(1, -(-max_block_bytes // chunk_bytes))",
        "return max(1, max_block_bytes // chunk_bytes)",
        "chunks per step rounded down: a chunk may exceed chunk_bytes, its slot's size"),
    "alltoall-in-place-unguarded": (
        "ring/schedule.py",
        "    return tuple(sorted(d for d in own if kept[d] < own[d]))",
        "    return ()",
        "an all-to-all in place is taken as safe at every K: from K = 3 it receives over "
        "blocks of x it has not sent yet"),
    "gather-root-nearest-first": (
        "ring/schedule.py",
        "[_move(at(p), True, True, False) for p in range(size - 1, 0, -1)]",
        "[_move(at(p), True, True, False) for p in range(1, size)]",
        "a gather's root writes the blocks it receives nearest first, where they arrive "
        "farthest first"),
    "split-remainder-last": (
        "ring/schedule.py",
        "return [(units * i // parts) * align for i in range(parts)] + [count]",
        "return [(units // parts) * i * align for i in range(parts)] + [count]",
        "blocks cut as units // parts each, the remainder all in the last block: right "
        "results, a slower ring (the last block up to parts - 1 units longer)"),
    "reduce-alone-receives": (
        "ring/schedule.py",
        "first = pos == 1 % size  # the chain's start",
        "first = pos == 1  # the chain's start",
        "a reduce on one rank waits for a chunk from itself"),
    "op-name-case-sensitive": (
        "ringtypes/__init__.py",
        "if isinstance(op, str) and op.lower() in OPS:\n        return OPS[op.lower()]",
        "if isinstance(op, str) and op in OPS:\n        return OPS[op]",
        "an op's name must be lower case: op=\"SUM\" is refused"),
    "avg-on-integers": (
        "ringtypes/__init__.py",
        "if op is Op.AVG and dtype not in FLOATING:",
        "if op is Op.AVG and dtype in DATA_ONLY:",
        "avg is taken on integer dtypes (their sum divided, truncated)"),
    "traffic-reduce-two-reads": (
        "ring/cuda/enqueue.py",
        "        elif step.reduce:\n            total += 3 * n",
        "        elif step.reduce:\n            total += 2 * n",
        "the GPU's traffic count (the roofline's numerator) reads a reduction's two inputs "
        "as one"),
    "enqueue-no-credit-check": (
        "ring/cuda/enqueue.py",
        "if (step.recv and not inbound.can_recv()) or (step.send and not outbound.can_send()):",
        "if step.recv and not inbound.can_recv():",
        "ring.Group's stream path enqueues a send whatever the successor's free slots"),
    "link-one-slot-more": (
        "ring/cuda/enqueue.py",
        "return self.sent - self.taken < len(self.slots.raw)",
        "return self.sent - self.taken <= len(self.slots.raw)",
        "a Group link takes one chunk more in flight than it has slots"),
    "copy-path-avg-every-step": (
        "ring/cuda/enqueue.py",
        "eff = op if (step.final or op is not Op.AVG) else Op.SUM\n        if step.out:",
        "eff = op\n        if step.out:",
        "the copy path divides avg at every reduction, not only the final one"),
    "seam-not-sent": (
        "ring/cuda/enqueue.py",
        "_reduce(eff, target, rbuf, src, sbuf if (step.out and step.send) else None,",
        "_reduce(eff, target, rbuf, src, None,",
        "at the all-reduce's seam the stream path writes the reduced chunk out but never "
        "into the successor's slot"),
    "group-alltoall-in-place-uncopied": (
        "ring/cuda/group.py",
        "views = [self._copy_of(c.x, r) if collective is Collective.ALLTOALL and c.in_place\n"
        "                     else c.x for r, c in enumerate(calls)]",
        "views = [c.x for r, c in enumerate(calls)]",
        "ring.Group's in-place all-to-all reads x as blocks land over it"),
    "root-bool-taken": (
        "ring/call.py",
        "if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0",
        "if not isinstance(root, (int, np.integer)) or not 0",
        "root=True is taken as rank 1"),
    "out-larger-taken": (
        "ring/call.py", "    if of.size != out_n:", "    if of.size < out_n:",
        "an out larger than the result is taken, its tail left as it was"),
    "chunk-over-slot": (
        "ring/call.py", "not 0 < chunk_bytes <= slot_bytes:", "not 0 < chunk_bytes:",
        "a call's chunk_bytes larger than the communicator's slots is taken"),
    "in-place-scatter-at-block-zero": (
        "ring/call.py",
        "if collective in (C.REDUCE_SCATTER, C.SCATTER) and oa == xa + rank * ob:",
        "if collective in (C.REDUCE_SCATTER, C.SCATTER) and oa == xa:",
        "a reduce-scatter in place is looked for at block 0 of x, not block rank"),
    "scatter-stand-in-one-block": (
        "ring/call.py", "        n = xf.size * size\n", "        n = xf.size\n",
        "a scatter's non-root rank sizes the call by one block (out), not K"),
    "cuda-swap-blocks-identity": (
        "ring/cuda/backend.py",
        "self.copy(dst[(j * rows + i) * b:(j * rows + i + 1) * b],",
        "self.copy(dst[(i * cols + j) * b:(i * cols + j + 1) * b],",
        "the GPU's two-level all-reduce does not transpose its blocks between the node's "
        "ring and the leaders' (they land as they were)"),
    "gathered-overlapping-out-taken": (
        "ring/host/repeated.py",
        "(not np.may_share_memory(x, out) if s.own else",
        "(True if s.own else",
        "across nodes, a kept oneshot takes an out that overlaps x (the full path refuses it)"),
    "torch-agree-ignores-peers": (
        "ring/training/torch.py",
        "        if bad[0]:\n            raise MismatchError(",
        "        if False:\n            raise MismatchError(",
        "the torch backend's list check: a rank whose own lists are right goes on when a "
        "peer's were wrong"),
    "torch-split-reversed": (
        "ring/training/torch.py",
        "        o.copy_(flat[r * n:(r + 1) * n].view_as(o))",
        "        o.copy_(flat[(len(outs) - 1 - r) * n:(len(outs) - r) * n].view_as(o))",
        "the torch backend's list forms put block r into the list's last-but-r tensor"),
    "torch-uneven-splits-taken": (
        "ring/training/torch.py",
        "uneven = any(s and list(s) != even for s in (out_splits, in_splits))",
        "uneven = False",
        "all_to_all_single with uneven splits runs as if they were even"),
    "torch-coalesced-sum": (
        "ring/training/torch.py",
        "            self._comm(t).allreduce(x, out=x, op=op)",
        "            self._comm(t).allreduce(x, out=x)",
        "all_reduce_coalesced sums whatever op it is given"),
    "int8-blocks-one-more": (
        "ringtypes/__init__.py",
        "    return -(-n // QUANT_BLOCK)",
        "    return n // QUANT_BLOCK + 1",
        "the int8 wire counts a block too many where n is a multiple of 4096 (a scale "
        "that no value has; the format differs from the one documented)"),
    # 2026-12-04: the cuda device's one-shot keys, registration and table, the harness's flags,
    # the MPI and staged links, the host's checks, the GPU's Top-K passes
    "program-x-on-forward": (
        "ring/cuda/program.py",
        "uses_x = s_in is not None and (not step.recv or step.reduce)",
        "uses_x = s_in is not None",
        "the kernel's table gives a step that receives and forwards without reducing an input "
        "offset"),
    "program-uin-from-one": (
        "ring/cuda/program.py",
        "recvs if step.recv else -1",
        "recvs + 1 if step.recv else -1",
        "the kernel's table numbers a call's receives from 1: every wait is for one chunk more"),
    "program-step-is-chunk": (
        "ring/cuda/program.py",
        "sends if step.send else -1, j, i % nsteps)",
        "sends if step.send else -1, j, j)",
        "the kernel's table names the chunk where it names the step (its error messages)"),
    "oneshot-key-without-out": (
        "ring/cuda/backend.py",
        "kernel_path.memory_of(c.x), kernel_path.memory_of(c.out), self.record,",
        "kernel_path.memory_of(c.x), self.record,",
        "a kept one-shot / two-shot launch is found by x alone: a call with another out writes "
        "the first call's"),
    "in-place-any-side": (
        "ring/cuda/backend.py",
        "return all(r is not None for (r, _), taken in zip(",
        "return any(r is not None for (r, _), taken in zip(",
        "a call counts as in place where any one of its taken sides is registered"),
    "kernel-shapes-unchecked": (
        "ring/cuda/backend.py",
        "        if len(shapes) > 1:\n            raise ValueError(f\"path={self.path!r}: ranks "
        "disagree",
        "        if False:\n            raise ValueError(f\"path={self.path!r}: ranks disagree",
        "ranks that disagree on the kernel's (channels, threads) go on"),
    "harness-avg-on-ints": (
        "harness/__main__.py",
        "            if op == \"avg\" and dtype not in FLOATING:\n                continue",
        "            if False:\n                continue",
        "-o all runs avg on integer dtypes"),
    "harness-all-ops-no-prod": (
        "harness/__main__.py",
        "ops = [\"sum\", \"prod\", \"max\", \"min\", \"avg\"] if args.op",
        "ops = [\"sum\", \"max\", \"min\", \"avg\"] if args.op",
        "-o all leaves out prod"),
    "harness-registered-mpi": (
        "harness/__main__.py",
        "bad = [n for n in names if registered(n)[1] and not n.startswith(\"ring\")]",
        "bad = []",
        "--impl mpi+R runs plain MPI under a registered label"),
    "harness-root-past-end": (
        "harness/__main__.py",
        "not 0 <= args.root < world.size:",
        "not 0 <= args.root <= world.size:",
        "-r K (one past the last rank) is taken"),
    "harness-json-always-complete": (
        "harness/__main__.py",
        "\"complete\": complete,",
        "\"complete\": True,",
        "a sweep's JSON says complete after every size"),
    "harness-check-always": (
        "harness/__main__.py",
        "args.iters, args.warmup_iters, bool(args.check),",
        "args.iters, args.warmup_iters, True,",
        "-c 0 still checks"),
    "harness-op-none-as-sum": (
        "harness/__main__.py",
        "                        r.op = op\n",
        "",
        "the data-moving collectives' results record op sum, not none"),
    "harness-float8-reduced": (
        "harness/__main__.py",
        "if coll.reduces and any(d in DATA_ONLY for d in dtypes):",
        "if False:",
        "-d all runs float8 in the reducing collectives"),
    "mpi-rs-in-place-uncopied": (
        "harness/impls.py",
        "                ho[...] = hx[:ho.size]",
        "                pass",
        "the MPI baseline's in-place reduce-scatter leaves its result in block 0"),
    "ring-broadcast-root-uncopied": (
        "harness/impls.py",
        "        if out is x or c.rank != root:\n            return partial(c.broadcast, out, ",
        "        if True:\n            return partial(c.broadcast, out, ",
        "ring's out-of-place broadcast in the harness broadcasts the root's out, not x"),
    "int8-expected-avg-as-sum": (
        "harness/impls.py",
        "    quantize.dequantize_sum(msgs, in_count, want, op == \"avg\")",
        "    quantize.dequantize_sum(msgs, in_count, want, False)",
        "the int8 check's expected avg is the sum"),
    "compression-takes-max": (
        "harness/impls.py",
        "or op not in (\"sum\", \"avg\")):\n            return \"compression:",
        "or op not in (\"sum\", \"avg\", \"max\")):\n            return \"compression:",
        "a compressed wire is run for max"),
    "mpi-bf16-reduced": (
        "harness/impls.py",
        "        if COLLECTIVES[coll].reduces and np.dtype(dtype) == bfloat16:",
        "        if False:",
        "the MPI baseline is run for bfloat16 reductions"),
    "staged-nbytes-elements": (
        "ring/transport/staged.py",
        "self.nbytes[k] = n * np.dtype(storage).itemsize",
        "self.nbytes[k] = n",
        "a staged link sends a chunk's element count in bytes"),
    "staged-aware-env-unchecked": (
        "ring/transport/staged.py",
        "        if env not in (\"0\", \"1\"):\n            raise ValueError(f\"{ENV_AWARE}",
        "        if False:\n            raise ValueError(f\"{ENV_AWARE}",
        "RING_CUDA_AWARE_MPI=yes is taken (as no)"),
    "staged-direct-slot-reused": (
        "ring/transport/staged.py",
        "        if self.direct:  # the device slot is the send buffer: its last Isend must be "
        "done\n            self._free(k)",
        "        if self.direct:  # the device slot is the send buffer: its last Isend must be "
        "done\n            pass",
        "a CUDA-aware staged link writes a device slot while its last Isend is in flight"),
    "mpi-gate-early": (
        "ring/transport/mpi.py",
        "if gate >= self.unit:  # the executor still reads that memory",
        "if gate > self.unit:  # the executor still reads that memory",
        "an MPI link posts a receive into the caller's array one unit early, while the walk "
        "still reads it"),
    "mpi-send-slot-reused": (
        "ring/transport/mpi.py",
        "        if self.reqs[i] is not None:\n            _wait(self.reqs[i], self.waiter, "
        "f\"waiting for {self.peer} to take a message\")\n            self.reqs[i] = None\n      "
        "  return i",
        "        return i",
        "an MPI link refills a staging slot while its last Isend is in flight"),
    "host-read-only-out-taken": (
        "ring/host/backend.py",
        "        if writeable and not a.flags.writeable:\n            raise ValueError(f\"{arg}: "
        "the array is read-only\")",
        "        if False:\n            raise ValueError(f\"{arg}: the array is read-only\")",
        "the host takes a read-only out"),
    "host-dtype-arg-unchecked": (
        "ring/host/backend.py",
        "        if dtype is not None and parse_dtype(dtype, \"dtype\") != dt:",
        "        if False:",
        "the host takes a dtype= that is not the array's"),
    "host-swap-blocks-untransposed": (
        "ring/host/backend.py",
        "src.reshape(rows, cols, b).transpose(1, 0, 2)",
        "src.reshape(cols, rows, b)",
        "the host's two-level all-reduce does not transpose its blocks"),
    "host-behind-includes-entered": (
        "ring/host/backend.py",
        "and self.window.header(self.topo.local_of[r])[CALLS] < call]",
        "and self.window.header(self.topo.local_of[r])[CALLS] <= call]",
        "a timeout names as late the ranks that have entered the call"),
    "host-alltoall-shm-unheld": (
        "ring/host/backend.py",
        "        held, from_out = executor.in_place(plan, a)\n        self.run(plan, op, held, "
        "a, from_out=from_out)",
        "        self.run(plan, op, a, a)",
        "an in-place all-to-all over shared memory runs from x itself"),
    "topk-gpu-above-strict": (
        "kernels/topk.py",
        "if not abs(v[i]) < t:  # (NaN too)",
        "if abs(v[i]) > t:  # (NaN too)",
        "the GPU's candidates leave out |v| equal to the threshold, and NaN"),
    "topk-gpu-carry-dropped": (
        "kernels/topk.py",
        "            if has_carry:\n                r = r + carry[i]",
        "            if False:\n                r = r + carry[i]",
        "the GPU's owe leaves out global momentum's carry"),
    "topk-gpu-velocity-unstored": (
        "kernels/topk.py",
        "            velocity[i] = v\n",
        "",
        "the GPU's owe never stores the velocity it computes"),
    "topk-gpu-pack-keeps-velocity": (
        "kernels/topk.py",
        "            velocity[j] = float32(0)",
        "            velocity[j] = velocity[j]",
        "the GPU's pack leaves the sent coordinates' velocity (DGC's masking undone)"),
    # -- the tenth run: the least covered files left (results/mutants-edges.json) --------
    "kp-channels-max-refused": (
        "ring/cuda/kernel_path.py",
        "    if not 1 <= c <= MAX_CHANNELS:",
        "    if not 1 <= c < MAX_CHANNELS:",
        "RING_KERNEL_CHANNELS refuses the most channels a segment holds"),
    "kp-threads-1024-refused": (
        "ring/cuda/kernel_path.py",
        "    if not 1 <= t <= 1024:",
        "    if not 1 <= t < 1024:",
        "RING_KERNEL_THREADS refuses a block of 1024 threads"),
    "kp-clean-past-timeout": (
        "ring/cuda/kernel_path.py",
        "return elapsed is not None and elapsed < waiter.timeout / 2",
        "return elapsed is not None and elapsed < waiter.timeout * 2",
        "a launch seen finished after its timeout is taken as clean (error word unread)"),
    "kp-refusal-as-mismatch": (
        "ring/cuda/kernel_path.py",
        "if code == BOARD_MISMATCH and seen == BOARD_REFUSED:",
        "if False:",
        "a peer's refusal found on the GPU is named as another call"),
    "wait-progress-drops-earlier": (
        "ring/wait.py",
        "hooks = ([self.progress] if self.progress is not None else []) + \\",
        "hooks = [] + \\",
        "adding link ends' progress drops the hooks added before"),
    "wait-at-kept": (
        "ring/wait.py",
        "self.context, self.at = context, None",
        "self.context = context",
        "a call's timeout names the chunk and step an earlier call was at"),
    "opt-nan-timeout": (
        "ring/options.py",
        "or not timeout > 0:",
        "or timeout <= 0:",
        "timeout=NaN is taken"),
    "opt-fused-silent": (
        "ring/options.py",
        "        warnings.warn(\"path='fused' is now called 'stream'\", DeprecationWarning, "
        "stacklevel=3)\n",
        "",
        "path='fused' is taken without its DeprecationWarning"),
    "opt-fractions-whole": (
        "ring/options.py",
        "and float(v).is_integer()",
        "and float(v) == float(v)",
        "2.5 counts as a whole number (slots, sizes)"),
    "rep-read-only-out-kept": (
        "ring/host/repeated.py",
        "    return flags.c_contiguous and flags.writeable\n",
        "    return flags.c_contiguous\n",
        "a read-only out is keyed for the host's fast path (every collective's)"),
    "rep-float-minmax-compiled": (
        "ring/host/repeated.py",
        "            dtype in FLOATING and op in (Op.MIN, Op.MAX))",
        "            False)",
        "floating min / max folded by the compiled round instead of NumPy's loops"),
    "rep-gathered-overlap-taken": (
        "ring/host/repeated.py",
        "(not np.may_share_memory(x, out) if s.own else",
        "(True if s.own else",
        "across nodes a kept call takes an out that overlaps x"),
    "rep-gathered-mismatch-ignored": (
        "ring/host/repeated.py",
        "                          flat) == compiled_round.MISMATCH:",
        "                          flat) == -12345:",
        "across nodes a kept call's records are not compared"),
    "rep-learnt-delta-zero": (
        "ring/host/repeated.py",
        "return in_place(k), compiled_round.SAME, _address(out) - _address(x)",
        "return in_place(k), compiled_round.SAME, 0",
        "an in-place collective kept with out at x's address whatever its offset"),
    "rep-settle-unwaited": (
        "ring/host/repeated.py",
        "        ctx.wait_round(seq)\n        status = compiled_round.finish",
        "        status = compiled_round.finish",
        "a kept round the poll did not see complete is finished without waiting"),
    "grp-counts-unchecked": (
        "ring/cuda/group.py",
        "if (c.count, c.dtype) != (first.count, first.dtype):",
        "if False:",
        "ring.Group takes ranks' inputs of different sizes"),
    "grp-outs-length-unchecked": (
        "ring/cuda/group.py",
        "if outs is not None and len(outs) != k:",
        "if False:",
        "ring.Group takes a list of outs of another length"),
    "grp-closed-runs": (
        "ring/cuda/group.py",
        "        if self._closed:\n            raise CommunicatorError(\"the group is closed\")",
        "        if False:\n            raise CommunicatorError(\"the group is closed\")",
        "a closed ring.Group takes calls"),
    "grp-device-index-ndev": (
        "ring/cuda/group.py",
        "and 0 <= d < ndev)",
        "and 0 <= d <= ndev)",
        "ring.Group takes a device index one past the last GPU"),
    "quant-no-saturate": (
        "ring/training/quantize.py",
        "    r = min(max(r, -one27), one27)\n",
        "",
        "int8 values past +-127 (a subnormal scale) wrap instead of saturating"),
    "quant-residual-inf-kept": (
        "ring/training/quantize.py",
        "rb[i] = lost if abs(lost) < INF else np.float32(0)",
        "rb[i] = lost",
        "an inf / NaN block's residual is kept, poisoning later steps"),
    "quant-zero-block-scale-zero": (
        "ring/training/quantize.py",
        "return np.float32(1) if top == U(0) else as_f32(top) / np.float32(127)",
        "return as_f32(top) / np.float32(127)",
        "a block of zeros sends scale 0 instead of 1"),
    "quant-padding-dirty": (
        "ring/training/quantize.py",
        "    packed[4 * quant_blocks(v.size) + v.size:] = 0  # the padding\n",
        "",
        "the int8 message's padding is left as it was"),
    "oneshot-full-exchange-refused": (
        "ring/algorithms/oneshot.py",
        "    if sent > EXCHANGE_BYTES:",
        "    if sent >= EXCHANGE_BYTES:",
        "oneshot refuses a call of exactly EXCHANGE_BYTES per rank"),
    "roof-hbm-once": (
        "harness/roofline.py",
        "return 2 * d2d * 1e9 if d2d else None",
        "return d2d * 1e9 if d2d else None",
        "the HBM rate counts a copy's bytes once (read or written, not both)"),
    "buckets-nested-no-sync": (
        "ring/training/buckets.py",
        "        if self._syncing is False:\n            raise ValueError(\"no_sync(): already "
        "inside one\")\n",
        "",
        "no_sync() inside no_sync() is taken (the outer one's exit then syncs)"),
    "buckets-no-sync-mid-step": (
        "ring/training/buckets.py",
        "            raise ValueError(\"no_sync(): a step is under way (ready() called, wait() "
        "not yet)\")",
        "            pass",
        "no_sync() entered with a step under way"),
    "buckets-density-one-refused": (
        "ring/training/topk.py",  # (a_density: the buckets', set_density's, the hook's)
        "and \\\n        0 < density <= 1\n",
        "and \\\n        0 < density < 1\n",
        "set_density(1) (dense again) is refused"),
    "buckets-unready-not-zeroed": (
        "ring/training/buckets.py",
        "                zero(self._flats[b][off:off + self._views[i].size])\n",
        "",
        "a gradient never marked ready is sent as what its bucket held, not zeros"),
    "buckets-first-cap-everywhere": (
        "ring/training/buckets.py",
        "                if self.buckets:\n                    cap = bucket_bytes\n",
        "",
        "every bucket is cut at first_bucket_bytes"),
    # the eleventh run's: the files with the fewest faults for their size
    "sim-shared-one-key": (
        "kernels/simulator.py",
        "line = traceback.extract_stack(sys._getframe(1), limit=1)[-1]",
        "line = traceback.extract_stack(sys._getframe(0), limit=1)[-1]",
        "every simulated shared array of a block is keyed by the patch's own line: one array"),
    "sim-shared-per-thread": (
        "kernels/simulator.py",
        "            found = self._allocations.get(caller)\n",
        "            found = None\n",
        "each simulated thread makes a shared array of its own"),
    "exchange-data-over-record": (
        "ring/transport/exchange.py",
        "        b = self._base(call) + RECORD * 8\n",
        "        b = self._base(call)\n",
        "a rank's data in the exchange window start over its call record"),
    "exchange-result-over-data": (
        "ring/transport/exchange.py",
        "b = self._base(call) + RECORD * 8 + self.cap",
        "b = self._base(call) + RECORD * 8",
        "a rank's result in the exchange window lies over its data"),
    "exchange-behind-posted": (
        "ring/transport/exchange.py",
        "self.heads[q][ROUND1] < call]",
        "self.heads[q][ROUND1] <= call]",
        "a timeout names as behind the ranks that have posted the call too"),
    "shm-recv-reads-early": (
        "ring/transport/shm.py",
        "        need = self.received + 1\n",
        "        need = self.received\n",
        "the receiver reads a slot before its chunk is posted"),
    "streams-bool-taken": (
        "ring/cuda/streams.py",
        "    if isinstance(stream, bool):\n        raise TypeError(f\"stream: expected a CUDA "
        "stream or its handle, got {stream!r}\")\n",
        "",
        "stream=True is taken as the handle 1"),
    "streams-protocol-property": (
        "ring/cuda/streams.py",
        "version, h = protocol() if callable(protocol) else protocol",
        "version, h = protocol()",
        "a __cuda_stream__ given as a (version, handle) attribute is called"),
    "streams-numba-null-handle": (
        "ring/cuda/streams.py",
        "            return int(h or 0)",
        "            return int(h)",
        "Numba's null stream handle (None) is not the default stream"),
    "streams-per-thread-swapped": (
        "ring/cuda/streams.py",
        "return PER_THREAD if getattr(config, \"CUDA_PER_THREAD_DEFAULT_STREAM\", False) "
        "else LEGACY",
        "return LEGACY if getattr(config, \"CUDA_PER_THREAD_DEFAULT_STREAM\", False) "
        "else PER_THREAD",
        "Numba's default stream is the per-thread one where Numba is set for the legacy one"),
    "arrays-bits-width-unchecked": (
        "ring/cuda/arrays.py",
        "if storage.itemsize != bits.itemsize or storage.kind not in \"iu\":",
        "if storage.kind not in \"iu\":",
        "dtype=\"bfloat16\" takes integer arrays of any width"),
    "arrays-dtype-mismatch-taken": (
        "ring/cuda/arrays.py",
        "if dtype is not None and parse_dtype(dtype, \"dtype\") != logical:",
        "if dtype is not None and parse_dtype(dtype, \"dtype\") != logical and False:",
        "a dtype= that is not the array's is taken (the array's own is used)"),
    "arrays-empty-like-flat": (
        "ring/cuda/arrays.py",
        "return out.reshape(shape) if len(shape) != 1 and hasattr(out, \"reshape\") else out",
        "return out",
        "an out the call allocates is 1-D whatever x's shape"),
    "dtypes-bits16-any-float": (
        "kernels/dtypes.py",
        "return self.floating and self.storage == np.uint16",
        "return self.floating",
        "every floating dtype is taken as 16-bit bits (paired loads)"),
    "model-best-of-worst": (
        "harness/model.py",
        "(old.get(\"time_us\") is None or t < old[\"time_us\"])",
        "(old.get(\"time_us\") is None or t > old[\"time_us\"])",
        "several sweeps merged keep each point's worst time"),
    "model-best-of-ranks-unchecked": (
        "harness/model.py",
        "if d[\"meta\"][\"ranks\"] != data[\"meta\"][\"ranks\"]:",
        "if False:",
        "sweeps of different rank counts are merged"),
    "model-series-in-place": (
        "harness/model.py",
        "if r.get(\"skipped\") or r[\"in_place\"] or not r[\"time_us\"]",
        "if r.get(\"skipped\") or not r[\"time_us\"]",
        "in-place results are fitted with the out-of-place ones"),
    "model-crossover-no-tie": (
        "harness/model.py",
        "faster = [an if ma[x] * (1 + tie) < mb[x] else bn if mb[x] * (1 + tie) < ma[x]",
        "faster = [an if ma[x] < mb[x] else bn if mb[x] < ma[x]",
        "a crossover is any change of the faster, however close the two"),
    "model-middle-segment-short": (
        "harness/model.py",
        "        if any(hi - lo < least for lo, hi in zip(bounds, bounds[1:])):\n"
        "            continue\n",
        "",
        "a middle regime of fewer than `least` sizes is fitted"),
    "model-predict-alpha-whole": (
        "harness/model.py",
        "t2 = steps(coll, k2) * (a / n_steps)",
        "t2 = steps(coll, k2) * a",
        "the prediction counts the whole alpha per ring step"),
    "plot-short-mode-dropped": (
        "harness/plot.py",
        "return f\"{head}, {mode}\" if mode else head",
        "return head",
        "a legend drops the mode NCCL ran in"),
    "plot-speedups-in-place": (
        "harness/plot.py",
        "if impl.startswith(\"ring\") or inplace:",
        "if impl.startswith(\"ring\"):",
        "speed-ups over in-place baselines, against out-of-place ring times"),
    "plot-tick-every-power": (
        "harness/plot.py",
        " and k % 10 in (0, 3, 6) else",
        " else",
        "every power of two gets a size label"),
    "half-hop-as-f16": (
        "ring/host/half.py",
        "_hop(KINDS[s.dtype], r.view(np.uint16)",
        "_hop(0, r.view(np.uint16)",
        "a compressed ring's passed-on sums are rounded to float16 whatever the wire"),
    "f16-ties-up": (
        "ring/host/half.py",
        "normal = _and(_shr(_add(_add(f, U(0xC8000FFF)), odd), U(13)), U(0xFFFF))",
        "normal = _and(_shr(_add(f, U(0xC8001000)), U(13)), U(0xFFFF))",
        "float32 -> float16 rounds ties up, not to even"),
    "bf16-nan-sign-lost": (
        "ring/host/half.py",
        "quiet = _or(_and(hi, U(0x8000)), U(0x7FC0))",
        "quiet = U(0x7FC0)",
        "float32 -> bfloat16 makes every NaN positive"),
    "oneshot-kernel-avg-every-step": (
        "ring/cuda/oneshot_kernel.py",
        "acc = last(acc, v, div) if q == k - 1 else mid(acc, v, div)",
        "acc = last(acc, v, div)",
        "the one-shot kernel's avg divides at every fold step"),
    "oneshot-kernel-one-parity": (
        "ring/cuda/oneshot_kernel.py",
        "mine_at = (seq & 1) * k * room",
        "mine_at = 0",
        "the one-shot kernel's calls all use one parity of the inboxes"),
    "sides-allgather-x": (
        "ring/cuda/backend.py",
        "return c.collective is not Collective.ALLGATHER, \\",
        "return True, \\",
        "the two-shot all-gather asks for its x to be registered too"),
    "comm-fast-last-algorithm": (
        "ring/communicator.py",
        "            self.last_algorithm = known.log[\"algorithm\"]\n",
        "",
        "a repeated host call leaves last_algorithm as it was"),
    "comm-fast-unbounded": (
        "ring/communicator.py",
        "        if len(self._fast) >= repeated.LIMIT:\n            self._fast.clear()\n",
        "",
        "the host's kept signatures grow without bound"),
    "comm-why-not-after-close": (
        "ring/communicator.py",
        "        self._usable()\n        return algorithms.why_not(",
        "        return algorithms.why_not(",
        "why_not() on a closed communicator is not refused"),
    "comm-barrier-unsynchronized": (
        "ring/communicator.py",
        "None, synchronize=True)",
        "None, synchronize=False)",
        "a barrier with check=False does not wait for the others"),
    "close-keeps-fast": (
        "ring/communicator.py",
        "        self._fast = self._kfast = None  # every later call takes the full path, which "
        "refuses it\n        ctx, self._ctx = self._ctx, None",
        "        ctx, self._ctx = self._ctx, None",
        "close() keeps the kept signatures: a repeated call after it is not refused"),
    # the twelfth campaign (2026-12-05): the files with the fewest faults for their lines
    "simipc-counter-names-swapped": (
        "ring/transport/simipc.py",
        '        name = {POSTED: f"the chunks posted to {self.who}",\n'
        '                ACKED: f"the chunks of {self.who} that its successor consumed"}[offset]',
        '        name = {ACKED: f"the chunks posted to {self.who}",\n'
        '                POSTED: f"the chunks of {self.who} that its successor consumed"}[offset]',
        "a simulated link's timeout names the other counter than the one it waited on"),
    "simipc-describe-any-pointer": (
        "ring/transport/simipc.py",
        "    return next((a for a, _ in _OWN.values() if a.holds(ptr, 1)), None)",
        "    return next((a for a, _ in _OWN.values()), None)",
        "the simulated driver says any pointer lies in this process's first shared allocation"),
    "shm-typed-one-dtype": (
        "ring/transport/shm.py",
        "        views = self.cache.get(dtype)\n",
        "        views = next(iter(self.cache.values()), None)\n",
        "the slots' typed views are those of the first dtype they carried, for every dtype"),
    "base-why-not-all-reduce-only": (
        "ring/algorithms/base.py",
        '        return f"it is an all-reduce algorithm; {collective} runs on the ring"',
        "        return None",
        "an algorithm that serves a collective on no device takes it"),
    "base-compressed-taken": (
        "ring/algorithms/base.py",
        "        return (\"the ring's slots carry the compressed wire: the flat ring, or the "
        "two-level \"\n                \"all-reduce across nodes\")",
        "        return None",
        "every algorithm takes a compressed wire (those without slots ignore it)"),
    "uint8-kernels-signed": (
        "kernels/dtypes.py",
        'KernelDtype("uint8", np.uint8, types.uint8,',
        'KernelDtype("uint8", np.int8, types.int8,',
        "uint8 reduced by the kernels as int8"),
    "float64-kernels-not-floating": (
        "kernels/dtypes.py",
        'KernelDtype("float64", np.float64, types.float64, identity, identity, True)',
        'KernelDtype("float64", np.float64, types.float64, identity, identity, False)',
        "the kernels take float64 for an integer type (no avg)"),
    "streams-reader-cached-once": (
        "ring/cuda/streams.py",
        "    read = _CURRENT.get(type(x))\n",
        "    read = next(iter(_CURRENT.values()), None)\n",
        "the first array library's current stream is read for arrays of every library"),
    "compiled-round-same-unchecked": (
        "ring/host/compiled_round.py",
        "            if oa - xa != plan[DELTA]:\n                return APART",
        "            if False:\n                return APART",
        "a kept in-place host call takes an out that is not x's in-place position"),
    "compiled-round-overlap-one-side": (
        "ring/host/compiled_round.py",
        "        elif oa < xa + xb and xa < oa + ob:",
        "        elif xa < oa < xa + xb:",
        "a kept host call takes an out that starts before x and runs into it"),
    "compiled-round-float8-wire": (
        "ring/host/compiled_round.py",
        "if dtype in HALF or dtype.isbuiltin != 1 else dtype",
        "if dtype in HALF else dtype",
        "the compiled round sees float8 (ml_dtypes) as itself, not as its bits"),
    "kept-drops-newest": (
        "ring/cuda/repeated.py",
        "        del kept[next(iter(kept))]",
        "        del kept[next(reversed(kept))]",
        "a full store of kept signatures drops its newest, not its oldest"),
    "kept-signature-without-dtype": (
        "ring/cuda/repeated.py",
        "    return (collective.value, op, root, chunk_bytes, algorithm, dtype, wx, wo)",
        "    return (collective.value, op, root, chunk_bytes, algorithm, wx, wo)",
        "a kept call's signature leaves out dtype=: the same arrays as another dtype replay "
        "the launch of the first"),
    "ipc-sender-waits-late": (
        "ring/transport/ipc.py",
        "        if u >= self.nslots:",
        "        if u > self.nslots:",
        "the stream path's sender writes its (nslots+1)-th chunk without waiting for its "
        "successor to have read the first"),
    "twoshot-narrow-lane-unmasked": (
        "ring/cuda/twoshot_kernel.py",
        "                r |= (types.uint32(acc) & MASK) << (i * BITS)",
        "                r |= types.uint32(acc) << (i * BITS)",
        "the two-shot's 1- and 2-byte lanes are packed back without their mask: a negative "
        "lane sets the bits of the lanes above it"),
    "twoshot-record-ignores-peers-x": (
        "ring/cuda/twoshot_kernel.py",
        "            if flags[me][pay] != rx:\n                ok[1] = 0\n",
        "",
        "the two-shot takes x in place where this rank's x is registered, whatever the "
        "peers' records say"),
    "twoshot-rs-alignment-unchecked": (
        "ring/cuda/twoshot_kernel.py",
        "                xa = xa and n % L == 0",
        "                xa = xa",
        "the two-shot reduce-scatter stages x's blocks in vectors though a block of n "
        "elements does not start 16-byte aligned"),
    "vector-aligned-at-8": (
        "kernels/vector.py",
        "    return all(a % BYTES == 0 for a in addresses)",
        "    return all(a % 8 == 0 for a in addresses)",
        "an array 8-byte aligned is taken for 16-byte vectors"),
    "registry-find-oldest-first": (
        "ring/transport/registry.py",
        "        for r in reversed(list(self.entries.values())):",
        "        for r in list(self.entries.values()):",
        "a buffer registered twice is found in its oldest registration"),
    "registry-remove-returns-stale": (
        "ring/transport/registry.py",
        "        return [r for r in gone if now is not None and now.ident == r.mine.ident]",
        "        return gone",
        "deregistering a new buffer at a freed registered address answers the stale "
        "registration"),
    "board-first-block-counts": (
        "ring/cuda/board.py",
        "    if cuda.atomic.add(state, 1, 1) == cuda.gridDim.x - 1:",
        "    if cuda.atomic.add(state, 1, 1) == 0:",
        "the call board counts a launch when its first block leaves, not its last"),
    "tuning-smallest-ranks-below": (
        "ring/tuning.py",
        "    k = ranks if ranks in known else known[-1]",
        "    k = ranks if ranks in known else known[0]",
        "auto falls back to the smallest measured rank count below, not the largest"),
    # the thirteenth campaign (2026-12-05): the next files with the fewest for their lines
    "fold-ignores-nranks": (
        "kernels/reduce.py",
        "    div = float(len(parts) if nranks is None else nranks)",
        "    div = float(len(parts))",
        "the GPU's fold divides avg by its number of parts whatever nranks says"),
    "take-max-strict": (
        "kernels/reduce.py",
        "    return a != a or (b == b and a >= b)",
        "    return a != a or (b == b and a > b)",
        "the GPU's max keeps the second input where the two compare equal (-0.0, +0.0)"),
    "reduce-copy-lengths-unchecked": (
        "kernels/reduce.py",
        "    if any(x.size != n for x in arrays):\n        raise ValueError(f\"reduce_copy: "
        "arrays differ",
        "    if False:\n        raise ValueError(f\"reduce_copy: arrays differ",
        "reduce_copy takes arrays of different lengths"),
    "torch-compress-undivided": (
        "ring/training/torch.py",
        "    wire = grads.to(dtype).div_(comm.size)",
        "    wire = grads.to(dtype)",
        "the bf16 / fp16 DDP hooks sum the gradients instead of averaging them"),
    "torch-blocks-dtype-unchecked": (
        "ring/training/torch.py",
        "            if t.numel() != x.numel() or t.dtype != x.dtype:",
        "            if t.numel() != x.numel():",
        "the torch backend takes a tensor list whose dtypes differ from the other argument's"),
    "topk-hook-layout-ignored": (
        "ring/training/torch.py",
        "    if had is not None and had[0] == layout:",
        "    if had is not None:",
        "the top-k hook keeps a bucket's residual where DDP has rebuilt the bucket in "
        "another order"),
    "register-one-rank": (
        "ring/cuda/backend.py",
        "        why = None if self.kernel is not None and self.comm.size > 1 else \\",
        "        why = None if self.kernel is not None else \\",
        "a communicator of one rank registers buffers (no peer to take them in place for)"),
    "entered-skips-ended": (
        "ring/cuda/backend.py",
        "        for h in list(self.streams.since):\n            self._ended(h)\n",
        "",
        "a call does not raise the error an earlier stream-ordered call's launch ended with "
        "before it agrees"),
    "executor-sends-from-x-in-place": (
        "ring/host/executor.py",
        "    return not (overlap and any(s.out for s in plan.steps))",
        "    return True",
        "across nodes a chunk is sent from x though x is out and written over (in place)"),
    "gpu-int8-zero-block-scale": (
        "kernels/quantize.py",
        "            scale = float32(1)",
        "            scale = float32(0)",
        "the GPU's int8 quantize gives a block of zeros the scale 0, not the host's 1"),
    "gpu-int8-nonfinite-one-thread": (
        "kernels/quantize.py",
        "                bad[t] = bad[t] | bad[t + half]",
        "                bad[t] = bad[t]",
        "the GPU's int8 quantize sees a block's inf or NaN only where thread 0 read it"),
    "gpu-int8-takes-2d": (
        "kernels/quantize.py",
        "    if np.dtype(a.dtype) != dtype or a.ndim != 1 or a.size != size:",
        "    if np.dtype(a.dtype) != dtype or a.size != size:",
        "the GPU's int8 kernels take a 2-D array of the right size without a clear error"),
    "meta-forgets-mps": (
        "harness/meta.py",
        '"FI_", "CUDA_MPS_", "NUMBA_ENABLE_CUDASIM")',
        '"FI_", "NUMBA_ENABLE_CUDASIM")',
        "a result file does not record the MPS settings that shared the GPU"),
    "meta-nccl-version-old-encoding": (
        "harness/meta.py",
        'out["nccl"] = f"{n // 10000}.{n // 100 % 100}.{n % 100}"',
        'out["nccl"] = f"{n // 1000}.{n // 100 % 10}.{n % 100}"',
        "NCCL's version read in its pre-2.9 encoding: 2.30.7 written as 23.0.7"),
    "roofline-link-in-copy-line": (
        "harness/roofline.py",
        '    if k.endswith("_GBps") and k != "link_GBps"]',
        '    if k.endswith("_GBps")]',
        "the link between nodes is printed among rank 0's copy rooflines"),
    "roofline-link-whole-nbytes": (
        "harness/roofline.py",
        "        gbps = link(world, partner, min(nbytes, LINK_BYTES))",
        "        gbps = link(world, partner, nbytes)",
        "the link is measured with the whole copy size, not at most LINK_BYTES, while the "
        "printed line says LINK_BYTES"),
    "walk-resumes-from-the-start": (
        "ring/host/compiled_walk.py",
        "    for u in range(link[UNIT], units.shape[0]):",
        "    for u in range(0, units.shape[0]):",
        "the compiled walk, resumed after a wait, starts again at the first unit"),
    "ends-outbound-by-predecessor": (
        "ring/transport/__init__.py",
        "    outbound = (near if topo.same_node(rank, succ) else far).outbound(succ)",
        "    outbound = (near if topo.same_node(pred, rank) else far).outbound(succ)",
        "a ring's outbound link chosen by where the predecessor is, not the successor"),
    "host-chunk-copies-none": (
        "ring/host/reduce.py",
        "    elif rbuf is not None:\n        np.copyto(target, rbuf)",
        "    else:\n        np.copyto(target, rbuf)",
        "a chunk received straight into the output is copied again from no slot"),
    "wire-forwards-the-divided-value": (
        "ring/host/reduce.py",
        "        if step.send:\n            np.copyto(sbuf, rbuf)",
        "        if step.send:\n            half.narrow(dst, sbuf)",
        "a 16-bit wire's all-gathered chunk is forwarded from the output (divided, for avg), "
        "not as it came"),
    "int8-shards-round-down": (
        "ring/training/int8_reduce.py",
        "    return quant_blocks(-(-n // k)) * QUANT_BLOCK",
        "    return quant_blocks(n // k) * QUANT_BLOCK",
        "int8's all-to-all shards are n / k rounded down: the K shards may not cover the bucket"),
    "scratch-never-grows": (
        "ring/transport/messages.py",
        "        if self.bufs[i].nbytes < nbytes:",
        "        if self.bufs[i].nbytes == 0:",
        "a whole-buffer algorithm's kept buffer is not grown for a larger call"),
    "impls-mpi-name-version-word": (
        "harness/impls.py",
        '    return first.replace(" Version:", "")',
        "    return first",
        "the MPI baseline's label keeps MPICH's \"Version:\" (\"MPICH Version: 4.3.0\")"),
    "impls-int8-buffers-once": (
        "harness/impls.py",
        "        if n not in self._buffers:",
        "        if not self._buffers:",
        "the harness's int8 wire keeps its first size's buffers for every size"),
    "agreement-long-values-shown-whole": (
        "ring/agreement.py",
        '    return text if len(text) <= 80 else text[:77] + "..."',
        "    return text",
        "a set-up's MismatchError shows a long value whole, not its first 77 characters"),
    "agreement-algorithm-not-last": (
        "ring/agreement.py",
        '    for i in sorted(range(len(FIELDS)), key=lambda i: FIELDS[i] == "algorithm"):',
        "    for i in range(len(FIELDS)):",
        "a MismatchError names the algorithm auto resolved before the field that made it "
        "differ"),
    # the sixteenth campaign (2026-12-05): vectors under the simulator, registration, the
    # GPU areas, the compiled poll, the kernel path's environment
    "vector-sim-accepts-8": (
        "kernels/vector.py", "        if at % BYTES:", "        if at % 8:",
        "the simulator's 16-byte vectors accept an address only 8-byte aligned (on a GPU: a "
        "misaligned vector load)"),
    "vector-sim-aligned16-at-start": (
        "kernels/vector.py", "        return _at(a, i) % BYTES == 0",
        "        return _at(a, 0) % BYTES == 0",
        "the simulator's aligned16(a, i) asks whether a[0] is aligned, not a[i]"),
    "register-why-not-ignored": (
        "ring/cuda/registered.py",
        "    if error is None and why_not is None and x.size:",
        "    if error is None and x.size:",
        "register maps the buffers though the two-shot kernel does not run (one rank, the "
        "stream path)"),
    "fold-one-rank-no-copy": (
        "ring/cuda/areas.py", "    if k == 1:\n        copy(out, parts(0), stream)\n",
        "    if k == 1:\n", "the areas' fold of one rank's part leaves out unwritten"),
    "areas-own-last": (
        "ring/cuda/areas.py", "        segments.insert(comm.rank, self.mine)",
        "        segments.append(self.mine)",
        "a rank's own area is listed last, not at its rank: rank q's view is another's"),
    "poll-yields-forever": (
        "ring/transport/atomic.py", "            yields -= 1\n", "",
        "the compiled poll yields without counting: past its spins it never hands the wait "
        "to the bounded one"),
    "kp-scope-across-gpus": (
        "ring/cuda/kernel_path.py", '    return one_gpu and scope == "gpu"',
        '    return scope == "gpu"',
        "the kernel's fences are GPU-scoped though a neighbour runs on another GPU"),
    "kp-mps-pipe-directory": (
        "ring/cuda/kernel_path.py",
        '    return os.path.exists(os.path.join(pipe, "control"))',
        "    return os.path.exists(pipe)",
        "MPS counts as running where its pipe directory exists, without the control pipe"),
    "cuda-alltoall-in-place-no-copy": (
        "ring/cuda/backend.py",
        "        return self.run(plan, op, self.copy_of(a), a, logical=logical, defer=defer)",
        "        return self.run(plan, op, a, a, logical=logical, defer=defer)",
        "the cuda device's in-place all-to-all sends from the array its blocks land in"),
    "oneshot-inbox-half": (
        "ring/cuda/oneshot_kernel.py", "2 * k * WORDS * 8", "k * WORDS * 8",
        "the one-shot kernel's inbox holds one call parity's words, not two"),
    "deregister-after-close": (
        "ring/communicator.py",
        '        self._usable()\n'
        '        return self.device == "cuda" and self._ctx.backend.deregister(x)',
        '        return self.device == "cuda" and self._ctx.backend.deregister(x)',
        "deregister answers on a closed or broken communicator"),
    "barrier-after-close": (
        "ring/communicator.py",
        '        self._usable()\n        ctx = self._ctx\n        ctx.calls += 1\n'
        '        name = f"barrier',
        '        ctx = self._ctx\n        ctx.calls += 1\n        name = f"barrier',
        "barrier runs on a closed or broken communicator"),
    "synchronize-after-close": (
        "ring/communicator.py",
        '        self._usable()\n        ctx = self._ctx\n        ctx.waiter.start(f"synchronize',
        '        ctx = self._ctx\n        ctx.waiter.start(f"synchronize',
        "synchronize runs on a closed or broken communicator"),
    "register-after-close": (
        "ring/communicator.py",
        '        self._usable()\n        ctx = self._ctx\n        ctx.waiter.start(f"register',
        '        ctx = self._ctx\n        ctx.waiter.start(f"register',
        "register runs on a closed or broken communicator"),
    "register-keeps-kept-calls": (
        "ring/communicator.py",
        "            if self._kfast:\n                self._kfast.clear()  # kept calls bound "
        "to stage what may now be registered\n",
        "",
        "a kept call goes on staging a buffer registered since it was kept"),
    "work-wait-unbroken": (
        "ring/communicator.py",
        "            except BaseException as e:\n                comm._broken(e)\n"
        "                raise\n            if unfinished:",
        "            except BaseException as e:\n                raise\n"
        "            if unfinished:",
        "a Work whose GPU work failed leaves the communicator usable"),
    # the seventeenth campaign (2026-12-05): the two-level layout, the buckets' spans, the
    # two-shot's vectors
    "hier-applies-any-order": (
        "ring/algorithms/hierarchical.py",
        "    if per * nodes != size or any(topo.node_of[r] != r // per for r in range(size)):",
        "    if per * nodes != size:",
        "the two-level algorithm takes nodes whose ranks are not consecutive (ranks placed "
        "round-robin)"),
    "hier-applies-one-per-node": (
        "ring/algorithms/hierarchical.py",
        '    if per == 1:\n        return "one rank per node: the flat ring is already the '
        'inter-node ring"\n', "",
        "the two-level algorithm runs with one rank per node, where it is the flat ring"),
    "hier-cross-order-reversed": (
        "ring/algorithms/hierarchical.py", "        col = comm.Split(self.local, key=self.node)",
        "        col = comm.Split(self.local, key=-self.node)",
        "the ring across nodes runs its nodes in reverse order"),
    "buckets-touching-counted-shared": (
        "ring/training/buckets.py",
        "        active = [(end, q) for end, q in active if end > lo]",
        "        active = [(end, q) for end, q in active if end >= lo]",
        "two buckets whose memories only touch count as sharing memory: both packed"),
    "buckets-span-over-a-gap": (
        "ring/training/buckets.py",
        "    if any(ends[j] + views[j].nbytes != ends[j + 1] for j in range(len(views) - 1)):",
        "    if any(ends[j] + views[j].nbytes > ends[j + 1] for j in range(len(views) - 1)):",
        "a bucket's gradients with a gap between them in one array are spanned as if end to "
        "end"),
    "twoshot-vreduce-out-unaligned": (
        "ring/cuda/twoshot_kernel.py",
        "        vreduce = (ok[3] != 0 or not inx) and (ok[4] != 0 or not ino)",
        "        vreduce = ok[3] != 0 or not inx",
        "the two-shot reduces in vectors into a registered out that is not 16-byte aligned "
        "on every rank"),
    # the eighteenth campaign (2026-12-05): the MPI links' flush and progress, the copy
    # kernel's tail
    "mpi-flush-returns-early": (
        "ring/transport/mpi.py",
        "        for i, req in enumerate(self.reqs):\n            if req is not None:\n"
        '                _wait(req, self.waiter, f"waiting for {self.peer} to take a message")\n'
        "                self.reqs[i] = None\n",
        "        pass\n",
        "a call across nodes returns with its sends still in flight (MPI may still read the "
        "caller's arrays, and the peer waits for this rank's next MPI call)"),
    "mpi-recv-no-progress": (
        "ring/transport/mpi.py",
        "        poke(req for req, _ in self.pending)",
        "        pass",
        "a receiver's progress() asks MPI nothing: its messages move only in its own waits"),
    "copy-tail-short": (
        "kernels/copy.py", "    while i < n:\n        dst[i] = src[i]",
        "    while i < n - 1:\n        dst[i] = src[i]",
        "the copy kernel leaves the last word of what its unrolled loop does not cover"),
    # the nineteenth campaign: the receiver's progress as it was before its test
    "mpi-recv-progress-oldest-only": (
        "ring/transport/mpi.py",
        "        poke(req for req, _ in self.pending)",
        "        if self.pending:\n            self.pending[0][0].Get_status()",
        "a receiver's progress() asks MPI about its oldest receive only, which MPICH answers "
        "without moving anything once that one has landed"),
    "staged-recv-progress-first-only": (
        "ring/transport/staged.py",
        "        poke(self.reqs)",
        "        for req in self.reqs:\n            if req is not None:\n                req.Get_status()\n"
        "                return",
        "the staged receiver's progress() asks MPI about its first buffer's receive only, "
        "which MPICH answers without moving anything once that one has landed"),
    # the nineteenth campaign, second part: files with few faults for their size
    "oneshot-across-nodes-every-collective": (
        "ring/algorithms/oneshot.py",
        "not (collective is Collective.ALLREDUCE\n                                         and ctx.device == \"host\")",
        "not ctx.device == \"host\"",
        "across nodes, the host's oneshot takes every collective, not the all-reduce only"),
    "twoshot-one-rank-halves-uncopied": (
        "ring/algorithms/twoshot.py", "                if not c.in_place:",
        "                if c.in_place:",
        "the cuda twoshot's reduce-scatter or all-gather on one rank leaves out unwritten"),
    "twoshot-kernel-sizes-capped": (
        "ring/algorithms/twoshot.py",
        "            return None  # the two-shot kernel: any size, in rounds of its areas",
        "            return too_big(collective, nbytes, ctx.size)",
        "the two-shot kernel is refused above the exchange's bytes, which it takes in rounds"),
    "walk-reduce-always-in-place": (
        "ring/host/compiled_walk.py",
        "                if s.ctypes.data == t.ctypes.data:  # in place",
        "                if True:  # in place",
        "the compiled walk reduces into its target as if the input were the target"),
    "half-bf16-prod-into-sums": (
        "ring/host/half.py", "            _loop_into(1, PROD, other, acc, True)",
        "            _loop_into(1, SUM, other, acc, True)",
        "a bfloat16 product into its first operand adds"),
    "bits-f16-subnormal-ties-up": (
        "kernels/bits.py",
        "        if rest > halfway or (rest == halfway and (half_sig & 1) == 1):",
        "        if rest >= halfway:",
        "float32 to a float16 subnormal rounds ties away from zero, not to even"),
    "bits-f16-nan-payload-dropped": (
        "kernels/bits.py", "            h = 0x7C00 + (sig >> 13)  # keep the top of the payload",
        "            h = 0x7E00  # keep the top of the payload",
        "float32 NaN to float16 drops the payload, which NumPy keeps"),
    "bits-f16-subnormal-exponent-off": (
        "kernels/bits.py", "        e = 113  # normalise a subnormal",
        "        e = 112  # normalise a subnormal",
        "float16 subnormals widen to half their value"),
    "bits-bf16-nan-sign-dropped": (
        "kernels/bits.py", "        return ((f >> 16) & 0x8000) | 0x7FC0",
        "        return 0x7FC0",
        "float32 NaN to bfloat16 loses its sign, which ml_dtypes keeps"),
    "bits-f16-underflow-edge": (
        "kernels/bits.py", "        if exp < 0x33000000:",
        "        if exp <= 0x33000000:",
        "float32 values between 2^-25 and 2^-24 go to zero, not to float16's least subnormal"),
    # the twentieth campaign
    "board-leave-no-reset": (
        "ring/cuda/board.py", "        state[1] = 0\n        state[0] += 1",
        "        state[0] += 1",
        "the call board's count of blocks left is never reset: only the first launch counts"),
    "board-wait-timeout-unreported": (
        "ring/cuda/board.py", "                if (word >> 32) != s:",
        "                if (word >> 32) > s:",
        "a board wait that timed out on an older word goes on to compare its record"),
    "deregister-empty-drops": (
        "ring/cuda/backend.py", "        if not self.registry or not d.size:",
        "        if not self.registry:",
        "deregister of an empty array drops the registration its address falls in"),
    "through-host-storage-unviewed": (
        "ring/cuda/backend.py",
        "        c.out.copy_to_device(out.view(storage_of(c.dtype)))",
        "        c.out.copy_to_device(out)",
        "the MPI algorithms' result goes back to the GPU in its logical dtype, not its storage"),
    # the twenty-first campaign: cma, the single copy by cross-memory attach
    "cma-no-closing-round": (
        "ring/algorithms/cma.py",
        "        ex.post(done)\n        ex.wait(done, what=what)",
        "        ex.post(done)",
        "a cma call returns (and its caller may write x) before every peer has read x"),
    "cma-in-place-posts-x": (
        "ring/transport/cma.py",
        "    if not (in_place and collective in WRITES_WHAT_IT_POSTS):",
        "    if True:",
        "in place, a rank posts the x it is about to overwrite, not a copy"),
    "cma-alltoall-copy-short": (
        "ring/transport/cma.py",
        "        np.copyto(into[(rank + 1) * b:], x[(rank + 1) * b:])\n",
        "",
        "an in-place all-to-all's posted copy leaves out the blocks after the rank's own"),
    "cma-fold-piece-unmoved": (
        "ring/algorithms/cma.py",
        "peer(q, start + a, ctx.scratch.get(PARTS + i, out, m))",
        "peer(q, start, ctx.scratch.get(PARTS + i, out, m))",
        "every piece of a fold reads its sources' first piece"),
    "cma-remote-offset-in-elements": (
        "ring/algorithms/cma.py", "cma.read(ex.pids[q], at[q] + lo * item, into)",
        "cma.read(ex.pids[q], at[q] + lo, into)",
        "a read from a peer's x starts its offset in elements, not bytes"),
    "cma-own-aliased-viewed": (
        "ring/algorithms/cma.py",
        "own(ctx.scratch, PARTS + i, mine[start + a:start + a + m], piece)",
        "mine[start + a:start + a + m]",
        "a fold takes the rank's own part as a view even where the fold writes it first"),
    "cma-failure-unshared": (
        "ring/transport/cma.py",
        "    failed = {q: e for q in range(ex.size) if (e := int(ex.record(q, seq)[0]))}",
        "    failed = {}",
        "a read that failed on a rank fails nothing: that rank's out is left as it was"),
    "cma-probe-own-answer": (
        "ring/transport/exchange.py",
        "        whys = [w for w in self.comm.allgather(why) if w is not None]",
        "        whys = [why] if why is not None else []",
        "each rank keeps its own probe's answer: the ranks disagree on whether cma runs"),
    "cma-probe-skipped": (
        "ring/transport/exchange.py", "        self.cma = self._probe()",
        "        self.cma = None",
        "cma is taken for possible without the probe: a refused read fails calls, not the choice"),
    "cma-pid-of-parent": (
        "ring/transport/exchange.py", "        self.heads[self.rank][PID] = os.getpid()",
        "        self.heads[self.rank][PID] = os.getppid()",
        "a rank posts its parent's process id: every read goes to the wrong process"),
    # the twenty-second campaign: cma's fast path and its all-reduce in two phases
    "cma-fast-close-unpolled": (
        "ring/host/compiled_cma.py",
        "            spins, yields = poll(plan[BASES + q] + ROUND1 * 8, seq, spins, yields)\n"
        "            if spins < 0:\n                return LATE",
        "            pass",
        "a kept cma call closes without waiting for its peers: its caller may write x while "
        "a peer still reads it"),
    "cma-fast-own-alias-unchecked": (
        "ring/host/compiled_cma.py",
        "                elif xa + there < dst + nbytes and dst < xa + there + nbytes:",
        "                elif False:",
        "a kept fold takes this rank's part straight from x even where out's piece is x's"),
    "cma-fast-piece-unmoved": (
        "ring/host/compiled_cma.py",
        "q, there = seg[2 + 2 * i], (seg[3 + 2 * i] + a) * item",
        "q, there = seg[2 + 2 * i], seg[3 + 2 * i] * item",
        "every piece of a kept fold reads its sources' first piece"),
    "cma-fast-statuses-ignored": (
        "ring/host/compiled_cma.py",
        "        if carray(pointer(plan[BASES + q] + slot), 1, np.int64)[0] != 0:",
        "        if False:",
        "a kept call whose read failed on a rank fails nothing"),
    "cma-fast-errno-dropped": (
        "ring/host/compiled_cma.py",
        "            return _errno() if got < 0 else SHORT",
        "            return 0",
        "a kept call's refused read counts as done"),
    "cma-fast-own-block-uncopied": (
        "ring/host/compiled_cma.py",
        "            elif oa + lo * item != xa + there:",
        "            elif False:",
        "a kept copy leaves this rank's own block of out unwritten"),
    "cma-fast-in-place-posts-x": (
        "ring/host/repeated_cma.py",
        "        self.copies = in_place and not in_halves and collective in "
        "cma.WRITES_WHAT_IT_POSTS",
        "        self.copies = False",
        "a kept in-place call posts the x it is about to overwrite, not a copy"),
    "cma-fast-gather-from-x": (
        "ring/host/repeated_cma.py",
        "compiled_cma.rest(self.gather, flat_x, flat_out, seq, 1, pids",
        "compiled_cma.rest(self.gather, flat_x, flat_out, seq, 0, pids",
        "a kept all-reduce's second phase reads the owners' x, not their reduced out"),
    "cma-fast-late-round-stale": (
        "ring/host/repeated_cma.py", "            ex.wait(seq, what=what)",
        "            ex.wait(seq - 1, what=what)",
        "a kept call's round not seen complete in the poll is taken for complete"),
    "cma-halves-no-middle-round": (
        "ring/algorithms/cma.py",
        "            self._round(ctx, self._follow(ctx, c, out, at(0), mine), cma.REDUCED)",
        "            self._follow(ctx, c, out, at(0), mine)",
        "an all-reduce's second phase reads the owners' out before they have reduced it"),
    "cma-halves-posts-no-out": (
        "ring/algorithms/cma.py",
        "        return np.array([posted(ctx, c).ctypes.data, 0 if out is None else "
        "out.ctypes.data],",
        "        return np.array([posted(ctx, c).ctypes.data, posted(ctx, c).ctypes.data],",
        "a rank posts x's address where the peers read its out"),
    "recipe-halves-short-blocks-skipped": (
        "ring/recipe.py", "                  if q != rank and b[q + 1] > b[q]]",
        "                  if q != rank and b[q + 1] > b[q] + 1]",
        "the all-reduce's second phase leaves out blocks of one element"),
    # the twenty-third campaign: cma's reduce in two phases
    "recipe-halves-reduce-rank-order": (
        "ring/recipe.py",
        "    order = range(k) if root is None else ring_order(root, k)",
        "    order = range(k)",
        "a reduce in two phases folds in rank order, not the ring's for its root"),
    "cma-reduce-root-partial": (
        "ring/algorithms/cma.py",
        "    if c.collective is Collective.REDUCE and ctx.rank != c.root and in_halves(ctx, c):",
        "    if c.collective is Collective.REDUCE and in_halves(ctx, c):",
        "a reduce's root folds its block into the buffer the other ranks use, not its out"),
    "cma-reduce-partial-into-out": (
        "ring/algorithms/cma.py",
        "    if c.collective is Collective.REDUCE and ctx.rank != c.root and in_halves(ctx, c):",
        "    if c.out is None and c.collective is Collective.REDUCE and in_halves(ctx, c):",
        "a rank off a reduce's root writes its block into an out it was given"),
    "cma-halves-in-place-disagreed": (
        "ring/algorithms/cma.py",
        "    if c.in_place and c.collective is Collective.ALLREDUCE:",
        "    if c.in_place:",
        "the ranks of a reduce choose one or two phases by the root's in place alone"),
    "cma-fast-reduce-root-partial": (
        "ring/host/repeated_cma.py",
        "        self.partial = in_halves and reduce and ex.rank != root",
        "        self.partial = in_halves and reduce",
        "a kept reduce's root folds its block into the buffer the other ranks use"),
    "cma-fast-reduce-partial-into-x": (
        "ring/host/repeated_cma.py",
        "        if self.partial:  # (its block of a reduce, read by the root: cma.target's)",
        "        if False:",
        "a kept reduce's rank off the root writes its block into its own x"),
    "cma-reduce-posts-out": (
        "ring/algorithms/cma.py",
        "        out = target(ctx, c)\n        return np.array(",
        "        out = c.out\n        return np.array(",
        "a rank off a reduce's root posts no address for the block the root reads"),
    # the twenty-fifth campaign: rules for calls in place, the empty call kept
    "tuning-in-place-ignored": (
        "ring/tuning.py",
        "    placed = in_place and any(r.get(\"in_place\") for r in mine)",
        "    placed = False",
        "an in-place call takes the layout's out-of-place rules though it has in-place ones"),
    "tuning-in-place-rules-mixed": (
        "ring/tuning.py",
        "            if r.get(\"in_place\", False) == placed]",
        "            ]",
        "a layout's in-place and out-of-place rules serve every call, in the table's order"),
    "tuning-rooted-in-place-accepted": (
        "ring/tuning.py",
        "            if \"in_place\" in r and r.get(\"collective\", ALLREDUCE) in ROOTED:",
        "            if False:",
        "a table whose rule of a rooted collective says in_place loads"),
    "tune-in-place-unplaced": (
        "harness/tune.py",
        "            if in_place:",
        "            if False:",
        "tune -I times the calls out of place"),
    "tune-in-place-rules-unnamed": (
        "harness/tune.py",
        "        named[\"in_place\"] = True",
        "        pass",
        "tune -I writes rules without in_place, for every call"),
    "tune-merge-in-place-replaces-all": (
        "harness/tune.py",
        "r.get(\"registered\"), r.get(\"in_place\", False)) != this]",
        "r.get(\"registered\"), args.in_place) != this]",
        "a merged tune -I drops the layout's out-of-place rules (and a run without -I its "
        "in-place ones)"),
    "empty-call-not-kept": (
        "ring/communicator.py",
        "                and (c.count or c.algorithm == \"oneshot\"):",
        "                and c.count:",
        "a repeated empty call takes the full path every time"),
    "compiled-round-empty-aliased": (
        "ring/host/compiled_round.py",
        "    if memory != ANY and x.size and out.size:",
        "    if memory != ANY:",
        "empty views at one address are taken for aliased memory (an in-place empty call "
        "never kept)"),
    # the twenty-sixth campaign: the fast path's signatures, leaner, MPI's in-place views
    "signature-other-unflipped": (
        "ring/host/repeated.py",
        "    return k[:3] + (3 - k[3],) + k[4:]",
        "    return k",
        "the signature tried second is the first again (in place after apart never kept)"),
    "key-of-in-place-unguessed": (
        "ring/host/repeated.py",
        "        kind, shape = _kind(x, out), out.shape",
        "        kind, shape = 2, out.shape",
        "MPI's in-place views are looked up apart first (a failed compiled call each time)"),
    "kind-guess-one-arrays-views-apart": (
        "ring/host/repeated.py",
        "    return 1 if xb is out or ob is x or xb is not None and xb is ob else 2",
        "    return 1 if xb is out or ob is x else 2",
        "views of one array in place (the harness's places) are looked up apart first"),
    "learnt-allreduce-views-apart-as-guessed": (
        "ring/host/repeated.py",
        "        return k[:3] + (2 if at else 1,) + k[4:], None, 0",
        "        return k, None, 0",
        "an all-reduce by views of one array apart is kept in place, as guessed: never fast"),
    "learnt-allreduce-kind-swapped": (
        "ring/host/repeated.py",
        "        return k[:3] + (2 if at else 1,) + k[4:], None, 0",
        "        return k[:3] + (1 if at else 2,) + k[4:], None, 0",
        "an all-reduce is kept by the other kind than out's address shows"),
    "learnt-apart-kept-as-guessed": (
        "ring/host/repeated.py",
        "    return (other(k) if k[3] == 1 else k), compiled_round.OWN, 0",
        "    return k, compiled_round.OWN, 0",
        "a call apart from x is kept where key_of guessed in place"),
    "fast-call-no-retry": (
        "ring/communicator.py",
        "            if result is elsewhere and out is not None and out is not x:",
        "            if False:",
        "an out that is another view of x's memory never finds its in-place signature"),
    "key-options-op-unchecked": (
        "ring/host/repeated.py",
        "    if type(x) is not np.ndarray or not (chunk_bytes is algorithm is dtype is None\n"
        "                                         and type(op) is str\n",
        "    if type(x) is not np.ndarray or not (chunk_bytes is algorithm is dtype is None\n"
        "                                         and True\n",
        "an op of any type (a list) is keyed: TypeError (unhashable) instead of the full "
        "path's error"),
    # the twenty-seventh campaign: cma's kept call in one dispatch
    "cma-whole-reads-nothing": (
        "ring/host/compiled_cma.py",
        "    return rest(plan, x, out, seq, 0, pids, parts, piece, spins, yields, seq + 1)",
        "    return DONE",
        "a kept cma call whose peers are there in the poll reads nothing and never closes"),
    "cma-whole-closes-agreement-round": (
        "ring/host/compiled_cma.py",
        "    return rest(plan, x, out, seq, 0, pids, parts, piece, spins, yields, seq + 1)",
        "    return rest(plan, x, out, seq, 0, pids, parts, piece, spins, yields, seq)",
        "a kept call closes as the agreement's round: a peer still reading is taken for done"),
    "cma-kept-waiting-taken-for-done": (
        "ring/host/repeated_cma.py",
        "        named = status == compiled_round.WAITING or status == compiled_round.MISMATCH",
        "        named = status == compiled_round.MISMATCH",
        "a kept call whose agreement the poll did not see complete goes on without it, "
        "reading nothing"),
    "cma-kept-round-unadvanced": (
        "ring/host/repeated_cma.py",
        "                ex.seq = seq + 1",
        "                ex.seq = seq",
        "a kept call's closing round is not counted: the next call posts it again"),
    "cma-kept-parts-none": (
        "ring/host/repeated_cma.py",
        "        parts = ctx.scratch.get(PARTS, BYTES, self.parts) if self.parts else BYTES",
        "        parts = BYTES",
        "a kept fold reads its pieces into no room"),
    # the thirtieth campaign: the two-shot kernel's records, tails and sequence numbers;
    # the device-side waits; the emulated nodes' layout
    "twoshot-record-ignores-peers-alignment": (
        "ring/cuda/twoshot_kernel.py",
        "ok[3], ok[4] = ok[3] & theirs, ok[4] & (theirs >> 1)",
        "ok[3], ok[4] = ok[3], ok[4]",
        "the two-shot reduces registered buffers in vectors where this rank's x and out are "
        "16-byte aligned, whatever the peers' records say of theirs"),
    "twoshot-record-ignores-peers-out": (
        "ring/cuda/twoshot_kernel.py",
        "            if flags[me][pay + 2] != ro:\n                ok[2] = 0\n",
        "",
        "the two-shot takes out in place where this rank's out is registered, whatever the "
        "peers' records say"),
    "twoshot-tail-written-own-only": (
        "ring/cuda/twoshot_kernel.py",
        "                    else:\n                        outs[p][e] = acc",
        "                    elif p == me:\n                        outs[p][e] = acc",
        "the two-shot all-reduce writes the elements of its block left after the vectors "
        "into its own output area only, not the peers'"),
    "twoshot-seq-not-kept": (
        "ring/cuda/twoshot_kernel.py",
        "            seqs[cuda.blockIdx.x] = seq",
        "            seqs[cuda.blockIdx.x] = seqs[cuda.blockIdx.x]",
        "the two-shot kernels never keep their blocks' sequence numbers: every call flags and "
        "waits for the first call's numbers, which the peers' flags already carry"),
    "twoshot-copy-vectors-past-the-end": (
        "ring/cuda/twoshot_kernel.py",
        "full = lo + (hi - lo) // L * L if vec else lo",
        "full = lo + (hi - lo + L - 1) // L * L if vec else lo",
        "the two-shot's copies move whole 16-byte vectors up to past the slice's end, where a "
        "round's last few elements must go one at a time"),
    "spin-flag-in-low-bits": (
        "kernels/spin.py",
        "        return (word >> 32) == flag",
        "        return (word & 0xFFFFFFFF) == flag",
        "an LL word's flag is looked for in its value's bits instead of the high 32"),
    "spin-wait-ignores-error-word": (
        "kernels/spin.py",
        "                    if load(err, 0) != 0 or now() - start > timeout_ns:",
        "                    if now() - start > timeout_ns:",
        "a device-side wait (sync's) runs to its timeout though another block has raised the "
        "error word"),
    "spin-fenced-wait-ignores-error-word": (
        "kernels/spin.py",
        "        if read(err, 0) != 0 or now() - start > timeout_ns:",
        "        if now() - start > timeout_ns:",
        "the first hand-off's wait (RING_KERNEL_SYNC=fence) runs to its timeout though "
        "another block has raised the error word"),
    "topology-emulated-round-robin": (
        "ring/topology.py",
        "        color = shared.rank * min(n, shared.size) // shared.size",
        "        color = shared.rank % min(n, shared.size)",
        "RING_NODES deals a machine's ranks to emulated nodes round robin, not in runs of "
        "consecutive ranks"),
    # the thirty-first campaign: the GPU's 16-byte vectors' lanes (kernels/vector.py's IR,
    # which only a GPU ran before tests/test_vector_lanes.py ran it on the host)
    "vector-unpack-word-of-lane": (
        "kernels/vector.py",
        "        w = builder.extract_element(words, ir.Constant(I32, u // per))",
        "        w = builder.extract_element(words, ir.Constant(I32, u % per))",
        "load16 takes a lane narrower than 8 bytes from the wrong one of the vector's words"),
    "vector-unpack-bits-of-lane": (
        "kernels/vector.py",
        "builder.lshr(w, ir.Constant(I32, (u % per) * bits))",
        "builder.lshr(w, ir.Constant(I32, (u // per) * bits))",
        "load16 shifts a lane narrower than 4 bytes out of the wrong bits of its word"),
    "vector-unpack-64-halves-swapped": (
        "kernels/vector.py",
        "builder.extract_element(words, ir.Constant(I32, 2 * u + h)),",
        "builder.extract_element(words, ir.Constant(I32, 2 * u + 1 - h)),",
        "load16 puts an 8-byte lane's low word in its high half and its high word low"),
    "vector-pack-64-halves-swapped": (
        "kernels/vector.py",
        "builder.lshr(v, ir.Constant(whole, 32 * h))",
        "builder.lshr(v, ir.Constant(whole, 32 * (1 - h)))",
        "store16 writes an 8-byte lane's high word first"),
    "vector-pack-lanes-reversed-in-word": (
        "kernels/vector.py",
        "builder.shl(builder.zext(v, I32), ir.Constant(I32, j * bits))",
        "builder.shl(builder.zext(v, I32), ir.Constant(I32, (per - 1 - j) * bits))",
        "store16 packs the lanes of a word in big-endian order"),
    "vector-pack-lanes-transposed": (
        "kernels/vector.py",
        "            v = ints[wi * per + j]",
        "            v = ints[j * 4 + wi]",
        "store16 deals lanes narrower than 4 bytes to the words round robin, not in runs"),
    "vector-aligned16-eight-bytes": (
        "kernels/vector.py",
        "    low = builder.and_(at, ir.Constant(ir.IntType(64), BYTES - 1))",
        "    low = builder.and_(at, ir.Constant(ir.IntType(64), BYTES // 2 - 1))",
        "a GPU kernel's aligned16 takes an address 8-byte aligned for a vector's"),
    # and the stream path's receiver, int8's shards
    "ipc-receiver-reads-early": (
        "ring/transport/ipc.py",
        "        self.posted.wait_geq(stream, u + 1)",
        "        self.posted.wait_geq(stream, u)",
        "the stream path's receiver reads a slot once its predecessor has posted the chunk "
        "before, not this one"),
    "int8-compact-from-packed-offsets": (
        "ring/training/int8_reduce.py",
        "self.recv[q * self.msg:q * self.msg + mine])",
        "self.recv[q * mine:(q + 1) * mine])",
        "int8's all-to-all reads a short shard's K messages back to back from the received "
        "slots, not each from the start of its slot"),
    "int8-alltoall-residual-from-the-start": (
        "ring/training/int8_reduce.py",
        "None if self.residual is None else self.residual[lo:hi])",
        "None if self.residual is None else self.residual[:hi - lo])",
        "int8's all-to-all keeps every shard's rounding error in the residual's first "
        "values: the shards' errors added up in one place, the others' lost"),
    # and the MPI baseline's rooted calls in the harness
    "mpi-broadcast-root-out-unfilled": (
        "harness/impls.py",
        "                if ho is not hx and at_root:\n                    ho[...] = hx\n",
        "",
        "the MPI baseline's out-of-place broadcast sends the root's out as it found it, not "
        "x"),
    "mpi-gather-in-place-sends-x": (
        "harness/impls.py",
        "c.Gather(MPI.IN_PLACE if in_place and at_root else hx,",
        "c.Gather(hx,",
        "the MPI baseline's in-place gather at the root passes its block as the send buffer "
        "inside the receive buffer (MPI forbids the alias), not MPI_IN_PLACE"),
    # the thirty-second campaign: the host executor's direct links, top-k's selection and
    # the state it keeps
    "executor-gate-skips-first-block": (
        "ring/host/executor.py",
        "gate = {s.block: i for i, s in enumerate(plan.steps[:plan.size])}",
        "gate = {s.block: i for i, s in enumerate(plan.steps[1:plan.size])}",
        "an all-reduce in place through MPI posts the receive of the block it sends first "
        "before it has read that block of x"),
    "executor-gate-first-chunk-only": (
        "ring/host/executor.py",
        "into.append((view, j * n + gate[step.block]))",
        "into.append((view, gate[step.block]))",
        "an all-reduce in place through MPI posts every chunk's receive once the first "
        "chunk of its block has been read from x, not that chunk"),
    "executor-direct-with-a-wire": (
        "ring/host/executor.py",
        "    direct = wire is None and plan.max_chunk * itemsize >= DIRECT_MIN_BYTES",
        "    direct = plan.max_chunk * itemsize >= DIRECT_MIN_BYTES",
        "chunks of a 16-bit wire go through MPI straight from and into the float32 arrays"),
    "executor-receives-over-x": (
        "ring/host/executor.py",
        "if not step.out or step.reduce or (gate is None and np.may_share_memory(view, x)):",
        "if not step.out or step.reduce:",
        "a call whose out overlaps x (not an all-reduce exactly in place) receives straight "
        "into out over x it has yet to read"),
    "executor-in-place-keeps-predecessors": (
        "ring/host/executor.py",
        "    kept = {(plan.rank + d) % k for d in alltoall_overwritten(k)}",
        "    kept = {(plan.rank - d) % k for d in alltoall_overwritten(k)}",
        "an all-to-all in place copies aside the blocks of the predecessors it is written "
        "over from, not of the successors"),
    "executor-timeout-names-the-unit": (
        "ring/host/executor.py",
        "            waiter.at = (j, i % len(plan.steps))",
        "            waiter.at = (j, i)",
        "a host timeout names the unit's index for its step (chunk 1 step 5 for step 1 of "
        "4)"),
    "topk-above-skips-nan": (
        "ring/training/topk.py",
        "        if not abs(v[i]) < t:  # (NaN too",
        "        if abs(v[i]) >= t:  # (NaN too",
        "top-k's candidate pass never takes a NaN, which the selection ranks largest"),
    "topk-nan-not-largest": (
        "ring/training/topk.py",
        "    mag[np.isnan(mag)] = np.inf\n",
        "",
        "top-k ranks a NaN's magnitude where NumPy's partition and comparisons place it, "
        "not as the largest"),
    "topk-k-rounds-down": (
        "ring/training/topk.py",
        "min(n, max(1, int(round(n * density))))",
        "min(n, max(1, int(n * density)))",
        "a bucket's k is density x n rounded down, not to the nearest"),
    "topk-density-clears-residual": (
        "ring/training/topk.py",
        "            self.k = k\n            self.message = zeros(2 * k, np.int32)",
        "            self.k = k\n            if self.residual is not None:\n"
        "                self.residual = zeros(self.flat.size, np.float32)\n"
        "            self.message = zeros(2 * k, np.int32)",
        "a new density (the sparsity's warm-up) drops what the ranks still owed"),
    "topk-local-velocity-scales-gradient": (
        "ring/training/topk.py",
        "            self.velocity *= self.momentum\n            self.velocity += self.flat\n",
        "            self.velocity += self.flat\n            self.velocity *= self.momentum\n",
        "local momentum's velocity is m (u + g), not m u + g"),
    "topk-op-change-unchecked": (
        "ring/training/topk.py",
        "            if self._avg is not None and avg != self._avg:",
        "            if False:",
        "global momentum takes a step of sum after avg (or avg after sum) with the other's "
        "share of the momentum, silently"),
    # the thirty-third campaign: ring.Group's and the casts' checks and loops, the host's
    # bfloat16 settle, registration's refusals and spans, the torch backend's lists and barrier
    "group-devices-length-unchecked": (
        "ring/cuda/group.py",
        "if given is None or len(given) != self.size or any(",
        "if given is None or any(",
        "ring.Group takes a devices list shorter or longer than its ranks"),
    "group-slots-unchecked": (
        "ring/cuda/group.py",
        "        check_slots(chunk_bytes, nslots)\n        timeout = check_timeout(timeout)",
        "        timeout = check_timeout(timeout)",
        "ring.Group takes any chunk_bytes and nslots (one slot, a chunk of no bytes)"),
    "cast-stride-doubled": (
        "kernels/casts.py",
        "            out[i] = fn(x[i])\n            i += s",
        "            out[i] = fn(x[i])\n            i += 2 * s",
        "the GPU's wire casts step twice the grid's size: past the first pass, every other "
        "stride of elements is never cast"),
    "scale-by-reciprocal": (
        "kernels/casts.py",
        "        a[i] = a[i] * factor  # (float32 x float32",
        "        a[i] = a[i] / (np.float32(1) / factor)  # (float32 x float32",
        "the GPU's scale divides by the factor's reciprocal: two roundings, not NumPy's one"),
    "half-settle-overlap-one-loop": (
        "ring/host/half.py",
        "    if s.dtype == BF16 and (same or not np.may_share_memory(x, out)):",
        "    if s.dtype == BF16:",
        "the bfloat16 settle runs its one loop where out overlaps x elsewhere than exactly: a "
        "later x read after out was written over it"),
    "register-shared-process-taken": (
        "ring/cuda/registered.py",
        "len({p for _, p, _, _, _ in everyone}) < comm.size:",
        "len({p for _, p, _, _, _ in everyone}) < 1:",
        "register maps buffers where two ranks share a process (the process would map its "
        "own memory through IPC)"),
    "register-span-short": (
        "ring/cuda/registered.py",
        "    reg.add(alloc, ptr, ptr + nbytes, views)",
        "    reg.add(alloc, ptr, ptr + nbytes - 1, views)",
        "a registration covers its buffer less its last byte"),
    "torch-reduce-scatter-list-reversed": (
        "ring/training/torch.py",
        "return self.reduce_scatter_single(outs[0], torch.cat([t.reshape(-1) for t in xs[0]]),",
        "return self.reduce_scatter_single(outs[0], torch.cat([t.reshape(-1) for t in "
        "reversed(xs[0])]),",
        "the torch backend's reduce_scatter concatenates a rank's input list last first"),
    "torch-barrier-noop": (
        "ring/training/torch.py",
        '        self._comms["host"].barrier()\n        return _done([])',
        "        return _done([])",
        "the torch backend's barrier returns at once, waiting for no rank"),
    # the thirty-fourth campaign: the IPC segments' layout and reuse, the cuda backend's
    # block swaps (cuda-deregister-keeps-launches, equivalent: results/mutants-since.md)
    "ipc-slots-overlap": (
        "ring/transport/ipc.py",
        "        return [self.mem[HEADER + i * b:HEADER + (i + 1) * b] "
        "for i in range(self.nslots)]",
        "        return [self.mem[HEADER + i * b // 2:HEADER + i * b // 2 + b]\n"
        "                for i in range(self.nslots)]",
        "a segment's slots start half a slot apart: each overlaps the next"),
    "ipc-kernel-stride-overlaps": (
        "ring/transport/ipc.py",
        "KERNEL_BASE, KERNEL_STRIDE, KERNEL_ACKED, KERNEL_TOTALS = 32, 48, 16, 32",
        "KERNEL_BASE, KERNEL_STRIDE, KERNEL_ACKED, KERNEL_TOTALS = 32, 32, 16, 32",
        "the persistent kernel's channels' counter lines 32 words apart: a channel's totals "
        "are the next channel's POSTED counter"),
    "ipc-spare-not-cleared": (
        "ring/transport/ipc.py",
        "SPARES = Spares(zeroed, clear)",
        "SPARES = Spares(zeroed, lambda mem: None)",
        "a closed communicator's segment comes back for the next one with its counters and "
        "flags as they were"),
    "cuda-swap-blocks-untransposed": (
        "ring/cuda/backend.py",
        "                          src[(i * cols + j) * b:(i * cols + j + 1) * b])",
        "                          src[(j * rows + i) * b:(j * rows + i + 1) * b])",
        "the cuda device's block swap (the two-level all-to-all's) copies each block to its "
        "own place"),
    # the thirty-fifth campaign
    "pack-one-short-accepted": (
        "kernels/pack.py", "    if total > buf.size:", "    if total > buf.size + 1:",
        "the GPU's pack takes a bucket one element short of its arrays (the last element is "
        "written past the buffer's end)"),
    "shm-ack-one-early": (
        "ring/transport/shm.py", "        self.acked[0] = self.received",
        "        self.acked[0] = self.received + 1",
        "the shared-memory receiver frees a slot one chunk early: the sender may overwrite "
        "the chunk it reads next"),
    "buckets-unready-bucket-never-starts": (
        "ring/training/buckets.py",
        "                zero(self._flats[b][off:off + self._views[i].size])\n"
        "                self._pending[b] -= 1\n",
        "                zero(self._flats[b][off:off + self._views[i].size])\n",
        "a bucket with a gradient never marked ready is never started by wait(): its "
        "gradients keep this rank's values"),
    "oneshot-inbox-one-over": (
        "ring/cuda/oneshot_kernel.py",
        "    return count * words_per_element(itemsize) <= WORDS",
        "    return count * words_per_element(itemsize) <= WORDS + words_per_element(itemsize)",
        "the one-shot kernel takes a call one element longer than a sender's place in the "
        "inbox: its last element lands in the next sender's place"),
    # the thirty-sixth campaign
    "reduce-copy-views-any-dtype": (
        "kernels/reduce.py", "    if np.dtype(a.dtype).name != kd.name:", "    if False:",
        "reduce_copy and fold read an array of any dtype as the call's bits (an int32 input "
        "to a float32 sum)"),
    "pack-strided-unbounded": (
        "kernels/pack.py", "    if view.size > buf.size:",
        "    if view.size > buf.size + view.shape[1]:",
        "pack_strided takes a view a row longer than its buffer (a GPU's kernel writes past "
        "the buffer's end)"),
    "buckets-ready-negative-taken": (
        "ring/training/buckets.py", "        if not 0 <= i < len(self._marked):",
        "        if i >= len(self._marked):",
        "GradientBuckets.ready(-1) marks the last gradient"),
    "twoshot-halves-one-rank-no-copy": (
        "ring/algorithms/twoshot.py",
        "                if not c.in_place:\n                    ctx.backend.copy(c.out, c.x)\n",
        "                if False:\n                    ctx.backend.copy(c.out, c.x)\n",
        "the cuda device's twoshot reduce-scatter / all-gather on one rank leaves out unwritten"),
    "oneshot-kernel-seqs-one-block": (
        "ring/cuda/oneshot_kernel.py", "            seqs[b] = seq", "            seqs[0] = seq",
        "the one-shot kernel's blocks all write their sequence number into block 0's: block "
        "0's goes back, the others' never move on (a stale word carries the call's flag)"),
    # the thirty-seventh campaign: tools/acceptance.py (which decides issues 52 and 53),
    # and the argument checks of that session
    "acceptance-vs-min-at-two": (
        "tools/acceptance.py", "            if k == 4:\n                ok = top[\"vs_min\"]",
        "            if k == 2:\n                ok = top[\"vs_min\"]",
        "issue 53's 256 MiB point (0.75 of the 2N minimum) read at 2 processes, not 4"),
    "acceptance-alone-need-lower": (
        "tools/acceptance.py", "1.0 if k == 2 else 0.95)", "1.0 if k == 2 else 0.9)",
        "the ring alone needs 0.9x NCCL at 4 processes, not 0.95x"),
    "acceptance-ratio-boundary": (
        "tools/acceptance.py", "    ok = got[worst] >= need", "    ok = got[worst] > need",
        "a ratio exactly at a point's need fails it"),
    "acceptance-vs-min-boundary": (
        "tools/acceptance.py", "ok = top[\"vs_min\"] >= 0.75", "ok = top[\"vs_min\"] > 0.75",
        "0.75 of the 2N minimum exactly fails the point"),
    "acceptance-best-size": (
        "tools/acceptance.py", "    worst = min(got, key=got.get)",
        "    worst = max(got, key=got.get)",
        "a point reads its best size's ratio, not its worst"),
    "acceptance-in-place-read": (
        "tools/acceptance.py", "                or r[\"in_place\"] or r.get(\"skipped\")",
        "                or r.get(\"skipped\")",
        "in-place rows read too: a size's time is whichever row came last"),
    "harness-names-twice": (
        "harness/__main__.py", "    names = list(dict.fromkeys(names))  # each once",
        "    names = list(names)  # each once",
        "an implementation named twice runs twice: its two columns show the second's figures"),
    "group-stream-unchecked": (
        "ring/cuda/group.py", "    h = handle(stream)\n", "    h = 0\n",
        "Group takes any stream= (a string, a negative handle) as the default stream"),
    "model-zero-link-kept": (
        "harness/model.py", "(math.isfinite(link) and link > 0)",
        "(math.isfinite(link) and link >= 0)",
        "a prediction at a link rate of 0 is not refused (a ZeroDivisionError)"),
    "tensors-e5m2-as-bytes": (
        "ring/training/tensors.py",
        'BITS = {"bfloat16": "int16", "float8_e4m3fn": "uint8", "float8_e5m2": "uint8"}',
        'BITS = {"bfloat16": "int16", "float8_e4m3fn": "uint8"}',
        "CPU float8_e5m2 tensors taken as a dtype no collective carries"),
    # the thirty-eighth campaign: what the ranks compare when a communicator is made, and
    # the argument checks of 2026-12-07
    "creation-check-uncompared": (
        "ring/communicator.py", "self.path, self.check, rules, emulated)",
        "self.path, True, rules, emulated)",
        "ranks whose check differs are not refused at creation (each waits out the timeout "
        "at the first call)"),
    "creation-rules-uncompared": (
        "ring/communicator.py", "self.path, self.check, rules, emulated)",
        "self.path, self.check, \"?\", emulated)",
        "ranks whose tuning tables' rules differ are not refused ('auto' may pick otherwise "
        "on each)"),
    "creation-nodes-uncompared": (
        "ring/communicator.py", "self.path, self.check, rules, emulated)",
        "self.path, self.check, rules, 0)",
        "ranks whose RING_NODES differs are not refused (the emulated nodes' split waits for "
        "ever)"),
    "creation-freed-comm-taken": (
        "ring/communicator.py", "        if base == MPI.COMM_NULL:", "        if False:",
        "a freed mpi_comm reaches MPI's duplicate ('Invalid communicator', naming nothing)"),
    "digest-ignores-rules": (
        "ring/tuning.py", "zlib.crc32(json.dumps(table['rules'], sort_keys=True).encode())",
        "zlib.crc32(bytes())", "every table's rules digest alike"),
    "tuning-load-takes-any": (
        "ring/tuning.py",
        "    if path is not None and not isinstance(path, (str, os.PathLike)):",
        "    if False:", "tuning=1 opened as a file descriptor (stdout read, then closed)"),
    "kernel-settings-blocks-unread": (
        "ring/cuda/kernel_path.py",
        '    return proto_from_env(), os.environ.get("RING_TWOSHOT_BLOCKS", "").strip()',
        '    return proto_from_env(), ""',
        "ranks whose RING_TWOSHOT_BLOCKS differs are not refused (a two-shot's blocks wait "
        "for namesakes a peer has not launched)"),
    "timeout-ns-unclamped": (
        "ring/cuda/error_word.py", "    return INT64_MAX if ns >= INT64_MAX else int(ns)",
        "    return int(ns)", "an infinite timeout is an OverflowError at every kernel call"),
    "why-not-negative-bytes": (
        "ring/communicator.py", "        if not whole_number(nbytes) or nbytes < 0:",
        "        if not whole_number(nbytes):", "why_not(..., nbytes=-5) answers as for 0"),
    "group-devices-any-number": (
        "ring/cuda/group.py",
        "not (isinstance(d, numbers.Integral) and not isinstance(d, bool) and 0 <= d < ndev)",
        "not (0 <= d < ndev)", "ring.Group(devices=[0.0, True]) runs as on device 0 and 1"),
    "flags-strings-taken": (
        "ring/options.py", "    return isinstance(v, (bool, np.bool_))",
        "    return isinstance(v, (bool, np.bool_, str))",
        "error_feedback='no' (or check='no') taken by truth value: as True"),
    # the thirty-ninth campaign: the schedules' less-planted corners, the harness's files and
    # sizes, Work.wait(timeout) (2026-12-07)
    "max-chunk-block-zero": (
        "ring/schedule.py", "for b in range(self.size) for j in range(self.nchunks)",
        "for b in range(1) for j in range(self.nchunks)",
        "a plan's widest chunk read from block 0 alone (empty for a broadcast from root 1: "
        "the kernel path's LL words and the host's direct copies sized by it)"),
    "broadcast-last-sends": (
        "ring/schedule.py", "        return Step(block=root, recv=pos > 0, reduce=False, "
        "final=False, out=pos > 0,\n                    send=pos < size - 1)",
        "        return Step(block=root, recv=pos > 0, reduce=False, final=False, out=pos > 0,"
        "\n                    send=True)",
        "the broadcast chain's last rank sends on to the root, which never receives it"),
    "scatter-root-nearest-first": (
        "ring/schedule.py",
        "[_move(at(p), False, False, True) for p in range(size - 1, 0, -1)]",
        "[_move(at(p), False, False, True) for p in range(1, size)]",
        "a scatter's root sends the nearest rank's block first, where the chain forwards the "
        "farthest first"),
    "plan-blocks-decreasing-taken": (
        "ring/schedule.py", " or any(a > b for a, b in zip(blocks, blocks[1:])):", ":",
        "plan_blocks takes boundaries that decrease (a block of negative length)"),
    "alltoall-own-nearest-first": (
        "ring/schedule.py", "    own = list(range(size - 1, 0, -1))",
        "    own = list(range(1, size))",
        "the all-to-all sends its own blocks nearest destination first (documented: "
        "farthest first)"),
    "sizes-factor-stuck": (
        "harness/sizes.py", "s = max(int(s * factor), s + 1) if factor > 1 else s + step",
        "s = int(s * factor) if factor > 1 else s + step",
        "a factor too small to move a size by a byte (-b 8 -f 1.01) never ends"),
    "files-sweep-ranks-unchecked": (
        "harness/files.py", ' or "ranks" not in data["meta"] or \\\n',
        ' or \\\n', "a sweep's JSON without meta's rank count read as one (a KeyError later)"),
    "files-read-list-taken": (
        "harness/files.py", "    if not isinstance(data, dict):", "    if False:",
        "a JSON list taken as a sweep or table (an AttributeError, not a line naming it)"),
    "work-wait-timeout-ignored": (
        "ring/communicator.py",
        "            if limit is not None and not self._pending.done_within(self._comm._progress"
        ", limit):", "            if False:",
        "a host Work's wait(timeout) waits until the call is done, however long"),
    "work-wait-giveup-breaks": (
        "ring/communicator.py", "        except TimeoutError:\n            return False",
        "        except TimeoutError:\n            raise",
        "a queued Work's wait(timeout) that gives up breaks the communicator, as a failed "
        "call would"),
    "torch-wait-timeout-dropped": (
        "ring/training/torch.py", "        self._work.wait(timeout)", "        self._work.wait()",
        "torch's work.wait(timeout) on a CPU call waits for ever, its timeout ignored"),
    "torch-wait-zero-as-limit": (
        "ring/training/torch.py", "timeout = timeout.total_seconds() or None",
        "timeout = timeout.total_seconds()",
        "torch's default wait timeout, zero (none), refused as a limit of 0 s"),
    # the fortieth campaign: the files with the fewest faults for their lines
    "half-divide-f16-as-bf16": (
        "ring/host/half.py", "        _divide_loop(0, out, np.float32(divisor))",
        "        _divide_loop(1, out, np.float32(divisor))",
        "a float16 avg's division on the host reads and writes its values as bfloat16 bits"),
    "half-accumulate-f16-in-place-as-bf16": (
        "ring/host/half.py", "            _accumulate_into(0, r, out, d)",
        "            _accumulate_into(1, r, out, d)",
        "a float16 wire's kept chunk, accumulated in place, is widened as bfloat16 bits"),
    "half-settle-in-place-undivided": (
        "ring/host/half.py", "        acc[i] = _wide(h, kind) / d", "        acc[i] = _wide(h, kind)",
        "a bfloat16 wire's seam, settled in place, is never divided (avg returns the sum)"),
    "half-land-f16-as-bf16": (
        "ring/host/half.py", "        _land_loop(0, r, out, d)", "        _land_loop(1, r, out, d)",
        "a float16 wire's all-gathered chunk is widened as bfloat16 bits"),
    "half-f16-prod-into-second-sums": (
        "ring/host/half.py", "                _loop_into(0, PROD, other, acc, False)",
        "                _loop_into(0, SUM, other, acc, False)",
        "a float16 product into its second operand adds"),
    "traffic-kernel-forward-unread": (
        "ring/cuda/enqueue.py",
        "total += n + (n if step.out else 0) + (n if step.send else 0)",
        "total += (n if step.out else 0) + (n if step.send else 0)",
        "the kernel path's traffic count leaves out the read of a forwarded chunk"),
    "simipc-freed-still-described": (
        "ring/transport/simipc.py", "        _OWN.pop(self.alloc.base, None)\n", "",
        "a freed simulated allocation is still described, as if the driver still knew it"),
    "group-kept-outs-unkeyed": (
        "ring/cuda/repeated.py", "    return _hashable((collective, op, root, dtype, wx, wo))",
        "    return _hashable((collective, op, root, dtype, wx))",
        "a ring.Group call's kept signature leaves out the outputs: a call into other "
        "arrays replays the launch that writes the first call's"),
}
MUTANTS.update(SINCE)
_KERNEL = ("tests/test_program.py tests/test_mpi.py::test_cuda_kernel_path "
           "tests/test_mpi.py::test_cuda_kernel_path_simple "
           "tests/test_mpi.py::test_call_sequences[cuda-kernel-2] "
           "tests/test_faults.py::test_a_rank_dies_in_the_middle_of_an_allreduce[3-cuda-kernel-ring] "
           # (a stream-ordered call's error word read by the next call, where the kernel's
           # time says it may have timed out: kernel-error-unread; synchronize() always reads)
           "tests/test_faults.py::test_a_stream_ordered_calls_error_is_raised_by_the_next_call")
_RANKS3 = "tests/test_mpi.py::test_on_ranks[3]"  # every inner suite of test_mpi.INNER, 3 ranks
_ONESHOT = "tests/test_recipe.py " + _RANKS3
_INT8 = "tests/test_buckets.py " + _RANKS3
_HALF = ("tests/test_half.py tests/test_compiled_walk.py tests/test_algorithms.py "
         "tests/test_reference.py " + _RANKS3)  # ring/host/half.py's loops
_LINKS = "tests/test_mpi.py::test_links_across_nodes_over_an_mpi_that_moves_messages_on_the_senders_calls"
_REGISTERED = "tests/test_registry.py tests/test_mpi.py::test_cuda_registered_buffers[2]"
_KERNEL_RANKS = ("tests/test_mpi.py::test_cuda_kernel_path[2] "
                 "tests/test_mpi.py::test_cuda_kernel_path[3]")
_STAGED = "tests/test_staged.py tests/test_mpi.py::test_cuda_device_across_emulated_nodes " + _LINKS
_MPI_LINKS = ("tests/test_mpi.py::test_across_emulated_nodes "
              "tests/test_mpi.py::test_call_sequences " + _LINKS)
_HOST = ("tests/test_mpi.py::test_on_ranks[2] " + _RANKS3
         + " tests/test_mpi.py::test_across_emulated_nodes")
# the tests that cover each mutant's code (--own-tests); the others: the whole suite
OWN_TESTS = {
    **{n: _KERNEL for n in SINCE if n.startswith("kernel-")},
    "exchange-no-parity": _ONESHOT, "oneshot-reduce-scatter-order": _ONESHOT,
    "oneshot-reduce-order": _ONESHOT, "twoshot-no-wait": _ONESHOT,
    "cuda-areas-no-parity": "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[3]",
    "cuda-twoshot-no-wait": "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[3]",
    "int8-server-feedback-lost": _INT8, "int8-choice-inverted": _INT8,
    "torch-avg-as-sum": "tests/test_torch.py", "torch-hook-in-the-hook": "tests/test_torch.py",
    "wait-no-progress": _LINKS, "staged-flush-returns": _LINKS, "host-flush-skipped": _LINKS,
    "in-place-gather-offset": "tests/test_mpi.py::test_on_ranks[2]",
    "board-no-compare": "tests/test_mpi.py::test_cuda_registered_buffers[2]",
    "board-no-refusal": "tests/test_mpi.py::test_cuda_kernel_path[2]",
    "twoshot-rs-wrong-block": "tests/test_mpi.py::test_cuda_registered_buffers[2]",
    "twoshot-ag-gather-offset": "tests/test_mpi.py::test_cuda_registered_buffers[3]",
    "twoshot-tail-no-divide": "tests/test_mpi.py::test_cuda_registered_buffers[2]",
    "twoshot-one-round-x-only": "tests/test_mpi.py::test_cuda_registered_buffers[2]",
    "registry-stale-ident": _REGISTERED, "peer-map-stale": _REGISTERED,
    "kept-registration-not-asked": _REGISTERED,
    "auto-ignores-registration": "tests/test_tuning.py " + _REGISTERED,
    "no-sync-starts-allreduce": "tests/test_buckets.py tests/test_examples.py",
    **{n: "tests/test_topk.py" for n in SINCE if n.startswith("topk-") and "gpu" not in n},
    "topk-gpu-pack-keeps-residual": "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]",
    "agreement-ignores-op": _RANKS3,
    "agreement-bad-rank-unnamed": _RANKS3,
    **{n: "tests/test_algorithms.py " + _RANKS3
       for n in ("tree-avg-undivided", "tree-children-first", "ps-reversed-order",
                 "naive-reversed-order")},
    "int8-nan-residual-kept": "tests/test_quantize.py " + _INT8,
    **{n: "tests/test_half.py" for n in ("bf16-truncates", "f16-nan-payload-lost",
                                         "f16-subnormal-edge")},
    "compiled-round-no-compare": "tests/test_compiled_round.py " + _RANKS3,
    "compiled-round-one-slot": "tests/test_compiled_round.py " + _RANKS3
                               + " tests/test_mpi.py::test_call_sequences[host-3]",
    "gathered-no-compare": "tests/test_mpi.py::test_across_emulated_nodes[4-2] "
                           "tests/test_mpi.py::test_call_sequences[host-2x2]",
    "progress-no-drain": "tests/test_progress.py " + _RANKS3
                         + " tests/test_mpi.py::test_call_sequences[host-3]",
    "fatal-not-armed": "tests/test_faults.py::test_a_rank_never_makes_the_call "
                       "tests/test_faults.py::test_a_rank_dies_in_the_middle_of_an_allreduce",
    **{n: "tests/test_compiled_walk.py " + _RANKS3
       for n in ("walk-slot-off-by-one", "walk-avg-every-step")},
    **{n: "tests/test_kernel_quantize.py"
       for n in ("gpu-int8-signed-wrap", "gpu-int8-tree-race", "gpu-int8-zero-block-scale",
                 "gpu-int8-nonfinite-one-thread", "gpu-int8-takes-2d")},
    **{n: "tests/test_mpi.py::test_cuda_registered_buffers[2] "
          "tests/test_mpi.py::test_cuda_registered_buffers[3]"
       for n in ("twoshot-flag-before-writes", "twoshot-records-unread")},
    "shm-slot-off-by-one": _RANKS3 + " tests/test_mpi.py::test_fuzz[3]",
    **{n: "tests/test_kernels.py" for n in ("gpu-min-nan-lost", "gpu-paired-tail-one-output",
                                            "gpu-fold-avg-every-step")},
    **{n: _KERNEL_RANKS
       for n in ("oneshot-kernel-high-word-lost", "kept-alltoall-in-place",
                 "kept-signature-no-strides")},
    "cuda-run-ignores-divisor": "tests/test_mpi.py::test_cuda_device_across_emulated_nodes",
    "cuda-link-error-on-one-rank": "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]",
    **{n: "tests/test_mpi.py::test_across_emulated_nodes"
       for n in ("host-alltoall-mpi-in-place", "mpi-recv-one-too-many",
                 "emulated-nodes-round-robin")},
    "walk-takes-float-min": "tests/test_compiled_walk.py " + _RANKS3,
    "recipe-copy-wrong-offset": _ONESHOT,
    "fast-path-read-only-out": _RANKS3,
    "group-dtypes-unchecked": "tests/test_group.py",
    "one-slot-allowed": "tests/test_group.py tests/test_schedule.py " + _RANKS3,
    **{n: _RANKS3 for n in ("setup-own-error-unraised", "buckets-layout-unshared")},
    "setup-timeout-unbroken": "tests/test_faults.py::test_a_rank_never_makes_its_gradient_buckets",
    "momentum-one-allowed": "tests/test_topk.py",
    "topk-no-fallback": "tests/test_topk.py",
    "callback-twice": "tests/test_progress.py tests/test_torch.py",
    **{n: "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]"
       for n in ("fp16-wire-as-bits", "gpu-avg-unscaled")},
    "oneshot-limit-exclusive": "tests/test_algorithms.py " + _ONESHOT,
    **{n: "tests/test_kernels.py tests/test_buckets.py"
       for n in ("pack-offsets-are-ends", "strided-pack-column-major")},
    "own-never-copies": "tests/test_algorithms.py " + _RANKS3,
    **{n: "tests/test_progress.py tests/test_torch.py " + _RANKS3
       for n in ("progress-done-before-callbacks", "progress-late-callback-lost",
                 "progress-error-lost")},
    **{n: "tests/test_harness.py " + _RANKS3  # (check_harness.py among the inner suites)
       for n in SINCE if SINCE[n][0].startswith("harness/")},
    **{n: "tests/test_keep.py tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]"
       for n in ("spare-not-cleared", "opened-not-cached")},
    "peer-access-one-way": "tests/test_algorithms.py",
    **{n: "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[3] "
          "tests/test_mpi.py::test_call_sequences[cuda-stream-3]"
       for n in ("ipc-sender-one-slot-early", "ipc-receiver-acks-early")},
    "register-mapped-one-rank": _REGISTERED,
    "misaligned-array-accepted": "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]",
    "together-nothing-let-go": "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]",
    **{n: "tests/test_harness.py" for n in ("meta-changes-unmarked", "meta-results-are-changes",
                                            "model-allreduce-steps",
                                            "model-negative-alpha-kept-b")},
    **{n: "tests/test_buckets.py tests/test_torch.py"
       for n in ("grad-copy-into-a-copy", "tensor-bf16-as-int16")},
    **{n: "tests/test_kernels.py tests/test_group.py"
       for n in ("cast-bf16-widen-shift", "cast-size-unchecked", "bits-f16-ties-away")},
    **{n: "tests/test_harness.py " + _RANKS3
       for n in ("expected-avg-undivided", "expected-without-rank-1",
                 "expected-alltoall-transposed", "min-bytes-rooted-as-every-rank",
                 "busfactor-gather-as-allreduce", "in-place-split-at-zero",
                 "counts-split-not-whole-blocks")},
    "sizes-end-exclusive": "tests/test_harness.py",
    "why-not-any-device": "tests/test_algorithms.py tests/test_docs.py " + _RANKS3,
    **{n: "tests/test_nccl_lib.py" for n in ("nccl-late-load-unsaid", "nccl-loaded-every-call",
                                             "nccl-symbols-local")},
    "plot-speedup-inverted": "tests/test_harness.py",
    "poll-never-gives-up": "tests/test_faults.py::test_a_rank_dies_in_the_middle_of_an_allreduce "
                           "tests/test_compiled_walk.py",
    "simipc-slots-not-zeroed": "tests/test_group.py::test_simulated_segments_start_all_zero "
                               "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[3] "
                               "tests/test_mpi.py::test_call_sequences[cuda-stream-3]",
    **{n: "tests/test_mpi.py::test_on_ranks[2]"
       for n in ("close-keeps-backend", "close-keeps-comm", "close-keeps-topo")},
    "close-keeps-kept": "tests/test_mpi.py::test_on_ranks[2] "
                        "tests/test_mpi.py::test_across_emulated_nodes",
    **{n: "tests/test_group.py " + _RANKS3
       for n in ("ring-chunk-ignores-given", "ring-alltoall-in-place-as-out")},
    "error-word-last-wins": "tests/test_kernels.py::test_the_error_word_keeps_the_first_failure_"
                            "of_the_grid " + _KERNEL,
    "round-behind-unnamed": "tests/test_faults.py::test_a_rank_never_makes_the_call",
    **{n: "tests/test_debug.py " + _RANKS3
       for n in ("debug-app-level-overridden", "debug-configured-once-ever")},
    **{n: "tests/test_devices.py tests/test_algorithms.py tests/test_tuning.py " + _RANKS3
          + " tests/test_mpi.py::test_across_emulated_nodes[4-2]"
       for n in ("devices-auto-simulated", "devices-cuda-unchecked")},
    **{n: "tests/test_algorithms.py tests/test_tuning.py " + _RANKS3
          + " tests/test_mpi.py::test_across_emulated_nodes[4-2]"
       for n in ("compressed-auto-flat-first", "auto-ignores-the-table",
                 "auto-never-two-level")},
    "ends-inbound-by-successor": "tests/test_ends.py "
                                 "tests/test_mpi.py::test_across_emulated_nodes[4-2]",
    "int16-kernels-unsigned": "tests/test_kernels.py tests/test_mpi.py::test_cuda_kernel_path[2] "
                              "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]",
    "copy-lanes-swapped": "tests/test_kernels.py",
    "streams-since-newest": "tests/test_streams.py " + _KERNEL,
    **{n: "tests/test_kernel_cache.py"
       for n in ("kernel-cache-without-twoshot", "kernel-cache-without-layouts",
                 "kernel-cache-key-without-variant", "persistent-variant-without-vectors",
                 "oneshot-variant-without-k")},
    "slots-all-one": "tests/test_group.py tests/test_staged.py "
                     "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[3] "
                     "tests/test_mpi.py::test_cuda_device_across_emulated_nodes[4-2-None]",
    **{n: "tests/test_harness.py"
       for n in ("harness-put-no-storage", "harness-auto-simulated")},
    "grid-floor": "tests/test_kernels.py tests/test_kernel_quantize.py",
    **{n: "tests/test_schedule.py tests/test_reference.py"
       for n in ("chunk-tail-dropped", "nchunks-floor", "alltoall-in-place-unguarded",
                 "gather-root-nearest-first", "split-remainder-last", "reduce-alone-receives")},
    **{n: "tests/test_torch.py"
       for n in ("torch-agree-ignores-peers", "torch-split-reversed", "torch-uneven-splits-taken",
                 "torch-coalesced-sum")},
    **{n: "tests/test_group.py " + _RANKS3
       for n in ("root-bool-taken", "out-larger-taken", "chunk-over-slot",
                 "in-place-scatter-at-block-zero", "scatter-stand-in-one-block")},
    "cuda-swap-blocks-identity": "tests/test_mpi.py::test_cuda_device_across_emulated_nodes",
    "gathered-overlapping-out-taken": "tests/test_mpi.py::test_across_emulated_nodes "
                                      "tests/test_mpi.py::test_errors_across_emulated_nodes",
    **{n: "tests/test_program.py tests/test_group.py"
       for n in ("traffic-reduce-two-reads", "enqueue-no-credit-check", "link-one-slot-more",
                 "copy-path-avg-every-step", "seam-not-sent", "group-alltoall-in-place-uncopied")},
    **{n: "tests/test_quantize.py tests/test_buckets.py tests/test_group.py " + _RANKS3
       for n in ("op-name-case-sensitive", "avg-on-integers", "int8-blocks-one-more")},
    "handle-of-version": "tests/test_bound_launch.py tests/test_streams.py",
    **{n: "tests/test_program.py " + _KERNEL_RANKS
       for n in ("program-x-on-forward", "program-uin-from-one", "program-step-is-chunk")},
    "kernel-shapes-unchecked": "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]",
    "oneshot-key-without-out": _KERNEL_RANKS
                               + " tests/test_mpi.py::test_cuda_registered_buffers[2]",
    "in-place-any-side": "tests/test_tuning.py " + _REGISTERED
                         + " tests/test_mpi.py::test_cuda_registered_buffers[3]",
    **{n: _STAGED for n in ("staged-nbytes-elements", "staged-aware-env-unchecked",
                            "staged-direct-slot-reused")},
    **{n: "tests/test_direct_links.py " + _MPI_LINKS
       for n in ("mpi-gate-early", "mpi-send-slot-reused")},
    **{n: _HOST for n in ("host-read-only-out-taken", "host-dtype-arg-unchecked",
                          "host-swap-blocks-untransposed", "host-alltoall-shm-unheld")},
    "host-behind-includes-entered": "tests/test_faults.py::test_a_rank_never_makes_the_call "
                                    "tests/test_faults.py::test_a_rank_never_makes_the_call_"
                                    "across_nodes",
    **{n: "tests/test_topk.py tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]"
       for n in ("topk-gpu-above-strict", "topk-gpu-carry-dropped",
                 "topk-gpu-velocity-unstored", "topk-gpu-pack-keeps-velocity")},
    # the tenth run's
    **{n: "tests/test_options.py" for n in ("kp-channels-max-refused", "kp-threads-1024-refused")},
    "kp-clean-past-timeout": (
        "tests/test_faults.py::test_a_rank_dies_in_the_middle_of_an_allreduce[2-cuda-kernel-ring] "
        "tests/test_faults.py::test_a_rank_dies_in_a_kept_kernel_path_call "
        "tests/test_faults.py::test_a_rank_dies_in_a_kernel_path_call_of_ll_words "
        "tests/test_faults.py::test_a_stream_ordered_calls_error_is_raised_by_the_next_call"),
    "kp-refusal-as-mismatch": _KERNEL_RANKS + " tests/test_faults.py::test_a_rank_that_never_"
                                              "launches_is_found_at_the_call_board "
                                              "tests/test_mpi.py::test_cuda_registered_buffers[2]",
    "wait-progress-drops-earlier": "tests/test_progress.py tests/test_direct_links.py " + _MPI_LINKS
                                   + " tests/test_mpi.py::test_cuda_device_across_emulated_nodes",
    "wait-at-kept": "tests/test_progress.py "
                    "tests/test_faults.py::test_a_rank_dies_in_the_middle_of_an_allreduce "
                    "tests/test_faults.py::test_a_rank_never_makes_the_call "
                    "tests/test_faults.py::test_a_timeout_before_the_walk_names_no_step_of_an_"
                    "earlier_call",
    **{n: "tests/test_options.py tests/test_group.py tests/test_algorithms.py " + _RANKS3
       for n in ("opt-nan-timeout", "opt-fused-silent", "opt-fractions-whole")},
    **{n: _HOST + " tests/test_mpi.py::test_errors_across_emulated_nodes"
       for n in SINCE if n.startswith("rep-")},
    **{n: "tests/test_group.py" for n in SINCE if n.startswith("grp-")},
    **{n: "tests/test_quantize.py tests/test_kernel_quantize.py " + _INT8
       for n in SINCE if n.startswith("quant-")},
    "oneshot-full-exchange-refused": "tests/test_algorithms.py " + _ONESHOT,
    "roof-hbm-once": "tests/test_harness.py tests/test_program.py",
    **{n: "tests/test_buckets.py tests/test_topk.py " + _RANKS3
       for n in ("buckets-nested-no-sync", "buckets-no-sync-mid-step",
                 "buckets-density-one-refused", "buckets-unready-not-zeroed",
                 "buckets-first-cap-everywhere")},
    # the eleventh run's
    **{n: "tests/test_kernels.py tests/test_mpi.py::test_cuda_kernel_path[2]"
       for n in ("sim-shared-one-key", "sim-shared-per-thread")},
    **{n: "tests/test_mpi.py::test_on_ranks[2] " + _ONESHOT
       for n in ("exchange-data-over-record", "exchange-result-over-data")},
    "exchange-behind-posted": "tests/test_faults.py::test_a_rank_never_makes_the_call",
    "shm-recv-reads-early": _HOST,
    **{n: "tests/test_streams.py tests/test_mpi.py::test_cuda_kernel_path[2]"
       for n in SINCE if n.startswith("streams-") and n != "streams-since-newest"},
    **{n: "tests/test_group.py tests/test_harness.py::test_a_cuda_sweep_under_the_simulator_"
          "puts_bfloat16_and_float8_as_bits "
          "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]"
       for n in SINCE if n.startswith("arrays-")},
    "dtypes-bits16-any-float": "tests/test_kernels.py tests/test_program.py",
    **{n: " ".join(f"tests/test_harness.py::test_{t}" for t in (
        "model_recovers_alpha_and_beta", "the_model_fit_is_the_best_line_that_has_no_"
        "negative_part", "model_report_reads_a_sweep", "two_lines_recover_two_regimes_and_"
        "crossovers_are_named", "crossovers_name_ties_and_a_winner_throughout",
        "model_on_the_command_line", "model_reads_every_layout_of_a_tuning_table",
        "every_regime_of_several_lines_spans_at_least_three_sizes"))
       for n in SINCE if n.startswith("model-") and n not in (
           "model-allreduce-steps", "model-negative-alpha-kept-b")},
    **{n: " ".join(f"tests/test_harness.py::test_{t}" for t in (
        "plot_without_matplotlib_says_what_to_install", "plot_on_the_command_line_draws_"
        "several_sweeps", "the_plot_legend_keeps_name_version_and_mode", "the_plot_shows_"
        "every_ring_variant_over_every_baseline", "allreduce_sweep_writes_json_and_plot",
        "the_size_axis_labels_1_8_and_64_of_each_unit_only"))
       for n in ("plot-short-mode-dropped", "plot-speedups-in-place", "plot-tick-every-power")},
    **{n: _HALF
       for n in ("half-hop-as-f16", "f16-ties-up", "bf16-nan-sign-lost")},
    **{n: _KERNEL_RANKS + " tests/test_mpi.py::test_call_sequences[cuda-kernel-2] "
          "tests/test_mpi.py::test_cuda_registered_buffers[2] tests/test_kernels.py::"
          "test_the_one_shot_kernel_keeps_to_its_calls_parity_of_the_inboxes"
       for n in ("oneshot-kernel-avg-every-step", "oneshot-kernel-one-parity")},
    "sides-allgather-x": _REGISTERED + " tests/test_mpi.py::test_cuda_registered_buffers[3]",
    **{n: _HOST + " tests/test_algorithms.py tests/test_mpi.py::test_errors_across_emulated_nodes"
       for n in SINCE if n.startswith("comm-")},
    "close-keeps-fast": _HOST + " tests/test_mpi.py::test_errors_across_emulated_nodes",
    # the twelfth campaign (2026-12-05)
    "simipc-counter-names-swapped":
        "tests/test_faults.py::test_a_rank_dies_in_the_middle_of_an_allreduce[3-cuda-ring]",
    "simipc-describe-any-pointer": _REGISTERED,
    "shm-typed-one-dtype": _RANKS3 + " tests/test_mpi.py::test_call_sequences[host-3]",
    **{n: "tests/test_algorithms.py " + _RANKS3
       for n in ("base-why-not-all-reduce-only", "base-compressed-taken")},
    "uint8-kernels-signed": "tests/test_kernels.py tests/test_group.py " + _KERNEL_RANKS,
    "float64-kernels-not-floating": "tests/test_kernels.py tests/test_group.py",
    "streams-reader-cached-once": "tests/test_streams.py",
    **{n: "tests/test_compiled_round.py " + _RANKS3
          + " tests/test_mpi.py::test_call_sequences[host-3]"
       for n in ("compiled-round-same-unchecked", "compiled-round-overlap-one-side",
                 "compiled-round-float8-wire")},
    **{n: _KERNEL_RANKS + " tests/test_group.py"
       for n in ("kept-drops-newest", "kept-signature-without-dtype")},
    "ipc-sender-waits-late": "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[3] "
                             "tests/test_mpi.py::test_call_sequences[cuda-stream-3]",
    **{n: "tests/test_mpi.py::test_cuda_registered_buffers[2] "
          "tests/test_mpi.py::test_cuda_registered_buffers[3] "
          "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[3]"
       for n in ("twoshot-narrow-lane-unmasked", "twoshot-record-ignores-peers-x",
                 "twoshot-rs-alignment-unchecked")},
    "vector-aligned-at-8": "tests/test_kernels.py "
                           "tests/test_mpi.py::test_cuda_registered_buffers[2]",
    **{n: "tests/test_registry.py" for n in ("registry-find-oldest-first",
                                             "registry-remove-returns-stale")},
    # (its launch count read by check_registered's test_the_call_board_counts_...)
    "board-first-block-counts": _KERNEL_RANKS
                                + " tests/test_mpi.py::test_cuda_registered_buffers[2]",
    "tuning-smallest-ranks-below": "tests/test_tuning.py",
    # the thirteenth campaign (2026-12-05)
    **{n: "tests/test_kernels.py" for n in ("fold-ignores-nranks", "take-max-strict",
                                            "reduce-copy-lengths-unchecked")},
    **{n: "tests/test_torch.py" for n in ("torch-compress-undivided",
                                          "torch-blocks-dtype-unchecked",
                                          "topk-hook-layout-ignored")},
    "register-one-rank": "tests/test_mpi.py::test_cuda_registered_buffers[1]",
    "entered-skips-ended":
        "tests/test_faults.py::test_a_stream_ordered_calls_error_is_raised_by_the_next_call "
        "tests/test_faults.py::test_an_error_word_a_work_may_have_left_is_read_by_the_next_call",
    "executor-sends-from-x-in-place": "tests/test_direct_links.py",
    **{n: "tests/test_harness.py::test_kernel_benchmark_json_names_the_machine_inside "
          "tests/test_harness.py::test_a_result_names_the_settings_that_shaped_it "
          "tests/test_harness.py::test_the_cuda_and_nccl_versions_are_read_in_their_encodings"
       for n in ("meta-forgets-mps", "meta-nccl-version-old-encoding")},
    **{n: "tests/test_harness.py::test_allreduce_sweep_writes_json_and_plot "
          "tests/test_harness.py::test_two_level_and_flat_columns_on_emulated_nodes "
          "tests/test_harness.py::"
          "test_the_link_is_measured_on_at_most_link_bytes_and_printed_on_its_own_line"
       for n in ("roofline-link-in-copy-line", "roofline-link-whole-nbytes")},
    "walk-resumes-from-the-start": "tests/test_compiled_walk.py",
    "ends-outbound-by-predecessor": "tests/test_ends.py "
                                    "tests/test_mpi.py::test_across_emulated_nodes[4-2]",
    "host-chunk-copies-none": "tests/test_reference.py tests/test_messages.py " + _MPI_LINKS,
    "wire-forwards-the-divided-value": "tests/test_reference.py tests/test_algorithms.py "
                                       + _RANKS3,
    "int8-shards-round-down": _INT8,
    "scratch-never-grows": "tests/test_messages.py " + _RANKS3,
    **{n: "tests/test_harness.py::test_compressed_wires_report_their_error_against_float32 "
          "tests/test_harness.py::test_allreduce_sweep_writes_json_and_plot "
          "tests/test_harness.py::test_the_mpi_baselines_label_names_the_library_and_its_version"
       for n in ("impls-mpi-name-version-word", "impls-int8-buffers-once")},
    **{n: "tests/test_agreement.py " + _RANKS3 for n in ("agreement-long-values-shown-whole",
                                                         "agreement-algorithm-not-last")},
    # the sixteenth campaign
    "vector-sim-accepts-8": "tests/test_kernels.py::"
                            "test_16_byte_vectors_carry_every_lane_and_refuse_a_misaligned_address",
    "vector-sim-aligned16-at-start": "tests/test_kernels.py " + _KERNEL_RANKS,
    "register-why-not-ignored": "tests/test_mpi.py::test_cuda_registered_buffers[1] "
                                + _REGISTERED,
    "fold-one-rank-no-copy": "tests/test_mpi.py::test_cuda_registered_buffers[1] "
                             "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]",
    "areas-own-last": "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[3] "
                      "tests/test_mpi.py::test_cuda_registered_buffers[2]",
    "poll-yields-forever": "tests/test_faults.py::test_a_rank_dies_in_the_middle_of_an_allreduce "
                           "tests/test_compiled_walk.py",
    **{n: "tests/test_options.py " + _KERNEL_RANKS
       for n in ("kp-scope-across-gpus", "kp-mps-pipe-directory")},
    "cuda-alltoall-in-place-no-copy":
        "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2] "
        "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[3]",
    "oneshot-inbox-half": _KERNEL_RANKS,
    **{n: _RANKS3
       for n in ("deregister-after-close", "barrier-after-close", "synchronize-after-close",
                 "register-after-close")},
    "register-keeps-kept-calls": _REGISTERED,
    "work-wait-unbroken": "tests/test_faults.py::test_a_rank_dies_during_an_async_allreduce",
    # the seventeenth campaign
    **{n: "tests/test_algorithms.py tests/test_mpi.py::test_across_emulated_nodes"
       for n in ("hier-applies-any-order", "hier-applies-one-per-node",
                 "hier-cross-order-reversed")},
    **{n: "tests/test_buckets.py" for n in ("buckets-touching-counted-shared",
                                            "buckets-span-over-a-gap")},
    "twoshot-vreduce-out-unaligned": _REGISTERED
                                     + " tests/test_mpi.py::test_cuda_registered_buffers[3]",
    # the eighteenth campaign
    **{n: "tests/test_mpi.py::test_across_emulated_nodes " + _LINKS
       for n in ("mpi-flush-returns-early", "mpi-recv-no-progress",
                 "mpi-recv-progress-oldest-only")},
    "staged-recv-progress-first-only": _LINKS,
    # the nineteenth campaign, second part
    "oneshot-across-nodes-every-collective": "tests/test_algorithms.py "
                                             "tests/test_mpi.py::test_across_emulated_nodes",
    # (the one-rank halves: check_registered.py's one-process test; a first list left it out)
    **{n: "tests/test_algorithms.py tests/test_mpi.py::test_cuda_kernel_path[1] "
          "tests/test_mpi.py::test_cuda_registered_buffers[1] " + _KERNEL_RANKS
       for n in ("twoshot-one-rank-halves-uncopied", "twoshot-kernel-sizes-capped")},
    "walk-reduce-always-in-place": "tests/test_compiled_walk.py " + _RANKS3,
    "half-bf16-prod-into-sums": "tests/test_half.py",
    **{n: "tests/test_kernels.py" for n in ("bits-f16-subnormal-ties-up",
                                            "bits-f16-nan-payload-dropped",
                                            "bits-f16-subnormal-exponent-off",
                                            "bits-bf16-nan-sign-dropped",
                                            "bits-f16-underflow-edge")},
    # the twentieth campaign
    "board-leave-no-reset": "tests/test_mpi.py::test_cuda_registered_buffers[2] " + _KERNEL_RANKS,
    "board-wait-timeout-unreported":
        "tests/test_faults.py::test_a_rank_that_never_launches_is_found_at_the_call_board",
    "deregister-empty-drops": _REGISTERED,
    # (a first list named test_cuda_auto_path, which runs on a GPU only)
    "through-host-storage-unviewed":
        "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]",
    "copy-tail-short": "tests/test_kernels.py",
    # the twenty-first campaign
    **{n: "tests/test_algorithms.py " + _RANKS3
       for n in ("cma-no-closing-round", "cma-in-place-posts-x", "cma-alltoall-copy-short",
                 "cma-fold-piece-unmoved", "cma-remote-offset-in-elements",
                 "cma-own-aliased-viewed", "cma-failure-unshared", "cma-probe-own-answer",
                 "cma-probe-skipped", "cma-pid-of-parent")},
    # the twenty-second campaign
    **{n: "tests/test_compiled_cma.py tests/test_recipe.py " + _RANKS3
       for n in ("cma-fast-close-unpolled", "cma-fast-own-alias-unchecked",
                 "cma-fast-piece-unmoved", "cma-fast-statuses-ignored", "cma-fast-errno-dropped",
                 "cma-fast-own-block-uncopied", "cma-fast-in-place-posts-x",
                 "cma-fast-gather-from-x", "cma-fast-late-round-stale",
                 "cma-halves-no-middle-round", "cma-halves-posts-no-out",
                 "recipe-halves-short-blocks-skipped")},
    # the twenty-third campaign
    **{n: "tests/test_compiled_cma.py tests/test_recipe.py " + _RANKS3
       for n in ("recipe-halves-reduce-rank-order", "cma-reduce-root-partial",
                 "cma-reduce-partial-into-out", "cma-halves-in-place-disagreed",
                 "cma-fast-reduce-root-partial", "cma-fast-reduce-partial-into-x",
                 "cma-reduce-posts-out")},
    # the twenty-fifth campaign
    **{n: "tests/test_tuning.py tests/test_harness.py::test_tune_writes_a_table_that_auto_reads "
          "tests/test_harness.py::test_tune_in_place_places_x_and_out_as_mpi_does "
          "tests/test_harness.py::test_tune_refuses_an_unknown_algorithm " + _RANKS3
       for n in ("tuning-in-place-ignored", "tuning-in-place-rules-mixed",
                 "tuning-rooted-in-place-accepted", "tune-in-place-unplaced",
                 "tune-in-place-rules-unnamed", "tune-merge-in-place-replaces-all")},
    "empty-call-not-kept": _RANKS3,
    "compiled-round-empty-aliased": "tests/test_compiled_round.py " + _RANKS3,
    # the twenty-sixth campaign
    **{n: "tests/test_signature.py " + _RANKS3
       for n in ("signature-other-unflipped", "key-of-in-place-unguessed",
                 "kind-guess-one-arrays-views-apart",
                 "learnt-allreduce-views-apart-as-guessed",
                 "learnt-apart-kept-as-guessed", "fast-call-no-retry",
                 "key-options-op-unchecked")},
    # the twenty-seventh campaign
    **{n: "tests/test_compiled_cma.py " + _RANKS3
       for n in ("cma-whole-reads-nothing", "cma-whole-closes-agreement-round",
                 "cma-kept-waiting-taken-for-done", "cma-kept-round-unadvanced",
                 "cma-kept-parts-none")},
    # the twenty-ninth campaign
    **{n: "tests/test_signature.py " + _RANKS3
       for n in ("learnt-allreduce-kind-swapped",)},
    # the thirtieth campaign
    **{n: "tests/test_algorithms.py " + _REGISTERED
          + " tests/test_mpi.py::test_cuda_registered_buffers[3] " + _KERNEL_RANKS
       for n in ("twoshot-record-ignores-peers-alignment", "twoshot-record-ignores-peers-out",
                 "twoshot-tail-written-own-only", "twoshot-seq-not-kept",
                 "twoshot-copy-vectors-past-the-end")},
    "spin-flag-in-low-bits": "tests/test_kernels.py " + _KERNEL_RANKS,
    "spin-wait-ignores-error-word": "tests/test_kernels.py " + _KERNEL,
    "spin-fenced-wait-ignores-error-word": "tests/test_kernels.py "
                                           "tests/test_mpi.py::test_cuda_kernel_path_fence",
    "topology-emulated-round-robin": "tests/test_algorithms.py "
                                     "tests/test_mpi.py::test_across_emulated_nodes",
    # the thirty-first campaign: the tests that compile the vectors for a GPU, and the
    # host's run of their lanes (a run against the first alone: --tests)
    **{n: "tests/test_compile.py tests/test_vector_lanes.py"
       for n in ("vector-unpack-word-of-lane", "vector-unpack-bits-of-lane",
                 "vector-unpack-64-halves-swapped", "vector-pack-64-halves-swapped",
                 "vector-pack-lanes-reversed-in-word", "vector-pack-lanes-transposed",
                 "vector-aligned16-eight-bytes")},
    "ipc-receiver-reads-early": "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2] "
                                "tests/test_mpi.py::test_call_sequences[cuda-stream-3]",
    **{n: _INT8 for n in ("int8-compact-from-packed-offsets",
                          "int8-alltoall-residual-from-the-start")},
    # the thirty-second campaign
    **{n: "tests/test_direct_links.py" for n in (
        "executor-gate-skips-first-block", "executor-gate-first-chunk-only",
        "executor-receives-over-x")},
    "executor-in-place-keeps-predecessors": "tests/test_direct_links.py " + _RANKS3,
    "executor-direct-with-a-wire": "tests/test_direct_links.py "
                                   "tests/test_mpi.py::test_across_emulated_nodes[4-2]",
    "executor-timeout-names-the-unit": "tests/test_direct_links.py tests/test_faults.py",
    **{n: "tests/test_topk.py" for n in (
        "topk-above-skips-nan", "topk-nan-not-largest", "topk-k-rounds-down",
        "topk-density-clears-residual", "topk-local-velocity-scales-gradient",
        "topk-op-change-unchecked")},
    # the thirty-third campaign
    **{n: "tests/test_group.py" for n in ("group-devices-length-unchecked",
                                          "group-slots-unchecked")},
    **{n: "tests/test_kernels.py tests/test_buckets.py" for n in ("cast-stride-doubled",
                                                                   "scale-by-reciprocal")},
    "half-settle-overlap-one-loop": "tests/test_half.py",
    **{n: _REGISTERED for n in ("register-shared-process-taken", "register-span-short")},
    **{n: "tests/test_torch.py" for n in ("torch-reduce-scatter-list-reversed",
                                          "torch-barrier-noop")},
    # the thirty-fourth campaign
    "ipc-slots-overlap": "tests/test_keep.py "
                         "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2] "
                         "tests/test_mpi.py::test_call_sequences[cuda-stream-3]",
    "ipc-kernel-stride-overlaps": "tests/test_program.py " + _KERNEL_RANKS,
    "ipc-spare-not-cleared": "tests/test_keep.py "
                             "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2] "
                             + _KERNEL_RANKS,
    "cuda-swap-blocks-untransposed": "tests/test_mpi.py::test_cuda_device_across_emulated_nodes",
    # the thirty-fifth campaign
    "pack-one-short-accepted": "tests/test_kernels.py tests/test_buckets.py",
    "shm-ack-one-early": _HOST,
    "buckets-unready-bucket-never-starts": "tests/test_buckets.py " + _RANKS3,
    "oneshot-inbox-one-over": _KERNEL_RANKS + " tests/test_mpi.py::test_cuda_kernel_path_simple",
    # the thirty-sixth campaign
    "reduce-copy-views-any-dtype": "tests/test_kernels.py",
    "pack-strided-unbounded": "tests/test_kernels.py tests/test_buckets.py",
    "buckets-ready-negative-taken": "tests/test_buckets.py",
    "twoshot-halves-one-rank-no-copy": "tests/test_mpi.py::test_cuda_kernel_path[1] "
                                       "tests/test_mpi.py::test_cuda_registered_buffers[1]",
    "oneshot-kernel-seqs-one-block": _KERNEL_RANKS
                                     + " tests/test_mpi.py::test_cuda_kernel_path_simple",
    # the thirty-seventh campaign
    **{n: "tests/test_gpu_session.py" for n in SINCE if n.startswith("acceptance-")},
    "harness-names-twice": "tests/test_harness.py",
    "group-stream-unchecked": "tests/test_group.py",
    "model-zero-link-kept": "tests/test_harness.py",
    "tensors-e5m2-as-bytes": "tests/test_torch.py",
    # the thirty-eighth campaign
    **{n: "tests/test_mpi.py::test_errors_across_emulated_nodes"
       for n in ("creation-check-uncompared", "creation-rules-uncompared",
                 "creation-nodes-uncompared", "creation-freed-comm-taken",
                 "why-not-negative-bytes")},
    "digest-ignores-rules": "tests/test_tuning.py "
                            "tests/test_mpi.py::test_errors_across_emulated_nodes",
    "tuning-load-takes-any": "tests/test_tuning.py",
    "kernel-settings-blocks-unread":
        "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]",
    "timeout-ns-unclamped": "tests/test_options.py",
    "group-devices-any-number": "tests/test_group.py",
    "flags-strings-taken": "tests/test_buckets.py",
    # the thirty-ninth campaign
    "max-chunk-block-zero": "tests/test_schedule.py tests/test_program.py " + _KERNEL_RANKS,
    **{n: "tests/test_schedule.py tests/test_reference.py"
       for n in ("broadcast-last-sends", "scatter-root-nearest-first",
                 "plan-blocks-decreasing-taken", "alltoall-own-nearest-first")},
    **{n: "tests/test_harness.py"
       for n in ("sizes-factor-stuck", "files-sweep-ranks-unchecked", "files-read-list-taken")},
    "work-wait-timeout-ignored": "tests/test_progress.py tests/test_mpi.py::test_on_ranks[2]",
    "work-wait-giveup-breaks": "tests/test_progress.py",
    **{n: "tests/test_torch.py::test_backend_beside_gloo"
       for n in ("torch-wait-timeout-dropped", "torch-wait-zero-as-limit")},
    # the fortieth campaign
    **{n: _HALF
       for n in ("half-divide-f16-as-bf16", "half-accumulate-f16-in-place-as-bf16",
                 "half-settle-in-place-undivided", "half-land-f16-as-bf16",
                 "half-f16-prod-into-second-sums")},
    "traffic-kernel-forward-unread": "tests/test_program.py tests/test_group.py",
    "simipc-freed-still-described": _REGISTERED,
    "group-kept-outs-unkeyed": "tests/test_group.py",
}


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if (ROOT / f).is_file()]


def copy_tree(dest: Path) -> None:
    for f in tracked_files():
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, dest / f)


def plant(tree: Path, name: str) -> None:
    path, old, new, _ = MUTANTS[name]
    f = tree / path
    text = f.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"{name}: the text to replace occurs {text.count(old)} times in {path}; "
                         "update the mutant to the code")
    f.write_text(text.replace(old, new))


def run_suite(tree: Path, timeout: float, tests: list[str]) -> dict:
    env = dict(os.environ)
    if not shutil.which("nvidia-smi"):
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    env.pop("PYTHONPATH", None)
    env["COLUMNS"] = "400"  # pytest cuts its short summary lines to the terminal's width
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
           "-o", "truncation_limit_lines=0", "-o", "truncation_limit_chars=0", *tests]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True,
                              timeout=timeout)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        partial = e.stdout or ""
        rc, out = None, partial.decode(errors="replace") if isinstance(partial, bytes) else partial
    failed = re.findall(r"^FAILED (\S+)", out, re.M)
    summary = [ln for ln in out.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    # pytest's short summary of every failure, the inner mpiexec runs' included (their
    # output is nested in the outer assertion, behind "E" prefixes): test and message
    why = [re.sub(r"^(\s*E\s+)+", "", ln).strip()[:300] for ln in out.splitlines()
           if re.match(r"^(\s*E\s+)*FAILED \S+ - ", ln)]
    return {"rc": rc, "seconds": round(time.time() - t0, 1), "first_failure": failed[:1],
            "why": list(dict.fromkeys(why))[:6],  # the assertion that caught it
            "summary": summary[-1].strip("= ") if summary else None,
            "caught": rc is not None and rc != 0 and rc != 5}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="*", choices=sorted(MUTANTS), help="these mutants only")
    p.add_argument("--skip-baseline", action="store_true",
                   help="do not run the unmodified suite first")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per suite run")
    p.add_argument("--tests", default="", help="pytest arguments selecting part of the suite "
                   "(default: all of it, as make test)")
    p.add_argument("--own-tests", action="store_true",
                   help="each mutant against the tests that cover its code (OWN_TESTS; a mutant "
                   "without an entry: --tests), the baseline against all of them")
    p.add_argument("--json", metavar="PATH", help="write the results here")
    args = p.parse_args(argv)
    names = args.only or list(MUTANTS)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip())
    report = {"command": " ".join([Path(sys.executable).name, *sys.argv]),
              "git_commit": commit + (" (with uncommitted changes)" if dirty else ""),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": f"{platform.node()}, {os.cpu_count()} CPUs, "
                         + ("GPU" if shutil.which("nvidia-smi") else "no GPU (Numba simulator)"),
              "suite": "python -m pytest -x -q " + ("(each mutant's OWN_TESTS)" if args.own_tests
                                                    else args.tests or "(make test's tests)")
                       + ", stopping at the first failure",
              "baseline": None, "mutants": []}
    def tests_of(name) -> str:
        if not args.own_tests:
            return args.tests
        if name is not None:
            return OWN_TESTS.get(name, args.tests)
        words = " ".join(OWN_TESTS.get(n, args.tests) for n in names).split()
        return " ".join(dict.fromkeys(words))  # the baseline: every mutant's tests, once
    todo = ([] if args.skip_baseline else [None]) + names
    for name in todo:
        with tempfile.TemporaryDirectory(prefix="ring-mutant-") as tmp:
            tree = Path(tmp)
            copy_tree(tree)
            if name is not None:
                plant(tree, name)
            print(f"# {name or 'baseline (no fault)'} ...", file=sys.stderr, flush=True)
            res = run_suite(tree, args.timeout, tests_of(name).split())
        if name is None:
            report["baseline"] = res
            print(f"baseline: rc {res['rc']}, {res['summary']}, {res['seconds']} s", flush=True)
            if res["caught"] or res["rc"] is None:
                print("the unmodified suite fails: fix it before reading mutants", flush=True)
                break
            continue
        row = {"name": name, "file": MUTANTS[name][0], "fault": MUTANTS[name][3],
               **({"tests": tests_of(name)} if args.own_tests else {}), **res}
        report["mutants"].append(row)
        verdict = "CAUGHT" if res["caught"] else "MISSED"
        print(f"{verdict:6} {name:28} {res['seconds']:7.1f} s  "
              f"{(res['first_failure'] or [res['summary']])[0]}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        print(f"# wrote {args.json}", flush=True)
    missed = [m["name"] for m in report["mutants"] if not m["caught"]]
    return 1 if missed or (report["baseline"] and report["baseline"]["caught"]) else 0


if __name__ == "__main__":
    sys.exit(main())
