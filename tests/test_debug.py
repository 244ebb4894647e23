"""RING_DEBUG (ring/debug.py): the level it sets on ring's logger, per value, and the line per
call it logs, as NCCL_DEBUG does for NCCL. One process: the logger is this process's."""

import logging

import pytest

from ring import debug


@pytest.fixture
def logger(monkeypatch):
    """ring's logger as this test leaves it is put back as it was."""
    log = logging.getLogger("ring")
    level, handlers, configured = log.level, list(log.handlers), debug._configured
    monkeypatch.delenv("RING_DEBUG", raising=False)
    yield log
    log.setLevel(level)
    log.handlers[:] = handlers
    debug._configured = configured


def ring_handlers(log):
    return [h for h in log.handlers if getattr(h, "_ring", False)]


def test_each_value_of_ring_debug_sets_the_level_once_it_is_read(logger, monkeypatch):
    """INFO turns per-call lines on with one stderr handler (however often it is read), a
    later value (as a later communicator reads it) turns them off again."""
    monkeypatch.setenv("RING_DEBUG", "info")
    debug.configure()
    debug.configure()
    assert logger.level == logging.INFO and debug.enabled()
    assert len(ring_handlers(logger)) == 1
    monkeypatch.setenv("RING_DEBUG", "WARN")
    debug.configure()
    assert logger.level == logging.WARNING and not debug.enabled()
    monkeypatch.setenv("RING_DEBUG", "DEBUG")
    debug.configure()
    assert logger.level == logging.DEBUG and len(ring_handlers(logger)) == 1


def test_without_ring_debug_the_applications_level_stands(logger):
    logger.setLevel(logging.INFO)
    debug.configure()
    assert logger.level == logging.INFO and debug.enabled()


def test_a_bad_value_names_the_variable(logger, monkeypatch):
    monkeypatch.setenv("RING_DEBUG", "loud")
    with pytest.raises(ValueError, match="RING_DEBUG: expected one of .*got 'loud'"):
        debug.level_from_env()


def test_a_call_is_one_line_with_its_record(logger, monkeypatch, caplog):
    """One INFO line per call, naming the rank, collective, call and algorithm and what of
    count, dtype, op and root the call has; the record itself rides in ring_call."""
    monkeypatch.setenv("RING_DEBUG", "INFO")
    debug.configure()
    record = {"rank": 1, "call": 7, "collective": "allreduce", "algorithm": "ring",
              "count": 10, "dtype": "float32", "op": "sum"}
    with caplog.at_level(logging.INFO, logger="ring"):
        debug.call(record)
    (line,) = [r for r in caplog.records if r.name == "ring"]
    assert line.getMessage() == ("rank 1 allreduce call 7: algorithm ring, count 10, "
                                 "dtype float32, op sum")
    assert line.ring_call == record
    monkeypatch.setenv("RING_DEBUG", "WARN")
    debug.configure()
    caplog.clear()
    debug.call(record)
    assert not [r for r in caplog.records if r.name == "ring"]
