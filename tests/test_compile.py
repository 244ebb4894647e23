"""Every kernel compiles for a real GPU (sm_90), without one: tools/compile_kernels.py
--quick, in a process of its own (the simulator off). The simulator runs a kernel's Python,
so a kernel that only a GPU's compiler rejects (types, libdevice, inline PTX), whose PTX
lacks what it must hold, or whose registers would make a ring kernel's block unlaunchable
(ptxas), fails here instead of in a scarce GPU session. Needs NVVM, NVRTC and ptxas: `make
build/cuda-compilers` (CUDA 13's pip wheels; .ci/run makes them), or RING_CUDA_COMPILERS
naming such a folder; skipped without them."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(os.environ.get("RING_CUDA_COMPILERS", ROOT / "build" / "cuda-compilers"))


CU = HERE / "nvidia" / "cu13"


@pytest.mark.skipif(not (CU / "bin" / "ptxas").exists(),
                    reason=f"no NVVM / NVRTC / ptxas wheels in {HERE} (make build/cuda-compilers)")
def test_every_kernel_compiles_for_the_gpu():
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_HOME=str(CU),
               LD_LIBRARY_PATH=os.pathsep.join(filter(None, [
                   str(CU / "lib"), os.environ.get("LD_LIBRARY_PATH")])))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "compile_kernels.py"), "--quick"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    # six (op, dtype) cases, each with system- and GPU-scoped fences, each with both hand-offs
    assert "compiled 24 variants of the ring kernel" in p.stdout, p.stdout
    assert "kernels of kernels/ for sm_90" in p.stdout, p.stdout
    assert "compiled 6 hand-off kernels for sm_90" in p.stdout, p.stdout
    # the LL kernels of the four cases of at most 4 bytes an element (GPU scope, acqrel)
    assert "compiled 4 LL variants of the ring kernel" in p.stdout, p.stdout
    assert p.stdout.count("registers per thread") == 28, p.stdout  # assembled, launchable
