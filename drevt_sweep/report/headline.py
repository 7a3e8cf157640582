"""The answer a report opens with: which configuration is best on each headline metric, by how
much, and how sure that is; and the load each configuration was offered.

Configurations are compared within *groups*: when policies are swept, one group per fixed
combination of the other swept keys (so a policy is compared with the policies that ran the
same workload, run-time model and machine); with more groups than ``MAX_GROUPS`` (a fine grid
of machine sizes, say), or with one policy, one group per run-time model and trace. In each
group and for each metric the best configuration (lower wait and slowdown, higher utilization)
is named with the difference to the runner-up: paired over their common seeds (common random
numbers) with its 95% Student-t CI, exact for deterministic run times. A CI that spans zero is
"not resolved"; a metric with one value for every configuration gets a sentence saying so (and
why, for utilization: the same jobs, run times and span leave nothing for the policy to change).

Offered load = node-seconds the jobs demand / (nodes x arrival span), beside the rejected jobs
when some configuration rejected any (their demand is not on this machine): the demand from the
metrics (``utilization x makespan x total_nodes`` per seed: every job that ran, with the run
times of that seed's model), the arrival span (first to last submit of the jobs that ran) from
a kept schedule of the same trace and workload.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .. import units
from .factors import others_label

HEADLINE_METRICS = {"wait_mean": "mean wait", "wait_p95": "p95 wait",
                    "bsld_mean": "mean bounded slowdown", "utilization": "utilization"}
MAX_GROUPS = 12


def _candidates(records: Sequence) -> list:
    return [r for r in records if not r.replay and r.status == "FINISHED" and r.metrics]


def headline_groups(records: Sequence, swept: Sequence[str]) -> tuple[list[tuple[str, list]], str, list[str]]:
    """``[(title, members)]``, a note on how the groups were made, and the keys fixed in a group."""
    members = _candidates(records)
    policy = [k for k in swept if k.startswith("policy.")]
    others = [k for k in swept if not k.startswith("policy.")]
    if policy:
        groups: dict[str, list] = {}
        for r in members:
            groups.setdefault(others_label(r, others) if others else "", []).append(r)
        if len(groups) <= MAX_GROUPS:
            return list(groups.items()), ("policies compared at each combination of "
                                          + " · ".join(others) if others else "policies compared"), others
    keep = [k for k in swept if k.startswith(("run_time.", "trace."))]
    groups = {}
    for r in members:
        groups.setdefault(others_label(r, keep) if keep else "", []).append(r)
    compared = [k for k in swept if k not in keep]
    note = ("every configuration of a run-time model compared with every other"
            + (f" (they differ in {', '.join(compared)})" if compared else ""))
    return list(groups.items()), note, keep


def _seed_values(record, metric: str) -> pd.Series | None:
    frame = record.seed_metrics
    if frame is None or frame.empty or metric not in frame:
        return None
    return frame[metric]


def _same_everywhere(members: Sequence, metric: str, places: int) -> bool:
    shown = {units.number(metric, r.metrics.get(metric), places) for r in members}
    return len(shown) == 1


def _why_equal(members: Sequence, metric: str) -> str:
    if metric != "utilization":
        return ""
    jobs = {r.metrics.get("jobs_simulated") for r in members}
    spans = {round(r.metrics.get("makespan", np.nan), 6) for r in members}
    if len(jobs) == 1 and len(spans) == 1:
        return (": every configuration runs the same jobs with the same run times over the same "
                "span (the makespan is set by the arrivals, not by the schedule), so the busy "
                "node-seconds over it cannot differ")
    return ""


@dataclass
class Outcome:
    """The best configuration of a group on one metric against the runner-up."""

    best: object
    second: object
    difference: float  # best − runner-up (paired mean over common seeds when there are any)
    low: float = np.nan  # its paired 95% CI
    high: float = np.nan
    seeds: int = 0
    status: str = "unpaired"  # exact | resolved | not resolved | one seed | unpaired | equal


def compare_best(present: Sequence, metric: str) -> Outcome:
    """Rank ``present`` on ``metric`` (better first) and compare the first two."""
    from .figures import paired_difference

    ordered = sorted(present, key=lambda r: r.metrics[metric], reverse=not units.lower_is_better(metric))
    best, second = ordered[0], ordered[1]
    a, b = _seed_values(second, metric), _seed_values(best, metric)
    d = paired_difference(a, b) if a is not None and b is not None else None
    if d is None or d.n == 0:
        return Outcome(best, second, best.metrics[metric] - second.metrics[metric])
    if d.n < 2 or not np.isfinite(d.paired_ci95):
        exact = not (best.stochastic or second.stochastic)
        status = ("equal" if d.difference == 0 else "exact") if exact else "one seed"
        return Outcome(best, second, d.difference, seeds=d.n, status=status)
    lo, hi = d.difference - d.paired_ci95, d.difference + d.paired_ci95
    status = "not resolved" if lo <= 0 <= hi else "resolved"
    return Outcome(best, second, d.difference, lo, hi, d.n, status)


def metric_sentence(members: Sequence, metric: str, label: str, name: Callable = lambda r: r.key) -> str:
    """One sentence on ``metric`` over a group's configurations (``name(record)``: what sets a
    configuration apart within the group)."""
    present = [r for r in members if np.isfinite(r.metrics.get(metric, np.nan))]
    if len(present) < 2:
        return ""
    places = units.decimals(metric, [r.metrics[metric] for r in present])
    if _same_everywhere(present, metric, places):
        value = units.quantity(metric, present[0].metrics[metric], places)
        return f"{label.capitalize()} is {value} for every configuration here{_why_equal(present, metric)}."
    o = compare_best(present, metric)
    word = "lower" if units.lower_is_better(metric) else "higher"
    q = lambda v: units.quantity(metric, v, places)  # noqa: E731
    head = (f"Best {label}: {name(o.best)} ({q(o.best.metrics[metric])}); runner-up {name(o.second)} "
            f"({q(o.second.metrics[metric])})")
    # a difference gets the decimals of its own size (two close values would round it to 0)
    dp = units.decimals(metric, [v for v in (o.difference, o.low, o.high) if np.isfinite(v)])
    size = units.quantity(metric, abs(o.difference), dp, difference=True)
    if o.status == "unpaired":
        return f"{head}: {size} {word} (better), not paired (no common seeds), so no CI."
    if o.status == "equal":
        return f"{head}: exactly equal (deterministic run times, one seed each)."
    if o.status == "exact":
        return f"{head}: {size} {word} (better), exact (deterministic run times, one seed each)."
    if o.status == "one seed":
        return f"{head}: {size} {word} (better) on one common seed (no CI; run more seeds)."
    ci = (f"paired 95% CI of the difference {units.quantity(metric, o.low, dp, signed=True)} to "
          f"{units.quantity(metric, o.high, dp, signed=True)} over {o.seeds} common seeds")
    if o.status == "not resolved":
        return (f"{head}: {size} {word}, not resolved — the {ci} spans zero, so these seeds "
                f"cannot tell the two apart on {label} (more seeds would narrow the interval).")
    return f"{head}: {size} {word} (better); {ci}, so the difference is resolved."


def wins_sentence(fine_groups: Sequence[Sequence], metric: str, label: str, name: Callable,
                  across: str) -> str:
    """How often each policy is best on ``metric`` over many small groups (one per value of the
    swept numbers): ``easy is best at 98 of 100 (resolved at 95) ...``."""
    wins: dict[str, list[str]] = {}
    compared = 0
    for members in fine_groups:
        present = [r for r in members if np.isfinite(r.metrics.get(metric, np.nan))]
        if len(present) < 2:
            continue
        compared += 1
        places = units.decimals(metric, [r.metrics[metric] for r in present])
        if _same_everywhere(present, metric, places):
            wins.setdefault("a tie", []).append("equal")
            continue
        o = compare_best(present, metric)
        wins.setdefault(name(o.best), []).append(o.status)
    if not compared:
        return ""
    parts = []
    for who, statuses in sorted(wins.items(), key=lambda kv: -len(kv[1])):
        sure = sum(s in ("resolved", "exact") for s in statuses)
        unsure = sum(s == "not resolved" for s in statuses)
        text = (f"{who} at {len(statuses)}" if who != "a tie" else f"all equal at {len(statuses)}")
        if who != "a tie" and (unsure or sure != len(statuses)):
            text += f" ({sure} resolved or exact, {unsure} not resolved)"
        parts.append(text)
    return f"Best {label}, of {compared} {across}: " + "; ".join(parts) + "."


def headline_view(records: Sequence, swept: Sequence[str], numeric: Sequence[str]) -> dict | None:
    """The headline paragraphs (``{"groups": [{"title", "sentences"}], "note"}``), or None for a
    sweep of one configuration."""
    groups, note, fixed = headline_groups(records, swept)
    differing = [k for k in swept if k not in fixed]

    def name(record) -> str:
        return others_label(record, differing) if differing else record.key

    policy = [k for k in swept if k.startswith("policy.")]
    fine_keys = [k for k in swept if k not in policy]
    split = bool(policy) and list(fixed) != fine_keys  # too many combinations: counted instead
    across = " · ".join(k for k in fine_keys if k not in fixed) or "settings"

    out = []
    for title, members in groups:
        if len(members) < 2:
            continue
        sentences = []
        if split:  # at each value of the swept numbers, which policy is best
            fine: dict[str, list] = {}
            for r in members:
                fine.setdefault(others_label(r, fine_keys), []).append(r)
            sentences += [s for m, label in HEADLINE_METRICS.items()
                          if (s := wins_sentence(list(fine.values()), m, label,
                                                 lambda r: others_label(r, policy), f"values of {across}"))]
            sentences.append("Over all of them:")
        sentences += [s for m, label in HEADLINE_METRICS.items()
                      if (s := metric_sentence(members, m, label, name))]
        if sentences:
            out.append({"title": title or "all configurations", "size": len(members),
                        "sentences": sentences})
    if not out:
        return None
    if numeric:
        note += (f"; the swept numbers ({', '.join(numeric)}) are plotted below, one line per "
                 "combination of the other keys")
    return {"groups": out, "note": note}


# ------------------------------------------------------------------------------- offered load
def demanded_node_seconds(record) -> float:
    """Mean over seeds of the node-seconds of the jobs that ran (utilization x makespan x nodes)."""
    nodes = record.total_nodes or np.nan
    frame = record.seed_metrics
    if frame is not None and not frame.empty and "utilization" in frame.columns and "makespan" in frame.columns:
        # (numpy, not a Series product: 10,000 configurations took 1 s in pandas' overhead)
        product = frame["utilization"].to_numpy(dtype=float) * frame["makespan"].to_numpy(dtype=float)
        product = product[~np.isnan(product)]  # (as Series.mean skips them)
        return float(product.mean() * nodes) if product.size else float("nan")
    m = record.metrics
    return float(m.get("utilization", np.nan) * m.get("makespan", np.nan) * nodes)


def _workload_key(record) -> tuple:
    return (record.trace_checksum,
            tuple(sorted((k, v) for k, v in record.params.items() if k.startswith(("workload.", "trace.")))))


def offered_load_view(records: Sequence, frame_of: Callable) -> dict | None:
    """The offered-load table: one row per simulated configuration (see the module docstring);
    ``frame_of(record)``: its kept schedule frame or None."""
    members = [r for r in _candidates(records) if r.total_nodes]
    if not members:
        return None
    spans: dict[tuple, float] = {}
    for r in members:  # one schedule read per trace x workload
        key = _workload_key(r)
        if key in spans and np.isfinite(spans[key]):
            continue
        frame = frame_of(r)
        if frame is not None and len(frame):
            submit = frame["job_submit_time"].to_numpy(dtype=float)
            spans[key] = float(np.nanmax(submit) - np.nanmin(submit))
        else:
            spans.setdefault(key, np.nan)
    rows = []
    rejected = any(r.metrics.get("jobs_rejected", 0) > 0 for r in members)
    demand = {id(r): demanded_node_seconds(r) for r in members}
    node_h = units.decimals("node_hours", [v / 3600 for v in demand.values()])
    load_places = 1
    for r in members:
        span = spans.get(_workload_key(r), np.nan)
        offered = demand[id(r)] / (r.total_nodes * span) if span and np.isfinite(span) and span > 0 else np.nan
        cells = [{"text": f"{r.total_nodes:,}", "v": repr(float(r.total_nodes))}]
        if rejected:  # their node-hours are not demanded of this machine: they never run
            count = r.metrics.get("jobs_rejected")
            cells.append({"text": units.number("jobs_rejected", count, 0), "v": _v(count)})
        rows.append({"key": r.key, "cells": cells + [
            {"text": units.number("node_hours", demand[id(r)] / 3600, node_h), "v": _v(demand[id(r)])},
            {"text": units.number("makespan", span, 1), "v": _v(span)},
            {"text": units.number("offered_load", offered, load_places), "v": _v(offered)},
            {"text": units.number("utilization", r.metrics.get("utilization"), load_places),
             "v": _v(r.metrics.get("utilization"))},
        ]})
    header = ["configuration", "nodes", *(["rejected jobs"] if rejected else []),
              units.header("node_hours", "node-hours demanded"),
              units.header("makespan", "arrival span"), units.header("offered_load", "offered load"),
              units.header("utilization", "utilization")]
    unknown = sum(1 for r in members if not np.isfinite(spans.get(_workload_key(r), np.nan)))
    return {"header": header, "rows": rows, "unknown": unknown}


def _v(value) -> str:
    return repr(float(value)) if value is not None and np.isfinite(value) else ""


