"""Standard Workload Format (Parallel Workloads Archive): one job per line, 18 fields.

Header comments (``; Key: value``) give ``MaxNodes`` (else ``MaxProcs``) as the machine size,
``UnixStartTime`` (the epoch of relative time 0) and ``TimeZoneString`` (kept as the trace's
zone; SWF times are offsets from UnixStartTime, so no wall-clock conversion is needed).

Per job: job_id = field 1; submit = UnixStartTime + field 2 (relative seconds when the header
has no UnixStartTime: ``meta.timestamp_format == "relative"``); begin = submit + wait (field 3)
when the wait is known; actual run time = field 4; end = begin + run time; num_nodes =
requested processors (field 8), else allocated processors (field 5); time_limit = requested
time (field 9); queue = field 15 as text; partition = field 16 as text; user and group =
fields 12 and 13 (-1 = unknown); exit_status = -1 (field 11 is a completion status, not an
exit code). The trace is replayed when every kept job has a known wait, else simulated.

-1 means "unknown". What happens to a job with an unknown value is explicit and counted:

* submit time (field 2) unknown -> excluded, ``unknown_submit``;
* run time (field 4) unknown -> excluded, ``unknown_run_time`` (no history, no ground truth);
* run time 0 -> excluded, ``zero_run_time`` (SWF: it ran under 0.5 s; run times must be > 0);
* both processor counts (fields 8 and 5) unknown (-1 or 0) -> excluded, ``unknown_num_nodes``;
  allocated processors used for requested -> ``notes['num_nodes_from_allocated']``;
* requested time (field 9) unknown -> ``swf_missing_time_limit``: ``run_time`` uses the run
  time as the limit (``notes['time_limit_from_run_time']``; the job is marked
  ``time_limit_unstated``: a slurm.conf partition's ``DefaultTime``, else ``MaxTime``, replaces
  that stand-in, as Slurm gives a job that asked for none), ``drop`` excludes the job
  (``unknown_time_limit``), ``fail`` stops with an error naming the first such line;
* wait (field 3) unknown -> begin/end unknown, the trace is simulated
  (``notes['wait_time_unknown']``).

Nodes and cores: when the header's ``MaxProcs`` exceeds ``MaxNodes``, a node has
``MaxProcs // MaxNodes`` processors, a job asking for P processors gets
``ceil(P / procs_per_node)`` nodes with ``ceil(P / nodes)`` cores each; otherwise a processor is
a node (as the archive's single-processor-node machines are). Requested memory (field 10, KB
per processor; -1 unknown) becomes MiB per node (x the cores per node).

Values below -1 in these fields are bad rows. The default queue filter keeps every queue.

Two parsers, one result: a clean file (18 fields per row, whole numbers in the fields used) is
parsed by numpy alone (``_whole_number_columns``), so that a one-off ``drevt-sim`` run does not
import pandas; any other file goes through pandas (``_frame_columns``), whose checks name the
line, column and value of whatever is wrong. ``_fill`` turns either into the same table.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError, TraceError
from ..jobs import JobTable
from . import ReadOptions
from .records import Records, scan_whitespace
from .source import located, read_source
from .table import CodedText, ParsedTrace, add_ragged_problem, build_table, per_node

if TYPE_CHECKING:  # pandas is imported only when the fast path declines a file
    import pandas as pd

FIELDS = 18
MISSING_TIME_LIMIT_ACTIONS = ("run_time", "drop", "fail")
# 0-based positions of the SWF fields used (SWF numbers them from 1).
JOB, SUBMIT, WAIT, RUN, ALLOCATED, REQUESTED, REQ_TIME, REQ_MEMORY, QUEUE, PARTITION = (
    0, 1, 2, 3, 4, 7, 8, 9, 14, 15
)
USER, GROUP = 11, 12  # user id (field 12) and group id (field 13): who submitted, -1 unknown
LABELS = {
    "job_id": "job number (field 1)",
    "submit": "submit time (field 2)",
    "wait": "wait time (field 3)",
    "actual_run_time": "run time (field 4)",
    "allocated": "allocated processors (field 5)",
    "num_nodes": "requested processors (field 8)",
    "time_limit": "requested time (field 9)",
    "queue": "queue (field 15)",
    "memory_per_node": "requested memory (field 10)",
    "partition": "partition (field 16)",
}
FIELD_OF = {
    "job_id": JOB,
    "submit": SUBMIT,
    "wait": WAIT,
    "actual_run_time": RUN,
    "allocated": ALLOCATED,
    "num_nodes": REQUESTED,
    "time_limit": REQ_TIME,
    "queue": QUEUE,
    "memory_per_node": REQ_MEMORY,
    "partition": PARTITION,
}
_HEADER_LINE = re.compile(r"^\s*;\s*([A-Za-z][\w ]*?)\s*:\s*(.*?)\s*$")


def read(path: str, options: ReadOptions) -> JobTable:
    if options.swf_missing_time_limit not in MISSING_TIME_LIMIT_ACTIONS:
        raise ConfigError(
            f"unknown swf_missing_time_limit '{options.swf_missing_time_limit}'; choose one of "
            f"{', '.join(MISSING_TIME_LIMIT_ACTIONS)}"
        )
    source = read_source(path, options.on_bad_row)
    with located(path):
        header = read_header(source.data)
        rows = scan_whitespace(source.data, ";")
        if len(rows) == 0:
            raise TraceError("no job lines: only comments or blank lines")
        columns = _whole_number_columns(source.data, rows) or _frame_columns(source.data, rows)
        start = _header_int(header, "UnixStartTime")
        max_nodes, max_procs = _header_int(header, "MaxNodes"), _header_int(header, "MaxProcs")
        machine_nodes = max_nodes or max_procs
        # Processors per node, when the header says a node has several (else 1: a processor
        # is a node, as before).
        procs_per_node = max_procs // max_nodes if max_nodes and max_procs and max_procs > max_nodes else 1
        stated = header.get("TimeZoneString", ("", 0))[0] or None
        parsed = ParsedTrace(
            source=source,
            rows=rows,
            trace_format="swf",
            # The user's zone wins over the header's (noted); no zone at all: UTC.
            timezone=options.timezone or stated or "UTC",
            header_timezone=stated,
            timestamp_format="epoch" if start is not None else "relative",
            default_queues=None,
            machine_nodes=machine_nodes if machine_nodes and machine_nodes > 0 else None,
            labels=dict(LABELS),
            fields=dict(FIELD_OF),
            required={"submit", "num_nodes", "time_limit", "actual_run_time"},
        )
        add_ragged_problem(parsed, FIELDS)
        if options.timezone and stated and options.timezone != stated:
            parsed.note("timezone_overrides_header", np.ones(len(rows), dtype=bool))
        _fill(parsed, columns, float(start or 0), options, procs_per_node)
        return build_table(parsed, options)


def read_header(data: bytes) -> dict[str, tuple[str, int]]:
    """``; Key: value`` comment lines -> {key: (value, line)}; the first occurrence wins."""
    header: dict[str, tuple[str, int]] = {}
    for number, raw in enumerate(_lines(data), start=1):
        stripped = raw.lstrip()
        if not stripped:
            continue
        if not stripped.startswith(b";"):
            break  # the header ends at the first job line
        match = _HEADER_LINE.match(raw.decode("utf-8", errors="replace"))
        if match and match.group(1) not in header:
            header[match.group(1)] = (match.group(2), number)
    return header


def _lines(data: bytes):
    """Lines one at a time (the header is read without splitting the whole file)."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        yield data[start:end]
        start = end + 1


def _header_int(header, key: str) -> int | None:
    if key not in header:
        return None
    value, line = header[key]
    match = re.match(r"^[+-]?\d+", value)
    if not match:
        raise TraceError(
            f"header field {key} is not a whole number", line=line, column=key, value=value
        )
    number = int(match.group(0))
    if abs(number) > 2**62:
        raise TraceError(f"header field {key} is out of range", line=line, column=key, value=value)
    return number


def _fill(parsed: ParsedTrace, columns: _FrameColumns | _WholeNumberColumns, start: float,
          options: ReadOptions, procs_per_node: int = 1) -> None:
    value = {
        canon: columns.numbers(parsed, canon, index)
        for canon, index in FIELD_OF.items()
        if canon not in ("queue", "partition", "job_id")
    }
    job = columns.ids(parsed, JOB)  # int64, exact (never through float64)
    parsed.problem(job < -1, "job_id", "negative", "negative value (only -1 means unknown)")
    for canon, values in value.items():
        with np.errstate(invalid="ignore"):
            parsed.problem(values < -1, canon, "negative", "negative value (only -1 means unknown)")
    submit, wait, run = (
        value["submit"],
        value["wait"],
        value["actual_run_time"],
    )
    requested, allocated, limit = value["num_nodes"], value["allocated"], value["time_limit"]

    with np.errstate(invalid="ignore"):
        parsed.exclude("unknown_submit", submit == -1)
        parsed.exclude("unknown_run_time", run == -1)
        parsed.exclude("zero_run_time", run == 0)
        nodes_unknown = (requested <= 0) & (allocated <= 0)
        parsed.exclude("unknown_num_nodes", nodes_unknown)
        use_allocated = (requested <= 0) & (allocated > 0)
        limit_unknown = limit == -1
    parsed.note("num_nodes_from_allocated", use_allocated)
    parsed.fields["num_nodes"] = REQUESTED
    nodes = np.where(use_allocated, allocated, requested)

    action = options.swf_missing_time_limit
    if action == "drop":
        parsed.exclude("unknown_time_limit", limit_unknown)
    elif action == "fail":
        parsed.problem(
            limit_unknown,
            "time_limit",
            "unknown",
            "requested time is unknown (-1) and swf_missing_time_limit=fail; "
            "use run_time or drop to read this trace",
            fatal=True,
        )
    else:
        parsed.note("time_limit_from_run_time", limit_unknown)
        limit = np.where(limit_unknown, run, limit)
        parsed.time_limit_unstated = limit_unknown  # a slurm.conf's DefaultTime/MaxTime replaces it

    with np.errstate(invalid="ignore"):
        wait_known = wait >= 0
    parsed.note("wait_time_unknown", ~wait_known)
    with np.errstate(invalid="ignore", over="ignore"):
        parsed.submit = start + submit
        parsed.begin = np.where(wait_known, parsed.submit + wait, np.nan)
        parsed.end = parsed.begin + run
    parsed.actual_run_time = run
    if procs_per_node > 1:  # processors become cores of whole nodes
        with np.errstate(invalid="ignore"):
            whole_nodes = np.where(nodes > 0, np.ceil(nodes / procs_per_node), nodes)
        parsed.cores_per_node = per_node(np.where(nodes > 0, nodes, np.nan), whole_nodes)
        nodes = whole_nodes
    procs_on_node = parsed.cores_per_node if parsed.cores_per_node is not None else 1.0
    with np.errstate(invalid="ignore"):  # KB per processor -> MiB per node; -1 unknown
        memory = value["memory_per_node"]
        parsed.memory_per_node = np.where(memory >= 0, memory * procs_on_node / 1024.0, np.nan)
    parsed.num_nodes = nodes
    parsed.time_limit = limit
    parsed.job_id = np.where(job >= 0, job, np.arange(1, len(parsed) + 1, dtype=np.int64))
    parsed.queue_codes, parsed.queue_names = columns.names(QUEUE)
    parsed.partition_codes, parsed.partition_names = columns.names(PARTITION)
    parsed.users, parsed.groups = columns.who(USER), columns.who(GROUP)
    parsed.mode = None  # replay exactly when every kept job has a known wait


# The fields read; the fast path parses only these.
USED_FIELDS = tuple(sorted({*FIELD_OF.values(), USER, GROUP}))
# Bytes on which numpy and pandas would split or quote a line differently: whitespace other
# than space, tab and newline (numpy splits on it, pandas does not) and the quote character.
_SPLIT_DIFFERENTLY = (b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f", b'"')


def _whole_number_columns(data: bytes, rows: Records) -> _WholeNumberColumns | None:
    """The fast path, or None: a file whose rows all have 18 fields and whose used fields are
    all whole numbers (``[+-]digits``, within int64) -- every archive trace -- is parsed by
    numpy's C ``loadtxt`` without pandas (whose import alone costs more than reading KTH-SP2).
    Anything else (a ragged row, a decimal point, text, a quote, odd whitespace, non-ASCII
    bytes) returns None and takes the pandas path, which reports it exactly as before; on the
    files it takes, the fast path gives the same JobTable (tests/test_trace_swf_fast.py)."""
    if not data.isascii() or any(byte in data for byte in _SPLIT_DIFFERENTLY):
        return None
    if not bool((rows.field_counts == FIELDS).all()):
        return None
    import io
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # e.g. a deprecated float-to-int parse: decline
            matrix = np.loadtxt(io.BytesIO(data), dtype=np.int64, comments=";",
                                usecols=USED_FIELDS, ndmin=2)
    except (ValueError, OverflowError, Warning):
        return None
    if matrix.shape != (len(rows), len(USED_FIELDS)):
        return None
    return _WholeNumberColumns(matrix)


class _WholeNumberColumns:
    """The used fields as int64 (the fast path): nothing to check but what ``_fill`` checks."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix

    def column(self, field: int) -> np.ndarray:
        return self.matrix[:, USED_FIELDS.index(field)]

    def numbers(self, parsed: ParsedTrace, canon: str, field: int) -> np.ndarray:
        return self.column(field).astype(np.float64)

    def ids(self, parsed: ParsedTrace, field: int) -> np.ndarray:
        return self.column(field).copy()

    def names(self, field: int) -> tuple[np.ndarray, list[str]]:
        """(int64 codes, names): numbers as text, as ``value_text`` writes them."""
        values = self.column(field)
        low, high = int(values.min()), int(values.max())
        if high - low <= 4 * values.size + 1024:  # the usual small ids: a table, no sort
            seen = np.zeros(high - low + 1, dtype=bool)
            seen[values - low] = True
            uniques = np.flatnonzero(seen) + low
            codes = (np.cumsum(seen) - 1)[values - low]
        else:
            uniques, codes = np.unique(values, return_inverse=True)
        return codes.astype(np.int64).reshape(-1), [str(number) for number in uniques.tolist()]

    def who(self, field: int) -> CodedText:
        """User/group numbers as text, '' for -1 (unknown)."""
        codes, names = self.names(field)
        return CodedText(codes, ["" if name == "-1" else name for name in names])


def _frame_columns(data: bytes, rows: Records) -> _FrameColumns:
    from .frame import read_frame

    return _FrameColumns(read_frame(
        data,
        rows,
        header=None,
        names=list(range(FIELDS)),
        usecols=list(USED_FIELDS),
        sep=r"\s+",
        comment=";",
        exact_columns=[JOB],
    ))


class _FrameColumns:
    """The general path: pandas' CSV parser, every value checked by ``convert``."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame

    def numbers(self, parsed: ParsedTrace, canon: str, field: int) -> np.ndarray:
        from . import convert

        return convert.numbers(parsed, self.frame[field], canon)

    def ids(self, parsed: ParsedTrace, field: int) -> np.ndarray:
        from . import convert

        return convert.exact_whole(parsed, self.frame[field], "job_id")

    def names(self, field: int) -> tuple[np.ndarray, list[str]]:
        import pandas as pd

        codes, names = pd.factorize(value_text(self.frame[field]), sort=False)
        return codes.astype(np.int64), [str(name) for name in names]

    def who(self, field: int) -> pd.Series:
        return value_text(self.frame[field]).replace("-1", "")


def value_text(column: pd.Series) -> pd.Series:
    """SWF queue numbers as text (``1``, not ``1.0``)."""
    import pandas as pd

    numbers = pd.to_numeric(column, errors="coerce")
    whole = numbers.notna() & (numbers == np.floor(numbers)) & (numbers.abs() < 2**53)
    text = column.astype("str").str.strip()
    text = text.where(~whole, numbers.where(whole, 0).astype(np.int64).astype("str"))
    return text.where(column.notna(), "")
