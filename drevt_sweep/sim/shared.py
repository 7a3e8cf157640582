"""Shared nodes: jobs packed onto a partition's nodes by cores, GPUs and memory.

The reference implementation (pure Python; ``sim.kernel.shared`` is the compiled version, bit
for bit the same; a dynamic priority runs there too except under ``conservative`` and
``slurm``, which run it here; ``slurm`` with static priorities
``sim.kernel._shared_slurm``, unless association limits keep it here). A job asks for ``k``
nodes, each with ``c`` cores, ``g`` GPUs and ``m`` MiB; it runs on ``k`` distinct nodes that
each have that
much free. The event loop is the engine's (completions, then arrivals, then one scheduling
pass; the scheduler plans with time limits only; limits enforced by killing).

Memory is packed in whole KiB (requests and node sizes rounded up), so every resource is an
integer count and no rounding order can differ between implementations.

Placement rule: **first fit by node index**: a job starting now takes the ``k`` lowest-indexed
nodes on which its per-node request fits; under ``slurm``, Slurm's cons_tres best fit
(``cons_tres_nodes``) for a job starting now, first fit for a reservation.

Backfilling, per resource (Lifka 1995; Mu'alem & Feitelson 2001, generalised to packed
nodes):

* ``none``: start jobs in priority order until the first that does not fit.
* ``easy``: as ``none``, then the first job that does not fit (the head) gets a reservation at
  the *shadow time*: the earliest estimated end of running jobs (begin + limit; an overdue job
  right after now) after which the head fits, by first fit, on the nodes as they will be then.
  A later job starts now if it fits now and ends by the shadow time, or if the head still fits
  at the shadow time with this job's request taken from the nodes it takes now (its "extra
  resources": cores, GPUs and memory the head does not need at the shadow time).
  ``easy_drevt``: no extra-resources rule, and the time test is strict (``<``).
* ``conservative``: every waiting job holds a reservation (a start time and its nodes) at the
  earliest time at which ``k`` nodes can each hold its request for its whole limit, given the
  running jobs (until their estimated ends) and every other reservation; new jobs are placed
  in priority order. When a job ends before its estimated end (and at every pass when limits
  are not enforced), every waiting job, in priority order, is taken out and placed again at its
  earliest fit, repeatedly until nothing moves (compression), so with limits enforced no
  reservation ever moves later. A job starts when its reservation is due, on its nodes.
* ``slurm``: Slurm's main scheduler and backfill cycle with its ``bf_*`` limits, as
  ``policies.slurm_backfill`` runs them on whole nodes, planned on the conservative planner's
  timeline: running jobs hold their cores, GPUs and memory, a backfill reservation holds its
  nodes whole, as in Slurm's backfill map (``_SlurmShared``).

**Dynamic priorities** (``multifactor``: Slurm's ``priority/multifactor`` with classic
fair-share or Fair Tree; ``wfp3``, ``unicef``): the same semantics as the whole-node reference
engine (``engine._run_events``, ``policies.dynamic``): the waiting queue is kept sorted by
``(key, FCFS rank)``; a job gets its key at submission; the ticks ``t0 + k * calc_period``
(Slurm's ``PriorityCalcPeriod``) are events while jobs wait, at which usage is accrued and
decayed and every waiting job is re-keyed before the pass (``wfp3``/``unicef``: before every
pass). Under ``conservative`` the reservations stand when the order changes (as on whole
nodes); the new order decides who is placed and compressed first.

Fair-share usage on shared nodes is charged as Slurm charges it: a job's usage per second is
its billing TRES, which without ``TRESBillingWeights`` is the number of CPUs allocated to it
("If TRESBillingWeights is not defined then the job is billed against the total number of
allocated CPUs", slurm.schedmd.com/tres.html; the decayed usage of priority_multifactor.html
is that billing times elapsed time). Here a job holds ``nodes x cores`` CPUs (its per-node
cores on each of its nodes, at least one per node, as Slurm allocates at least one CPU), so a
job on 4 of a node's 32 cores is charged 4 CPU-seconds per second, an eighth of what a job
holding the whole node is charged. Usage is thus CPU-seconds on shared pools (node-seconds on
whole-node pools, where the two are proportional). The job-size factor is Slurm's mean of
nodes / the pool's nodes and CPUs / the pool's CPUs (``policies.multifactor``). Not modelled:
``TRESBillingWeights`` (memory or GPUs in the bill).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..jobs import JobTable
from .engine import PROGRESS_EVERY_EVENTS
from .machine import Partition
from .policies import check_backfill, check_priority, is_dynamic, priority_rank
from .policies.dynamic import PriorityInputs
from .policies.registry import DYNAMIC_PRIORITIES

INF = math.inf
SHARED_BACKFILLS = ("none", "easy", "easy_drevt", "conservative", "slurm")


@dataclass(frozen=True, eq=False)
class SharedSchedule:
    """Times per job (aligned with the partition's table) and the nodes each job ran on."""

    begin: np.ndarray
    end: np.ndarray
    run_time: np.ndarray
    killed: np.ndarray
    node_start: np.ndarray  # int64, len n + 1: job i ran on node_list[node_start[i]:node_start[i+1]]
    node_list: np.ndarray  # int64 node indices within the partition

    def nodes_of(self, job: int) -> list[int]:
        return self.node_list[self.node_start[job]:self.node_start[job + 1]].tolist()


def simulate_shared(jobs: JobTable, run_time: np.ndarray, partition: Partition, cores: np.ndarray,
                    gpus: np.ndarray, memory: np.ndarray, *, priority: str = "fcfs",
                    backfill: str = "easy", enforce_limits: bool = True, kernel: str = "auto",
                    on_reservation=None, limits=None, report: dict | None = None,
                    progress=None, priority_params: dict | None = None,
                    backfill_params: dict | None = None) -> SharedSchedule:
    """Schedule every job of ``jobs`` (all served by ``partition`` and fitting one of its
    nodes: ``machine.place_jobs`` rejects the others) with per-node requests ``cores``,
    ``gpus`` and ``memory``. ``kernel``: ``"reference"`` (this module), ``"fast"`` (the compiled
    kernel) or ``"auto"`` (the compiled kernel once loading numba pays off).

    ``limits``: Slurm's association/QOS limits (a ``sim.limits.LimitState`` of these jobs; the
    reference engine runs them): a submission they refuse is never queued (NaN times, listed
    in ``report["refused"]``), a job they hold is passed over in the queue pass (neither the
    head nor backfilled) while held; ``report`` receives the counts (``held_<reason>``,
    ``rejected_<reason>``) as ``engine.simulate``'s warnings. ``progress(now, jobs_done)``, if
    given, is called every few thousand events (the compiled kernel) or every
    ``engine.PROGRESS_EVERY_EVENTS`` events (the reference), as ``engine.simulate`` does; an
    exception from it (Ctrl-C) stops the run there. ``priority_params``: a dynamic priority's
    parameters (``multifactor``'s weights etc.; see the module docstring). ``backfill_params``:
    backfill ``slurm``'s settings (``policies.slurm_backfill.DEFAULTS``; ``tier``: each job's
    partition ``PriorityTier``, on the reference engine only)."""
    check_priority(priority)
    check_backfill(backfill)
    if backfill not in SHARED_BACKFILLS:
        raise ConfigError(f"backfill policy {backfill!r} has no shared-node version; "
                          f"choose one of: {', '.join(SHARED_BACKFILLS)}")
    n = len(jobs)
    submit = np.asarray(jobs.submit, dtype=np.float64)
    limit = np.asarray(jobs.time_limit, dtype=np.float64)
    nodes = np.asarray(jobs.num_nodes, dtype=np.int64)
    rt = np.asarray(run_time, dtype=np.float64)
    _check_inputs(jobs, submit, limit, nodes, rt, partition, cores, gpus, memory)
    if enforce_limits:
        killed = rt > limit
        dur = np.where(killed, limit, rt)
    else:
        killed = np.zeros(n, dtype=bool)
        dur = rt.copy()
    rank = priority_rank(priority, submit, limit, nodes)
    request = (np.asarray(cores, dtype=np.int64), np.asarray(gpus, dtype=np.int64),
               _kib(np.asarray(memory, dtype=np.float64)))
    dynamic = _dynamic_priority(jobs, priority, priority_params, submit, limit, nodes, request[0],
                                partition.nodes, partition.cores)
    slurm = None
    if backfill == "slurm":
        slurm = _SlurmShared(partition, backfill_params, on_reservation)
    elif backfill_params:
        raise ConfigError(f"backfill {backfill!r} takes no parameters, got {', '.join(map(str, backfill_params))}")
    if _use_kernel(kernel, backfill, on_reservation, n, dynamic, slurm, limits is not None):
        machine = (partition.nodes, *node_resources(partition))
        if slurm is not None:
            from .kernel._shared_slurm import run_shared_slurm

            if slurm.tier is not None:  # the queue by (-PriorityTier, rank): static too
                order = np.lexsort((rank, -np.asarray(slurm.tier, dtype=np.float64)))
                rank = np.empty(n, np.int64)
                rank[order] = np.arange(n)
            begin, end, node_start, node_list = run_shared_slurm(
                submit, limit, nodes, dur, rank, request, machine, jobs.user_code, backfill_params,
                progress=progress)
        else:  # (a dynamic priority: none / easy / easy_drevt, ``_use_kernel``)
            from .kernel import shared as fast

            begin, end, node_start, node_list = fast.run_shared(
                submit, limit, nodes, dur, rank, request, machine, backfill, bool(enforce_limits),
                progress=progress, dynamic=dynamic)
    else:
        if slurm is not None:
            slurm.plan_jobs(limit.tolist(), nodes.tolist(), [r.tolist() for r in request],
                            np.asarray(jobs.user_code, dtype=np.int64).tolist())
        gate = _LimitGate(limits, rank.tolist()) if limits is not None else None
        begin, end, placed = _run_events(submit.tolist(), limit.tolist(), nodes.tolist(), dur.tolist(),
                                         rank, [r.tolist() for r in request], partition, backfill,
                                         bool(enforce_limits), on_reservation, gate, progress, dynamic, slurm)
        if gate is not None and report is not None:
            report.update(gate.counts())
            report["refused"] = sorted(gate.refused)
        node_start = np.zeros(n + 1, dtype=np.int64)
        node_start[1:] = np.cumsum([len(p) for p in placed])
        node_list = np.array([i for p in placed for i in p], dtype=np.int64)
        begin, end = np.array(begin, dtype=np.float64), np.array(end, dtype=np.float64)
    return SharedSchedule(begin, end, dur, killed, node_start, node_list)


def _dynamic_priority(jobs, priority, params, submit, limit, nodes, cores, total, node_cores):
    """The dynamic priority object (None for a static priority), charged per CPU held; its
    job-size factor weighs the CPUs asked for beside the nodes (``policies.multifactor``)."""
    if not is_dynamic(priority):
        if params:
            raise ConfigError(f"priority {priority!r} takes no parameters, got {', '.join(map(str, params))}")
        return None
    inputs = PriorityInputs(
        submit=submit, time_limit=limit, num_nodes=nodes, total_nodes=int(total),
        queue_code=np.asarray(jobs.queue_code), queue_names=tuple(jobs.queue_names),
        user_code=np.asarray(jobs.user_code), user_names=tuple(jobs.user_names),
        group_code=np.asarray(jobs.group_code), group_names=tuple(jobs.group_names),
        t0=float(submit.min()) if submit.size else 0.0,
        qos_code=np.asarray(jobs.qos_code), qos_names=tuple(jobs.qos_names),
        charge=nodes * np.maximum(cores, 1),
        cpus=nodes * np.maximum(cores, 1), total_cpus=int(total) * int(node_cores),
    )
    return DYNAMIC_PRIORITIES[priority](inputs, **dict(params or {}))


def _use_kernel(kernel: str, backfill: str, on_reservation, n: int, dynamic=None, slurm=None,
                limits: bool = False) -> bool:
    """Whether the compiled kernel runs (``kernel``: see ``simulate_shared``). On the reference
    only, which ``kernel='fast'`` refuses: ``slurm`` (``slurm``: the run's ``_SlurmShared``, or
    None) with association limits (``limits``), and a dynamic priority under ``slurm`` or
    ``conservative``. Limits with another backfill (a gate in the queue pass) run on the
    reference too."""
    import os

    if kernel == "auto":
        kernel = os.environ.get("DREVT_KERNEL", "auto") or "auto"
    if kernel == "reference" or on_reservation is not None:
        if kernel == "fast" and on_reservation is not None:
            raise ConfigError("kernel='fast' cannot call an on_reservation hook")
        return False
    unsupported = None
    if limits:
        if slurm is None:
            return False  # (a gate in the queue pass: the reference, as before)
        unsupported = "backfill 'slurm' with association/QOS limits"
    elif dynamic is not None and backfill in ("conservative", "slurm"):
        unsupported = f"backfill {backfill!r} with a dynamic priority"
    if unsupported is not None:
        if kernel == "fast":
            raise ConfigError(f"{unsupported} has no compiled shared-node version; use kernel 'auto' or "
                              "'reference'")
        return False
    from . import kernel as fast

    # the shared-node reference costs about 100x the pool reference per job (1.4 ms on Kabre);
    # Slurm's on shared nodes about what it costs on whole nodes (0.4 ms per job)
    if kernel == "auto" and not fast.worth_loading(backfill, n if slurm is not None else 100 * n):
        return False
    return fast.load(warn=kernel == "auto") is not None


def _kib(mib):
    """MiB -> whole KiB, rounded up (see the module docstring)."""
    return np.ceil(np.asarray(mib, dtype=np.float64) * 1024.0).astype(np.int64)


def node_resources(partition: Partition) -> tuple[int, int, int]:
    """A node's (cores, GPUs, KiB of memory); resources not modelled are 0 (nobody asks)."""
    memory = int(_kib(partition.memory)) if partition.memory is not None else 0
    return partition.cores, partition.gpus or 0, memory


def _check_inputs(jobs, submit, limit, nodes, rt, partition, cores, gpus, memory) -> None:
    n = len(jobs)
    if rt.shape != (n,):
        raise ValueError(f"run_time has shape {rt.shape}, expected ({n},) to match the job table")
    for bad, what in (
        (~np.isfinite(submit), "have no valid submit time"),
        (~(np.isfinite(limit) & (limit > 0)), "have no valid time limit (must be finite and > 0)"),
        (~(np.isfinite(rt) & (rt >= 0)), "have no valid run time (must be finite and >= 0)"),
        ((nodes < 1) | (nodes > partition.nodes), f"do not fit partition {partition.name!r}'s node count"),
        ((cores < 0) | (cores > partition.cores), f"ask for more cores than a node of {partition.name!r} has"),
        ((gpus < 0) | (gpus > (partition.gpus or 0)), f"ask for more GPUs than a node of {partition.name!r} has"),
        (~(memory >= 0) | (memory > (partition.memory if partition.memory is not None else 0.0)),
         f"ask for more memory than a node of {partition.name!r} has"),
    ):
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ConfigError(f"{int(bad.sum())} job(s) {what}, first at row {row} "
                              f"(line {int(jobs.source_line[row])})")


class _Nodes:
    """Free cores/GPUs/memory per node, with first-fit placement."""

    __slots__ = ("cores", "gpus", "memory")

    def __init__(self, partition: Partition) -> None:
        count = partition.nodes
        cores, gpus, memory = node_resources(partition)
        self.cores = [cores] * count
        self.gpus = [gpus] * count
        self.memory = [memory] * count

    def copy(self) -> _Nodes:
        other = _Nodes.__new__(_Nodes)
        other.cores, other.gpus, other.memory = self.cores[:], self.gpus[:], self.memory[:]
        return other

    def first_fit(self, k: int, c: int, g: int, m: int) -> list[int] | None:
        """The ``k`` lowest-indexed nodes that each hold (c, g, m), or None."""
        got = []
        fc, fg, fm = self.cores, self.gpus, self.memory
        for i in range(len(fc)):
            if fc[i] >= c and fg[i] >= g and fm[i] >= m:
                got.append(i)
                if len(got) == k:
                    return got
        return None

    def slurm_fit(self, k: int, c: int, g: int, m: int, allowed=None) -> list[int] | None:
        """The nodes Slurm's cons_tres gives a job starting now (``cons_tres_nodes``) among the
        nodes that each hold (c, g, m) (and are in ``allowed``, if given), or None."""
        fc, fg, fm = self.cores, self.gpus, self.memory
        usable = [fc[i] >= c and fg[i] >= g and fm[i] >= m and (allowed is None or i in allowed)
                  for i in range(len(fc))]
        if c < 1:  # (Slurm allocates at least one CPU: no such job there) first fit
            got = [i for i, ok in enumerate(usable) if ok][:k]
            return got if len(got) == k else None
        return cons_tres_nodes(usable, fc, k, c)

    def add(self, where: list[int], c: int, g: int, m: int, sign: int) -> None:
        fc, fg, fm = self.cores, self.gpus, self.memory
        for i in where:
            fc[i] += sign * c
            fg[i] += sign * g
            fm[i] += sign * m


def cons_tres_nodes(usable: list[bool], free_cores: list[int], k: int, c: int) -> list[int] | None:
    """The ``k`` nodes Slurm's ``select/cons_tres`` picks for a job of ``c`` cores per node
    among the ``usable`` ones (those that hold its request), by ``_eval_nodes`` in
    ``src/plugins/select/cons_tres/job_test.c`` (equal node weights, no topology, no
    ``bf_busy_nodes``/``LLN``; reference only): the usable nodes form runs of consecutive
    indices, each with its free cores; the first run that has enough nodes and cores with the
    *fewest* free cores is chosen (if none has enough, the one with the most, and the search
    goes on among the others for the rest); within it, a job needing one more node gets the
    node with the fewest free cores that hold it (the first such on a tie), else the nodes are
    taken from the run's start. First fit by index is the same when the usable nodes form one
    run and the job needs several nodes of it, or when the lowest usable node is also the
    tightest. None if fewer than ``k`` nodes are usable."""
    runs = []  # [first, last, free cores, nodes] of each run of consecutive usable nodes
    i, n = 0, len(usable)
    while i < n:
        if not usable[i]:
            i += 1
            continue
        first, cpus = i, 0
        while i < n and usable[i]:
            cpus += free_cores[i]
            i += 1
        runs.append([first, i - 1, cpus, i - first])
    need, left = k * c, k  # Slurm's rem_cpus (min_cpus) and rem_nodes
    got: list[int] = []
    while left > 0:
        best, best_enough = None, False
        for run in runs:
            if run[3] == 0:
                continue
            enough = run[2] >= need and run[3] >= left
            if (best is None or (enough and not best_enough) or (enough and run[2] < best[2])
                    or (not enough and run[2] > best[2])):
                best, best_enough = run, enough
        if best is None:
            return None
        nodes = range(best[0], best[1] + 1)
        if left == 1:  # "try best fit single node"
            pick = None
            for x in nodes:
                if free_cores[x] >= need and (pick is None or free_cores[x] < free_cores[pick]):
                    pick = x
                    if free_cores[x] == need:
                        break
            if pick is not None:
                nodes = [pick]
        for x in nodes:
            if left == 0:
                break
            if left == 1 and free_cores[x] < need:
                continue
            need -= min(free_cores[x], max(need - (left - 1), c))  # _cpus_to_use
            got.append(x)
            left -= 1
        best[3] = 0
    return sorted(got)


class _LimitGate:
    """Association/QOS limits (``simulate_shared``'s ``limits``): in Slurm's backfill (``_SlurmShared``,
    as on whole nodes) or, with another backfill, in the queue pass (a held job passed over)."""

    def __init__(self, state, rank) -> None:
        self.state = state
        self.held: dict[str, set] = {}
        self.rejected: dict[str, int] = {}
        self.refused: set[int] = set()

    def submit(self, j: int) -> bool:
        reason = self.state.submit(j)
        if reason is None:
            return True
        self.refused.add(j)
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        return False

    def blocked(self, j: int) -> bool:
        """Held by a running-jobs or TRES limit now (counted)."""
        state = self.state
        reason = (state.pre(j) if state.gated_pre[j] else None) or (state.post(j) if state.gated_post[j] else None)
        if reason is None:
            return False
        self.held.setdefault(reason, set()).add(j)
        return True

    def counts(self) -> dict[str, int]:
        out = {f"held_{reason}": len(jobs) for reason, jobs in sorted(self.held.items())}
        out.update({f"rejected_{reason}": count for reason, count in sorted(self.rejected.items())})
        return out


def _run_events(submit, limit, nodes, dur, rank, request, partition, backfill, enforce, hook, gate=None,
                progress=None, dyn=None, slurm=None):
    """The event loop (as ``engine._run_events``), on per-node free resources. With a dynamic
    priority ``dyn`` the queue is sorted by ``(key, FCFS rank)`` and its ticks are events while
    jobs wait, in ``engine._run_events``' order of calls (``policies.dynamic``)."""
    n = len(submit)
    cores, gpus, memory = request
    rank_l = rank.tolist()
    fcfs = rank_l
    if dyn is not None:
        rank_l = [None] * n  # (key, FCFS rank) of each waiting job: the queue's sort key
    order = sorted(range(n), key=lambda j: (submit[j], j))
    begin = [math.nan] * n
    end = [math.nan] * n
    est_end = [math.nan] * n
    placed: list[list[int]] = [[] for _ in range(n)]
    free = _Nodes(partition)
    running: list[tuple[float, int]] = []  # sorted (estimated end, job)
    completions: list[tuple[float, int]] = []
    queue: list[int] = []  # waiting jobs in priority order
    qrank: list[int] = []
    planner = _Conservative(partition, limit, nodes, request, hook) if backfill == "conservative" else None

    def start(j, where, now):
        begin[j] = now
        end[j] = now + dur[j]
        est_end[j] = now + limit[j]
        placed[j] = where
        if dyn is not None:
            dyn.start(j, now)
        if planner is not None:  # (a queue pass has taken the resources already)
            if any(free.cores[i] < cores[j] or free.gpus[i] < gpus[j] or free.memory[i] < memory[j]
                   for i in where):
                raise RuntimeError(f"policy {backfill!r} over-committed a node at t={now}")
            free.add(where, cores[j], gpus[j], memory[j], -1)
        insort(running, (est_end[j], j))
        heapq.heappush(completions, (end[j], j))

    a = 0
    events = 0
    finished = 0
    now = -INF
    # (slurm: its cycles are events while jobs wait, as in engine._run_events)
    while a < n or completions or (slurm is not None and queue and slurm.wake_at() < INF):
        events += 1
        if progress is not None and events % PROGRESS_EVERY_EVENTS == 0:
            progress(now, finished)
        t_arr = submit[order[a]] if a < n else INF
        t_end = completions[0][0] if completions else INF
        now = t_arr if t_arr < t_end else t_end
        if slurm is not None and queue:
            wake = slurm.wake_at()
            if wake < now:
                now = wake
        if dyn is not None:
            if queue and dyn.next_tick < now:
                now = dyn.next_tick
            dyn.advance(now)  # every tick <= now
        freed_early = False
        completed = False
        arrived = False
        while completions and completions[0][0] <= now:
            _, j = heapq.heappop(completions)
            del running[bisect_left(running, (est_end[j], j))]
            free.add(placed[j], cores[j], gpus[j], memory[j], +1)
            freed_early |= end[j] < est_end[j]
            completed = True
            finished += 1
            if gate is not None:
                gate.state.end(j)
            if dyn is not None:
                dyn.end(j, now)
        while a < n and submit[order[a]] <= now:
            j = order[a]
            a += 1
            if gate is not None and not gate.submit(j):
                continue  # refused at submission: never queued
            arrived = True
            if dyn is not None:
                rank_l[j] = (dyn.key(now, j), fcfs[j])
            pos = bisect_left(qrank, rank_l[j])
            queue.insert(pos, j)
            qrank.insert(pos, rank_l[j])
        if not queue:
            continue
        if dyn is not None and dyn.refresh_due():  # a dynamic priority re-orders the queue
            for j, key in zip(queue, dyn.keys(now, queue)):
                rank_l[j] = (key, fcfs[j])
            queue.sort(key=rank_l.__getitem__)
            qrank[:] = [rank_l[j] for j in queue]
        if planner is not None:
            due = planner.plan(now, queue, running, est_end, placed, freed_early or not enforce)
        elif slurm is not None:
            due = slurm.select(now, queue, free, running, placed, arrived or completed, gate)
        else:
            due = _queue_pass(now, queue, free, running, placed, nodes, limit, request, backfill, hook, gate)
        for j, where in due:
            start(j, where, now)
        if due:
            started = {j for j, _ in due}
            keep = [i for i, j in enumerate(queue) if j not in started]
            queue[:] = [queue[i] for i in keep]
            qrank[:] = [qrank[i] for i in keep]
    if queue:
        raise RuntimeError(f"shared-node engine stalled with {len(queue)} job(s) waiting")
    return begin, end, placed


def _queue_pass(now, queue, free, running, placed, nodes, limit, request, backfill, hook, gate=None):
    """none / easy / easy_drevt: the jobs to start now and their nodes, in start order (their
    resources are taken from ``free`` here). With ``gate`` (association limits) a held job is
    passed over: neither started nor the head."""
    cores, gpus, memory = request
    due = []
    k = len(queue)  # the head's position (len: none)
    for i, j in enumerate(queue):
        if gate is not None and gate.blocked(j):
            continue
        where = free.first_fit(nodes[j], cores[j], gpus[j], memory[j])
        if where is None:
            k = i
            break
        free.add(where, cores[j], gpus[j], memory[j], -1)
        due.append((j, where))
        if gate is not None:
            gate.state.start(j)
    if k < len(queue) and backfill != "none":
        head = queue[k]
        later = [(now + limit[j], j, where) for j, where in due]
        shadow, at_shadow = _shadow(now, head, free, running, later, placed, nodes, request)
        if hook is not None:
            hook(now, head, shadow)
        strict = backfill == "easy_drevt"
        use_extra = backfill == "easy"
        for j in queue[k + 1:]:
            if gate is not None and gate.blocked(j):
                continue
            where = free.first_fit(nodes[j], cores[j], gpus[j], memory[j])
            if where is None:
                continue
            e = now + limit[j]
            if e < shadow or (e == shadow and not strict):
                pass
            elif use_extra:
                at_shadow.add(where, cores[j], gpus[j], memory[j], -1)
                if at_shadow.first_fit(nodes[head], cores[head], gpus[head], memory[head]) is None:
                    at_shadow.add(where, cores[j], gpus[j], memory[j], +1)
                    continue
            else:
                continue
            free.add(where, cores[j], gpus[j], memory[j], -1)
            due.append((j, where))
            if gate is not None:
                gate.state.start(j)
    return due


def _shadow(now, head, free, running, started, placed, nodes, request):
    """The head's shadow time and the nodes' free resources then (see the module docstring)."""
    cores, gpus, memory = request
    future = free.copy()
    soon = math.nextafter(now, INF)
    releases = sorted([(e if e > now else soon, j, placed[j]) for e, j in running]
                      + [(e, j, where) for e, j, where in started])
    i = 0
    while i < len(releases):
        t = releases[i][0]
        while i < len(releases) and releases[i][0] == t:
            _, j, where = releases[i]
            future.add(where, cores[j], gpus[j], memory[j], +1)
            i += 1
        if future.first_fit(nodes[head], cores[head], gpus[head], memory[head]) is not None:
            return t, future
    raise RuntimeError("the head job never fits its partition (it should have been rejected)")


class _Conservative:
    """Reservations (start, nodes) of the waiting jobs, kept between passes."""

    def __init__(self, partition, limit, nodes, request, hook):
        self.partition = partition
        self.limit = limit
        self.nodes = nodes
        self.request = request
        self.hook = hook
        self.reserved: dict[int, tuple[float, list[int]]] = {}

    def plan(self, now, queue, running, est_end, placed, replan):
        limit, reserved = self.limit, self.reserved
        if any(s < now for s, _ in reserved.values()):
            replan = True
            for j in [j for j, (s, _) in reserved.items() if s < now]:
                del reserved[j]
        if replan or len(reserved) < len(queue):
            soon = math.nextafter(now, INF)
            timeline = _Timeline(self.partition, self.request)
            for e, j in running:
                timeline.add(j, -INF, e if e > now else soon, placed[j])
            for j, (s, where) in reserved.items():
                timeline.add(j, s, s + limit[j], where)
            for _ in range(1000 + 100 * len(queue)):
                moved = False
                for j in queue:
                    old = reserved.get(j)
                    if old is not None:
                        if not replan:
                            continue
                        timeline.remove(j)
                    start, where = timeline.earliest_fit(j, now, self.nodes[j], limit[j])
                    timeline.add(j, start, start + limit[j], where)
                    reserved[j] = (start, where)
                    if old is None or start != old[0]:
                        moved = old is not None or moved
                        if self.hook is not None:
                            self.hook(now, j, start)
                if not (replan and moved):
                    break
            else:
                raise RuntimeError(f"conservative plan did not converge at t={now}")
        due = [(j, reserved[j][1]) for j in queue if reserved[j][0] == now]
        for j, _ in due:
            del reserved[j]
        return due


class _Timeline:
    """Per node: the intervals ``[start, end)`` during which jobs hold (c, g, m) of it -- or, for
    an interval added ``whole``, all of it -- and its usage as a step function, built when first
    asked and then updated in place as intervals come and go (rebuilding it after every change
    was about half of the shared conservative reference's time)."""

    def __init__(self, partition: Partition, request):
        self.partition = partition
        self.request = request
        self.capacity = node_resources(partition)
        self.per_node: list[list[tuple[float, float, int]]] = [[] for _ in range(partition.nodes)]
        self.steps: list = [None] * partition.nodes  # per node: _steps's lists, or None (not built)
        self.where: dict[int, list[int]] = {}
        self.ends: list[float] = []  # sorted interval ends (candidate start times)
        self.whole: set[int] = set()  # jobs whose intervals hold their nodes whole

    def _held(self, j):
        """What job ``j``'s interval holds of each of its nodes: its request, or for a ``whole``
        interval one core more than the node has, so nothing fits beside it, not even a job
        that asks for no cores."""
        if j in self.whole:
            cap_c, cap_g, cap_m = self.capacity
            return cap_c + 1, cap_g, cap_m
        return self.request[0][j], self.request[1][j], self.request[2][j]

    def add(self, j, start, stop, where, whole=False):
        if whole:
            self.whole.add(j)
        held = self._held(j)
        for i in where:
            self.per_node[i].append((start, stop, j))
            steps = self.steps[i]
            if steps is not None and start < stop:
                _change_steps(steps, start, stop, held, 1)
        self.where[j] = where
        insort(self.ends, stop)

    def remove(self, j):
        held = self._held(j)
        self.whole.discard(j)
        where = self.where.pop(j)
        stop = None
        for i in where:
            row = self.per_node[i]
            for x, item in enumerate(row):
                if item[2] == j:
                    start, stop = item[0], item[1]
                    del row[x]
                    break
            steps = self.steps[i]
            if steps is not None and start < stop:
                _change_steps(steps, start, stop, held, -1)
        del self.ends[bisect_left(self.ends, stop)]

    def _steps(self, i):
        """Node ``i``'s usage: breakpoints (sorted: the ends of its non-empty intervals), how many
        interval ends sit at each (a breakpoint goes when none does), and the cores, GPUs and
        memory held from each to the next (an interval holds ``[start, end)``). Integer sums:
        exact, in any order."""
        delta: dict = {}
        for s, e, j in self.per_node[i]:
            if s < e:
                c, g, m = self._held(j)
                for t, sign in ((s, 1), (e, -1)):
                    d = delta.get(t)
                    if d is None:
                        d = delta[t] = [0, 0, 0, 0]
                    d[0] += sign * c
                    d[1] += sign * g
                    d[2] += sign * m
                    d[3] += 1
        times = sorted(delta)
        count, uc, ug, um = [], [], [], []
        c = g = m = 0
        for t in times:
            d = delta[t]
            c, g, m = c + d[0], g + d[1], m + d[2]
            count.append(d[3])
            uc.append(c)
            ug.append(g)
            um.append(m)
        self.steps[i] = steps = (times, count, uc, ug, um)
        return steps

    def _fit_window(self, i, t, duration, c, g, m):
        """Where node ``i`` holds (c, g, m) for ``duration`` from ``t`` on: the earliest start
        ``s >= t`` at which it holds them throughout ``[s, s + duration)`` (``t`` or one of its
        breakpoints; INF if none), and the start of its first segment after ``s`` that lacks them
        (INF if none): a start ``u >= s`` fits while ``u + duration`` is not after it.

        A window is checked at its start and at every breakpoint inside (a step function's
        maximum is at one of them); when a segment lacks the resources, no start before its end
        fits (its window still covers that segment, as it starts later and ends later), so the
        walk goes on from there."""
        times, _, uc, ug, um = self.steps[i] or self._steps(i)
        cap_c, cap_g, cap_m = self.capacity
        if cap_c < c or cap_g < g or cap_m < m:
            return INF, INF
        n = len(times)
        x = bisect_right(times, t) - 1
        if x < 0:  # nothing held at t
            x = 0
        s, stop = t, t + duration
        while x < n and times[x] < stop:
            if cap_c - uc[x] < c or cap_g - ug[x] < g or cap_m - um[x] < m:
                if x + 1 == n:
                    return INF, INF
                s = times[x + 1]
                stop = s + duration
            x += 1
        while x < n:
            if cap_c - uc[x] < c or cap_g - ug[x] < g or cap_m - um[x] < m:
                return s, times[x]
            x += 1
        return s, INF

    def free_at(self, i, t):
        """Node ``i``'s free cores, GPUs and memory at instant ``t``."""
        times, _, uc, ug, um = self.steps[i] or self._steps(i)
        cap_c, cap_g, cap_m = self.capacity
        x = bisect_right(times, t) - 1
        if x < 0:
            return cap_c, cap_g, cap_m
        return cap_c - uc[x], cap_g - ug[x], cap_m - um[x]

    def fitting(self, j, t, duration, among) -> set[int]:
        """The nodes of ``among`` that hold job ``j``'s request throughout ``[t, t + duration)``."""
        cores, gpus, memory = self.request
        c, g, m = cores[j], gpus[j], memory[j]
        return {i for i in among if self._fit_window(i, t, duration, c, g, m)[0] == t}

    def earliest_fit(self, j, now, k, duration):
        """The earliest start >= now (now or an interval end) with ``k`` nodes that each hold
        the job's request throughout its limit, and those nodes (lowest indices first).

        Each node keeps its last ``_fit_window`` (computed at an earlier candidate ``u``): no
        start in ``[u, fit_from)`` fits, and a start ``t >= fit_from`` with ``t + duration`` not
        after ``fit_until`` does; only outside both is the node walked again, from ``t``. After
        a candidate, the candidates before the ``k``-th smallest ``fit_from`` are passed over:
        fewer than ``k`` nodes can fit there (on busy queues, most candidates)."""
        cores, gpus, memory = self.request
        c, g, m = cores[j], gpus[j], memory[j]
        nodes = range(self.partition.nodes)
        fit_from = [-INF] * len(nodes)
        fit_until = [-INF] * len(nodes)
        ends = self.ends
        x = bisect_right(ends, now)
        t = now
        while True:
            got = []
            stop = t + duration
            for i in nodes:
                if fit_from[i] > t:
                    continue
                if stop > fit_until[i]:
                    fit_from[i], fit_until[i] = self._fit_window(i, t, duration, c, g, m)
                    if fit_from[i] > t:
                        continue
                got.append(i)
                if len(got) == k:
                    return t, got
            after = sorted(fit_from)[k - 1]
            x = bisect_left(ends, after, x) if after > t else bisect_right(ends, t, x)
            if x == len(ends) or ends[x] == INF:
                break
            t = ends[x]
        raise RuntimeError("a job never fits its partition (it should have been rejected)")


def _change_steps(steps, start, stop, held, sign):
    """Add (``sign`` 1) or take back (-1) an interval ``[start, stop)`` holding ``held`` (cores,
    GPUs, memory) to a node's usage (``_Timeline._steps``), in place: its ends become
    breakpoints (or are counted at existing ones), the segments between them change, and a
    breakpoint no interval ends at any more goes (the same lists a rebuild gives)."""
    times, count, uc, ug, um = steps
    if sign > 0:
        for t in (start, stop):
            at = bisect_left(times, t)
            if at < len(times) and times[at] == t:
                count[at] += 1
                continue
            times.insert(at, t)
            count.insert(at, 1)
            for use in (uc, ug, um):  # a new breakpoint holds what the segment it splits held
                use.insert(at, use[at - 1] if at else 0)
    x = bisect_left(times, start)
    y = bisect_left(times, stop)
    c, g, m = held[0] * sign, held[1] * sign, held[2] * sign
    for z in range(x, y):
        uc[z] += c
        ug[z] += g
        um[z] += m
    if sign < 0:
        for at in (y, x):  # (y first: deleting at y leaves x in place)
            count[at] -= 1
            if count[at] == 0:
                for row in (times, count, uc, ug, um):
                    del row[at]


class _SlurmShared:
    """Backfill ``slurm`` on shared nodes: Slurm's main scheduler on submit/finish events and
    its backfill cycle every ``bf_interval``, as ``policies.slurm_backfill.SlurmBackfill`` runs
    them on whole nodes (same settings, same clocks -- its ``wake_at``/``_due`` are used as
    they are -- same order of tests and limits; its docstring cites the Slurm sources), with
    resources per node instead of a node count:

    * the main scheduler (``job_scheduler.c: _schedule``) starts jobs in priority order on
      the nodes cons_tres picks now (``cons_tres_nodes``: best fit over runs of consecutive
      nodes, then the node with the fewest free cores, as ``_eval_nodes`` does), to
      ``default_queue_depth`` (+1) jobs on an event, the whole queue at a ``sched_interval``
      pass; the first job that does not fit fails the partition;
    * the backfill cycle (``backfill.c: _attempt_backfill``) plans on a ``_Timeline`` (the
      conservative planner's per-node intervals): the running jobs until their estimated ends
      and the jobs just started, each holding its cores, GPUs and memory (Slurm's select
      plugin counts them in its will-run test), everything cut at ``window_end``
      (``floor((now + bf_window) / bf_resolution) * bf_resolution``; the nodes are empty after
      it). Each tested job (``bf_max_job_test``, ``bf_max_job_user``, ``bf_max_job_part``)
      gets its earliest fit (``_Timeline.earliest_fit``: the lowest-indexed nodes that each
      hold its request throughout its limit beside those jobs and are reserved to no earlier
      job then); now: it starts, on the nodes cons_tres picks among those that hold it
      throughout its limit (Slurm's ``_start_job`` excludes the others, then selects as the
      main scheduler does); else, within the window and under
      ``bf_job_part_count_reserve``, it reserves those nodes **whole** over
      ``[floor(s / r) * r, floor((s + limit + r - 1) / r) * r)`` (``_set_slot_time``), cut to
      ``[now, window_end)``: no later job of the cycle may use them then, however few cores
      the reserved job asks for. That is Slurm's backfill map: ``node_space_map_t`` records
      are time slots, each with a bitmap of available *nodes*; ``_add_reservation`` splits the
      slots at the reservation's start and end and ands the ones inside with the complement
      of the job's nodes, and a candidate may only use nodes available in every slot its run
      overlaps (``_attempt_backfill``; ``_test_resv_overlap`` tests node-bitmap overlap).

    Slurm's slurm.conf man page (``SchedulerParameters``: bf_interval, bf_max_job_test,
    bf_window, bf_resolution, bf_max_job_user, bf_max_job_part, bf_continue,
    bf_job_part_count_reserve, default_queue_depth, sched_interval) gives the meanings;
    ``bf_continue`` changes nothing here (zero-time cycles, as on whole nodes).

    **Reduction.** With every limit infinite, ``bf_interval=0``, ``bf_resolution=0``,
    ``sched_interval=0`` and Slurm's default ``bf_job_part_count_reserve=0``, every waiting job
    is reserved at its earliest fit, replanned from scratch at every pass. That is *not* the
    shared engine's ``conservative``, whose reservations hold only their request (a job may
    start beside one): it is only when no two jobs can share a node (every job asks for more
    than half a node's cores: single-core nodes, whole-node requests), and then bit for bit
    when every job runs to its limit (``tests/test_shared_slurm.py``). With
    ``bf_job_part_count_reserve=1`` on one node it is EASY without the extra-resources rule,
    i.e. ``easy_drevt`` except at ties (a job ending exactly at the head's reserved start
    starts here, as a reservation holds ``[start, end)``; ``easy_drevt``'s test is strict);
    on several nodes Slurm also pins the head's reservation to the nodes of its earliest fit.
    Not modelled: a reservation's nodes are the first fit at its start here, where Slurm's
    will-run test picks them by the same best fit on the nodes as they will be then; its start
    is the earliest end that frees enough, where Slurm's will-run test frees running jobs in
    batches of close ends (30 s windows, ``cons_common/job_test.c: _will_run_test``) and plans
    at a batch's last end (``docs/slurm.md``, "Shared nodes on the real Slurm"); and
    Slurm ands the map's slots from the one that holds the candidate's start through the one
    that *begins* at its end (``begin_time <= end_time``), so a candidate ending exactly when a
    reservation begins on its nodes is refused there; here it fits.
    """

    def __init__(self, partition, params, hook) -> None:
        from .policies.slurm_backfill import check_backfill_params, take_backfill_params

        p = check_backfill_params(params)
        self.partition = partition
        self.limit = self.nodes = self.request = self.users = None  # (plan_jobs)
        self.hook = hook
        take_backfill_params(self, p)
        if p.get("limits") is not None:
            raise ConfigError("association limits go to simulate_shared's 'limits', not backfill_params")
        self.tier = p.get("tier")
        self.t0 = None
        self.k = {"bf": 0, "full": 1}
        self.next_bf = INF
        self.next_full = INF

    def plan_jobs(self, limit, nodes, request, users) -> None:
        """The jobs' limits, node counts, requests and users as lists, which only the
        reference's planning reads (the compiled kernel never does: building them was ~1 % of
        a 1M-job compiled run)."""
        self.limit, self.nodes, self.request, self.users = limit, nodes, request, users

    from .policies.slurm_backfill import SlurmBackfill as _whole

    wake_at = _whole.wake_at
    _due = _whole._due
    del _whole

    def select(self, now, queue, free, running, placed, event, gate):
        """The jobs to start now and their nodes (taken from ``free``), in start order."""
        if self.tier is not None:
            tier = self.tier
            queue = sorted(queue, key=lambda j: -tier[j])  # stable: priority order within a tier
        if self.t0 is None:
            self.t0 = now
        bf_due = self.interval == 0 or self._due(now, "bf")
        full = self.sched_interval > 0 and self._due(now, "full")
        due: list = []
        if event or full:
            self._main(queue, free, due, gate, INF if full else self.depth)
        if bf_due:
            self._backfill(now, queue, free, running, placed, due, gate)
        return due

    def _held(self, gate, j, pre: bool) -> bool:
        state = gate.state
        if pre:
            reason = state.pre(j) if state.gated_pre[j] else None
        else:
            reason = state.post(j) if state.gated_post[j] else None
        if reason is None:
            return False
        gate.held.setdefault(reason, set()).add(j)
        return True

    def _main(self, queue, free, due, gate, depth):
        cores, gpus, memory = self.request
        nodes = self.nodes
        looked = 0
        for j in queue:
            if looked > depth:  # job_depth++ > def_job_limit
                break
            looked += 1
            if gate is not None and self._held(gate, j, True):
                continue
            where = free.slurm_fit(nodes[j], cores[j], gpus[j], memory[j])
            if where is None:
                break  # the partition failed
            self._start(j, where, free, due, gate)

    def _start(self, j, where, free, due, gate) -> bool:
        """Start job ``j`` now on ``where`` unless a TRES limit holds it (no start then, and no
        reservation); whether it started."""
        if gate is not None and self._held(gate, j, False):
            return False
        cores, gpus, memory = self.request
        free.add(where, cores[j], gpus[j], memory[j], -1)
        due.append((j, where))
        if gate is not None:
            gate.state.start(j)
        return True

    def _last_to_start(self, now, queue, done, timeline) -> int:
        """The position in ``queue`` of the last job (not in ``done``) that may start in this
        cycle (-1: none). A job starts now only if ``k`` nodes of the timeline hold its request
        at ``now``, and the cycle only adds to the timeline: after that job it would only place
        reservations, which nobody sees (no hook) and which start nothing, so it ends there
        (with association limits it goes on: it counts held jobs). A job whose limit vanishes
        beside ``now`` (``now + limit == now``) has an empty window, which fits anywhere."""
        cores, gpus, memory = self.request
        limit, nodes = self.limit, self.nodes
        free = [timeline.free_at(i, now) for i in range(self.partition.nodes)]
        for p in range(len(queue) - 1, -1, -1):
            j = queue[p]
            if j in done:
                continue
            c, g, m = cores[j], gpus[j], memory[j]
            if now + limit[j] == now or sum(fc >= c and fg >= g and fm >= m for fc, fg, fm in free) >= nodes[j]:
                return p
        return -1

    def _backfill(self, now, queue, free, running, placed, due, gate):
        from .policies.slurm_backfill import CycleLimits, cycle_window_end, reservation_span

        limit, nodes = self.limit, self.nodes
        res = self.resolution
        window_end = cycle_window_end(now, self.window, res)
        if window_end <= now:
            return
        soon = math.nextafter(now, INF)
        timeline = _Timeline(self.partition, self.request)
        for e, j in running:
            stop = min(e if e > now else soon, window_end)
            timeline.add(j, -INF, stop, placed[j])
        for j, where in due:
            timeline.add(j, now, min(now + limit[j], window_end), where)
        done = {j for j, _ in due}
        limits = CycleLimits(self.max_test, self.max_part, self.max_user, self.users)
        reserved = 0
        last = len(queue)
        if self.hook is None and gate is None:
            last = self._last_to_start(now, queue, done, timeline)
        for p, j in enumerate(queue):
            if j in done:
                continue
            if limits.exhausted() or p > last:
                break
            if gate is not None and self._held(gate, j, True):
                continue
            if not limits.admit(j):
                continue
            d = limit[j]
            s, where = timeline.earliest_fit(j, now, nodes[j], d)
            if s == now:  # on the nodes cons_tres picks among those free of reservations then
                c, g, m = self.request[0][j], self.request[1][j], self.request[2][j]
                fc, fg, fm = free.cores, free.gpus, free.memory
                free_now = [i for i in range(len(fc)) if fc[i] >= c and fg[i] >= g and fm[i] >= m]
                where = free.slurm_fit(nodes[j], c, g, m, timeline.fitting(j, now, d, free_now))
                if self._start(j, where, free, due, gate):
                    timeline.add(j, now, min(now + d, window_end), where)
                continue
            if self.reserve_cap and reserved >= self.reserve_cap:
                continue
            if s > now + self.window or s >= window_end:
                continue
            a, b = reservation_span(s, d, now, res, window_end)
            if self.hook is not None:
                self.hook(now, j, s)
            if b > a:
                timeline.add(j, a, b, where, whole=True)
            reserved += 1
