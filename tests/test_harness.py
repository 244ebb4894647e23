"""The harness: pure parts here, then whole sweeps under mpiexec."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.__main__ import parser, registered
from harness.sizes import parse_size, parse_sizes, sizes, with_also
from harness.collectives import ALIASES, COLLECTIVES, fill
from harness.model import fit, report
from . import simulate
from ringtypes import DATA_ONLY, DTYPES, FLOATING, Op
from ring.schedule import Collective

from .gpu import HAVE_GPU, SIMULATED
from .mpirun import run as mpirun
from .queued import Enqueuing, QueuedComm, QueuedDevice


def test_sizes_parse_like_nccl_tests():
    assert parse_size("8") == 8 and parse_size("1K") == 1024 and parse_size("64M") == 64 << 20
    assert parse_size("1G") == 1 << 30 and parse_size("1.5K") == 1536 and parse_size("4kb") == 4096
    assert sizes(8, 1024, 4, 0) == [8, 32, 128, 512]
    assert sizes(100, 400, 1, 100) == [100, 200, 300, 400]  # -i step when -f is 1


@pytest.mark.parametrize("begin,end,factor,step,why", [
    (1024, 512, 2, 0, "-e 512 is below -b 1024"),
    (-8, 64, 2, 0, "-b -8: sizes are 0 bytes or more"),
    (8, 64, 1, 0, "no step from -b 8 to -e 64"),
    (8, 64, 1, -8, "no step from -b 8 to -e 64"),
    (8, 64, 0.5, 0, "no step from -b 8 to -e 64"),
    (0, 64, 2, 0, "-b 0 times -f 2 stays 0"),
    (8, 64, float("inf"), 0, "-f inf: a finite factor"),
    (8, 64, float("nan"), 8, "-f nan: a finite factor")])
def test_a_grid_that_is_empty_or_never_ends_is_refused(begin, end, factor, step, why):
    """nccl-tests refuses -b above -e; a grid with no step (or 0 times a factor) would run
    forever, one below 0 would allocate a negative size: each is a ValueError saying which."""
    with pytest.raises(ValueError, match=re.escape(why)):
        sizes(begin, end, factor, step)


def test_ops_are_nccl_tests_names_in_any_case_and_avg_skips_integers_with_a_line(tmp_path,
                                                                                 capsys):
    """-o SUM was a KeyError in the MPI baseline; -o all on int8 and float32 runs avg for
    float32 only, and says so (it ran nothing for int8 without a word)."""
    from harness.__main__ import main
    js = tmp_path / "s.json"
    assert main(["allreduce", "--device", "host", "--impl", "ring,mpi", "-d", "int8,float32",
                 "-o", "SUM,avg", "-b", "8", "-e", "8", "-n", "1", "-w", "0",
                 "--json", str(js)]) == 0
    assert "# avg: not run for int8: it is for floating-point dtypes" in capsys.readouterr().out
    recs = json.loads(js.read_text())["results"]
    assert sorted({(r["dtype"], r["op"]) for r in recs}) == \
        [("float32", "avg"), ("float32", "sum"), ("int8", "sum")]


@pytest.mark.timeout(30)  # a grid that never ends grows its list by ~1 GB a minute
def test_a_grid_steps_on_whatever_the_factor():
    """a factor too small to move a size by a byte still steps it by one: the grid ends."""
    assert sizes(8, 12, 1.01, 0) == [8, 9, 10, 11, 12]
    assert sizes(8, 8, 1, 0) == [8] and sizes(0, 0, 2, 0) == [0]
    assert sizes(0, 64, 1, 32) == [0, 32, 64]


@pytest.mark.parametrize("argv,why", [
    (["allreduce", "-n", "0"], "argument -n/--iters: at least 1, got 0"),
    (["allreduce", "-n", "-3"], "argument -n/--iters: at least 1, got -3"),
    (["allreduce", "-w", "-1"], "argument -w/--warmup_iters: at least 0, got -1"),
    (["allreduce", "-n", "two"], "argument -n/--iters: invalid integer (at least 1) value"),
    (["allreduce", "-b", "1K", "-e", "512"], "-e 512 is below -b 1024"),
    (["allreduce", "-b", "8", "-e", "64", "-f", "1", "-i", "-8"], "no step from -b 8"),
    (["allreduce", "-o", "bogus"], "-o: op: unknown op 'bogus'"),  # (was a traceback)
    (["allreduce", "-d", "int32", "-o", "avg"], "-d int32 -o avg: nothing to run for allreduce"),
    (["allreduce", "-d", "float8_e4m3fn"], "nothing to run for allreduce"),  # (ran nothing)
    (["tune", "--rounds", "0", "--out", "t.json"], "argument --rounds: at least 1, got 0"),
    (["tune", "-b", "8", "-e", "64", "-f", "1", "--out", "t.json"], "no step from -b 8")])
def test_counts_and_grids_that_cannot_give_a_figure_are_refused(argv, why, tmp_path,
                                                                 monkeypatch, capsys):
    """-n 0 printed a time for no call (the mean of none), -b above -e ran nothing without
    a word, -i -8 never ended: each is refused before any rank starts, with the reason."""
    from harness.__main__ import main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code != 0 and why in f"{e.value.code} {capsys.readouterr().err}"
    assert not (tmp_path / "t.json").exists()


def test_model_and_plot_say_which_file_is_no_sweep(tmp_path, capsys):
    """A file that is missing, not JSON, or JSON of something else: a line naming it and
    why, not a KeyError from inside the model or the plot."""
    from harness.__main__ import main
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "other.json").write_text('{"rules": []}')
    (tmp_path / "no-ranks.json").write_text('{"meta": {"gpu": null}, "results": []}')
    for name, why in (("none.json", "cannot read it: No such file or directory"),
                      ("broken.json", "not JSON: "),
                      ("list.json", "not a sweep's or a tuning table's JSON (a list, not an "
                                    "object)"),
                      ("other.json", "not a sweep's JSON (python -m harness ... --json)"),
                      ("no-ranks.json", "not a sweep's JSON (python -m harness ... --json): "
                                        "it needs 'meta' with 'ranks'")):
        path = str(tmp_path / name)
        for argv in (["model", path], ["plot", path, "--out", str(tmp_path / "p.png")]):
            if argv[0] == "plot":
                pytest.importorskip("matplotlib")
            with pytest.raises(SystemExit, match=re.escape(f"{path}: {why}")):
                main(argv)


def test_the_cuda_device_without_a_gpu_is_refused_with_the_reason(monkeypatch):
    """--device cuda where no GPU (or no CuPy) is: the reason and what to use, not CuPy's
    ModuleNotFoundError from inside the buffers."""
    from harness import buffers
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(buffers, "gpu_usable", lambda: False)
    with pytest.raises(SystemExit, match="--device cuda: needs a usable NVIDIA GPU and CuPy"):
        buffers.make("cuda", 0)
    assert buffers.make("auto", 0).name == "host"


def test_also_adds_the_sizes_a_grid_steps_over():
    """-b 8 -e 1G -f 4 steps over 64 MiB and 1 GiB (8 x 4^n); --also 64M,1G measures them."""
    grid = sizes(8, 1 << 30, 4, 0)
    assert 64 << 20 not in grid and 1 << 30 not in grid
    got = with_also(grid, parse_sizes("64M, 1G,8"))
    assert got == sorted(grid + [64 << 20, 1 << 30]) and with_also(grid, None) == grid
    with pytest.raises(ValueError):
        parse_sizes("0")
    args = parser().parse_args(["allreduce", "-a", "64M,1G"])
    assert args.also == [64 << 20, 1 << 30]


@pytest.mark.parametrize("name", list(COLLECTIVES))
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_expected_results_are_exact_in_every_dtype(name, k):
    """The harness's expected outputs are what the ring's schedule computes (simulated), bit
    for bit, for every dtype it carries, every op and a root that is not 0."""
    coll = COLLECTIVES[name]
    root = k - 1
    for dt in DTYPES:
        if coll.reduces and dt in DATA_ONLY:
            continue
        for op in (["sum", "prod", "min", "max"] + (["avg"] if dt in FLOATING else [])) \
                if coll.reduces else ["sum"]:
            nin, nout = coll.counts(1001 * dt.itemsize, dt.itemsize, k)
            inputs = [coll.input(r, nin, dt, op) for r in range(k)]
            sim = simulate.run(Collective[name.upper()], inputs, Op[op.upper()], root=root)
            for r in range(k):
                want = coll.expected(r, k, nin, dt, op, root=root)
                if name in ("reduce", "gather") and r != root:  # defined on the root only
                    assert want is None
                    continue
                assert want.size == nout
                # the ring's own order gives the same bits: the inputs make every order exact
                assert sim[r].tobytes() == want.tobytes(), (name, dt, op, r)


def test_bus_factors_and_sizes_are_nccl_tests_ones():
    k = 4
    factors = {n: COLLECTIVES[n].bus_factor(k) for n in COLLECTIVES}
    assert factors == {"allreduce": 1.5, "reduce_scatter": 0.75, "allgather": 0.75,
                       "broadcast": 1.0, "reduce": 1.0, "gather": 0.75, "scatter": 0.75,
                       "alltoall": 0.75}
    # sizes: the whole array for the collectives that split or join it, as nccl-tests reads -b
    assert COLLECTIVES["gather"].counts(1024, 4, k) == (64, 256)
    assert COLLECTIVES["scatter"].counts(1024, 4, k) == (256, 64)
    assert COLLECTIVES["alltoall"].counts(1000, 4, k) == (248, 248)
    assert ALIASES["all_reduce_perf"] == "allreduce" and ALIASES["alltoall_perf"] == "alltoall"


@settings(max_examples=200, deadline=None)
@given(rank=st.integers(0, 9), count=st.integers(0, 1000), seed=st.integers(0, 3),
       dtype=st.sampled_from([np.float32, np.float16, np.int8, np.uint64]),
       op=st.sampled_from(["sum", "prod", "max", "avg"]), k=st.integers(1, 6))
def test_tiled_inputs_and_results_are_the_index_formulas(rank, count, seed, dtype, op, k):
    """Inputs and expected results are built from one tiled period: element for element what
    the index formulas give (the reducing collectives' (rank + i + seed) % 4, or 1 + ... % 2
    for prod, reduced over the ranks; the others' (i + 7 rank + seed) % 199)."""
    i = np.arange(count, dtype=np.int64) + seed
    one = (lambda q: (1 + (q + i) % 2 if op == "prod" else (q + i) % 4).astype(dtype))
    assert fill(rank, count, dtype, op, seed).tobytes() == one(rank).tobytes()
    if op == "avg" and not np.issubdtype(dtype, np.floating):
        return
    fn = {"sum": np.add, "avg": np.add, "prod": np.multiply, "max": np.maximum}[op]
    want = one(0)
    for q in range(1, k):
        want = fn(want, one(q))
    if op == "avg":
        want = np.divide(want, k).astype(dtype)
    got = COLLECTIVES["allreduce"].expected(rank % k, k, count, dtype, op, seed)
    assert got.dtype == dtype and got.tobytes() == want.tobytes()
    moved = COLLECTIVES["broadcast"].input(rank, count, dtype, op, seed)
    assert moved.tobytes() == ((i - seed + 7 * rank + seed) % 199).astype(dtype).tobytes()


def test_inputs_differ_by_rank_and_index():
    a, b = fill(0, 8, np.float32, "sum"), fill(1, 8, np.float32, "sum")
    assert not (a == b).all() and len(set(a.tolist())) > 1
    g = [COLLECTIVES["allgather"].input(r, 5, np.int32, "sum") for r in range(3)]
    assert len({x.tobytes() for x in g}) == 3


def test_model_recovers_alpha_and_beta():
    s = np.array([8, 1 << 10, 1 << 16, 1 << 20, 1 << 24], float)
    t = 12.0 + s / 2000.0  # 12 us, 2000 bytes/us
    a, b = fit(s, t)
    assert a == pytest.approx(12.0, rel=1e-9) and b == pytest.approx(1 / 2000.0, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1.0, 1e6), min_size=3, max_size=8),
       st.lists(st.floats(-0.5, 0.5), min_size=4, max_size=4))
def test_the_model_fit_is_the_best_line_that_has_no_negative_part(times, moves):
    """fit() minimises the relative squared error over a >= 0, b >= 0: no such line does
    better, whether the unconstrained best is inside (a, b > 0) or its alpha or beta came
    out negative (a convex problem: the constrained best lies on that edge)."""
    t = np.array(times)
    s = np.array([8.0 * 4 ** i for i in range(t.size)])  # 8 B, 32 B, ... as a sweep's
    a, b = fit(s, t)
    assert a >= 0 and b >= 0

    def error(a, b):
        return float(np.sum(((a + b * s - t) / t) ** 2))
    best = error(a, b)
    da, db, ea, eb = moves
    others = [(a * (1 + da), b * (1 + db)), (0.0, b * (1 + db)), (a * (1 + da), 0.0),
              (a + ea * t.min(), b), (a, b * (1 + eb))]
    for a2, b2 in others:
        if a2 >= 0 and b2 >= 0:
            assert best <= error(a2, b2) * (1 + 1e-9) + 1e-12, (a2, b2)


def test_model_report_reads_a_sweep(tmp_path):
    """The out-of-place results are fitted (the in-place ones, three times slower here, are
    not), and a prediction put through the same formula."""
    k, alpha_step, bus = 4, 5.0, 100.0  # us per step, GB/s
    recs = []
    for s in (1 << 10, 1 << 16, 1 << 20, 1 << 26):
        t = 2 * (k - 1) * alpha_step + 2 * (k - 1) / k * s / (bus * 1e3)
        for in_place in (False, True):
            recs.append({"impl": "ring", "collective": "allreduce", "nbytes": s,
                         "count": s // 4, "dtype": "float32", "op": "sum",
                         "in_place": in_place, "time_us": 3 * t if in_place else t,
                         "busbw": 0.0, "skipped": None})
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"meta": {"ranks": k}, "results": recs}))
    out = report(str(path), 0, 1 << 40, predict=1 << 28, ranks=8, link=450.0)
    assert "5.00 us per ring step x 6" in out and "B = 100.00 GB/s" in out
    assert "worst error in window 0.0%" in out
    want = 2 * 7 * 5.0 + 2 * 7 / 8 * (1 << 28) / 450e3
    assert f"-> {want:.1f} us" in out


def test_two_lines_recover_two_regimes_and_crossovers_are_named(tmp_path):
    """A floor below 4 KB and a slope above (two regimes), and a second implementation that
    overtakes it from 128 KB: the split, both lines and the crossover come back."""
    sizes = [8 << (2 * i) for i in range(12)]  # 8 B .. 32 MB
    recs = []
    for s in sizes:
        ring_t = 30.0 + s / 500.0 if s < 4096 else 5.0 + s / 200.0
        mpi_t = 40.0 + s / 100.0 if s < 65536 else 1.0 + s / 300.0
        for impl, t in (("ring", ring_t), ("mpi", mpi_t)):
            recs.append({"impl": impl, "collective": "allreduce", "nbytes": s, "count": s // 4,
                         "dtype": "float32", "op": "sum", "in_place": False, "time_us": t,
                         "busbw": 0.0, "skipped": None})
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"meta": {"ranks": 2}, "results": recs}))
    out = report(str(path), 0, 1 << 40, None, None, None, segments=2)
    assert "line for 8 .. 2048 B: alpha = 30.00 us" in out
    assert "line for 8192 .. 33554432 B: alpha = 5.00 us" in out
    assert "worst error 0.0% (within 15%)" in out
    assert "mpi vs ring: ring faster 8 .. 32768 B, then mpi faster 131072 .. 33554432 B" in out


def test_every_regime_of_several_lines_spans_at_least_three_sizes():
    """fit_segments gives no regime fewer than `least` (3) sizes, even where two sizes
    alone would make a line of their own that fits them exactly (a bump between two
    regimes: the split that hides it is not taken)."""
    from harness.model import fit_segments
    s = np.array([8.0 * 4 ** i for i in range(11)])
    t = np.where(s < 8 * 4 ** 4, 20.0 + s / 100, 5.0 + s / 400)
    t[4:6] *= 3  # off both lines
    parts = fit_segments(s, t, 3)
    assert len(parts) == 3
    for lo, hi, *_ in parts:
        assert np.count_nonzero((s >= lo) & (s <= hi)) >= 3, parts


def test_crossovers_name_ties_and_a_winner_throughout():
    """Two implementations within the tie of each other everywhere; one faster everywhere
    bar a tie in the middle (which takes its neighbours' winner)."""
    from harness.model import crossovers
    sizes = np.array([8.0, 64.0, 512.0, 4096.0])
    same = {"a": (sizes, np.array([10.0, 11, 12, 13])), "b": (sizes, np.array([10.2, 11, 12, 13]))}
    assert crossovers(same) == ["a vs b: within 5% of each other at every size"]
    one = {"a": (sizes, np.array([10.0, 11, 12, 13])), "b": (sizes, np.array([20.0, 11, 24, 26]))}
    assert crossovers(one) == ["a vs b: a faster at every size (8 .. 4096 B)"]


def test_model_on_the_command_line(tmp_path, capsys):
    """python -m harness model FILE...: the report of each point's best time over the files
    (two runs here: the first slower at one size), a prediction, and two files of other
    rank counts refused."""
    from harness.__main__ import main
    def recs(slow: bool) -> list:
        return [{"impl": "ring", "collective": "allreduce", "nbytes": s, "count": s // 4,
                 "dtype": "float32", "op": "sum", "in_place": False,
                 "time_us": 10.0 + s / 1e3 + (50 if slow and s == 4096 else 0),
                 "busbw": 0.0, "skipped": None} for s in (1024, 4096, 16384, 65536)]
    runs = []
    for i, k in enumerate((2, 2, 4)):
        runs.append(tmp_path / f"run{i}.json")
        runs[-1].write_text(json.dumps({"meta": {"ranks": k}, "results": recs(i == 0)}))
    assert main(["model", str(runs[0]), str(runs[1]), "--predict", "1M"]) == 0
    out = capsys.readouterr().out
    assert "best of 2" in out and "worst error in window 0.0%" in out
    assert "prediction (model, not a measurement): 1048576 B on 2 ranks" in out
    with pytest.raises(SystemExit, match="4 ranks, not 2"):
        main(["model", str(runs[0]), str(runs[2])])
    # a prediction for no ring, or at a link rate of 0 or below, is refused: --ranks 0 was
    # read as "the sweep's", --link-GBps -5 predicted a negative time, 0 the sweep's rate
    for flag, value, why in (("--ranks", "0", "at least 2, got 0"),
                             ("--ranks", "1", "at least 2, got 1"),
                             ("--link-GBps", "-5", "a rate above 0, got -5"),
                             ("--link-GBps", "0", "a rate above 0, got 0"),
                             ("--link-GBps", "nan", "a rate above 0, got nan")):
        with pytest.raises(SystemExit) as e:
            main(["model", str(runs[0]), "--predict", "1M", flag, value])
        assert e.value.code != 0 and why in capsys.readouterr().err
    for ranks, link in ((1, None), (2, 0.0), (2, -5.0)):
        with pytest.raises(ValueError, match="prediction"):
            report(str(runs[0]), 0, 1 << 62, 1 << 20, ranks, link)
    assert main(["model", str(runs[0]), "--predict", "1M", "--ranks", "8",
                 "--link-GBps", "450"]) == 0
    assert "1048576 B on 8 ranks at 450.0 GB/s per link" in capsys.readouterr().out


def test_model_reads_every_layout_of_a_tuning_table(tmp_path):
    """harness tune's table (its best µs per call per algorithm and layout) is a sweep to
    the model: one report per layout, the algorithms named as the harness names them."""
    sizes = [8 << (2 * i) for i in range(8)]
    measured = {}
    for k in (2, 4):
        measured[f"{k} ranks, 1 node(s)"] = {"us_per_call": {
            "ring": {str(s): 10.0 * k + s / 1000.0 for s in sizes},
            "naive": {str(s): 5.0 * k + s / 250.0 for s in sizes}}}
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"rules": [], "command": "harness tune ...", "git_commit": "abc",
                                "measured": measured}))
    out = report(str(path), 0, 1 << 40, None, None, None)
    first, second = out.split("\n\n# ")
    assert "(2 ranks, 1 node(s); harness tune ..., at abc): 2 ranks" in first
    assert second.startswith(f"{path} (4 ranks, 1 node(s)")
    assert "ring-flat allreduce float32 sum: alpha = 20.00 us" in first
    assert "ring-naive allreduce float32 sum: alpha = 20.00 us" in second
    # 20 + s / 1000 against 10 + s / 250: equal at 3333 B
    assert "ring-naive faster 8 .. 2048 B, then ring-flat faster 8192 .. 131072 B" in first
    # another collective's layout, and one measured on registered buffers (the cuda device)
    # and one measured in place (tune -I)
    measured = {"reduce_scatter, 2 ranks, 1 node(s), registered": {"us_per_call": {
        "ring": {str(s): 10.0 + s / 1000.0 for s in sizes}}},
        "2 ranks, 1 node(s), in place": {"in_place": True, "us_per_call": {
            "ring": {str(s): 30.0 + s / 1000.0 for s in sizes}}}}
    path.write_text(json.dumps({"rules": [], "command": "harness tune ...", "git_commit": "abc",
                                "measured": measured}))
    out = report(str(path), 0, 1 << 40, None, None, None)
    assert "(reduce_scatter, 2 ranks, 1 node(s), registered;" in out
    assert "ring-flat reduce_scatter float32 sum: alpha = 10.00 us" in out
    assert "(2 ranks, 1 node(s), in place;" in out
    assert "ring-flat allreduce float32 sum: alpha = 30.00 us" in out


def test_plot_without_matplotlib_says_what_to_install(tmp_path):
    import subprocess
    import sys
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from harness.__main__ import main\n"
            f"main(['plot', 'results/host-allreduce-2ranks.json', '--out', '{tmp_path / 'x.png'}'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent.parent)
    assert proc.returncode != 0
    assert "pip install 'ring[plot]'" in proc.stderr and "Traceback" not in proc.stderr


def _sweep(nprocs, *args, env=None):
    rc, out = mpirun(nprocs, ["-m", "harness", *args], timeout=300, env=env)
    assert rc == 0, out[-4000:]
    return out


@pytest.mark.mpi
@pytest.mark.parametrize("device", ["host", pytest.param("cuda", marks=pytest.mark.skipif(
    not (HAVE_GPU or SIMULATED), reason="needs a GPU or Numba's simulator"))])
def test_tune_writes_a_table_that_auto_reads(device, tmp_path):
    """harness tune on 2 ranks, then 3 merged into the same file: every algorithm timed at
    every size, rules for both layouts, the device named, each layout's own command kept
    through the merge; the table loads for "auto"."""
    table = tmp_path / "t.json"
    for k, merge in ((2, []), (3, ["--merge", str(table)])):
        register = ["-R"] if device == "cuda" and k == 3 else []  # (simulated arrays: staged)
        _sweep(k, "tune", "--device", device, "-b", "8", "-e", "4K", "-f", "8", "--rounds", "1",
               *merge, *register, "--out", str(table))
    data = json.loads(table.read_text())
    assert data["device"] == device
    assert data["command"].startswith("mpiexec -n 3 python -m harness tune")
    for k in (2, 3):
        entry = data["measured"][f"{k} ranks, 1 node(s)"
                                 f"{', registered' if device == 'cuda' and k == 3 else ''}"]
        assert entry["command"].startswith(f"mpiexec -n {k} python -m harness tune --device")
        assert entry["registered"] == (device == "cuda" and k == 3)
        times = entry["us_per_call"]
        assert set(times) == {"ring", "naive", "ps", "oneshot", "twoshot", "tree",
                              *(("cma",) if device == "host" else ())}  # (cma: the host's)
        assert all(set(t) == {"8", "64", "512", "4096"} and min(t.values()) > 0
                   for t in times.values())
        rules = [r for r in data["rules"] if r["ranks"] == k]
        assert rules and rules[-1]["max_bytes"] == 4096 and all(r["nodes"] == 1 for r in rules)
        # on the cuda device each rule says which buffers it was measured on (-R: registered)
        assert all(r.get("registered") == ((k == 3) if device == "cuda" else None)
                   for r in rules)
    from ring.tuning import load, rules_for
    loaded = load(str(table), device)
    assert rules_for(loaded, 3, 1) == rules_for(loaded, 2 if device == "cuda" else 3, 1)
    if device == "cuda":  # registered calls at 3 ranks: the 3-rank rules; staged: the 2-rank
        assert rules_for(loaded, 3, 1, registered=True) == [
            (r["max_bytes"], r["algorithm"]) for r in data["rules"] if r["ranks"] == 3]
    if device == "host":  # another collective's rules name it, beside the all-reduce's
        _sweep(2, "tune", "--collective", "reduce_scatter", "-b", "8", "-e", "64", "-f", "8",
               "--rounds", "1", "--algos", "ring,oneshot", "--merge", str(table),
               "--out", str(table))
        data = json.loads(table.read_text())
        named = [r for r in data["rules"] if r.get("collective") == "reduce_scatter"]
        assert named and all(r["ranks"] == 2 for r in named)
        assert set(data["measured"]["reduce_scatter, 2 ranks, 1 node(s)"]["us_per_call"]) == \
            {"ring", "oneshot"}
        assert rules_for(load(str(table), device), 2, 1) == \
            rules_for(data, 2, 1), "the all-reduce's rules kept"
        assert rules_for(data, 2, 1, "reduce_scatter") == [
            (r["max_bytes"], r["algorithm"]) for r in named]
        # -I: the all-reduce in place, its rules for the in-place calls beside the others;
        # twice, the second run's replacing the first's
        before = rules_for(data, 2, 1)
        for _ in range(2):
            _sweep(2, "tune", "-I", "-b", "8", "-e", "64", "-f", "8", "--rounds", "1",
                   "--algos", "ring,oneshot", "--merge", str(table), "--out", str(table))
        data = json.loads(table.read_text())
        placed = [r for r in data["rules"] if r.get("in_place")]
        assert placed and all((r["ranks"], r.get("collective")) == (2, None) for r in placed)
        assert placed[-1]["max_bytes"] == 64 and len({r["max_bytes"] for r in placed}) == \
            len(placed), "one run's rules"
        assert data["measured"]["2 ranks, 1 node(s), in place"]["in_place"] is True
        loaded = load(str(table), device)
        assert rules_for(loaded, 2, 1) == before
        assert rules_for(loaded, 2, 1, in_place=True) == [
            (r["max_bytes"], r["algorithm"]) for r in placed]


def test_plot_on_the_command_line_draws_several_sweeps(tmp_path, capsys):
    """python -m harness plot FILE... --out PNG: two sweeps on one figure (a PNG written)."""
    from harness.__main__ import main
    png = tmp_path / "two.png"
    assert main(["plot", "results/host-allreduce-2ranks.json",
                 "results/host-2nodes-x-2ranks.json", "--out", str(png)]) == 0
    assert f"# wrote {png}" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tune_refuses_an_unknown_algorithm(tmp_path):
    from harness.__main__ import main
    with pytest.raises(SystemExit, match=r"--algos: choose from .*, got \['ring', 'bogus'\]"):
        main(["tune", "--algos", "ring,bogus", "--out", str(tmp_path / "t.json")])
    with pytest.raises(SystemExit, match=r"-I: reduce has a root"):
        main(["tune", "-I", "--collective", "reduce", "--out", str(tmp_path / "t.json")])


def test_tune_refuses_a_table_it_could_not_merge_or_write_before_measuring(tmp_path):
    """--merge of a missing or foreign file, or --out in no folder, failed only when the
    rounds were over, losing them: now refused at once, with the reason."""
    from harness.__main__ import main
    (tmp_path / "foreign.json").write_text('{"results": []}')
    (tmp_path / "broken.json").write_text("{")
    out = str(tmp_path / "t.json")
    for argv, why in ((["--merge", str(tmp_path / "none.json"), "--out", out],
                       "cannot read a tuning table"),
                      (["--merge", str(tmp_path / "broken.json"), "--out", out],
                       "cannot read a tuning table"),
                      (["--merge", str(tmp_path / "foreign.json"), "--out", out],
                       "not a tuning table (no list of rules)"),
                      (["--out", str(tmp_path / "no" / "t.json")], "no folder")):
        with pytest.raises(SystemExit, match=re.escape(why)):
            main(["tune", "-b", "8", "-e", "8", "--rounds", "1", *argv])
    assert not (tmp_path / "t.json").exists()


def test_the_plot_legend_keeps_name_version_and_mode():
    from harness.plot import short
    assert short("ring (cuda, auto, persistent kernel)") == "ring"
    assert short("nccl 2.30.7 (RING_NCCL_LIB, /tmp/x/libnccl.so.2), several ranks per GPU "
                 "(NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL_MAX_CTAS=16)") == \
        "nccl 2.30.7, several ranks per GPU"
    assert short("nccl 2.28.9 (system), ranks sharing a GPU as separate hosts over sockets "
                 "(NCCL_HOSTID per rank)") == \
        "nccl 2.28.9, ranks sharing a GPU as separate hosts over sockets"
    assert short("mpi") == "mpi"


def test_the_plot_shows_every_ring_variant_over_every_baseline():
    """ring and ring-kernel each over nccl and mpi, out of place: baseline time / ring's
    (the in-place runs, three times slower here, are not compared); a variant over another
    variant is no speed-up over a baseline."""
    from harness.plot import speedups
    curves = {(impl, "allreduce", "float32", "sum", inplace):
              [(8, 0.0, t * (3 if inplace else 1)), (1024, 0.0, 2 * t * (3 if inplace else 1))]
              for impl, t in (("ring", 10.0), ("ring-kernel", 2.0), ("nccl", 20.0),
                              ("mpi", 40.0)) for inplace in (False, True)}
    pairs = speedups(curves)
    found = {label: (xs, ys) for label, xs, ys in pairs}
    assert len(pairs) == 4
    assert found == {f"{r} vs {b} allreduce float32": ([8, 1024], [tb / tr] * 2)
                     for r, tr in (("ring", 10.0), ("ring-kernel", 2.0))
                     for b, tb in (("nccl", 20.0), ("mpi", 40.0))}


def test_the_size_axis_labels_1_8_and_64_of_each_unit_only():
    from harness.plot import _size_tick
    sizes = (0.5, 1, 2, 8, 16, 64, 128, 1024, 2048, 3072, 8192, 1 << 20, 1 << 30)
    assert [_size_tick(v) for v in sizes] == \
        ["", "1 B", "", "8 B", "", "64 B", "", "1 KB", "", "", "8 KB", "1 MB", "1 GB"]


@pytest.mark.mpi
def test_allreduce_sweep_writes_json_and_plot(tmp_path):
    js, png = tmp_path / "s.json", tmp_path / "s.png"
    out = _sweep(2, "allreduce", "-b", "8", "-e", "1M", "-f", "16", "-n", "3", "-w", "1",
                 "--impl", "ring,mpi", "--json", str(js), "--plot", str(png))
    assert "Out of bounds values : 0 OK" in out
    data = json.loads(js.read_text())
    assert data["meta"]["ranks"] == 2 and data["meta"]["command"] and data["complete"] is True
    roof = data["meta"]["rooflines"]
    assert roof["nbytes"] == 16 << 20 and roof["host_copy_GBps"] > 0
    assert "# copy rooflines (16 MiB, rank 0 alone): host_copy" in out
    assert "link_GBps" not in roof and "# link between nodes" not in out  # one node
    recs = data["results"]
    assert {r["impl"] for r in recs} == {"ring", "mpi"}
    assert all(r["wrong"] == 0 for r in recs) and len(recs) == 5 * 2 * 2  # sizes x impls x places
    assert {"nbytes", "count", "dtype", "op", "time_us", "algbw", "busbw", "wrong"} <= set(recs[0])
    assert png.stat().st_size > 10_000


@pytest.mark.mpi
@pytest.mark.skipif(not SIMULATED, reason="Numba's simulator (on a GPU: gpu-session's sweeps)")
def test_a_cuda_sweep_under_the_simulator_has_no_rooflines(tmp_path):
    """The harness on the cuda device under Numba's simulator, the kernel path beside the
    stream path and the default ("auto": the kernel, every rank on the one GPU), each
    labelled with the path it ran: every element right, and no copy rooflines, which the
    simulator cannot time (it has no events), instead of a crash."""
    js = tmp_path / "s.json"
    out = _sweep(2, "reduce_scatter", "--device", "cuda", "-b", "8", "-e", "512", "-f", "8",
                 "-n", "1", "-w", "1", "--impl", "ring-kernel,ring-stream,ring", "--json", str(js))
    assert "Out of bounds values : 0 OK" in out
    assert "rank 0 alone): none (Numba's simulator times nothing)" in out
    data = json.loads(js.read_text())
    assert data["meta"]["rooflines"] == {"nbytes": 16 << 20}
    labels = data["meta"]["implementations"]
    assert "persistent kernel" in labels["ring-kernel"] and "persistent kernel" in labels["ring"]
    assert "stream path 'stream'" in labels["ring-stream"]
    recs = data["results"]
    assert {r["impl"] for r in recs} == {"ring-kernel", "ring-stream", "ring"}
    assert all(r["wrong"] == 0 for r in recs) and len(recs) == 3 * 3 * 2


@pytest.mark.mpi
@pytest.mark.skipif(not SIMULATED, reason="Numba's simulator (on a GPU: gpu-session's sweeps)")
@pytest.mark.parametrize("coll,dtypes,ops", [
    ("allreduce", "bfloat16", "sum,max"),
    ("allgather", "bfloat16,float8_e4m3fn,float8_e5m2", "none")])
def test_a_cuda_sweep_under_the_simulator_puts_bfloat16_and_float8_as_bits(
        coll, dtypes, ops, tmp_path):
    """The dtypes CuPy lacks go to the (simulated) GPU as integer bits of their width, which
    ring's cuda device reads as the dtype the call names; put as themselves, ring refuses
    them (harness/buffers.py). Every case runs, every element right."""
    js = tmp_path / "s.json"
    flags = [] if ops == "none" else ["-o", ops]
    out = _sweep(2, coll, "--device", "cuda", "-b", "8", "-e", "64", "-f", "8", "-n", "1",
                 "-w", "0", "-d", dtypes, *flags, "--impl", "ring", "--json", str(js))
    assert "Out of bounds values : 0 OK" in out
    _ring_ran_every_case(js, coll, dtypes.split(","), ops.split(","))


@pytest.mark.mpi
@pytest.mark.skipif(not SIMULATED, reason="Numba's simulator (on a GPU: gpu-session's sweeps)")
def test_register_registers_ring_buffers_per_case_and_says_so(tmp_path):
    """-R: ring's buffers go through comm.register before each case (collective, every rank
    alike); under the simulator the harness's arrays are private memory, so it says False
    and the calls are staged, right. The label and the timing note say it."""
    js = tmp_path / "r.json"
    out = _sweep(2, "allreduce", "--device", "cuda", "-b", "8", "-e", "512", "-f", "8",
                 "-n", "1", "-w", "1", "--impl", "ring-twoshot", "-R", "--json", str(js))
    assert "Out of bounds values : 0 OK" in out
    data = json.loads(js.read_text())
    assert "registered buffers" in data["meta"]["implementations"]["ring-twoshot"]
    assert "registered (comm.register) before each case" in data["meta"]["timing"]
    # 3 sizes x in place and out x (the timed buffers, the checked ones), none mapped (the
    # simulator's private arrays)
    assert data["meta"]["registration"] == {"ring-twoshot": {"cases": 12, "registered": 0}}
    assert all(r["wrong"] == 0 and r["algo"] == "twoshot" for r in data["results"])


def test_an_impl_name_says_whether_its_buffers_are_registered():
    assert registered("ring-twoshot+R") == ("ring-twoshot", True)
    assert registered("ring-twoshot") == ("ring-twoshot", False)
    assert registered("ring+R") == ("ring", True)


@pytest.mark.mpi
@pytest.mark.skipif(not SIMULATED, reason="Numba's simulator (on a GPU: gpu-session's sweeps)")
def test_an_impl_with_plus_r_registers_beside_the_same_one_staged(tmp_path):
    """--impl ring-twoshot,ring-twoshot+R: two rows a case, the second's buffers registered
    before each case (its label and the timing note say so; the simulator's private arrays
    are never mapped, so both are staged here, right), the first's never tried."""
    js = tmp_path / "r.json"
    out = _sweep(2, "allreduce", "--device", "cuda", "-b", "8", "-e", "512", "-f", "8",
                 "-n", "1", "-w", "1", "--impl", "ring-twoshot,ring-twoshot+R", "--json", str(js))
    assert "Out of bounds values : 0 OK" in out
    data = json.loads(js.read_text())
    names = data["meta"]["implementations"]
    assert "registered buffers" in names["ring-twoshot+R"]
    assert "registered buffers" not in names["ring-twoshot"]
    assert "named with +R registered" in data["meta"]["timing"]
    assert data["meta"]["registration"] == {"ring-twoshot+R": {"cases": 12, "registered": 0}}
    rows = data["results"]
    assert {r["impl"] for r in rows} == {"ring-twoshot", "ring-twoshot+R"}
    assert all(r["wrong"] == 0 and r["algo"] == "twoshot" for r in rows)


@pytest.mark.mpi
def test_algo_puts_a_column_per_algorithm_in_place_of_ring(tmp_path):
    """--algo A,B: one ring column per algorithm (ring-flat, ring-tree) in place of --impl's
    plain ring, the other implementations kept; each column runs the algorithm it names, and
    a name given twice (in --algo or --impl) once."""
    js = tmp_path / "s.json"
    out = _sweep(2, "allreduce", "-b", "8", "-e", "64", "-f", "8", "-n", "1", "-w", "0",
                 "--algo", "ring,tree,ring", "--impl", "ring,mpi,mpi", "--json", str(js))
    assert "Out of bounds values : 0 OK" in out
    recs = json.loads(js.read_text())["results"]
    assert {r["impl"] for r in recs} == {"ring-flat", "ring-tree", "mpi"}
    # a name given twice runs once: two columns of one name showed the second's figures twice
    assert len(recs) == 2 * 2 * 3, [(r["impl"], r["nbytes"], r["in_place"]) for r in recs]
    assert {r["algo"] for r in recs if r["impl"] == "ring-tree"} == {"tree"}
    assert {r["algo"] for r in recs if r["impl"] == "ring-flat"} == {"ring"}


@pytest.mark.mpi
@pytest.mark.parametrize("args,why", [
    (["allreduce", "--algo", "ring,bogus"], "--algo: choose from"),
    (["allreduce", "-G", "10"], "-G: the harness does not replay CUDA graphs"),
    (["broadcast", "-r", "5"], "-r: the root must be a rank (0..1), got 5"),
    (["gather", "-r", "2"], "-r: the root must be a rank (0..1), got 2"),  # (one past)
    (["reduce", "-r", "-1"], "-r: the root must be a rank (0..1), got -1"),
    (["allreduce", "-d", "nope"], "-d: unsupported dtype nope"),
    (["allreduce", "--impl", "ring,bogus"], "--impl: unknown ['bogus']; choose from"),
    (["allreduce", "--plot", "p.png"], "--plot draws from the results file: give --json too"),
    pytest.param(["allreduce", "--impl", "nccl"], "no implementation can run here: ",
                 marks=pytest.mark.skipif(HAVE_GPU, reason="NCCL may run on a GPU"))])
def test_bad_flags_are_refused_with_the_reason(args, why):
    rc, out = mpirun(2, ["-m", "harness", *args, "-b", "8", "-e", "8"], timeout=120)
    assert rc != 0 and why in out, out[-2000:]


@pytest.mark.mpi
def test_compressed_wires_report_their_error_against_float32(tmp_path):
    """--impl ring-bf16,ring-fp16,ring-int8 beside ring: every result as the wire's rules
    give it (#wrong 0: the expected values are rounded by the same rules on the host), and
    an error column, each wire's largest relative error against the float32 sum, within
    what its rounding allows and not zero (the data did travel compressed); none for ring."""
    js = tmp_path / "s.json"
    out = _sweep(2, "allreduce", "-b", "64", "-e", "4096", "-f", "8", "-n", "1", "-w", "0",
                 "-o", "avg", "--impl", "ring,ring-bf16,ring-fp16,ring-int8", "--json", str(js))
    assert "Out of bounds values : 0 OK" in out and "(rel)" in out
    recs = json.loads(js.read_text())["results"]
    assert {r["impl"] for r in recs} == {"ring", "ring-bf16", "ring-fp16", "ring-int8"}
    assert all(r["wrong"] == 0 for r in recs)
    # (relative to the largest magnitude: four half-steps of a 16-bit wire's roundings, two
    # of int8's scale steps)
    bound = {"ring-bf16": 2 ** -6, "ring-fp16": 2 ** -9, "ring-int8": 2 / 127}
    for r in recs:
        if r["impl"] == "ring":
            assert r.get("error") is None
        else:
            assert 0 < r["error"] <= bound[r["impl"]], r


@pytest.mark.mpi
def test_float8_is_left_out_of_a_reduction_and_said_so(tmp_path):
    js = tmp_path / "s.json"
    out = _sweep(2, "allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0",
                 "-d", "float32,float8_e4m3fn", "--impl", "ring", "--json", str(js))
    assert "# float8_e4m3fn: not run: allreduce reduces" in out
    assert {r["dtype"] for r in json.loads(js.read_text())["results"]} == {"float32"}


@pytest.mark.mpi
def test_compressed_wires_are_left_out_of_the_ops_they_do_not_carry(tmp_path):
    """-o all beside ring-bf16 and ring-int8: prod, max and min are not run for them, each
    case with its reason (ring refuses such a call on every rank: the sweep would end
    there); sum and avg run, right."""
    js = tmp_path / "s.json"
    _sweep(2, "allreduce", "-b", "64", "-e", "64", "-n", "1", "-w", "0", "-o", "all",
           "--impl", "ring-bf16,ring-int8", "--json", str(js))
    recs = json.loads(js.read_text())["results"]
    assert {r["op"] for r in recs} == {"sum", "prod", "max", "min", "avg"}
    for r in recs:
        if r["op"] in ("sum", "avg"):
            assert r["skipped"] is None and r["wrong"] == 0, r
        else:
            assert "sum and avg only" in r["skipped"], r


@pytest.mark.mpi
def test_without_the_check_nothing_is_counted_wrong_or_right(tmp_path):
    """-c 0, as nccl-tests' -c 0: no result is checked, so #wrong reads n/a (-1 in the
    JSON), not 0."""
    js = tmp_path / "s.json"
    out = _sweep(2, "allreduce", "-b", "64", "-e", "64", "-n", "1", "-w", "0", "-c", "0",
                 "--impl", "ring,mpi", "--json", str(js))
    recs = json.loads(js.read_text())["results"]
    assert len(recs) == 4 and all(r["wrong"] == -1 for r in recs), recs
    assert "n/a" in out


@pytest.mark.mpi
def test_plus_r_is_refused_for_what_is_not_ring(tmp_path):
    rc, out = mpirun(1, ["-m", "harness", "allreduce", "-b", "8", "-e", "8", "--impl",
                         "ring,mpi+R"], timeout=120)
    assert rc != 0 and "+R (registered buffers) is for ring's implementations" in out
    assert "['mpi+R']" in out


@pytest.mark.mpi
def test_a_sweep_killed_by_its_time_limit_leaves_the_sizes_it_finished(tmp_path):
    """The JSON is rewritten after every size: a sweep killed at its third size (as a time
    limit kills it) leaves the first two, marked incomplete, and no half-written file."""
    js = tmp_path / "s.json"
    script = (
        "import os, signal, sys\n"
        "import harness.__main__ as h\n"
        "real = h.run_case\n"
        "def run_case(impl, coll, world, bufs, nbytes, *a, **kw):\n"
        "    if nbytes > 64:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real(impl, coll, world, bufs, nbytes, *a, **kw)\n"
        "h.run_case = run_case\n"
        f"h.main(['allreduce', '-b', '8', '-e', '4K', '-f', '8', '-n', '2', '-w', '1', "
        f"'--impl', 'ring', '--json', {str(js)!r}])\n")
    rc, out = mpirun(1, ["-c", script], timeout=120)
    assert rc != 0, out
    data = json.loads(js.read_text())
    assert data["complete"] is False and data["meta"]["command"]
    assert sorted({r["nbytes"] for r in data["results"]}) == [8, 64]
    assert all(r["wrong"] == 0 for r in data["results"])
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]


def _ring_ran_every_case(js, coll, dtypes, ops, impl="ring"):
    """The JSON holds a checked, timed result of `impl` for every dtype x op x size x place."""
    data = json.loads(js.read_text())
    recs = [r for r in data["results"] if r["impl"] == impl]
    assert recs, f"no {impl} results"
    assert all(r["collective"] == coll and r["skipped"] is None and r["wrong"] == 0
               and r["time_us"] > 0 for r in recs), recs
    assert {r["dtype"] for r in recs} == set(dtypes)
    assert {r["op"] for r in recs} == set(ops)
    assert len(recs) == len({(r["dtype"], r["op"], r["nbytes"], r["in_place"]) for r in recs})
    assert {r["in_place"] for r in recs} == {False, True}
    return recs


@pytest.mark.mpi
@pytest.mark.parametrize("coll,dtype,op", [("reduce_scatter", "float64", "max"),
                                           ("allgather", "all", "sum"),
                                           ("allreduce", "bfloat16,uint8", "all")])
def test_three_ranks_odd_sizes(coll, dtype, op, tmp_path):
    js = tmp_path / "s.json"
    out = _sweep(3, coll, "-b", "1001", "-e", "100001", "-f", "10", "-n", "2", "-w", "1",
                 "-d", dtype, "-o", op, "--impl", "ring,mpi", "--json", str(js))
    assert "Out of bounds values : 0 OK" in out
    dtypes = [d.name for d in DTYPES] if dtype == "all" else dtype.split(",")
    ops = {"all": ["sum", "prod", "max", "min", "avg"]}.get(op, [op])
    if coll == "allgather":
        ops = ["none"]
    recs = _ring_ran_every_case(js, coll, dtypes, ops)
    assert len(recs) == 2 * 2 * sum(  # 2 sizes (1001, 10010) x places x (dtype, op) cases
        1 for d in dtypes for o in ops if o != "avg" or np.dtype(_dt(d)).kind in "fV")


def _dt(name):
    return next(d for d in DTYPES if d.name == name)


@pytest.mark.mpi
@pytest.mark.parametrize("coll,dtype,op,root", [("broadcast", "float16,int64", "sum", "2"),
                                                ("reduce", "float32,uint8", "all", "1")])
def test_rooted_collectives_on_three_ranks(coll, dtype, op, root, tmp_path):
    js = tmp_path / "s.json"
    out = _sweep(3, coll, "-b", "1001", "-e", "100001", "-f", "10", "-n", "2", "-w", "1",
                 "-d", dtype, "-o", op, "-r", root, "--impl", "ring,ring-hier,mpi",
                 "--json", str(js))
    assert "Out of bounds values : 0 OK" in out
    assert "# ring-hier: not run:" in out  # no two-level broadcast / reduce (nor one node)
    rows = [ln.split() for ln in out.splitlines() if ln.split()[:1] and ln.split()[0].isdigit()]
    assert rows and all(r[4] == root for r in rows)  # the root column
    ops = ["none"] if coll == "broadcast" else \
        {"all": ["sum", "prod", "max", "min", "avg"]}.get(op, [op])
    recs = _ring_ran_every_case(js, coll, dtype.split(","), ops)
    assert all(r["root"] == int(root) for r in recs)


def test_every_algorithm_has_a_column():
    """--algo A and tune --algos take every algorithm a communicator takes."""
    from harness.impls import IMPLS, Ring
    from harness.tune import ALL
    from ring.options import ALGORITHMS
    assert all(Ring.NAMES.get(a, f"ring-{a}") in IMPLS for a in ALGORITHMS)
    assert set(ALL) == set(ALGORITHMS) - {"auto"}


@pytest.mark.mpi
def test_two_level_and_flat_columns_on_emulated_nodes(tmp_path):
    """2 emulated nodes of 2 ranks: ring-hier (two-level), ring-flat and ring-tree run and
    check every case; the label says which algorithm each column ran."""
    js = tmp_path / "s.json"
    out = _sweep(4, "allreduce", "-b", "1K", "-e", "64K", "-f", "8", "-n", "2", "-w", "1",
                 "-d", "float32,int32", "-o", "sum,max", "--impl", "ring-hier,ring-flat,ring-tree,mpi",
                 "--json", str(js), env={"RING_NODES": "2"})
    assert "Out of bounds values : 0 OK" in out
    assert "ring-hier = ring (host, hierarchical)" in out and "ring-flat = ring (host, ring)" in out
    assert "ring-tree = ring (host, tree)" in out
    # the link between the nodes is measured in the same run: rank 0 and rank 2, node 1's first
    roof = json.loads(js.read_text())["meta"]["rooflines"]
    assert roof["link_ranks"] == [0, 2] and roof["link_GBps"] > 0
    assert "# link between nodes (ranks 0 and 2, 16 MiB each way at once):" in out
    for impl in ("ring-hier", "ring-flat", "ring-tree"):
        recs = _ring_ran_every_case(js, "allreduce", ["float32", "int32"], ["sum", "max"], impl)
        assert len(recs) == 3 * 2 * 2 * 2  # 3 sizes (1K, 8K, 64K) x dtypes x ops x places


def test_the_link_is_measured_on_at_most_link_bytes_and_printed_on_its_own_line(monkeypatch):
    """The link between nodes takes at most LINK_BYTES a message (a slow link would take
    seconds for the copies' size), and describe() says so on a line of its own, not among
    rank 0's copy rooflines. The link and the copies are stand-ins here; one process."""
    from mpi4py import MPI

    from harness import roofline

    sizes = []
    monkeypatch.setattr(roofline, "next_node", lambda world: 1)
    monkeypatch.setattr(roofline, "host", lambda nbytes: {"host_copy_GBps": 12.5})
    monkeypatch.setattr(roofline, "link",
                        lambda world, partner, nbytes: sizes.append((partner, nbytes)) or 0.75)
    for nbytes in (1 << 20, roofline.LINK_BYTES, roofline.NBYTES):
        figures = roofline.measure(MPI.COMM_SELF, "host", nbytes)
    assert sizes == [(1, 1 << 20), (1, roofline.LINK_BYTES), (1, roofline.LINK_BYTES)]
    assert figures == {"host_copy_GBps": 12.5, "nbytes": roofline.NBYTES, "link_GBps": 0.75,
                       "link_ranks": [0, 1]}
    assert roofline.describe(figures).splitlines() == [
        "# copy rooflines (256 MiB, rank 0 alone): host_copy 12.5 GB/s",
        "# link between nodes (ranks 0 and 1, 64 MiB each way at once): 0.75 GB/s"]


@pytest.mark.mpi
@pytest.mark.parametrize("coll,nprocs,root", [("gather", 3, "2"), ("scatter", 4, "1"),
                                              ("alltoall_perf", 3, "0")])
def test_gather_scatter_alltoall_against_mpi(coll, nprocs, root, tmp_path):
    """Every dtype (bfloat16 and float8 too: MPI moves them as bits), in place and out,
    ring and MPI both checked element by element."""
    js = tmp_path / "s.json"
    out = _sweep(nprocs, coll, "-b", "1K", "-e", "64K", "-f", "8", "-n", "2", "-w", "1",
                 "-d", "all", "-r", root, "--impl", "ring,mpi", "--json", str(js))
    assert "Out of bounds values : 0 OK" in out
    name = ALIASES.get(coll, coll)
    dtypes = [d.name for d in DTYPES]
    for impl in ("ring", "mpi"):
        recs = _ring_ran_every_case(js, name, dtypes, ["none"], impl)
        assert len(recs) == 3 * len(dtypes) * 2  # sizes x dtypes x places


def test_kernel_benchmark_json_names_the_machine_inside():
    """make bench-kernels' JSON (pytest-benchmark's machine_info) carries the GPU (None
    here), the CUDA / NCCL versions, the library versions, the commit and the command."""
    from tests.bench.conftest import pytest_benchmark_update_machine_info
    info = {}
    pytest_benchmark_update_machine_info(None, info)
    assert {"gpu", "cuda_runtime", "nccl", "versions", "git_commit", "command"} <= set(info)
    assert info["versions"]["numba-cuda"]


def test_the_commit_comes_from_the_environment_first(monkeypatch):
    """RING_GIT_COMMIT wins over the tree's git (a lent GPU machine's copy may carry a stale
    .git); without either there is no commit to name."""
    import subprocess
    from harness import meta

    monkeypatch.setenv("RING_GIT_COMMIT", "f" * 40)
    assert meta.git_commit() == "f" * 40  # although this checkout has git
    monkeypatch.delenv("RING_GIT_COMMIT")
    assert meta.git_commit() != "f" * 40

    def no_git(*a, **k):
        raise OSError("no git here")
    monkeypatch.setattr(subprocess, "run", no_git)
    assert meta.git_commit() is None


def test_the_commit_says_when_the_tree_differs_from_it(tmp_path, monkeypatch):
    """A figure made from changed code is not its commit's: git_commit() adds "+changes"
    where a tracked file outside results/ differs from HEAD, and not for a changed result
    file (a sweep rewrites those) or an untracked file. Run on a copy of harness/meta.py in
    a repository of its own, made here."""
    import importlib.util
    import shutil
    import subprocess

    monkeypatch.delenv("RING_GIT_COMMIT", raising=False)
    for d in ("harness", "results", "ring"):
        (tmp_path / d).mkdir()
    shutil.copy(Path(__file__).resolve().parent.parent / "harness" / "meta.py",
                tmp_path / "harness" / "meta.py")
    (tmp_path / "results" / "sweep.json").write_text("{}")
    (tmp_path / "ring" / "code.py").write_text("A = 1\n")

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "one")
    head = git("rev-parse", "HEAD").strip()
    spec = importlib.util.spec_from_file_location("meta_copy", tmp_path / "harness" / "meta.py")
    meta = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(meta)
    assert meta.git_commit() == head
    (tmp_path / "results" / "sweep.json").write_text('{"rewritten": 1}')
    (tmp_path / "ring" / "new.py").write_text("B = 2\n")  # untracked
    assert meta.git_commit() == head
    (tmp_path / "ring" / "code.py").write_text("A = 2\n")
    assert meta.git_commit() == head + "+changes"


def test_a_result_names_the_settings_that_shaped_it(monkeypatch):
    """RING_NODES, the MPI runtime's link choice and MPS are not in the command line, yet
    they decide what a figure means: describe() records them (and nothing else of the
    environment)."""
    from harness import meta

    monkeypatch.setenv("RING_NODES", "2")
    monkeypatch.setenv("MPIR_CVAR_NOLOCAL", "1")
    monkeypatch.setenv("UCX_TLS", "tcp,self")
    monkeypatch.setenv("FI_PROVIDER", "tcp")
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", "/tmp/mps-pipe")
    monkeypatch.setenv("RING_GIT_COMMIT", "f" * 40)
    monkeypatch.setenv("HOME_LIKE_SETTING", "y")
    env = meta.describe(["python", "x.py"], cuda=False)["environment"]
    assert env["RING_NODES"] == "2" and env["MPIR_CVAR_NOLOCAL"] == "1"
    assert env["UCX_TLS"] == "tcp,self" and env["FI_PROVIDER"] == "tcp"
    assert env["CUDA_MPS_PIPE_DIRECTORY"] == "/tmp/mps-pipe"  # ranks sharing the GPU under MPS
    assert "HOME_LIKE_SETTING" not in env
    assert "RING_GIT_COMMIT" not in env  # it is the git_commit field


@pytest.mark.parametrize("version, name", [
    ("MPICH Version:      4.3.0\nMPICH Release date: Mon Feb  3 09:09:47 AM CST 2025\n",
     "MPICH 4.3.0"),
    ("Open MPI v4.1.6, package: Open MPI builder Distribution, ident: 4.1.6, repo rev: "
     "v4.1.6, Sep 30, 2023", "Open MPI v4.1.6"),
    ("Intel(R) MPI Library 2021.10 for Linux* OS\n",
     "Intel(R) MPI Library 2021.10 for Linux* OS")])
def test_the_mpi_baselines_label_names_the_library_and_its_version(monkeypatch, version, name):
    """The label's library name: the version string's first line up to its first comma,
    without MPICH's "Version:" and its run of spaces."""
    import types

    from harness import impls

    monkeypatch.setattr(impls, "MPI",
                        types.SimpleNamespace(Get_library_version=lambda: version))
    assert impls._mpi_name() == name

def test_the_cuda_and_nccl_versions_are_read_in_their_encodings(monkeypatch):
    """CUDA's versions are 1000 major + 10 minor, NCCL's (from 2.9) 10000 major + 100 minor
    + patch: CUDA 12.8 and NCCL 2.30.7 (the lent GPU machine's) are named as such. Read
    from a stand-in for CuPy (the CI machine has none)."""
    import sys
    import types

    from harness import meta

    cupy, cuda = types.ModuleType("cupy"), types.ModuleType("cupy.cuda")
    cuda.runtime = types.SimpleNamespace(runtimeGetVersion=lambda: 12080,
                                         driverGetVersion=lambda: 13010)
    cuda.nccl = types.SimpleNamespace(get_version=lambda: 23007)
    cupy.cuda = cuda
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    assert meta.cuda_versions() == {"cuda_runtime": "12.8", "cuda_driver_api": "13.1",
                                    "nccl": "2.30.7"}
    cuda.nccl = types.SimpleNamespace(get_version=lambda: 21812)
    assert meta.cuda_versions()["nccl"] == "2.18.12"


def test_a_result_names_the_loopback_shaping(monkeypatch):
    """TCP between emulated nodes runs over loopback, which benchmarks/shaped_links.sh
    shapes with tc: describe() records the loopback's queueing discipline, or None where
    tc cannot say."""
    import subprocess

    from harness import meta

    shaped = "qdisc tbf 8001: root refcnt 2 rate 2Gbit burst 1048500b lat 200ms"

    def tc(args, **kwargs):  # (git too: the commit's field)
        out = shaped + "\n" if args == ["tc", "qdisc", "show", "dev", "lo"] else ""
        return subprocess.CompletedProcess(args, 0, out, "")

    monkeypatch.setattr(subprocess, "run", tc)
    assert meta.describe(["x"], cuda=False)["loopback_qdisc"] == shaped

    def missing(args, **kwargs):
        if args[0] == "tc":
            raise FileNotFoundError("tc")
        return subprocess.CompletedProcess(args, 1, "", "")

    monkeypatch.setattr(subprocess, "run", missing)
    assert meta.describe(["x"], cuda=False)["loopback_qdisc"] is None


def test_sizes_read_as_people_write_them():
    from harness.plot import _size_tick
    from harness.sizes import human, parse_size
    assert [human(n) for n in (8, 1000, 1024, 1536, 64 << 20, 1 << 30)] == \
        ["8 B", "1000 B", "1 KB", "1.5 KB", "64 MB", "1 GB"]
    for text in ("8", "1K", "64M", "1G"):
        assert human(parse_size(text)) == text.replace("K", " KB").replace("M", " MB") \
            .replace("G", " GB") if text != "8" else "8 B"
    # the plot labels 1, 8 and 64 of each unit and leaves the ticks between them blank
    assert [_size_tick(float(1 << k)) for k in (3, 4, 6, 10, 13, 20, 30)] == \
        ["8 B", "", "64 B", "1 KB", "8 KB", "1 MB", "1 GB"]


def test_the_minimum_bytes_each_collective_must_move_on_one_gpu():
    """Every rank reads its input once and writes its output once (the root's only, for the
    rooted ones): all-reduce 2 K N, whatever the algorithm."""
    from harness.collectives import COLLECTIVES
    k, n = 4, 1 << 20
    want = {"allreduce": 2 * k * n, "reduce_scatter": k * (n + n // k),
            "allgather": k * (n // k + n), "alltoall": 2 * k * n, "broadcast": k * n,
            "reduce": k * n + n, "gather": k * (n // k) + n, "scatter": n + k * (n // k)}
    for name, coll in COLLECTIVES.items():
        i, o = coll.counts(n, 4, k)
        assert coll.min_bytes(i, o, 4, k) == want[name], name


def test_vs_min_reads_the_h200_run_as_the_results_say():
    """The committed H200 run at 4 processes (results/h200/README.md): the ring's 256 MiB
    all-reduce at 0.34 of the 2N bound, NCCL 2.30.7's at 0.43, against twice the run's
    copy rate."""
    import json
    from harness.collectives import COLLECTIVES
    from harness.roofline import hbm_rate, vs_min
    data = json.load(open("results/h200/allreduce-4ranks-nccl230-mps.json"))
    hbm = hbm_rate(data["meta"]["rooflines"])
    assert hbm == pytest.approx(2 * 1622.68e9, rel=1e-3)
    assert hbm_rate({}) is None
    coll, n = COLLECTIVES["allreduce"], 256 << 20
    got = {r["impl"]: vs_min(coll, n, 4, 4, r["time_us"], hbm)  # (the sweep's own function)
           for r in data["results"] if r["nbytes"] == n and not r["in_place"]}
    assert round(got["ring"], 2) == 0.34 and round(got["nccl"], 2) == 0.43


def test_the_table_has_a_vs_min_column_when_ranks_share_a_gpu():
    from harness import table
    from harness.sweep import Result

    class Impl:
        name, label = "mpi", "mpi"
    r = Result("mpi", "allreduce", 1024, 256, "float32", "sum", -1, False, 10.0, 0.1, 0.1,
               0, vs_min=0.25)
    rows = {("mpi", False): r, ("mpi", True): r}
    head = table.header([Impl()], 2, "cuda", minimum=True)
    assert "vs_min" in head and "vs_min" not in table.header([Impl()], 2, "cuda")
    line = table.row(rows, [Impl()], minimum=True)
    assert line.count("0.25") == 2 and "0.25" not in table.row(rows, [Impl()])


def test_a_case_is_timed_as_nccl_tests_times_it(monkeypatch):
    """Warm-up calls finished before the clock starts; then n calls back to back and one
    synchronisation inside the timed interval; the time is the mean per call, algbw the
    size over it, busbw algbw times the bus factor. A device that takes 1 ms a call behind
    1 us of host time each: 1000.1 us a call, not the 1 us it takes to enqueue one, nor the
    warm-up's work left over."""
    from mpi4py import MPI

    from harness import sweep
    from harness.buffers import HostBuffers

    gpu = QueuedDevice(host=1e-6, work=1e-3)
    monkeypatch.setattr(sweep, "time", gpu)
    r = sweep.run_case(Enqueuing(gpu), COLLECTIVES["allreduce"], MPI.COMM_SELF, HostBuffers(),
                       4096, np.float32, "sum", False, iters=10, warmup=3, check=False)
    assert r.time_us == pytest.approx(1000.1, rel=1e-9) and r.wrong == -1
    assert r.algbw == pytest.approx(4096 / 1000.1e-6 / 1e9, rel=1e-9) and r.busbw == r.algbw


def test_the_table_puts_each_figure_in_its_own_column():
    """A row: each implementation's out-of-place then in-place block (time, algbw, busbw,
    #wrong), then ring's speed-up over each baseline (the baseline's out-of-place time over
    ring's); the footer: each implementation's own average bus bandwidth."""
    from harness import table
    from harness.sweep import Result

    class Impl:
        def __init__(self, name):
            self.name = self.label = name

    impls = [Impl("ring"), Impl("mpi")]
    results = {}
    for j, (name, place) in enumerate([(n, p) for n in ("ring", "mpi") for p in (False, True)]):
        results[(name, place)] = Result(name, "allreduce", 1024, 256, "float32", "sum", -1, place,
                                        10.0 * (j + 1), 0.5 * (j + 1), 1.0 * (j + 1), j)
    cells = table.row(results, impls).split()
    assert cells[:5] == ["1024", "256", "float32", "sum", "-1"]
    blocks = [cells[5 + 4 * j: 9 + 4 * j] for j in range(4)]
    assert blocks == [[f"{10.0 * (j + 1):.1f}", f"{0.5 * (j + 1):.2f}", f"{1.0 * (j + 1):.2f}",
                       str(j)] for j in range(4)]
    assert cells[21:] == ["3.00"]  # mpi's 30 us out of place over ring's 10
    foot = table.footer(list(results.values()), impls)
    assert "Avg bus bandwidth    : 1.500  (ring)" in foot
    assert "Avg bus bandwidth    : 3.500  (mpi)" in foot
    assert "# Out of bounds values : 6 FAILED" in foot


def test_a_sweep_with_wrong_elements_says_so_and_exits_1(monkeypatch, capsys):
    """One rank (this process): an implementation that gets every 7th element wrong is
    counted in its #wrong column and the footer, and the sweep's exit status is 1 (make
    bench and CI read it); the right one beside it is 0."""
    from harness import impls
    from harness.__main__ import main

    class Broken(impls.Mpi):
        name = "broken"

        def __call__(self, coll, x, out, op, dtype, root=0):
            super().__call__(coll, x, out, op, dtype, root)
            out.reshape(-1)[::7] += 1

    monkeypatch.setitem(impls.IMPLS, "broken", Broken)
    args = ["allreduce", "-b", "64", "-e", "64", "-n", "1", "-w", "0", "--device", "host"]
    assert main(args + ["--impl", "mpi"]) == 0
    assert "# Out of bounds values : 0 OK" in capsys.readouterr().out
    assert main(args + ["--impl", "mpi,broken"]) == 1
    out = capsys.readouterr().out
    assert "# Out of bounds values : 6 FAILED" in out  # 16 elements: 3 wrong, in place and out


def test_tune_gives_each_size_to_the_fastest_and_a_rule_runs_to_the_last_size_it_won():
    """The rules "auto" reads: each measured size goes to its fastest algorithm (oneshot at
    8 B, ring at 64 and 512, tree at 4 KiB), one rule per run of sizes an algorithm won."""
    from harness.tune import rules
    best = {"ring": {8: 5.0, 64: 6.0, 512: 20.0, 4096: 90.0},
            "oneshot": {8: 3.0, 64: 7.0, 512: 30.0},
            "tree": {512: 25.0, 4096: 80.0}}
    assert [(r["max_bytes"], r["algorithm"]) for r in rules(best, 3, 1)] == \
        [(8, "oneshot"), (512, "ring"), (4096, "tree")]
    assert all((r["ranks"], r["nodes"]) == (3, 1) for r in rules(best, 3, 1))


def test_tune_keeps_each_algorithms_best_round(monkeypatch):
    """Rounds interleave the algorithms; each size keeps its best round's time."""
    from mpi4py import MPI

    from harness import tune
    rounds = iter([5.0, 3.0, 4.0])
    monkeypatch.setattr(tune, "per_call_us", lambda *args: next(rounds))

    class Comm:
        size = 1

        def why_not(self, *args):
            return None
    assert tune.measure(MPI.COMM_SELF, Comm(), ["ring"], [64], 3) == {"ring": {64: 3.0}}


@pytest.mark.parametrize("collective,block", [("allreduce", 1), ("reduce_scatter", 2),
                                              ("allgather", 2), ("alltoall", 1)])
def test_tune_in_place_places_x_and_out_as_mpi_does(monkeypatch, collective, block):
    """-I: out is x (one array), or x is out's block, or out x's, at the rank's place."""
    from mpi4py import MPI

    from harness import tune
    seen = []
    monkeypatch.setattr(tune, "per_call_us", lambda world, comm, x, out, *a:
                        seen.append((x, out)) or 1.0)

    class Comm:
        rank, size = 1, 2

        def why_not(self, *args):
            return None
    tune.measure(MPI.COMM_SELF, Comm(), ["ring"], [64], 1, None, collective, in_place=True)
    (x, out), = seen
    if block == 1:
        assert x is out
    else:
        small, big = (out, x) if collective == "reduce_scatter" else (x, out)
        assert small.size * 2 == big.size and np.shares_memory(small, big)
        assert small.__array_interface__["data"][0] == \
            big.__array_interface__["data"][0] + small.nbytes  # rank 1's block


def test_a_tune_round_is_timed_to_the_end_of_its_calls(monkeypatch):
    """per_call_us on a device whose calls take 1 ms behind 1 us of host time: the clock
    stops after comm.synchronize(), so a call costs its 1 ms (plus its share of the first
    call's host time), not the 1 us it takes to enqueue one."""
    from mpi4py import MPI

    from harness import tune
    device = QueuedDevice(host=1e-6, work=1e-3)
    monkeypatch.setattr(tune, "time", device)
    n = int(0.02 / 1.001e-3)  # the calls of about 20 ms that a round makes
    got = tune.per_call_us(MPI.COMM_SELF, QueuedComm(device), None, None, "ring")
    assert got == pytest.approx(1e3 + 1 / n, rel=1e-9)
