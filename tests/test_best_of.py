"""benchmarks/best_of.py, which reads the acceptance figures of host runs against MPI out
of harness JSONs: the fastest time of each point, matched point by point, and never a time
from a row whose results were wrong or that failed."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "best_of.py"


def row(impl, us, nbytes=1024, dtype="float32", op="sum", in_place=False, **extra):
    r = {"impl": impl, "collective": "allreduce", "nbytes": nbytes, "dtype": dtype, "op": op,
         "root": -1, "in_place": in_place, "time_us": us, "wrong": 0, "skipped": None,
         "error": None}
    r.update(extra)
    return r


def run(tmp_path, *files):
    paths = []
    for i, rows in enumerate(files):
        p = tmp_path / f"run{i}.json"
        p.write_text(json.dumps({"meta": {}, "results": rows}))
        paths.append(str(p))
    done = subprocess.run([sys.executable, str(SCRIPT), *paths], capture_output=True,
                          text=True, timeout=60)
    assert not done.stderr, done.stderr
    return done.returncode, done.stdout


def ratios(out):
    """{(dtype, op, in place): ratio} of the table's lines."""
    got = {}
    for line in out.splitlines():
        if line.startswith("allreduce"):
            f = line.split()
            got[(f[1], f[2], f[-4])] = float(f[-1])
    return got


def test_the_fastest_time_of_each_side_over_the_runs(tmp_path):
    rc, out = run(tmp_path, [row("ring", 10.0), row("mpi", 30.0)],
                  [row("ring", 20.0), row("mpi", 15.0)])
    assert rc == 0, out
    assert ratios(out) == {("float32", "sum", "False"): 1.5}  # 15 / 10
    assert out.startswith("# best of 2 runs")
    assert "# lowest ratio: 1.50 at allreduce float32 sum 1 KB" in out


def test_points_that_differ_in_dtype_op_or_place_are_not_mixed(tmp_path):
    rc, out = run(tmp_path, [row("ring", 10.0), row("mpi", 20.0),
                             row("ring", 40.0, dtype="float64"), row("mpi", 20.0, dtype="float64"),
                             row("ring", 5.0, op="max"), row("mpi", 5.0, op="max"),
                             row("ring", 8.0, in_place=True), row("mpi", 4.0, in_place=True)])
    assert rc == 0, out
    assert ratios(out) == {("float32", "sum", "False"): 2.0, ("float64", "sum", "False"): 0.5,
                           ("float32", "max", "False"): 1.0, ("float32", "sum", "True"): 0.5}
    assert "# lowest ratio: 0.50 at allreduce float32 sum 1 KB in place" in out  # (of a tie:
    # the first point in (collective, dtype, op, size, in place) order)


def test_a_row_with_wrong_results_or_no_time_is_no_figure(tmp_path):
    """The fastest ring row is wrong, MPI's fastest has no time: neither counts, the others
    give the ratio, and the run says what it left out and exits 1."""
    rc, out = run(tmp_path, [row("ring", 1.0, wrong=3), row("mpi", float("nan"))],
                  [row("ring", 10.0), row("mpi", 20.0)])
    assert rc == 1, out
    assert ratios(out) == {("float32", "sum", "False"): 2.0}
    assert "left out, wrong results or no time: 1 rows of ring, 1 of mpi" in out


def test_a_lossy_wires_measured_error_is_no_failure(tmp_path):
    """`error` is a compressed wire's measured error (harness/sweep.py), a figure: its row
    counts; and `wrong` -1 (not checked) is no wrong result."""
    rc, out = run(tmp_path, [row("ring", 10.0, error=0.004, wrong=-1), row("mpi", 30.0)])
    assert rc == 0, out
    assert ratios(out) == {("float32", "sum", "False"): 3.0}


def test_skipped_rows_and_unmatched_points_print_nothing(tmp_path):
    rc, out = run(tmp_path, [row("ring", 10.0, nbytes=8), row("mpi", 1.0, nbytes=16),
                             row("ring", 1.0, nbytes=32, skipped="not here"),
                             row("mpi", 5.0, nbytes=32)])
    assert rc == 0, out
    assert ratios(out) == {} and "lowest" not in out
