"""The training examples under mpiexec (2 and 4 ranks, host device; 2 processes sharing the
GPU on a GPU machine, CuPy arrays): each checks its final parameters against single-process
training with the whole batch and exits non-zero past 1e-5 relative; here the printed
difference is read back and checked too."""

import re

import pytest

from .gpu import needs_gpu
from .mpirun import run

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("nprocs", [2, 4])
@pytest.mark.parametrize("example", ["data_parallel", "zero"])
def test_training_matches_one_process(example, nprocs):
    check(run(nprocs, [f"examples/{example}.py", "--steps", "20"], timeout=180))


@pytest.mark.parametrize("nprocs", [2, 4])
def test_accumulated_gradients_match_one_process_with_the_whole_batch(nprocs):
    """--accumulate 4: four micro-batches an optimizer step, three of them not all-reduced
    (buckets.no_sync()): the parameters equal single-process training with batches four
    times as large, and each step makes one all-reduce per bucket, as counted."""
    rc, out = run(nprocs, ["examples/data_parallel.py", "--steps", "20", "--accumulate", "4"],
                  timeout=180)
    check((rc, out))
    m = re.search(r"all-reduces per optimizer step: (\S+) \((\d+) buckets, 4 micro-batches", out)
    assert m and float(m.group(1)) == int(m.group(2)), out


@pytest.mark.parametrize("args,why", [
    (["--steps", "0"], "argument --steps: at least 1, got 0"),  # (was a ZeroDivisionError)
    (["--batch", "0"], "argument --batch: at least 1, got 0"),
    (["--batch", "-2"], "argument --batch: at least 1, got -2"),
    (["--accumulate", "0"], "argument --accumulate: at least 1, got 0"),
    (["--bucket-bytes", "0"], "argument --bucket-bytes: at least 1, got 0")])
def test_counts_that_train_nothing_are_refused_at_the_command_line(args, why):
    rc, out = run(1, ["examples/data_parallel.py", *args], timeout=120)
    assert rc == 2 and why in out, out[-2000:]


@needs_gpu
@pytest.mark.parametrize("example", ["data_parallel", "zero"])
def test_training_on_the_gpu_matches_one_process(example):
    check(run(2, [f"examples/{example}.py", "--steps", "20", "--device", "cuda"], timeout=300))


def check(result):
    rc, out = result
    print(out)  # the step times, for the log of a GPU session
    assert rc == 0, out
    m = re.search(r"largest relative difference from single-process training: (\S+)", out)
    assert m, out
    assert float(m.group(1)) <= 1e-5, out
