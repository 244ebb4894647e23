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
    """Compile the host's float16 / bfloat16 loops (ring/host/half.py) and the fast path's
    rounds (ring/host/fastround.py) once, into Numba's cache, before any mpiexec job: a
    fresh clone would otherwise compile them (~15 s each) in every rank of the first job
    that uses them, while its peers wait."""
    if os.environ.get("RING_INNER_REPORT"):
        return  # an inner run: the outer one has done it
    from ring import quantize
    from ring.host import fastring, fastround, half
    quantize.warm()  # int8 buckets (the examples' ranks would compile it at once)
    half.warm()
    fastround.warm()  # the fast path's compiled rounds, one per dtype
    fastring.warm()  # the ring's compiled walk, one per dtype (peers time out at 2 s in
    # some tests: a first call must not compile for seconds while they wait)
