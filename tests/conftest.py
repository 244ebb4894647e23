import os

# tests/mpi holds the inner tests that tests/test_mpi.py runs on every rank under mpiexec;
# the outer run must not import them (they need MPI ranks).
collect_ignore = [] if os.environ.get("RING_INNER_MPI") else ["mpi"]
