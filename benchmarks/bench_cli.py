"""End to end: ``drevt-sim`` on the KTH-SP2 SWF, from start to exit (issue 5: <= 2 s).

Two cases, each a subprocess of the installed ``drevt-sim`` console script (the one beside the
running interpreter, i.e. ``.venv/bin/drevt-sim``):

* ``replay``: ``drevt-sim <KTH> --trace_format swf`` (the trace has wait times, so it is replayed);
* ``easy``: ``drevt-sim <KTH> --trace_format swf --force-simulation`` (FCFS + EASY, the defaults).

What is timed: wall time from ``Popen`` to exit (interpreter start-up, imports, reading and
parsing the gzipped SWF, the replay or simulation, metrics, printing the statistics block to a
pipe). One untimed warm-up run first (it fills numba's on-disk cache and the OS page cache), then
the median of ``REPEATS`` runs. The children's user+system CPU time (``getrusage``) is reported
too: on a machine shared with other work, wall time above CPU time is time spent waiting for a
core.

Run it as ``python benchmarks/bench_cli.py``; ``run()`` returns the rows for ``run_all.py``.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KTH = (ROOT / "drevt_sweep/data/traces/KTH-SP2-1996-2.1-cln.swf.gz",
       ROOT.parent / "shared/traces/KTH-SP2-1996-2.1-cln.swf.gz")
REPEATS = 5
TARGET_SECONDS = 2.0
CASES = {
    "replay": ["--trace_format", "swf"],
    "easy": ["--trace_format", "swf", "--force-simulation"],
}


def _command() -> list[str]:
    script = Path(sys.executable).parent / "drevt-sim"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from drevt_sweep.cli.sim import main; main()"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _once(command: list[str]) -> tuple[float, float]:
    cpu0 = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        raise RuntimeError(f"exit {done.returncode}: {' | '.join(tail)}")
    return wall, _children_cpu() - cpu0


def run(quick: bool = False, repeats: int | None = None) -> list[dict]:
    trace = next((p for p in KTH if p.exists()), None)
    if trace is None:
        return [{"benchmark": "drevt-sim KTH-SP2", "group": "cli",
                 "skipped": f"trace missing: {KTH[0]}"}]
    repeats = repeats or (3 if quick else REPEATS)
    rows = []
    for name, options in CASES.items():
        command = _command() + [str(trace), *options]
        label = f"drevt-sim KTH-SP2 {name}"
        try:
            _once(command)  # warm-up, not timed
            runs = [_once(command) for _ in range(repeats)]
        except Exception as exc:  # noqa: BLE001 - reported as skipped, never fatal
            rows.append({"benchmark": label, "group": "cli", "skipped": f"failed: {exc}"})
            continue
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        rows.append({
            "benchmark": label,
            "group": "cli",
            "command": " ".join(["drevt-sim", trace.name, *options]),
            "seconds": round(wall, 3),
            "cpu_seconds": round(cpu, 3),
            "all_seconds": [round(w, 3) for w, _ in runs],
            "repeats": repeats,
            "target": TARGET_SECONDS,
            "target_op": "<=",
            "unit": "s",
            "met": wall <= TARGET_SECONDS,
        })
    return rows


def main() -> int:
    for row in run():
        if "skipped" in row:
            print(f"{row['benchmark']:<28} skipped: {row['skipped']}")
            continue
        status = "ok" if row["met"] else "ABOVE TARGET"
        print(f"{row['benchmark']:<28} {row['seconds']:6.3f} s wall  {row['cpu_seconds']:6.3f} s CPU  "
              f"(median of {row['repeats']}; target <= {row['target']} s: {status})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
