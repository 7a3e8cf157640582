"""Simulate or replay a machine with partitions: each partition on its own, schedules merged.

Partitions never exchange nodes and each has its own waiting queue, so a machine's schedule is
the union of its partitions' schedules, each computed independently:

* an ``exclusive`` partition runs through the existing engine (``engine.simulate``, reference
  or compiled kernel) on its own jobs, with the partition's node count as the machine size;
  in the compiled kernel without extensions (``_compiled_exclusive``) straight from the
  table's columns, the jobs checked once for the machine (what ``engine.simulate`` does on a
  sub-table, without building one);
* a ``shared`` partition runs the node-level packing engine (``sim.shared``).

A capacity schedule (maintenance, machine-size steps) is machine-wide: each exclusive
partition gets its share, in proportion to its size (``partition_capacities``).

A job's priority rank is computed within its partition's queue (priority keys and FCFS ties
are per-queue notions), which is what each partition's engine does on its sub-table. On a
single pool of whole nodes (``Machine.is_single_pool``) this module calls ``engine.simulate``
once on the whole table, so today's schedules stay bit-identical.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..jobs import JobTable
from . import engine
from .capacity import IRREGULAR_GAP, CapacitySchedule
from .limits import SUBMIT_REASONS
from .machine import Machine, Placement, place_jobs, slurm_job_settings
from .schedule import Schedule


def simulate_machine(
    jobs: JobTable,
    run_time: np.ndarray,
    machine: Machine,
    *,
    priority: str = "fcfs",
    backfill: str = "easy",
    enforce_limits: bool = True,
    kernel: str = "auto",
    capacity=None,
    limits=None,
    **policy_options,
) -> Schedule:
    """The schedule of ``jobs`` on ``machine`` (see the module docstring); rejected jobs keep
    NaN times and are counted per reason in ``warnings['rejected_<reason>']``.
    ``policy_options`` (``estimate``, ``backfill_order``, ``priority_params``, ``compression``,
    ``progress``) go to ``engine.simulate`` for exclusive partitions; shared partitions plan with
    the user's time limits in priority order (a dynamic one, ``priority_params``, too). ``progress`` counts the jobs of the partitions
    already simulated as done (each partition's simulated time starts again). ``capacity`` is
    shared among exclusive partitions (``partition_capacities``); jobs it never lets run are
    rejected (``warnings['rejected_capacity']``); shared partitions refuse it.
    ``limits``: Slurm associations and QOS (``trace.associations.Associations``), enforced by
    ``backfill='slurm'`` (``sim.limits``; on shared-node pools too); jobs they refuse or can never
    let run are rejected per reason, jobs they held counted in ``warnings['held_<reason>']``."""
    if limits is not None and backfill != "slurm" and limits.has_limits():
        raise ConfigError(f"association and QOS limits are enforced by Slurm's backfill (backfill 'slurm', "
                          f"policy=slurm with SchedulerType=sched/backfill); backfill {backfill!r} would ignore "
                          f"them: choose backfill 'slurm' or leave the associations out")
    if machine.is_single_pool and limits is None:
        return engine.simulate(jobs, run_time, machine.total_nodes, priority=priority,
                               backfill=backfill, enforce_limits=enforce_limits, kernel=kernel,
                               capacity=capacity, **policy_options)
    progress = policy_options.pop("progress", None)
    defaults = {"estimate": "user", "backfill_order": "fcfs", "priority_params": None,
                "compression": "compress_first", "estimate_refresh": "submit", "backfill_params": None}
    special = {k: v for k, v in policy_options.items()
               if v != defaults.get(k, v) and k not in ("backfill_params", "priority_params")}
    if special and any(p.shared for p in machine.partitions):
        raise ConfigError(f"shared partitions plan with the users' time limits in priority order: "
                          f"{', '.join(f'{k}={v}' for k, v in special.items())} applies to "
                          f"exclusive partitions only")
    capacities = [None] * len(machine.partitions)
    if capacity is not None and not capacity.is_empty:
        shared = [p.name for p in machine.partitions if p.shared]
        if shared:
            raise ConfigError(f"capacity changes and maintenance windows are modelled on partitions of "
                              f"whole nodes only; shared-node partition(s): {', '.join(shared)}")
        capacities = partition_capacities(capacity, machine)
    factors = (policy_options.get("priority_params") or {}).get("partition_priority")
    jobs = slurm_job_settings(jobs, machine, factors)  # several partitions; DefaultTime/MaxTime
    placement = place_jobs(jobs, machine)
    assoc_limits = None
    if limits is not None:
        jobs, placement, assoc_limits = _with_limits(jobs, machine, placement, limits)
    n = len(jobs)
    rt = np.asarray(run_time, dtype=np.float64)
    if rt.shape != (n,):
        raise ValueError(f"run_time has shape {rt.shape}, expected ({n},) to match the job table")
    rows_of = _rows_per_partition(placement.partition, len(machine.partitions))
    compiled = None if any(capacities) or (backfill == "slurm" and assoc_limits is not None) else _compiled_exclusive(
        jobs, rt, machine, placement, rows_of, priority, backfill, enforce_limits, kernel,
        policy_options, progress)
    if compiled is not None:
        begin, end, dur, killed = compiled
    else:
        begin = np.full(n, np.nan)
        end = np.full(n, np.nan)
        dur = np.full(n, np.nan)
        killed = np.zeros(n, dtype=bool)
    withdrawn = np.zeros(n, dtype=bool)  # rejected by a partition's capacity (maintenance)
    held: dict[str, int] = {}  # jobs a policy held or refused, per reason (backfill 'slurm')
    refused = np.zeros(n, dtype=bool)  # refused at submission by an association/QOS limit
    irregular = 0  # of those, the jobs only a DST day's longer gap would fit
    # jobs of the partitions already simulated (the compiled exclusive ones ran first)
    done_before = 0 if compiled is None else sum(rows_of[k].size for k, p in enumerate(machine.partitions)
                                                 if not p.shared)
    names = None  # the names jobs are served under, for PriorityTier (backfill 'slurm')
    for k, part in enumerate(machine.partitions):
        rows = rows_of[k]
        if rows.size == 0 or (compiled is not None and not part.shared):
            continue
        options = policy_options
        if backfill == "slurm" and len({part.tier_of(q) for q in part.queues}) > 1:
            if names is None:
                from .machine import served_names

                names = served_names(jobs, machine)
            params = dict(policy_options.get("backfill_params") or {})
            params["tier"] = [part.tier_of(name) for name in names[rows].tolist()]
            options = {**policy_options, "backfill_params": params}
        if assoc_limits is not None and backfill == "slurm" and not part.shared:
            params = dict(options.get("backfill_params") or {})
            params["limits"] = assoc_limits.state_for(rows)
            options = {**options, "backfill_params": params}
        sub = jobs.take(rows)
        if part.shared:
            from .shared import simulate_shared

            # backfill slurm: Slurm's backfill on shared nodes (sim.shared._SlurmShared, compiled
            # in kernel._shared_slurm), association limits through its gate (the reference)
            report: dict = {}
            result = simulate_shared(
                sub, rt[rows], part, placement.cores[rows], placement.gpus[rows],
                placement.memory[rows], priority=priority, backfill=backfill,
                enforce_limits=enforce_limits, kernel=kernel,
                limits=assoc_limits.state_for(rows) if assoc_limits is not None and backfill == "slurm" else None,
                report=report, priority_params=policy_options.get("priority_params"),
                backfill_params=options.get("backfill_params") if backfill == "slurm" else None,
                progress=None if progress is None else (
                    lambda now, done, base=done_before: progress(now, base + done)),
            )
            for j in report.pop("refused", []):
                refused[rows[j]] = True
            for key, count in report.items():
                held[key] = held.get(key, 0) + count
        else:
            step = None if progress is None else (
                lambda now, done, base=done_before: progress(now, base + done))
            result = engine.simulate(sub, rt[rows], part.nodes, priority=priority,
                                     backfill=backfill, enforce_limits=enforce_limits, kernel=kernel,
                                     capacity=capacities[k], progress=step, **options)
            policy_rejected = False
            for key, count in result.warnings.items():
                refusal = key.startswith("rejected_") and key[len("rejected_"):] in SUBMIT_REASONS
                if key.startswith("held_") or refusal:
                    held[key] = held.get(key, 0) + count
                    policy_rejected = policy_rejected or (refusal and count > 0)
            if policy_rejected:  # refused at submission (no capacity schedule with backfill slurm)
                refused[rows] = result.rejected
            else:
                withdrawn[rows] = result.rejected
            irregular += result.warnings.get(IRREGULAR_GAP, 0)
        done_before += rows.size
        begin[rows] = result.begin
        end[rows] = result.end
        dur[rows] = result.run_time
        killed[rows] = result.killed
    rejected = placement.rejected | refused
    dur[refused] = np.nan  # (the shared-node engine gives every job its run time)
    warnings = {"rejected_oversized": int(placement.rejected.sum()), **placement.counts(), **held}
    if assoc_limits is not None:
        split = assoc_limits.split_over_pools(placement.partition)
        if split:
            warnings["limits_split_over_pools"] = split
    if withdrawn.any():
        rejected |= withdrawn
        warnings["rejected_capacity"] = int(withdrawn.sum())
        if any(c is not None and c.irregular for c in capacities):
            warnings[IRREGULAR_GAP] = irregular
    return Schedule(
        mode="simulation",
        total_nodes=machine.total_nodes,
        begin=begin,
        end=end,
        run_time=dur,
        killed=killed & ~rejected,
        rejected=rejected,
        warnings=warnings,
        machine=machine,
        placement=placement,
    )


def _with_limits(jobs: JobTable, machine: Machine, placement: Placement, limits):
    """The association limits of the jobs, and the placement with the jobs they can never let
    run rejected (after the machine's own reasons: the first reason that applies is given)."""
    import dataclasses

    from .limits import AssociationLimits
    from .machine import REJECT_REASONS

    served = placement.served if placement.served is not None else placement.partition
    cores = np.array([p.cores if p.cores is not None else 0 for p in machine.partitions] + [0],
                     dtype=np.int64)[served]
    shared = np.array([p.shared for p in machine.partitions] + [False])[served]
    own = np.asarray(jobs.cores_per_node, dtype=np.int64)
    cpus = np.where(cores > 0, cores, np.maximum(own, 1))  # whole nodes: every CPU of them
    cpus = np.where(shared, np.maximum(placement.cores, 1), cpus)  # shared nodes: the cores it asked
    assoc_limits = AssociationLimits(limits, jobs, cpus)
    jobs = _max_wall_limits(jobs, machine, assoc_limits)
    never = (assoc_limits.reason > 0) & (placement.partition >= 0)
    if not never.any():
        return jobs, placement, assoc_limits
    from .limits import STATIC_REASONS

    reason = placement.reason.copy()
    codes = np.array([0] + [1 + REJECT_REASONS.index(r) for r in STATIC_REASONS], dtype=np.int8)
    reason[never] = codes[assoc_limits.reason[never]]
    partition = placement.partition.copy()
    partition[never] = -1
    return jobs, dataclasses.replace(placement, partition=partition, reason=reason), assoc_limits


def _max_wall_limits(jobs: JobTable, machine: Machine, assoc_limits) -> JobTable:
    """Jobs that asked for no limit, in a partition without ``DefaultTime``: their MaxWall, at
    most the partition's ``MaxTime`` (``sim.limits``); the never-run test redone with them."""
    wall = assoc_limits.max_wall()
    unstated = np.asarray(jobs.time_limit_unstated, dtype=bool) & np.isfinite(wall)
    if not unstated.any():
        return jobs
    from .machine import served_names

    limits_of = {name: lim for part in machine.partitions for name, lim in part.limits.items()}
    rows = np.flatnonzero(unstated)
    names = served_names(jobs.take(rows), machine).tolist()
    limit = np.array(jobs.time_limit, dtype=np.float64, copy=True)
    changed = False
    for row, name in zip(rows.tolist(), names):
        lim = limits_of.get(name, {})
        if "default_time" in lim:
            continue  # DefaultTime came first (default_time_limits)
        value = min(float(wall[row]), float(lim.get("max_time", np.inf)))
        if value > 0 and value != limit[row]:
            limit[row] = value
            changed = True
    if not changed:
        return jobs
    assoc_limits.reason = assoc_limits._static(limit)
    return jobs.replace(time_limit=limit)


def partition_capacities(capacity: CapacitySchedule, machine: Machine) -> list[CapacitySchedule]:
    """A machine-wide capacity schedule as one per partition: every machine size and every
    number of nodes lost is shared among the partitions in proportion to their sizes, by
    largest remainder (ties to the earlier partition), so the shares add up to it exactly; a
    window that takes the whole machine takes every partition whole. The recurrence of
    maintenance is kept."""
    sizes = [p.nodes for p in machine.partitions]
    total = sum(sizes)

    def split(count: int) -> list[int]:
        share = [count * size // total for size in sizes]
        left = count - sum(share)
        by_remainder = sorted(range(len(sizes)), key=lambda k: (-(count * sizes[k] % total), k))
        for k in by_remainder[:left]:
            share[k] += 1
        return share

    steps = [split(size) for _, size in capacity.steps]
    lost = [split(count) for _, _, count in capacity.reductions]
    gaps = [split(count) for _, _, count in capacity.irregular]
    return [CapacitySchedule(
        steps=tuple((t, shares[k]) for (t, _), shares in zip(capacity.steps, steps)),
        reductions=tuple((a, b, shares[k]) for (a, b, _), shares in zip(capacity.reductions, lost)),
        recurring_from=capacity.recurring_from, period=capacity.period,
        irregular=tuple((a, b, shares[k]) for (a, b, _), shares in zip(capacity.irregular, gaps)))
        for k in range(len(sizes))]


def _rows_per_partition(partition: np.ndarray, count: int) -> list[np.ndarray]:
    """The rows of each partition's jobs, in table order (a scan per partition while there
    are few, else one stable sort)."""
    if count <= 8:
        return [np.flatnonzero(partition == k) for k in range(count)]
    order = np.argsort(partition, kind="stable")
    bounds = np.searchsorted(partition[order], np.arange(count + 1))
    return [order[bounds[k]:bounds[k + 1]] for k in range(count)]


def _compiled_exclusive(jobs, rt, machine, placement, rows_of, priority, backfill, enforce_limits,
                        kernel, policy_options, progress):
    """The exclusive partitions run in the compiled kernel straight from the table's columns:
    the jobs are checked once for the whole machine, each partition gets only the arrays the
    kernel reads (no sub-table, no second check), and its times are written into the machine's
    arrays. Bit for bit what ``engine.simulate`` gives on each partition's sub-table (same
    arrays, same ranks within the partition). Returns ``(begin, end, run_time, killed)`` with
    the exclusive partitions' rows filled, or None where ``engine.simulate`` must run them
    (the reference engine, dynamic priorities, estimates, another backfill order)."""
    from .policies import check_backfill, check_priority, is_dynamic, priority_rank
    from .policies.base import Capacity

    check_priority(priority)
    check_backfill(backfill)
    exclusive = [k for k, part in enumerate(machine.partitions) if not part.shared and rows_of[k].size]
    extended = (is_dynamic(priority) or policy_options.get("estimate", "user") != "user"
                or policy_options.get("backfill_order", "fcfs") != "fcfs"
                or policy_options.get("priority_params") is not None)
    if not exclusive or extended or kernel not in ("auto", "fast"):
        return None
    if backfill == "slurm" and any(len({machine.partitions[k].tier_of(q) for q in machine.partitions[k].queues}) > 1
                                   for k in exclusive):
        return None  # PriorityTier within a pool: the reference (kernel.slurm_supported)
    compression = policy_options.get("compression", "compress_first")
    from .policies.conservative import check_compression

    check_compression(compression)
    largest = max(machine.partitions[k].nodes for k in exclusive)
    count = sum(rows_of[k].size for k in exclusive)
    backfill_params = policy_options.get("backfill_params")
    if not engine._use_fast_kernel(kernel, backfill, Capacity(largest), None, count, backfill_params=backfill_params):
        return None
    from . import kernel as fast

    n = len(jobs)
    submit = np.asarray(jobs.submit, dtype=np.float64)
    limit = np.asarray(jobs.time_limit, dtype=np.float64)
    nodes = np.asarray(jobs.num_nodes, dtype=np.int64)
    if any(part.shared for part in machine.partitions):
        runs = np.zeros(n, dtype=bool)
        for k in exclusive:
            runs[rows_of[k]] = True
    else:
        runs = placement.partition >= 0
    engine.check_jobs(jobs, submit, limit, nodes, rt, runs)
    killed, dur = engine.held_times(rt, limit, ~runs, enforce_limits)
    begin = np.full(n, np.nan)
    end = np.full(n, np.nan)
    done_before = 0
    for k in exclusive:
        rows = rows_of[k]
        sub_submit, sub_limit, sub_nodes = submit[rows], limit[rows], nodes[rows]
        step = None if progress is None else (
            lambda now, done, base=done_before: progress(now, base + done))
        pool = dict(submit=sub_submit, limit=sub_limit, nodes=sub_nodes, dur=dur[rows],
                    rejected=np.zeros(rows.size, dtype=bool),
                    rank=priority_rank(priority, sub_submit, sub_limit, sub_nodes),
                    total=machine.partitions[k].nodes, progress=step)
        if backfill == "slurm":
            begin[rows], end[rows] = fast.run_slurm(**pool, users=np.asarray(jobs.user_code)[rows],
                                                    backfill_params=backfill_params)
        else:
            begin[rows], end[rows] = fast.run_events(**pool, backfill=backfill, enforce_limits=bool(enforce_limits),
                                                     compression=compression)
        done_before += rows.size
    return begin, end, dur, killed


def replay_machine(jobs: JobTable, machine: Machine) -> Schedule:
    """The recorded history on ``machine``: times as recorded, for every job (a replay never
    rejects a job that ran). Over-commit is counted per partition and resource in
    ``warnings['replay_overcommit/<partition>/<resource>']``: the distinct instants after which
    the jobs recorded in a partition use more of a resource than its nodes have (cores, GPUs and
    memory summed over the partition: a replay does not know which node a job ran on), and jobs
    that fit no partition in ``warnings['replay_rejected_<reason>']``."""
    if machine.is_single_pool:
        return engine.replay(jobs, machine.total_nodes)
    whole = engine.replay(jobs, machine.total_nodes)
    placement = place_jobs(jobs, machine)
    warnings = dict(whole.warnings)
    warnings.pop("replay_overcommit_instants", None)
    total_over = 0
    for k, part in enumerate(machine.partitions):
        rows = np.flatnonzero(placement.partition == k)
        if rows.size == 0:
            continue
        for resource in ("nodes", "cores", "gpus", "memory"):
            capacity = part.capacity(resource)
            if capacity is None:
                continue
            use = _usage_per_job(jobs, placement, rows, resource)
            over = engine._overcommit_instants(whole.begin[rows], whole.end[rows], use, capacity)
            if over:
                warnings[f"replay_overcommit/{part.name}/{resource}"] = over
                total_over += over if resource == "nodes" else 0
    warnings["replay_overcommit_instants"] = total_over
    for key, count in placement.counts().items():
        warnings[f"replay_{key}"] = count
    return Schedule(
        mode="replay", total_nodes=machine.total_nodes, begin=whole.begin, end=whole.end,
        run_time=whole.run_time, killed=whole.killed, rejected=whole.rejected, warnings=warnings,
        machine=machine, placement=placement,
    )


def _usage_per_job(jobs: JobTable, placement: Placement, rows: np.ndarray, resource: str) -> np.ndarray:
    nodes = np.asarray(jobs.num_nodes, dtype=np.float64)[rows]
    if resource == "nodes":
        return nodes
    return nodes * getattr(placement, resource)[rows].astype(np.float64)
