"""Sweeps at scale (issue 23): how soon a 10,000-configuration sweep is checked and running.

Targets: 10,000 configurations composed and validated <= 5 s; the first simulation starts
<= 10 s after the command. Two real grids of 10,000 configurations on the bundled KTH-SP2:

- ``nodes``: ``policy=fcfs,easy`` x ``system.total_nodes=range(60,5060)``;
- ``three``: ``policy=fcfs,easy`` x ``workload.load_factor=0.8,1,1.2,1.5,2`` x
  ``system.total_nodes=range(60,1060)``.

Each is measured twice:

- ``check``, in this process: Hydra's master config composed as ``drevt-sweep -m`` composes it,
  then ``validate.check_sweep`` (every job's values, the one-pass check), CPU and wall seconds;
  and the job-by-job check (``check_sweep_job_by_job``: every job composed and checked whole,
  what the previous engine did, twice) on the first ``--sample`` jobs, scaled to 10,000;
- ``command``: the real ``drevt-sweep -m ...`` (tracking on, a fresh store) in a subprocess,
  sampled every 0.1 s (``/proc``: its CPU seconds and RSS) until its first wave of
  configurations has run, then stopped with SIGINT. From the command: ``validated`` (the
  ``validated`` mark in result.json: every job checked, before the store opens) and
  ``first simulation`` (the first wave's seeds start when its last configuration is prepared:
  the latest ``trace_prepared`` mark of the wave), each with the sweep process's CPU seconds
  then.

    python benchmarks/bench_sweep_start.py [--case nodes,three] [--sample 300] [--no-command]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    "nodes": ["policy=fcfs,easy", "system=custom", "system.total_nodes=range(60,5060)"],
    "three": ["policy=fcfs,easy", "system=custom", "workload.load_factor=0.8,1,1.2,1.5,2",
              "system.total_nodes=range(60,1060)"],
}
TICK = os.sysconf("SC_CLK_TCK")


def check_in_process(overrides: list[str], sample: int) -> dict:
    """The one-pass check of every job, and the job-by-job one on ``sample`` jobs."""
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    from drevt_sweep.sweep import grid
    from drevt_sweep.sweep.config import register_configs
    from drevt_sweep.sweep.validate import check_sweep, check_sweep_job_by_job

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_module(version_base="1.3", config_module="drevt_sweep.conf"):
        loader = GlobalHydra.instance().config_loader()
        config = loader.load_configuration("config", overrides, RunMode.MULTIRUN)
        str(config.hydra.sweep.dir)
        jobs = grid.expand(grid.sweep_arguments(config), loader)
        grid._composers.clear()
        cpu, wall = time.process_time(), time.perf_counter()
        problems = check_sweep(config)
        row = {"configurations": len(jobs), "problems": len(problems),
               "check_cpu_s": round(time.process_time() - cpu, 2),
               "check_wall_s": round(time.perf_counter() - wall, 2)}
        if sample:
            # The same grid cut to its first `sample` jobs: the last key's range shortened.
            head = loader.load_configuration("config", _first(overrides, sample), RunMode.MULTIRUN)
            str(head.hydra.sweep.dir)
            n = len(grid.expand(grid.sweep_arguments(head), loader))
            grid._composers.clear()
            cpu = time.process_time()
            slow = check_sweep_job_by_job(head)
            per_job = (time.process_time() - cpu) / n
            grid._composers.clear()
            assert slow == check_sweep(head), "the one-pass check differs from the job-by-job one"
            row.update(job_by_job_sample=n, job_by_job_ms_per_configuration=round(per_job * 1e3, 1),
                       job_by_job_cpu_s_scaled=round(per_job * len(jobs), 1))
    return row


def _first(overrides: list[str], sample: int) -> list[str]:
    """The grid with its node range cut so that it has about ``sample`` jobs."""
    others = 1
    for line in overrides:
        if "," in line and "range(" not in line:
            others *= len(line.split("=", 1)[1].split(","))
    out = []
    for line in overrides:
        if "range(" in line:
            key, _, value = line.partition("=")
            low = int(value[len("range("):].split(",")[0])
            line = f"{key}=range({low},{low + max(1, sample // others)})"
        out.append(line)
    return out


def _proc(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) and resident MB of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return cpu, rss / 2**20


def command(overrides: list[str], folder: Path, wave: int, limit: float,
            extra: tuple[str, ...] = ()) -> dict:
    """The real command until its first wave has run (see the module)."""
    sweep_dir = folder / "sweep"
    cmd = [str(Path(sys.executable).with_name("drevt-sweep")), "-m", *overrides,
           "workload.max_time=864000", "progress=false",
           f"paths.output_root={folder / 'out'}", f"hydra.sweep.dir={sweep_dir}", *extra]
    samples = []
    started = time.time()
    proc = subprocess.Popen(cmd, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    peak = 0.0
    try:
        while proc.poll() is None and time.time() - started < limit:
            try:
                cpu, rss = _proc(proc.pid)
            except (OSError, IndexError):
                break
            peak = max(peak, rss)
            samples.append((time.time(), cpu))
            if len(list(sweep_dir.glob("*/result.json"))) >= wave:  # the first wave is done
                break
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    results = [json.loads(p.read_text()) for p in sweep_dir.glob("*/result.json")]
    if not results:
        raise SystemExit(f"no configuration finished in {limit:.0f} s:\n{err[-3000:]}")
    first_wave = [json.loads((sweep_dir / str(n) / "result.json").read_text()) for n in range(wave)
                  if (sweep_dir / str(n) / "result.json").is_file()]
    first_wave = [r for r in first_wave if "trace_prepared" in r.get("marks", {})]
    first_wave.sort(key=lambda r: r["marks"]["configuration"])
    validated = min(r["marks"]["validated"] for r in results)
    first_sim = max(r["marks"]["trace_prepared"] for r in first_wave)

    def cpu_at(instant: float) -> float:
        return next((c for t, c in samples if t >= instant), samples[-1][1])

    return {"validated_s": round(validated - started, 1), "validated_cpu_s": round(cpu_at(validated), 1),
            "first_simulation_s": round(first_sim - started, 1),
            "first_simulation_cpu_s": round(cpu_at(first_sim), 1),
            "first_wave": len(first_wave), "peak_rss_mb_so_far": round(peak),
            # where the wall time went: the first configuration's marks, from the command
            "marks_s": {k: round(v - started, 1) for k, v in sorted(
                first_wave[0]["marks"].items(), key=lambda kv: kv[1])}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="nodes,three")
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--no-command", action="store_true")
    parser.add_argument("--limit", type=float, default=900.0, help="seconds before giving up")
    parser.add_argument("--extra", default="", help="more overrides for the command, space-separated")
    args = parser.parse_args()
    from drevt_sweep.sweep.batch import FIRST_WAVE

    for name in args.case.split(","):
        row = {"case": name, "load_before": os.getloadavg()[0],
               **check_in_process(CASES[name], args.sample)}
        if not args.no_command:
            with tempfile.TemporaryDirectory() as tmp:
                row.update(command(CASES[name], Path(tmp), FIRST_WAVE, args.limit,
                                      tuple(args.extra.split())))
                row["extra"] = args.extra
        row["load_after"] = os.getloadavg()[0]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
