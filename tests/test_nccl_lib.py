"""harness/nccl_lib.py: which libnccl.so.2 the NCCL baseline loads (the nvidia-nccl wheel's,
>= 2.30 by the cuda extras, ahead of the loader's own choice; RING_NCCL_LIB names another
or `system`). Pure: a stand-in site-packages tree, nothing loaded."""

import pytest

from harness import nccl_lib


def _wheel(root):
    lib = root / "nvidia" / "nccl" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnccl.so.2").write_bytes(b"")
    return str(lib / "libnccl.so.2")


def test_the_wheels_library_is_found_in_site_packages(tmp_path):
    assert nccl_lib.wheel_library([str(tmp_path)]) is None
    want = _wheel(tmp_path / "site")
    assert nccl_lib.wheel_library([str(tmp_path), str(tmp_path / "site")]) == want


def test_the_environment_chooses_first(tmp_path, monkeypatch):
    lib = _wheel(tmp_path)
    monkeypatch.setenv(nccl_lib.ENV, "system")
    assert nccl_lib.choice() == (None, "the loader's own (RING_NCCL_LIB=system)")
    monkeypatch.setenv(nccl_lib.ENV, lib)
    assert nccl_lib.choice() == (lib, "RING_NCCL_LIB")
    monkeypatch.setenv(nccl_lib.ENV, str(tmp_path / "none.so"))
    with pytest.raises(FileNotFoundError, match="RING_NCCL_LIB"):
        nccl_lib.choice()


def test_without_a_wheel_the_loader_chooses(monkeypatch):
    monkeypatch.delenv(nccl_lib.ENV, raising=False)
    monkeypatch.setattr(nccl_lib, "wheel_library", lambda paths=None: None)
    assert nccl_lib.choice()[0] is None


def test_a_wheel_cut_in_parts_joins_under_its_own_name(tmp_path):
    """tools/nccl_wheel.py: the parts a device call can carry join into the same bytes, under
    the wheel's name, checked by its sha256; a missing part or other bytes are refused."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "nccl_wheel", Path(__file__).resolve().parent.parent / "tools" / "nccl_wheel.py")
    nw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nw)
    wheel = tmp_path / "nvidia_nccl_cu13-2.30.7-py3-none-manylinux_2_18_x86_64.whl"
    wheel.write_bytes(bytes(range(256)) * 40)  # 10240 bytes
    parts = nw.split(wheel, tmp_path / "parts", size=4096)
    assert [p.name[-8:] for p in parts] == [".part-00", ".part-01", ".part-02"]
    joined = nw.join(tmp_path / "parts")
    assert joined.name == wheel.name and joined.read_bytes() == wheel.read_bytes()
    parts[1].write_bytes(b"x" * 4096)
    with pytest.raises(SystemExit, match="sha256"):
        nw.join(tmp_path / "parts")
    parts[1].unlink()
    with pytest.raises(SystemExit, match="parts missing"):
        nw.join(tmp_path / "parts")


def test_preload_says_what_it_loaded_and_what_came_too_late(monkeypatch):
    """preload() loads the chosen library once, its symbols global, and the label says which;
    where CuPy's binding was imported first (bound to whatever it found), it loads nothing
    and the label says so, rather than name a library that does not run."""
    import ctypes
    import sys
    import types

    loads = []
    monkeypatch.setattr(ctypes, "CDLL", lambda path, mode=0: loads.append((path, mode)) or path)
    monkeypatch.setattr(nccl_lib, "choice", lambda: ("/x/libnccl.so.2", "the nvidia-nccl wheel"))
    monkeypatch.setattr(nccl_lib, "_loaded", {})
    monkeypatch.delitem(sys.modules, "cupy.cuda.nccl", raising=False)
    assert nccl_lib.preload() == "the nvidia-nccl wheel, /x/libnccl.so.2"
    assert nccl_lib.preload() == "the nvidia-nccl wheel, /x/libnccl.so.2"
    assert loads == [("/x/libnccl.so.2", ctypes.RTLD_GLOBAL)]

    monkeypatch.setattr(nccl_lib, "_loaded", {})
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", types.ModuleType("cupy.cuda.nccl"))
    assert nccl_lib.preload() == ("the nvidia-nccl wheel (not loaded: CuPy's binding was "
                                  "imported first)")
    assert len(loads) == 1
