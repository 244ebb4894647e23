"""Which NCCL library the harness's baseline runs.

CuPy's binding (`cupy.cuda.nccl`) takes whatever `libnccl.so.2` the loader finds first: on
many machines an older system NCCL, which refuses several ranks on one GPU (before 2.30) and
is not the baseline this project exists to be compared with. The `cuda12` / `cuda13` extras
install NVIDIA's `nvidia-nccl-cu12` / `-cu13` wheel (>= 2.30), whose library lies at
`nvidia/nccl/lib/libnccl.so.2` in site-packages; `preload()` loads it, with its symbols
global, before CuPy's binding loads one of its own, so that the binding is bound to it (the
loader reuses a loaded library of the same soname), as `LD_PRELOAD` would do.

    RING_NCCL_LIB=/path/to/libnccl.so.2   that library instead (a lent GPU machine carries
                                          the 2.30 wheel in parts: tools/gpu-session.sh)
    RING_NCCL_LIB=system                  the loader's own choice (what CuPy finds)

The harness's NCCL label names the version that runs (`cupy.cuda.nccl.get_version()`) and
where it came from.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from pathlib import Path

ENV = "RING_NCCL_LIB"
SONAME = "libnccl.so.2"


def wheel_library(paths: list[str] | None = None) -> str | None:
    """The libnccl.so.2 of an installed nvidia-nccl wheel (in `paths`, default sys.path),
    or None. `nvidia` is a namespace package shared by NVIDIA's wheels."""
    if paths is None:
        spec = importlib.util.find_spec("nvidia")
        roots = list(spec.submodule_search_locations) if spec is not None else []
    else:
        roots = [str(Path(p) / "nvidia") for p in paths]
    for root in roots:
        lib = Path(root) / "nccl" / "lib" / SONAME
        if lib.exists():
            return str(lib)
    return None


def choice() -> tuple[str | None, str]:
    """(the library to preload, or None for the loader's own; where it comes from)."""
    asked = os.environ.get(ENV)
    if asked == "system":
        return None, f"the loader's own ({ENV}=system)"
    if asked:
        if not Path(asked).exists():
            raise FileNotFoundError(f"{ENV}={asked}: no such file")
        return asked, f"{ENV}"
    found = wheel_library()
    if found is not None:
        return found, "the nvidia-nccl wheel"
    return None, "the loader's own (no nvidia-nccl wheel installed)"


_loaded: dict = {}


def preload() -> str:
    """Load the chosen library before CuPy's NCCL binding is imported (once a process);
    what was chosen, for the label. After the binding is imported it is too late."""
    if "where" in _loaded:
        return _loaded["where"]
    path, where = choice()
    if path is not None:
        if "cupy.cuda.nccl" in sys.modules:
            where += " (not loaded: CuPy's binding was imported first)"
        else:
            _loaded["lib"] = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            where = f"{where}, {path}"
    _loaded["where"] = where
    return where
