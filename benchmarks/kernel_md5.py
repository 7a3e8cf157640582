"""md5 of every compiled-kernel schedule on the benchmark traces, to prove a kernel refactor
changes nothing (issue 25 item 1: bit-identical schedules for every policy, estimate and machine).

    python benchmarks/kernel_md5.py record benchmarks/kernel_md5.json   # before the change
    python benchmarks/kernel_md5.py check benchmarks/kernel_md5.json    # after each step

A case is a trace x machine kind (pool, exclusive partitions, shared nodes) x priority x
backfill x compression order x estimate x backfill order x enforce_limits; its value is the md5
of the begin and end arrays (float64 bytes, NaN for rejected jobs) from the compiled kernel
(``kernel="fast"``). Traces: KTH-SP2, LANL-CM5 (its first 40,000 jobs), KTH-SP2 at load x1.4
(heavy: long queues) and a generated shared-node workload (``bench_machine.shared_workload``;
with dynamic priorities, its jobs given 64 users in 8 accounts, ``shared/multifactor/...``).
``backfill: slurm`` (issue 26) runs under Slurm's defaults, the EASY reduction and two other limit
sets, with static and dynamic priorities (80 cases, ``check FILE slurm``).
``check`` prints every case that differs and exits 1 if any does.

Terms after the file keep only some cases: a case runs if its name contains every plain term
and no ``not:`` term, e.g. ``check FILE not:conservative`` (the queue-policy cases only) or
``check FILE pool multifactor``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

KTH = REPO / "drevt_sweep" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
LANL = Path("/work/shared/traces/LANL-CM5-1994-4.1-cln.swf.gz")
LANL_JOBS = 40_000
SHARED_JOBS = 20_000

STATIC = ("fcfs", "sjf", "ljf", "smallest", "largest", "f1", "f3")
DYNAMIC = ("multifactor", "wfp3", "unicef")
QUEUE_BACKFILLS = ("none", "easy", "easy_drevt")
COMPRESSIONS = ("compress_first", "interleaved", "one_pass")
MULTIFACTOR = {"weights": {"age": 1000, "fairshare": 0, "job_size": 1000, "partition": 0}}
INF = float("inf")
SLURM_LIMITS = {  # backfill: slurm (issue 26): Slurm's defaults, the EASY reduction, tighter limits
    "defaults": {},
    "easy": dict(bf_interval=0, bf_max_job_test=INF, bf_window=INF, bf_resolution=0, default_queue_depth=INF,
                 sched_interval=0, bf_job_part_count_reserve=1),
    "tight": dict(bf_interval=60, bf_window=240, bf_resolution=300, bf_max_job_test=20, bf_max_job_user=3,
                  default_queue_depth=5, sched_interval=0),
    "exact": dict(bf_interval=0, bf_resolution=0, bf_window=600),
}
SHARED_DYNAMIC = {"multifactor": ("multifactor", None), "fair_tree": ("multifactor", {"fairshare": "fair_tree"}),
                  "wfp3": ("wfp3", None)}
SLURM_PRIORITIES = {"fcfs": ("fcfs", None), "sjf": ("sjf", None), "multifactor": ("multifactor", None),
                    "fair_tree": ("multifactor", {"fairshare": "fair_tree"}), "wfp3": ("wfp3", None),
                    "unicef": ("unicef", None)}


def _traces():
    from drevt_sweep.sim.workload import WorkloadSpec, apply_workload
    from drevt_sweep.trace import ReadOptions, read_trace

    opts = ReadOptions(trace_format="swf", force_simulation=True)
    kth = read_trace(KTH, opts)
    out = {"KTH-SP2": (kth, 100), "KTH-SP2x1.4": (apply_workload(kth, WorkloadSpec(load_factor=1.4))[0], 100)}
    if LANL.exists():
        lanl = read_trace(LANL, opts)
        out["LANL-CM5"] = (lanl.take(np.arange(min(LANL_JOBS, len(lanl)))), 1024)
    return out


def _pool_cases():
    """(name, simulate keyword arguments) for one pool."""
    for p in STATIC:
        for b in QUEUE_BACKFILLS:
            yield f"{p}/{b}", dict(priority=p, backfill=b)
        for c in COMPRESSIONS:
            yield f"{p}/conservative/{c}", dict(priority=p, backfill="conservative", compression=c)
    for c in COMPRESSIONS:
        yield f"fcfs/conservative/{c}/no-limits", dict(backfill="conservative", compression=c, enforce_limits=False)
    yield "fcfs/easy/no-limits", dict(backfill="easy", enforce_limits=False)
    for p in DYNAMIC:
        params = MULTIFACTOR if p == "multifactor" else None
        for b in QUEUE_BACKFILLS:
            yield f"{p}/{b}", dict(priority=p, backfill=b, priority_params=params)
    for e in ("actual", "user_history"):
        for b in QUEUE_BACKFILLS:
            yield f"fcfs/{b}/{e}", dict(backfill=b, estimate=e)
        yield f"fcfs/easy/{e}/sjbf", dict(backfill="easy", estimate=e, backfill_order="sjbf")
    yield "sjf/easy/user/sjbf", dict(priority="sjf", backfill="easy", backfill_order="sjbf")
    for lim, params in SLURM_LIMITS.items():
        for name, (p, pp) in SLURM_PRIORITIES.items():
            if lim in ("tight", "exact") and name in ("sjf", "unicef"):
                continue
            yield f"{name}/slurm/{lim}", dict(priority=p, priority_params=pp, backfill="slurm",
                                              backfill_params=params)


def _md5(schedule) -> str:
    h = hashlib.md5()
    h.update(np.ascontiguousarray(schedule.begin, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(schedule.end, dtype=np.float64).tobytes())
    return h.hexdigest()


def _partitioned(jobs, nodes):
    """The same jobs on two exclusive partitions (every third job in the small one)."""
    from drevt_sweep.sim.machine import Machine, Partition

    code = (np.arange(len(jobs)) % 3 == 0).astype(np.int32)
    split = dataclasses.replace(jobs, queue_code=code, queue_names=("big", "small"))
    small = max(nodes // 4, 1)
    machine = Machine("two", (Partition("big", nodes - small, queues=("big",)),
                              Partition("small", small, queues=("small",))))
    return split, machine


def _selected(key: str, terms: list[str]) -> bool:
    """Whether the case ``key`` passes the command line's filter terms (see the docstring)."""
    return all((t[4:] not in key) if t.startswith("not:") else (t in key) for t in terms)


def compute(terms: list[str] | None = None) -> dict[str, str]:
    from bench_machine import _shared_machine, shared_workload

    from drevt_sweep.sim.engine import simulate
    from drevt_sweep.sim.partitioned import simulate_machine

    out: dict[str, str] = {}
    for trace, (jobs, nodes) in _traces().items():
        rt = jobs.actual_run_time
        for name, kw in _pool_cases():
            key = f"{trace}/pool/{name}"
            if not _selected(key, terms or []):
                continue
            out[key] = _md5(simulate(jobs, rt, nodes, kernel="fast", **kw))
        if trace == "KTH-SP2":
            split, machine = _partitioned(jobs, nodes)
            for name, kw in _pool_cases():
                key = f"{trace}/partitions/{name}"
                if not _selected(key, terms or []):
                    continue
                out[key] = _md5(simulate_machine(split, rt, machine, kernel="fast", **kw))
    sjobs = shared_workload(SHARED_JOBS)
    machine = _shared_machine()
    for p in ("fcfs", "sjf", "largest"):
        for b in QUEUE_BACKFILLS + ("conservative",):
            for enforce in (True, False):
                key = f"shared/{p}/{b}" + ("" if enforce else "/no-limits")
                if not _selected(key, terms or []):
                    continue
                out[key] = _md5(simulate_machine(sjobs, sjobs.actual_run_time, machine, priority=p, backfill=b,
                                                 enforce_limits=enforce, kernel="fast"))
    # dynamic priorities on shared nodes (issue 26), 64 users in 8 accounts
    from bench_shared_multifactor import with_users

    ujobs = with_users(sjobs)
    for name, (p, pp) in SHARED_DYNAMIC.items():
        for b in QUEUE_BACKFILLS:
            key = f"shared/{name}/{b}"
            if _selected(key, terms or []):
                out[key] = _md5(simulate_machine(ujobs, ujobs.actual_run_time, machine, priority=p, backfill=b,
                                                 priority_params=pp, kernel="fast"))
    return out


def main(argv: list[str], run=compute, doc: str = __doc__) -> int:
    """``record`` or ``check`` the md5s ``run(terms)`` gives (``reference_md5.py`` passes its own)."""
    if len(argv) < 2 or argv[0] not in ("record", "check"):
        print(doc)
        return 2
    what, path = argv[0], Path(argv[1])
    terms = argv[2:]
    t = time.perf_counter()
    got = run(terms)
    seconds = time.perf_counter() - t
    if what == "record":
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"{len(got)} cases recorded in {path} ({seconds:.0f} s)")
        return 0
    want = json.loads(path.read_text())
    bad = [k for k in got if want.get(k) != got[k]]
    for k in bad:
        print(f"DIFFERS {k}: {want.get(k)} -> {got[k]}")
    print(f"{len(got) - len(bad)} of {len(got)} cases identical ({seconds:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
