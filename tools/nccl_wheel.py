"""NCCL >= 2.30 for a lent GPU machine whose image has an older NCCL, carried in parts.

The machine has no network, and one device call carries at most 64 MiB of ignored files;
the nvidia-nccl-cu13 2.30.7 wheel is 216 MB. So, here:

    python3 tools/nccl_wheel.py fetch                 # .nccl/: the wheel in parts of 50 MB
                                                      # (pip download; .nccl/ is ignored)
then on the GPU machine, in quick succession (it keeps /tmp while warm, ~30 s idle), one
call per part, each carrying that part (tools/gpu-session.sh's step ncclpart runs `keep`):

    python3 tools/nccl_wheel.py keep --to /tmp/nccl-parts
and once every part is there (step nccl):

    python3 tools/nccl_wheel.py install --parts /tmp/nccl-parts --target /tmp/nccl230

which joins the parts under the wheel's own file name (pip refuses another), checks its
sha256 against the one `fetch` wrote, and installs it with pip --target. The harness then
loads /tmp/nccl230/nvidia/nccl/lib/libnccl.so.2 (RING_NCCL_LIB, tools/gpu-env.sh sets it
when the file is there; harness/nccl_lib.py) ahead of the image's NCCL.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

WHEEL = "nvidia-nccl-cu13==2.30.7"
PART = 50 * 10**6  # bytes: a part and the call's other carried files stay under 64 MiB
SUFFIX = ".part-"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def split(wheel: Path, out: Path, size: int = PART) -> list[Path]:
    """wheel -> out/<wheel name>.part-00, -01, ... of `size` bytes, and <name>.sha256."""
    out.mkdir(parents=True, exist_ok=True)
    parts = []
    with open(wheel, "rb") as f:
        for i, block in enumerate(iter(lambda: f.read(size), b"")):
            part = out / f"{wheel.name}{SUFFIX}{i:02d}"
            part.write_bytes(block)
            parts.append(part)
    (out / f"{wheel.name}.sha256").write_text(sha256(wheel) + "\n")
    return parts


def join(parts: Path) -> Path:
    """The parts in `parts` joined under the wheel's own name, its sha256 checked."""
    pieces = sorted(parts.glob(f"*{SUFFIX}*"))
    if not pieces:
        raise SystemExit(f"no parts (*{SUFFIX}NN) in {parts}")
    name = pieces[0].name.split(SUFFIX)[0]
    numbers = [int(p.name.split(SUFFIX)[1]) for p in pieces]
    if numbers != list(range(len(pieces))):
        raise SystemExit(f"parts missing: have {numbers}")
    wheel = parts / name
    with open(wheel, "wb") as f:
        for p in pieces:
            f.write(p.read_bytes())
    want = parts / f"{name}.sha256"
    if want.exists() and want.read_text().split()[0] != sha256(wheel):
        raise SystemExit(f"{wheel}: sha256 differs from {want.name}")
    return wheel


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    f = sub.add_parser("fetch", help="here: pip download the wheel, split it into parts")
    f.add_argument("--wheel", default=WHEEL)
    f.add_argument("--out", default=".nccl")
    f.add_argument("--part-mb", type=int, default=PART // 10**6,
                   help="part size in MB (the call's working tree travels beside it)")
    k = sub.add_parser("keep", help="on the GPU machine: copy the carried parts to --to")
    k.add_argument("--from", dest="src", default=".nccl")
    k.add_argument("--to", default="/tmp/nccl-parts")
    i = sub.add_parser("install", help="on the GPU machine: join the parts, pip --target")
    i.add_argument("--parts", default="/tmp/nccl-parts")
    i.add_argument("--target", default="/tmp/nccl230")
    a = ap.parse_args(argv)
    if a.what == "fetch":
        out = Path(a.out)
        got = out / "download"
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                        "--only-binary=:all:", "-d", str(got), a.wheel], check=True)
        for wheel in got.glob("*.whl"):
            print("\n".join(str(p) for p in split(wheel, out, a.part_mb * 10**6)))
        shutil.rmtree(got)
    elif a.what == "keep":
        to = Path(a.to)
        to.mkdir(parents=True, exist_ok=True)
        for p in Path(a.src).glob(f"*{SUFFIX}*"):
            shutil.copy(p, to / p.name)
        for p in Path(a.src).glob("*.sha256"):
            shutil.copy(p, to / p.name)
        print("\n".join(sorted(p.name for p in to.iterdir())))
    else:
        wheel = join(Path(a.parts))
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--no-compile", "--upgrade", "--target", a.target, str(wheel)],
                       check=True)
        lib = Path(a.target) / "nvidia" / "nccl" / "lib" / "libnccl.so.2"
        print(f"installed {wheel.name}: {lib} {'exists' if lib.exists() else 'MISSING'}")


if __name__ == "__main__":
    main()
