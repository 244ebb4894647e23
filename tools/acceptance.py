"""Read a GPU session's all-reduce comparisons (gpu-session.sh's ncclcmp step: one harness
JSON per process count) and say where issues 52 and 53's acceptance points hold, figure by
figure; with --update, write the headline keys into results/gpu-summary.json.

    python3 tools/acceptance.py results/h200/allreduce-2ranks-nccl230-mps.json \
        results/h200/allreduce-4ranks-nccl230-mps.json [--update results/gpu-summary.json]

The points (float32 sum, out of place, the same run's NCCL >= 2.30):
  52  ring (auto) at least NCCL's speed from 8 B to 1 MiB, at 2 and at 4 processes; its 8 B
      time at 2 processes at most 12 us
  53  ring (auto) at least 1.3x NCCL's bus bandwidth from 8 MiB to 256 MiB and 1.0x from
      1 MiB to 8 MiB; the ring alone (ring-flat, where run) 1.0x NCCL from 32 MiB at 2
      processes and 0.95x at 4; at 256 MiB and 4 processes at least 0.75 of the 2N minimum
Ratios are NCCL's time over ring's (the same as bus bandwidth over bus bandwidth, as both
move the same size). A point whose sizes or implementations the files lack is "not run".
A row with wrong results (#wrong above 0) is no time; a run that has any holds no point
(each reads FAILS), and --update refuses it: nothing is written, exit status 1.

It also takes benchmarks/profile_call.py's JSONs (--json: gpu-session's step profile) for
issue 52's host cost: a kept 8-byte call's time to enqueue at K processes is
enqueue_us_comm_kK (at most 5 us at 2), from the run with the default launch and
algorithm; a run with RING_LAUNCH set, another algorithm, --blocking or --no-launch gives
the same key with _<launch>, _<algorithm>, _blocking or _nolaunch after it.
"""

from __future__ import annotations

import argparse
import json
import sys

KIB, MIB = 1 << 10, 1 << 20


def load(path: str) -> dict:
    with open(path) as f:
        data = json.load(f)
    times: dict = {}
    for r in data["results"]:
        if r["collective"] != "allreduce" or r["dtype"] != "float32" or r["op"] != "sum" \
                or r["in_place"] or r.get("skipped") or r["time_us"] != r["time_us"] \
                or r["wrong"] > 0:
            continue
        times[(r["impl"], r["nbytes"])] = r
    return {"ranks": data["meta"]["ranks"], "meta": data["meta"], "by": times,
            "wrong": sum(max(r["wrong"], 0) for r in data["results"])}


def profile_keys(profiles: list[dict]) -> tuple[list[str], dict]:
    """Lines and summary keys of profile_call.py's JSONs (see the module's docstring)."""
    lines, keys = [], {}
    for p in profiles:
        if p["device"] != "cuda" or p["nbytes"] != 8:
            continue
        if p["meta"].get("environment", {}).get("NUMBA_ENABLE_CUDASIM", "0") != "0":
            lines.append(f"{p['what']}: under Numba's simulator, not a GPU figure: skipped")
            continue
        k = p["ranks"]
        if p["api"] == "group":
            keys[f"enqueue_us_group_k{k}"] = p["enqueue_us"]
            continue
        suffix = ("_nolaunch" if p["no_launch"] else "_blocking" if p["blocking"] else "") + \
            ("" if p["algorithm"] == "auto" else f"_{p['algorithm']}") + \
            (f"_{p['launch']}" if "RING_LAUNCH" in p["meta"].get("environment", {}) else "")
        keys[f"enqueue_us_comm_k{k}{suffix}"] = p["enqueue_us"]
        if k == 2 and not suffix:
            ok = p["enqueue_us"] <= 5
            lines.append(f"52: a kept 8 B call's enqueue at 2 processes {p['enqueue_us']:.1f} us, "
                         f"launch {p['launch']} (need <= 5) {'HOLDS' if ok else 'FAILS'}")
        else:
            lines.append(f"enqueue_us_comm_k{k}{suffix}: {p['enqueue_us']:.1f} us (reported)")
    return lines, keys


def ratios(run: dict, impl: str, lo: int, hi: int) -> dict[int, float]:
    """NCCL's time / impl's, at each size in [lo, hi] both ran."""
    by = run["by"]
    return {n: by[("nccl", n)]["time_us"] / by[(impl, n)]["time_us"]
            for (i, n) in by if i == impl and lo <= n <= hi and ("nccl", n) in by}


def verdict(ok: bool, wrong: int) -> str:
    """HOLDS only where the run had no wrong results."""
    if not ok:
        return "FAILS"
    return f"FAILS (#wrong {wrong} in this run)" if wrong else "HOLDS"


def point(label: str, got: dict[int, float], need: float,
          wrong: int = 0) -> tuple[str, bool | None]:
    if not got:
        return f"{label}: not run", None
    worst = min(got, key=got.get)
    ok = got[worst] >= need
    return (f"{label}: worst {got[worst]:.2f}x at {size(worst)} (need {need}x) "
            f"{verdict(ok, wrong)}"), ok and not wrong


def size(n: int) -> str:
    return f"{n // MIB} MiB" if n >= MIB else f"{n // KIB} KiB" if n >= KIB else f"{n} B"


def check(runs: list[dict]) -> tuple[list[str], dict]:
    lines, keys = [], {}
    for run in runs:
        k = run["ranks"]
        lines.append(f"== {k} processes (#wrong {run['wrong']})")
        for impl, reg in run["meta"].get("registration", {}).items():  # (-R runs)
            lines.append(f"{impl}: buffers registered in {reg['registered']} of "
                         f"{reg['cases']} cases")
        for label, impl, lo, hi, need in (
                ("52: ring vs NCCL, 8 B - 1 MiB", "ring", 8, MIB, 1.0),
                ("53: ring vs NCCL, 1 MiB - 8 MiB", "ring", MIB, 8 * MIB, 1.0),
                ("53: ring vs NCCL, 8 MiB - 256 MiB", "ring", 8 * MIB, 256 * MIB, 1.3),
                ("53: the ring alone vs NCCL, 32 MiB - 256 MiB", "ring-flat", 32 * MIB,
                 256 * MIB, 1.0 if k == 2 else 0.95)):
            text, _ = point(label, ratios(run, impl, lo, hi), need, run["wrong"])
            lines.append(text)
        by = run["by"]
        small = by.get(("ring", 8))
        if run["meta"].get("nccl"):
            keys["nccl_version"] = run["meta"]["nccl"]
        if small is not None:
            keys[f"allreduce_8B_us_k{k}"] = {i: round(by[(i, 8)]["time_us"], 1)
                                             for (i, n) in by if n == 8}
            blocking = "--blocking" in run["meta"].get("command", "").split()
            keys[f"allreduce_8B_us_comm_k{k}{'_blocking' if blocking else ''}"] = \
                round(small["time_us"], 1)
            if k == 2 and not blocking:
                ok = small["time_us"] <= 12
                lines.append(f"52: ring's 8 B at 2 processes {small['time_us']:.1f} us "
                             f"(need <= 12) {verdict(ok, run['wrong'])}")
            elif k == 2:
                lines.append(f"ring's 8 B at 2 processes, blocking calls: "
                             f"{small['time_us']:.1f} us (reported)")
        keys[f"allreduce_k{k}_vs_nccl"] = {size(n).replace(" ", "").replace("KiB", "KB")
                                           .replace("MiB", "MB"): round(v, 2)
                                           for n, v in sorted(ratios(run, "ring", 8,
                                                                     1 << 40).items())}
        top = by.get(("ring", 256 * MIB))
        if top is not None and top.get("vs_min") is not None:
            keys[f"allreduce_k{k}_256MB_vs_min_bytes"] = round(top["vs_min"], 2)
            keys[f"allreduce_k{k}_256MB_vs_min_bytes_algo"] = top.get("algo")
            if k == 4:
                ok = top["vs_min"] >= 0.75
                lines.append(f"53: 256 MiB at 4 processes, {top['vs_min']:.2f} of the 2N "
                             f"minimum ({top.get('algo')}; need 0.75) "
                             f"{verdict(ok, run['wrong'])}")
    return lines, keys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("--update", metavar="SUMMARY", help="write the keys into this file")
    a = ap.parse_args(argv)
    runs, profiles = [], []
    for path in a.json:
        with open(path) as f:
            is_profile = "enqueue_us" in json.load(f)
        if is_profile:
            with open(path) as f:
                profiles.append(json.load(f))
        else:
            runs.append(load(path))
    lines, keys = check(runs)
    more, found = profile_keys(profiles)
    lines += more
    keys.update(found)
    print("\n".join(lines))
    wrong = sum(r["wrong"] for r in runs)
    if a.update and wrong:
        print(f"{a.update}: not updated: {wrong} wrong results in these runs")
        return 1
    if a.update:
        meta = (runs or profiles)[0]["meta"]
        with open(a.update) as f:
            summary = json.load(f)
        summary.update(keys)
        summary.update({"gpu": meta.get("gpu", summary.get("gpu")),
                        "date": meta.get("date"), "git_commit": meta.get("git_commit"),
                        "command": "; ".join(r["meta"].get("command", "")
                                             for r in runs + profiles)})
        with open(a.update, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
        print(f"{a.update}: {', '.join(sorted(keys))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
