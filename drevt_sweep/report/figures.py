"""Figures of schedules and sweeps: pure functions from arrays and frames to matplotlib Figures.

Nothing here knows of MLflow or Hydra. Every ``*_figure`` function returns a
``matplotlib.figure.Figure`` (inspect it in tests, or save it with ``save_figure``, which writes
a PNG and closes the figure). The Agg backend is selected before pyplot is imported, so this
works on machines without a display and in worker processes. Mathtext and TeX are off for
the same reason of robustness: labels come from user data (see below the imports).

Schedules come in as a *schedule frame*: a pandas DataFrame with the columns of the schedule CSV
(``outputs.SCHEDULE_COLUMNS``: ``job_id, job_submit_time, begin_time, end_time, num_nodes,
time_limit, actual_run_time`` and more), one row per job that ran, so a frame read back with
``pd.read_csv`` from ``schedule_seed<N>.csv`` and one built by ``schedule_frame(jobs, schedule)``
plot the same. Times are epoch seconds.

Large schedules are binned, never drawn job by job: the utilization and queue-length curves are
exact time averages over at most ``MAX_BINS`` bins computed with sorts, ``searchsorted`` and
cumulative sums, and the wait-time CDF is evaluated on a fixed log-spaced grid, so a 1,000,000-job
schedule draws a small figure in about a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display needed, safe in any process

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

# Every text drawn here can carry user data (trace and queue names, override values, labels):
# with mathtext on, a name such as ``$\\frac$`` is parsed as math and the figure fails to draw
# (issue 29 item 3). Text objects read these settings when they are created, so turning both
# off once, before any figure exists, covers every title, label, legend and tick of every
# figure of the report and of search.html. No figure of ours uses mathtext
# (``PlainLogFormatter`` writes log ticks as plain text).
matplotlib.rcParams["text.parse_math"] = False
matplotlib.rcParams["text.usetex"] = False

from .. import units  # noqa: E402
from ..sim.metrics import BSLD_TAU, bounded_slowdown, node_seconds  # noqa: E402

MAX_BINS = 2000
DEFAULT_BINS = 400  # the default aims at this many bins at most
WAIT_FLOOR = 1.0  # seconds: waits at or below this (zero included) sit at the CDF's left edge
GANTT_MAX_JOBS = 400
DPI = 110

REPLAY_LABEL = "replay baseline (history)"
REPLAY_STYLE = {"color": "black", "linestyle": "--", "linewidth": 1.6}

# Job-size classes by nodes: 1, 2-4, 5-16, 17-64, ... (powers of 4).
SIZE_EDGES = (1, 2, 5, 17, 65, 257, 1025, 4097, 16385, 65537)
# Requested-time classes (the time limit), in seconds.
LIMIT_EDGES = (0.0, 600.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 24 * 3600.0, math.inf)
LIMIT_LABELS = ("≤ 10 min", "10 min–1 h", "1–4 h", "4–12 h", "12–24 h", "> 24 h")

# The sweep comparison: metric -> (panel title, kind); kind "wait" is shown in a time unit.
COMPARISON_METRICS: dict[str, tuple[str, str]] = {
    "wait_mean": ("mean wait", "wait"),
    "wait_p95": ("95th percentile of the wait", "wait"),
    "bsld_mean": (f"mean bounded slowdown (τ = {BSLD_TAU:g} s)", "ratio"),
    "utilization": ("utilization", "fraction"),
}
METRIC_LABELS = {name: title for name, (title, _) in COMPARISON_METRICS.items()}
METRIC_LABELS.update(
    wait_median="median wait",
    wait_p90="90th percentile of the wait",
    wait_p99="99th percentile of the wait",
    bsld_p95="95th percentile of the bounded slowdown",
    makespan="makespan",
    users="users",
    user_wait_mean_max="worst user's mean wait",
    user_bsld_jain="Jain's index of users' mean bounded slowdown",
    queue_length_mean="mean queue length",
    turnaround_mean="mean turnaround",
)


# --------------------------------------------------------------------------- frames and saving
def schedule_frame(jobs, schedule) -> pd.DataFrame:
    """The schedule-CSV columns of a ``JobTable`` + ``Schedule`` (rejected jobs left out)."""
    ran = ~np.asarray(schedule.rejected, dtype=bool)
    return pd.DataFrame(
        {
            "job_id": np.asarray(jobs.job_id)[ran],
            "job_submit_time": np.asarray(jobs.submit, dtype=float)[ran],
            "begin_time": np.asarray(schedule.begin, dtype=float)[ran],
            "end_time": np.asarray(schedule.end, dtype=float)[ran],
            "num_nodes": np.asarray(jobs.num_nodes)[ran],
            "time_limit": np.asarray(jobs.time_limit, dtype=float)[ran],
            "actual_run_time": np.asarray(schedule.run_time, dtype=float)[ran],
        }
    )


def read_schedule_csv(path) -> pd.DataFrame:
    """A schedule CSV written by ``outputs.write_schedule_csv`` as a schedule frame."""
    return pd.read_csv(path, usecols=lambda c: c != "queue", low_memory=False)


def _column(frame: pd.DataFrame, name: str) -> np.ndarray:
    return np.asarray(frame[name], dtype=float)


def waits_of(data) -> np.ndarray:
    """Wait times (begin − submit) of a schedule frame, or an array of waits as given."""
    if isinstance(data, pd.DataFrame):
        return _column(data, "begin_time") - _column(data, "job_submit_time")
    return np.asarray(data, dtype=float)


def save_figure(fig: Figure, path, dpi: int = DPI) -> Path:
    """Write ``fig`` as a PNG (creating the folder) and close it; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=dpi)
    plt.close(fig)
    return path


def _new_figure(width: float, height: float, nrows: int = 1, ncols: int = 1, **kw):
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kw)
    return fig, axes


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


class PlainLogFormatter(matplotlib.ticker.LogFormatter):
    """Log-axis labels as plain text: 0.1, 1, 10, ... 1000, then 10⁴ (Unicode superscripts).
    Matplotlib's default writes them as mathtext (``$10^{4}$``), and building its parser is
    a third of the time of a configuration's figures (measured: ~0.5 s of 1.4 s)."""

    def _num_to_string(self, x, vmin, vmax):
        if 1e-3 <= x < 1e4:
            return f"{x:g}"
        mantissa, exponent = f"{x:.0e}".split("e")
        power = f"10{str(int(exponent)).translate(_SUPERSCRIPT)}"
        return power if mantissa == "1" else f"{mantissa}×{power}"


def log_scale(ax, which: str = "y") -> None:
    """A log scale on ``ax``'s x or y axis, labelled by :class:`PlainLogFormatter`. Minor ticks
    at 2 and 5 of each decade, not matplotlib's 2-9: each tick is an object of its own that
    the layout measures twice, and the eight of them were a quarter of drawing a sweep's
    curves figure (378 -> 288 ms for five panels, four on log axes)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_minor_locator(matplotlib.ticker.LogLocator(subs=(2.0, 5.0)))
    axis.set_major_formatter(PlainLogFormatter(labelOnlyBase=False))
    axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False))  # as matplotlib's default


# --------------------------------------------------------------------------- time axes
@dataclass(frozen=True)
class TimeUnit:
    name: str
    seconds: float


_UNITS = (TimeUnit("s", 1.0), TimeUnit("min", 60.0), TimeUnit("h", 3600.0), TimeUnit("days", 86400.0))


def time_unit(span_seconds: float) -> TimeUnit:
    """A readable unit for a duration: seconds up to 10 min, then minutes, hours, days."""
    span = abs(float(span_seconds)) if np.isfinite(span_seconds) else 0.0
    if span <= 600:
        return _UNITS[0]
    if span <= 3 * 3600:
        return _UNITS[1]
    if span <= 3 * 86400:
        return _UNITS[2]
    return _UNITS[3]


def _duration_text(seconds: float) -> str:
    for unit in reversed(_UNITS):
        value = seconds / unit.seconds
        if value >= 1:
            name = unit.name if unit.name != "days" or value != 1 else "day"
            return f"{value:.3g} {name}"
    return f"{seconds:.3g} s"


def _origin_note(t0: float) -> str:
    """``t = 0`` as a UTC date when the times look like real epoch seconds."""
    if t0 > 3e8:  # after 1979: a real date rather than a relative trace
        stamp = pd.Timestamp(t0, unit="s", tz="UTC").strftime("%Y-%m-%d %H:%M UTC")
        return f"; 0 = first submit, {stamp}"
    return "; 0 = first submit"


# --------------------------------------------------------------------------- wait-time CDF
def ecdf_on_grid(waits: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Fraction of ``waits`` at or below each grid value (``waits`` need not be sorted)."""
    waits = np.sort(np.asarray(waits, dtype=float)[np.isfinite(waits)])
    if waits.size == 0:
        return np.full(grid.shape, np.nan)
    return np.searchsorted(waits, grid, side="right") / waits.size


def _wait_grid(all_waits: Sequence[np.ndarray], points: int = 600) -> np.ndarray:
    top = max((float(np.nanmax(w)) for w in all_waits if np.isfinite(w).any()), default=WAIT_FLOOR)
    top = max(top, WAIT_FLOOR * 10)
    return np.geomspace(WAIT_FLOOR, top * 1.05, points)


def wait_cdf_figure(
    curves: Mapping[str, object],
    baseline=None,
    *,
    baseline_label: str = REPLAY_LABEL,
    seed_percentiles: Mapping[str, Mapping[float, tuple[float, float]]] | None = None,
    styles: Mapping[str, dict] | None = None,
    title: str = "Wait-time distribution",
) -> Figure:
    """The empirical CDF of the wait time of each configuration, on a log time axis.

    ``curves`` maps a legend label to a schedule frame or an array of waits; ``baseline``
    (the replay of the same trace: the real machine) is drawn as a black dashed reference;
    ``styles`` maps a label to line properties (e.g. colour by policy, dashes by model).
    Waits of 0 cannot sit on a log axis: every wait at or below ``WAIT_FLOOR`` is counted at the
    left edge, where a marker shows the CDF's jump, and the legend says what share of the jobs
    it holds. ``seed_percentiles`` optionally adds, per label, the mean ± 95% CI over seeds of
    some wait percentiles (``{0.5: (mean, half), 0.95: (...)}``) as horizontal error bars.
    """
    data = {label: waits_of(values) for label, values in curves.items()}
    base = waits_of(baseline) if baseline is not None else None
    grid = _wait_grid(list(data.values()) + ([base] if base is not None else []))
    fig, ax = _new_figure(8.0, 5.0 + 0.17 * math.ceil((len(data) + 1) / 2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    hour = units.unit("wait_mean").scale  # the axis in the waits' display unit, as the tables

    def draw(label, waits, style):
        finite = waits[np.isfinite(waits)]
        y = ecdf_on_grid(finite, grid)
        share = float((finite <= WAIT_FLOOR).mean()) if finite.size else float("nan")
        text = f"{label} ({share:.0%} wait ≤ {WAIT_FLOOR:g} s, n = {finite.size:,})"
        (line,) = ax.plot(grid / hour, y, label=text, **style)
        ax.plot([WAIT_FLOOR / hour], [y[0]], marker="o", color=line.get_color(), clip_on=False, zorder=5)
        return line

    marked = False
    for i, (label, waits) in enumerate(data.items()):
        style = {"color": colors[i % len(colors)], "linewidth": 1.8}
        style.update((styles or {}).get(label, {}))
        line = draw(label, waits, style)
        for q, (mean, half) in (seed_percentiles or {}).get(label, {}).items():
            if not (np.isfinite(mean) and mean > 0):
                continue
            marked = True
            err = half if np.isfinite(half) else 0.0
            ax.errorbar(
                [max(mean, WAIT_FLOOR) / hour], [q],
                xerr=[[min(err, mean - WAIT_FLOOR * 0.5) / hour], [err / hour]],
                fmt="|", color=line.get_color(), capsize=3, markersize=9, zorder=6,
            )
    if base is not None:
        draw(baseline_label, base, REPLAY_STYLE)
    if marked:
        ax.plot([], [], "|", color="grey", markersize=9,
                label="percentiles over seeds: mean ± 95% CI")
    log_scale(ax, "x")
    ax.set_xlim(WAIT_FLOOR / hour, grid[-1] / hour)
    ax.set_ylim(0, 1.005)
    ax.set_xlabel(f"wait time ({units.unit('wait_mean').name}, log scale; waits ≤ {WAIT_FLOOR:g} s, "
                  "0 included, at the left edge)")
    ax.set_ylabel("fraction of jobs with wait ≤ x")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", axis="x", alpha=0.1)
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2 if len(labels) > 3 else 1,
               fontsize=8)
    return fig


# --------------------------------------------------------------------------- binned time series
_NICE_WIDTHS = (
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 2 * 3600, 3 * 3600, 6 * 3600,
    12 * 3600, 86400, 2 * 86400, 7 * 86400, 14 * 86400, 28 * 86400,
)


def bin_edges(t0: float, t1: float, bins: int | None = None) -> np.ndarray:
    """Equal bins over ``[t0, t1]``: ``bins`` of them (at most ``MAX_BINS``), or by default the
    smallest round width (1 s ... 1 h, 6 h, 1 day, 1 week ...) that needs at most
    ``DEFAULT_BINS`` bins, so that a year-long trace is shown day by day."""
    if not (t1 > t0):
        t1 = t0 + 1.0
    if bins is not None:
        return np.linspace(t0, t1, int(min(max(bins, 1), MAX_BINS)) + 1)
    span = t1 - t0
    width = next((w for w in _NICE_WIDTHS if span / w <= DEFAULT_BINS), None)
    if width is None:
        return np.linspace(t0, t1, DEFAULT_BINS + 1)
    count = max(int(math.ceil(span / width)), 1)
    edges = t0 + width * np.arange(count + 1, dtype=float)
    edges[-1] = t1  # a shorter last bin: averages never count time after the end
    return edges


def step_profile(up: np.ndarray, down: np.ndarray, weight=None) -> tuple[np.ndarray, np.ndarray]:
    """A step function that rises by ``weight`` at each ``up`` time and falls back at ``down``.

    Returns the instants at which it changes and its value right after each (all the events of
    one instant applied together, as the metrics count them).
    """
    up = np.asarray(up, dtype=float)
    down = np.asarray(down, dtype=float)
    w = np.ones(up.size) if weight is None else np.asarray(weight, dtype=float)
    times = np.concatenate((up, down))
    deltas = np.concatenate((w, -w))
    keep = np.isfinite(times)
    if not keep.any():
        return np.zeros(0), np.zeros(0)
    instants, where = np.unique(times[keep], return_inverse=True)
    net = np.bincount(where, weights=deltas[keep], minlength=instants.size)
    return instants, np.cumsum(net)


def binned_mean_max(
    instants: np.ndarray, level: np.ndarray, edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Exact time average and maximum of a step function over each bin.

    The step function is 0 before ``instants[0]`` and equals ``level[i]`` on
    ``[instants[i], instants[i+1])``. Fully vectorised: a cumulative integral evaluated at the
    bin edges with ``searchsorted``, and ``maximum.reduceat`` for the peaks.
    """
    nbins = edges.size - 1
    if instants.size == 0:
        return np.zeros(nbins), np.zeros(nbins)
    origin = edges[0]
    t = instants - origin  # relative times keep the cumulative integral precise
    e = edges - origin
    integral = np.concatenate(([0.0], np.cumsum(level[:-1] * np.diff(t))))  # at each instant

    def cumulative(x):
        i = np.searchsorted(t, x, side="right") - 1
        inside = i >= 0
        j = np.where(inside, i, 0)
        return np.where(inside, integral[j] + level[j] * (x - t[j]), 0.0)

    widths = np.diff(e)
    mean = np.diff(cumulative(e)) / widths

    start = np.searchsorted(t, e[:-1], side="right") - 1  # the level holding at each bin's start
    at_start = np.where(start >= 0, level[np.maximum(start, 0)], 0.0)
    lo = np.searchsorted(t, e[:-1], side="right")  # events strictly inside the bin
    hi = np.searchsorted(t, e[1:], side="left")
    peak = at_start.copy()
    nonempty = np.flatnonzero(hi > lo)
    if nonempty.size:
        inner = np.maximum.reduceat(level[: hi[nonempty[-1]]], lo[nonempty])
        peak[nonempty] = np.maximum(peak[nonempty], inner)
    return mean, peak


def overall_utilization(frame: pd.DataFrame, total_nodes: int) -> float:
    """Busy node-seconds / (total_nodes × span), the span from first submit to last end (as in
    ``metrics.compute_metrics``)."""
    if not len(frame):
        return float("nan")
    span = np.nanmax(_column(frame, "end_time")) - np.nanmin(_column(frame, "job_submit_time"))
    busy = node_seconds(_column(frame, "num_nodes"), _column(frame, "end_time") - _column(frame, "begin_time"))
    return busy / (total_nodes * span) if span > 0 else float("nan")


def usage_series(frame: pd.DataFrame, total_nodes: int, edges: np.ndarray) -> dict[str, np.ndarray]:
    """Per bin: mean utilization, mean and peak queue length (jobs submitted, not yet started)."""
    submit = _column(frame, "job_submit_time")
    begin = _column(frame, "begin_time")
    end = _column(frame, "end_time")
    nodes = _column(frame, "num_nodes")
    busy_t, busy = step_profile(begin, end, nodes)
    busy_mean, busy_peak = binned_mean_max(busy_t, busy, edges)
    queue_t, queue = step_profile(submit, begin)
    queue_mean, queue_peak = binned_mean_max(queue_t, queue, edges)
    return {
        "utilization": busy_mean / float(total_nodes),
        "utilization_peak": busy_peak / float(total_nodes),
        "queue_mean": queue_mean,
        "queue_peak": queue_peak,
    }


def usage_figure(
    frame: pd.DataFrame,
    total_nodes: int,
    *,
    baseline: pd.DataFrame | None = None,
    baseline_label: str = REPLAY_LABEL,
    bins: int | None = None,
    label: str = "simulated",
    title: str = "Utilization and queue length over time",
) -> Figure:
    """Two panels sharing the time axis: the machine's utilization and the queue length.

    Both are exact time averages over at most ``MAX_BINS`` equal bins (the light band in the
    queue panel is the peak within each bin); the replay baseline, when given, is overlaid.
    """
    frames = [frame] + ([baseline] if baseline is not None else [])
    starts = [np.nanmin(_column(f, "job_submit_time")) for f in frames if len(f)]
    ends = [np.nanmax(_column(f, "end_time")) for f in frames if len(f)]
    t0 = min(starts) if starts else 0.0
    t1 = max(ends) if ends else 1.0
    edges = bin_edges(t0, t1, bins)
    unit = time_unit(t1 - t0)
    x = (0.5 * (edges[:-1] + edges[1:]) - t0) / unit.seconds
    fig, (top, bottom) = _new_figure(8.0, 5.6, nrows=2, sharex=True)
    series = usage_series(frame, total_nodes, edges) if len(frame) else None
    color = "tab:blue"
    if series is not None:
        top.plot(x, 100 * series["utilization"], color=color, linewidth=1.0,
                 label=f"{label} (overall {overall_utilization(frame, total_nodes):.1%})")
        bottom.fill_between(x, 0, series["queue_peak"], color=color, alpha=0.18, linewidth=0,
                            label=f"{label}: peak in bin")
        bottom.plot(x, series["queue_mean"], color=color, linewidth=1.0, label=f"{label}: mean")
    if baseline is not None and len(baseline):
        base = usage_series(baseline, total_nodes, edges)
        style = dict(REPLAY_STYLE, linewidth=0.8, alpha=0.8)
        top.plot(x, 100 * base["utilization"],
                 label=f"{baseline_label} (overall {overall_utilization(baseline, total_nodes):.1%})",
                 **style)
        bottom.plot(x, base["queue_mean"], label=f"{baseline_label}: mean", **style)
    top.axhline(100, color="grey", linewidth=0.8, linestyle=":")
    top.set_ylabel("utilization (%)")
    top.set_ylim(bottom=0)
    width = _duration_text(edges[1] - edges[0])
    top.set_title(f"{title}\n(time averages over {edges.size - 1} bins of {width}; "
                  f"{total_nodes:,} nodes)", fontsize=10)
    top.legend(loc="lower right", fontsize=8)
    bottom.set_ylabel("queue length (waiting jobs)")
    bottom.set_ylim(bottom=0)
    bottom.set_xlabel(f"time ({unit.name}{_origin_note(t0)})")
    bottom.legend(loc="upper right", fontsize=8)
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
        ax.set_xlim(0, (t1 - t0) / unit.seconds)
    return fig


# --------------------------------------------------------------------------- slowdown by class
def size_classes(nodes: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Class index per job (1, 2–4, 5–16, 17–64, ...) and the class labels."""
    edges = np.asarray(SIZE_EDGES)
    index = np.searchsorted(edges, np.asarray(nodes), side="right") - 1
    labels = []
    for lo, hi in zip(SIZE_EDGES[:-1], SIZE_EDGES[1:]):
        labels.append(str(lo) if hi - lo == 1 else f"{lo}–{hi - 1}")
    return np.clip(index, 0, len(labels) - 1), labels


def limit_classes(limit: np.ndarray) -> tuple[np.ndarray, list[str]]:
    index = np.searchsorted(np.asarray(LIMIT_EDGES), np.asarray(limit, dtype=float), side="left") - 1
    return np.clip(index, 0, len(LIMIT_LABELS) - 1), list(LIMIT_LABELS)


def slowdown_by_class(frame: pd.DataFrame, by: str, tau: float = BSLD_TAU) -> pd.DataFrame:
    """Jobs, mean and median bounded slowdown per class (``by`` = "size" or "limit")."""
    wait = waits_of(frame)
    run = _column(frame, "actual_run_time")
    bsld = bounded_slowdown(np.maximum(wait, 0.0), run, tau)
    if by == "size":
        index, labels = size_classes(_column(frame, "num_nodes"))
    elif by == "limit":
        index, labels = limit_classes(_column(frame, "time_limit"))
    else:
        raise ValueError(f"by must be 'size' or 'limit', got {by!r}")
    k = len(labels)
    count = np.bincount(index, minlength=k)
    total = np.bincount(index, weights=bsld, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count
    median = np.full(k, np.nan)
    for c in np.flatnonzero(count):  # at most ~10 classes
        median[c] = np.median(bsld[index == c])
    return pd.DataFrame({"class": labels, "jobs": count, "mean": mean, "median": median})


def slowdown_figure(
    frames: Mapping[str, pd.DataFrame],
    *,
    tau: float = BSLD_TAU,
    title: str = "Bounded slowdown by job class",
    styles: Mapping[str, dict] | None = None,
) -> Figure:
    """Mean bounded slowdown by job size (nodes) and by requested time, one bar per schedule."""
    fig, axes = _new_figure(10.0, 4.4, ncols=2)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = dict(styles or {})
    for ax, by, xlabel in (
        (axes[0], "size", "job size (nodes)"),
        (axes[1], "limit", "requested time (time limit)"),
    ):
        tables = {label: slowdown_by_class(f, by, tau) for label, f in frames.items()}
        present = np.zeros(len(next(iter(tables.values()))) if tables else 0, dtype=bool)
        for table in tables.values():
            present |= table["jobs"].to_numpy() > 0
        keep = np.flatnonzero(present)
        width = 0.8 / max(len(tables), 1)
        values = []
        for i, (label, table) in enumerate(tables.items()):
            y = table["mean"].to_numpy()[keep]
            values.append(y)
            style = styles.get(label, {})
            face = style.get("color", colors[i % len(colors)])
            ax.bar(np.arange(keep.size) + (i - (len(tables) - 1) / 2) * width, y, width,
                   label=label, color=face, edgecolor=style.get("edgecolor", face),
                   hatch=style.get("hatch"), alpha=style.get("alpha", 0.9))
        first = next(iter(tables.values())) if tables else None
        ticks = [f"{first['class'][c]}\nn={int(first['jobs'][c]):,}" for c in keep] if first is not None else []
        ax.set_xticks(np.arange(keep.size), ticks, fontsize=8)
        finite = np.concatenate(values) if values else np.zeros(0)
        finite = finite[np.isfinite(finite) & (finite > 0)]
        if finite.size and finite.max() / finite.min() > 20:
            log_scale(ax, "y")
            ax.set_ylabel(f"mean bounded slowdown (τ = {tau:g} s, log scale)")
        else:
            ax.set_ylabel(f"mean bounded slowdown (τ = {tau:g} s)")
        ax.set_xlabel(xlabel)
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_title(f"by {xlabel}", fontsize=10)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    return fig


# --------------------------------------------------------------------------- Gantt chart
def assign_slots(begin: np.ndarray, end: np.ndarray, nodes: np.ndarray) -> list[list[tuple[int, int]]]:
    """Node slots for each job: lists of ``(first, count)`` runs, lowest free slots first.

    A contiguous block is used whenever one is free, so most jobs draw as one rectangle. Jobs
    that over-commit the machine (a replayed trace) get slots above the highest in use.
    """
    order = np.lexsort((-np.asarray(nodes), np.asarray(begin)))
    ends_by_slot: list[float] = []  # the time each slot becomes free
    result: list[list[tuple[int, int]]] = [[] for _ in range(len(begin))]
    for j in order:
        b, e, k = float(begin[j]), float(end[j]), int(nodes[j])
        free = [s for s, t in enumerate(ends_by_slot) if t <= b]
        runs: list[tuple[int, int]] = []
        # the first contiguous run of k free slots, if any
        start, length = None, 0
        chosen = None
        previous = None
        for s in free:
            if previous is not None and s == previous + 1:
                length += 1
            else:
                start, length = s, 1
            previous = s
            if length == k:
                chosen = list(range(start, start + k))
                break
        if chosen is None:
            chosen = free[:k]
            chosen += list(range(len(ends_by_slot), len(ends_by_slot) + k - len(chosen)))
        for s in chosen:
            if s >= len(ends_by_slot):
                ends_by_slot.extend([-math.inf] * (s + 1 - len(ends_by_slot)))
            ends_by_slot[s] = e
        for s in sorted(chosen):
            if runs and runs[-1][0] + runs[-1][1] == s:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                runs.append((s, 1))
        result[j] = runs
    return result


def gantt_figure(
    frame: pd.DataFrame,
    total_nodes: int,
    *,
    max_jobs: int = GANTT_MAX_JOBS,
    title: str = "Gantt chart of the schedule",
) -> Figure:
    """Each job as a rectangle: x = begin to end, y = the node slots it held, labelled by id.

    Slots are assigned for the picture (the simulator does not place jobs on named nodes): the
    lowest free slots, contiguous when possible. Readable up to a few hundred jobs:
    more than ``max_jobs`` raises ``ValueError``.
    """
    n = len(frame)
    if n > max_jobs:
        raise ValueError(f"a Gantt chart of {n} jobs is unreadable; at most {max_jobs}")
    submit = _column(frame, "job_submit_time")
    begin = _column(frame, "begin_time")
    end = _column(frame, "end_time")
    nodes = np.asarray(frame["num_nodes"], dtype=np.int64)
    ids = np.asarray(frame["job_id"])
    t0 = float(np.nanmin(submit)) if n else 0.0
    t1 = float(np.nanmax(end)) if n else 1.0
    unit = time_unit(t1 - t0)
    slots = assign_slots(begin, end, nodes) if n else []
    used = max((s + c for runs in slots for s, c in runs), default=total_nodes)
    height = min(2.5 + 0.12 * max(total_nodes, used), 9.0)
    fig, ax = _new_figure(10.0, height)
    cmap = plt.get_cmap("tab20")
    span = max(t1 - t0, 1e-9)
    ymax = max(total_nodes, used)
    for j in range(n):
        color = cmap(j % 20)
        edge = tuple(0.55 * c for c in color[:3])
        x0 = (begin[j] - t0) / unit.seconds
        w = (end[j] - begin[j]) / unit.seconds
        for s, c in slots[j]:
            ax.broken_barh([(x0, w)], (s, c), facecolors=color, edgecolors=edge, linewidth=0.5)
        s, c = max(slots[j], key=lambda r: r[1])
        wide = (end[j] - begin[j]) / span > 0.04
        tall = c / ymax > 0.025
        if wide and tall:
            ax.text(x0 + w / 2, s + c / 2, str(ids[j]), ha="center", va="center",
                    fontsize=7 if c / ymax > 0.05 else 6, clip_on=True)
    ax.axhline(total_nodes, color="red", linewidth=1.0, linestyle="--",
               label=f"machine size ({total_nodes} nodes)")
    ax.set_ylim(0, ymax + max(1.0, 0.09 * ymax))  # head room for the legend
    ax.set_xlim(0, span / unit.seconds)
    ax.set_xlabel(f"time ({unit.name}{_origin_note(t0)})")
    ax.set_ylabel("node slot")
    ax.set_title(f"{title}: {n} jobs on {total_nodes} nodes (labels = job id)")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    return fig


# --------------------------------------------------------------------------- sweep comparison
def _axis_name(kind: str, unit_name: str) -> str:
    return {"wait": "wait", "fraction": "utilization", "ratio": "slowdown"}.get(kind, "value") + unit_name


def comparison_figure(
    table: pd.DataFrame,
    *,
    x: str = "policy",
    hue: str = "model",
    metrics: Sequence[str] = tuple(COMPARISON_METRICS),
    reference: pd.DataFrame | None = None,
    reference_hues: Iterable[str] | None = None,
    legend_title: str | None = "run-time model",
    title: str = "Policies × run-time models: mean over seeds ± 95% CI",
) -> Figure:
    """Each metric by ``x`` (policy) and ``hue`` (run-time model), mean ± 95% CI over seeds.

    ``table`` has one row per configuration with columns ``x``, ``hue``, ``<metric>`` and
    ``<metric>_ci95`` (a NaN or zero half-width draws no bar). ``reference`` rows (the replay
    baseline) are drawn as horizontal dashed lines labelled by their ``hue``; with
    ``reference_hues`` only beside the points of those hues (the configurations that use the
    recorded run times, to which the history compares), and not at all when there are none.
    A panel whose values span more than a factor 30 uses a log axis.
    """
    xs = list(dict.fromkeys(table[x].astype(str)))
    hues = list(dict.fromkeys(table[hue].astype(str)))
    ncols = 2 if len(metrics) > 1 else 1
    nrows = math.ceil(len(metrics) / ncols)
    fig, axes = _new_figure(5.2 * ncols, 3.6 * nrows + 0.5, nrows=nrows, ncols=ncols, squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    markers = "osD^vP*Xh"
    width = 0.7 / max(len(hues), 1)
    for k, metric in enumerate(metrics):
        ax = axes[k // ncols][k % ncols]
        panel_title, kind = COMPARISON_METRICS.get(metric, (METRIC_LABELS.get(metric, metric), "ratio"))
        mean = table[metric].to_numpy(dtype=float) if metric in table else np.full(len(table), np.nan)
        half_col = f"{metric}_ci95"
        half = table[half_col].to_numpy(dtype=float) if half_col in table else np.zeros(len(table))
        ref = reference if reference is not None and len(reference) else None
        ref_mean = ref[metric].to_numpy(dtype=float) if ref is not None and metric in ref else np.zeros(0)
        display = units.unit(metric)  # the tables' unit, whatever the values' size
        scale, unit_name = display.scale, f" ({display.name})" if display.name else ""
        for i, h in enumerate(hues):
            rows = np.flatnonzero(table[hue].astype(str).to_numpy() == h)
            pos = np.array([xs.index(str(v)) for v in table[x].astype(str).to_numpy()[rows]], dtype=float)
            pos += (i - (len(hues) - 1) / 2) * width
            y = mean[rows] / scale
            err = np.where(np.isfinite(half[rows]), half[rows], 0.0) / scale
            lower = np.minimum(err, np.where(y > 0, y * 0.95, err))  # log axes: stay above 0
            ax.errorbar(pos, y, yerr=[lower, err], fmt=markers[i % len(markers)],
                        color=colors[i % len(colors)], capsize=4, markersize=6, label=h,
                        linestyle="none")
        beside = None
        if reference_hues is not None:  # short segments across the points of those hues
            beside = [xs.index(str(v)) + (hues.index(str(h)) - (len(hues) - 1) / 2) * width
                      for v, h in zip(table[x].astype(str), table[hue].astype(str))
                      if str(h) in set(reference_hues)]
        for j, (_, row) in enumerate(ref.iterrows() if ref is not None else []):
            value = float(row.get(metric, np.nan))
            if not np.isfinite(value) or beside == []:
                continue
            name = REPLAY_LABEL if ref is not None and len(ref) == 1 else f"{REPLAY_LABEL}: {row[hue]}"
            style = dict(REPLAY_STYLE, linewidth=1.2)
            if beside is None:
                ax.axhline(value / scale, label=name, **style)
            else:
                ax.hlines([value / scale] * len(beside), np.array(beside) - width * 0.45,
                          np.array(beside) + width * 0.45, label=name, **style)
        values = np.concatenate((mean, ref_mean)) / scale
        values = values[np.isfinite(values) & (values > 0)]
        log = values.size > 0 and values.max() / values.min() > 30
        if log:
            log_scale(ax, "y")
        elif kind == "fraction":
            ax.set_ylim(0, max(100.0, float(values.max()) * 1.05) if values.size else 100.0)
        ax.set_xticks(range(len(xs)), xs)
        ax.set_xlim(-0.6, len(xs) - 0.4)
        ax.set_xlabel(x)
        ax.set_ylabel(_axis_name(kind, unit_name) + (", log scale" if log else ""), fontsize=9)
        ax.set_title(panel_title, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3, which="both" if log else "major")
    handles, labels = axes[0][0].get_legend_handles_labels()
    for k in range(len(metrics), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 4),
                   fontsize=8, title=legend_title or hue)
    fig.suptitle(title)
    return fig


# --------------------------------------------------------------------------- paired comparisons
@dataclass(frozen=True)
class PairedDifference:
    """B − A over common seeds: the paired mean difference and two 95% CI half-widths."""

    n: int
    mean_a: float
    mean_b: float
    difference: float
    paired_ci95: float  # from the per-seed differences (common random numbers)
    unpaired_ci95: float  # Welch's interval, as if the two samples were independent

    @property
    def ratio(self) -> float:
        """How many times wider the unpaired interval is."""
        if self.paired_ci95 > 0 and np.isfinite(self.unpaired_ci95):
            return self.unpaired_ci95 / self.paired_ci95
        return float("nan")


def _by_seed(values) -> dict:
    """``{seed: value}`` of the finite values of a Series or mapping keyed by seed (plain dicts:
    a report pairs thousands of configurations, and pandas indexing cost ms per pair)."""
    if isinstance(values, pd.Series):
        keys, numbers = values.index.tolist(), values.to_numpy(dtype=float)
    else:
        keys, numbers = list(values), np.array([values[k] for k in values], dtype=float)
    return {k: float(v) for k, v in zip(keys, numbers) if np.isfinite(v)}


def paired_difference(a: Mapping[int, float] | pd.Series, b: Mapping[int, float] | pd.Series) -> PairedDifference:
    """Compare B with A at the seeds both have (keys are seeds).

    With common random numbers each seed's B − A difference removes the variation the two share
    (the same drawn run times), so its CI is far tighter than Welch's CI for two independent
    means. With one common seed the CIs are NaN (exact for deterministic configurations).
    """
    da, db = _by_seed(a), _by_seed(b)
    seeds = sorted(set(da) & set(db))
    nan = float("nan")
    if not seeds:
        return PairedDifference(0, nan, nan, nan, nan, nan)
    xa = np.array([da[s] for s in seeds])
    xb = np.array([db[s] for s in seeds])
    d = xb - xa
    n = len(seeds)
    if n < 2:
        return PairedDifference(n, float(xa.mean()), float(xb.mean()), float(d.mean()), nan, nan)
    from scipy.special import stdtrit  # scipy.stats.t.ppf's own quantile, without importing scipy.stats

    t = stdtrit(n - 1, 0.975)
    paired = float(t * d.std(ddof=1) / math.sqrt(n))
    va, vb = xa.var(ddof=1) / n, xb.var(ddof=1) / n
    se = math.sqrt(va + vb)
    if se > 0:
        df = (va + vb) ** 2 / ((va**2 + vb**2) / (n - 1)) if (va > 0 or vb > 0) else n - 1
        unpaired = float(stdtrit(df, 0.975) * se)
    else:
        unpaired = 0.0
    return PairedDifference(n, float(xa.mean()), float(xb.mean()), float(d.mean()), paired, unpaired)


def paired_figure(
    table: pd.DataFrame,
    *,
    title: str = "Paired differences over common seeds: 95% CI, paired vs unpaired",
) -> Figure:
    """A forest plot: one row per comparison, one column per metric, each cell on its own scale.

    ``table`` has columns ``comparison`` (e.g. "easy − fcfs · lognormal"), ``metric``,
    ``difference``, ``paired_ci95`` and ``unpaired_ci95``. In each cell the thick blue bar is
    the paired CI of the difference (common random numbers) and the thin grey bar below it the
    CI that ignores the pairing; the vertical line is 0 (no difference).
    """
    metrics = list(dict.fromkeys(table["metric"]))
    comparisons = list(dict.fromkeys(table["comparison"]))
    nrows, ncols = max(len(comparisons), 1), max(len(metrics), 1)
    fig, axes = _new_figure(2.4 + 3.2 * ncols, 1.2 + 1.0 * nrows, nrows=nrows, ncols=ncols,
                            squeeze=False)
    for k, metric in enumerate(metrics):
        rows = table[table["metric"] == metric]
        for i, comparison in enumerate(comparisons):
            ax = axes[i][k]
            ax.axvline(0, color="black", linewidth=0.8)
            ax.grid(True, axis="x", alpha=0.3)
            ax.set_yticks([0.0], [comparison] if k == 0 else [""], fontsize=8)
            ax.set_ylim(0.6, -0.45)
            ax.tick_params(axis="x", labelsize=7)
            match = rows[rows["comparison"] == comparison]
            if match.empty:
                ax.set_xticks([])
                continue
            row = match.iloc[0]
            display = units.unit(metric)
            scale = display.scale
            unit_name = f" ({display.difference_name})" if display.difference_name else ""
            diff = row["difference"] / scale
            paired = row["paired_ci95"] / scale
            unpaired = row["unpaired_ci95"] / scale
            ax.errorbar([diff], [0.0], xerr=[paired if np.isfinite(paired) else 0.0], fmt="o",
                        color="tab:blue", ecolor="tab:blue", capsize=4, linewidth=2.4, markersize=5)
            if np.isfinite(unpaired):
                ax.errorbar([diff], [0.3], xerr=[unpaired], fmt="none", ecolor="grey", capsize=3,
                            linewidth=1.0)
            widest = max((w for w in (paired, unpaired) if np.isfinite(w)), default=0.0)
            lo, hi = min(0.0, diff - widest), max(0.0, diff + widest)
            pad = 0.08 * (hi - lo) if hi > lo else 1.0
            ax.set_xlim(lo - pad, hi + pad)
            ax.set_xlabel(f"B − A{unit_name}", fontsize=8, labelpad=1)
        label = METRIC_LABELS.get(metric, metric)
        axes[0][k].set_title(label, fontsize=10)
    handles = [
        axes[0][0].errorbar([], [], xerr=[], fmt="o", color="tab:blue", linewidth=2.4,
                            label="paired 95% CI (per-seed differences, common random numbers)"),
        axes[0][0].errorbar([], [], xerr=[], fmt="none", ecolor="grey",
                            label="unpaired 95% CI (Welch, as if independent)"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8)
    fig.suptitle(title, fontsize=11)
    return fig


# --------------------------------------------------------------------------- metric curves
MAX_LEGEND_LINES = 16  # a legend with more entries hides the panels


def metric_curves_figure(
    table: pd.DataFrame,
    *,
    x: str,
    line: str = "line",
    metrics: Sequence[str] = ("wait_mean", "wait_p95", "bsld_mean", "utilization"),
    x_label: str | None = None,
    legend_title: str | None = None,
    title: str = "mean over seeds ± 95% CI",
) -> Figure:
    """One panel per metric against the swept number ``x``, one line (with its seed CI as a
    band) per value of ``line``. Values in the metric's display unit (``units.unit``), the same
    as the report's tables; a panel spanning more than a factor 30 uses a log axis."""
    from .. import units

    ncols = min(len(metrics), 3)
    nrows = math.ceil(len(metrics) / ncols)
    groups = list(dict.fromkeys(table[line].astype(str)))
    legend_rows = math.ceil(len(groups) / 3) if len(groups) <= MAX_LEGEND_LINES else 1
    fig, axes = _new_figure(4.6 * ncols, 3.8 * nrows + 0.25 * legend_rows, nrows=nrows, ncols=ncols,
                            squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = ["-", "--", ":", "-."]
    for k, metric in enumerate(metrics):
        ax = axes[k // ncols][k % ncols]
        label = METRIC_LABELS.get(metric, metric.replace("_", " "))
        all_values = table[metric].to_numpy(dtype=float) / units.unit(metric).scale
        for i, g in enumerate(groups):
            rows = table[table[line].astype(str) == g].sort_values(x)
            xv = rows[x].to_numpy(dtype=float)
            y = rows[metric].to_numpy(dtype=float) / units.unit(metric).scale
            half_col = f"{metric}_ci95"
            half = (rows[half_col].to_numpy(dtype=float) / units.unit(metric).scale
                    if half_col in rows else np.zeros(y.size))
            half = np.where(np.isfinite(half), half, 0.0)
            color = colors[i % len(colors)]
            ax.plot(xv, y, marker="o" if xv.size <= 30 else None, markersize=3,
                    linestyle=styles[(i // len(colors)) % len(styles)], color=color, label=g)
            if half.any():  # fainter when many bands overlap
                ax.fill_between(xv, y - half, y + half, color=color, alpha=0.18 if len(groups) <= 4 else 0.07,
                                linewidth=0)
        positive = all_values[np.isfinite(all_values) & (all_values > 0)]
        if units.unit(metric) is not units.PERCENT and positive.size and positive.max() / positive.min() > 30:
            log_scale(ax, "y")
        ax.set_xlabel(x_label or x)
        ax.set_ylabel(units.header(metric, label), fontsize=9)
        ax.set_title(label, fontsize=10)
        ax.grid(True, alpha=0.3)
    for k in range(len(metrics), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles and len(handles) <= MAX_LEGEND_LINES:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 3), fontsize=8,
                   title=legend_title)
    elif handles:
        fig.legend([], [], loc="outside lower center", fontsize=8,
                   title=f"{len(handles)} lines ({legend_title}): too many for a legend; "
                         "the sortable table holds every configuration")
    fig.suptitle(title, fontsize=11)
    return fig


# --------------------------------------------------------------------------- per user
def per_user_figure(tables: Mapping[str, object], styles: Mapping[str, dict] | None = None,
                    title: str = "Per-user mean bounded slowdown") -> Figure:
    """Each configuration's users sorted by their mean bounded slowdown (worst first), on a log
    axis: fair-share flattens the curve; the left end is the worst-off user. ``tables`` maps a
    label to a per-user table (``per_user.csv``: columns ``user``, ``bsld_mean``, ...)."""
    fig, (ax, bx) = _new_figure(10.0, 4.6, 1, 2)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, table) in enumerate(tables.items()):
        style = {"color": colors[i % len(colors)], "linewidth": 1.6}
        style.update((styles or {}).get(label, {}))
        bsld = np.sort(np.asarray(table["bsld_mean"], dtype=float))[::-1]
        wait = np.sort(np.asarray(table["wait_mean"], dtype=float))[::-1]
        rank = np.arange(1, bsld.size + 1)
        ax.plot(rank, bsld, label=f"{label} ({bsld.size} users)", **style)
        bx.plot(rank, np.maximum(wait, 1.0) / 3600.0, **style)
    log_scale(ax, "y")
    log_scale(ax, "x")
    ax.set_xlabel("users, worst first")
    ax.set_ylabel("mean bounded slowdown of the user's jobs")
    ax.set_title(title)
    log_scale(bx, "y")
    log_scale(bx, "x")
    bx.set_xlabel("users, worst first")
    bx.set_ylabel("mean wait of the user's jobs (h)")
    bx.set_title("Per-user mean wait")
    ax.legend(fontsize=8, loc="upper right")
    return fig


# --------------------------------------------------------------------------- one configuration
SEED_PERCENTILES = {0.5: "wait_median", 0.9: "wait_p90", 0.95: "wait_p95", 0.99: "wait_p99"}


def seed_percentile_ci(seed_metrics) -> dict[float, tuple[float, float]]:
    """Mean and 95% CI half-width (Student t) over seeds of the wait percentiles (median, p90,
    p95, p99), from per-seed metric dicts or a frame with one row per seed; empty with fewer
    than two seeds. ``scipy.special.stdtrit`` is the quantile ``scipy.stats.t.ppf`` computes,
    without importing scipy.stats (0.6 s of CPU, more than drawing the figures)."""
    if seed_metrics is None:
        return {}
    frame = seed_metrics if isinstance(seed_metrics, pd.DataFrame) else pd.DataFrame(list(seed_metrics))
    if len(frame) < 2:
        return {}
    from scipy.special import stdtrit

    out = {}
    for q, name in SEED_PERCENTILES.items():
        if name in frame:
            values = frame[name].to_numpy(dtype=float)
            values = values[np.isfinite(values)]
            if values.size >= 2:
                t = stdtrit(values.size - 1, 0.975)
                out[q] = (float(values.mean()), float(t * values.std(ddof=1) / math.sqrt(values.size)))
    return out


def configuration_figure_files(
    out_dir,
    frame: pd.DataFrame,
    total_nodes: int,
    baseline: pd.DataFrame | None = None,
    *,
    label: str = "simulated",
    seed_metrics=None,
    seed: int | None = None,
    gantt_max_jobs: int = GANTT_MAX_JOBS,
) -> list[Path]:
    """One configuration's PNGs from the schedule frame of one seed: ``wait_cdf.png`` (with
    the mean ± 95% CI over ``seed_metrics`` of the wait percentiles), ``utilization_queue.png``,
    ``slowdown_by_class.png`` and, for at most ``gantt_max_jobs`` jobs, ``gantt.png``;
    ``baseline`` (the replay of the trace) is drawn beside the schedule in the first three."""
    out_dir = Path(out_dir)
    which = f" (seed {seed})" if seed is not None else ""
    frames, styles = {label: frame}, {}
    if baseline is not None:
        frames[REPLAY_LABEL] = baseline
        styles[REPLAY_LABEL] = {"color": "white", "edgecolor": "black", "hatch": "//"}
    drawn = [
        ("wait_cdf.png", lambda: wait_cdf_figure(
            {label: frame}, baseline, seed_percentiles={label: seed_percentile_ci(seed_metrics)},
            title=f"Wait-time distribution: {label}{which}")),
        ("utilization_queue.png", lambda: usage_figure(
            frame, total_nodes, baseline=baseline, label=label,
            title=f"Utilization and queue length: {label}{which}")),
        ("slowdown_by_class.png", lambda: slowdown_figure(
            frames, styles=styles, title=f"Bounded slowdown by job class: {label}{which}")),
    ]
    if 0 < len(frame) <= gantt_max_jobs:
        drawn.append(("gantt.png", lambda: gantt_figure(
            frame, total_nodes, max_jobs=gantt_max_jobs, title=f"Schedule of {label}{which}")))
    return [save_figure(make(), out_dir / name) for name, make in drawn]
