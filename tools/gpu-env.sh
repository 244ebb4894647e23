# Source on a lent GPU machine (no network): installs the carried wheels (.whl/) and points
# Python and MPI at them.
#   numpy<2.5: numba-cuda 0.30 still uses np.row_stack, gone from the NumPy 2.5 the image has.
#   mpich: mpiexec and libmpi. Installed with --prefix, because --target drops a wheel's
#   data files (the library); MPI4PY_LIBMPI makes the image's mpi4py load it, not Open MPI.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/numpy-*.whl || return 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --prefix /tmp/mpich .whl/mpich-*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD
export PATH=/tmp/mpich/bin:$PATH
export MPI4PY_LIBMPI=/tmp/mpich/lib/libmpi.so.12
export PYTHONUNBUFFERED=1
# NCCL >= 2.30, where a session installed it (tools/nccl_wheel.py): the harness loads it
# ahead of the image's NCCL (harness/nccl_lib.py)
[ -f /tmp/nccl230/nvidia/nccl/lib/libnccl.so.2 ] && \
    export RING_NCCL_LIB=/tmp/nccl230/nvidia/nccl/lib/libnccl.so.2
return 0 2>/dev/null || true
