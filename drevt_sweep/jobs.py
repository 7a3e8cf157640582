"""The one columnar job table that every trace reader produces and everything else consumes.

Columns are numpy arrays, one row per job, stably sorted by submit time (file order breaks
ties). Times are float64 seconds since the Unix epoch (UTC); unknown values are NaN (floats)
or -1 (integers). Job ids are exact (never through float64): int64, or text where a trace's ids
are not all integers (Slurm array tasks ``12345_7``). Who submitted a job is a code into a tuple of names, as the queue is:
``user_code`` into ``user_names`` and ``group_code`` (the group or account) into
``group_names``; -1 = unknown (a trace without those columns leaves every job unknown).
The table is immutable by convention: transforms return new tables.

Resource requests (``drevt_sweep.sim.machine`` places them on a machine's partitions):
``num_nodes`` nodes, each with ``cores_per_node`` cores, ``gpus_per_node`` GPUs and
``memory_per_node`` MiB (-1 / NaN where the trace does not say), in the partition named
``partition_names[partition_code]`` (by default the job's queue: Slurm's Partition is both).

``time_limit_unstated`` marks the jobs whose trace states no requested limit (SWF's -1, sacct's
``Partition_Limit``/``UNLIMITED``): their ``time_limit`` is the reader's stand-in, which a
machine's Slurm partition replaces with its ``DefaultTime``, else ``MaxTime``
(``sim.machine.default_time_limits``; a list ``a,b`` of partitions of one pool becomes the
one Slurm would start the job in: ``several_partitions``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Mode = Literal["replay", "simulation"]


@dataclass(frozen=True)
class Reject:
    """One input row that was skipped (``on_bad_row=skip``) or excluded, and why."""

    line: int
    column: str | None
    value: str | None
    reason: str


@dataclass(frozen=True)
class TraceMeta:
    """Where a job table came from and what happened to the rows on the way."""

    path: str
    trace_format: str
    mode: Mode
    checksum: str  # sha256 of the file's bytes as stored (compressed if .gz)
    timezone: str
    timestamp_format: str  # the encoding actually found: "epoch", "iso" or "relative"
    machine_nodes: int | None  # the machine size the file states (SWF MaxNodes/MaxProcs), if any
    has_actual_run_time: bool
    rows_read: int
    rows_kept: int
    excluded: dict[str, int] = field(default_factory=dict)  # reason -> number of rows
    rejects: tuple[Reject, ...] = ()
    notes: dict[str, int] = field(default_factory=dict)  # e.g. DST gap/fold resolutions
    # The zone the file itself states (SWF TimeZoneString), when it states one; ``timezone`` is
    # the zone used, which is the user's when they gave one (then notes["timezone_overrides_header"]).
    header_timezone: str | None = None

    @property
    def can_replay(self) -> bool:
        return self.mode == "replay"


@dataclass(frozen=True, eq=False)
class JobTable:
    """Validated jobs in columnar form (see the module docstring for units)."""

    # The trace's own id where it has one, else the row number, exact: int64, or (a trace whose
    # ids are not all integers: Slurm array tasks "12345_7") a numpy str array of the ids' text.
    job_id: np.ndarray
    source_line: np.ndarray  # int64, 1-based line in the file where the job was read
    submit: np.ndarray  # float64
    begin: np.ndarray  # float64, historical start (NaN when unknown)
    end: np.ndarray  # float64, historical end (NaN when unknown)
    num_nodes: np.ndarray  # int64, >= 1
    time_limit: np.ndarray  # float64 seconds, > 0
    actual_run_time: np.ndarray  # float64 seconds, NaN when unknown
    queue_code: np.ndarray  # int32 index into queue_names
    queue_names: tuple[str, ...]
    exit_status: np.ndarray  # int64, -1 when unknown
    meta: TraceMeta
    user_code: np.ndarray | None = None  # int32 index into user_names, -1 unknown (None: all unknown)
    user_names: tuple[str, ...] = ()
    group_code: np.ndarray | None = None  # int32 index into group_names (group or account), -1 unknown
    group_names: tuple[str, ...] = ()
    # Per-node requests and partition (optional when built by hand: filled in as unknown /
    # the queue by __post_init__).
    cores_per_node: np.ndarray | None = None  # int64, -1 when unknown
    gpus_per_node: np.ndarray | None = None  # int64, -1 when unknown
    memory_per_node: np.ndarray | None = None  # float64 MiB, NaN when unknown
    partition_code: np.ndarray | None = None  # int32 index into partition_names
    partition_names: tuple[str, ...] | None = None
    time_limit_unstated: np.ndarray | None = None  # bool: no limit requested (None: all stated)
    qos_code: np.ndarray | None = None  # int32 index into qos_names (sacct's QOS), -1 unknown
    qos_names: tuple[str, ...] = ()

    COLUMNS = (
        "job_id",
        "source_line",
        "submit",
        "begin",
        "end",
        "num_nodes",
        "time_limit",
        "actual_run_time",
        "queue_code",
        "exit_status",
        "user_code",
        "group_code",
        "cores_per_node",
        "gpus_per_node",
        "memory_per_node",
        "partition_code",
        "time_limit_unstated",
        "qos_code",
    )

    def __post_init__(self) -> None:
        n = self.submit.shape[0]
        if np.asarray(self.job_id).dtype.kind not in "iuU":  # float64 would merge 2**53 + 1 into 2**53
            raise TypeError(f"job_id must be int64 or text, not {np.asarray(self.job_id).dtype}")
        fill = object.__setattr__
        for name in ("user_code", "group_code"):
            if getattr(self, name) is None:
                fill(self, name, np.full(n, -1, dtype=np.int32))
        if self.cores_per_node is None:
            fill(self, "cores_per_node", np.full(n, -1, dtype=np.int64))
        if self.gpus_per_node is None:
            fill(self, "gpus_per_node", np.full(n, -1, dtype=np.int64))
        if self.memory_per_node is None:
            fill(self, "memory_per_node", np.full(n, np.nan))
        if self.qos_code is None:
            fill(self, "qos_code", np.full(n, -1, dtype=np.int32))
        if self.time_limit_unstated is None:
            fill(self, "time_limit_unstated", np.zeros(n, dtype=bool))
        if self.partition_code is None:
            fill(self, "partition_code", self.queue_code)
            fill(self, "partition_names", self.queue_names)
        elif self.partition_names is None:
            raise ValueError("partition_code needs partition_names")

    def __len__(self) -> int:
        return int(self.submit.shape[0])

    @property
    def queue(self) -> np.ndarray:
        """Queue names per job (an object array; use ``queue_code`` in hot paths)."""
        return np.asarray(self.queue_names, dtype=object)[self.queue_code]

    @property
    def partition(self) -> np.ndarray:
        """Partition names per job (an object array)."""
        return np.asarray(self.partition_names, dtype=object)[self.partition_code]

    @property
    def user(self) -> np.ndarray:
        """User names per job (an object array, None where unknown)."""
        return _names_of(self.user_code, self.user_names)

    @property
    def group(self) -> np.ndarray:
        """Group/account names per job (an object array, None where unknown)."""
        return _names_of(self.group_code, self.group_names)

    def columns(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in self.COLUMNS}

    def take(self, index: np.ndarray) -> JobTable:
        """A new table with the rows selected by an integer index or boolean mask."""
        return dataclasses.replace(self, **{k: v[index] for k, v in self.columns().items()})

    def replace(self, **changes) -> JobTable:
        return dataclasses.replace(self, **changes)

    def to_frame(self):
        """A pandas DataFrame view for reports and exploration (never used in hot paths)."""
        import pandas as pd

        codes = ("queue_code", "user_code", "group_code", "partition_code", "time_limit_unstated", "qos_code")
        frame = pd.DataFrame({k: v for k, v in self.columns().items() if k not in codes})
        frame.insert(frame.columns.get_loc("exit_status"), "queue", self.queue)
        frame["user"] = self.user
        frame["group"] = self.group
        frame["partition"] = self.partition
        return frame


def _names_of(codes: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    lookup = np.asarray((*names, None), dtype=object)  # code -1 picks the trailing None
    return lookup[codes]


def distinct_codes(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` and a row holding each distinct value (any one),
    for integer codes (users, accounts, their pairs). Without a sort when the values span a range
    of the order of their count, as a table's codes do: ~1 ms less per run of a KTH-SP2-sized
    trace, which a sweep of short compiled runs pays at every run."""
    n = codes.shape[0]
    if n == 0:
        return codes[:0], np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo = int(codes.min())
    span = int(codes.max()) - lo + 1
    if span > 4 * n + 4096:
        values, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        return values, inverse.reshape(-1), first
    shifted = codes - lo
    holder = np.full(span, -1, dtype=np.int64)
    holder[shifted] = np.arange(n)  # (some row with each value)
    present = holder >= 0
    index = np.cumsum(present) - 1  # each value's place among the distinct ones
    return np.flatnonzero(present) + lo, index[shifted], holder[present]
