"""Choosing between staged and direct MPI for device chunks across nodes."""

import pytest

from ring.transport import staged


@pytest.mark.parametrize("value,want", [("1", True), ("0", False)])
def test_the_override_decides(monkeypatch, value, want):
    monkeypatch.setenv(staged.ENV_AWARE, value)
    assert staged.cuda_aware() is want


def test_a_bad_override_is_an_error(monkeypatch):
    monkeypatch.setenv(staged.ENV_AWARE, "yes")
    with pytest.raises(ValueError, match="RING_CUDA_AWARE_MPI"):
        staged.cuda_aware()


def test_the_mpich_wheel_says_it_is_not_cuda_aware(monkeypatch):
    """The library is asked through MPIX_Query_cuda_support; the mpich wheel is built
    without CUDA (an Open MPI or MPICH built with it answers 1)."""
    from mpi4py import MPI
    if "MPICH" not in MPI.Get_library_version():
        pytest.skip("checks the mpich wheel")
    monkeypatch.delenv(staged.ENV_AWARE, raising=False)
    assert staged.library_cuda_support() is False  # asked, and answered (None: not found)
    assert staged.cuda_aware() is False
