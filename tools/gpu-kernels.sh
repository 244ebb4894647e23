# Kernel tests on the real GPU, variant exploration, launch costs, microbenchmarks.
# Run from the repo root on the lent machine; every step has its own time limit and
# writes its log under $OUT.
. tools/gpu-env.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
step() { local limit=$1 name=$2; shift 2; timeout $limit "$@" > $OUT/$name.txt 2>&1; echo "== $name rc=$?"; tail -${TAIL:-25} $OUT/$name.txt; }
[ -n "$ONLY_BENCH" ] || TAIL=22 step 120 explore python3 -m kernels.explore
[ -n "$ONLY_BENCH" ] || TAIL=10 step 60 launch_cost python3 -m kernels.launch_cost
[ -n "$ONLY_BENCH" ] || TAIL=4 step 150 tests python3 -m pytest tests/test_kernels.py -x -q -p no:cacheprovider
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1 | tr 'A-Z ' 'a-z-')
TAIL=3 step 200 bench python3 -m pytest tests/bench -q -p no:cacheprovider -o addopts= --benchmark-only --benchmark-json=$OUT/kernels-$GPU.json

