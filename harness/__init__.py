"""The benchmark harness: nccl-tests style sweeps under mpiexec, ring beside its baselines.

    mpiexec -n 2 python -m harness allreduce -b 8 -e 64M -f 4 --impl ring,mpi
"""
