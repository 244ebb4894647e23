import os
import shutil
import subprocess


def _gpu_visible() -> bool:
    if not shutil.which("nvidia-smi"):
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


# Without a GPU, kernels run under Numba's CUDA simulator. Set before numba is imported.
if "NUMBA_ENABLE_CUDASIM" not in os.environ and not _gpu_visible():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

# tests/mpi holds the inner tests that tests/test_mpi.py runs on every rank under mpiexec;
# the outer run must not import them (they need MPI ranks).
collect_ignore = [] if os.environ.get("RING_INNER_MPI") else ["mpi"]


def pytest_sessionstart(session):
    """Numba's caches warm before any mpiexec job (tests/warm.py); under the simulator, its
    patches for the tests that launch kernels of their own."""
    from kernels.simulator import prepare
    prepare()
    if os.environ.get("RING_INNER_REPORT"):
        return  # an inner run: the outer one has done it
    if session.config.getoption("collectonly"):
        return  # runs nothing (tests/test_gpu_session.py collects each step's selection)
    from .warm import warm
    warm()
