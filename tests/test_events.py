"""Polling CUDA events (kernels/driver.fired): the driver's answer, without Numba's
Event.query, which logs an ERROR and raises for every poll of an event not yet reached."""

import logging

import numpy as np
import pytest
from numba import cuda

from kernels import driver as kdriver

from .gpu import needs_gpu


class Unqueried:
    """An event whose Numba query must not be called."""
    handle = object()

    def query(self):
        raise AssertionError("Event.query was called")


def test_a_poll_reads_the_drivers_code(monkeypatch):
    """Not ready: False; success: True; any other code raises, naming it. (The simulator's
    events have always fired: this is the GPU's branch, with the driver's call faked.)"""
    from cuda.bindings import driver
    from numba.cuda.cudadrv.driver import CudaAPIError
    codes = [driver.CUresult.CUDA_ERROR_NOT_READY, driver.CUresult.CUDA_SUCCESS,
             driver.CUresult.CUDA_ERROR_LAUNCH_FAILED]
    asked = []

    def query(handle):
        asked.append(handle)
        return (codes[len(asked) - 1],)
    monkeypatch.setattr(kdriver, "simulated", lambda: False)
    monkeypatch.setattr(driver, "cuEventQuery", query)
    ev = Unqueried()
    assert kdriver.fired(ev) is False
    assert kdriver.fired(ev) is True
    with pytest.raises(CudaAPIError, match="CUDA_ERROR_LAUNCH_FAILED"):
        kdriver.fired(ev)
    assert asked == [ev.handle] * 3


@cuda.jit
def _sleep(n, out):
    for _ in range(n):
        cuda.nanosleep(1000)
    out[0] = 1


@needs_gpu
def test_polling_a_gpu_event_logs_nothing():
    """An event behind a kernel that sleeps ~20 ms: polled until it fires, it answers False
    first, and Numba's driver logger records nothing (its Event.query logs an ERROR per
    such poll, which an application's root logger prints)."""
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    log = logging.getLogger("numba.cuda.cudadrv.driver")
    keep, level = Keep(logging.DEBUG), log.level
    log.addHandler(keep)
    log.setLevel(logging.DEBUG)
    try:
        out = cuda.device_array(1, np.int32)
        stream = cuda.stream()
        _sleep[1, 1, stream](1, out)  # compiled before the timed launch
        stream.synchronize()
        ev = kdriver.event()
        _sleep[1, 1, stream](20000, out)
        ev.record(stream)
        answers = []
        while not answers or not answers[-1]:
            answers.append(kdriver.fired(ev))
    finally:
        log.removeHandler(keep)
        log.setLevel(level)
    assert answers[0] is False and answers[-1] is True
    assert [r.getMessage() for r in records if r.levelno >= logging.WARNING] == []
