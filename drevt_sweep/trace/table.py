"""From a reader's parsed columns to the validated, filtered, sorted ``JobTable``.

Every reader fills a ``ParsedTrace`` (one array entry per data row, in file order) and hands it
to ``build_table``, so that filtering, validation, counting and sorting are the same for every
format. Each row read ends up either kept or counted under exactly one reason in
``TraceMeta.excluded``, so ``rows_read == rows_kept + sum(excluded.values())``:

1. rows that could not be split into fields (ragged rows) are bad rows;
2. the reader's format-specific exclusions, in order (``job_step``, ``never_started``,
   ``not_finished``, ``zero_run_time``, ``unknown_run_time`` ...);
3. the queue filter, one count per excluded queue (``queue:pdebug``);
4. validation of the remaining rows. A bad row is an error naming file, line, column and value
   (``on_bad_row=error``), or is skipped, counted under ``bad_row:<check>`` and written to the
   rejects file (``on_bad_row=skip``).

Validation: times finite and within years 1-9999; num_nodes a whole number >= 1; time_limit > 0;
known run times > 0; end >= begin >= submit where the history is known. A run time longer than
the time limit is legal (real jobs overrun) and counted in ``notes['run_time_exceeds_time_limit']``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError, TraceError
from ..files import csv_cell, write_file
from ..jobs import JobTable, Reject, TraceMeta
from .records import Records
from .source import SourceText

if TYPE_CHECKING:  # never imported at run time here: the SWF fast path builds tables without it
    import pandas as pd

MAX_NODES = 2**31 - 1
MAX_DURATION = 1e10  # seconds, about 317 years: anything longer is a broken value
MIN_TIME = -62135596800.0  # 0001-01-01T00:00:00Z
MAX_TIME = 253402300799.0  # 9999-12-31T23:59:59Z
TIME_COLUMNS = ("submit", "begin", "end")
_REJECT_VALUE_CHARS = 200


@dataclass
class Problem:
    """Rows that fail one check, with the message a user sees."""

    mask: np.ndarray
    code: str  # stable key: meta.excluded["bad_row:<code>"] when skipped
    message: str
    column: str | None  # canonical column name (see ParsedTrace.labels), None for whole rows
    structural: bool = False  # the row could not be read at all: checked before any filter
    fatal: bool = False  # an error even with on_bad_row=skip (e.g. swf_missing_time_limit=fail)


@dataclass
class ParsedTrace:
    """What a reader extracted; arrays have one entry per data row in file order."""

    source: SourceText
    rows: Records
    trace_format: str
    timezone: str
    timestamp_format: str
    default_queues: tuple[str, ...] | None  # None: keep every queue by default
    # The columns start empty: each reader fills them in once it has parsed the rows.
    job_id: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))  # or str (text ids)
    submit: np.ndarray = field(default_factory=lambda: np.empty(0))  # float64 seconds
    num_nodes: np.ndarray = field(default_factory=lambda: np.empty(0))  # float64, validated then cast
    time_limit: np.ndarray = field(default_factory=lambda: np.empty(0))  # float64 seconds
    time_limit_unstated: np.ndarray | None = None  # bool: no limit requested (a reader's stand-in)
    queue_codes: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    queue_names: list[str] = field(default_factory=list)
    begin: np.ndarray | None = None
    end: np.ndarray | None = None
    actual_run_time: np.ndarray | None = None
    exit_status: np.ndarray | None = None  # int64, -1 unknown
    # Per-node requests (float64, NaN unknown; validated, then cast) and the partition
    # (None: the queue). See ``per_node`` for totals spread over a job's nodes.
    cores_per_node: np.ndarray | None = None
    gpus_per_node: np.ndarray | None = None
    memory_per_node: np.ndarray | None = None  # MiB
    partition_codes: np.ndarray | None = None
    partition_names: list[str] = field(default_factory=list)
    # Who submitted, as text ('' = unknown; a pandas Series or a CodedText); None: no such column.
    users: pd.Series | CodedText | None = None
    groups: pd.Series | CodedText | None = None  # the group or account, as ``users``
    qos: pd.Series | CodedText | None = None  # the job's QOS (sacct), as ``users``
    mode: str | None = None  # None: replay exactly when every kept job has begin and end
    machine_nodes: int | None = None
    header_timezone: str | None = None  # the zone the file itself states (SWF TimeZoneString)
    required: set[str] = field(default_factory=set)  # canonical columns that may not be empty
    labels: dict[str, str] = field(default_factory=dict)  # canonical -> name in the file
    fields: dict[str, int] = field(default_factory=dict)  # canonical -> field index in a record
    problems: list[Problem] = field(default_factory=list)
    exclusions: list[tuple[str, np.ndarray]] = field(default_factory=list)
    note_masks: dict[str, np.ndarray] = field(default_factory=dict)
    extra_notes: dict[str, int] = field(default_factory=dict)  # counts that are not of rows

    def __len__(self) -> int:
        return len(self.rows)

    def problem(self, mask, column, suffix, message, **flags) -> None:
        """Record rows failing a check on one column (code ``<column>_<suffix>``)."""
        mask = np.asarray(mask, dtype=bool)
        if mask.any():
            self.problems.append(Problem(mask, f"{column}_{suffix}", message, column, **flags))

    def exclude(self, reason: str, mask) -> None:
        mask = np.asarray(mask, dtype=bool)
        if mask.any():
            self.exclusions.append((reason, mask))

    def note(self, name: str, mask) -> None:
        mask = np.asarray(mask, dtype=bool)
        if name in self.note_masks:
            self.note_masks[name] = self.note_masks[name] | mask
        else:
            self.note_masks[name] = mask


def ragged_rows(parsed_rows: Records, expected: int) -> np.ndarray:
    return parsed_rows.field_counts != expected


def add_ragged_problem(parsed: ParsedTrace, expected: int) -> None:
    mask = ragged_rows(parsed.rows, expected)
    if mask.any():
        parsed.problems.insert(
            0,
            Problem(
                mask,
                "ragged_row",
                f"row has the wrong number of fields (the file's rows have {expected})",
                None,
                structural=True,
            ),
        )


def queue_filter(option, format_default: tuple[str, ...] | None) -> frozenset[str] | None:
    """The queue names to keep, or None for every queue."""
    if option is None or option == "default":
        return None if format_default is None else frozenset(format_default)
    if isinstance(option, str):
        names = [part.strip() for part in option.split(",") if part.strip()]
    else:
        try:
            names = [str(name).strip() for name in option]
        except TypeError:
            raise ConfigError(
                f"queues must be 'default', 'all' or a list of names, got {option!r}"
            ) from None
    if names == ["all"]:
        return None
    if names == ["default"]:
        return None if format_default is None else frozenset(format_default)
    if not names:
        raise ConfigError("queues is empty: name at least one queue, or use 'all'")
    return frozenset(names)


def build_table(parsed: ParsedTrace, options) -> JobTable:
    """Filter, validate, count and sort; raise ``TraceError`` on the first bad row unless
    ``options.on_bad_row == 'skip'``."""
    n = len(parsed)
    excluded: dict[str, int] = {}
    _damaged_text(parsed)
    problems = list(parsed.problems)
    structural = np.zeros(n, dtype=bool)
    for problem in problems:
        if problem.structural:
            structural |= problem.mask

    keep = ~structural
    for reason, mask in parsed.exclusions:
        hit = mask & keep
        if hit.any():
            excluded[reason] = excluded.get(reason, 0) + int(hit.sum())
            keep &= ~hit

    allowed = queue_filter(options.queues, parsed.default_queues)
    if allowed is not None and parsed.queue_names:
        accepted = np.array([name in allowed for name in parsed.queue_names], dtype=bool)
        out = keep & ~accepted[parsed.queue_codes]
        if out.any():
            counts = np.bincount(parsed.queue_codes[out], minlength=len(parsed.queue_names))
            for code in np.flatnonzero(counts):
                excluded[f"queue:{parsed.queue_names[code]}"] = int(counts[code])
            keep &= ~out

    problems.extend(_validation_problems(parsed))
    first_problem = np.full(n, -1, dtype=np.int64)
    for k, problem in enumerate(problems):
        applies = problem.mask if problem.structural else problem.mask & keep
        first_problem[applies & (first_problem < 0)] = k
    bad_rows = np.flatnonzero(first_problem >= 0)
    fatal = [i for i in bad_rows if problems[first_problem[i]].fatal]
    if bad_rows.size and (options.on_bad_row != "skip" or fatal):
        row = fatal[0] if fatal and options.on_bad_row == "skip" else bad_rows[0]
        raise _error(parsed, problems[first_problem[row]], row)

    rejects = tuple(_reject(parsed, problems[first_problem[i]], i) for i in bad_rows)
    for i in bad_rows:
        key = f"bad_row:{problems[first_problem[i]].code}"
        excluded[key] = excluded.get(key, 0) + 1
    keep &= first_problem < 0
    if options.on_bad_row == "skip" and options.rejects_path:
        write_rejects(options.rejects_path, rejects)

    kept = np.flatnonzero(keep)
    if kept.size == 0:
        raise TraceError(_nothing_left(n, excluded), path=parsed.source.path)
    return _assemble(parsed, options, _submit_order(parsed.submit, kept), excluded, rejects)


REPLACEMENT = "\ufffd"  # what source.read_source put in place of bytes that are not UTF-8


def _damaged_text(parsed: ParsedTrace) -> None:
    """Rows on lines where bytes that are not UTF-8 were replaced (skip mode): a row whose
    queue, partition, user or group name holds a replacement is a bad row (two damaged names
    could otherwise merge into one); numbers and times that hold one fail their own checks;
    a row damaged only in a field no one reads is kept, counted in
    ``notes['non_utf8_text_replaced']`` (and lines outside the rows, such as SWF comments, in
    ``notes['non_utf8_lines_outside_rows']``)."""
    lines = parsed.source.replaced_lines
    if not lines.size:
        return
    rows = parsed.rows
    row = np.searchsorted(rows.lines, lines, side="right") - 1  # the last row starting at or before
    known = row >= 0
    row, line = row[known], lines[known]
    last_line = np.array([rows.lines[i] + rows.data.count(b"\n", int(rows.starts[i]), int(rows.ends[i]))
                          for i in row.tolist()], dtype=np.int64)
    inside = line <= last_line  # else a comment, blank or header line after that row
    touched = np.zeros(len(parsed), dtype=bool)
    touched[row[inside]] = True
    named = np.zeros(len(parsed), dtype=bool)
    for column, codes, names in _name_columns(parsed):
        bad = np.array([REPLACEMENT in name for name in names] or [False], dtype=bool)
        hit = touched & bad[codes]
        if hit.any():
            parsed.problem(hit, column, "not_utf8",
                           "not UTF-8 text (bytes replaced by U+FFFD): re-save the file as UTF-8")
            named |= hit
    parsed.note("non_utf8_text_replaced", touched & ~named)
    outside = int(lines.size - inside.sum())
    if outside:
        parsed.extra_notes["non_utf8_lines_outside_rows"] = outside


def _name_columns(parsed: ParsedTrace):
    """(column, per-row codes, names) of the text columns that the simulation uses."""
    if parsed.queue_names:
        yield "queue", parsed.queue_codes, parsed.queue_names
    if parsed.partition_codes is not None and parsed.partition_names:
        yield "partition", parsed.partition_codes, parsed.partition_names
    for column, text in (("user", parsed.users), ("group", parsed.groups)):
        if text is None:
            continue
        if isinstance(text, CodedText):
            yield column, text.codes, text.names
        else:
            flags = text.astype("str").str.contains(REPLACEMENT, regex=False).to_numpy(dtype=bool)
            yield column, flags.astype(np.int64), ["", REPLACEMENT]


def _submit_order(submit: np.ndarray, kept: np.ndarray):
    """Kept rows stably sorted by submit time; a slice (no copies) when nothing moves."""
    times = submit[kept]
    if kept.size == submit.size and bool(np.all(times[1:] >= times[:-1])):
        return slice(None)
    return kept[np.argsort(times, kind="stable")]


def _validation_problems(parsed: ParsedTrace) -> list[Problem]:
    found: list[Problem] = []

    def check(mask, column, suffix, message):
        mask = np.asarray(mask, dtype=bool)
        if mask.any():
            found.append(Problem(mask, f"{column}_{suffix}", message, column))

    for name in TIME_COLUMNS:
        values = getattr(parsed, name)
        if values is None:
            continue
        if name in parsed.required:
            check(np.isnan(values), name, "missing", "missing value")
        check(np.isinf(values), name, "not_finite", "not a finite time")
        with np.errstate(invalid="ignore"):
            check(
                (values < MIN_TIME) | (values > MAX_TIME),
                name,
                "out_of_range",
                "time out of range (must fall in the years 1 to 9999)",
            )

    begin, end, submit = parsed.begin, parsed.end, parsed.submit
    if begin is not None and end is not None:
        with np.errstate(invalid="ignore"):
            check(end < begin, "end", "before_begin", "end time is before begin time")
            check(
                end == begin,
                "end",
                "equals_begin",
                "end time equals begin time: the run time must be > 0",
            )
            check(begin < submit, "begin", "before_submit", "begin time is before submit time")

    nodes = parsed.num_nodes
    check(np.isnan(nodes), "num_nodes", "missing", "missing value")
    check(np.isinf(nodes), "num_nodes", "not_finite", "not a finite number")
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(nodes)
        check(
            finite & (nodes != np.floor(nodes)),
            "num_nodes",
            "not_whole",
            "num_nodes must be a whole number",
        )
        check(nodes < 1, "num_nodes", "below_1", "num_nodes must be at least 1")
        check(
            nodes > MAX_NODES,
            "num_nodes",
            "too_large",
            f"num_nodes is too large (more than {MAX_NODES})",
        )

    for name, least in (("cores_per_node", 1), ("gpus_per_node", 0), ("memory_per_node", 0)):
        values = getattr(parsed, name)
        if values is None:
            continue
        with np.errstate(invalid="ignore"):
            check(np.isinf(values), name, "not_finite", "not a finite number")
            if name != "memory_per_node":
                check(
                    np.isfinite(values) & (values != np.floor(values)),
                    name,
                    "not_whole",
                    f"{parsed.labels.get(name, name)} must be a whole number",
                )
            check(values < least, name, "negative" if least == 0 else "below_1",
                  f"{parsed.labels.get(name, name)} must be at least {least}")
            check(values > MAX_NODES, name, "too_large", f"{name} is too large")

    for name in ("time_limit", "actual_run_time"):
        values = getattr(parsed, name)
        if values is None:
            continue
        if name in parsed.required:
            check(np.isnan(values), name, "missing", "missing value")
        check(np.isinf(values), name, "not_finite", "not a finite number")
        with np.errstate(invalid="ignore"):
            check(values <= 0, name, "not_positive", f"{name} must be > 0 seconds")
            check(
                values > MAX_DURATION,
                name,
                "too_large",
                f"{name} is too large (more than {MAX_DURATION:.0e} seconds)",
            )
    return found


def _raw_value(parsed: ParsedTrace, problem: Problem, row: int) -> str | None:
    if problem.column is None:
        text = parsed.rows.text(row)
        return text if len(text) <= _REJECT_VALUE_CHARS else text[: _REJECT_VALUE_CHARS - 3] + "..."
    index = parsed.fields.get(problem.column)
    if index is None:
        return None
    try:
        value = parsed.rows.field(row, index)
    except Exception:  # a malformed record: quote it whole rather than fail while reporting
        value = parsed.rows.text(row)
    if value is not None and len(value) > _REJECT_VALUE_CHARS:
        value = value[: _REJECT_VALUE_CHARS - 3] + "..."
    return value


def _label(parsed: ParsedTrace, problem: Problem) -> str | None:
    if problem.column is None:
        return None
    return parsed.labels.get(problem.column, problem.column)


def _error(parsed: ParsedTrace, problem: Problem, row: int) -> TraceError:
    return TraceError(
        problem.message,
        path=parsed.source.path,
        line=int(parsed.rows.lines[row]),
        column=_label(parsed, problem),
        value=_raw_value(parsed, problem, row),
    )


def _reject(parsed: ParsedTrace, problem: Problem, row: int) -> Reject:
    return Reject(
        line=int(parsed.rows.lines[row]),
        column=_label(parsed, problem),
        value=_raw_value(parsed, problem, row),
        reason=problem.message,
    )


def write_rejects(path: str, rejects: tuple[Reject, ...]) -> None:
    """The skipped rows as CSV (line, column, value, reason), written by ``files.write_file``
    (atomically, never onto an input); text cells that look like spreadsheet formulas get a
    leading ``'`` (``files.csv_cell``)."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(["line", "column", "value", "reason"])
    for reject in rejects:
        writer.writerow([reject.line, csv_cell(reject.column or ""), csv_cell(reject.value or ""),
                         csv_cell(reject.reason)])
    write_file(path, buffer.getvalue().encode("utf-8"), what="the rejects file")


def _nothing_left(rows_read: int, excluded: dict[str, int]) -> str:
    summary = ", ".join(f"{reason}: {count}" for reason, count in sorted(excluded.items()))
    hint = ""
    if any(reason.startswith("queue:") for reason in excluded):
        hint = " (the queue filter removed rows; queues=all keeps every queue)"
    return f"no jobs left: {rows_read} rows read, all excluded ({summary}){hint}"


def _assemble(parsed: ParsedTrace, options, order, excluded, rejects) -> JobTable:
    n = parsed.submit[order].shape[0]

    def take(values, fill=np.nan):
        return np.full(n, fill) if values is None else values[order]

    begin, end = take(parsed.begin), take(parsed.end)
    actual = take(parsed.actual_run_time)
    time_limit = parsed.time_limit[order]
    if options.force_simulation:
        mode = "simulation"
    elif parsed.mode is not None:
        mode = parsed.mode
    else:
        mode = (
            "replay" if bool(np.isfinite(begin).all() and np.isfinite(end).all()) else "simulation"
        )

    queue_code, names = _used_names(parsed.queue_codes[order], parsed.queue_names)
    if parsed.partition_codes is None:
        partition_code, partition_names = queue_code, names
    else:
        partition_code, partition_names = _used_names(
            parsed.partition_codes[order], parsed.partition_names
        )

    notes = {}
    for name, mask in parsed.note_masks.items():
        count = int(mask[order].sum())
        if count:
            notes[name] = count
    notes.update(parsed.extra_notes)
    with np.errstate(invalid="ignore"):
        over = int((actual > time_limit).sum())
    if over:
        notes["run_time_exceeds_time_limit"] = over

    meta = TraceMeta(
        path=parsed.source.path,
        trace_format=parsed.trace_format,
        mode=mode,
        checksum=parsed.source.checksum,
        timezone=parsed.timezone,
        timestamp_format=parsed.timestamp_format,
        machine_nodes=parsed.machine_nodes,
        header_timezone=parsed.header_timezone,
        has_actual_run_time=bool(np.isfinite(actual).all()),
        rows_read=len(parsed),
        rows_kept=n,
        excluded=dict(sorted(excluded.items())),
        rejects=rejects,
        notes=dict(sorted(notes.items())),
    )
    exit_status = (
        np.full(n, -1, dtype=np.int64) if parsed.exit_status is None else parsed.exit_status[order]
    )
    user_code, user_names = _who(parsed.users, order)
    group_code, group_names = _who(parsed.groups, order)
    qos_code, qos_names = _who(parsed.qos, order)
    return JobTable(
        job_id=_owned(parsed.job_id[order], np.int64 if parsed.job_id.dtype.kind in "iu" else str),
        source_line=_owned(parsed.rows.lines[order], np.int64),
        submit=_owned(parsed.submit[order], np.float64),
        begin=_owned(begin, np.float64),
        end=_owned(end, np.float64),
        num_nodes=parsed.num_nodes[order].astype(np.int64),
        time_limit=_owned(time_limit, np.float64),
        actual_run_time=_owned(actual, np.float64),
        queue_code=queue_code,
        queue_names=tuple(names),
        exit_status=_owned(exit_status, np.int64),
        meta=meta,
        cores_per_node=_whole_or_unknown(take(parsed.cores_per_node)),
        gpus_per_node=_whole_or_unknown(take(parsed.gpus_per_node)),
        memory_per_node=_owned(take(parsed.memory_per_node), np.float64),
        partition_code=partition_code,
        partition_names=tuple(partition_names),
        user_code=user_code,
        user_names=user_names,
        group_code=group_code,
        group_names=group_names,
        time_limit_unstated=take(parsed.time_limit_unstated, False).astype(bool),
        qos_code=qos_code,
        qos_names=qos_names,
    )


def _used_names(codes: np.ndarray, all_names) -> tuple[np.ndarray, list[str]]:
    """Codes renumbered into the sorted names that the kept rows use."""
    used = np.flatnonzero(np.bincount(codes, minlength=len(all_names)))
    names = sorted(all_names[code] for code in used)
    position = {name: i for i, name in enumerate(names)}
    remap = np.zeros(max(len(all_names), 1), dtype=np.int32)
    for code in used:
        remap[code] = position[all_names[code]]
    return remap[codes], names


def _whole_or_unknown(values: np.ndarray) -> np.ndarray:
    """Validated whole numbers as int64, NaN (unknown) as -1."""
    return np.where(np.isnan(values), -1, values).astype(np.int64)


def per_node(total: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """A job's total of some resource spread evenly over its nodes, rounded up (a node holds
    whole cores/GPUs): ``ceil(total / nodes)``; NaN where either is unknown or not > 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        known = np.isfinite(total) & (total >= 0) & np.isfinite(nodes) & (nodes >= 1)
        return np.where(known, np.ceil(total / np.where(known, nodes, 1)), np.nan)


@dataclass(frozen=True)
class CodedText:
    """A text column already coded: ``names[codes[row]]`` is row's clean text ('' = unknown);
    the names are distinct. Cheaper than a Series of strings where a reader has the codes."""

    codes: np.ndarray  # int64, one per row
    names: list[str]


def _who(text: pd.Series | CodedText | None, order) -> tuple[np.ndarray | None, tuple[str, ...]]:
    """User or group text of the kept rows -> (int32 codes into sorted names, names); '' -> -1."""
    if text is None:
        return None, ()
    if isinstance(text, CodedText):
        codes, names = _used_names(text.codes[order], text.names)
        codes = codes.astype(np.int32)
        if names and names[0] == "":  # the unknown marker sorts first
            return codes - 1, tuple(names[1:])
        return codes, tuple(names)
    values = text.astype("str").str.strip().where(text.notna(), "").to_numpy(dtype=object)[order]
    names, codes = np.unique(values.astype(str), return_inverse=True)
    names = [str(name) for name in names]
    codes = codes.astype(np.int32)
    if names and names[0] == "":  # the unknown marker sorts first
        codes -= 1
        names = names[1:]
    return codes, tuple(names)


def _owned(values: np.ndarray, dtype) -> np.ndarray:
    """``values`` as ``dtype``, copied only when needed (wrong type, or a read-only view)."""
    out = np.asarray(values, dtype=dtype)
    return out if out.flags.writeable else out.copy()
