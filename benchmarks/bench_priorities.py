"""Speed of the dynamic priorities and run-time estimates (issue 15) in the compiled kernel.

What is timed: ``drevt_sweep.sim.engine.simulate`` on an already-read trace, as in
``bench_engine`` (validation, the policy's set-up - the fair-share tree - and the event loop),
CPU time (``time.process_time``), median of ``REPEATS`` runs after one warm-up run. The reference
engine is timed once per case for the speed-up.

Cases (one core), on KTH-SP2 (bundled, 100 nodes) and LANL-CM5 (``<repo>/../shared/traces``,
1,024 nodes):

* ``multifactor+easy``: Slurm's multifactor priority with classic fair-share (``conf/policy/
  multifactor_easy.yaml``: age 1000, fairshare 10000, job_size 1000, partition 1000; 5-minute
  PriorityCalcPeriod, 7-day half-life): >= 500,000 jobs/s;
* ``easy++``: FCFS + EASY + ``user_history`` estimates + SJBF backfill order: >= 1,000,000 jobs/s;
* ``wfp3+easy``, ``unicef+easy``, ``f1+easy``, ``sjbf+easy``: measured, no target.

``python benchmarks/bench_priorities.py`` prints the rows (``--quick``: fewer repetitions).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TRACES = {
    "KTH-SP2": REPO / "drevt_sweep" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz",
    "LANL-CM5": REPO.parent / "shared" / "traces" / "LANL-CM5-1994-4.1-cln.swf.gz",
}
REPEATS = 5
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
CASES = (  # label, simulate keywords, target jobs/s, time the reference too
    ("multifactor+easy", {"priority": "multifactor"}, 500_000, True),
    ("easy++", {"estimate": "user_history", "backfill_order": "sjbf"}, 1_000_000, True),
    ("wfp3+easy", {"priority": "wfp3"}, None, False),
    ("unicef+easy", {"priority": "unicef"}, None, False),
    ("f1+easy", {"priority": "f1"}, None, False),
    ("sjbf+easy", {"backfill_order": "sjbf"}, None, False),
)


def run(quick: bool = False) -> list[dict]:
    from bench_engine import _time  # (median CPU seconds, median wall seconds) after a warm-up
    from drevt_sweep.sim.engine import simulate
    from drevt_sweep.trace import ReadOptions, read_trace

    repeats = 2 if quick else REPEATS
    rows = []
    for name, path in TRACES.items():
        if not path.is_file():
            rows += [{"benchmark": f"{name} {label}", "skipped": f"{path} not found"} for label, *_ in CASES]
            continue
        jobs = read_trace(path, ReadOptions(trace_format="swf", force_simulation=True))
        total = jobs.meta.machine_nodes
        for label, options, target, reference in CASES:
            def case(kernel="fast", options=options):
                return simulate(jobs, jobs.actual_run_time, total, kernel=kernel, **options)

            seconds, wall = _time(case, repeats)
            row = {"benchmark": f"{name} {label}", "jobs": len(jobs), "seconds": round(seconds, 4),
                   "wall_seconds": round(wall, 4), "jobs_per_s": round(len(jobs) / seconds),
                   "target": "" if target is None else f">= {target:,} jobs/s",
                   "met": None if target is None else len(jobs) / seconds >= target,
                   "note": f"{total} nodes; median of {repeats} (CPU time)"}
            if reference and not quick:
                start = time.process_time()
                case("reference")
                ref = time.process_time() - start
                row["reference_jobs_per_s"] = round(len(jobs) / ref)
                row["speedup"] = round(ref / seconds, 1)
            rows.append(row)
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
