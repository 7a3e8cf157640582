"""Slurm accounting exports: ``sacct -P`` (pipe-separated, header by name).

Columns (names matched case-insensitively, first present wins):

* ``Submit`` (required), ``Start``, ``End``: ISO wall-clock times in ``--timezone``;
  ``Unknown``/``None`` mean "not yet". **Replay** when the file has both Start and End,
  else **simulation**.
* num_nodes: ``ReqNodes``, else ``NNodes``/``AllocNodes`` (required).
* time_limit: ``TimelimitRaw`` (minutes), else ``Timelimit`` (``[D-]HH:MM:SS``, ``MM:SS``,
  ``D-HH``, ``D-HH:MM``, ``MM``) (required).
* actual run time: ``ElapsedRaw`` (seconds), else ``Elapsed``; in replay ``End - Start``.
  Where neither gives one (no such column, or an empty cell), ``CPUTimeRAW`` (elapsed x
  allocated CPUs) divided by ``AllocCPUS`` (``notes['run_time_from_cpu_time_alloc_cpus']``),
  else by ``ReqCPUS`` times the CPUs Slurm allocated per requested CPU
  (``notes['run_time_from_cpu_time_req_cpus_x<k>']``). ``k`` is estimated from the file: the
  TIMEOUT jobs ran for their limit, so ``k = round(median(CPUTimeRAW / (ReqCPUS x limit)))``
  over them, at least 1 (1 with fewer than ``MIN_TIMEOUT_JOBS`` of them). In the Kabre export
  ``k = 2``: two hardware threads per requested core.
* ``JobIDRaw``/``JobID``: the job id, exact: int64 when every id is an integer (an id above
  the int64 range is a bad row); when some are array tasks ``123_4`` or heterogeneous
  components ``123+1`` (``JobID``), every id is kept as its text, so that each task keeps an
  id of its own; an empty id becomes the row number.
* ``Partition`` -> queue (every partition is kept by default); ``ExitCode`` ``N:S`` -> N.
* ``QOS`` (optional) -> ``JobTable.qos_code``: the job's QOS, for Slurm's QOS priority and
  limits (``system.associations``/``system.qos``).
* Requests per node (optional columns): cores = ``ReqCPUS`` (else ``AllocCPUS``/``NCPUS``)
  / nodes, rounded up; memory from ``ReqMem`` (else ``AllocMem``): a number with an optional
  unit ``K``/``M``/``G``/``T`` (MiB when none) and suffix ``c`` (per CPU: times the cores per
  node), ``n`` (per node) or none: the whole job's, as Slurm 21.08+ prints it (Slurm 22.05's
  ``sacct`` shows ``--nodes=2 --mem=300`` as ``600M``, tests/test_real_slurm.py), divided by
  the nodes; else the ``mem=`` of ``ReqTRES``/``AllocTRES`` (the job's) / nodes; GPUs = ``gres/gpu=N`` of ``ReqTRES`` (else
  ``AllocTRES``; typed ``gres/gpu:v100=N`` entries are summed when there is no untyped one)
  / nodes, rounded up; 0 when the TRES column lists no GPU.

Decisions, each counted in ``TraceMeta``:

* job steps (``123.batch``, ``123.extern``, ``123.0``) are not jobs: ``excluded['job_step']``;
* jobs that never started: Start is ``Unknown``/``None``/empty, or (without Start/End
  columns) the State is PENDING, or CANCELLED with zero elapsed or CPU time (cancelled while
  waiting): ``excluded['never_started']``; they never occupied the machine;
* jobs still active at export: in replay a started job with no End; without Start/End columns
  a State in ``ACTIVE_STATES`` (RUNNING, SUSPENDED, REQUEUED, ...), whose elapsed time is only
  the time so far: ``excluded['not_finished']``;
* a run time of 0 (started and ended in the same second): ``excluded['zero_run_time']``;
* ``UNLIMITED``, ``Partition_Limit`` and ``INVALID`` limits: the job gets the largest finite
  limit that any job of the same partition requested in this file, the best available estimate
  of the partition's maximum (``notes['time_limit_from_partition_max']``); in a partition with
  no finite limit at all the job is excluded (``excluded['unknown_time_limit']``). The kept ones
  are marked ``time_limit_unstated``: on a machine read from a slurm.conf they get their
  partition's ``DefaultTime``, else ``MaxTime``, as Slurm gives them (``sim.machine``).

Job states: https://slurm.schedmd.com/sacct.html#SECTION_JOB-STATE-CODES.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import TraceError
from ..jobs import JobTable
from . import DEFAULT_TIMEZONE, ReadOptions, convert
from .frame import factorize_names, read_frame
from .records import scan_delimited
from .source import located, read_source
from .table import ParsedTrace, add_ragged_problem, build_table, per_node
from .timestamps import resolve_zone

NAMES = {  # canonical -> accepted sacct field names (lower case), first present wins
    "job_id": ("jobidraw", "jobid"),
    "submit": ("submit",),
    "begin": ("start",),
    "end": ("end",),
    "num_nodes": ("reqnodes", "nnodes", "allocnodes"),
    "time_limit": ("timelimitraw", "timelimit"),
    "elapsed_raw": ("elapsedraw",),
    "elapsed": ("elapsed",),
    "queue": ("partition",),
    "state": ("state",),
    "exit_status": ("exitcode",),
    "cpu_time_raw": ("cputimeraw",),
    "alloc_cpus": ("alloccpus",),
    "req_cpus": ("reqcpus",),
    "user": ("user",),
    "group": ("account", "group"),  # fair-share is per account; the Unix group when no Account
    "qos": ("qos",),
    "cpus": ("reqcpus", "alloccpus", "ncpus"),
    "memory": ("reqmem", "allocmem"),
    "tres": ("reqtres", "alloctres"),
}
MEMORY_UNITS_MIB = {"": 1.0, "k": 1.0 / 1024, "m": 1.0, "g": 1024.0, "t": 1024.0**2}
_MEMORY = r"^\s*(?P<value>\d+(?:\.\d+)?)(?P<unit>[KMGTkmgt]?)(?P<per>[cn]?)\s*$"
# States of a job that has not ended: its elapsed time is the time so far, not a run time.
ACTIVE_STATES = ("RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "RESIZING", "REQUEUED",
                 "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD", "SIGNALING", "STAGE_OUT",
                 "STOPPED")
MIN_TIMEOUT_JOBS = 5  # TIMEOUT jobs needed to estimate the CPUs allocated per requested CPU
NOT_YET = ("unknown", "none", "")
NO_LIMIT = ("unlimited", "partition_limit", "invalid")
_DURATION = (
    r"^\s*(?:(?P<days>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?"
    r"|(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+)(?:\.\d+)?"
    r"|(?P<mins>\d+))\s*$"
)


def read(path: str, options: ReadOptions) -> JobTable:
    zone = resolve_zone(options.timezone or DEFAULT_TIMEZONE)
    source = read_source(path, options.on_bad_row)
    with located(path):
        records = scan_delimited(source.data, "|", None)
        header = [name.strip().lower() for name in records.fields(0)]
        columns = _columns(header, int(records.lines[0]))
        rows = records.tail(1)
        if len(rows) == 0:
            raise TraceError("the file has a header but no job rows", line=int(records.lines[0]))
        frame = read_frame(
            source.data,
            rows,
            header=0,
            sep="|",
            quoting=3,  # csv.QUOTE_NONE: sacct -P does not quote
            names=[f"f{i}" for i in range(len(header))],
            usecols=[f"f{i}" for i in sorted(set(columns.values()))],
            dtype=str,
        )
        column_of = {canon: frame[f"f{index}"] for canon, index in columns.items()}
        parsed = ParsedTrace(
            source=source,
            rows=rows,
            trace_format="slurm",
            timezone=zone.key,
            timestamp_format=options.timestamp_format,
            default_queues=None,
            job_id=np.arange(1, len(rows) + 1, dtype=np.int64),
            queue_codes=np.zeros(len(rows), dtype=np.int64),
            queue_names=[""],
            labels={canon: records.fields(0)[index].strip() for canon, index in columns.items()},
            fields=dict(columns),
            required={"submit", "num_nodes", "time_limit"},
        )
        add_ragged_problem(parsed, len(header))
        _fill(parsed, column_of, options, zone)
        return build_table(parsed, options)


def _columns(header: list[str], line: int) -> dict[str, int]:
    columns: dict[str, int] = {}
    for canon, names in NAMES.items():
        for name in names:
            positions = [i for i, field in enumerate(header) if field == name]
            if len(positions) > 1:
                raise TraceError(
                    "appears more than once: which one is meant is ambiguous",
                    line=line,
                    column=name,
                )
            if positions:
                columns[canon] = positions[0]
                break
    replay = "begin" in columns and "end" in columns
    mode = "replay" if replay else "simulation"
    for canon, label in (
        ("submit", "Submit"),
        ("num_nodes", "ReqNodes"),
        ("time_limit", "Timelimit"),
    ):
        if canon not in columns:
            accepted = ", ".join(NAMES[canon])
            raise TraceError(
                f"missing required column '{label}' for {mode} mode (slurm format; accepted "
                f"names, any case: {accepted})",
                line=line,
            )
    if not replay:
        columns.pop("begin", None)
        columns.pop("end", None)
    return columns


def _text(column: pd.Series) -> pd.Series:
    return column.astype("str").str.strip().where(column.notna(), "")


def _fill(parsed: ParsedTrace, column_of, options: ReadOptions, zone) -> None:
    n = len(parsed)
    if "job_id" in column_of:
        ids = _text(column_of["job_id"])
        step = ids.str.contains(".", regex=False)
        parsed.exclude("job_step", step.to_numpy(dtype=bool))
        values, missing = convert.job_ids(parsed, ids.where(~step, ""), "job_id")
        parsed.job_id = convert.ids_or_rows(values, missing, parsed.job_id)

    state = _text(column_of["state"]).str.upper() if "state" in column_of else None
    replay = "begin" in column_of
    time_columns = {"submit": column_of["submit"]}
    if replay:
        start_text = _text(column_of["begin"])
        end_text = _text(column_of["end"])
        not_started = start_text.str.lower().isin(NOT_YET).to_numpy(dtype=bool)
        not_ended = end_text.str.lower().isin(NOT_YET).to_numpy(dtype=bool)
        parsed.exclude("never_started", not_started)
        parsed.exclude("not_finished", not_ended)
        time_columns["begin"] = column_of["begin"].where(~not_started, None)
        time_columns["end"] = column_of["end"].where(~not_ended, None)
        parsed.required |= {"begin", "end"}
    convert.times(parsed, time_columns, options.timestamp_format, zone)

    cpu = (
        convert.numbers(parsed, column_of["cpu_time_raw"], "cpu_time_raw")
        if "cpu_time_raw" in column_of
        else np.full(n, np.nan)
    )
    elapsed = _elapsed(parsed, column_of)
    if not replay and state is not None:
        word = _state_words(state)
        pending = (word == "PENDING").to_numpy(dtype=bool)
        cancelled = (word == "CANCELLED").to_numpy(dtype=bool)
        parsed.exclude("never_started", pending | (cancelled & ((elapsed == 0) | (cpu == 0))))
        parsed.exclude("not_finished", word.isin(ACTIVE_STATES).to_numpy(dtype=bool))
    if not replay and "cpu_time_raw" in column_of:
        elapsed = _run_time_from_cpu_time(parsed, column_of, elapsed, cpu, state)

    if replay:
        with np.errstate(invalid="ignore"):
            parsed.actual_run_time = parsed.end - parsed.begin
        parsed.exclude("zero_run_time", parsed.actual_run_time == 0)
        parsed.mode = "replay"
    else:
        parsed.actual_run_time = elapsed
        parsed.exclude("zero_run_time", elapsed == 0)
        parsed.mode = "simulation"

    nodes = convert.numbers(parsed, column_of["num_nodes"], "num_nodes")
    parsed.num_nodes = nodes
    if "queue" in column_of:
        parsed.queue_codes, parsed.queue_names = factorize_names(column_of["queue"])
    parsed.time_limit = _time_limit(parsed, column_of)
    _requests(parsed, column_of, nodes)
    parsed.users = _text(column_of["user"]) if "user" in column_of else None
    parsed.groups = _text(column_of["group"]) if "group" in column_of else None
    parsed.qos = _text(column_of["qos"]) if "qos" in column_of else None
    if "exit_status" in column_of:
        code = _text(column_of["exit_status"]).str.extract(r"^(-?\d{1,9})(?::\d+)?$", expand=False)
        bad = code.isna() & (_text(column_of["exit_status"]) != "")
        parsed.problem(
            bad.to_numpy(dtype=bool),
            "exit_status",
            "not_a_number",
            "not an exit code (expected N:S)",
        )
        parsed.exit_status = pd.to_numeric(code, errors="coerce").fillna(-1).to_numpy(np.int64)


def _requests(parsed: ParsedTrace, column_of, nodes: np.ndarray) -> None:
    """Cores, GPUs and memory per node (see the module docstring)."""
    if "cpus" in column_of:
        cpus = convert.numbers(parsed, column_of["cpus"], "cores_per_node")
        parsed.cores_per_node = per_node(np.where(cpus > 0, cpus, np.nan), nodes)
    tres = _text(column_of["tres"]) if "tres" in column_of else None
    if tres is not None:
        gpus = _tres_gpus(tres)
        parsed.gpus_per_node = np.where(tres.to_numpy() == "", np.nan, per_node(gpus, nodes))
    memory = np.full(len(parsed), np.nan)
    if "memory" in column_of:
        text = _text(column_of["memory"])
        parts = text.str.extract(_MEMORY)
        value = pd.to_numeric(parts["value"], errors="coerce").to_numpy(np.float64)
        scale = parts["unit"].fillna("").str.lower().map(MEMORY_UNITS_MIB).to_numpy(np.float64)
        per_cpu = (parts["per"] == "c").to_numpy(dtype=bool)
        bad = np.isnan(value) & (text != "").to_numpy(dtype=bool)
        parsed.problem(bad, "memory_per_node", "not_a_memory",
                       "not a memory size (a number, optional K/M/G/T, optional c or n)")
        cores = parsed.cores_per_node
        if cores is None:
            cores = np.full(len(parsed), np.nan)
        whole_job = (parts["per"].fillna("") == "").to_numpy(dtype=bool)  # 21.08+: no suffix
        with np.errstate(invalid="ignore"):
            per_job = np.where(nodes >= 1, nodes, 1.0)
            memory = value * scale * np.where(per_cpu, cores, 1.0) / np.where(whole_job, per_job, 1.0)
        parsed.fields["memory_per_node"] = parsed.fields.pop("memory")
        parsed.labels["memory_per_node"] = parsed.labels.pop("memory")
    if tres is not None:  # mem= of the TRES where the memory column says nothing
        tres_mem = tres.str.extract(r"(?:^|,)mem=(?P<value>\d+(?:\.\d+)?)(?P<unit>[KMGTkmgt]?)(?:,|$)")
        value = pd.to_numeric(tres_mem["value"], errors="coerce").to_numpy(np.float64)
        scale = tres_mem["unit"].fillna("").str.lower().map(MEMORY_UNITS_MIB).to_numpy(np.float64)
        with np.errstate(invalid="ignore"):  # the TRES mem= is the whole job's
            memory = np.where(np.isnan(memory), value * scale / np.where(nodes >= 1, nodes, np.nan), memory)
    if "memory" in column_of or tres is not None:
        parsed.memory_per_node = memory
    if "cpus" in column_of:
        parsed.fields["cores_per_node"] = parsed.fields.pop("cpus")
        parsed.labels["cores_per_node"] = parsed.labels.pop("cpus")


def _tres_gpus(tres: pd.Series) -> np.ndarray:
    """GPUs of a TRES list: ``gres/gpu=N``, else the sum of ``gres/gpu:<type>=N``, else 0."""
    plain = pd.to_numeric(tres.str.extract(r"(?:^|,)gres/gpu=(\d+)", expand=False), errors="coerce")
    typed = tres.str.extractall(r"(?:^|,)gres/gpu:[^=,]+=(\d+)")
    total = plain.to_numpy(np.float64)
    if len(typed):
        sums = pd.to_numeric(typed[0]).groupby(level=0).sum()
        typed_total = np.zeros(len(tres))
        typed_total[sums.index.to_numpy()] = sums.to_numpy(np.float64)
        total = np.where(np.isnan(total), typed_total, total)
    return np.where(np.isnan(total), 0.0, total)


def _elapsed(parsed: ParsedTrace, column_of) -> np.ndarray:
    if "elapsed_raw" in column_of:
        return convert.numbers(parsed, column_of["elapsed_raw"], "elapsed_raw")
    if "elapsed" in column_of:
        seconds, bad, _ = parse_duration(column_of["elapsed"], minutes_alone=False)
        parsed.problem(bad, "elapsed", "not_a_duration", "not a duration ([D-]HH:MM:SS)")
        return seconds
    return np.full(len(parsed), np.nan)


def _state_words(state):
    """Each job's State as its first word ("CANCELLED by 123" -> "CANCELLED"), "" where it is
    missing or blank, as strings: splitting and filling an all-missing column made a float
    column that pandas 3 warns (and pandas 4 will refuse) to fill with ""."""
    return state.astype("string").str.extract(r"^\s*(\S*)", expand=False).fillna("")


def _run_time_from_cpu_time(parsed: ParsedTrace, column_of, elapsed, cpu, state) -> np.ndarray:
    """Where no elapsed time is known: CPUTimeRAW / AllocCPUS, else / (ReqCPUS x k)."""
    missing = np.isnan(elapsed) & np.isfinite(cpu)
    if not missing.any():
        return elapsed
    if "alloc_cpus" in column_of:
        cpus = convert.numbers(parsed, column_of["alloc_cpus"], "alloc_cpus")
        note = "run_time_from_cpu_time_alloc_cpus"
    elif "req_cpus" in column_of:
        requested = convert.numbers(parsed, column_of["req_cpus"], "req_cpus")
        k = _cpus_per_requested_cpu(parsed, column_of, cpu, requested, state)
        cpus = requested * k
        note = f"run_time_from_cpu_time_req_cpus_x{k}"
    else:
        return elapsed
    derived = missing & (cpus > 0)
    parsed.note(note, derived)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(derived, cpu / cpus, elapsed)


def _cpus_per_requested_cpu(parsed, column_of, cpu, requested, state) -> int:
    """CPUs Slurm allocated per requested CPU, from the TIMEOUT jobs (they ran to their limit)."""
    if state is None:
        return 1
    column = column_of["time_limit"]
    if parsed.labels["time_limit"].lower() == "timelimitraw":
        limit = pd.to_numeric(column, errors="coerce").to_numpy(np.float64) * 60.0
    else:
        limit = parse_duration(column, minutes_alone=True)[0]
    timeout = (_state_words(state) == "TIMEOUT").to_numpy(dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = cpu / (requested * limit)
    ratio = ratio[timeout & np.isfinite(ratio) & (ratio > 0)]
    if ratio.size < MIN_TIMEOUT_JOBS:
        return 1
    return max(1, int(round(float(np.median(ratio)))))


def _time_limit(parsed: ParsedTrace, column_of) -> np.ndarray:
    """Seconds; UNLIMITED/Partition_Limit/INVALID become the partition's largest finite limit."""
    column = column_of["time_limit"]
    if parsed.labels["time_limit"].lower() == "timelimitraw":
        no_limit = _text(column).str.lower().isin(NO_LIMIT).to_numpy(dtype=bool)
        limit = convert.numbers(parsed, column.where(~no_limit, None), "time_limit") * 60.0
    else:
        limit, bad, no_limit = parse_duration(column, minutes_alone=True)
        parsed.problem(
            bad,
            "time_limit",
            "not_a_duration",
            "not a time limit ([D-]HH:MM:SS, MM:SS, UNLIMITED or Partition_Limit)",
        )
    finite = np.isfinite(limit)
    partition_max = np.full(len(parsed.queue_names), np.nan)
    if finite.any():
        np.fmax.at(partition_max, parsed.queue_codes[finite], limit[finite])
    estimate = partition_max[parsed.queue_codes]
    filled = no_limit & np.isfinite(estimate)
    parsed.note("time_limit_from_partition_max", filled)
    parsed.exclude("unknown_time_limit", no_limit & ~filled)
    parsed.time_limit_unstated = filled  # a slurm.conf's DefaultTime/MaxTime replaces the stand-in
    return np.where(filled, estimate, limit)


def parse_duration(column: pd.Series, minutes_alone: bool):
    """Slurm durations to seconds: (seconds, bad mask, no-limit mask)."""
    text = _text(column)
    lower = text.str.lower()
    no_limit = lower.isin(NO_LIMIT).to_numpy(dtype=bool)
    parts = text.str.extract(_DURATION)
    number = {
        key: pd.to_numeric(parts[key], errors="coerce").fillna(0).to_numpy(np.float64)
        for key in parts.columns
    }
    matched = parts.notna().any(axis=1).to_numpy(dtype=bool)
    seconds = (
        number["days"] * 86400
        + number["dh"] * 3600
        + number["dm"] * 60
        + number["ds"]
        + number["h"] * 3600
        + number["m"] * 60
        + number["s"]
        + number["mins"] * (60 if minutes_alone else 1)
    )
    empty = (text == "").to_numpy(dtype=bool)
    seconds = np.where(matched, seconds, np.nan)
    bad = ~matched & ~empty & ~no_limit
    return seconds, bad, no_limit
