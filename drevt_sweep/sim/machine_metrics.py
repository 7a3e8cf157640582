"""Metrics of a machine with partitions: per partition and per resource.

Added to ``compute_metrics`` when a schedule carries a machine (``Schedule.placement``); the
machine-wide metrics are unchanged. All spans are the overall span (first submit to last end of
the jobs that ran), so per-partition figures are comparable and add up over the machine.

Per partition ``<p>`` (names as ``metrics.metric_key_for_queue`` makes them safe):
``partition/<p>/<metric>`` for the job metrics (jobs simulated/rejected/killed, waits, bounded
slowdown, queue length), plus

* ``node_utilization``: node-time held over the partition's node-time. Exclusive: a job holds
  its whole nodes. Shared: a job holds its *dominant share* of each of its nodes, the largest of
  its cores, GPUs and memory over the node's (Ghodsi et al. 2011's dominant resource), so a
  node filled by one resource counts as busy.
* ``core_utilization``, ``gpu_utilization``, ``memory_utilization``: requested core-, GPU- and
  memory-time (nodes x per-node request x run time; unknown core requests count as the whole
  node) over the partition's capacity x span; only for resources the partition models.

Machine-wide: ``rejected/<reason>``, the jobs rejected for each reason that occurs
(``Placement.counts``); ``utilization`` is the node-time held (as ``node_utilization``) over the
machine's node-time (on exclusive partitions the usual nodes x run time formula; on shared ones
a 1-core job no longer counts as a whole node), ``core_utilization`` and ``gpu_utilization``
over every partition that models the resource.
"""

from __future__ import annotations

import math

import numpy as np

PARTITION_METRIC_DEFINITIONS = {
    "core_utilization": "requested core-time (nodes x cores per node x run time) over the cores "
    "of the partitions that model cores x makespan",
    "gpu_utilization": "requested GPU-time over the GPUs of the partitions that model GPUs x makespan",
    "rejected/<reason>": "a machine with partitions: jobs rejected for one reason, when any is "
    "(no_partition, unknown_partition: a partition the machine does not have, nodes, cores, "
    "gpus, memory: more than a node or its partition has)",
    "partition/<name>/<metric>": "a machine with partitions: the job metrics of one partition, and "
    "its node_utilization (exclusive: whole nodes held; shared: each job's dominant share of its "
    "nodes), core_utilization, gpu_utilization and memory_utilization (requested over capacity)",
}


def partition_metrics(jobs, schedule, job_metrics, safe_name, span_start: float, span_end: float) -> dict:
    """``partition/<p>/...`` and the machine-wide per-resource utilizations (see the module
    docstring). ``job_metrics(rows)`` gives the job metrics of a set of rows."""
    machine, placement = schedule.machine, schedule.placement
    span = span_end - span_start
    ran = ~np.asarray(schedule.rejected, dtype=bool)
    run = np.where(ran, schedule.run_time, 0.0)
    nodes = np.asarray(jobs.num_nodes, dtype=np.float64)
    out: dict[str, float] = {}
    totals = {"cores": [0.0, 0.0], "gpus": [0.0, 0.0]}
    node_time_held = 0.0
    for k, part in enumerate(machine.partitions):
        rows = np.flatnonzero(placement.partition == k)
        name = safe_name(part.name)
        prefix = f"partition/{name}/"
        metrics = job_metrics(rows)
        metrics["jobs_rejected"] = float(((placement.served == k) & ~ran).sum())
        node_time = nodes[rows] * run[rows]
        use = {}
        for resource in ("cores", "gpus", "memory"):
            per_node = getattr(part, resource)
            if per_node is None:
                continue
            asked = np.asarray(getattr(placement, resource), dtype=np.float64)[rows]
            use[resource] = asked / per_node if per_node else np.zeros(rows.size)
            held = _sum(node_time * asked)
            capacity = part.nodes * per_node * span
            label = {"cores": "core", "gpus": "gpu", "memory": "memory"}[resource]
            metrics[f"{label}_utilization"] = held / capacity if capacity > 0 else float("nan")
            if resource in totals:
                totals[resource][0] += held
                totals[resource][1] += part.nodes * per_node * span
        if part.shared and use:
            held = _sum(node_time * np.max(np.vstack(list(use.values())), axis=0))
        else:
            held = float(node_time.sum())
        node_time_held += held
        metrics["node_utilization"] = held / (part.nodes * span) if span > 0 else float("nan")
        for key, value in metrics.items():
            out[prefix + key] = value
    for key, count in placement.counts().items():  # rejected_<reason>
        out["rejected/" + key[len("rejected_"):]] = float(count)
    if span > 0:  # the machine's utilization: node-time held, shared nodes by dominant share
        out["utilization"] = node_time_held / (machine.total_nodes * span)
    for resource, key in (("cores", "core_utilization"), ("gpus", "gpu_utilization")):
        held, capacity = totals[resource]
        if capacity > 0:
            out[key] = held / capacity
    return out


def _sum(values: np.ndarray) -> float:
    """A sum whose order depends only on the array (not ``np.dot``: BLAS threads it; see
    ``metrics.node_seconds``)."""
    return float(np.add.reduce(np.ascontiguousarray(values, dtype=np.float64)))


def memory_kib(mib) -> np.ndarray:
    """MiB -> whole KiB, rounded up, as the shared engine packs memory."""
    return np.ceil(np.asarray(mib, dtype=np.float64) * 1024.0).astype(np.int64)


def held_per_job(part, nodes: np.ndarray, cores: np.ndarray, gpus: np.ndarray,
                 memory: np.ndarray) -> dict[str, tuple[np.ndarray, int]]:
    """What each job of a partition holds while it runs, per resource the partition models, as
    exact integers and the divisor that turns them into nodes, cores, GPUs or MiB: sums of
    them over time (``outputs.resource_profile``) then never drift.

    ``nodes``: exclusive partitions, the job's nodes; shared ones, its nodes x its dominant
    share (the largest of cores, GPUs and memory over a node's, as ``node_utilization``),
    in units of 1/L of a node with L the least common multiple of the node's cores, GPUs and
    KiB. ``cores``/``gpus``: nodes x per-node request; ``memory``: nodes x KiB (divisor 1024);
    only for resources the partition's nodes have.
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    out: dict[str, tuple[np.ndarray, int]] = {}
    amounts = {"cores": (part.cores, np.asarray(cores, dtype=np.int64)),
               "gpus": (part.gpus, np.asarray(gpus, dtype=np.int64))}
    if part.memory is not None:
        amounts["memory"] = (int(memory_kib(part.memory)), memory_kib(memory))
    for resource, (per_node, asked) in amounts.items():
        if per_node:  # a resource a node has none of (gpus: 0) is never held
            out[resource] = (nodes * asked, 1024 if resource == "memory" else 1)
    if not part.shared:
        out["nodes"] = (nodes.copy(), 1)
        return out
    sizes = {r: (per_node, asked) for r, (per_node, asked) in amounts.items() if per_node}
    whole = math.lcm(*(int(per_node) for per_node, _ in sizes.values()))
    share = np.zeros(nodes.shape, dtype=np.int64)
    for per_node, asked in sizes.values():
        share = np.maximum(share, asked * (whole // int(per_node)))
    if float(np.add.reduce((share * 1.0) * nodes)) >= 2.0**62:  # too fine to sum exactly
        whole = 1 << 20
        share = np.zeros(nodes.shape, dtype=np.int64)
        for per_node, asked in sizes.values():
            share = np.maximum(share, np.round(asked / per_node * whole).astype(np.int64))
    out["nodes"] = (nodes * share, whole)
    return out
