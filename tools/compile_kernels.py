"""Compile every kernel to PTX without a GPU: the persistent ring kernel for every (op,
dtype), with system- and with GPU-scoped fences (only GPU-scoped ones in the latter), each
with both hand-offs (atomics between membars; relaxed loads and stores with fence.acq_rel,
and then no membar, no fence.sc and nothing of the other scope), and
the kernels of kernels/ (reduce, fold, cast, pack, int8 quantize).

Numba's simulator runs a kernel's Python, not its compiled form: this checks that each also
compiles for a real GPU (types, the inline-PTX clock, atomics, libdevice calls) and holds
what the PTX must (the ring kernel's clock, pause, fences and atomics; no fused
multiply-add in the int8 kernels, whose bits must be the host's). With ptxas (on PATH or
in $CUDA_HOME/bin) it also assembles each ring kernel variant and checks that a block of the
most threads per channel allowed (1024) can launch at all (registers x threads within the 64 K registers
of a multiprocessor), printing each variant's registers. --quick: a cross-section of the
ring kernel's variants; --shard I/N: every N-th piece of the work (tests/test_compile.py
runs both halves of --quick at once); --census FILE: each kernel's PTX instructions
counted by opcode, so that two trees' compiles compare (kernels/inline.py). Needs NVVM and
NVRTC, no GPU: a CUDA toolkit, or the pip wheels (`make build/cuda-compilers`):

    CUDA_HOME=build/cuda-compilers/nvidia/cu13 LD_LIBRARY_PATH=build/cuda-compilers/nvidia/cu13/lib \
        python tools/compile_kernels.py [--cc 9.0] [--quick] [--shard I/N] [--census FILE]
"""

from __future__ import annotations

import argparse
import collections
import functools
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cc", default="9.0", help="compute capability (default 9.0, Hopper)")
    ap.add_argument("--quick", action="store_true", help="a cross-section of the ring kernel")
    ap.add_argument("--shard", default="0/1", metavar="I/N",
                    help="compile every N-th piece of the work from the I-th (N processes at once "
                         "do it all; each prints its own counts)")
    ap.add_argument("--census", metavar="JSON",
                    help="write each kernel's PTX instructions, counted by opcode, in the "
                         "order compiled: two trees' files differ where their code does")
    args = ap.parse_args()
    cc = tuple(int(v) for v in args.cc.split("."))
    i, n = (int(v) for v in args.shard.split("/"))
    if not 0 <= i < n:
        ap.error(f"--shard: need 0 <= I < N, got {args.shard}")
    pieces = itertools.count()

    def mine() -> bool:
        """Whether the next piece of the work is this shard's."""
        return next(pieces) % n == i

    from types import SimpleNamespace

    from numba import cuda
    from numba.cuda import dispatcher

    # device functions are compiled for "the current device" when a kernel calls them:
    # without a GPU, name the target here instead (compile_ptx's cc covers the kernel)
    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=cc)
    census = []
    if args.census:
        compile_ptx = cuda.compile_ptx

        def counted(fn, sig, **kw):
            ptx, resty = compile_ptx(fn, sig, **kw)
            census.append({"kernel": getattr(fn, "__name__", "?"), "opcodes": opcodes(ptx)})
            return ptx, resty
        cuda.compile_ptx = counted

    from kernels.dtypes import KERNEL_DTYPES
    from ring.cuda.persistent import BOUNDS, signature, source
    from ringtypes import Op

    done = ll_done = 0
    for name, kd in KERNEL_DTYPES.items():
        for op in Op:
            if op is Op.AVG and not kd.floating:
                continue
            if args.quick and (str(op), name) not in QUICK:
                continue
            ptx = None  # (this shard may compile none of this case's variants)
            # fences across GPUs / every neighbour on this one; atomics between membars /
            # relaxed loads and stores with fence.acq_rel (RING_KERNEL_SYNC=acqrel)
            for gpu_scope, acqrel in itertools.product((False, True), (False, True)):
                if not mine():
                    continue
                ptx, _ = cuda.compile_ptx(source(op, name, gpu_scope=gpu_scope, acqrel=acqrel),
                                          signature(name), cc=cc, launch_bounds=BOUNDS)
                scope = "gpu" if gpu_scope else "sys"
                what = f"{op} {name} ({scope} scope{', acqrel' if acqrel else ''})"
                launchable(ptx, cc, what)
                if acqrel:
                    needed = (f"fence.acq_rel.{scope}", f"ld.relaxed.{scope}",
                              f"st.relaxed.{scope}")
                    banned = ("membar", "fence.sc", ".gpu" if scope == "sys" else ".sys")
                else:
                    needed = ("membar.gl" if gpu_scope else "membar.sys", "atom.global")
                    banned = ("membar.sys",) if gpu_scope else ()
                holds(ptx, what, ("%globaltimer", "nanosleep") + needed, banned)
                # 16-byte vectors (every dtype), no spill in their loop
                holds(ptx, what, ("ld.global.v4.u32", "st.global.v4.u32"), ())
                spills = vector_loop_spills(ptx, cc)
                if spills is not None:
                    print(f"{what}: innermost 16-byte loops' spill instructions {spills}")
                    if not spills or any(spills):
                        raise SystemExit(f"{what}: no vector loop, or one that spills: "
                                         f"{spills}")
                done += 1
            # small calls as LL words (RING_KERNEL_PROTO=ll)
            if kd.storage.itemsize <= 4 and mine():
                ptx, _ = cuda.compile_ptx(source(op, name, gpu_scope=True, acqrel=True, ll=True),
                                          signature(name), cc=cc, launch_bounds=BOUNDS)
                what = f"{op} {name} (gpu scope, acqrel, ll)"
                launchable(ptx, cc, what)
                holds(ptx, what, ("ld.relaxed.gpu.u64", "st.relaxed.gpu.u64", "fence.acq_rel.gpu",
                                  "%globaltimer", "nanosleep"), ("membar", "fence.sc", ".sys"))
                ll_done += 1
            if (op, name) == (Op.SUM, "float32") and ptx is not None:
                regs = re.findall(r"\.reg \.(\w+)\s+%\w+<(\d+)>", ptx)
                print(f"sum float32: {len(ptx.splitlines())} lines of PTX, registers {regs}")
    print(f"compiled {done} variants of the ring kernel for sm_{cc[0]}{cc[1]}")
    print(f"compiled {ll_done} LL variants of the ring kernel for sm_{cc[0]}{cc[1]}")
    print(f"compiled {library(cuda, cc, mine)} kernels of kernels/ for "
          f"sm_{cc[0]}{cc[1]}")
    print(f"compiled {handoffs(cuda, cc) if mine() else 0} hand-off kernels for sm_{cc[0]}{cc[1]}")
    if args.census:
        with open(args.census, "w") as f:
            json.dump(census, f, indent=1, sort_keys=True)
        print(f"wrote the census of {len(census)} kernels' PTX to {args.census}")
    return 0


def opcodes(ptx: str) -> dict[str, int]:
    """How many of each instruction the PTX holds (directives, labels, braces and
    comments left out; a predicate guard's instruction counted as itself)."""
    ops = collections.Counter()
    for line in ptx.splitlines():
        words = line.split("//")[0].split()
        if words and words[0].startswith("@"):
            words = words[1:]
        if words and words[0][0] not in ".{}" and not words[0].endswith(":"):
            ops[words[0].rstrip(";")] += 1
    return dict(ops)


def handoffs(cuda, cc) -> int:
    """kernels/handoff.py's ping-pong in every mode at both scopes: the LL one with no fence
    and no counter atomics at all (its word stored and polled relaxed), acqrel with
    fence.acq_rel and no membar, fence with membar and atomics."""
    from numba import types

    from kernels.handoff import MODES, source
    i64 = types.int64
    sig = types.void(i64[::1], i64, i64, i64[::1], i64[::1], types.boolean)
    done = 0
    for mode, scope in itertools.product(MODES, ("gpu", "sys")):
        ptx, _ = cuda.compile_ptx(source(mode, scope), sig, cc=cc)
        what = f"hand-off {mode} ({scope} scope)"
        needed = {"ll": (f"ld.relaxed.{scope}", f"st.relaxed.{scope}"),
                  "acqrel": (f"fence.acq_rel.{scope}", f"st.relaxed.{scope}"),
                  "fence": ("membar.gl" if scope == "gpu" else "membar.sys", "atom.global")}[mode]
        banned = {"ll": ("membar", "fence."), "acqrel": ("membar",), "fence": ()}[mode]
        holds(ptx, what, ("%globaltimer",) + needed, banned)
        done += 1
    return done


def holds(ptx: str, what: str, needed, banned) -> None:
    """Exit naming the first instruction the PTX lacks or holds against its kind."""
    for n in needed:
        if n not in ptx:
            raise SystemExit(f"{what}: {n!r} missing from the PTX")
    for b in banned:
        if b in ptx:
            raise SystemExit(f"{what}: {b!r} in the PTX")


REGISTERS_PER_SM = 65536  # every compute capability from 5.0 to 10.x
THREADS_GPU = 1024  # the most threads per channel RING_KERNEL_THREADS allows (default 512)


def ptxas() -> str | None:
    home = os.environ.get("CUDA_HOME")
    found = os.path.join(home, "bin", "ptxas") if home else None
    return found if found and os.path.exists(found) else shutil.which("ptxas")


@functools.lru_cache(maxsize=4)
def assemble(ptx: str, cc) -> tuple[int, str, bytes] | None:
    """ptxas -v on the PTX, once for launchable and vector_loop_spills alike: (its exit
    status, its report, the cubin); None without ptxas."""
    exe = ptxas()
    if exe is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        p = subprocess.run([exe, f"-arch=sm_{cc[0]}{cc[1]}", "-v", src, "-o", cubin],
                           capture_output=True, text=True)
        if p.returncode:
            return p.returncode, p.stderr, b""
        with open(cubin, "rb") as f:
            return 0, p.stderr, f.read()


def launchable(ptx: str, cc, what: str) -> None:
    """Assemble the ring kernel's PTX (when ptxas is here): a block of THREADS_GPU threads
    must fit a multiprocessor's registers, or every launch fails for resources."""
    assembled = assemble(ptx, cc)
    if assembled is None:
        return
    rc, report, _ = assembled
    if rc:
        raise SystemExit(f"{what}: ptxas failed: {report[-500:]}")
    regs = int(re.search(r"Used (\d+) registers", report).group(1))
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    spills = f", spills {spill.group(1)} / {spill.group(2)} bytes stored / loaded" \
        if spill and spill.group(1) != "0" else ""
    print(f"{what}: {regs} registers per thread, {regs * THREADS_GPU} per block of "
          f"{THREADS_GPU}{spills}")
    if regs * THREADS_GPU > REGISTERS_PER_SM:
        raise SystemExit(f"{what}: {regs} registers x {THREADS_GPU} threads exceed a "
                         f"multiprocessor's {REGISTERS_PER_SM}: the kernel could not launch")


def vector_loop_spills(ptx: str, cc) -> list[int] | None:
    """Spill loads and stores (LDL / STL) in each innermost loop of the SASS that moves
    16-byte vectors (LDG.E.128 / STG.E.128): a loop's spills cost every iteration. None
    without ptxas and cuobjdump (with nvdisasm) beside it."""
    exe = ptxas()
    dump = exe and os.path.join(os.path.dirname(exe), "cuobjdump")
    if not dump or not os.path.exists(dump):
        return None
    with tempfile.TemporaryDirectory() as d:
        cubin = os.path.join(d, "k.cubin")
        with open(cubin, "wb") as f:
            f.write(assemble(ptx, cc)[2])
        env = dict(os.environ, PATH=os.path.dirname(exe) + os.pathsep + os.environ["PATH"])
        sass = subprocess.run([dump, "-sass", cubin], capture_output=True, text=True,
                              check=True, env=env).stdout
    code = [(int(m.group(1), 16), m.group(2)) for m in
            re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", sass)]
    at = {a: i for i, (a, _) in enumerate(code)}
    loops = []  # (first, last) instruction of each backward branch's loop
    for i, (a, text) in enumerate(code):
        m = re.search(r"BRA (?:`\(.*?\)\s*)?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < a and int(m.group(1), 16) in at:
            loops.append((at[int(m.group(1), 16)], i))
    if not loops:
        raise SystemExit("vector_loop_spills: no loop found in the SASS (its format changed?)")
    spills = []
    for lo, hi in loops:
        if any(lo <= lo2 and hi2 <= hi and (lo2, hi2) != (lo, hi) for lo2, hi2 in loops):
            continue  # not innermost
        body = [text for _, text in code[lo:hi + 1]]
        if any("LDG.E.128" in t or "STG.E.128" in t for t in body):
            spills.append(sum("LDL" in t or "STL" in t for t in body))
    return spills


# --quick: each op, each width, floating and integer
QUICK = {("sum", "float32"), ("avg", "bfloat16"), ("prod", "float16"), ("min", "uint8"),
         ("max", "float64"), ("sum", "int64")}


def library(cuda, cc, mine) -> int:
    """Compile the kernels of kernels/ (a cross-section of reduce's table); check the PTX.
    mine(): whether the next piece of the work is this shard's (the one-shot's and
    two-shot's kernels each a piece; the rest two)."""
    from types import SimpleNamespace

    import numpy as np

    # the modules make their kernels with cuda.jit(signature)(function), which would load
    # them for a device: take the (function, signature) instead and compile to PTX here
    jit = cuda.jit
    cuda.jit = lambda sig=None, **kw: jit(sig, **kw) if "device" in kw or callable(sig) else \
        (lambda fn: SimpleNamespace(py_func=fn, sig=sig, bounds=kw.get("launch_bounds")))
    from importlib import import_module

    from ringtypes import Op
    casts, pack, quantize, reduce = (import_module(f"kernels.{m}")  # (kernels/__init__ names
                                     for m in ("casts", "pack", "quantize", "reduce"))  # functions so)

    def compile_(kernel, what: str, banned=()) -> None:
        ptx, _ = cuda.compile_ptx(kernel.py_func, kernel.sig, cc=cc)
        for b in banned:
            if b in ptx:
                raise SystemExit(f"{what}: {b!r} in the PTX")

    done = shots(cuda, cc, mine) + (topk_kernels(cuda, cc) if mine() else 0)
    if not mine():
        return done
    for op, dtype, two, paired, k in ((Op.SUM, "float32", False, False, 2),
                                      (Op.AVG, "bfloat16", True, True, 4),
                                      (Op.PROD, "float16", False, True, 3),
                                      (Op.MAX, "int8", True, False, 8)):
        compile_(reduce.kernel_for(op, dtype, two, paired), f"reduce {op} {dtype}")
        compile_(reduce.fold_kernel_for(op, dtype, k), f"fold {op} {dtype} of {k}")
        done += 2
    # a float32 average of three: its sums in float32 (the divide's float64 quotient once let
    # the running value be typed float64, so the sum before the last was not rounded)
    compile_(reduce.fold_kernel_for(Op.AVG, "float32", 3), "fold avg float32 of 3",
             banned=("add.f64", "add.rn.f64"))
    done += 1
    for src, dst in casts.CASTS:
        compile_(casts.cast_kernel(src, dst), f"cast {src} -> {dst}")
        done += 1
    # avg's scale: one float32 multiply a value (float64 would give the same bits, slower)
    compile_(casts.scale_kernel(), "scale", banned=("mul.f64", "mul.rn.f64"))
    done += 1
    for into in (True, False):
        compile_(pack._list_kernel(np.dtype(np.float32), 3, into), "pack")
        compile_(pack._strided_kernel(np.dtype(np.uint16), into), "pack_strided")
        done += 2
    for k, what in zip(quantize._kernels(), ("quantize", "dequantize_sum")):
        # q * scale rounded apart from the add after it: no fma, and no mul.f32 (without .rn)
        # that ptxas would fuse with an add.f32 into one
        compile_(k, what, banned=("fma", "mul.f32"))
        done += 1
    return done


def topk_kernels(cuda, cc) -> int:
    """kernels/topk.py's (Top-K's selection and combine on the cuda device), with the types
    ring/training/topk.py passes; the velocity's m v + g rounded as the host's (no fma)."""
    from numba import types

    from kernels import topk
    f32, f64, i32, i64 = (types.Array(t, 1, "C") for t in
                          (types.float32, types.float64, types.int32, types.int64))
    b, n = types.boolean, types.int64
    cases = ((topk._owe, (f32, f32, f32, f32, types.float32, b, b, b), ("fma", "mul.f32")),
             (topk._scale, (f32, f32, types.float32), ("fma", "mul.f32")),
             (topk._sample, (f32, n, f64), ()), (topk._above, (f32, types.float32, i64, i64), ()),
             (topk._gather, (f32, i64, n, f32), ()),
             (topk._pack, (i32, f32, i64, f32, f32, f32, b, b), ()), (topk._zero, (f32,), ()),
             (topk._add_at, (f32, i32, f32, n, n), ()), (topk._divide, (f32, types.float32), ()))
    for kernel, sig, banned in cases:
        ptx, _ = cuda.compile_ptx(kernel.py_func, types.void(*sig), cc=cc)
        holds(ptx, f"topk {kernel.py_func.__name__}", (), banned)
    return len(cases)


def shots(cuda, cc, mine) -> int:
    """The one-shot and two-shot all-reduce kernels (ring/cuda/oneshot_kernel.py,
    twoshot_kernel.py) for a cross-section of op x dtype x K (the two-shot's reduce-scatter
    and all-gather for the first three), from their (function, signature): each compiles,
    and (with ptxas) fits 1024 threads of a multiprocessor's registers, as kernel_path.room
    assumes when it sizes their grids; the two-shot's loads and stores of data are 16-byte
    vectors."""
    from ring.cuda.oneshot_kernel import oneshot_source
    from ring.cuda.twoshot_kernel import BOUNDS, twoshot_source
    from ring.schedule import Collective
    from ringtypes import Op
    done = 0
    halves = [("two-shot reduce-scatter", lambda op, d, k: twoshot_source(
                  op, d, k, Collective.REDUCE_SCATTER)),
              ("two-shot all-gather", lambda op, d, k: twoshot_source(
                  op, d, k, Collective.ALLGATHER))]
    for i, (op, dtype, k) in enumerate(((Op.SUM, "float32", 2), (Op.AVG, "bfloat16", 4),
                                        (Op.MAX, "int8", 3), (Op.PROD, "float64", 4),
                                        (Op.MIN, "uint64", 2))):
        for name, make in [("one-shot", oneshot_source), ("two-shot", twoshot_source),
                           *(halves if i < 3 else [])]:
            if not mine():
                continue
            fn, sig = make(op, dtype, k)
            ptx, _ = cuda.compile_ptx(fn, sig, cc=cc,
                                      launch_bounds=BOUNDS if "two" in name else None)
            what = f"{name} {op} {dtype} K={k}"
            launchable(ptx, cc, what)
            if name.startswith("two-shot"):  # 16-byte vectors, whatever the dtype
                holds(ptx, what, ("ld.global.v4.u32", "st.global.v4.u32"), ())
                spills = vector_loop_spills(ptx, cc)
                if spills is not None:
                    print(f"{what}: innermost 16-byte loops' spill instructions {spills}")
                    # none, whatever the dtype (1- and 2-byte ones keep their vectors as
                    # words: as 8-16 lanes each, they spilled)
                    if any(spills):
                        raise SystemExit(f"{what}: its vector loops spill: {spills}")
            done += 1
    return done


if __name__ == "__main__":
    sys.exit(main())
