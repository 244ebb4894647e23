# ring.Group (one process, several ranks) on the lent GPU: tests, then the benchmark.
. tools/gpu-env.sh || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout ${TEST_LIMIT:-240} python3 -m pytest tests/test_group.py -x -q -p no:cacheprovider > $OUT/group-tests.txt 2>&1
echo "tests rc=$?"; tail -15 $OUT/group-tests.txt
timeout ${BENCH_LIMIT:-300} python3 benchmarks/group_bench.py ${BENCH_ARGS:---quick} --json $OUT/group-bench.json 2>&1 | tee $OUT/group-bench.txt | tail -40
