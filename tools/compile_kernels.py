"""Compile the persistent ring kernel to PTX for every (op, dtype), without a GPU.

Numba's simulator runs the kernel's Python, not its compiled form: this checks that every
variant also compiles for a real GPU (types, the inline-PTX clock, atomics), and prints the
registers and shared memory of one. Needs NVVM and NVRTC (a CUDA toolkit, or the
nvidia-cuda-nvcc-cu12 and nvidia-cuda-nvrtc-cu12 wheels on LD_LIBRARY_PATH); no GPU.

    python tools/compile_kernels.py [--cc 9.0]
"""

from __future__ import annotations

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cc", default="9.0", help="compute capability (default 9.0, Hopper)")
    args = ap.parse_args()
    cc = tuple(int(v) for v in args.cc.split("."))

    from types import SimpleNamespace

    from numba import cuda
    from numba.cuda import dispatcher

    # device functions are compiled for "the current device" when a kernel calls them:
    # without a GPU, name the target here instead (compile_ptx's cc covers the kernel)
    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=cc)

    from kernels.dtypes import KERNEL_DTYPES
    from ring.cuda.persistent import signature, source
    from ringtypes import Op

    done = 0
    for name, kd in KERNEL_DTYPES.items():
        for op in Op:
            if op is Op.AVG and not kd.floating:
                continue
            ptx, _ = cuda.compile_ptx(source(op, name), signature(name), cc=cc)
            for needed in ("%globaltimer", "nanosleep", "membar.sys", "atom.global"):
                if needed not in ptx:
                    raise SystemExit(f"{op} {name}: {needed!r} missing from the PTX")
            done += 1
            if (op, name) == (Op.SUM, "float32"):
                regs = re.findall(r"\.reg \.(\w+)\s+%\w+<(\d+)>", ptx)
                print(f"sum float32: {len(ptx.splitlines())} lines of PTX, registers {regs}")
    print(f"compiled {done} variants of the ring kernel for sm_{cc[0]}{cc[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
