"""One display unit per metric, for every table, sentence and axis that shows a metric.

Metrics are computed and stored in base units (``sim.metrics``: seconds, fractions; MLflow,
``seed_metrics.csv`` and ``result.json`` keep them so). People read them in the unit this
table names: every wait-like duration in hours, utilization in percent, so that a report never
shows seconds in one cell and minutes in the next (issue 24 item 7), and a header can name the
unit once. Numbers are written in plain decimal notation, never ``1.2e+05``, with as many
decimals as a column's typical value needs for three significant digits.

``unit(metric)`` also understands the prefixed forms (``queue/<q>/wait_mean``,
``partition/<p>/node_utilization``) and the ``_std`` / ``_ci95`` companions.
Pure functions, no I/O: the report, search.html and the terminal summary can all use them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Unit:
    name: str  # what a header shows in parentheses ("" for a dimensionless ratio)
    scale: float  # shown value = stored value / scale
    difference: str = ""  # the unit of a difference, when not ``name`` (percentage points)

    @property
    def difference_name(self) -> str:
        return self.difference or self.name


HOURS = Unit("h", 3600.0)
PERCENT = Unit("%", 0.01, "pp")
RATIO = Unit("", 1.0)
JOBS = Unit("jobs", 1.0)

# metric (as sim.metrics names it) -> how it is shown
UNITS: dict[str, Unit] = {
    "wait_mean": HOURS, "wait_median": HOURS, "wait_p90": HOURS, "wait_p95": HOURS,
    "wait_p99": HOURS, "wait_max": HOURS, "turnaround_mean": HOURS, "makespan": HOURS,
    "user_wait_mean_max": HOURS,
    "utilization": PERCENT, "node_utilization": PERCENT, "core_utilization": PERCENT,
    "gpu_utilization": PERCENT, "offered_load": PERCENT,
    "bsld_mean": RATIO, "bsld_p95": RATIO, "user_bsld_jain": RATIO,
    "throughput": Unit("jobs/h", 1.0),
    "queue_length_mean": JOBS, "queue_length_max": JOBS,
    "jobs_simulated": JOBS, "jobs_rejected": JOBS, "jobs_killed": JOBS, "users": Unit("users", 1.0),
    "node_hours": Unit("node-h", 1.0),
}


# Waits, slowdowns and rejections are better lower; these are better higher.
HIGHER_IS_BETTER = frozenset({"utilization", "node_utilization", "core_utilization", "gpu_utilization",
                              "user_bsld_jain", "throughput", "jobs_simulated"})


def lower_is_better(metric: str) -> bool:
    """Whether a smaller value of ``metric`` is the better one (waits yes, utilization no)."""
    return base_metric(metric) not in HIGHER_IS_BETTER


def base_metric(metric: str) -> str:
    """``queue/q/wait_mean_ci95`` -> ``wait_mean``."""
    name = metric.rsplit("/", 1)[-1]
    for suffix in ("_ci95", "_std"):
        if name.endswith(suffix) and name[: -len(suffix)] in UNITS:
            return name[: -len(suffix)]
    return name


def unit(metric: str) -> Unit:
    """The display unit of a metric (dimensionless when the table does not know it)."""
    return UNITS.get(base_metric(metric), RATIO)


def header(metric: str, label: str, *, difference: bool = False) -> str:
    """A column header naming the unit: ``mean wait (h)``; a ratio keeps its bare label."""
    u = unit(metric)
    name = u.difference_name if difference else u.name
    return f"{label} ({name})" if name else label


def shown(metric: str, value: float) -> float:
    """The stored value in the metric's display unit."""
    return float(value) / unit(metric).scale


def decimals(metric: str, values: Iterable[float]) -> int:
    """Decimals that give the typical (median) shown value three significant digits, 0-4."""
    sizes = sorted(abs(shown(metric, v)) for v in values
                   if v is not None and math.isfinite(v) and v != 0)
    if not sizes:
        return 1
    typical = sizes[len(sizes) // 2]
    return min(max(2 - math.floor(math.log10(typical)), 0), 4)


def number(metric: str, value, places: int | None = None, *, signed: bool = False) -> str:
    """``value`` in the metric's unit, plain decimal notation, no unit name ("–" if missing).
    ``signed``: a leading + or a real minus sign (differences)."""
    if value is None or not math.isfinite(value):
        return "–"
    places = decimals(metric, [value]) if places is None else places
    text = f"{abs(shown(metric, value)):,.{places}f}"
    if signed and float(text.replace(",", "")) != 0:
        return ("+" if value > 0 else "−") + text
    return ("−" + text) if value < 0 and float(text.replace(",", "")) != 0 else text


def quantity(metric: str, value, places: int | None = None, *, signed: bool = False,
             difference: bool = False) -> str:
    """``number`` followed by the unit's name: ``3.21 h``, ``69.7 %``, ``+1.20 pp``."""
    text = number(metric, value, places, signed=signed)
    u = unit(metric)
    name = u.difference_name if difference or signed else u.name
    return f"{text} {name}" if name and text != "–" else text
