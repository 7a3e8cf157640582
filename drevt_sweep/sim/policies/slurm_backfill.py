"""Slurm's scheduling as slurmctld runs it (``backfill: slurm``; ``policy=slurm`` with
``SchedulerType=sched/backfill``): a main scheduler on events and a backfill cycle every
``bf_interval``, with Slurm's limits.

Sources (reference only, read at SchedMD/slurm 284c3b95, 2026-08): ``src/slurmctld/job_scheduler.c``
(``_schedule``: the main scheduler), ``src/plugins/sched/backfill/backfill.c``
(``_attempt_backfill``, ``_job_exceeds_max_bf_param``, ``_set_slot_time``, ``_check_bf_usage``)
and the slurm.conf man page (``SchedulerParameters``). Per partition (a policy instance serves
one node pool, ``sim.partitioned``):

* **Main scheduler** (``_schedule``), at every submission or completion (``queue_job_scheduler``),
  and over the whole queue every ``sched_interval`` seconds (``_slurmctld_background``'s periodic
  full-queue call): jobs in priority order start while they fit; the first job that cannot start
  marks the partition failed (``PART_FLAG_SCHED_FAILED``): no later job of it starts in this
  pass. Event passes look at most at ``default_queue_depth`` jobs -- Slurm's test is
  ``job_depth++ > def_job_limit``, so ``default_queue_depth=100`` looks at 101; we keep that.
  Jobs held by a limit (association, QOS; ``sim.limits``) are skipped without failing the
  partition: a running-jobs limit (``MaxJobs``...) before the job is looked at for nodes, a TRES
  limit (``GrpTRES``...) once it fits (``select_nodes`` returns ``ESLURM_ACCOUNTING_POLICY``;
  ``_schedule`` goes on unless ``assoc_limit_stop``). In the backfill cycle a job held by a
  running-jobs limit is skipped before it counts toward ``bf_max_job_test``; one held by a TRES
  limit counts, and neither starts nor gets a reservation (``_attempt_backfill``). Submissions
  over ``MaxSubmit``-like limits are refused (``refused``: the engine drops them, counted as
  ``rejected_<reason>``); the counters follow starts and the engine's ``cluster.ended``.
* **Backfill cycle** (``_attempt_backfill``), every ``bf_interval`` seconds from the first
  event (0: at every scheduling pass, after the main scheduler): a free-node profile from the
  running jobs' expected ends, cut at ``window_end = floor((now + bf_window) / bf_resolution) *
  bf_resolution`` (the map ends there: later, the partition counts as empty). Jobs in priority
  order; a job over ``bf_max_job_user`` (per user) or ``bf_max_job_part`` (per partition) jobs
  tested in this cycle is skipped before it counts; every job tested counts toward
  ``bf_max_job_test`` (the cycle ends when it is reached, also right after a start). A job's
  earliest start in the profile is found; if it is now, the job starts (and occupies the
  profile); else, unless the partition already has ``bf_job_part_count_reserve`` reservations
  in this cycle (0: no cap) or the start is after ``now + bf_window``, the job gets a
  reservation ``[floor(s / r) * r, floor((s + limit + r - 1) / r) * r)`` with ``r =
  bf_resolution`` (``_set_slot_time``), which later jobs may not overlap. ``bf_resolution=0``
  (not a Slurm value, whose minimum is 1) means exact times. With fractional times (a
  resolution under 1 s, or times within a second of ``now``) that end can round to before the
  start: the reservation then takes nothing (Slurm's integer times never get there).
* ``bf_continue``: Slurm's cycle yields its locks every ``bf_yield_interval`` of *real* time and
  stops if jobs or nodes changed meanwhile, unless ``bf_continue``. Our cycles take no simulated
  time, so nothing can change during one: the setting is read (and sweepable) but changes no
  schedule. ``docs/slurm.md`` says so.

**Reductions.** With every limit infinite (``bf_max_job_test``, ``bf_window``,
``default_queue_depth``: ``inf``; caps 0) and ``bf_interval=0``, ``bf_resolution=0``:

* ``bf_job_part_count_reserve=1`` is exactly ``easy`` (the first blocked job, and only it,
  is reserved; a later job starts only if it fits now without touching that reservation:
  EASY's "ends by the shadow time or fits in the extra nodes");
* Slurm's default ``bf_job_part_count_reserve=0`` reserves every job it cannot start:
  conservative backfilling *replanned from scratch at every pass*, which is not today's
  ``conservative`` (that keeps reservations and compresses them); the two agree whenever no
  job ends before its limit (``run_time=limit``) with FCFS, and differ otherwise
  (``tests/test_slurm_backfill.py`` shows both).

The queue is ordered by partition ``PriorityTier`` first (``tier``, higher first), then by the
engine's priority order (``_schedule`` and ``sort_job_queue`` sort by tier, then priority).
Held jobs are counted per reason (``counts``): the distinct jobs ever held; refused ones per
reason too.
"""

from __future__ import annotations

import math
import numbers
from itertools import accumulate
from typing import Sequence

from ...errors import ConfigError
from .base import INF, Cluster, PolicyContext, Profile
from .registry import register_backfill

# Slurm's defaults (backfill.c BACKFILL_INTERVAL, DEF_BF_MAX_JOB_TEST, BACKFILL_WINDOW,
# BACKFILL_RESOLUTION; job_scheduler.c def_job_limit; controller.c sched_interval).
DEFAULTS = {
    "bf_interval": 30.0,  # s; 0: at every pass
    "bf_max_job_test": 500,  # jobs per cycle; inf: no limit
    "bf_window": 1440.0,  # minutes; inf: no limit
    "bf_resolution": 60.0,  # s; 0: exact
    "bf_max_job_user": 0,  # 0: no limit
    "bf_max_job_part": 0,  # 0: no limit
    "bf_continue": False,
    "bf_job_part_count_reserve": 0,  # 0: reserve for every job
    "default_queue_depth": 100,  # inf: whole queue
    "sched_interval": 60.0,  # s; 0: no periodic full-queue pass
}
COUNTS = ("bf_max_job_test", "bf_max_job_user", "bf_max_job_part", "bf_job_part_count_reserve",
          "default_queue_depth")
SECONDS = ("bf_interval", "bf_window", "bf_resolution", "sched_interval")
UNBOUNDED = ("bf_max_job_test", "bf_window", "default_queue_depth")  # may be inf


def check_backfill_params(params) -> dict:
    """The Slurm backfill settings with Slurm's defaults filled in; a ConfigError names a bad
    one. ``None`` values mean "the default" (so a sweep's unset keys fall through)."""
    given = {k: v for k, v in dict(params or {}).items() if v is not None}
    extra = {k: given.pop(k) for k in ("limits", "tier") if k in given}
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"backfill 'slurm' has no setting(s) {', '.join(unknown)}; "
                          f"it takes: {', '.join(DEFAULTS)}")
    p = {**DEFAULTS, **given}
    for key in (*COUNTS, *SECONDS):
        value = p[key]
        if isinstance(value, str) and value.strip().lower() in ("inf", "infinite", "unlimited"):
            value = math.inf
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value or value < 0:
            raise ConfigError(f"backfill setting {key} must be a number >= 0, got {p[key]!r}")
        if value == math.inf and key not in UNBOUNDED:
            raise ConfigError(f"backfill setting {key} must be finite, got {p[key]!r}")
        if key in COUNTS and value != math.inf:
            if value != int(value):
                raise ConfigError(f"backfill setting {key} must be a whole number, got {p[key]!r}")
            value = int(value)
        p[key] = value if key in COUNTS else float(value)
    if p["bf_max_job_test"] < 1 or p["default_queue_depth"] < 0:
        raise ConfigError(f"backfill setting bf_max_job_test must be at least 1, got {p['bf_max_job_test']}")
    if p["bf_window"] <= 0:
        raise ConfigError(f"backfill setting bf_window must be > 0 minutes, got {p['bf_window']}")
    if not isinstance(p["bf_continue"], bool):
        raise ConfigError(f"backfill setting bf_continue must be true or false, got {p['bf_continue']!r}")
    return {**p, **extra}


def take_backfill_params(scheduler, p: dict) -> None:
    """Set the checked settings ``p`` as the attributes both Slurm references (the pool's here and
    ``sim.shared``'s for shared nodes) read, so that the two cannot read them differently."""
    scheduler.interval = p["bf_interval"]
    scheduler.max_test = p["bf_max_job_test"]
    scheduler.window = p["bf_window"] * 60.0  # (minutes in slurm.conf)
    scheduler.resolution = p["bf_resolution"]
    scheduler.max_user = p["bf_max_job_user"]
    scheduler.max_part = p["bf_max_job_part"]
    scheduler.reserve_cap = p["bf_job_part_count_reserve"]
    scheduler.depth = p["default_queue_depth"]
    scheduler.sched_interval = p["sched_interval"]


def cycle_window_end(now: float, window: float, resolution: float) -> float:
    """The end of a backfill cycle's plan: ``now + bf_window``, floored to ``bf_resolution``
    (``_attempt_backfill``); no cycle when it is not after ``now``."""
    window_end = now + window
    if resolution > 0 and window_end != INF:
        window_end = math.floor(window_end / resolution) * resolution
    return window_end


def reservation_span(s: float, d: float, now: float, resolution: float, window_end: float) -> tuple[float, float]:
    """A reservation starting at ``s`` for ``d`` seconds on the ``bf_resolution`` grid
    (``_set_slot_time``: start floored, end rounded up), cut to ``[now, window_end)``."""
    a, b = s, s + d
    if resolution > 0:
        a = math.floor(a / resolution) * resolution
        b = math.floor((b + resolution - 1) / resolution) * resolution
    return max(a, now), min(b, window_end)


class CycleLimits:
    """One backfill cycle's counts of the jobs it tests: ``bf_max_job_test`` ends the cycle,
    ``bf_max_job_part`` and ``bf_max_job_user`` pass a job over (``_attempt_backfill``'s
    order: the partition's count first, then the user's; a job passed over is not counted)."""

    def __init__(self, max_test: float, max_part: int, max_user: int, users) -> None:
        self.max_test, self.max_part, self.max_user, self.users = max_test, max_part, max_user, users
        self.tested = 0
        self.in_part = 0
        self.per_user: dict[int, int] = {}

    def exhausted(self) -> bool:
        return self.tested >= self.max_test

    def admit(self, j: int) -> bool:
        """Whether job ``j`` is tested (and then counted) under the partition and user caps."""
        if self.max_part and self.in_part >= self.max_part:
            return False
        if self.max_user:
            u = self.users[j]
            if self.per_user.get(u, 0) >= self.max_user:
                return False
            self.per_user[u] = self.per_user.get(u, 0) + 1
        self.in_part += 1
        self.tested += 1
        return True


@register_backfill("slurm")
class SlurmBackfill:
    def __init__(self, ctx: PolicyContext) -> None:
        if ctx.capacity.variable:
            raise ConfigError("backfill 'slurm' models a constant machine size: capacity changes and "
                              "maintenance windows are not supported with it")
        p = check_backfill_params(ctx.backfill_params)
        self.nodes = ctx.nodes
        self.limit = ctx.time_limit
        self.users = ctx.users
        self.hook = ctx.on_reservation
        self.total = ctx.capacity.total
        take_backfill_params(self, p)
        self.limits = p.get("limits")  # association/QOS limits (sim.limits.LimitState), or None
        self.fcfs = ctx.fcfs_rank
        self.refused: list[int] = []  # jobs refused at submission (the engine drops them)
        self.rejected: dict[str, int] = {}  # refused jobs per reason
        self.tier = p.get("tier")  # per job: its partition's PriorityTier, or None
        # Cycles at t0 + k * bf_interval and full passes at t0 + k * sched_interval (t0: the
        # first pass), events while jobs wait; while the queue is empty they pass unseen.
        self.t0: float | None = None
        self.k = {"bf": 0, "full": 1}  # the index of the next cycle / full pass
        self.next_bf = INF
        self.next_full = INF
        self.known: set[int] = set()  # jobs seen waiting (a new one is a submission event)
        self.held: dict[str, set[int]] = {}

    # --- what the engine asks ----------------------------------------------------------
    def wake_at(self) -> float:
        """The next backfill cycle or periodic main-scheduler pass (events while jobs wait)."""
        t = self.next_bf if self.interval > 0 else INF
        if self.sched_interval > 0 and self.next_full < t:
            t = self.next_full
        return t

    def _due(self, now: float, which: str) -> bool:
        """Whether a cycle (``bf``) or full pass (``full``) falls at ``now``; moves on to the
        next one after ``now`` (the ones passed while no job waited are skipped)."""
        step = self.interval if which == "bf" else self.sched_interval
        k = self.k[which]
        t = self.t0 + k * step
        if t < now:  # skipped while the queue was empty
            k = max(k, math.ceil((now - self.t0) / step))
            while self.t0 + k * step < now:
                k += 1
            t = self.t0 + k * step
        due = t == now
        if due:
            k += 1
        self.k[which] = k
        nxt = self.t0 + k * step
        if which == "bf":
            self.next_bf = nxt
        else:
            self.next_full = nxt
        return due

    def counts(self) -> dict[str, int]:
        """Jobs ever held, per reason (``held_<reason>``), and jobs refused at submission
        (``rejected_<reason>``)."""
        out = {f"held_{reason}": len(jobs) for reason, jobs in sorted(self.held.items())}
        out.update({f"rejected_{reason}": count for reason, count in sorted(self.rejected.items())})
        return out

    # --- one scheduling pass -----------------------------------------------------------
    def select(self, now: float, queue: Sequence[int], cluster: Cluster) -> list[int]:
        if self.tier is not None:
            tier = self.tier
            queue = sorted(queue, key=lambda j: -tier[j])  # stable: priority order within a tier
        known = self.known
        arrived = False
        new = []
        for j in queue:
            if j not in known:
                arrived = True
                known.add(j)
                new.append(j)
        state = self.limits
        if state is not None:
            if cluster.ended is None:
                cluster.ended = []
            for j in cluster.ended:  # counters follow starts and ends, never a scan
                state.end(j)
            cluster.ended.clear()
            if new:
                refused = self._submit(new, state)
                if refused:
                    queue = [j for j in queue if j not in refused]
        if self.t0 is None:  # the first pass starts both clocks
            self.t0 = now
        bf_due = self.interval == 0 or self._due(now, "bf")
        full = self.sched_interval > 0 and self._due(now, "full")

        started: list[int] = []
        free = cluster.free
        if arrived or cluster.completed or full:
            free = self._main(queue, free, started, state, math.inf if full else self.depth)
        if bf_due:
            self._backfill(now, queue, cluster, started, state)
        for j in started:
            known.discard(j)
        return started

    def _submit(self, new: list, state) -> set:
        """Submissions in submit order (FCFS rank): those an association or QOS limit refuses
        (``MaxSubmit``...) are counted and handed to the engine, never queued."""
        fcfs = self.fcfs
        refused = set()
        for j in sorted(new, key=fcfs.__getitem__) if len(new) > 1 else new:
            reason = state.submit(j)
            if reason is not None:
                refused.add(j)
                self.refused.append(j)
                self.known.discard(j)
                self.rejected[reason] = self.rejected.get(reason, 0) + 1
        return refused

    def _held(self, j: int, reason) -> bool:
        if reason is None:
            return False
        self.held.setdefault(reason, set()).add(j)
        return True

    def _main(self, queue, free: int, started: list, state, depth) -> int:
        """``_schedule``: priority order until the first job that cannot start (see above)."""
        nodes = self.nodes
        looked = 0
        for j in queue:
            if looked > depth:  # job_depth++ > def_job_limit
                break
            looked += 1
            if state is not None and state.gated_pre[j] and self._held(j, state.pre(j)):
                continue  # held by a running-jobs limit: skipped, the partition does not fail
            n = nodes[j]
            if n > free:
                break  # the partition failed: nothing after this job starts in this pass
            if state is not None and state.gated_post[j] and self._held(j, state.post(j)):
                continue  # fits, but over a TRES limit (select_nodes: ESLURM_ACCOUNTING_POLICY)
            started.append(j)
            free -= n
            if state is not None:
                state.start(j)
        return free

    def _backfill(self, now: float, queue, cluster: Cluster, started: list, state) -> None:
        """``_attempt_backfill`` (see the module docstring)."""
        nodes = self.nodes
        limit = self.limit
        res = self.resolution
        window_end = cycle_window_end(now, self.window, res)
        if window_end <= now:
            return  # "Now after current backfill window": no cycle
        profile = self._profile(now, cluster, started, window_end)
        done = set(started)
        limits = CycleLimits(self.max_test, self.max_part, self.max_user, self.users)
        reserved = 0
        hook = self.hook
        # Free nodes now (``profile.free[0]``) only shrink during the cycle, and a job starts
        # only if it has its nodes now: once fewer are free than any job from here on asks for,
        # the rest of the cycle would only place reservations, which nobody sees (no hook) and
        # which start nothing. With association limits it goes on (it counts held jobs).
        fewest = list(accumulate(reversed([nodes[j] for j in queue]), min))[::-1] if (
            hook is None and state is None) else None
        for p, j in enumerate(queue):
            if j in done:
                continue
            if limits.exhausted() or (fewest is not None and profile.free[0] < fewest[p]):
                break
            if state is not None and state.gated_pre[j] and self._held(j, state.pre(j)):
                continue  # (before it counts toward bf_max_job_test, as in _attempt_backfill)
            if not limits.admit(j):
                continue
            n = nodes[j]
            d = limit[j]
            s = profile.earliest_fit(n, d)
            if s == now:
                if state is not None and state.gated_post[j] and self._held(j, state.post(j)):
                    continue  # could start, but over a TRES limit: no start, no reservation
                started.append(j)
                if state is not None:
                    state.start(j)
                profile.add(now, now + d, -n)
                continue
            if self.reserve_cap and reserved >= self.reserve_cap:
                continue
            if s > now + self.window or s >= window_end:
                continue  # starts after the window: no reservation
            a, b = reservation_span(s, d, now, res, window_end)
            if hook is not None:
                hook(now, j, s)
            if b > a:  # (a resolution under 1 s can round a tiny job's end to before now)
                profile.add(a, b, -n)
            reserved += 1

    def _profile(self, now: float, cluster: Cluster, started: list, window_end: float) -> Profile:
        """Free nodes from ``now`` to ``window_end`` (empty partition after it), with the jobs the
        main scheduler just started."""
        limit = self.limit
        nodes = self.nodes
        deltas = [(t, k) for t, k in cluster.releases(now) if t < window_end]
        free = cluster.free
        for j in started:
            free -= nodes[j]
            if now + limit[j] < window_end:
                deltas.append((now + limit[j], nodes[j]))
        profile = Profile.from_deltas(now, free, deltas)
        if window_end != INF:
            if window_end > profile.times[-1]:
                profile.times.append(window_end)
                profile.free.append(self.total)
            else:  # cannot happen (every delta is before window_end), kept for safety
                profile.free[-1] = self.total
        return profile
