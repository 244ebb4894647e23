"""An inner test that outlasts its stack dump and fails (tests/test_mpirun.py)."""

import os
import time


def test_waits_past_the_dump_then_fails():
    time.sleep(float(os.environ.get("RING_TEST_SLOW_S", "0")))
    raise AssertionError("failed on purpose")
