"""ring/devices.py: which device a communicator runs on. 'auto' takes a real GPU where
Numba can use one and the host otherwise (never the simulator's cuda device); 'cuda' needs
a GPU or, for tests, the simulator; anything else is refused by name."""

import pytest

from ring import devices


@pytest.fixture
def machine(monkeypatch):
    """machine(gpu=..., simulator=...): what resolve() finds."""
    import kernels.launch

    def have(gpu: bool, simulator: bool):
        monkeypatch.setattr(devices, "gpu_usable", lambda: gpu)
        monkeypatch.setattr(kernels.launch, "simulated", lambda: simulator)
    return have


@pytest.mark.parametrize("gpu, simulator, want", [
    (True, False, {"auto": "cuda", "cuda": "cuda", "host": "host"}),
    (False, True, {"auto": "host", "cuda": "cuda", "host": "host"}),
    (False, False, {"auto": "host", "host": "host"}),
])
def test_each_device_resolves_to_what_the_machine_has(machine, gpu, simulator, want):
    machine(gpu, simulator)
    assert {d: devices.resolve(d) for d in want} == want


def test_cuda_without_a_gpu_or_the_simulator_is_refused_with_the_way_out(machine):
    machine(False, False)
    with pytest.raises(ValueError, match="NUMBA_ENABLE_CUDASIM=1.*use 'host'"):
        devices.resolve("cuda")


@pytest.mark.parametrize("bad", ["gpu", "CUDA", "", None])
def test_an_unknown_device_is_named(machine, bad):
    machine(True, False)
    with pytest.raises(ValueError, match=f"device: expected one of .*got {bad!r}"):
        devices.resolve(bad)


def test_the_simulator_is_never_a_usable_gpu(monkeypatch):
    """Under NUMBA_ENABLE_CUDASIM (the tests' machine) gpu_usable() is False without
    asking the driver; a driver that cannot start counts as no GPU."""
    import kernels.launch
    from numba import cuda
    monkeypatch.setattr(kernels.launch, "simulated", lambda: True)
    assert devices.gpu_usable() is False

    def broken():
        raise RuntimeError("driver cannot start")
    monkeypatch.setattr(kernels.launch, "simulated", lambda: False)
    monkeypatch.setattr(cuda, "is_available", broken)
    assert devices.gpu_usable() is False
