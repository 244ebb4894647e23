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


def test_a_tensor_list_must_hold_k_tensors_like_the_other_argument():
    """ring.torch's own check of torch's tensor lists (_blocks, agreed on by every rank):
    K tensors, each of the other argument's size and dtype. torch's front end refuses
    mixed dtypes itself (on the rank that passed them), so this is the check for a caller
    of the process group's methods."""
    from ring.training.torch import _blocks
    x = torch.ones(4)
    assert _blocks([[torch.empty(4)] * 2], [x], 2, "output tensor list") is None
    assert "must hold 2 tensors (one per rank), got 3" in \
        _blocks([[torch.empty(4)] * 3], [x], 2, "output tensor list")
    for bad, says in ((torch.empty(3), "3 x torch.float32"),
                      (torch.empty(4, dtype=torch.float64), "4 x torch.float64")):
        assert f"like the other argument (4 x torch.float32), got {says}" in \
            _blocks([[torch.empty(4), bad]], [x], 2, "output tensor list")


def test_only_cpu_and_cuda_tensors_are_taken():
    """ring.training.tensors.as_array: a CPU tensor as a NumPy view of its memory (bfloat16
    as ml_dtypes'), a tensor elsewhere (the meta device, say) or a non-tensor refused with a
    TypeError naming it."""
    from ring.training.tensors import as_array, as_tensor
    t = torch.arange(4, dtype=torch.bfloat16)
    a = as_array(t)
    assert a.dtype.name == "bfloat16" and a.tolist() == [0, 1, 2, 3]
    a[0] = 7  # the same memory
    assert t[0].item() == 7 and as_tensor(a, t).dtype == torch.bfloat16
    for dt in (torch.float8_e4m3fn, torch.float8_e5m2):  # as ml_dtypes', through uint8 bits
        t = torch.arange(4).to(dt)
        a = as_array(t)
        assert a.dtype.name == str(dt).removeprefix("torch.") and a.tolist() == [0, 1, 2, 3]
        a[1] = 3
        assert t.tolist() == [0, 3, 2, 3] and as_tensor(a, t).dtype == dt
    # a dtype NumPy lacks and ring does not carry: its bytes, under a dtype naming it, which
    # ring's argument check refuses on every rank (torch's own TypeError was this rank's only)
    for dt in (torch.float8_e4m3fnuz, torch.bits16):
        t = torch.zeros(4, 3, dtype=dt).t()  # (a strided one too: still a view)
        a = as_array(t)
        assert a.dtype.names == (str(dt),) and a.shape == (3, 4)
        assert a.__array_interface__["data"][0] == t.data_ptr()
        assert a.strides == tuple(st * t.element_size() for st in t.stride())
    with pytest.raises(TypeError, match="tensors on meta are not supported"):
        as_array(torch.empty(3, device="meta"))
    with pytest.raises(TypeError, match="expected a torch.Tensor, got list"):
        as_array([1.0])
