"""The report's per-partition view of machines with partitions (issue 14).

A configuration simulated on a machine with partitions logs ``partition/<p>/<metric>``
(``sim.machine_metrics``; mean over seeds with ``_ci95`` beside it). This module turns those
into one table per configuration (a row per partition: its nodes and sharing rule, jobs run and
rejected, node/core/GPU utilization, mean and p95 wait, mean bounded slowdown) and one figure
that compares the configurations partition by partition. Configurations on a single pool log no
partition metrics and get no section.

The partitions' order, sizes and sharing come from the resolved configuration (its ``system``
section); when that is not available (a run known only from MLflow params), the partitions are
the ones the metrics name, in their order, sizes unknown. The report's number formats and
figure embedding come in from ``report.html`` (which imports this module, not the reverse).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import pandas as pd
import yaml

from .. import units
from ..names import queue_key

PREFIX = "partition/"
MAX_CONFIGURATIONS = 12  # configurations drawn in the comparison figure (the tables show all)
# column header -> (metric, how it is shown); "fraction" columns are percentages.
COLUMNS = (
    ("jobs", "jobs_simulated", "count"),
    ("rejected", "jobs_rejected", "count"),
    ("node utilization", "node_utilization", "fraction"),
    ("core utilization", "core_utilization", "fraction"),
    ("GPU utilization", "gpu_utilization", "fraction"),
    ("mean wait", "wait_mean", "duration"),
    ("p95 wait", "wait_p95", "duration"),
    ("mean bounded slowdown", "bsld_mean", "ratio"),
)
# what the figure compares: partition metric -> the comparison figure's metric of the same kind
FIGURE_METRICS = {"node_utilization": "utilization", "wait_mean": "wait_mean",
                  "wait_p95": "wait_p95", "bsld_mean": "bsld_mean"}


def partitions_of(record) -> list[dict]:
    """The record's partitions as ``{"key", "name", "nodes", "sharing"}``, in the machine's order."""
    named = []
    seen = set()
    for metric in record.metrics:
        if metric.startswith(PREFIX):
            key = metric[len(PREFIX):].rsplit("/", 1)[0]
            if key not in seen:
                seen.add(key)
                named.append(key)
    if not named:
        return []
    described = {}
    try:
        config = yaml.safe_load(record.config_text) if record.config_text else None
        parts = ((config or {}).get("system") or {}).get("partitions") or []
        for part in parts:
            name = str(part.get("name"))
            described[queue_key(name)] = {"key": queue_key(name), "name": name,
                                          "nodes": part.get("nodes"),
                                          "sharing": part.get("sharing") or "exclusive"}
    except Exception:  # noqa: BLE001 - a damaged config costs only the sizes
        described = {}
    ordered = [described[k] for k in described if k in seen]
    ordered += [{"key": k, "name": k, "nodes": None, "sharing": None} for k in named if k not in described]
    return ordered


def partition_frame(records: Sequence) -> pd.DataFrame:
    """One row per configuration x partition with the metrics of ``COLUMNS`` (and ``_ci95``)."""
    rows = []
    for r in records:
        for part in partitions_of(r):
            row = {"configuration": r.key, "partition": part["name"], "nodes": part["nodes"],
                   "sharing": part["sharing"], "replay": r.replay}
            for _, metric, _ in COLUMNS:
                key = f"{PREFIX}{part['key']}/{metric}"
                row[metric] = r.metrics.get(key, float("nan"))
                row[f"{metric}_ci95"] = r.metrics.get(f"{key}_ci95", float("nan"))
            rows.append(row)
    return pd.DataFrame(rows)


def _cell(fmt_metric: Callable, kind: str, metric: str, value, half, places) -> str:
    if kind == "count":
        return "–" if value != value else f"{value:,.0f}"
    return fmt_metric(metric, value, half, places)


def partition_tables(frame: pd.DataFrame, fmt_metric: Callable, column_places: Callable) -> list[dict]:
    """One table per configuration (a row per partition); each metric in its one unit
    (``units``, named in the header) with the same decimals in every table so that they
    compare (``fmt_metric``, ``column_places``: the report's formats)."""
    places = {metric: column_places(metric, frame[metric]) for _, metric, kind in COLUMNS if kind != "count"}
    tables = []
    for key, rows in frame.groupby("configuration", sort=False):
        header = ["partition", "nodes"] + [
            name if kind == "count" else units.header(metric, name) for name, metric, kind in COLUMNS]
        body = []
        for _, row in rows.iterrows():
            nodes = "–" if row["nodes"] is None or row["nodes"] != row["nodes"] else f"{int(row['nodes']):,}"
            if isinstance(row["sharing"], str):
                nodes += f" ({row['sharing']})"
            body.append([row["partition"], nodes] + [
                _cell(fmt_metric, kind, metric, row[metric], row[f"{metric}_ci95"], places.get(metric))
                for _, metric, kind in COLUMNS])
        tables.append({"configuration": key, "header": header, "rows": body})
    return tables


def partition_figure(frame: pd.DataFrame, plots):
    """Node utilization, mean and p95 wait and bounded slowdown by partition (x) and
    configuration (colour), mean over seeds ± 95% CI (the sweep comparison's layout)."""
    keep = list(dict.fromkeys(frame["configuration"]))[:MAX_CONFIGURATIONS]
    table = frame[frame["configuration"].isin(keep)].rename(
        columns={m: FIGURE_METRICS[m] for m in FIGURE_METRICS if FIGURE_METRICS[m] != m} |
                {f"{m}_ci95": f"{FIGURE_METRICS[m]}_ci95" for m in FIGURE_METRICS if FIGURE_METRICS[m] != m})
    return plots.comparison_figure(table, x="partition", hue="configuration",
                                   metrics=tuple(FIGURE_METRICS.values()), legend_title="configuration",
                                   title="Per partition: mean over seeds ± 95% CI "
                                         "(utilization = the partition's node utilization)")


def partition_view(records: Sequence, figure_dir: Path, plots, *, fmt_metric: Callable,
                   column_places: Callable, embed: Callable) -> dict | None:
    """The report's "Partitions" section, or None when no configuration has partitions
    (``embed(fig, path, alt, caption)``: how the report saves and embeds a figure)."""
    frame = partition_frame(records)
    if frame.empty:
        return None
    view = {"tables": partition_tables(frame, fmt_metric, column_places), "figure": None}
    if frame["partition"].nunique() > 1 or frame["configuration"].nunique() > 1:
        fig = partition_figure(frame, plots)
        view["figure"] = embed(fig, figure_dir / "partitions.png",
                                 "per-partition metrics by configuration",
                                 "Each partition's node utilization, waits and bounded slowdown, "
                                 "one colour per configuration.")
    return view
