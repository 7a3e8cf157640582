"""Output files: the schedule CSV, the resource CSV and the statistics JSON.

Schedule CSV
    ``job_id,job_submit_time,begin_time,end_time,num_nodes,exit_status,queue,time_limit,
    actual_run_time``, one row per job that ran, in job-table order (rejected jobs never ran and
    are left out). Times are epoch seconds; ``actual_run_time`` is the time the job really held
    its nodes (for a killed job: its limit), so ``end_time = begin_time + actual_run_time``. The
    file is itself a replay trace for the ``simple`` reader (``--timestamp_format epoch``; add
    ``--queues all`` when its queues are not the Lassen defaults).
Resource CSV
    ``time,free_nodes,allocated_nodes``: one row per instant at which the allocation changes
    (after all the starts and ends at that instant). ``free_nodes`` is negative where a replayed
    trace over-commits the machine. On a machine with partitions (``Schedule.placement``) it
    counts what jobs hold as the metrics do: ``allocated_nodes`` is whole nodes on exclusive
    partitions and each job's nodes x its dominant share on shared ones (a 1-core job on a
    64-core node holds 1/64 of a node), then ``allocated_<r>,free_<r>`` for the cores, GPUs and
    memory (MiB; requests rounded up to whole KiB as the engine packs them) of the partitions
    that model them, and, with several partitions, ``partition/<p>/allocated_<nodes|r>`` per
    partition. Every amount is summed in exact integer units, so idle means exactly 0.
Statistics JSON
    ``{"metrics": {...}, ...}`` plus whatever run information the caller passes; NaN and
    infinities are written as ``null`` (JSON has no NaN).

Numbers are written exactly: integral values as integers, every other float as its shortest
round-trip ``repr``, so reading a file back gives bit-identical float64 values. Formatting is
vectorised (digits are produced column-wise into a byte matrix, see ``format_rows``), so a
million rows take well under a second; only non-integral floats go through ``repr``. Files are
written by ``files.write_file``: to a temporary name renamed into place, so a crash never leaves
half a file, never onto an input trace, and directly to special files (``/dev/stdout``, FIFOs);
a path ending in ``.gz`` is gzip-compressed. Queue names that look like spreadsheet formulas
get a leading ``'`` (``files.csv_cell``; the simple reader removes it again).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .files import csv_cell, write_file
from .jobs import JobTable
from .sim.schedule import Schedule

SCHEDULE_COLUMNS = (
    "job_id",
    "job_submit_time",
    "begin_time",
    "end_time",
    "num_nodes",
    "exit_status",
    "queue",
    "time_limit",
    "actual_run_time",
)
RESOURCE_COLUMNS = ("time", "free_nodes", "allocated_nodes")

_EXACT_INT_LIMIT = 2.0**53  # integral floats below this print exactly as integers


# ---------------------------------------------------------------------------------------------
# Vectorised formatting: each column becomes a (rows x width) uint8 matrix of right-aligned text
# padded with NUL bytes; the columns and separators are stacked side by side and the NULs are
# dropped in one pass, which leaves the rows' text in order.


def _int_bytes(values: np.ndarray) -> np.ndarray:
    """Decimal text of int64 values as a NUL-padded, right-aligned uint8 matrix."""
    values = np.asarray(values, dtype=np.int64)
    n = values.shape[0]
    if n == 0:
        return np.zeros((0, 1), dtype=np.uint8)
    negative = values < 0
    magnitude = np.abs(values).astype(np.uint64)  # |INT64_MIN| still fits in uint64
    width = len(str(int(magnitude.max()))) + int(negative.any())
    out = np.zeros((n, width), dtype=np.uint8)
    digits = np.ones(n, dtype=np.int64)  # how many digits each value has
    rest = magnitude.copy()
    for column in range(width - 1, -1, -1):
        if column < width - 1:
            digits += rest > 0
        out[:, column] = (rest % 10).astype(np.uint8) + ord("0")
        rest //= 10
    # Blank the leading zeros: column j is part of the number iff j >= width - digits.
    start = width - digits
    out[np.arange(width)[None, :] < start[:, None]] = 0
    if negative.any():
        rows = np.flatnonzero(negative)
        out[rows, start[rows] - 1] = ord("-")
    return out


def _text_bytes(texts: list[str]) -> np.ndarray:
    """Arbitrary (NUL-free) strings as a NUL-padded uint8 matrix."""
    if not texts:
        return np.zeros((0, 1), dtype=np.uint8)
    encoded = np.array([t.encode("utf-8") for t in texts], dtype=np.bytes_)
    width = max(encoded.dtype.itemsize, 1)
    return encoded.view(np.uint8).reshape(len(texts), width)


def _float_bytes(values: np.ndarray) -> np.ndarray:
    """Exact text of float64 values: integral ones as integers, the rest as ``repr``."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        integral = (
            np.isfinite(values)
            & (np.abs(values) < _EXACT_INT_LIMIT)
            & (values == np.floor(values))
            & ~((values == 0) & np.signbit(values))  # keep -0.0 exact
        )
    if integral.all():
        return _int_bytes(values.astype(np.int64))
    whole = _int_bytes(np.where(integral, values, 0).astype(np.int64))
    others = np.flatnonzero(~integral)
    text = _text_bytes([repr(v) for v in values[others].tolist()])
    width = max(whole.shape[1], text.shape[1])
    out = np.zeros((values.shape[0], width), dtype=np.uint8)
    out[:, width - whole.shape[1] :] = whole
    out[others] = 0
    out[others, width - text.shape[1] :] = text
    return out


def _csv_field(text: str) -> str:
    text = csv_cell(text)
    if any(c in text for c in ',"\n\r') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


def _category_bytes(
    codes: np.ndarray, names: tuple[str, ...] | list[str], quote: bool = True
) -> np.ndarray:
    """Text of a categorical column (codes into ``names``), CSV-quoted where needed if ``quote``."""
    table = _text_bytes([_csv_field(str(name)) if quote else str(name) for name in names])
    codes = np.asarray(codes, dtype=np.int64)
    if table.shape[0] == 0:
        return np.zeros((codes.shape[0], 1), dtype=np.uint8)
    return table[codes]


def format_rows(parts: list, n: int) -> bytes:
    """Join ``n`` rows whose pieces are byte matrices (one row each) or constant ``bytes``.

    The caller includes separators and the line end as constant parts.
    """
    if n == 0:
        return b""
    blocks = []
    for part in parts:
        if isinstance(part, (bytes, str)):
            raw = part.encode() if isinstance(part, str) else part
            constant = np.frombuffer(raw, dtype=np.uint8)
            blocks.append(np.broadcast_to(constant, (n, constant.size)))
        else:
            if part.shape[0] != n:
                raise ValueError("all columns must have one entry per row")
            blocks.append(part)
    matrix = np.hstack(blocks)
    return matrix[matrix != 0].tobytes()


def format_number_column(values: np.ndarray) -> np.ndarray:
    """Exact text of a numeric column (integers as integers) as a byte matrix for ``format_rows``."""
    values = np.asarray(values)
    if np.issubdtype(values.dtype, np.integer):
        return _int_bytes(values)
    return _float_bytes(values)


def format_id_column(values: np.ndarray) -> np.ndarray:
    """Job ids as written: int64 ids exactly, text ids (``12345_7``) as CSV fields."""
    values = np.asarray(values)
    if np.issubdtype(values.dtype, np.integer):
        return _int_bytes(values)
    return _text_bytes([_csv_field(str(value)) for value in values.tolist()])


def format_number(value: float) -> str:
    """One number as ``format_number_column`` writes it (integral floats without ``.0``)."""
    value = float(value)
    if math.isfinite(value) and value == math.floor(value) and abs(value) < _EXACT_INT_LIMIT:
        if not (value == 0 and math.copysign(1.0, value) < 0):
            return str(int(value))
    return repr(value)


# ---------------------------------------------------------------------------------------------
# Writing files


def _write_bytes(path, data: bytes) -> Path:
    """Write by ``files.write_file``'s rules: atomic, never onto an input, special files directly."""
    return write_file(path, data)


def schedule_csv_bytes(jobs: JobTable, schedule: Schedule) -> bytes:
    """The schedule CSV's content (see the module docstring)."""
    if len(schedule) != len(jobs):
        raise ValueError(f"schedule has {len(schedule)} rows but the job table has {len(jobs)}")
    ran = np.flatnonzero(~np.asarray(schedule.rejected, dtype=bool))
    n = ran.size
    header = ",".join(SCHEDULE_COLUMNS) + "\n"
    if n == 0:
        return header.encode()
    body = format_rows(
        [
            format_id_column(jobs.job_id[ran]),
            b",",
            format_number_column(jobs.submit[ran]),
            b",",
            format_number_column(schedule.begin[ran]),
            b",",
            format_number_column(schedule.end[ran]),
            b",",
            format_number_column(jobs.num_nodes[ran]),
            b",",
            format_number_column(jobs.exit_status[ran]),
            b",",
            _category_bytes(jobs.queue_code[ran], jobs.queue_names),
            b",",
            format_number_column(jobs.time_limit[ran]),
            b",",
            format_number_column(schedule.run_time[ran]),
            b"\n",
        ],
        n,
    )
    return header.encode() + body


def write_schedule_csv(path, jobs: JobTable, schedule: Schedule) -> Path:
    """Write the schedule CSV (a replay trace of the schedule); returns the path."""
    return _write_bytes(path, schedule_csv_bytes(jobs, schedule))


def resource_profile(schedule: Schedule, jobs: JobTable) -> tuple[np.ndarray, np.ndarray]:
    """Instants at which the allocation changes, and the nodes allocated right after each."""
    ran = ~np.asarray(schedule.rejected, dtype=bool)
    nodes = np.asarray(jobs.num_nodes, dtype=np.int64)[ran]
    times = np.concatenate((schedule.begin[ran], schedule.end[ran]))
    deltas = np.concatenate((nodes, -nodes))
    if times.size == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    instants, where = np.unique(times, return_inverse=True)
    net = np.bincount(where, weights=deltas, minlength=instants.size).astype(np.int64)
    changed = net != 0  # a job ending as another of the same size starts: no change
    return instants[changed], np.cumsum(net)[changed]


def machine_resource_profile(schedule: Schedule, jobs: JobTable) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A machine with partitions: the instants at which anything held changes and, per column
    of the resource CSV (see the module docstring), the amount right after each."""
    from .names import QueueKeys
    from .sim.machine_metrics import held_per_job

    machine, placement = schedule.machine, schedule.placement
    partition_key = QueueKeys(machine.partition_names)  # the keys of the partition metrics
    ran = np.flatnonzero(~np.asarray(schedule.rejected, dtype=bool))
    nodes = np.asarray(jobs.num_nodes, dtype=np.int64)
    # (column, capacity or None, rows, per-job integer amount, divisor)
    series: list[tuple[str, float | None, np.ndarray, np.ndarray, int]] = []
    unplaced = ran[placement.partition[ran] < 0]  # a replay runs jobs no partition serves
    series.append(("nodes", None, unplaced, nodes[unplaced], 1))
    for k, part in enumerate(machine.partitions):
        rows = ran[placement.partition[ran] == k]
        held = held_per_job(part, nodes[rows], placement.cores[rows], placement.gpus[rows],
                            placement.memory[rows])
        for resource in ("nodes", "cores", "gpus", "memory"):
            if resource in held:
                series.append((resource, part.capacity(resource), rows, *held[resource]))
                if len(machine.partitions) > 1:
                    series.append((f"partition/{partition_key(part.name)}/allocated_{resource}", None,
                                   rows, *held[resource]))
    times = np.concatenate((schedule.begin[ran], schedule.end[ran]))
    instants, where = np.unique(times, return_inverse=True)
    position = np.full(len(jobs), -1, dtype=np.int64)
    position[ran] = np.arange(ran.size)
    order = np.argsort(where, kind="stable")
    last = np.flatnonzero(np.r_[where[order][1:] != where[order][:-1], True]) if times.size else order
    columns: dict[str, np.ndarray] = {}
    capacity: dict[str, float] = {}
    for name, cap, rows, amount, divisor in series:
        delta = np.zeros(times.size, dtype=np.int64)
        delta[position[rows]] = amount
        delta[ran.size + position[rows]] = -amount
        level = np.cumsum(delta[order])[last] / divisor
        total = name if name.startswith("partition/") else f"allocated_{name}"
        columns[total] = columns[total] + level if total in columns else level
        if cap is not None:
            capacity[name] = capacity.get(name, 0.0) + cap
    out: dict[str, np.ndarray] = {"free_nodes": machine.total_nodes - columns["allocated_nodes"],
                                  "allocated_nodes": columns["allocated_nodes"]}
    for resource in ("cores", "gpus", "memory"):
        if resource in capacity:
            out[f"allocated_{resource}"] = columns[f"allocated_{resource}"]
            out[f"free_{resource}"] = capacity[resource] - columns[f"allocated_{resource}"]
    out.update((name, level) for name, level in columns.items() if name.startswith("partition/"))
    if instants.size:
        matrix = np.vstack(list(out.values()))
        previous = np.hstack((np.zeros((matrix.shape[0], 1)), matrix[:, :-1]))
        changed = (matrix != previous).any(axis=0)
        instants = instants[changed]
        out = {name: level[changed] for name, level in out.items()}
    return instants, out


def resource_csv_bytes(jobs: JobTable, schedule: Schedule) -> bytes:
    if getattr(schedule, "placement", None) is not None:
        times, columns = machine_resource_profile(schedule, jobs)
        header = ",".join(["time", *(_csv_field(name) for name in columns)]) + "\n"
        parts: list = [format_number_column(times)]
        for level in columns.values():
            parts += [b",", format_number_column(level)]
        return header.encode() + format_rows(parts + [b"\n"], times.size)
    times, allocated = resource_profile(schedule, jobs)
    header = ",".join(RESOURCE_COLUMNS) + "\n"
    if times.size == 0:
        return header.encode()
    free = schedule.total_nodes - allocated
    body = format_rows(
        [
            format_number_column(times),
            b",",
            format_number_column(free),
            b",",
            format_number_column(allocated),
            b"\n",
        ],
        times.size,
    )
    return header.encode() + body


def write_resource_csv(path, jobs: JobTable, schedule: Schedule) -> Path:
    """Write the resource CSV (one row per change of the allocation); returns the path."""
    return _write_bytes(path, resource_csv_bytes(jobs, schedule))


def _json_safe(value):
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def stats_document(metrics: dict[str, float], info: dict | None = None) -> dict:
    """The statistics JSON's content: ``info`` (run description) first, then the metrics."""
    document = dict(info or {})
    document["metrics"] = dict(metrics)
    return _json_safe(document)


def write_stats_json(path, metrics: dict[str, float], info: dict | None = None) -> Path:
    """Write the statistics JSON (NaN/inf as null); returns the path."""
    text = json.dumps(stats_document(metrics, info), indent=2, allow_nan=False) + "\n"
    return _write_bytes(path, text.encode())


def per_user_csv_bytes(jobs: JobTable, schedule: Schedule) -> bytes:
    """``user,jobs,wait_mean,bsld_mean,node_seconds``, one row per user whose jobs ran
    (``sim.metrics.per_user``, in user-name order)."""
    from .sim.metrics import per_user

    users = per_user(jobs, schedule)
    lines = ["user,jobs,wait_mean,bsld_mean,node_seconds"]
    for name, count, wait, bsld, used in zip(users["user"].tolist(), users["jobs"].tolist(),
                                             users["wait_mean"].tolist(), users["bsld_mean"].tolist(),
                                             users["node_seconds"].tolist()):
        lines.append(f"{_csv_field(str(name))},{count},{format_number(wait)},{format_number(bsld)},"
                     f"{format_number(used)}")
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_per_user_csv(path, jobs: JobTable, schedule: Schedule) -> Path:
    return _write_bytes(path, per_user_csv_bytes(jobs, schedule))
