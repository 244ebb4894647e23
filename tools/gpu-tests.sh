# The whole test suite on the lent GPU machine (kernels without the simulator).
. tools/gpu-env.sh || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])"
timeout ${LIMIT:-400} python3 -m pytest -q -p no:cacheprovider -o addopts= --durations=5 "$@" > $OUT/tests.txt 2>&1
echo "rc=$?"; tail -15 $OUT/tests.txt
