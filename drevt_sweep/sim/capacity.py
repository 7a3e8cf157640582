"""Machine capacity that changes over time: maintenance, partial outages, warm-start holds.

A :class:`CapacitySchedule` is the engine-side description of how many nodes the scheduler may
use at each instant (no I/O, no time zones: times are float64 epoch seconds, as in the job
table). It has two parts, because some changes are absolute and some are relative to the
machine size, which is only known when the engine is called (``total_nodes``):

* ``steps``: ``(time, total_nodes)`` -- the machine has ``total_nodes`` nodes from ``time`` on
  (until the next step). Before the first step it has the engine's ``total_nodes``.
* ``reductions``: ``(start, end, nodes)`` -- ``nodes`` nodes are unavailable on
  ``[start, end)`` (``end`` may be ``inf``). Periodic maintenance ("lose 100 nodes every
  Tuesday 08:00-12:00") and jobs that were already running when a warm-started window opens
  (they hold their nodes until their recorded end) are reductions.

The effective capacity is ``max(0, size(t) - sum of reductions active at t)``, a step function
(:meth:`CapacitySchedule.levels`). The scheduler knows the whole schedule in advance (announced
maintenance). What the engine does with it (see ``drevt_sweep.engine.simulate``):

* running jobs are never killed when the capacity drops;
* a job starts only if it fits for its whole time limit: at every instant of
  ``[now, now + time_limit)`` the capacity minus the nodes held by running jobs (until their
  estimated ends, ``begin + time_limit``) leaves it room. With limits enforced, nodes in use
  therefore never exceed the capacity at any instant;
* EASY's shadow time / extra nodes and conservative backfilling's reservations are planned in
  the same capacity-aware free-node profile; capacity changes are events of the loop (an
  increase can let jobs start);
* a job is rejected only if it can never run: if no interval ``[t, t + time_limit)`` with
  ``t >= submit`` offers it enough nodes (``rejected_oversized`` when it is larger than the
  largest capacity ever, ``rejected_capacity`` otherwise), or -- while it waits -- once the last
  such interval has begun without it (``latest_starts``; also ``rejected_capacity``). Jobs larger
  than the smallest capacity are only delayed. Recurring maintenance is judged by its regular
  gaps only (``irregular``: a DST day's longer gap fits nobody; counted in
  ``warnings[IRREGULAR_GAP]``). The latest starts are computed before the event loop, from the
  capacity alone, so every kernel and partition layout rejects the same jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable

import numpy as np

from ..errors import ConfigError

INF = math.inf
# The warning counting the rejected jobs that only a DST day's longer gap would have fitted.
IRREGULAR_GAP = "rejected_capacity_irregular_gap"


def _whole(value, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{what} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def _time(value, what: str, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{what} must be a number of epoch seconds, got {value!r}")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not (allow_inf and value > 0)):
        raise ConfigError(f"{what} must be a finite time, got {value!r}")
    return value


def _reductions(items, what: str) -> tuple[tuple[float, float, int], ...]:
    out = []
    for start, end, n in items:
        start = _time(start, f"{what} start")
        end = _time(end, f"{what} end", allow_inf=True)
        n = _whole(n, f"{what} nodes", 0)
        if not end > start:
            raise ConfigError(f"{what} ends ({end!r}) before it starts ({start!r})")
        if n:
            out.append((start, end, n))
    return tuple(sorted(out))


@dataclass(frozen=True)
class CapacitySchedule:
    """Machine-size steps and node reductions over time (see the module docstring)."""

    steps: tuple[tuple[float, int], ...] = ()
    reductions: tuple[tuple[float, float, int], ...] = ()
    # Periodic maintenance is generated up to ``recurring_from`` but goes on for ever, with
    # this ``period`` (seconds): see :meth:`deadlines`. ``inf``: nothing recurs.
    recurring_from: float = INF
    period: float = 0.0
    # Recurring windows are wall-clock times, so a DST day makes a longer gap between two of
    # them (25 h, or a window that does not exist that day). These ``(start, end, nodes)``
    # intervals fill each gap down to the regular one; they count only when judging which
    # jobs can ever run (:meth:`deadlines`), not in the capacity the scheduler plans with.
    irregular: tuple[tuple[float, float, int], ...] = ()

    def __post_init__(self) -> None:
        steps = tuple(
            (_time(t, "capacity step time"), _whole(n, "capacity step total_nodes", 0))
            for t, n in self.steps
        )
        steps = tuple(sorted(steps, key=lambda s: s[0]))
        for (t1, _), (t2, _) in zip(steps, steps[1:]):
            if t1 == t2:
                raise ConfigError(f"two capacity steps at the same time {t1!r}")
        object.__setattr__(self, "recurring_from", float(self.recurring_from))
        object.__setattr__(self, "period", float(self.period))
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "reductions", _reductions(self.reductions, "capacity reduction"))
        object.__setattr__(self, "irregular", _reductions(self.irregular, "irregular maintenance gap"))

    @classmethod
    def from_steps(cls, steps: Iterable[tuple[float, int]]) -> CapacitySchedule:
        return cls(steps=tuple(steps))

    @property
    def is_empty(self) -> bool:
        """No step and no reduction: the machine keeps ``total_nodes`` throughout."""
        return not self.steps and not self.reductions

    def combine(self, other: CapacitySchedule | None) -> CapacitySchedule:
        """Both schedules at once (steps of ``other`` at the same time as ours are an error)."""
        if other is None:
            return self
        return CapacitySchedule(
            self.steps + other.steps,
            self.reductions + other.reductions,
            recurring_from=min(self.recurring_from, other.recurring_from),
            period=max(self.period, other.period),
            irregular=self.irregular + other.irregular,
        )

    def deadlines(self, total_nodes: int, submit, nodes, limit) -> np.ndarray:
        """Per job, the latest start the capacity alone allows (``latest_starts``): ``inf`` if
        it can always wait, NaN if it can never run.

        With recurring maintenance the generated calendar ends at ``recurring_from`` but the
        windows do not: the full machine after it is not there for good. A job that fits
        between two windows (within the calendar's last two periods, where the pattern is
        complete) can always wait for a later gap (``inf``); any other job may only use the
        calendar itself, so one that never fits between two windows gets NaN and is rejected
        at once, instead of waiting for the end of a synthetic calendar.

        Only the regular gaps count: a job that would fit only in the longer gap of a DST day
        (25 h between two daily windows, or a day whose window does not exist) is rejected
        like one that never fits (NaN), as it is in a zone without DST. Waiting for that day
        is not what an operator's "down every night" means: it left a 24 h job waiting 150 days
        on KTH-SP2 for the autumn change, and made a job's fate depend on the time zone and
        on the date the calendar was cut. Judged on the calendar with those gaps filled
        (``irregular``); the scheduler itself still sees the real windows.
        """
        times, levels = self.levels(total_nodes, regular=True)
        if self.recurring_from == INF or self.period <= 0:
            return latest_starts(times, levels, submit, nodes, limit)
        end = self.recurring_from
        cut = int(np.searchsorted(np.asarray(times), end, side="left"))
        calendar = latest_starts(times[:cut] + [end], levels[:cut] + [0], submit, nodes, limit)
        lo = end - 2 * self.period
        first = int(np.searchsorted(np.asarray(times), lo, side="right")) - 1
        window_times = [-INF, lo, *times[first + 1 : cut], end]
        window_levels = [0, *levels[first:cut], 0]
        n = np.asarray(submit).shape[0]
        fits = np.isfinite(
            latest_starts(window_times, window_levels, np.full(n, lo), nodes, limit)
        )
        always = np.asarray(nodes) <= min(levels[first:cut])  # never affected by a window
        return np.where(fits | always, INF, calendar)

    def irregular_only(self, total_nodes: int, submit, nodes, limit) -> np.ndarray:
        """Per job, whether it could run only in a gap longer than the regular one (a DST
        day; see :meth:`deadlines`), so the regular calendar rejects it."""
        if not self.irregular:
            return np.zeros(np.asarray(submit).shape[0], dtype=bool)
        regular = self.deadlines(total_nodes, submit, nodes, limit)
        real = replace(self, irregular=()).deadlines(total_nodes, submit, nodes, limit)
        return np.isnan(regular) & ~np.isnan(real)

    def levels(self, total_nodes: int, regular: bool = False) -> tuple[list[float], list[int]]:
        """The effective capacity as a step function on a machine of ``total_nodes``
        (``regular``: with the irregular gaps of DST days filled, see ``irregular``).

        Returns ``(times, nodes)`` with ``times[0] = -inf``: ``nodes[i]`` nodes on
        ``[times[i], times[i+1])``, the last level forever. Neighbouring levels differ.
        """
        total_nodes = _whole(total_nodes, "total_nodes", 1)
        deltas: dict[float, int] = {}
        size = total_nodes
        for t, n in self.steps:
            deltas[t] = deltas.get(t, 0) + n - size
            size = n
        for start, end, n in self.reductions + (self.irregular if regular else ()):
            deltas[start] = deltas.get(start, 0) - n
            if end != INF:
                deltas[end] = deltas.get(end, 0) + n
        times, nodes = [-INF], [total_nodes]
        raw = total_nodes  # before clipping at zero
        for t in sorted(deltas):
            raw += deltas[t]
            level = max(raw, 0)
            if level != nodes[-1]:
                times.append(t)
                nodes.append(level)
        return times, nodes

    def at(self, t: float, total_nodes: int) -> int:
        """The effective capacity at time ``t``."""
        times, nodes = self.levels(total_nodes)
        return nodes[int(np.searchsorted(np.asarray(times), t, side="right")) - 1]


def latest_fit_start(end: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """The largest float ``t`` with ``t + duration <= end`` in float64 arithmetic (vectorised).

    ``end = inf`` gives ``inf``. The engine tests "fits for its whole limit" against the
    breakpoints strictly before ``now + time_limit`` computed in float64, so this is the exact
    last start that still fits before a capacity drop at ``end``.
    """
    end = np.asarray(end, dtype=np.float64)
    duration = np.asarray(duration, dtype=np.float64)
    t = end - duration
    for _ in range(64):  # a couple of ulps at most; bounded for safety
        over = t + duration > end
        if not over.any():
            break
        t = np.where(over, np.nextafter(t, -INF), t)
    for _ in range(64):
        nxt = np.nextafter(t, INF)
        under = (nxt + duration <= end) & np.isfinite(t)
        if not under.any():
            break
        t = np.where(under, nxt, t)
    return np.where(np.isinf(end), INF, t)


def latest_starts(
    times: list[float], levels: list[int], submit: np.ndarray, nodes: np.ndarray, limit: np.ndarray
) -> np.ndarray:
    """Per job, the latest start ``t >= submit`` at which the capacity alone (an empty machine)
    offers ``nodes`` throughout ``[t, t + limit)``; ``inf`` when the final level is enough, NaN
    when there is no such ``t`` at all (the job can never run)."""
    submit = np.asarray(submit, dtype=np.float64)
    nodes = np.asarray(nodes, dtype=np.int64)
    limit = np.asarray(limit, dtype=np.float64)
    n = submit.shape[0]
    out = np.full(n, np.nan)
    lev = np.asarray(levels, dtype=np.int64)
    bounds = np.append(np.asarray(times[1:], dtype=np.float64), INF)  # end of each level
    starts = np.asarray(times, dtype=np.float64)
    for size in np.unique(nodes).tolist():
        rows = np.flatnonzero(nodes == size)
        ok = lev >= size
        if not ok.any():
            continue
        # maximal runs of levels >= size: [run_start, run_end)
        edges = np.diff(np.concatenate(([0], ok.astype(np.int8), [0])))
        first = np.flatnonzero(edges == 1)
        last = np.flatnonzero(edges == -1) - 1
        left = np.full(rows.shape[0], True)
        for a, b in zip(first[::-1].tolist(), last[::-1].tolist()):  # latest run first
            if not left.any():
                break
            r = rows[left]
            t_end = latest_fit_start(np.full(r.shape[0], bounds[b]), limit[r])
            t_from = np.maximum(starts[a], submit[r])
            good = t_end >= t_from
            out[r[good]] = t_end[good]
            left[np.flatnonzero(left)[good]] = False
    return out
