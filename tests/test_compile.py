"""Every kernel compiles for a real GPU (sm_90), without one: tools/compile_kernels.py
--quick, in processes of their own (the simulator off; two shards at once, one per core of
the CI machine). The simulator runs a kernel's Python, so a kernel that only a GPU's
compiler rejects (types, libdevice, inline PTX), whose PTX lacks what it must hold, or
whose registers would make a ring kernel's block unlaunchable (ptxas), fails here instead
of in a scarce GPU session. Needs NVVM, NVRTC and ptxas: `make
build/cuda-compilers` (CUDA 13's pip wheels; .ci/run makes them), or RING_CUDA_COMPILERS
naming such a folder; skipped without them."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(os.environ.get("RING_CUDA_COMPILERS", ROOT / "build" / "cuda-compilers"))


CU = HERE / "nvidia" / "cu13"
SHARDS = 2


def total(out: str, what: str) -> int:
    """The sum over the shards' outputs of the counts printed as "compiled N <what>"."""
    counts = re.findall(rf"^compiled (\d+) {re.escape(what)} for sm_90$", out, re.M)
    assert len(counts) == SHARDS, f"{what}: {counts}\n{out}"
    return sum(map(int, counts))


# Its shards' limit: 370-390 s on a slow CI machine beside the suite's other worker, 600 s
# (the limit before) on one also running a session's own jobs: a limit, not a timing
LIMIT_S = 1200


@pytest.mark.skipif(not (CU / "bin" / "ptxas").exists(),
                    reason=f"no NVVM / NVRTC / ptxas wheels in {HERE} (make build/cuda-compilers)")
@pytest.mark.timeout(LIMIT_S + 60)
def test_every_kernel_compiles_for_the_gpu(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_HOME=str(CU),
               LD_LIBRARY_PATH=os.pathsep.join(filter(None, [
                   str(CU / "lib"), os.environ.get("LD_LIBRARY_PATH")])))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    procs = [subprocess.Popen([sys.executable, str(ROOT / "tools" / "compile_kernels.py"),
                               "--quick", f"--shard={i}/{SHARDS}",
                               f"--census={tmp_path / str(i)}.json"], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for i in range(SHARDS)]
    try:
        outs = [p.communicate(timeout=LIMIT_S) for p in procs]
    finally:
        for p in procs:  # (a shard past the limit: none left running)
            p.kill()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, out + err
    out = "".join(o for o, _ in outs)
    # six (op, dtype) cases, each with system- and GPU-scoped fences, each with both hand-offs
    assert total(out, "variants of the ring kernel") == 24, out
    assert total(out, "kernels of kernels/") > 0, out
    assert total(out, "hand-off kernels") == 6, out
    # the LL kernels of the four cases of at most 4 bytes an element (GPU scope, acqrel)
    assert total(out, "LL variants of the ring kernel") == 4, out
    # assembled, launchable: the ring kernel's 28, the one-shot and two-shot all-reduce
    # kernels' 5 cases each and the two-shot reduce-scatter's and all-gather's 3 each,
    # within 64 registers a thread (two blocks of 512 a multiprocessor, as
    # kernel_path.room counts: the two-shot took 70 before its launch bounds)
    assert out.count("registers per thread") == 28 + 10 + 6, out
    lines = out.splitlines()
    assert sum("two-shot" in s and "registers per thread" in s for s in lines) == 5 + 6, out
    assert out.count("one-shot") == 5, out
    # the census (--census: each kernel's PTX instructions by opcode, kernels/inline.py):
    # every kernel compiled, each read as instructions (its return, its parameters' loads)
    census = [k for i in range(SHARDS)
              for k in json.loads((tmp_path / f"{i}.json").read_text())]
    compiled = sum(total(out, what) for what in (
        "variants of the ring kernel", "LL variants of the ring kernel", "kernels of kernels/",
        "hand-off kernels"))
    assert len(census) == compiled, (len(census), compiled)
    for k in census:
        ops = k["opcodes"]
        assert ops.get("ret", 0) >= 1 and any(o.startswith("ld.") for o in ops), k
    # the 16-byte loops read in the SASS (cuobjdump, nvdisasm: in the same wheels' bin):
    # the two-shot's 11 kernels and the ring kernel's 24 variants (simple protocol), free of
    # spills (compile_kernels exits otherwise)
    if (CU / "bin" / "cuobjdump").exists() and (CU / "bin" / "nvdisasm").exists():
        vector = [s for s in lines if "innermost 16-byte loops" in s]
        assert sum("two-shot" in s for s in vector) == 5 + 6, out
        assert sum("shot" not in s for s in vector) == 24, out
