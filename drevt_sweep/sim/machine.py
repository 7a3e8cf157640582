"""What the machine is: partitions (node pools), each with its own nodes, queue and scheduler.

A :class:`Machine` is one or more :class:`Partition`\\ s. A partition has ``nodes`` identical
nodes with ``cores``, ``gpus`` and ``memory`` (MiB) each (``None``: the resource is not
modelled, requests for it are ignored), a sharing rule and the names of the jobs' partitions or
queues that it serves:

* ``exclusive``: a job takes whole nodes (the model of every machine before issue 14); only
  whether a node *could* hold its per-node request matters;
* ``shared``: jobs are packed onto nodes by cores, GPUs and memory (``sim.shared``).

Partitions never exchange nodes: each is scheduled on its own, with its own waiting queue,
priority order and backfilling, and the schedules are merged (``sim.partitioned``).

Which partition serves a job (:func:`place_jobs`): the partition whose ``queues`` list the
job's partition name (``JobTable.partition``: Slurm's Partition, SWF field 16, the simple
format's ``partition`` column; else the queue), else the one listing its queue name, else the
partition listing ``"*"`` (every other name). A job no partition serves is rejected
(``no_partition``), and so is a job that names a partition of its own (a partition column
distinct from its queue) that no partition lists (``unknown_partition``: Slurm refuses it at
submission; ``"*"`` does not take it), one submitted to several partitions of different pools
(a comma list of listed names, ``multi_partition``: not modelled; lists within one pool are
resolved first, ``several_partitions``), as is one that can never fit its partition: more nodes than it has
(``nodes``), or more cores, GPUs or memory per node than a node has (``cores``, ``gpus``,
``memory``). Rejected jobs are counted by reason, never dropped or moved silently.

Per-node requests a trace does not state: cores = a whole node (exclusive: irrelevant;
shared: the job is not packed with others), GPUs = 0, memory = 0.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from ..jobs import JobTable

SHARING = ("exclusive", "shared")
EVERY_QUEUE = "*"
REJECT_REASONS = ("no_partition", "unknown_partition", "multi_partition", "nodes", "cores", "gpus", "memory",
                  "partition_max_nodes", "partition_time_limit", "partition_default_time",
                  # association/QOS limits a job can never meet (sim.limits.STATIC_REASONS)
                  "no_association", "assoc_max_wall", "qos_max_wall", "assoc_job_limit", "qos_job_limit")
LIMIT_KEYS = ("max_time", "max_nodes", "priority_tier", "default_time")  # Partition.limits per served name
UNSTATED = ("", "-1")  # a partition name that says nothing (SWF field 16 unknown, or empty)
RESOURCES = ("nodes", "cores", "gpus", "memory")


@dataclass(frozen=True)
class Partition:
    """A pool of identical nodes with its own queue (see the module docstring)."""

    name: str
    nodes: int
    cores: int | None = None  # per node; None: not modelled
    gpus: int | None = None
    memory: float | None = None  # MiB per node
    sharing: str = "exclusive"
    queues: tuple[str, ...] = ()  # job partition/queue names served here; () = (name,)
    # Slurm's per-partition limits of the names served here: {name: {max_time (s), max_nodes,
    # priority_tier, default_time (s)}} (a pool may serve several Slurm partitions sharing its nodes)
    limits: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        where = f"partition {self.name!r}"
        if not self.name or not isinstance(self.name, str):
            raise ConfigError(f"a partition needs a name, got {self.name!r}")
        object.__setattr__(self, "nodes", _count(self.nodes, f"{where}: nodes", least=1))
        for resource in ("cores", "gpus"):
            value = getattr(self, resource)
            if value is not None:
                object.__setattr__(self, resource, _count(value, f"{where}: {resource}",
                                                          least=1 if resource == "cores" else 0))
        if self.memory is not None:
            try:
                memory = float(self.memory)
            except (TypeError, ValueError):
                raise ConfigError(f"{where}: memory must be a number of MiB, got {self.memory!r}") from None
            if not (math.isfinite(memory) and memory > 0):
                raise ConfigError(f"{where}: memory must be > 0 MiB, got {self.memory!r}")
            object.__setattr__(self, "memory", memory)
        if self.sharing not in SHARING:
            raise ConfigError(f"{where}: sharing must be one of {', '.join(SHARING)}, got {self.sharing!r}")
        if self.sharing == "shared" and self.cores is None:
            raise ConfigError(f"{where}: a shared partition needs cores per node")
        queues = (self.queues,) if isinstance(self.queues, str) else tuple(str(q) for q in self.queues)
        object.__setattr__(self, "queues", queues or (self.name,))
        limits = {}
        for queue, given in dict(self.limits or {}).items():
            unknown = set(given) - set(LIMIT_KEYS)
            if unknown or queue not in self.queues:
                raise ConfigError(f"{where}: limits of {queue!r}: unknown key(s) {', '.join(sorted(unknown))} "
                                  f"or a name it does not serve (keys: {', '.join(LIMIT_KEYS)})")
            limits[queue] = {k: v for k, v in given.items() if v is not None}
        object.__setattr__(self, "limits", limits)

    def tier_of(self, name: str) -> int:
        """The ``PriorityTier`` of a served name (Slurm's default 1)."""
        return int(self.limits.get(name, {}).get("priority_tier", 1))

    @property
    def shared(self) -> bool:
        return self.sharing == "shared"

    def capacity(self, resource: str) -> float | None:
        """Total of a resource over the partition's nodes (None: not modelled)."""
        per_node = 1 if resource == "nodes" else getattr(self, resource)
        return None if per_node is None else self.nodes * per_node


@dataclass(frozen=True)
class Machine:
    """One or more partitions; their names and queue names are unique."""

    name: str
    partitions: tuple[Partition, ...]
    notes: tuple[str, ...] = field(default=(), compare=False)  # sources and assumptions

    def __post_init__(self) -> None:
        parts = tuple(self.partitions)
        if not parts:
            raise ConfigError(f"machine {self.name!r} has no partitions")
        object.__setattr__(self, "partitions", parts)
        names = [p.name for p in parts]
        if len(set(names)) != len(names):
            raise ConfigError(f"machine {self.name!r}: partition names repeat: {', '.join(names)}")
        served: dict[str, str] = {}
        for p in parts:
            for queue in p.queues:
                if queue in served:
                    raise ConfigError(
                        f"machine {self.name!r}: queue {queue!r} is mapped to both partition "
                        f"{served[queue]!r} and {p.name!r}"
                    )
                served[queue] = p.name

    @classmethod
    def single_pool(cls, total_nodes: int, name: str = "pool") -> Machine:
        """Today's machine: one exclusive pool of whole nodes serving every queue."""
        return cls(name, (Partition("all", total_nodes, queues=(EVERY_QUEUE,)),))

    @property
    def total_nodes(self) -> int:
        return sum(p.nodes for p in self.partitions)

    @property
    def is_single_pool(self) -> bool:
        """One exclusive partition serving every queue, no per-node resources: the engine then
        runs exactly as before issue 14 (bit-identical schedules)."""
        if len(self.partitions) != 1:
            return False
        p = self.partitions[0]
        return (not p.shared and p.queues == (EVERY_QUEUE,)
                and p.cores is None and p.gpus is None and p.memory is None)

    @property
    def partition_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.partitions)


def _count(value, what: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ConfigError(f"{what} must be a whole number, got {value!r}")
    if value < least:
        raise ConfigError(f"{what} must be at least {least}, got {value}")
    return int(value)


# ------------------------------------------------------------------ building machines
def machine_from_mapping(data, name: str | None = None) -> Machine:
    """A machine from plain data (a Hydra ``system`` section or a YAML file)::

        name: lassen
        partitions:
          - {name: pbatch, nodes: 756, cores: 44, gpus: 4, memory: 262144,
             sharing: exclusive, queues: [pbatch, standby]}

    or ``partitions`` as a mapping of name -> fields.
    """
    if not hasattr(data, "get"):
        raise ConfigError(f"a machine description must be a mapping, got {type(data).__name__}")
    parts = data.get("partitions")
    if not parts:
        raise ConfigError("a machine description needs 'partitions' (a list, or a mapping of name -> fields)")
    items = []
    if hasattr(parts, "items"):
        for part_name, fields in parts.items():
            items.append({"name": str(part_name), **dict(fields or {})})
    else:
        for fields in parts:
            if not hasattr(fields, "items"):
                raise ConfigError(f"each partition must be a mapping of fields, got {fields!r}")
            items.append(dict(fields))
    allowed = {"name", "nodes", "cores", "gpus", "memory", "sharing", "queues", "limits"}
    partitions = []
    for fields in items:
        unknown = set(fields) - allowed
        if unknown:
            raise ConfigError(
                f"partition {fields.get('name')!r}: unknown field(s) {', '.join(sorted(unknown))} "
                f"(allowed: {', '.join(sorted(allowed))})"
            )
        if "nodes" not in fields:
            raise ConfigError(f"partition {fields.get('name')!r} needs 'nodes'")
        queues = fields.get("queues") or ()
        partitions.append(Partition(
            name=str(fields.get("name", "")),
            nodes=fields["nodes"],
            cores=fields.get("cores"),
            gpus=fields.get("gpus"),
            memory=fields.get("memory"),
            sharing=str(fields.get("sharing", "exclusive")),
            queues=(queues,) if isinstance(queues, str) else tuple(str(q) for q in queues),
            limits=dict(fields.get("limits") or {}),
        ))
    return Machine(str(name or data.get("name") or "machine"), tuple(partitions))


_PARTITION_SPEC = re.compile(r"^\s*([^:,\s]+)\s*:\s*(\d+)\s*$")


def parse_partitions(text: str, cores: int | None = None, gpus: int | None = None,
                     memory: float | None = None, sharing: str = "exclusive") -> Machine:
    """``'pbatch:756,pdebug:36'`` (name:nodes, each partition serving the queue of its name),
    every node with the given resources."""
    partitions = []
    for item in text.split(","):
        match = _PARTITION_SPEC.match(item)
        if not match:
            raise ConfigError(f"--partitions expects 'name:nodes,name:nodes', got {item.strip()!r}")
        partitions.append(Partition(match.group(1), int(match.group(2)), cores, gpus, memory, sharing))
    return Machine("partitions", tuple(partitions))


def served_names(jobs: JobTable, machine: Machine) -> np.ndarray:
    """Per job, the name its pool serves it under: its partition name if a pool lists it, else
    its queue name (object array; how ``place_jobs`` chose)."""
    listed = {q for p in machine.partitions for q in p.queues}
    by_partition = np.asarray(jobs.partition_names, dtype=object)[np.asarray(jobs.partition_code)]
    by_queue = np.asarray(jobs.queue_names, dtype=object)[np.asarray(jobs.queue_code)]
    use = np.array([name in listed for name in by_partition.tolist()], dtype=bool) if len(jobs) else np.zeros(0, bool)
    return np.where(use, by_partition, by_queue)


def _partition_limits(jobs: JobTable, parts, slot: np.ndarray) -> dict[str, np.ndarray]:
    """Jobs over their Slurm partition's ``MaxNodes`` or ``MaxTime``: Slurm keeps them pending
    for ever (``PartitionNodeLimit``/``PartitionTimeLimit``, ``EnforcePartLimits=NO``) or refuses
    them (otherwise); either way they never run."""
    names = served_names(jobs, Machine("m", tuple(parts)))
    max_nodes = np.full(len(jobs), np.iinfo(np.int64).max)
    max_time = np.full(len(jobs), np.inf)
    for k, part in enumerate(parts):
        for name, lim in part.limits.items():
            rows = (slot == k) & (names == name)
            if "max_nodes" in lim:
                max_nodes[rows] = int(lim["max_nodes"])
            if "max_time" in lim:
                max_time[rows] = float(lim["max_time"])
    default_zero = np.zeros(len(jobs), dtype=bool)
    unstated = np.asarray(jobs.time_limit_unstated, dtype=bool)
    if unstated.any():  # DefaultTime=0: Slurm refuses a job that asks for no limit
        zero = {name for part in parts for name, lim in part.limits.items() if lim.get("default_time") == 0}
        if zero:
            default_zero = unstated & np.array([name in zero for name in names.tolist()], dtype=bool)
    return {"partition_max_nodes": np.asarray(jobs.num_nodes) > max_nodes,
            "partition_time_limit": ~default_zero & (np.asarray(jobs.time_limit, dtype=np.float64) > max_time),
            "partition_default_time": default_zero}


def several_partitions(jobs: JobTable, machine: Machine, factors: dict | None = None) -> JobTable:
    """Jobs submitted to several partitions (``--partition=a,b``: a comma list as the job's
    partition name, and as its queue when that names the same list) whose partitions are all
    served by **one** pool run in the one Slurm would start them in: Slurm keeps a queue record
    per listed partition and starts the job through the first record that can start it, in the
    order of ``PriorityTier`` then priority (``_schedule``, ``_attempt_backfill``); on one pool
    of identical nodes every record fits at the same moment, so it is the partition of the
    highest ``PriorityTier``, then ``PriorityJobFactor`` (``factors``; 1 each), then listed
    first, among those whose ``MaxNodes``/``MaxTime`` accept the job (the first one when none
    does: its limit then rejects the job). The job is then that partition's (its limits,
    ``DefaultTime``, tier and factor), as ``sacct`` shows a job in the partition it ran in.
    Lists over several pools are left as they are (``place_jobs`` rejects them:
    ``multi_partition``). Every listed name is added to the table's names, so that
    per-partition settings may name them. The same table when no job lists several."""
    names = jobs.partition_names
    multi = [c for c, name in enumerate(names) if "," in name]
    if not multi:
        return jobs
    pool_of = {q: k for k, p in enumerate(machine.partitions) for q in p.queues if q != EVERY_QUEUE}
    factors = dict(factors or {})
    part_names, queue_names = list(names), list(jobs.queue_names)
    pcode = np.array(jobs.partition_code, dtype=np.int32, copy=True)
    qcode = np.array(jobs.queue_code, dtype=np.int32, copy=True)

    def code_of(table: list, name: str) -> int:
        if name not in table:
            table.append(name)
        return table.index(name)

    nodes = np.asarray(jobs.num_nodes)
    limit = np.asarray(jobs.time_limit, dtype=np.float64)
    unstated = np.asarray(jobs.time_limit_unstated, dtype=bool)
    for c in multi:
        listed = [p.strip() for p in names[c].split(",") if p.strip()]
        for name in listed:
            code_of(part_names, name)
            code_of(queue_names, name)
        pools = {pool_of.get(name, -1) for name in listed}
        if -1 in pools or len(pools) != 1:
            continue
        pool = machine.partitions[pools.pop()]
        rows = np.flatnonzero(np.asarray(jobs.partition_code) == c)
        ranked = sorted(listed, key=lambda p: (-pool.tier_of(p), -float(factors.get(p, 1.0)), listed.index(p)))
        choice = np.full(rows.size, code_of(part_names, ranked[0]), dtype=np.int32)
        for name in reversed(ranked):  # the best accepting partition is written last
            lim = pool.limits.get(name, {})
            ok = np.ones(rows.size, dtype=bool)
            if "max_nodes" in lim:
                ok &= nodes[rows] <= int(lim["max_nodes"])
            if "max_time" in lim:
                ok &= unstated[rows] | (limit[rows] <= float(lim["max_time"]))
            choice[ok] = code_of(part_names, name)
        pcode[rows] = choice
        same = np.asarray(jobs.queue_names, dtype=object)[qcode[rows]] == names[c]
        chosen = np.asarray(part_names, dtype=object)[choice[same]]
        qcode[rows[same]] = [code_of(queue_names, name) for name in chosen.tolist()]
    return jobs.replace(partition_code=pcode, partition_names=tuple(part_names), queue_code=qcode,
                        queue_names=tuple(queue_names))


def slurm_job_settings(jobs: JobTable, machine: Machine, factors: dict | None = None) -> JobTable:
    """What Slurm decides of a job at submission from the machine: the partition of a job
    submitted to several (``several_partitions``), then the limit of a job that asked none
    (``default_time_limits``). Idempotent."""
    return default_time_limits(several_partitions(jobs, machine, factors), machine)


def default_time_limits(jobs: JobTable, machine: Machine) -> JobTable:
    """The jobs with Slurm's limit for those that requested none (``time_limit_unstated``):
    their partition's ``DefaultTime``, else its ``MaxTime``, else the trace reader's stand-in
    (Slurm's "unlimited" cannot be simulated). Slurm sets ``DefaultTime`` at submission
    (``job_mgr.c``, ``_part_access_check``: ``time_limit == NO_VAL`` takes ``default_time``) and
    ``MaxTime`` at the start of a job still without one (``node_scheduler.c``,
    ``select_nodes``); slurm.conf man page, DefaultTime: "Run time limit used for jobs that
    don't specify a value. If not set then MaxTime will be used." Idempotent; the same table
    when no job is concerned. ``DefaultTime=0`` is left to ``place_jobs`` (rejected)."""
    unstated = np.asarray(jobs.time_limit_unstated, dtype=bool)
    if not unstated.any() or not any(p.limits for p in machine.partitions):
        return jobs
    given: dict[str, float] = {}
    for part in machine.partitions:
        for name, lim in part.limits.items():
            value = lim.get("default_time", lim.get("max_time"))
            if value is not None and value > 0 and math.isfinite(value):
                given[name] = float(value)
    if not given:
        return jobs
    rows = np.flatnonzero(unstated)
    names = served_names(jobs.take(rows), machine)
    new = np.array([given.get(name, math.nan) for name in names.tolist()], dtype=np.float64)
    keep = np.isfinite(new)
    if not keep.any():
        return jobs
    limit = np.array(jobs.time_limit, dtype=np.float64, copy=True)
    limit[rows[keep]] = new[keep]
    return jobs.replace(time_limit=limit)


# ------------------------------------------------------------------ jobs -> partitions
@dataclass(frozen=True, eq=False)
class Placement:
    """Each job's partition and per-node request on the machine (aligned with the table)."""

    partition: np.ndarray  # int32 index into machine.partitions, -1 rejected
    reason: np.ndarray  # int8 index into REJECT_REASONS + 1 (0: accepted)
    cores: np.ndarray  # int64 per node (resolved: unknown -> a whole node; 0 when not modelled)
    gpus: np.ndarray  # int64 per node
    memory: np.ndarray  # float64 MiB per node
    unmatched: dict[str, int]  # job partition/queue names no partition serves -> jobs
    served: np.ndarray | None = None  # int32 the partition that serves the job (also if rejected), -1 none

    @property
    def rejected(self) -> np.ndarray:
        return self.partition < 0

    def counts(self) -> dict[str, int]:
        """Rejected jobs per reason (only reasons that occur)."""
        found = np.bincount(self.reason[np.flatnonzero(self.reason)], minlength=len(REJECT_REASONS) + 1)
        return {f"rejected_{r}": int(found[i + 1]) for i, r in enumerate(REJECT_REASONS) if found[i + 1]}


def _unknown_partition(jobs: JobTable, index_of: dict[str, int]) -> np.ndarray:
    """Per job, whether it names a partition of its own (not empty, not its queue's name) that
    no partition lists: Slurm rejects such a job at submission, so it is rejected here too
    rather than served by its queue or ``"*"`` (which stays the home of unlisted *queues*)."""
    names = jobs.partition_names
    listed = np.array([name in index_of or name in UNSTATED for name in names] or [True])
    if listed.all():
        return np.zeros(len(jobs), dtype=bool)
    code = np.asarray(jobs.partition_code)
    candidate = ~listed[code]
    queue = np.asarray(jobs.queue_names, dtype=object)[np.asarray(jobs.queue_code)[candidate]]
    own = np.asarray(names, dtype=object)[code[candidate]] != queue
    candidate[np.flatnonzero(candidate)[~own]] = False
    return candidate


def _multi_partition(jobs: JobTable, index_of: dict[str, int]) -> np.ndarray:
    """Per job, whether it was submitted to several partitions the machine has (``--partition
    =a,b``: a comma list of listed names as its partition or queue) that ``several_partitions``
    could not resolve (they are in different pools). Not modelled: Slurm starts such a job in
    whichever listed partition can start it first, which needs the pools in one simulation
    (docs/slurm.md); rejected with a reason of its own, never silently."""
    def several(names) -> np.ndarray:
        return np.array([("," in name and all(part.strip() in index_of for part in name.split(",")))
                         for name in names] or [False])

    by_partition = several(jobs.partition_names)[np.asarray(jobs.partition_code)]
    by_queue = several(jobs.queue_names)[np.asarray(jobs.queue_code)]
    return (by_partition | by_queue) if len(jobs) else np.zeros(0, dtype=bool)


def check_partitions_defined(jobs: JobTable, machine: Machine, source: str, skip_hint: str) -> None:
    """Refuse (``ConfigError``) jobs whose partition ``source`` (a slurm.conf) does not define,
    or that name none where it has no ``Default=YES``: the file does not describe the cluster
    that ran the trace, which the user must fix, or choose to skip (``skip_hint``: how; then
    ``place_jobs`` rejects the jobs and counts them by reason). One line: the first job's file
    line, the names and how many jobs name each."""
    placement = place_jobs(jobs, machine)
    reasons = (1 + REJECT_REASONS.index("no_partition"), 1 + REJECT_REASONS.index("unknown_partition"))
    rows = np.flatnonzero(np.isin(placement.reason, reasons))
    if not rows.size:
        return

    def label(name) -> str:
        return "(none)" if str(name) in UNSTATED else repr(str(name))

    names, counts = np.unique(jobs.partition[rows].astype(str), return_counts=True)
    order = np.argsort(-counts, kind="stable")
    listed = ", ".join(f"{label(names[i])} ({counts[i]:,})" for i in order[:8])
    more = f" and {len(names) - 8} more" if len(names) > 8 else ""
    first = int(rows[0])
    name = jobs.partition[first]
    why = "names no partition, and no partition has Default=YES" if str(name) in UNSTATED else \
        f"partition {label(name)} has no PartitionName line"
    raise ConfigError(
        f"{jobs.meta.path}:{int(jobs.source_line[first])}: job {jobs.job_id[first]}: {why} in {source}; "
        f"{rows.size:,} of {len(jobs):,} jobs are in partitions it does not define: {listed}{more}. "
        f"Add them to {source}, or {skip_hint} to reject these jobs (counted by reason)")


def place_jobs(jobs: JobTable, machine: Machine) -> Placement:
    """Which partition serves each job, its resolved per-node request, and why rejected jobs
    are rejected (see the module docstring). Vectorised: a few whole-table operations."""
    n = len(jobs)
    index_of: dict[str, int] = {}
    wildcard = -1
    for k, p in enumerate(machine.partitions):
        for queue in p.queues:
            if queue == EVERY_QUEUE:
                wildcard = k
            else:
                index_of[queue] = k
    by_partition = np.array([index_of.get(name, -1) for name in jobs.partition_names] or [-1],
                            dtype=np.int32)
    by_queue = np.array([index_of.get(name, -1) for name in jobs.queue_names] or [-1], dtype=np.int32)
    by_queue[by_queue < 0] = wildcard
    if (by_partition >= 0).all():  # every job partition name is served: the queue never decides
        part = by_partition[np.asarray(jobs.partition_code)]
    elif (by_partition < 0).all():  # no job partition name is: the queue always decides
        part = by_queue[np.asarray(jobs.queue_code)]
    else:
        part = by_partition[np.asarray(jobs.partition_code)]
        miss = part < 0
        part[miss] = by_queue[np.asarray(jobs.queue_code)[miss]]
    reason = np.zeros(n, dtype=np.int8)
    unknown = _unknown_partition(jobs, index_of)
    part[unknown] = -1
    unmatched: dict[str, int] = {}
    if (part < 0).any():
        reason[part < 0] = 1 + REJECT_REASONS.index("no_partition")
        reason[unknown] = 1 + REJECT_REASONS.index("unknown_partition")
        multi = _multi_partition(jobs, index_of) & (part < 0)
        reason[multi] = 1 + REJECT_REASONS.index("multi_partition")
        labels = jobs.partition[part < 0]
        names, counts = np.unique(labels.astype(str), return_counts=True)
        unmatched = {str(a): int(b) for a, b in zip(names, counts)}

    # Each job's partition's sizes, gathered once (the last entry, which index -1 picks: no
    # partition, no limit), so the tests below are a few whole-table operations whatever the
    # number of partitions.
    parts = machine.partitions
    slot = part
    nodes = np.asarray(jobs.num_nodes, dtype=np.int64)
    over = {"nodes": nodes > np.array([p.nodes for p in parts] + [np.iinfo(np.int64).max])[slot]}
    cores = np.zeros(n, dtype=np.int64)
    gpus = np.zeros(n, dtype=np.int64)
    memory = np.zeros(n, dtype=np.float64)
    if any(p.cores is not None for p in parts):
        size = np.array([-1 if p.cores is None else p.cores for p in parts] + [-1], dtype=np.int64)[slot]
        asked = np.asarray(jobs.cores_per_node, dtype=np.int64)
        cores = np.where(size >= 0, np.where(asked >= 1, asked, size), 0)
        over["cores"] = cores > np.where(size >= 0, size, np.iinfo(np.int64).max)
    if any(p.gpus is not None for p in parts):
        size = np.array([-1 if p.gpus is None else p.gpus for p in parts] + [-1], dtype=np.int64)[slot]
        gpus = np.where(size >= 0, np.maximum(np.asarray(jobs.gpus_per_node, dtype=np.int64), 0), 0)
        over["gpus"] = (size >= 0) & (gpus > size)
    if any(p.memory is not None for p in parts):
        size = np.array([np.nan if p.memory is None else p.memory for p in parts] + [np.nan])[slot]
        asked = np.asarray(jobs.memory_per_node, dtype=np.float64)
        modelled = np.isfinite(size)
        memory = np.where(modelled & np.isfinite(asked), asked, 0.0)
        over["memory"] = modelled & (memory > size)
    if any(p.limits for p in parts):  # Slurm's MaxNodes / MaxTime of the name that serves it
        over.update(_partition_limits(jobs, parts, slot))
    for what in reversed(REJECT_REASONS[1:]):  # the first reason that applies is the one given
        if what in over:  # (never true for a job no partition serves: its sizes have no limit)
            reason[over[what]] = 1 + REJECT_REASONS.index(what)
    served = part
    part = part.copy()
    part[reason > 0] = -1
    return Placement(part, reason, cores, gpus, memory, unmatched, served)
