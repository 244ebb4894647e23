"""ring/cuda/kernel_cache.py: a kernel-path kernel's disk-cache key (the persistent ring
kernel's, the one-shot's, the two-shot's) is the same in every process (Numba's own hashes the closure, whose device functions pickle with a per-process
UUID), differs for every variant and every change to the kernel's sources, and a cache
that cannot be read or written costs a compile, not an error. No GPU needed: the key is
made before anything compiles."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from ring.cuda import kernel_cache
from tests.mpirun import ROOT

KEY_OF = """
import hashlib, json, pickle, sys
from numba import cuda
from ringtypes import Op
from ring.cuda import kernel_cache, persistent as P
from ring.cuda.oneshot_kernel import oneshot_source
from ring.cuda.twoshot_kernel import twoshot_source
from ring.schedule import Collective
class Codegen:
    def magic_tuple(self): return ("sm_90",)
def key_of(fn, sig, variant):
    d = cuda.jit(cache=True)(fn)
    kernel_cache.keyed(d._cache, variant)
    return d._cache._index_key(sig.args, Codegen())
out = {}
for op, dtype, ll in [("SUM", "float32", False), ("MAX", "float32", False), ("SUM", "float32", True),
                      ("SUM", "int8", False)]:
    out[f"{op}-{dtype}-{ll}"] = key_of(P.source(Op[op], dtype, ll=ll), P.signature(dtype),
                                       ("persistent", op, dtype, 4, False, False, ll))
for op, dtype, k in [("SUM", "float32", 2), ("SUM", "float32", 4), ("MAX", "float32", 2)]:
    out[f"oneshot-{op}-{dtype}-{k}"] = key_of(*oneshot_source(Op[op], dtype, k),
                                              ("oneshot", op, dtype, k))
    for c in ("ALLREDUCE", "REDUCE_SCATTER"):
        out[f"twoshot-{op}-{dtype}-{k}-{c}"] = key_of(
            *twoshot_source(Op[op], dtype, k, Collective[c]), ("twoshot", op, dtype, k, c))
# Numba's index is a dict of these keys: one kernel's entry is another's where they are equal
hashes = {k: hashlib.sha256(pickle.dumps(v)).hexdigest() for k, v in out.items()}
print(json.dumps({"hashes": hashes, "distinct": len(set(out.values()))}))
"""


def keys_in_a_new_process() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}  # the real target
    env["PYTHONPATH"] = str(ROOT)
    p = subprocess.run([sys.executable, "-c", KEY_OF], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_every_process_looks_a_kernel_up_by_the_same_key():
    first, second = keys_in_a_new_process(), keys_in_a_new_process()
    assert first["hashes"] == second["hashes"]
    # op, protocol, dtype, K and the collective each make a key of their own: as Numba's
    # index compares them (equality, not their pickles, which may differ for equal keys)
    assert len(first["hashes"]) == 4 + 3 * 3 == first["distinct"]


class Cache:
    _launch_config_key = None

    def load_overload(self, sig, ctx):
        raise OSError("unreadable")

    def save_overload(self, sig, data):
        raise PermissionError("read-only")


class Codegen:
    def magic_tuple(self):
        return ("sm_90",)


def test_a_change_to_the_sources_makes_a_new_key(monkeypatch):
    c = Cache()
    kernel_cache.keyed(c, ("persistent", "SUM"))
    before = c._index_key((), Codegen())
    monkeypatch.setattr(kernel_cache, "sources_digest", lambda: "edited")
    kernel_cache.keyed(c, ("persistent", "SUM"))
    assert c._index_key((), Codegen()) != before


def test_the_digest_reads_every_source_file(tmp_path, monkeypatch):
    for rel in ("ring/cuda/persistent.py", "kernels/reduce.py", "ringtypes/__init__.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("a = 1\n")
    monkeypatch.setattr(kernel_cache, "ROOT", tmp_path)
    first = kernel_cache.sources_digest.__wrapped__()
    (tmp_path / "kernels/reduce.py").write_text("a = 2\n")
    assert kernel_cache.sources_digest.__wrapped__() != first


# imported by the kernels' modules, but not device code: nothing compiled reads them
HOST_SIDE = {"ring/cuda/arrays.py": "the SIMULATED flag", "ring/cuda/together.py": "set-up",
             "ring/cuda/areas.py": "the areas' allocation", "ring/cuda/kernel_cache.py": "itself",
             "ring/options.py": "RING_TWOSHOT_BLOCKS read (env_whole)"}


def test_the_digest_covers_every_file_the_kernels_are_built_from():
    """A kernel kept on disk is found again only while none of what it was built from has
    changed: every file under ring/ with CUDA device code (cuda.jit, or kernels.inline's
    @inline), and every project file the kernels' modules import from, must be among
    SOURCES (else an edit to it would load the kernel compiled before the edit), bar the few
    host-side ones named above."""
    from tests.test_layers import GRAPH, MODS  # the project's modules and their imports

    def file(mod: str) -> str:
        return str(MODS[mod].relative_to(ROOT))
    covered = {str(f.relative_to(ROOT)) for pattern in kernel_cache.SOURCES
               for f in ROOT.glob(pattern)}
    kernels = {m for m, f in MODS.items() if m.startswith("ring.")
               and m != "ring.cuda.kernel_cache"
               and any(code in f.read_text() for code in ("cuda.jit", "@inline"))}
    device = {file(m) for m in kernels}
    assert device >= {"ring/cuda/persistent.py", "ring/cuda/oneshot_kernel.py",
                      "ring/cuda/twoshot_kernel.py", "ring/cuda/board.py"}
    used = {file(t) for m in kernels for t in GRAPH[m]} - set(HOST_SIDE)
    assert used >= {"ring/cuda/program.py", "ring/transport/ipc.py", "ring/schedule.py"}
    assert not (device | used) - covered, sorted((device | used) - covered)


def test_each_kernel_names_every_argument_it_is_built_from_in_its_variant(monkeypatch):
    """The variant is what tells two kernels of one signature apart in the cache (a SUM
    and a MAX kernel of float32 share theirs): each argument of the persistent, one-shot and
    two-shot kernels, changed alone, must change the variant it is kept under."""
    from ringtypes import Op

    from ring.cuda import oneshot_kernel, persistent, twoshot_kernel
    from ring.schedule import Collective
    seen = []
    for m in (persistent, oneshot_kernel, twoshot_kernel):
        monkeypatch.setattr(m, "compiled", lambda fn, sig, variant, *a: seen.append(variant))
    kernels = [
        (persistent.ring_kernel, (Op.SUM, "float32", 4, False, False, False, True),
         [(Op.MAX,), ("int32",), (1,), (True,), (True,), (True,), (False,)]),
        (oneshot_kernel.oneshot_kernel, (Op.SUM, "float32", 2), [(Op.MAX,), ("int32",), (3,)]),
        (twoshot_kernel.twoshot_kernel, (Op.SUM, "float32", 2, Collective.ALLREDUCE),
         [(Op.MAX,), ("int32",), (3,), (Collective.REDUCE_SCATTER,)]),
    ]
    for make, base, others in kernels:
        seen.clear()
        make.__wrapped__(*base)  # (past the lru_cache)
        for i, (value,) in enumerate(others):
            make.__wrapped__(*base[:i], value, *base[i + 1:])
        assert len(set(seen)) == len(others) + 1, (make.__name__, seen)


def test_a_cache_that_cannot_be_read_or_written_costs_a_compile():
    c = Cache()
    kernel_cache.keyed(c, ("persistent", "SUM"))
    assert c.load_overload((), None) is None  # compile, then ...
    c.save_overload((), object())  # ... nothing kept, no error


@pytest.mark.parametrize("setting,on", [("0", False), ("1", True), (None, True)])
def test_off_under_the_simulator_and_by_request(monkeypatch, setting, on):
    if setting is None:
        monkeypatch.delenv("RING_KERNEL_CACHE", raising=False)
    else:
        monkeypatch.setenv("RING_KERNEL_CACHE", setting)
    monkeypatch.setattr(kernel_cache, "SIMULATED", False)
    assert kernel_cache.enabled() is on
    monkeypatch.setattr(kernel_cache, "SIMULATED", True)
    assert kernel_cache.enabled() is False


def test_the_benchmarks_processes_keep_the_pythonpath_they_were_given():
    """benchmarks/kernel_cache.py's processes once got PYTHONPATH=<repo> alone, which on a
    lent GPU dropped the carried NumPy, and numba-cuda failed on the image's own."""
    spec = importlib.util.spec_from_file_location("kernel_cache_bench", ROOT / "benchmarks/kernel_cache.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    env = bench.child_env(True, {"PYTHONPATH": "/tmp/site", "HOME": "/h"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "/tmp/site"]
    assert (env["HOME"], env["RING_KERNEL_CACHE"]) == ("/h", "1")
    assert bench.child_env(False, {}) == {"PYTHONPATH": str(ROOT), "RING_KERNEL_CACHE": "0"}
