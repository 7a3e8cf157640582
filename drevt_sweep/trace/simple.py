"""The seeds' "simple" format: a CSV with a header; columns found by name, in any order.

Extra columns are ignored. Aliases (the first one present wins):
``time_limit | timelimit | walltime`` and
``actual_run_time | duration | actual_duration | run_time | actual_runtime``.
An optional ``job_id`` column gives the jobs' own ids (else the 1-based row number); optional
``user`` (``user_id``, ``uid``) and ``group`` (``account``) columns say who submitted.
Optional requests, per node: ``num_cores``, ``num_gpus``, ``memory`` (MiB); ``partition``
(else the queue is the partition).

Mode, exactly as the seeds say:

* ``begin_time`` and (``end_time`` or ``duration``) -> **replay**; the run time is
  ``end_time - begin_time`` (``end_time`` wins when both it and ``duration`` are present), or
  ``duration`` with ``end_time = begin_time + duration``. Required: job_submit_time, begin_time,
  end_time|duration, num_nodes, exit_status, queue, time_limit.
* neither ``begin_time`` nor ``end_time`` -> **simulation**; ``duration`` (or another alias)
  is then the optional actual run time. Required: job_submit_time, num_nodes, queue, time_limit.
* ``begin_time`` without ``end_time``/``duration``, or ``end_time`` without ``begin_time``
  -> error "ambiguous trace format".

``force_simulation`` turns a replay trace into a simulation whose actual run time is the
historical ``end - begin`` (begin/end are kept as the history). Times are seconds (epoch) or
ISO date-times, see ``timestamps``. Rows need not be sorted: jobs are sorted by submit time.
In a file with the header of our schedule CSV, a queue written with a leading ``'`` before a
formula-like name (``'=x``: how our CSV writers escape spreadsheet formulas, ``files.csv_cell``)
reads as the name itself (``=x``); in any other trace a queue name is read as written (``'=x``).
"""

from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..jobs import JobTable
from . import DEFAULT_QUEUES, DEFAULT_TIMEZONE, ReadOptions, convert
from .frame import factorize_names, read_frame
from .records import scan_delimited
from .source import located, read_source
from .table import ParsedTrace, add_ragged_problem, build_table
from .timestamps import resolve_zone

TIME_LIMIT_NAMES = ("time_limit", "timelimit", "walltime")
ACTUAL_RUN_TIME_NAMES = (
    "actual_run_time",
    "duration",
    "actual_duration",
    "run_time",
    "actual_runtime",
)
REPLAY_COLUMNS = {
    "submit": ("job_submit_time",),
    "begin": ("begin_time",),
    "num_nodes": ("num_nodes",),
    "exit_status": ("exit_status",),
    "queue": ("queue",),
    "time_limit": TIME_LIMIT_NAMES,
}
SIMULATION_COLUMNS = {
    "submit": ("job_submit_time",),
    "num_nodes": ("num_nodes",),
    "queue": ("queue",),
    "time_limit": TIME_LIMIT_NAMES,
}


# The header of our own schedule CSV (``outputs.SCHEDULE_COLUMNS``): only a file with exactly
# this header has queue names escaped by ``files.csv_cell``; any other trace's names are data.
SCHEDULE_HEADER = ("job_id", "job_submit_time", "begin_time", "end_time", "num_nodes", "exit_status",
                   "queue", "time_limit", "actual_run_time")

REQUEST_COLUMNS = {  # optional, per node (memory in MiB)
    "cores_per_node": ("num_cores",),
    "gpus_per_node": ("num_gpus",),
    "memory_per_node": ("memory",),
    "partition": ("partition",),
}


def read(path: str, options: ReadOptions) -> JobTable:
    zone = resolve_zone(options.timezone or DEFAULT_TIMEZONE)
    source = read_source(path, options.on_bad_row)
    with located(path):
        records = scan_delimited(source.data, ",", '"')
        header = [name.strip().lower() for name in records.fields(0)]
        header_line = int(records.lines[0])
        columns, mode = resolve_columns(header, header_line)
        rows = records.tail(1)
        if len(rows) == 0:
            raise TraceError("the file has a header but no job rows", line=header_line)
        frame = read_frame(
            source.data,
            rows,
            header=0,
            names=[f"f{i}" for i in range(len(header))],
            usecols=[f"f{i}" for i in sorted(set(columns.values()))],
            text_columns=[f"f{columns[c]}" for c in ("queue", "user", "group", "partition") if c in columns],
            exact_columns=[f"f{columns[c]}" for c in ("job_id", "exit_status") if c in columns],
        )
        column_of = {canon: frame[f"f{index}"] for canon, index in columns.items()}
        parsed = ParsedTrace(
            source=source,
            rows=rows,
            trace_format="simple",
            timezone=zone.key,
            timestamp_format=options.timestamp_format,
            default_queues=DEFAULT_QUEUES,
            job_id=np.arange(1, len(rows) + 1, dtype=np.int64),
            labels={canon: header[index] for canon, index in columns.items()},
            fields=dict(columns),
            users=column_of.get("user"),
            groups=column_of.get("group"),
        )
        add_ragged_problem(parsed, len(header))
        _fill(parsed, column_of, mode, options, zone, ours=tuple(header) == SCHEDULE_HEADER)
        return build_table(parsed, options)


def resolve_columns(header: list[str], line: int = 1) -> tuple[dict[str, int], str]:
    """Canonical column -> field index, and the mode, from the header (see module doc)."""
    positions: dict[str, list[int]] = {}
    for index, name in enumerate(header):
        positions.setdefault(name, []).append(index)
    has = positions.__contains__
    if has("begin_time") and (has("end_time") or has("duration")):
        mode = "replay"
    elif not has("begin_time") and not has("end_time"):
        mode = "simulation"
    elif has("begin_time"):
        raise TraceError(
            "ambiguous trace format: begin_time without end_time or duration "
            "(replay needs begin_time and end_time or duration; simulation needs neither)",
            line=line,
        )
    else:
        raise TraceError(
            "ambiguous trace format: end_time without begin_time "
            "(replay needs begin_time and end_time or duration; simulation needs neither)",
            line=line,
        )

    def pick(canon: str, names: tuple[str, ...], required: bool) -> None:
        for name in names:
            if name in positions:
                if len(positions[name]) > 1:
                    fields = " and ".join(str(i + 1) for i in positions[name])
                    raise TraceError(
                        f"appears more than once (fields {fields}): "
                        "which one is meant is ambiguous",
                        line=line,
                        column=name,
                    )
                columns[canon] = positions[name][0]
                return
        if required:
            accepted = f" (accepted names: {', '.join(names)})" if len(names) > 1 else ""
            raise TraceError(
                f"missing required column '{names[0]}' for {mode} mode{accepted}", line=line
            )

    columns: dict[str, int] = {}
    for canon, names in (REPLAY_COLUMNS if mode == "replay" else SIMULATION_COLUMNS).items():
        pick(canon, names, required=True)
    if mode == "replay":
        if has("end_time"):
            pick("end", ("end_time",), required=True)
        else:
            pick("duration", ("duration",), required=True)
    else:
        pick("actual_run_time", ACTUAL_RUN_TIME_NAMES, required=False)
        pick("exit_status", ("exit_status",), required=False)
    pick("job_id", ("job_id",), required=False)
    for canon, names in REQUEST_COLUMNS.items():
        pick(canon, names, required=False)
    pick("user", ("user", "user_id", "uid"), required=False)
    pick("group", ("group", "account"), required=False)
    return columns, mode


def _fill(parsed: ParsedTrace, column_of, mode: str, options: ReadOptions, zone, ours: bool = False) -> None:
    convert.times(parsed, column_of, options.timestamp_format, zone)
    parsed.num_nodes = convert.numbers(parsed, column_of["num_nodes"], "num_nodes")
    parsed.time_limit = convert.numbers(parsed, column_of["time_limit"], "time_limit")
    parsed.queue_codes, parsed.queue_names = factorize_names(column_of["queue"], unescape=ours)
    parsed.required = {"submit", "num_nodes", "time_limit"}
    for canon in ("cores_per_node", "gpus_per_node", "memory_per_node"):
        if canon in column_of:
            setattr(parsed, canon, convert.numbers(parsed, column_of[canon], canon))
    if "partition" in column_of:
        parsed.partition_codes, parsed.partition_names = factorize_names(column_of["partition"])
    if "job_id" in column_of:
        parsed.job_id, missing = convert.job_ids(parsed, column_of["job_id"], "job_id")
        if parsed.job_id.dtype == np.int64:
            missing = missing | (parsed.job_id < 0)
        parsed.problem(missing, "job_id", "missing", "missing or negative job_id")
    if "exit_status" in column_of:
        parsed.exit_status = convert.exact_whole(parsed, column_of["exit_status"], "exit_status")

    if mode == "replay":
        parsed.required |= {"begin", "end"}
        if "duration" in column_of:
            duration = convert.numbers(parsed, column_of["duration"], "duration")
            parsed.problem(
                np.isnan(duration) & ~convert.flagged(parsed, "duration"),
                "duration",
                "missing",
                "missing value",
            )
            with np.errstate(invalid="ignore"):
                parsed.problem(
                    duration <= 0, "duration", "not_positive", "duration must be > 0 seconds"
                )
            with np.errstate(invalid="ignore"):
                parsed.end = parsed.begin + duration
        with np.errstate(invalid="ignore"):
            parsed.actual_run_time = parsed.end - parsed.begin
        parsed.mode = "replay"
    else:
        parsed.mode = "simulation"
        if "actual_run_time" in column_of:
            parsed.actual_run_time = convert.numbers(
                parsed, column_of["actual_run_time"], "actual_run_time"
            )
            parsed.required.add("actual_run_time")
