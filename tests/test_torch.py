"""torch.distributed with backend "ring" (ring/torch.py): the inner tests of
tests/mpi/check_torch.py on 2 and 4 ranks beside gloo, and on a GPU machine those of
tests/mpi/check_torch_cuda.py (CUDA tensors, 2 processes sharing the GPU, beside NCCL and
gloo); skipped where torch is not installed (.ci/run installs the CPU build when the
machine has its wheel)."""

import pytest

from .gpu import needs_gpu
from .mpirun import assert_inner_passed, pytest_under_mpi

torch = pytest.importorskip("torch")


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [2, 4])
def test_backend_beside_gloo(nprocs):
    rc, out, reports = pytest_under_mpi(nprocs, "tests/mpi/check_torch.py", timeout=240)
    assert_inner_passed(rc, out, reports, nprocs)


@needs_gpu
@pytest.mark.mpi
def test_backend_on_cuda_beside_nccl():
    rc, out, reports = pytest_under_mpi(2, "tests/mpi/check_torch_cuda.py", timeout=300)
    assert_inner_passed(rc, out, reports, 2)


def test_ranks_must_be_mpis():
    """Started without mpiexec (torchrun, say) every process is MPI rank 0 of 1: refused,
    naming both numberings, instead of each rank reducing alone."""
    import ring.torch
    with pytest.raises(ValueError, match="torch rank 1 of 2, MPI rank 0 of 1"):
        ring.training.torch._mpi_comm([0, 1], 1, 2)
    with pytest.raises(ValueError, match="mpiexec"):
        ring.training.torch._mpi_comm([0, 1], 0, 2)
