"""LLNL Lassen allocation history, exported from IBM CSM's ``csm_allocation_history`` table.

With a header, columns are looked up by their CSM names, which covers both the 33-column
internal export and the 25-column public LAST file (``allocation_id,primary_job_id,...,
begin_time,end_time,exit_status,job_submit_time,queue,requeue,time_limit,smt_mode,core_blink``).
Without one, the seeds' fixed 0-based positions of the 33-column layout are used: 11 num_nodes,
23 begin_time, 24 end_time, 29 job_submit_time, 30 queue, 32 time_limit, and from the same CSM
schema 2 primary_job_id and 25 exit_status. Free-text fields (user_script, job_name, comment)
are quoted and may contain commas and newlines.

Timestamps look like ``2020-11-01 01:07:31.70215``: wall-clock time in ``--timezone`` (default
America/Los_Angeles), see ``timestamps`` for the daylight-saving rule.

``time_limit`` is in **seconds**. CSM's schema declares it ``bigint`` "the time limit requested
or imposed on the job" without a unit (IBM CAST ``csm_create_tables.sql``); DR_EVT, which was
written for these Lassen exports, reads the column unchanged into ``timeout_t``, documented as
"time limit in seconds", and caps batch jobs at 12 h = 43,200 s (``dr_evt_types.hpp``).

Requests: ``num_processors`` and ``num_gpus`` (totals over the job's nodes; 0 = not
recorded) become cores and GPUs per node, rounded up; the queue is the partition (a machine
description maps queues such as pbatch and standby to their node pool).

Every job has begin and end times, so a Lassen trace is replayed unless ``force_simulation``.
Rows whose ``end_time`` is empty (the allocation was still running at export) are excluded as
``not_finished``; rows with ``end_time == begin_time`` as ``zero_run_time`` (they held no
machine time; the seeds require run times > 0). Both are counted in ``TraceMeta.excluded``.
The default queue filter is the seeds' (pbatch, pall, pbatch0-3).
"""

from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..jobs import JobTable
from . import DEFAULT_QUEUES, DEFAULT_TIMEZONE, ReadOptions, convert
from .frame import factorize_names, read_frame
from .records import scan_delimited
from .source import located, read_source
from .table import ParsedTrace, add_ragged_problem, build_table, per_node
from .timestamps import resolve_zone

CSM_COLUMNS = (
    "history_time",
    "allocation_id",
    "primary_job_id",
    "secondary_job_id",
    "ssd_file_system_name",
    "launch_node_name",
    "isolated_cores",
    "user_flags",
    "system_flags",
    "ssd_min",
    "ssd_max",
    "num_nodes",
    "num_processors",
    "num_gpus",
    "projected_memory",
    "state",
    "type",
    "job_type",
    "user_name",
    "user_id",
    "user_group_id",
    "user_group_name",
    "user_script",
    "begin_time",
    "end_time",
    "exit_status",
    "account",
    "comment",
    "job_name",
    "job_submit_time",
    "queue",
    "requeue",
    "time_limit",
)
NAMES = {  # canonical -> accepted header names, first present wins
    "submit": ("job_submit_time",),
    "begin": ("begin_time",),
    "end": ("end_time",),
    "num_nodes": ("num_nodes",),
    "queue": ("queue",),
    "time_limit": ("time_limit",),
    "exit_status": ("exit_status",),
    "job_id": ("primary_job_id", "allocation_id"),
    "processors": ("num_processors",),
    "gpus": ("num_gpus",),
    "user": ("hashed_user_id", "user_id", "user_name"),  # the public LAST file hashes them
    "group": ("hashed_user_group_id", "user_group_id", "user_group_name"),
}
REQUIRED = ("submit", "begin", "end", "num_nodes", "queue", "time_limit")
HEADERLESS = {  # the first accepted name that the 33-column CSM layout has
    canon: CSM_COLUMNS.index(next(name for name in names if name in CSM_COLUMNS))
    for canon, names in NAMES.items()
}


def read(path: str, options: ReadOptions) -> JobTable:
    zone = resolve_zone(options.timezone or DEFAULT_TIMEZONE)
    source = read_source(path, options.on_bad_row)
    with located(path):
        records = scan_delimited(source.data, ",", '"')
        first = [name.strip().lower() for name in records.fields(0)]
        if "job_submit_time" in first:
            columns, labels = _by_header(first, int(records.lines[0]))
            rows, width, header_row = records.tail(1), len(first), 0
        else:
            if len(first) < len(CSM_COLUMNS):
                raise TraceError(
                    f"not a Lassen trace: no header naming job_submit_time, and the first row "
                    f"has {len(first)} fields where the headerless CSM layout has "
                    f"{len(CSM_COLUMNS)}",
                    line=int(records.lines[0]),
                )
            columns = dict(HEADERLESS)
            labels = {canon: CSM_COLUMNS[index] for canon, index in columns.items()}
            rows, width, header_row = records, len(first), None
        if len(rows) == 0:
            raise TraceError("the file has a header but no job rows", line=int(records.lines[0]))
        frame = read_frame(
            source.data,
            rows,
            header=header_row,
            names=[f"f{i}" for i in range(width)],
            usecols=[f"f{i}" for i in sorted(set(columns.values()))],
            text_columns=[f"f{columns[c]}" for c in ("queue", "user", "group") if c in columns],
            exact_columns=[f"f{columns[c]}" for c in ("job_id", "exit_status") if c in columns],
        )
        column_of = {canon: frame[f"f{index}"] for canon, index in columns.items()}
        parsed = ParsedTrace(
            source=source,
            rows=rows,
            users=column_of.get("user"),
            groups=column_of.get("group"),
            trace_format="lassen",
            timezone=zone.key,
            timestamp_format=options.timestamp_format,
            default_queues=DEFAULT_QUEUES,
            job_id=np.arange(1, len(rows) + 1, dtype=np.int64),
            labels=labels,
            fields=dict(columns),
            required={"submit", "begin", "end", "num_nodes", "time_limit"},
        )
        add_ragged_problem(parsed, width)
        convert.times(parsed, column_of, options.timestamp_format, zone)
        parsed.num_nodes = convert.numbers(parsed, column_of["num_nodes"], "num_nodes")
        parsed.time_limit = convert.numbers(parsed, column_of["time_limit"], "time_limit")
        parsed.queue_codes, parsed.queue_names = factorize_names(column_of["queue"])
        if "exit_status" in column_of:
            parsed.exit_status = convert.exact_whole(parsed, column_of["exit_status"], "exit_status")
        _requests(parsed, column_of)
        if "job_id" in column_of:
            ids, missing = convert.job_ids(parsed, column_of["job_id"], "job_id")
            parsed.job_id = convert.ids_or_rows(ids, missing, parsed.job_id)
        end_missing = np.isnan(parsed.end) & ~convert.flagged(parsed, "end")
        parsed.exclude("not_finished", end_missing & np.isfinite(parsed.begin))
        parsed.exclude("zero_run_time", parsed.end == parsed.begin)
        with np.errstate(invalid="ignore"):
            parsed.actual_run_time = parsed.end - parsed.begin
        parsed.mode = "replay"
        return build_table(parsed, options)


def _requests(parsed: ParsedTrace, column_of) -> None:
    """Cores and GPUs per node from the job totals ``num_processors`` and ``num_gpus`` (0 or
    empty: not recorded, unknown), spread over its nodes and rounded up."""
    for canon, target in (("processors", "cores_per_node"), ("gpus", "gpus_per_node")):
        if canon not in column_of:
            continue
        total = convert.numbers(parsed, column_of[canon], canon)
        with np.errstate(invalid="ignore"):
            setattr(parsed, target, per_node(np.where(total > 0, total, np.nan), parsed.num_nodes))
        parsed.labels[target] = parsed.labels[canon]
        parsed.fields[target] = parsed.fields[canon]


def _by_header(header: list[str], line: int) -> tuple[dict[str, int], dict[str, str]]:
    columns: dict[str, int] = {}
    for canon, names in NAMES.items():
        for name in names:
            positions = [i for i, field in enumerate(header) if field == name]
            if len(positions) > 1:
                raise TraceError(
                    f"appears more than once (fields "
                    f"{' and '.join(str(i + 1) for i in positions)}): "
                    "which one is meant is ambiguous",
                    line=line,
                    column=name,
                )
            if positions:
                columns[canon] = positions[0]
                break
        else:
            if canon in REQUIRED:
                raise TraceError(
                    f"missing required column '{names[0]}' for replay mode (lassen format)",
                    line=line,
                )
    return columns, {canon: header[index] for canon, index in columns.items()}
