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
    return hashlib.sha256(pickle.dumps(d._cache._index_key(sig.args, Codegen()))).hexdigest()
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
print(json.dumps(out))
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
    assert first == second
    # op, protocol, dtype, K and the collective each make a key of their own
    assert len(first) == 4 + 3 * 3 and len(set(first.values())) == len(first)


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
