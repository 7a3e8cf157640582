"""The scheduling engine: replay a trace's history, or simulate a policy on its jobs.

Both entry points take a validated :class:`~drevt_sweep.jobs.JobTable` and return a
:class:`~drevt_sweep.schedule.Schedule` aligned row for row with it. The engine does no I/O
and knows nothing of Hydra or MLflow.

Simulation semantics (the reference implementation; a compiled kernel must match it
bit for bit):

* Discrete events. At each event time ``now``: first every completion at ``now``, then every
  arrival with ``submit <= now`` (in submit order, file order breaking ties), then one
  scheduling pass of the backfill policy. A pass that starts a job of zero run time is
  followed by another event at the same ``now`` (its completion).
* The scheduler plans only with ``time_limit``, or with a run-time estimate (``estimate``, see
  ``sim.estimates``: a running job that outlives its estimate gets its limit as the new one at
  that instant, an event processed after the completions). A job runs for its actual run time; with
  ``enforce_limits`` a job whose run time exceeds its limit is killed at the limit
  (``killed``; ``run_time = time_limit``). ``end = begin + run_time`` in float64, exactly.
* A job asking for more nodes than the machine has is rejected up front (``rejected``, NaN
  times, ``warnings["rejected_oversized"]``) and never enters the queue.
* Priority policies order the waiting queue (ties: submit time, then table row); backfill
  policies decide what starts (see ``drevt_sweep.policies``). A dynamic priority (``multifactor``,
  ``wfp3``, ``unicef``) re-orders the queue before every pass or at its ticks, which are events
  while jobs wait (``policies.dynamic``).
"""

from __future__ import annotations

import heapq
import math
import numbers
import os
from bisect import bisect_left, bisect_right, insort
from typing import Callable

import numpy as np

from .capacity import IRREGULAR_GAP, CapacitySchedule
from ..errors import ConfigError, DrevtError
from ..jobs import JobTable
from .estimates import MIN_PLAN, check_estimate, history_prediction
from .policies import (
    BACKFILL_POLICIES,
    DYNAMIC_PRIORITIES,
    PRIORITY_POLICIES,
    check_backfill,
    check_priority,
    check_priority_params,
    is_dynamic,
    make_backfill,
    priority_rank,
)
from .policies.base import Capacity, Cluster, PolicyContext
from .policies.conservative import COMPRESSION_ORDERS, check_compression
from .policies.dynamic import PriorityInputs
from .schedule import Schedule

NO_USERS = ("{what}, but no job of this trace has a known user (the readers take it from SWF field 12, "
            "Slurm's User, Lassen's hashed_user_id, a simple trace's user/user_id/uid column)")

__all__ = ["simulate", "replay", "PRIORITY_POLICIES", "BACKFILL_POLICIES", "COMPRESSION_ORDERS"]


def _check_total_nodes(total_nodes) -> int:
    if isinstance(total_nodes, bool) or not isinstance(total_nodes, numbers.Integral):
        raise ConfigError(f"total_nodes must be a whole number of nodes, got {total_nodes!r}")
    if total_nodes < 1:
        raise ConfigError(f"total_nodes must be at least 1, got {total_nodes}")
    return int(total_nodes)


def _first_line(jobs: JobTable, mask: np.ndarray) -> str:
    row = int(np.flatnonzero(mask)[0])
    try:
        return f"row {row} (line {int(jobs.source_line[row])})"
    except (IndexError, TypeError, ValueError):
        return f"row {row}"


def check_jobs(jobs: JobTable, submit, limit, nodes, rt, ok: np.ndarray) -> None:
    """Raise a ``ConfigError`` naming the first row (and line) of the jobs to run (``ok``) that
    have no valid submit time, node count, time limit or run time."""
    bad = ok & ~np.isfinite(submit)
    if bad.any():
        raise ConfigError(f"{int(bad.sum())} job(s) have no valid submit time, first at {_first_line(jobs, bad)}")
    bad = ok & (nodes < 1)
    if bad.any():
        raise ConfigError(f"{int(bad.sum())} job(s) ask for fewer than 1 node, first at {_first_line(jobs, bad)}")
    bad = ok & ~(np.isfinite(limit) & (limit > 0))
    if bad.any():
        raise ConfigError(
            f"{int(bad.sum())} job(s) have no valid time limit (must be finite and > 0), "
            f"first at {_first_line(jobs, bad)}"
        )
    bad = ok & ~(np.isfinite(rt) & (rt >= 0))
    if bad.any():
        raise ConfigError(
            f"{int(bad.sum())} job(s) have no valid run time (must be finite and >= 0), "
            f"first at {_first_line(jobs, bad)}"
        )


def held_times(rt: np.ndarray, limit: np.ndarray, rejected: np.ndarray,
               enforce_limits: bool) -> tuple[np.ndarray, np.ndarray]:
    """(killed, the time each job holds its nodes): cut at the limit when limits are enforced;
    NaN for rejected jobs."""
    if enforce_limits:
        killed = ~rejected & (rt > limit)
        dur = np.where(killed, limit, rt)
    else:
        killed = np.zeros(rt.shape[0], dtype=bool)
        dur = rt.copy()
    dur[rejected] = np.nan
    return killed, dur


def simulate(
    jobs: JobTable,
    run_time: np.ndarray,
    total_nodes: int,
    *,
    priority: str = "fcfs",
    backfill: str = "easy",
    enforce_limits: bool = True,
    on_reservation: Callable[[float, int, float], None] | None = None,
    kernel: str = "auto",
    capacity: CapacitySchedule | None = None,
    estimate: str = "user",
    backfill_order: str = "fcfs",
    priority_params: dict | None = None,
    compression: str = "compress_first",
    progress: Callable[[float, int], None] | None = None,
    estimate_refresh: str = "submit",
    backfill_params: dict | None = None,
) -> Schedule:
    """Schedule ``jobs`` on a machine of ``total_nodes`` nodes.

    ``run_time`` is each job's actual run time (float64 seconds, aligned with the table's rows,
    finite and >= 0 for every job that fits the machine); the scheduler never sees it.
    ``on_reservation(now, row, start)``, if given, is called whenever a policy promises a job
    a start time (EASY: the blocked head at each pass that can backfill; conservative: every
    new or moved reservation) -- for tests and debugging.
    ``kernel``: ``"fast"`` runs the compiled event loop (``drevt_sweep.fast``, numba),
    ``"reference"`` the pure-Python one below. ``"auto"`` (overridable with the environment
    variable ``DREVT_KERNEL``) uses the fast kernel unless ``on_reservation`` is given or it
    cannot run this case, and except while loading numba would cost more than the reference
    needs for the runs so far in this process (``fast.worth_loading``); if numba cannot be
    imported it warns once and uses the reference. Both give the same schedule, bit for bit.
    ``capacity``: machine-size changes over time (``drevt_sweep.capacity``; None or an empty
    schedule = ``total_nodes`` throughout, bit-identical to not passing it). Running jobs are
    never killed; a job starts only if it fits for its whole time limit; jobs that can never
    run are rejected (``warnings["rejected_capacity"]``), larger ones only delayed.
    ``estimate`` (``user``, ``actual``, ``user_history``) and ``backfill_order`` (``fcfs``,
    ``sjbf``): what the scheduler plans with and EASY's candidate order (``sim.estimates``).
    ``estimate_refresh`` (``submit``, ``every_pass``): when ``user_history`` predicts a waiting
    job: once at its submission, or again before every scheduling pass (``sim.estimates``).
    ``priority_params``: the parameters of a dynamic priority (``multifactor``'s weights etc.).
    ``compression``: conservative backfilling's compression order (``compress_first``,
    ``interleaved`` or ``one_pass``; see ``policies.conservative``); other policies ignore it.
    ``progress(now, jobs_done)``, if given, is called every few thousand events with the
    simulated time reached and the number of jobs finished so far; it may raise (an interrupt)
    to stop the run. Both kernels return to Python that often, so Ctrl-C stops a long run.
    ``backfill_params``: a backfill policy's own settings (``slurm``: ``bf_window`` etc., see
    ``policies.slurm_backfill``); jobs it held are counted in ``warnings["held_<reason>"]``, jobs
    it refused at submission (association limits: ``backfill_params["limits"]``) are rejected,
    counted in ``warnings["rejected_<reason>"]``.
    """
    check_priority(priority)
    check_backfill(backfill)
    check_estimate(estimate, backfill_order, backfill, estimate_refresh)
    check_priority_params(priority, priority_params)
    check_compression(compression)
    if kernel not in _KERNELS:
        raise ConfigError(f"unknown kernel {kernel!r}; choose one of: {', '.join(_KERNELS)}")
    total = _check_total_nodes(total_nodes)

    n = len(jobs)
    submit = np.asarray(jobs.submit, dtype=np.float64)
    limit = np.asarray(jobs.time_limit, dtype=np.float64)
    nodes = np.asarray(jobs.num_nodes, dtype=np.int64)
    rt = np.asarray(run_time, dtype=np.float64)
    if rt.shape != (n,):
        raise ValueError(f"run_time has shape {rt.shape}, expected ({n},) to match the job table")

    schedule_of_capacity = capacity
    capacity = _machine_capacity(capacity, total)  # the CapacitySchedule becomes a Capacity
    if estimate != "user" and capacity.variable:
        raise ConfigError(
            f"estimate {estimate!r} needs a constant machine capacity (a job planned shorter than "
            f"its limit could run into a capacity drop); use estimate 'user' with this workload"
        )
    rejected = nodes > capacity.maximum
    ok = ~rejected
    check_jobs(jobs, submit, limit, nodes, rt, ok)
    deadline = None
    if capacity.variable:  # latest start per job that the capacity alone allows (NaN: never)
        deadline = schedule_of_capacity.deadlines(total, submit, nodes, limit)  # recurring maintenance too
        rejected = rejected | (ok & ~(deadline >= submit))
        ok = ~rejected
    killed, dur = held_times(rt, limit, rejected, enforce_limits)

    users = np.asarray(jobs.user_code, dtype=np.int64)
    if estimate == "user_history" and n and not (users >= 0).any():
        raise ConfigError(NO_USERS.format(what="estimate 'user_history' predicts from each user's own jobs"))
    rank = priority_rank(priority, submit, limit, nodes)
    dynamic = None
    if is_dynamic(priority):
        inputs = PriorityInputs(
            submit=submit, time_limit=limit, num_nodes=nodes, total_nodes=total,
            queue_code=np.asarray(jobs.queue_code), queue_names=tuple(jobs.queue_names),
            user_code=np.asarray(jobs.user_code), user_names=tuple(jobs.user_names),
            group_code=np.asarray(jobs.group_code), group_names=tuple(jobs.group_names),
            t0=float(submit[ok].min()) if ok.any() else 0.0,
            qos_code=np.asarray(jobs.qos_code), qos_names=tuple(jobs.qos_names),
        )
        dynamic = DYNAMIC_PRIORITIES[priority](inputs, **dict(priority_params or {}))
    extended = dynamic is not None or estimate != "user" or backfill_order != "fcfs"
    refresh = estimate == "user_history" and estimate_refresh == "every_pass"
    needs_reference = REFRESH_NEEDS_REFERENCE if refresh else ""
    held: dict[str, int] = {}
    planned = estimate != "user" or backfill_order != "fcfs"  # (extended without a dynamic priority)
    if _use_fast_kernel(kernel, backfill, capacity, on_reservation, n, extended, needs_reference, backfill_params,
                        planned, dynamic):
        from . import kernel as fast

        if backfill == "slurm":
            begin_l, end_l = fast.run_slurm(
                submit=submit, limit=limit, nodes=nodes, dur=dur, rejected=rejected, rank=rank, total=total,
                users=users, backfill_params=backfill_params, dynamic=dynamic, progress=progress,
            )
        elif extended:
            begin_l, end_l = fast.run_extended(
                submit=submit, limit=limit, nodes=nodes, dur=dur, rejected=rejected, rank=rank,
                total=total, backfill=backfill, enforce_limits=bool(enforce_limits),
                estimate=estimate, backfill_order=backfill_order, users=users, dynamic=dynamic,
                progress=progress,
            )
        else:
            begin_l, end_l = fast.run_events(
                submit=submit, limit=limit, nodes=nodes, dur=dur, rejected=rejected, rank=rank,
                total=total, backfill=backfill, enforce_limits=bool(enforce_limits),
                compression=compression, progress=progress,
            )
    else:
        begin_l, end_l = _run_events(
            submit=submit,
            limit=limit,
            nodes=nodes,
            dur=dur,
            rejected=rejected,
            rank=rank,
            capacity=capacity,
            backfill=backfill,
            enforce_limits=bool(enforce_limits),
            on_reservation=on_reservation,
            deadline=deadline,
            estimate=estimate,
            backfill_order=backfill_order,
            users=users,
            dynamic=dynamic,
            compression=compression,
            progress=progress,
            refresh=refresh,
            backfill_params=backfill_params,
            report=held,
        )
    warnings = {"rejected_oversized": int(rejected.sum())}
    if deadline is not None:  # jobs withdrawn when their last capacity window passed
        withdrawn = ~rejected & np.isnan(np.array(begin_l, dtype=np.float64))
        rejected = rejected | withdrawn
        killed = killed & ~rejected
        dur[withdrawn] = np.nan
        oversized = int((nodes > capacity.maximum).sum())
        warnings = {"rejected_oversized": oversized, "rejected_capacity": int(rejected.sum()) - oversized}
        if schedule_of_capacity.irregular:  # of those, the jobs only a DST day's longer gap fits
            warnings[IRREGULAR_GAP] = int(
                schedule_of_capacity.irregular_only(total, submit, nodes, limit).sum())
    warnings.update(held)
    if any(key.startswith("rejected_") for key in held):  # refused at submission by the policy
        refused = ~rejected & np.isnan(np.array(begin_l, dtype=np.float64))
        rejected = rejected | refused
        killed = killed & ~rejected
        dur[refused] = np.nan
    return Schedule(
        mode="simulation",
        total_nodes=total,
        begin=np.array(begin_l, dtype=np.float64),
        end=np.array(end_l, dtype=np.float64),
        run_time=dur,
        killed=killed,
        rejected=rejected,
        warnings=warnings,
    )


def _machine_capacity(capacity: CapacitySchedule | None, total: int) -> Capacity:
    """``Capacity(total)`` unless ``capacity`` changes the machine size at some time."""
    if capacity is None or capacity.is_empty:
        return Capacity(total)
    times, levels = capacity.levels(total)
    return Capacity(total) if len(levels) == 1 else Capacity.stepwise(times, levels)


_KERNELS = ("auto", "fast", "reference")

# Why estimate_refresh=every_pass runs on the reference engine: the compiled extended kernel
# (kernel._extended) predicts a job once, at its arrival, and is being merged into one core
# with the other kernels (issue 25); re-predicting the waiting jobs goes into that core, not
# into the loop it replaces. Until then such runs take the reference engine's speed.
REFRESH_NEEDS_REFERENCE = ("estimate_refresh 'every_pass' re-predicts waiting jobs before every pass, "
                           "which only the reference engine does")


def _use_fast_kernel(kernel: str, backfill: str, capacity: Capacity, on_reservation, n_jobs: int,
                     extended: bool = False, needs_reference: str = "", backfill_params=None,
                     planned: bool | None = None, dynamic=None) -> bool:
    """Whether ``simulate`` runs the compiled kernel (see its ``kernel`` argument).
    ``needs_reference``: why this run needs the reference engine, if it does. ``extended``: a
    dynamic priority, run-time estimates or SJBF; ``planned``: the last two (default:
    ``extended``), ``dynamic``: the priority object (``backfill: slurm`` compiles multifactor)."""
    if kernel == "auto":
        kernel = os.environ.get("DREVT_KERNEL", "auto") or "auto"
        if kernel not in _KERNELS:
            raise ConfigError(f"DREVT_KERNEL={kernel!r} is not one of: {', '.join(_KERNELS)}")
    if kernel == "reference":
        return False
    from . import kernel as fast
    from .policies.conservative import ConservativeBackfill

    why = None
    if needs_reference:
        why = needs_reference
    elif on_reservation is not None:
        why = "the on_reservation hook needs the reference engine"
    elif backfill == "slurm" and (reason := fast.slurm_supported(
            backfill_params, extended if planned is None else planned, dynamic)):
        why = reason
    elif backfill not in fast.FAST_BACKFILLS | fast.SLURM_BACKFILLS:
        why = f"backfill policy {backfill!r} has no compiled version"
    elif extended and backfill not in fast.EXTENDED_BACKFILLS | fast.SLURM_BACKFILLS:  # (slurm: above)
        why = (f"backfill policy {backfill!r} has no compiled version with dynamic priorities or "
               f"run-time estimates")
    elif backfill == "conservative" and ConservativeBackfill.ALWAYS_REPLAN:
        why = "ConservativeBackfill.ALWAYS_REPLAN (a test switch) needs the reference engine"
    elif getattr(capacity, "variable", False) or capacity.minimum != capacity.total:
        why = "the compiled kernel handles a constant machine capacity only"
    if why is None:
        cost = "extended" if extended and backfill != "slurm" else backfill
        if kernel == "auto" and not fast.worth_loading(cost, n_jobs):
            return False  # a small run while numba is not loaded yet: the reference is quicker
        if fast.load(warn=kernel == "auto") is not None:
            return True
        why = f"the compiled kernel is unavailable ({fast.unavailable_reason()})"
    if kernel == "fast":
        raise ConfigError(f"kernel='fast' cannot run this simulation: {why}")
    return False


# The reference loop calls ``progress`` once per this many events: few enough that a heavy
# conservative run (an event can take milliseconds with a long queue) still reports every
# second or so; the callback itself only reads a clock.
PROGRESS_EVERY_EVENTS = 128


def _run_events(*, submit, limit, nodes, dur, rejected, rank, capacity, backfill, enforce_limits, on_reservation,
                deadline=None, estimate="user", backfill_order="fcfs", users=None, dynamic=None,
                compression="compress_first", progress=None, refresh=False, backfill_params=None,
                report=None):
    """The event loop. Works on Python lists (per-element numpy access is slow in pure Python).

    With a variable capacity (``deadline`` given): capacity changes are events while jobs wait
    (and are applied to ``cluster.free`` in any case), and a waiting job is withdrawn from the
    queue at the first event after its ``deadline`` (its last start the capacity allows); it
    keeps NaN times and ``simulate`` counts it as rejected.

    With run-time estimates (``estimate`` other than ``user``, see ``sim.estimates``) the policy
    plans with ``plan`` (set at arrival); a job that outlives its estimate is an event at
    ``begin + plan`` (after that instant's completions) where its estimate becomes its limit.
    ``refresh`` (``user_history`` with ``estimate_refresh=every_pass``): before a pass, the waiting
    jobs of users who completed a job at this instant are predicted again; if a prediction
    changed, ``cluster.estimates_raised`` tells the policy that its plans' durations changed.
    With a dynamic priority the queue is kept sorted by ``(key, FCFS rank)``; its ticks are
    events while jobs wait (see ``policies.dynamic`` for the order of the calls).
    ``report``: a dict that receives the policy's own counts (``counts()``, e.g. held jobs).
    """
    n = submit.shape[0]
    nodes_l = nodes.tolist()
    limit_l = limit.tolist()
    dur_l = dur.tolist()
    rank_l = rank.tolist()
    order = np.argsort(submit, kind="stable")  # the table's own order when sorted by submit
    arrivals = order[~rejected[order]].tolist()
    submit_l = submit.tolist()

    begin = [math.nan] * n
    end = [math.nan] * n
    est_end = [math.nan] * n

    planning = estimate != "user"
    plan = list(limit_l) if planning else limit_l  # the durations the policy plans with
    history = estimate == "user_history"
    users_l = users.tolist() if history else None
    last_two: dict[int, list[float]] = {}  # user -> real run times of the last completed jobs
    completed_users: set[int] = set()  # users with a completion at this instant (refresh)
    overruns: list[tuple[float, int]] = []  # heap of (estimated end, job) that the job outlives
    dyn = dynamic
    fcfs = rank_l
    if dyn is not None:
        rank_l = [None] * n  # (key, FCFS rank) of each waiting job: the queue's sort key

    cluster = Cluster(capacity, nodes_l, enforce_limits)
    policy = make_backfill(
        backfill, PolicyContext(nodes_l, plan, capacity, enforce_limits, on_reservation, backfill_order, fcfs,
                               compression=compression, backfill_params=backfill_params,
                               users=users.tolist() if users is not None else ())
    )
    running = cluster.running  # sorted (est_end, job)
    queue: list[int] = []  # waiting jobs in priority order
    qrank: list = []  # their ranks (parallel to queue)
    completions: list[tuple[float, int]] = []  # heap of (end, job)

    inf = math.inf
    a = 0
    n_arr = len(arrivals)
    cap_changes = capacity.changes() if deadline is not None else []
    n_cap = len(cap_changes)
    c = 0
    deadline_l = deadline.tolist() if deadline is not None else None
    expiring: list[tuple[float, int]] = []  # heap of (deadline, job) of waiting jobs
    events = 0
    finished = 0
    wake = getattr(policy, "wake_at", None)  # a policy's own event (a start it promised)
    refused = getattr(policy, "refused", None)  # jobs it refused at submission (never to run)
    t_wake = inf
    while a < n_arr or completions or (queue and (c < n_cap or t_wake < inf)):
        t_arr = submit_l[arrivals[a]] if a < n_arr else inf
        t_end = completions[0][0] if completions else inf
        now = t_arr if t_arr < t_end else t_end
        if t_wake < now:
            now = t_wake
        if overruns and overruns[0][0] < now:
            now = overruns[0][0]
        if dyn is not None and queue and dyn.next_tick < now:
            now = dyn.next_tick
        if c < n_cap:  # 0. capacity changes (events only while jobs wait)
            if queue and cap_changes[c][0] < now:
                now = cap_changes[c][0]
            while c < n_cap and cap_changes[c][0] <= now:
                cluster.free += cap_changes[c][1]
                c += 1
        if dyn is not None:
            dyn.advance(now)  # every tick <= now

        events += 1
        if progress is not None and events % PROGRESS_EVERY_EVENTS == 0:
            progress(now, finished)

        # 1. completions
        while completions and completions[0][0] <= now:
            _, j = heapq.heappop(completions)
            finished += 1
            e = est_end[j]
            del running[bisect_left(running, (e, j))]
            cluster.free += nodes_l[j]
            cluster.completed = True
            if cluster.ended is not None:
                cluster.ended.append(j)
            if end[j] < e:
                cluster.freed_early = True
            if dyn is not None:
                dyn.end(j, now)
            if history and users_l[j] >= 0:
                done = last_two.setdefault(users_l[j], [])
                done.append(dur_l[j])
                if len(done) > 2:
                    del done[0]
                if refresh:
                    completed_users.add(users_l[j])

        # 1b. running jobs that outlived their estimate get their limit as the new one
        while overruns and overruns[0][0] <= now:
            e, j = heapq.heappop(overruns)
            del running[bisect_left(running, (e, j))]
            plan[j] = limit_l[j]
            est_end[j] = begin[j] + limit_l[j]
            insort(running, (est_end[j], j))
            cluster.estimates_raised = True

        # 2. arrivals
        while a < n_arr and submit_l[arrivals[a]] <= now:
            j = arrivals[a]
            a += 1
            if planning:
                if history:
                    p = history_prediction(last_two.get(users_l[j]), limit_l[j]) if users_l[j] >= 0 else None
                    if p is not None:
                        plan[j] = p
                else:  # actual
                    p = dur_l[j]
                    if p < MIN_PLAN:
                        p = MIN_PLAN if MIN_PLAN < limit_l[j] else limit_l[j]
                    plan[j] = p
            if dyn is not None:
                rank_l[j] = (dyn.key(now, j), fcfs[j])
            r = rank_l[j]
            if not qrank or r > qrank[-1]:
                queue.append(j)
                qrank.append(r)
            else:
                pos = bisect_right(qrank, r)
                queue.insert(pos, j)
                qrank.insert(pos, r)
            if deadline_l is not None and deadline_l[j] < inf:
                heapq.heappush(expiring, (deadline_l[j], j))

        # 2b. withdraw waiting jobs whose last capacity window has passed
        while expiring and expiring[0][0] < now:
            _, j = heapq.heappop(expiring)
            if begin[j] != begin[j]:  # still waiting
                i = bisect_left(qrank, rank_l[j])
                del queue[i]
                del qrank[i]
                cluster.withdrawn.append(j)

        # 2c. a dynamic priority re-orders the queue
        if dyn is not None and queue and dyn.refresh_due():
            for j, key in zip(queue, dyn.keys(now, queue)):
                rank_l[j] = (key, fcfs[j])
            queue.sort(key=rank_l.__getitem__)
            qrank[:] = [rank_l[j] for j in queue]

        # 2d. estimate_refresh=every_pass: the waiting jobs of users who just completed a job
        if completed_users:
            for j in queue:
                if users_l[j] in completed_users:
                    p = history_prediction(last_two[users_l[j]], limit_l[j])
                    if p is not None and p != plan[j]:
                        plan[j] = p
                        cluster.estimates_raised = True
            completed_users.clear()

        # 3. one scheduling pass
        if queue:
            started = policy.select(now, queue, cluster)
            if cluster.withdrawn:
                cluster.withdrawn.clear()
            if refused is not None and refused:  # refused at submission (association limits)
                for j in refused:
                    i = bisect_left(qrank, rank_l[j])
                    if i == len(queue) or queue[i] != j:
                        raise RuntimeError(f"policy {backfill!r} refused job {j}, which is not waiting")
                    del queue[i]
                    del qrank[i]
                refused.clear()
            if started:
                for j in started:
                    b = now
                    e = b + dur_l[j]
                    begin[j] = b
                    end[j] = e
                    est_end[j] = b + plan[j]
                    insort(running, (est_end[j], j))
                    cluster.free -= nodes_l[j]
                    heapq.heappush(completions, (e, j))
                    if planning and est_end[j] < e and plan[j] < limit_l[j]:
                        heapq.heappush(overruns, (est_end[j], j))
                    if dyn is not None:
                        dyn.start(j, now)
                if cluster.free < 0:
                    raise RuntimeError(f"policy {backfill!r} over-committed the machine at t={now}")
                # Remove them from the queue: usually a prefix (heads) plus a few backfilled
                # jobs, found by their (unique) rank.
                p = 0
                while p < len(started) and started[p] == queue[p]:
                    p += 1
                if p:
                    del queue[:p]
                    del qrank[:p]
                for j in started[p:]:
                    i = bisect_left(qrank, rank_l[j])
                    if i == len(queue) or queue[i] != j:
                        raise RuntimeError(f"policy {backfill!r} started job {j}, which is not waiting")
                    del queue[i]
                    del qrank[i]
        if wake is not None:
            t_wake = wake() if queue else inf
        cluster.freed_early = False
        cluster.completed = False
        cluster.estimates_raised = False

    if queue:  # cannot happen: with nothing running, the best job always fits
        raise RuntimeError(f"engine stalled with {len(queue)} job(s) waiting (policy {backfill!r})")
    if report is not None and hasattr(policy, "counts"):
        report.update(policy.counts())
    return begin, end


def replay(jobs: JobTable, total_nodes: int) -> Schedule:
    """The trace's own history: begin/end exactly as recorded; no scheduler is involved.

    Instants where the recorded jobs use more than ``total_nodes`` are counted in
    ``warnings["replay_overcommit_instants"]`` (a warning, not an error); jobs recorded as
    starting before they were submitted in ``warnings["replay_begin_before_submit"]``.
    """
    total = _check_total_nodes(total_nodes)
    begin = np.array(jobs.begin, dtype=np.float64)
    end = np.array(jobs.end, dtype=np.float64)
    missing = ~(np.isfinite(begin) & np.isfinite(end))
    if missing.any():
        if jobs.meta.mode != "replay":
            raise ConfigError(
                "replay needs each job's historical begin and end times, but this trace is in "
                "simulation mode (no begin_time/end_time); simulate it with a scheduling "
                "policy instead"
            )
        raise ConfigError(
            f"replay needs each job's historical begin and end times; {int(missing.sum())} "
            f"job(s) lack them, first at {_first_line(jobs, missing)}"
        )
    backwards = end < begin
    if backwards.any():
        raise ConfigError(
            f"{int(backwards.sum())} job(s) end before they begin, first at {_first_line(jobs, backwards)}"
        )
    nodes = np.asarray(jobs.num_nodes, dtype=np.int64)
    submit = np.asarray(jobs.submit, dtype=np.float64)
    n = len(jobs)
    return Schedule(
        mode="replay",
        total_nodes=total,
        begin=begin,
        end=end,
        run_time=end - begin,
        killed=np.zeros(n, dtype=bool),
        rejected=np.zeros(n, dtype=bool),
        warnings={
            "replay_overcommit_instants": _overcommit_instants(begin, end, nodes, total),
            "replay_begin_before_submit": int((begin < submit).sum()),
        },
    )


def historical_baseline(jobs: JobTable, total_nodes: int) -> Schedule | None:
    """The replay of the trace's own history, or None when the trace does not record every
    job's begin and end. Cheap: no scheduling, just the recorded times. The sweep draws it
    beside simulated schedules and the report re-reads it for finished sweeps."""
    begin = np.asarray(jobs.begin, dtype=float)
    end = np.asarray(jobs.end, dtype=float)
    if len(jobs) == 0 or not (np.isfinite(begin).all() and np.isfinite(end).all()):
        return None
    try:
        return replay(jobs, total_nodes)
    except DrevtError:
        return None


def _overcommit_instants(begin: np.ndarray, end: np.ndarray, nodes: np.ndarray, total: int) -> int:
    """Number of distinct event times after which more than ``total`` nodes are in use."""
    if begin.size == 0:
        return 0
    times = np.concatenate([end, begin])
    delta = np.concatenate([-nodes, nodes])
    order = np.lexsort((delta, times))  # by time; ends (negative) before starts
    times = times[order]
    usage = np.cumsum(delta[order])
    last_at_time = np.append(times[1:] != times[:-1], True)
    return int((usage[last_at_time] > total).sum())
