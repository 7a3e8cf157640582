"""Schedule metrics: one flat ``{name: float}`` dict, the same for replay and simulation.

Rejected jobs (more nodes than the machine has) never ran: they are counted in
``jobs_rejected`` and left out of everything else. Times are seconds. With no job run, the
averages are NaN. Percentiles interpolate linearly between order statistics (numpy's default).
The *span* is the interval from the first submit to the last end of the jobs that ran; its length
is the makespan, and utilization, throughput and the time-weighted queue length are taken over
it. When the jobs come from more than one queue, the same metrics, except the machine-wide
ones, are repeated per queue as ``queue/<key>/<metric>`` (``<key>`` = ``names.queue_key(name)``: the name
itself when it is a valid MLflow key part, else a sanitised form with a hash of the name, unique
and stable); the per-queue span is the overall span, so per-queue utilizations add up to the total.

Everything is vectorised: a pass over sorted arrays, no Python loop over jobs.
"""

from __future__ import annotations

import numpy as np

from ..jobs import JobTable
from .machine_metrics import partition_metrics  # PARTITION_METRIC_DEFINITIONS documents them
from ..names import QueueKeys, queue_key, run_queue_keys
from .schedule import Schedule

BSLD_TAU = 10.0  # seconds: the bounded-slowdown threshold for very short jobs

METRIC_DEFINITIONS: dict[str, str] = {
    "jobs_simulated": "jobs that ran (replayed or simulated); rejected jobs are not counted",
    "jobs_rejected": "jobs that ask for more nodes than the machine has; they never run",
    "jobs_killed": "jobs stopped at their time limit because their run time exceeded it",
    "wait_mean": "mean wait time, begin − submit (s)",
    "wait_median": "median wait time (s)",
    "wait_p90": "90th percentile of the wait time (s)",
    "wait_p95": "95th percentile of the wait time (s)",
    "wait_p99": "99th percentile of the wait time (s)",
    "wait_max": "longest wait time (s)",
    "turnaround_mean": "mean turnaround time, end − submit = wait + run time (s)",
    "bsld_mean": "mean bounded slowdown, max(1, (wait + run) / max(run, 10 s))",
    "bsld_p95": "95th percentile of the bounded slowdown",
    "utilization": "Σ nodes × run time / (total_nodes × makespan): the busy fraction of the "
    "machine over the span (above 1 only if a replayed trace over-commits the machine)",
    "makespan": "span length: last end − first submit, a duration (s)",
    "throughput": "jobs that ran per hour of makespan (jobs/h)",
    "queue_length_mean": "time-weighted mean number of waiting jobs (submitted, not yet "
    "started) over the span",
    "queue_length_max": "peak number of waiting jobs, counted after all the events at one "
    "instant (a job that starts on submission never waits)",
    "users": "users with at least one job that ran (jobs of unknown users are left out of the "
    "per-user figures, which appear only when some job's user is known)",
    "user_wait_mean_max": "the worst-off user's mean wait: the largest per-user mean wait (s)",
    "user_bsld_jain": "Jain's fairness index over the users' mean bounded slowdowns, "
    "(Σx)² / (n Σx²): 1 when every user sees the same mean, 1/n when one user takes it all",
    "queue/<name>/<metric>": "the metrics above restricted to the jobs of one queue, when there "
    "are several (utilization = that queue's share of the whole machine over the overall span)",
}

# Slurm association/QOS limits (backfill 'slurm' with system.associations; sim.limits): present
# only when some job was held or refused.
LIMIT_METRIC_DEFINITIONS: dict[str, str] = {
    "held/<reason>": "jobs held at least once by an association or QOS limit, per Slurm reason "
    "(AssocMaxJobsLimit, AssocGrpCpuLimit, QOSMaxJobsPerUserLimit, ...)",
    "rejected/<reason>": "jobs an association or QOS limit refused at submission (assoc_max_submit, "
    "assoc_grp_submit, qos_max_submit_pu) or can never let run (no_association, assoc_max_wall, "
    "qos_max_wall, assoc_job_limit, qos_job_limit); counted in jobs_rejected too",
    "limits_split_over_pools": "jobs under a limit whose jobs run in several node pools: each pool "
    "enforces it on its own jobs only (pools are simulated apart), so these may start earlier than in Slurm",
}
LIMIT_REJECTIONS = ("assoc_max_submit", "assoc_grp_submit", "qos_max_submit_pu", "no_association",
                    "assoc_max_wall", "qos_max_wall", "assoc_job_limit", "qos_job_limit")

_WAIT_PERCENTILES = (50.0, 90.0, 95.0, 99.0)


def metric_key_for_queue(queue: str, metric: str, keys=queue_key) -> str:
    """The flat key of a per-queue metric, e.g. ``queue/pbatch/wait_mean``; ``keys`` is the
    run's registry (``names.run_queue_keys``), which differs from ``queue_key`` only where two
    of the run's names would share a key."""
    return f"queue/{keys(queue)}/{metric}"


def bounded_slowdown(wait: np.ndarray, run_time: np.ndarray, tau: float = BSLD_TAU) -> np.ndarray:
    """max(1, (wait + run) / max(run, tau)) per job."""
    return np.maximum(1.0, (wait + run_time) / np.maximum(run_time, tau))


def node_seconds(nodes: np.ndarray, run_time: np.ndarray) -> float:
    """Σ nodes × run time, summed in an order fixed by the array alone.

    Not ``np.dot``: BLAS splits a dot product over its threads, and the thread count differs
    between the sweep's process and joblib's workers (loky limits them to one), so the last
    bit of ``utilization`` depended on where a seed ran (issue 19). numpy's own reduction is a
    pairwise sum whose order depends only on the length of a contiguous array."""
    products = np.ascontiguousarray(np.asarray(nodes, dtype=np.float64) * run_time)
    return float(np.add.reduce(products))


def _queue_length(
    submit: np.ndarray, begin: np.ndarray, span_start: float, span_end: float
) -> tuple[float, float]:
    """Time-weighted mean and peak of the number of jobs with submit <= t < begin.

    The integral of the queue length over time is the sum of the waits, so the mean is
    Σ wait / span. The peak is reached just after some submit instant t, where it is
    #{submit <= t} - #{begin <= t} (all the events at t applied).
    """
    if submit.size == 0:
        return float("nan"), float("nan")
    span = span_end - span_start
    mean = float((begin - submit).sum() / span) if span > 0 else 0.0
    submits = submit if submit.size < 2 or (submit[1:] >= submit[:-1]).all() else np.sort(submit)
    last_of_instant = np.flatnonzero(np.append(submits[1:] != submits[:-1], True))
    submitted = last_of_instant + 1  # #{submit <= t} at the last submit of each instant
    started = np.searchsorted(np.sort(begin), submits[last_of_instant], side="right")
    return mean, float(max(int((submitted - started).max()), 0))


def _job_metrics(
    wait: np.ndarray,
    run_time: np.ndarray,
    nodes: np.ndarray,
    submit: np.ndarray,
    begin: np.ndarray,
    total_nodes: int,
    span_start: float,
    span_end: float,
) -> dict[str, float]:
    """The metrics of one set of jobs that ran, over a given span."""
    nan = float("nan")
    n = wait.size
    out: dict[str, float] = {}
    if n:
        p50, p90, p95, p99 = np.percentile(wait, _WAIT_PERCENTILES)
        bsld = bounded_slowdown(wait, run_time)
        out.update(
            wait_mean=float(wait.mean()),
            wait_median=float(p50),
            wait_p90=float(p90),
            wait_p95=float(p95),
            wait_p99=float(p99),
            wait_max=float(wait.max()),
            turnaround_mean=float((wait + run_time).mean()),
            bsld_mean=float(bsld.mean()),
            bsld_p95=float(np.percentile(bsld, 95.0)),
        )
    else:
        for key in (
            "wait_mean wait_median wait_p90 wait_p95 wait_p99 wait_max turnaround_mean "
            "bsld_mean bsld_p95"
        ).split():
            out[key] = nan
    span = span_end - span_start
    if n and span > 0:
        out["utilization"] = node_seconds(nodes, run_time) / (total_nodes * span)
        out["throughput"] = n / (span / 3600.0)
    else:
        out["utilization"] = nan
        out["throughput"] = nan
    out["queue_length_mean"], out["queue_length_max"] = _queue_length(
        submit, begin, span_start, span_end
    )
    return out


def compute_metrics(jobs: JobTable, schedule: Schedule) -> dict[str, float]:
    """All metrics of a schedule (see ``METRIC_DEFINITIONS``), as a flat dict of floats."""
    if len(schedule) != len(jobs):
        raise ValueError(f"schedule has {len(schedule)} rows but the job table has {len(jobs)}")
    ran = ~np.asarray(schedule.rejected, dtype=bool)
    submit = jobs.submit[ran]
    begin = schedule.begin[ran]
    end = schedule.end[ran]
    run_time = schedule.run_time[ran]
    nodes = jobs.num_nodes[ran]
    wait = begin - submit
    killed = np.asarray(schedule.killed, dtype=bool)
    rejected = ~ran

    if submit.size:
        span_start = float(submit.min())
        span_end = float(end.max())
    else:
        span_start = span_end = float("nan")

    metrics: dict[str, float] = {
        "jobs_simulated": float(ran.sum()),
        "jobs_rejected": float(rejected.sum()),
        "jobs_killed": float((killed & ran).sum()),
    }
    metrics.update(
        _job_metrics(
            wait, run_time, nodes, submit, begin, schedule.total_nodes, span_start, span_end
        )
    )
    metrics["makespan"] = span_end - span_start if submit.size else float("nan")
    users = per_user(jobs, schedule)
    if users["jobs"].size:  # only for traces that say who submitted (PER_USER_METRICS)
        metrics["users"] = float(users["jobs"].size)
        metrics["user_wait_mean_max"] = float(users["wait_mean"].max())
        metrics["user_bsld_jain"] = jain_index(users["bsld_mean"])
    # Keep the documented order: makespan before throughput in reports.
    metrics = {k: metrics[k] for k in _ORDER if k in metrics}
    for key, count in (schedule.warnings or {}).items():  # Slurm association/QOS limits
        if key.startswith("held_"):
            metrics[f"held/{key[len('held_'):]}"] = float(count)
        elif key.startswith("rejected_") and key[len("rejected_"):] in LIMIT_REJECTIONS:
            metrics[f"rejected/{key[len('rejected_'):]}"] = float(count)
        elif key == "limits_split_over_pools":
            metrics[key] = float(count)

    if getattr(schedule, "placement", None) is not None:  # a machine with partitions
        def of_rows(rows):
            keep = ran[rows]
            rows = rows[keep]
            out = {"jobs_simulated": float(rows.size),
                   "jobs_killed": float((killed[rows]).sum())}
            out.update(_job_metrics(schedule.begin[rows] - jobs.submit[rows], schedule.run_time[rows],
                                    jobs.num_nodes[rows], jobs.submit[rows], schedule.begin[rows],
                                    schedule.total_nodes, span_start, span_end))
            del out["utilization"]  # the partition's node_utilization replaces it
            return out

        partition_keys = QueueKeys(schedule.machine.partition_names)
        metrics.update(partition_metrics(jobs, schedule, of_rows, partition_keys, span_start, span_end))

    # Per queue: sort the jobs by queue once and slice contiguous segments.
    codes_all = np.asarray(jobs.queue_code)
    present = np.unique(codes_all) if codes_all.size else np.array([], dtype=np.int64)
    if present.size < 2:  # one queue: its metrics would repeat the totals above
        return metrics
    codes_ran = codes_all[ran]
    order = np.argsort(codes_ran, kind="stable")
    sorted_codes = codes_ran[order]
    rejected_per_code = np.bincount(codes_all[rejected], minlength=len(jobs.queue_names))
    killed_per_code = np.bincount(codes_all[killed & ran], minlength=len(jobs.queue_names))
    keys = run_queue_keys(jobs)
    for code in present.tolist():
        lo, hi = np.searchsorted(sorted_codes, [code, code + 1])
        idx = order[lo:hi]
        queue_metrics = {
            "jobs_simulated": float(hi - lo),
            "jobs_rejected": float(rejected_per_code[code]),
            "jobs_killed": float(killed_per_code[code]),
        }
        queue_metrics.update(
            _job_metrics(
                wait[idx],
                run_time[idx],
                nodes[idx],
                submit[idx],
                begin[idx],
                schedule.total_nodes,
                span_start,
                span_end,
            )
        )
        for key in _ORDER:
            if key in queue_metrics:
                metrics[metric_key_for_queue(jobs.queue_names[code], key, keys)] = queue_metrics[key]
    return metrics


_ORDER = tuple(k for k in METRIC_DEFINITIONS if not k.startswith("queue/"))
# present only when some job that ran has a known user (else they would be NaN in every run)
PER_USER_METRICS = ("users", "user_wait_mean_max", "user_bsld_jain")


def jain_index(values: np.ndarray) -> float:
    """Jain, Chiu & Hawe (1984): (Σx)² / (n Σx²), in [1/n, 1]; 1 = all equal."""
    x = np.asarray(values, dtype=np.float64)
    square = float((x * x).sum())
    return float(x.sum()) ** 2 / (x.size * square) if square > 0 else 1.0


def per_user(jobs: JobTable, schedule: Schedule) -> dict[str, np.ndarray]:
    """Per user with jobs that ran (known users only, in name order): ``user`` (name),
    ``jobs``, ``wait_mean`` (s), ``bsld_mean``, ``node_seconds`` (what they used)."""
    ran = ~np.asarray(schedule.rejected, dtype=bool) & (np.asarray(jobs.user_code) >= 0)
    codes = np.asarray(jobs.user_code, dtype=np.int64)[ran]
    wait = schedule.begin[ran] - jobs.submit[ran]
    run = schedule.run_time[ran]
    size = len(jobs.user_names)
    count = np.bincount(codes, minlength=size)
    present = np.flatnonzero(count)
    n = count[present].astype(np.float64)

    def mean(values):
        return np.bincount(codes, weights=values, minlength=size)[present] / n

    return {
        "user": np.asarray(jobs.user_names, dtype=object)[present] if size else np.empty(0, dtype=object),
        "jobs": count[present],
        "wait_mean": mean(wait),
        "bsld_mean": mean(bounded_slowdown(wait, run)),
        "node_seconds": np.bincount(codes, weights=jobs.num_nodes[ran] * run, minlength=size)[present],
    }
