"""Run every benchmark, print one table and rewrite ``benchmarks/RESULTS.md`` (``make bench``).

Each benchmark module in this folder exposes ``run() -> list[dict]`` (rows such as
``{"benchmark", "jobs", "seconds", "jobs_per_s", "target", "met"}``); this script imports them in
turn (readers, engine when present, accasim, cli, sweep), and a benchmark that fails, or whose
inputs are missing, becomes a *skipped* row with its reason -- it never stops the run.

RESULTS.md gets: date, machine (CPU, cores, RAM, load average, Python/numpy/numba versions), the
exact command, every figure against its target, the AccaSim comparison, the FIFO schedule
agreement, and a "not met / why" section generated from the rows. The text between the
``HAND-WRITTEN`` markers (profiles, notes) is kept as it is on every rewrite. With ``--only``,
the other benchmarks' rows are taken from the previous run (``.work/results.json``) and shown
with their own date.

    python benchmarks/run_all.py [--quick] [--only NAME[,NAME...]] [--no-write] [--render]
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import importlib
import importlib.metadata
import inspect
import json
import math
import os
import platform
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / ".work"
RESULTS_MD = HERE / "RESULTS.md"
STATE = WORK / "results.json"
for path in (str(ROOT), str(HERE)):
    if path not in sys.path:
        sys.path.insert(0, path)

# name -> module (in this folder); the order of the run and of the report.
BENCHMARKS = {
    "readers": "bench_readers",
    "engine": "bench_engine",
    "conservative": "bench_conservative",
    "machine": "bench_machine",
    "priorities": "bench_priorities",
    "accasim": "bench_accasim",
    "cli": "bench_cli",
    "sweep": "bench_sweep",
}
QUICK_READER_ROWS = 200_000
BEGIN_HAND = "<!-- BEGIN HAND-WRITTEN: kept as is by run_all.py -->"
END_HAND = "<!-- END HAND-WRITTEN -->"
DEFAULT_HAND = """## Notes and profiles (hand-written)

_Edit freely between the markers: `run_all.py` keeps this section on every rewrite._
"""


# ---------------------------------------------------------------------------------- running
def run_benchmark(name: str, module_name: str, quick: bool) -> dict:
    """Import and run one benchmark; never raises."""
    started = time.perf_counter()
    load_before = _loadavg()
    try:
        if not (HERE / f"{module_name}.py").exists():
            rows = [{"benchmark": name, "skipped": f"benchmarks/{module_name}.py is not there yet"}]
        else:
            module = importlib.import_module(module_name)
            params = inspect.signature(module.run).parameters
            kwargs = {}
            if "quick" in params:
                kwargs["quick"] = quick
            elif quick and "rows" in params:
                kwargs["rows"] = QUICK_READER_ROWS
            rows = module.run(**kwargs)
            if not isinstance(rows, list):
                raise TypeError(f"run() returned {type(rows).__name__}, expected a list of rows")
    except Exception as exc:  # noqa: BLE001 - one benchmark failing must not stop the others
        last = traceback.format_exc().strip().splitlines()[-1]
        rows = [{"benchmark": name, "skipped": f"failed: {type(exc).__name__}: {exc}",
                 "traceback": last}]
    for row in rows:
        row.setdefault("group", name)
    return {
        "name": name,
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
        "date": _now(),
        "quick": quick,
        "load_before": load_before,
        "load_after": _loadavg(),
    }


# ---------------------------------------------------------------------------------- figures
def _op(row: dict) -> str | None:
    if row.get("target") is None or isinstance(row.get("target"), str):
        return None
    if row.get("target_op"):
        return row["target_op"]
    if "rows_per_s" in row or ("jobs_per_s" in row and row["target"] >= 1000):
        return ">="
    return "<="


def _measure(row: dict) -> tuple[float | None, str]:
    """The figure that the target applies to, and how to print it."""
    target = row.get("target")
    unit = row.get("unit")
    if row.get("peak_rss_mb") is not None:
        return row["peak_rss_mb"], f"{row['peak_rss_mb']:,} MiB peak RSS ({_seconds(row.get('seconds'))})"
    if unit == "ratio" and "value" in row:
        return row["value"], f"{100 * row['value']:.1f} %"
    if "rows_per_s" in row:
        return row["rows_per_s"], f"{row['rows_per_s']:,} rows/s ({row.get('rows', 0):,} rows, {row['seconds']} s)"
    if "jobs_per_s" in row and (target is None or isinstance(target, str) or target >= 1000):
        jobs = f"{row['jobs']:,} jobs, " if row.get("jobs") else ""
        growth = f", ×{row['growth']} the previous size's time" if row.get("growth") else ""
        return row["jobs_per_s"], f"{row['jobs_per_s']:,} jobs/s ({jobs}{_seconds(row['seconds'])}{growth})"
    if "equal" in row and "compared" in row:
        return None, f"{row['equal']:,}/{row['compared']:,} start times equal"
    if "seconds" in row:
        text = _seconds(row["seconds"])
        if row.get("cpu_seconds") is not None:
            text += f" (CPU {_seconds(row['cpu_seconds'])})"
        if "jobs" in row and "jobs_per_s" in row:
            text += f", {row['jobs']:,} jobs"
        return row["seconds"], text
    if "value" in row:
        return row["value"], f"{row['value']}"
    return None, "-"


def _target_text(row: dict) -> str:
    target = row.get("target")
    if target is None or target == "":
        return "-"
    if isinstance(target, str):
        return target
    op = "≥" if _op(row) == ">=" else "≤"
    if row.get("unit") == "ratio":
        return f"{op} {100 * target:.0f} %"
    if "rows_per_s" in row:
        return f"{op} {target:,} rows/s"
    if "jobs_per_s" in row and target >= 1000:
        return f"{op} {target:,} jobs/s"
    return f"{op} {target:g} s"


def _skipped(row: dict) -> str | None:
    """Why a row was not measured (``skipped``, or a ``note`` that starts with "skipped")."""
    if "skipped" in row:
        return str(row["skipped"])
    note = str(row.get("note") or "")
    if note.startswith("skipped") and row.get("jobs_per_s") is None and row.get("seconds") is None:
        return note.split(":", 1)[-1].strip() if ":" in note else note
    return None


def _met(row: dict) -> bool | None:
    if _skipped(row) is not None:
        return None
    if row.get("met") is not None:
        return bool(row["met"])
    op = _op(row)
    value, _ = _measure(row)
    if op is None or value is None:
        return None
    return value >= row["target"] if op == ">=" else value <= row["target"]


def _status(row: dict) -> str:
    if _skipped(row) is not None:
        return "skipped"
    met = _met(row)
    return "-" if met is None else ("met" if met else "NOT MET")


def _seconds(value: float) -> str:
    if value is None:
        return "-"
    if value < 0.01:
        return f"{value * 1e3:.2f} ms"
    if value < 1:
        return f"{value * 1e3:.0f} ms"
    return f"{value:.2f} s"


# ---------------------------------------------------------------------------------- machine
def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _now() -> str:
    return dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 1024 ** 2:.1f} GiB"
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    versions = {}
    for package in ("numpy", "numba", "pandas", "mlflow", "hydra-core", "joblib"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "ram": ram,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": versions,
    }


# ---------------------------------------------------------------------------------- output
def print_table(runs: list[dict]) -> None:
    lines = [("benchmark", "figure", "target", "status")]
    for run in runs:
        for row in run["rows"]:
            if row.get("group") == "accasim-audit":
                continue
            if _skipped(row) is not None:
                lines.append((row["benchmark"], "-", "-", f"skipped: {_skipped(row)}"))
                continue
            _, figure = _measure(row)
            if row.get("group") == "accasim" and "accasim_jobs_per_s" in row:
                figure += f" | AccaSim {row['accasim_jobs_per_s']:,} jobs/s, x{row['ratio']:,}"
            lines.append((row["benchmark"], figure, _target_text(row), _status(row)))
    widths = [min(max(len(line[i]) for line in lines), 90) for i in range(3)]
    for i, line in enumerate(lines):
        print("  ".join(cell.ljust(width) for cell, width in zip(line[:3], widths)) + "  " + line[3])
        if i == 0:
            print("  ".join("-" * w for w in widths) + "  ------")


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(runs: list[dict], info: dict, command: str) -> str:
    out: list[str] = []
    add = out.append
    add("# Benchmark results")
    add("")
    add("_Generated by `benchmarks/run_all.py` (`make bench`); everything above the hand-written "
        "section is rewritten on every run._")
    add("")
    quick = any(run["quick"] for run in runs)
    add(f"- **Date**: {info['date']}")
    add(f"- **Command**: `{command}`" + (" — **QUICK MODE**: reduced inputs, not the issue's "
                                          "figures" if quick else ""))
    m = info["machine"]
    add(f"- **Machine**: {m['cpu']}; {m['cores']} cores ({m['usable_cores']} usable); "
        f"{m['ram']} RAM; {m['os']}")
    v = m["versions"]
    add(f"- **Software**: Python {m['python']}, numpy {v['numpy']}, numba {v['numba']}, "
        f"pandas {v['pandas']}, mlflow {v['mlflow']}, hydra-core {v['hydra-core']}, "
        f"joblib {v['joblib']}")
    loads = [r["load_before"] for r in runs if r.get("load_before")] + \
            [r["load_after"] for r in runs if r.get("load_after")]
    if loads:
        peak = max(l[0] for l in loads)
        add(f"- **Load average** (1/5/15 min) at start {info['load_start']}, at end "
            f"{info['load_end']}, highest 1-min value seen between benchmarks {peak} "
            f"on {m['cores']} cores." + (" The machine was shared with other work: wall "
            "times are inflated; CPU times are given where measured." if peak > m["cores"] else ""))
    add("- **Per benchmark** (finished at, 1-min load average before → after, duration): " + "; ".join(
        f"{r['name']} {r['date']}{' (quick)' if r['quick'] else ''} "
        f"({(r.get('load_before') or ['?'])[0]} → {(r.get('load_after') or ['?'])[0]}, {r['seconds']} s)"
        for r in runs) + (". With `--only`, the other rows are from earlier runs." if
                          len({r["date"][:16] for r in runs}) > 1 else "."))
    add("")

    add("## Figures against targets")
    add("")
    add("| benchmark | figure | target | status | measured |")
    add("|---|---|---|---|---|")
    for run in runs:
        when = run["date"] + (" (quick)" if run["quick"] else "")
        for row in run["rows"]:
            if row.get("group") in ("accasim-audit",):
                continue
            if _skipped(row) is not None:
                add(f"| {_md_escape(row['benchmark'])} | - | - | skipped: {_md_escape(_skipped(row))} | {when} |")
                continue
            _, figure = _measure(row)
            if row.get("note") and row.get("group") == "engine":
                figure += f"; {row['note']}"
            if row.get("reference_jobs_per_s") and row.get("group") == "engine":
                figure += f"; reference {row['reference_jobs_per_s']:,} jobs/s (×{row.get('speedup')})"
            add(f"| {_md_escape(row['benchmark'])} | {_md_escape(figure)} | "
                f"{_md_escape(_target_text(row))} | {_status(row)} | {when} |")
    add("")

    measured = [row for run in runs for row in run["rows"] if _skipped(row) is None]
    acc = [row for row in measured if row.get("group") == "accasim"]
    agree = [row for row in measured if row.get("group") == "accasim-agreement"]
    audit = [row for row in measured if row.get("group") == "accasim-audit"]
    acc_skipped = [row for run in runs for row in run["rows"]
                   if str(row.get("benchmark", "")).startswith("accasim") and "skipped" in row]
    add("## AccaSim 1.1.3 side by side")
    add("")
    add("Measured in the same run, on the same jobs (the jobs our SWF reader keeps, written to a "
        "plain SWF for AccaSim), machine = N nodes × 1 core, one SWF processor per core. Ours: "
        "`engine.simulate(..., enforce_limits=False)` on an already-read job table, median of "
        "several calls after a warm-up. AccaSim: its own simulation clock "
        "(`end_simulation_time - start_simulation_time`) around the event loop, jobs parsed and "
        "built beforehand, outputs off, one fresh process per repetition. **Ratio = AccaSim time "
        "/ our time** (how many times faster ours is), from the medians, wall clock and CPU time "
        "(`time.process_time` over the same span; less sensitive to a shared machine). jobs/s "
        "are from wall time. See `benchmarks/bench_accasim.py` for exactly what is timed.")
    add("")
    if acc:
        add("| trace | policy | jobs | ours (kernel) | ours jobs/s | AccaSim | AccaSim jobs/s | "
            "reps ours / AccaSim | ratio (wall) | ratio (CPU) | pure-Python reference engine |")
        add("|---|---|---|---|---|---|---|---|---|---|---|")
        for row in acc:
            ref = "-"
            if row.get("reference_seconds"):
                ref = (f"{row['reference_jobs_per_s']:,} jobs/s, ratio ×{row['reference_ratio']:,}")
            cpu_ratio = f"×{row['cpu_ratio']:,}" if row.get("cpu_ratio") else "-"
            ours_cpu = (f", CPU {_seconds(row['ours_cpu_seconds'])}"
                        if row.get("ours_cpu_seconds") is not None else "")
            acc_cpu = (f" (CPU {_seconds(row['accasim_cpu_seconds'])})"
                       if row.get("accasim_cpu_seconds") is not None else "")
            add(f"| {row['trace']} | {row['policy']} | {row['jobs']:,} | "
                f"{_seconds(row['seconds'])} ({row['ours_kernel']}{ours_cpu}) | {row['jobs_per_s']:,} | "
                f"{_seconds(row['accasim_seconds'])}{acc_cpu} | {row['accasim_jobs_per_s']:,} | "
                f"{row['ours_reps']} / {row['accasim_reps']} | ×{row['ratio']:,} | "
                f"{cpu_ratio} | {ref} |")
        add("")
        add("AccaSim repetition times (s): " + "; ".join(
            f"{r['trace']} {r['policy'].split(' ')[0]}: {r['accasim_all_seconds']}" for r in acc) + ".")
        add("")
    for row in acc_skipped:
        add(f"- {row['benchmark']}: skipped: {row['skipped']}")
    if acc_skipped:
        add("")
    if agree:
        add("### FIFO schedules (FCFS, no backfilling): per-job start times")
        add("")
        add("Schedules are compared under FIFO only: AccaSim's EASY backfills without checking "
            "the head job's reservation (its backfill pass passes `reserved_nodes=[]` to the "
            "allocator), so its EASY schedules are not EASY's.")
        add("")
        add("| trace | inputs | jobs compared | equal | differ | max difference | only ours / only AccaSim | result |")
        add("|---|---|---|---|---|---|---|---|")
        for row in agree:
            if row.get("met") is True:
                result = "**all equal**"
            elif row.get("met") is False:
                result = "**DIFFER**"
            elif row.get("differ") == 0:
                result = "all equal"
            else:
                result = "differences explained" if row.get("explained") else "NOT explained"
            add(f"| {row['trace']} | {row['inputs']} | {row['compared']:,} | {row['equal']:,} | "
                f"{row['differ']:,} | {row['max_abs_diff_s']:.0f} s | {row['only_ours']} / "
                f"{row['only_accasim']} | {result} |")
        add("")
        for row in agree:
            if row.get("explanation"):
                add(f"- {row['trace']}, {row['inputs']}: {_md_escape(row['explanation'])}")
        if any(row.get("explanation") for row in agree):
            add("")
    if audit:
        add("### What each tool's SWF reader keeps (the original file)")
        add("")
        add("| trace | job lines | ours keeps | ours excludes | AccaSim keeps | only AccaSim | "
            "zero-length (AccaSim runs them) | requested time unknown | requested < run time | "
            "wider than machine | AccaSim cannot build |")
        add("|---|---|---|---|---|---|---|---|---|---|---|")
        for row in audit:
            excluded = ", ".join(f"{k} {v}" for k, v in row["ours_excluded"].items()) or "-"
            unknown = f"{row['accasim_requested_time_unknown']:,}"
            add(f"| {row['trace']} | {row['data_lines']:,} | {row['ours_kept']:,} | {excluded} | "
                f"{row['accasim_kept']:,} | {row['only_accasim']} | {row['accasim_zero_duration']} | "
                f"{unknown} | {row['requested_below_run']:,} | {row['wider_than_machine']} | "
                f"{row.get('accasim_factory_errors', 0):,} |")
        add("")
        for row in audit:
            if row.get("note"):
                add(f"- {row['trace']} reader audit: {_md_escape(row['note'])}.")
            if row.get("accasim_factory_errors"):
                line, error = row["accasim_first_factory_error"]
                add(f"- {row['trace']}: AccaSim's stock reader **cannot run this file**: its "
                    "`JobFactory` decides from the first job which requested resources the machine "
                    "lacks (here `mem`) and pops them from every later job; "
                    f"{row['accasim_factory_errors']:,} job(s) have no memory value (requested or used) and raise "
                    f"`{error}` (first at line {line}), which stops the simulation. The "
                    "comparison above gives AccaSim the common file (no memory fields) instead.")
        add("")
        add("How the differences are handled: jobs whose requested time is below their run time "
            "run to completion in AccaSim (it never kills a job), so ours runs with "
            "`enforce_limits=False` in this comparison. Zero-length jobs (SWF run time 0) are "
            "dropped by our reader (`zero_run_time`) and run for 0 s by AccaSim; lines with no "
            "processor count are dropped by both. A requested time of -1 is kept by AccaSim as "
            "-1 (its EASY then plans with a negative estimate); ours uses the run time "
            "(`swf_missing_time_limit=run_time`), and the common file gives AccaSim the same "
            "value. No job is wider than the machine in either trace (both tools would reject "
            "it).")
        add("")

    add("## Not met / why")
    add("")
    reasons = not_met(runs, info)
    out.extend(reasons or ["Every measured target was met."])
    add("")
    return "\n".join(out)


def not_met(runs: list[dict], info: dict) -> list[str]:
    lines = []
    cores = info["machine"]["cores"] or 1
    for run in runs:
        # The load just before the benchmark started: other work on the machine (the load
        # during it would count the benchmark's own processes).
        peak = (run.get("load_before") or [0.0])[0]
        loaded = peak > cores
        for row in run["rows"]:
            name = row.get("benchmark", run["name"])
            if _skipped(row) is not None:
                lines.append(f"- **{name}**: skipped — {_skipped(row)}")
                continue
            if _met(row) is not False:
                continue
            _, figure = _measure(row)
            why = row.get("why")
            if not why:
                why = _why(row, loaded, peak, cores)
            if run.get("quick"):
                why = ("Quick mode (reduced input and repetitions): not the issue's figure. "
                       + why)
            lines.append(f"- **{name}**: {figure} vs target {_target_text(row)}. {why}")
    return lines


def _why(row: dict, loaded: bool, peak: float, cores: int) -> str:
    parts = []
    group = row.get("group")
    target = row.get("target")
    if group == "cli" and row.get("cpu_seconds") is not None:
        if row["cpu_seconds"] <= target:
            parts.append(f"Its CPU time ({_seconds(row['cpu_seconds'])}) is within the target: the "
                         "rest of the wall time was spent waiting for a core.")
        else:
            parts.append(f"Its CPU time alone ({_seconds(row['cpu_seconds'])}) is above the "
                         "target: start-up (imports), reading the gzipped SWF and the run itself "
                         "need to get cheaper.")
    if group == "sweep":
        if row.get("how"):
            parts.append(f"Measured as: {row['how']}.")
        if row.get("timings"):
            parts.append("Phases (s): " + ", ".join(f"{k} {v}" for k, v in row["timings"].items()) + ".")
        if "mlflow_seconds" in row:
            parts.append(f"Tracking adds about {row['mlflow_seconds']} s to the wall time "
                         f"(without tracking the same sweep took {row['wall_untracked']} s); "
                         f"the sweep itself waited {row.get('tracking_wait_seconds')} s for the "
                         "tracking helper.")
            if row.get("cpu_seconds_by_process"):
                parts.append("CPU seconds by process, tracked: " + ", ".join(
                    f"{k} {v}" for k, v in row["cpu_seconds_by_process"].items())
                    + "; untracked: " + ", ".join(
                    f"{k} {v}" for k, v in (row.get("cpu_seconds_by_process_untracked") or {}).items())
                    + ".")
        if "seconds_1_worker" in row:
            parts.append(f"Seed phase {row['seconds_1_worker']} s with 1 worker vs "
                         f"{row['seconds_2_workers']} s with 2; the whole command "
                         f"{row['wall_1_worker']} s vs {row['wall_2_workers']} s.")
            if row.get("tracked_efficiency") is not None:
                parts.append(f"With tracking on: {row['tracked_seconds_1_worker']} s vs "
                             f"{row['tracked_seconds_2_workers']} s "
                             f"({row['tracked_efficiency']:.0%}).")
    if row.get("note") and group not in ("cli", "sweep"):
        parts.append(f"({row['note']}.)")
    if row.get("estimated"):
        parts.append("The figure is an estimate from outside the sweep (see the sweep row's "
                     "'how'); phase timings in result.json would make it exact.")
    if loaded:
        parts.append(f"The machine was shared (1-min load average {peak} on {cores} cores just "
                     "before this benchmark), which inflates wall times and starves parallel "
                     "runs of their second core; re-run on an idle machine before concluding.")
    else:
        parts.append(f"(1-min load average {peak} on {cores} cores just before this benchmark.)")
    return " ".join(parts) or "No explanation recorded."


def hand_written() -> str:
    if RESULTS_MD.exists():
        text = RESULTS_MD.read_text()
        if BEGIN_HAND in text and END_HAND in text:
            start = text.index(BEGIN_HAND) + len(BEGIN_HAND)
            end = text.index(END_HAND)
            return text[start:end].strip("\n") + "\n"
    return DEFAULT_HAND


def write_results(runs: list[dict], info: dict, command: str) -> None:
    body = render(runs, info, command)
    RESULTS_MD.write_text(f"{body}\n{BEGIN_HAND}\n{hand_written()}{END_HAND}\n")


# ---------------------------------------------------------------------------------- main
def _load_state() -> dict:
    """``{"benchmarks": {name: run}, "info": {...}, "command": str}`` of the last runs."""
    try:
        data = json.loads(STATE.read_text())
    except (OSError, ValueError):
        return {"benchmarks": {}}
    if "benchmarks" not in data:  # the first layout: only the runs
        data = {"benchmarks": data}
    return data


def _ordered(runs: dict) -> list[dict]:
    return [runs[name] for name in BENCHMARKS if name in runs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the benchmarks and update RESULTS.md.")
    parser.add_argument("--quick", action="store_true",
                        help="reduced inputs and repetitions (a smoke run, not the figures)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help=f"run only these ({', '.join(BENCHMARKS)}); repeat or comma-separate")
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md")
    parser.add_argument("--render", action="store_true",
                        help="run nothing: rewrite RESULTS.md from the last results (.work/results.json)")
    args = parser.parse_args(argv)
    compileall.compile_dir(str(ROOT / "drevt_sweep"), quiet=1)  # as installed (bench_cli.py)
    only = [n.strip() for item in args.only for n in item.split(",") if n.strip()]
    unknown = [n for n in only if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    selected = only or list(BENCHMARKS)
    state = _load_state()

    if args.render:
        runs = _ordered(state["benchmarks"])
        if not runs:
            parser.error(f"no results in {STATE} yet: run the benchmarks first")
        info = state.get("info") or {
            "date": min(r["date"] for r in runs), "machine": machine(),
            "load_start": runs[0].get("load_before"), "load_end": runs[-1].get("load_after"),
        }
        print_table(runs)
        command = state.get("command") or "python benchmarks/run_all.py" + (
            " --quick" if any(r["quick"] for r in runs) else "")
        write_results(runs, info, command)
        print(f"\nwrote {RESULTS_MD.relative_to(ROOT)} from {STATE.relative_to(ROOT)}")
        return 0

    command = "python benchmarks/run_all.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    if os.environ.get("MAKELEVEL"):
        command = "make bench  # = " + command
    info = {"date": _now(), "machine": machine(), "load_start": _loadavg()}
    print(f"drevt-sweep benchmarks: {', '.join(selected)}{' (quick)' if args.quick else ''}; "
          f"load average {info['load_start']}", flush=True)

    WORK.mkdir(parents=True, exist_ok=True)
    fresh = {}
    for name in selected:
        print(f"\n== {name}", flush=True)
        fresh[name] = run_benchmark(name, BENCHMARKS[name], args.quick)
        print(f"== {name}: {fresh[name]['seconds']} s", flush=True)
    info["load_end"] = _loadavg()

    # This run's benchmarks, plus (with --only) the others as last measured.
    state["benchmarks"].update(fresh)
    runs = _ordered(state["benchmarks"])
    print()
    print_table(runs)
    state.update(info=info, command=command)
    STATE.write_text(json.dumps(state, indent=1, default=_json_default))
    if not args.no_write:
        write_results(runs, info, command)
        print(f"\nwrote {RESULTS_MD.relative_to(ROOT)}")
    return 0


def _json_default(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return str(value)


if __name__ == "__main__":
    sys.exit(main())
