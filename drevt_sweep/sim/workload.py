"""Workload scenarios: transforms of the job table between the trace reader and the engine.

``apply_workload(jobs, spec, seed)`` returns a new :class:`~drevt_sweep.jobs.JobTable`, the
:class:`~drevt_sweep.capacity.CapacitySchedule` to pass to ``engine.simulate(capacity=...)``
(None when the machine keeps its size), and a report of what each transform kept, moved or
dropped (``REPORT_KEYS``; every key is always present, so a sweep can log it as is). The
trace file and the input table are never modified; everything is deterministic given the seed
(only input shaking uses it). The default :class:`WorkloadSpec` is the identity: the input
table itself comes back, with no capacity schedule.

Transforms, applied in this order:

1. **Time window** ``[window_start, window_end)`` on the trace's own submit times: an ISO
   date-time (wall clock in the trace's time zone ``jobs.meta.timezone`` unless it carries an
   offset; DST gaps/folds resolved with ``fold=0`` like the readers) or a number of epoch
   seconds. Jobs submitted outside it are dropped; metrics then cover the window only.
2. **Warm start** (``warm_start``, with a ``window_start`` mid-trace; needs the recorded
   begin/end of every job submitted before the window, i.e. a replay-capable trace, also one
   read with ``force_simulation``). Of the jobs submitted before the window start:

   - *running* at the window start (``begin < start < end``): not in the table; they hold
     their (rescaled) nodes from their recorded begin until their recorded end, as capacity
     reductions -- the scheduler knows these ends exactly, as announced capacity;
   - *queued* at the window start (``begin >= start``): kept, with ``submit = window_start``.
     Their wait (and bounded slowdown, turnaround) is counted from the window start: the time
     they had already waited before it is outside the window and not measured. They keep their
     original relative order (FCFS serves them first, in their original order);
   - *finished* before the window start (``end <= start``): dropped.

   Without ``warm_start`` every job submitted before the window start is dropped and the
   machine starts empty.
3. **Job count and span** (the C++ original's ``--max_jobs`` / ``--max_time``): keep jobs
   submitted less than ``max_time`` seconds after the window start (else after the first
   submit), then the first ``max_jobs`` jobs.
4. **Job-size rescaling** ``rescale_nodes = f``: ``num_nodes = floor(num_nodes * f + 0.5)``
   (half up), at least 1 and at most the new machine size -- ``rescale_machine_nodes`` if
   given, else ``floor(machine_nodes * f + 0.5)`` of the size the trace states, else no upper
   bound (the engine then rejects what does not fit). ``meta.machine_nodes`` becomes the new
   size, so ``system=trace`` simulates the rescaled machine. Warm-start holds are rescaled too.
5. **Load scaling** ``load_factor = f > 0``: ``submit = t0 + (submit - t0) / f`` with ``t0``
   the window start (else the first submit): every inter-arrival gap is multiplied by 1/f, the
   offered load by f; order, sizes, limits and run times are unchanged. ``f = 1`` is an exact
   identity. Capacity steps, maintenance and warm-start holds stay at their wall-clock times.
6. **Machine-size changes**: ``capacity`` steps ``(time, total_nodes)`` (times as for the
   window) and weekly/daily ``maintenance`` windows (:class:`Maintenance`: "lose N nodes every
   Tuesday 08:00-12:00", wall clock in the trace's zone, generated from the window start / first
   submit to ``maintenance_horizon`` seconds after the last submit, and over at least two
   periods (a day, or a week when one is weekly); overlapping reductions add up). The windows
   do not stop at the end of this calendar: a job that can never fit between two windows is
   rejected (``rejected_capacity``) rather than left waiting for the calendar to run out, and a
   job that fits between them can always wait (``CapacitySchedule.deadlines``). Only the
   regular gap between two windows counts: the longer one of a DST day
   (:meth:`Maintenance.irregular_gaps`) fits no job that a regular one does not. See
   ``drevt_sweep.capacity`` for how the engine treats them.
7. **Input shaking** (Tsafrir, Ouaknine & Feitelson): each submit moves by ``U(-shake, +shake)``
   seconds, drawn from the ``input_shaking`` stream of the seed (``runtime.stream_rng``:
   independent of the run-time draws of the same seed), not earlier than the window start when
   there is one; rows are then re-sorted stably. Run-time draws follow the rows of the final
   table.

When submit times or sizes change (load scaling, rescaling, shaking), the historical
begin/end columns no longer describe these jobs: they become NaN and the table is in
simulation mode. A replay-mode table (``policy=replay``) accepts only the window, warm start
and job-count transforms (a replay keeps the recorded schedule; there is nothing to rescale or
delay).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, fields
from datetime import date, datetime, time, timedelta, timezone
from typing import Sequence

import numpy as np

from .capacity import CapacitySchedule
from ..errors import ConfigError
from ..jobs import JobTable
from .runtime import stream_rng

DAY = 86400.0
DEFAULT_MAINTENANCE_HORIZON = 28 * DAY

# Every report has exactly these keys (counts of jobs unless said otherwise).
REPORT_KEYS = (
    "jobs_in",  # rows of the input table
    "jobs_out",  # rows of the output table
    "dropped",  # jobs_in - jobs_out
    "moved",  # output jobs whose submit time differs from their input submit time
    "window_dropped_before",  # submitted before the window start, not carried in
    "window_dropped_after",  # submitted at or after the window end
    "warm_running",  # running at the window start: held as capacity reductions
    "warm_queued",  # queued at the window start: carried in at the window start
    "warm_finished",  # finished before the window start: dropped
    "warm_held_nodes",  # nodes held at the window start by the running jobs (after rescaling)
    "max_time_dropped",
    "max_jobs_dropped",
    "rescaled",  # jobs whose num_nodes changed
    "rescale_capped",  # of those, held at the new machine size
    "load_moved",  # jobs whose submit changed by load scaling
    "shake_moved",  # jobs whose submit changed by shaking
    "shake_reordered",  # rows whose position changed when re-sorting after shaking
    "capacity_steps",  # machine-size steps
    "maintenance_windows",  # maintenance occurrences generated
)

_WEEKDAYS = {
    "monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "wednesday": 2, "wed": 2, "thursday": 3,
    "thu": 3, "friday": 4, "fri": 4, "saturday": 5, "sat": 5, "sunday": 6, "sun": 6,
}
_DAILY = ("daily", "every_day", "everyday", "*")
_CLOCK = re.compile(r"^([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?$")


def _clock_seconds(text: str, what: str) -> float:
    match = _CLOCK.match(str(text).strip())
    if not match:
        raise ConfigError(f"{what} must be a wall-clock time HH:MM[:SS], got {text!r}")
    h, m, s = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    if h > 24 or m > 59 or s > 59 or (h == 24 and (m or s)):
        raise ConfigError(f"{what} must be a wall-clock time between 00:00 and 24:00, got {text!r}")
    return float(h * 3600 + m * 60 + s)


def _weekday(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= value <= 6:
        return int(value)
    text = str(value).strip().lower()
    if text in _DAILY:
        return None
    if text not in _WEEKDAYS:
        raise ConfigError(
            f"maintenance weekday must be a day name (monday ... sunday, mon ... sun), 0-6 "
            f"(0 = Monday) or 'daily', got {value!r}"
        )
    return _WEEKDAYS[text]


@dataclass(frozen=True)
class Maintenance:
    """``nodes`` nodes unavailable every ``weekday`` (None = every day) from ``start`` to ``end``.

    ``start``/``end`` are wall-clock times ``HH:MM[:SS]`` in the trace's time zone; an ``end``
    at or before ``start`` means the next day (``22:00-02:00``). Parse the compact form
    ``"tue 08:00-12:00 100"`` with :meth:`parse`.
    """

    weekday: int | str | None = 1
    start: str = "08:00"
    end: str = "12:00"
    nodes: int = 100

    def __post_init__(self) -> None:
        object.__setattr__(self, "weekday", _weekday(self.weekday))
        _clock_seconds(self.start, "maintenance start")
        _clock_seconds(self.end, "maintenance end")
        if isinstance(self.nodes, bool) or not isinstance(self.nodes, (int, np.integer)) or self.nodes < 1:
            raise ConfigError(f"maintenance nodes must be a whole number >= 1, got {self.nodes!r}")
        object.__setattr__(self, "nodes", int(self.nodes))

    @classmethod
    def parse(cls, text: str) -> Maintenance:
        """``"<weekday|daily> HH:MM-HH:MM <nodes>"``, e.g. ``"tue 08:00-12:00 100"``."""
        parts = str(text).split()
        if len(parts) != 3 or parts[1].count("-") != 1:
            raise ConfigError(
                f"maintenance must read '<weekday|daily> HH:MM-HH:MM <nodes lost>', e.g. "
                f"'tue 08:00-12:00 100'; got {text!r}"
            )
        start, end = parts[1].split("-")
        try:
            nodes = int(parts[2])
        except ValueError:
            raise ConfigError(f"maintenance nodes must be a whole number, got {parts[2]!r}") from None
        return cls(weekday=parts[0], start=start, end=end, nodes=nodes)

    def label(self) -> str:
        day = "daily" if self.weekday is None else list(_WEEKDAYS)[2 * self.weekday + 1]
        return f"{day} {self.start}-{self.end} {self.nodes}"

    def occurrences(self, lo: float, hi: float, zone) -> list[tuple[float, float]]:
        """``(start, end)`` epoch seconds of every occurrence overlapping ``[lo, hi)``."""
        return [(a, b) for a, b in self._windows(lo, hi, zone) if b > lo and a < hi]

    def irregular_gaps(self, lo: float, hi: float, zone) -> list[tuple[float, float]]:
        """The time between two occurrences beyond the regular gap, as intervals ``(a, b)``
        overlapping ``[lo, hi)``: on a DST day the gap after a daily window is 25 h (or 23 h),
        and a window whose wall-clock times do not exist that day is missing. Regularised,
        each window lasts at least its nominal length and is followed by at most the regular
        gap (period - length); what that adds is returned. In UTC, nothing."""
        length = self._length()
        regular = (DAY if self.weekday is None else 7 * DAY) - length
        windows = self._windows(lo, hi, zone, margin=8)
        out = []
        for (a, b), (a_next, _) in zip(windows, windows[1:]):
            end = max(b, a + length, a_next - regular)
            if end > b and end > lo and b < hi:
                out.append((b, end))
        return out

    def _length(self) -> float:
        start_s = _clock_seconds(self.start, "maintenance start")
        end_s = _clock_seconds(self.end, "maintenance end")
        return end_s - start_s if end_s > start_s else end_s + DAY - start_s

    def _windows(self, lo: float, hi: float, zone, margin: int = 2) -> list[tuple[float, float]]:
        """Every occurrence of the days from ``margin`` days before ``lo`` to one after ``hi``
        (wall clock resolved with ``fold=0``; one whose times do not exist that day is none)."""
        start_s = _clock_seconds(self.start, "maintenance start")
        end_s = start_s + self._length()
        first = datetime.fromtimestamp(lo, tz=timezone.utc).astimezone(zone).date() - timedelta(days=margin)
        last = datetime.fromtimestamp(hi, tz=timezone.utc).astimezone(zone).date() + timedelta(days=1)
        out = []
        day = first
        while day <= last:
            if self.weekday is None or day.weekday() == self.weekday:
                a = _wall_to_epoch(day, start_s, zone)
                b = _wall_to_epoch(day, end_s, zone)
                if b > a:
                    out.append((a, b))
            day += timedelta(days=1)
        return out


def _wall_to_epoch(day: date, seconds: float, zone) -> float:
    wall = datetime.combine(day, time()) + timedelta(seconds=seconds)
    return wall.replace(tzinfo=zone, fold=0).timestamp()


def _zone(name: str):
    from ..trace.timestamps import resolve_zone

    return resolve_zone(name)


def parse_time(value, zone_name: str, what: str = "time", timestamp_format: str = "epoch") -> float:
    """A number of epoch seconds, or an ISO date-time (wall clock in ``zone_name`` unless it
    has an offset, DST resolved with ``fold=0``), as float64 epoch seconds."""
    if isinstance(value, bool):
        raise ConfigError(f"{what} must be an ISO date-time or a number of epoch seconds, got {value!r}")
    if isinstance(value, (int, float, np.integer, np.floating)):
        seconds = float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            if timestamp_format == "relative":
                raise ConfigError(
                    f"{what} {text!r}: this trace's times are seconds from its start (no "
                    f"absolute dates); give {what} as a number of seconds"
                ) from None
            iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
            try:
                moment = datetime.fromisoformat(iso)
            except ValueError:
                raise ConfigError(
                    f"{what} must be an ISO date-time such as 2024-01-15T08:00 (wall clock in "
                    f"the trace's time zone unless it has an offset) or a number of epoch "
                    f"seconds, got {text!r}"
                ) from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=_zone(zone_name), fold=0)
            seconds = moment.timestamp()
    if not math.isfinite(seconds):
        raise ConfigError(f"{what} must be finite, got {value!r}")
    return seconds


def _number(value, what: str, *, positive: bool = False, minimum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{what} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ConfigError(f"{what} must be finite, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(f"{what} must be > 0, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{what} must be >= {minimum:g}, got {value!r}")
    return value


def _count(value, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{what} must be a whole number >= 1, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class WorkloadSpec:
    """Every workload setting; the defaults are the identity (see the module docstring)."""

    load_factor: float = 1.0
    window_start: str | float | None = None
    window_end: str | float | None = None
    max_jobs: int | None = None
    max_time: float | None = None
    warm_start: bool = False
    capacity: tuple[tuple[str | float, int], ...] = ()  # (time, total_nodes) machine-size steps
    maintenance: tuple[Maintenance, ...] = ()
    maintenance_horizon: float = DEFAULT_MAINTENANCE_HORIZON  # seconds after the last submit
    rescale_nodes: float = 1.0
    rescale_machine_nodes: int | None = None
    shake: float = 0.0  # seconds

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "load_factor", _number(self.load_factor, "load_factor", positive=True))
        set_(self, "rescale_nodes", _number(self.rescale_nodes, "rescale_nodes", positive=True))
        set_(self, "shake", _number(self.shake, "shake", minimum=0.0))
        set_(self, "maintenance_horizon", _number(self.maintenance_horizon, "maintenance_horizon", minimum=0.0))
        set_(self, "max_jobs", _count(self.max_jobs, "max_jobs"))
        set_(self, "rescale_machine_nodes", _count(self.rescale_machine_nodes, "rescale_machine_nodes"))
        if self.max_time is not None:
            set_(self, "max_time", _number(self.max_time, "max_time", positive=True))
        if not isinstance(self.warm_start, (bool, np.bool_)):
            raise ConfigError(f"warm_start must be true or false, got {self.warm_start!r}")
        set_(self, "warm_start", bool(self.warm_start))
        if self.warm_start and self.window_start is None:
            raise ConfigError("warm_start needs a window_start (the instant the simulation takes over)")
        steps = []
        for step in self.capacity:
            try:
                t, n = step
            except (TypeError, ValueError):
                raise ConfigError(f"a capacity step is (time, total_nodes), got {step!r}") from None
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
                raise ConfigError(f"capacity step total_nodes must be a whole number >= 0, got {n!r}")
            steps.append((t, int(n)))
        set_(self, "capacity", tuple(steps))
        set_(
            self,
            "maintenance",
            tuple(m if isinstance(m, Maintenance) else Maintenance.parse(m) for m in self.maintenance),
        )

    @property
    def is_identity(self) -> bool:
        """No transform at all (``maintenance_horizon`` and ``rescale_machine_nodes`` alone
        change nothing)."""
        return (
            self.load_factor == 1
            and self.window_start is None
            and self.window_end is None
            and self.max_jobs is None
            and self.max_time is None
            and not self.capacity
            and not self.maintenance
            and self.rescale_nodes == 1
            and self.shake == 0
        )

    @property
    def stochastic(self) -> bool:
        """Whether the result depends on the seed (input shaking)."""
        return self.shake > 0

    def as_params(self) -> dict[str, object]:
        """Flat, loggable settings (``workload.<name>``)."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "capacity":
                value = ",".join(f"{t}:{n}" for t, n in value) or None
            elif f.name == "maintenance":
                value = "; ".join(m.label() for m in value) or None
            out[f"workload.{f.name}"] = value
        return out


def apply_workload(
    jobs: JobTable, spec: WorkloadSpec | None = None, seed: int = 0
) -> tuple[JobTable, CapacitySchedule | None, dict[str, int | float]]:
    """Apply ``spec`` to ``jobs``: ``(new table, capacity schedule or None, report)``."""
    spec = spec or WorkloadSpec()
    report: dict[str, int | float] = dict.fromkeys(REPORT_KEYS, 0)
    n_in = len(jobs)
    report["jobs_in"] = report["jobs_out"] = n_in
    if spec.is_identity:
        return jobs, None, report

    meta = jobs.meta
    if meta.mode == "replay":
        changes = [
            name for name, active in (
                ("load_factor", spec.load_factor != 1), ("shake", spec.shake > 0),
                ("rescale_nodes", spec.rescale_nodes != 1), ("capacity", bool(spec.capacity)),
                ("maintenance", bool(spec.maintenance)),
            ) if active
        ]
        if changes:
            raise ConfigError(
                f"workload {', '.join(changes)} cannot apply to a replay, which keeps the recorded "
                f"schedule; simulate the trace with a scheduling policy instead (drevt-sim "
                f"--force-simulation)"
            )

    zone_name, tfmt = meta.timezone, meta.timestamp_format
    start = None if spec.window_start is None else parse_time(spec.window_start, zone_name, "window_start", tfmt)
    end = None if spec.window_end is None else parse_time(spec.window_end, zone_name, "window_end", tfmt)
    if start is not None and end is not None and not end > start:
        raise ConfigError(
            f"the time window is empty: window_end ({spec.window_end}) is not after "
            f"window_start ({spec.window_start})"
        )

    submit_in = np.asarray(jobs.submit, dtype=np.float64)
    submit = submit_in.copy()
    nodes_all = np.asarray(jobs.num_nodes, dtype=np.int64)
    keep = np.ones(n_in, dtype=bool)
    hold_rows = np.zeros(0, dtype=np.int64)

    # 1-2. time window and warm start
    if start is not None:
        before = submit < start
        if spec.warm_start and before.any():
            begin = np.asarray(jobs.begin, dtype=np.float64)
            finish = np.asarray(jobs.end, dtype=np.float64)
            missing = before & ~(np.isfinite(begin) & np.isfinite(finish))
            if missing.any():
                first = int(np.flatnonzero(missing)[0])
                raise ConfigError(
                    f"warm_start needs the recorded begin and end of every job submitted before "
                    f"the window start; {int(missing.sum())} job(s) lack them (first: line "
                    f"{int(jobs.source_line[first])}) -- use a replay-capable trace, or no warm start"
                )
            running = before & (begin < start) & (finish > start)
            queued = before & (begin >= start)
            hold_rows = np.flatnonzero(running)
            report["warm_running"] = int(running.sum())
            report["warm_queued"] = int(queued.sum())
            report["warm_finished"] = int((before & ~running & ~queued).sum())
            keep = ~before | queued
            submit[queued] = start
        else:
            keep = ~before
            report["window_dropped_before"] = int(before.sum())
    if end is not None:
        after = keep & (submit_in >= end)
        report["window_dropped_after"] = int(after.sum())
        keep &= ~after

    # 3. job count and span
    if spec.max_time is not None and n_in:
        t0 = start if start is not None else float(submit_in.min())
        late = keep & ~(submit < t0 + spec.max_time)
        report["max_time_dropped"] = int(late.sum())
        keep &= ~late
    rows = np.flatnonzero(keep)
    if spec.max_jobs is not None and rows.size > spec.max_jobs:
        report["max_jobs_dropped"] = int(rows.size - spec.max_jobs)
        rows = rows[: spec.max_jobs]
    out = jobs.take(rows)
    submit = submit[rows]
    original_submit = submit_in[rows]

    # 4. job-size rescaling
    nodes = np.asarray(out.num_nodes, dtype=np.int64)
    hold_nodes = nodes_all[hold_rows]
    machine_nodes = meta.machine_nodes
    if spec.rescale_nodes != 1:
        cap = spec.rescale_machine_nodes
        if cap is None and machine_nodes:
            cap = max(1, int(math.floor(machine_nodes * spec.rescale_nodes + 0.5)))
        machine_nodes = cap if cap is not None else machine_nodes
        nodes, capped = _rescale(nodes, spec.rescale_nodes, cap)
        hold_nodes, _ = _rescale(hold_nodes, spec.rescale_nodes, cap)
        report["rescaled"] = int((nodes != out.num_nodes).sum())
        report["rescale_capped"] = int(capped.sum())
    report["warm_held_nodes"] = int(hold_nodes.sum())

    # 5. load scaling
    if spec.load_factor != 1 and submit.size:
        t0 = start if start is not None else float(submit[0])
        scaled = t0 + (submit - t0) / spec.load_factor
        report["load_moved"] = int((scaled != submit).sum())
        submit = scaled

    # 6. machine-size changes and warm-start holds
    steps = tuple(
        (parse_time(t, zone_name, "capacity step time", tfmt), n) for t, n in spec.capacity
    )
    report["capacity_steps"] = len(steps)
    reductions = [
        (float(jobs.begin[r]), float(jobs.end[r]), int(k)) for r, k in zip(hold_rows.tolist(), hold_nodes.tolist())
    ]
    if spec.maintenance and (submit.size or reductions):
        if tfmt == "relative":
            raise ConfigError(
                "maintenance windows are wall-clock times, but this trace's times are seconds "
                "from its start (no absolute dates); use capacity steps instead"
            )
        zone = _zone(zone_name)
        lo = start if start is not None else float(submit.min())
        period = DAY if all(m.weekday is None for m in spec.maintenance) else 7 * DAY
        # At least two whole periods, so that the engine sees the complete pattern at the end
        # of the calendar; beyond it the windows recur (CapacitySchedule.deadlines).
        hi = max((float(submit.max()) if submit.size else lo) + spec.maintenance_horizon,
                 lo + 2 * period)
        irregular = []
        for m in spec.maintenance:
            for a, b in m.occurrences(lo, hi, zone):
                reductions.append((a, b, m.nodes))
                report["maintenance_windows"] += 1
            irregular.extend((a, b, m.nodes) for a, b in m.irregular_gaps(lo, hi, zone))
        recurring = {"recurring_from": hi, "period": period, "irregular": tuple(irregular)}
    else:
        recurring = {}
    capacity = CapacitySchedule(steps=steps, reductions=tuple(reductions), **recurring)
    if meta.mode == "replay" or capacity.is_empty:
        capacity = None  # a replay keeps the recorded schedule; holds do not apply

    # 7. input shaking
    order = None
    if spec.shake > 0 and submit.size:
        rng = stream_rng(seed, "input_shaking")
        shaken = submit + rng.uniform(-spec.shake, spec.shake, size=submit.size)
        if start is not None:
            shaken = np.maximum(shaken, start)
        report["shake_moved"] = int((shaken != submit).sum())
        order = np.argsort(shaken, kind="stable")
        report["shake_reordered"] = int((order != np.arange(order.size)).sum())
        submit = shaken

    changes: dict[str, object] = {"submit": submit, "num_nodes": nodes}
    history_gone = spec.load_factor != 1 or spec.shake > 0 or spec.rescale_nodes != 1
    if history_gone:
        nan = np.full(submit.size, np.nan)
        changes.update(begin=nan, end=nan.copy())
    new_meta = meta
    if history_gone or machine_nodes != meta.machine_nodes:
        new_meta = dataclasses.replace(
            meta, mode="simulation" if history_gone else meta.mode, machine_nodes=machine_nodes
        )
    changes["meta"] = new_meta
    out = out.replace(**changes)
    if order is not None:
        out = out.take(order)
        original_submit = original_submit[order]

    report["jobs_out"] = len(out)
    report["dropped"] = n_in - len(out)
    report["moved"] = int((np.asarray(out.submit) != original_submit).sum())
    return out, capacity, report


def _rescale(nodes: np.ndarray, factor: float, cap: int | None) -> tuple[np.ndarray, np.ndarray]:
    raw = np.floor(nodes.astype(np.float64) * factor + 0.5)
    raw = np.maximum(raw, 1.0)
    capped = np.zeros(nodes.shape, dtype=bool)
    if cap is not None:
        capped = raw > cap
        raw = np.minimum(raw, float(cap))
    return raw.astype(np.int64), capped


def parse_capacity(text: str) -> tuple[tuple[str, int], ...]:
    """``"t1:n1,t2:n2"`` (times ISO or epoch; the last ``:`` of each item separates the node
    count, so ISO times with colons work) as ``WorkloadSpec.capacity`` steps."""
    steps = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        t, sep, n = item.rpartition(":")
        if not sep or not t.strip():
            raise ConfigError(f"a capacity step reads <time>:<total_nodes>, got {item!r}")
        try:
            count = int(n)
        except ValueError:
            raise ConfigError(f"capacity step {item!r}: total_nodes must be a whole number") from None
        steps.append((t.strip(), count))
    if not steps:
        raise ConfigError("expected capacity steps '<time>:<total_nodes>,...'")
    return tuple(steps)


def format_report(report: dict[str, int | float], keys: Sequence[str] = REPORT_KEYS) -> str:
    """The non-zero entries of a report, e.g. ``jobs_in 100, jobs_out 80, dropped 20``."""
    return ", ".join(f"{k} {report[k]}" for k in keys if report.get(k))
