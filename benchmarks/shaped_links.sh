#!/usr/bin/env bash
# Wire compression over links that do not take the CPU: TCP between emulated nodes over
# loopback, shaped by tc's token bucket (tbf) to each RATE. Unshaped, loopback TCP runs at
# what the two ranks' cores can copy (results/host-compression-links.md), so a 16-bit
# wire's casts add to the link's time; shaped, the link's time is the rate's, as a NIC's
# would be, and the casts can hide under it. RATE counts both directions (one lo, one
# queue: a ring's send and receive share it). Each run's JSON records the qdisc
# (meta.loopback_qdisc). Needs CAP_NET_ADMIN (root); the shaping is removed on exit.
#
#   [RATES="2gbit 5gbit"] [REPS=5] [TAG=run1] [OUT=dir] [WIRES=float32,bf16,topk] bash benchmarks/shaped_links.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results/host-compression-shaped}
PY=${PY:-.venv/bin/python}
MPIEXEC=${MPIEXEC:-.venv/bin/mpiexec}
mkdir -p "$OUT"
trap 'tc qdisc del dev lo root 2>/dev/null || true' EXIT
for rate in ${RATES:-2gbit 5gbit 10gbit 20gbit}; do
  tc qdisc replace dev lo root tbf rate "$rate" burst 1mb latency 200ms
  tc qdisc show dev lo
  # 2 nodes of 1 rank, every byte across the shaped link
  RING_NODES=2 MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self $MPIEXEC -n 2 $PY benchmarks/compression.py \
    --sizes 16M,64M --reps "${REPS:-5}" --wires "${WIRES:-float32,bf16,fp16}" --json "$OUT/k2-$rate-${TAG:-run1}.json"
  # 2 nodes of 2 ranks: shared memory inside, the shaped link between (two-level all-reduce)
  MPIR_CVAR_NUM_CLIQUES=2 UCX_TLS=tcp,self $MPIEXEC -n 4 $PY benchmarks/compression.py \
    --sizes 16M,64M --reps "${REPS:-5}" --wires "${WIRES:-float32,bf16,fp16}" --json "$OUT/k4-2x2-$rate-${TAG:-run1}.json"
done
