"""A Slurm ``slurm.conf`` as drevt-sweep's machine and multifactor settings (issue 26 item 1).

Reads what the simulator models and maps it onto plain data (no simulator objects here: the
``sim`` layer builds the :class:`~drevt_sweep.sim.machine.Machine` from ``SlurmConf.system``):

* ``NodeName`` lines (``NodeName=DEFAULT`` sets later lines' defaults; hostlist expressions
  such as ``n[001-128]``, :mod:`.hostlist`): cores per node = ``CPUs`` (alias ``Procs``), else
  ``Boards x Sockets x CoresPerSocket x ThreadsPerCore`` (Slurm's own default); ``RealMemory``
  MiB (default 1, as Slurm's); GPUs = the sum of the ``gpu`` entries of ``Gres``.
* ``PartitionName`` lines (``DEFAULT`` as for nodes): ``Nodes`` (a hostlist or ``ALL``) become
  the partition's pool; ``Default=YES`` also serves jobs that name no partition (a queue of
  ``""`` or SWF's ``-1``); ``PriorityJobFactor`` the multifactor partition factor;
  ``MaxNodes``/``MaxTime`` (jobs over them never run: ``rejected_partition_max_nodes``/
  ``_time_limit``), ``DefaultTime`` (the limit of jobs whose trace states none,
  ``JobTable.time_limit_unstated``; dropped when above ``MaxTime``, as slurmctld does) and
  ``PriorityTier`` (backfill ``slurm`` orders a pool's queue by it first)
  as the pool's ``limits``;
  ``OverSubscribe=EXCLUSIVE`` whole nodes. Partitions sharing nodes become one pool serving
  each of their names (drevt-sweep's partitions are disjoint node pools), with a warning.
* ``SelectType``: ``select/linear`` allocates whole nodes (exclusive pools);
  ``select/cons_tres``/``cons_res`` pack jobs by cores (and memory when
  ``SelectTypeParameters`` has ``Memory``) and GPUs (shared pools).
* ``PriorityType=priority/multifactor`` (else FCFS, Slurm's ``priority/basic``, which lists the keys below as unused),
  ``PriorityWeight{Age,Fairshare,JobSize,Partition,QOS}`` (Slurm's default 0 each),
  ``PriorityMaxAge``, ``PriorityDecayHalfLife`` (0: no decay), ``PriorityCalcPeriod``,
  ``PriorityFavorSmall``, ``PriorityFlags`` (Fair Tree unless ``NO_FAIR_TREE``).
* ``SchedulerType``: ``sched/backfill`` is Slurm's backfill (``backfill: slurm``,
  ``sim.policies.slurm_backfill``) with the ``SchedulerParameters`` it models (``bf_interval``,
  ``bf_max_job_test``, ``bf_window``, ``bf_resolution``, ``bf_max_job_user``,
  ``bf_max_job_part``, ``bf_continue``, ``bf_job_part_count_reserve``, ``default_queue_depth``,
  ``sched_interval``: ``SlurmConf.backfill_params``); ``sched/builtin`` none.

Everything else -- other keys, per-node and per-partition keys not modelled (``State``, ...), other ``SchedulerParameters``,
flags -- is listed in ``SlurmConf.ignored``, one
entry per key, for the caller to warn about once: never ignored silently. A malformed line
(a word that is not ``Key=Value``, a bad number, hostlist or time, a negative weight, a
partition naming an undefined node, a pool of unlike nodes, a ``SchedulerParameters`` value
that is not a number in Slurm's range) raises ``ConfigError`` naming the
file, line and key; nothing half-read is returned. Keys are case-insensitive, node and
partition names are not (as in Slurm). What is and is not modelled: ``docs/slurm.md``.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from ..files import read_input
from .hostlist import expand

NODE_KEYS = {"nodename", "cpus", "procs", "boards", "sockets", "corespersocket", "threadspercore",
             "realmemory", "gres"}
PARTITION_KEYS = {"partitionname", "nodes", "default", "priorityjobfactor", "oversubscribe", "shared",
                  "maxtime", "maxnodes", "prioritytier", "defaulttime"}
WEIGHTS = {"priorityweightage": "age", "priorityweightfairshare": "fairshare",
           "priorityweightjobsize": "job_size", "priorityweightpartition": "partition",
           "priorityweightqos": "qos"}
# the keys only priority/multifactor reads (listed as unused under priority/basic)
MULTIFACTOR_KEYS = (*WEIGHTS, "priorityweightassoc", "priorityweighttres", "priorityflags",
                    "prioritydecayhalflife", "prioritymaxage", "prioritycalcperiod", "priorityfavorsmall")
# SchedulerParameters the Slurm backfill models: name -> (least, most) as Slurm accepts them
# (backfill.c _load_config, job_scheduler.c _schedule; None: no upper bound). bf_continue is a flag.
SCHEDULER_PARAMETERS = {
    "bf_interval": (1, None), "bf_max_job_test": (1, 1_000_000), "bf_window": (1, 43200),
    "bf_resolution": (1, 3600), "bf_max_job_user": (0, None), "bf_max_job_part": (0, None),
    "bf_job_part_count_reserve": (0, 100_000), "default_queue_depth": (0, None),
    "sched_interval": (0, None),
}
DAY = 86400.0
NO_DECAY = 1e15  # PriorityDecayHalfLife=0: usage never decays (about 30 million years)


@dataclass(frozen=True)
class SlurmConf:
    """What a slurm.conf says, as drevt-sweep settings (see the module docstring)."""

    path: str
    system: dict  # a machine description: {"name", "partitions": [{name, nodes, cores, ...}]}
    priority: str  # "multifactor" or "fcfs"
    backfill: str  # "slurm" (sched/backfill) or "none" (sched/builtin)
    priority_params: dict | None  # multifactor's parameters (None with fcfs)
    partition_factors: dict = field(default_factory=dict)  # PriorityJobFactor per partition
    ignored: tuple[str, ...] = ()  # keys read but not modelled, once each
    backfill_params: dict = field(default_factory=dict)  # SchedulerParameters (bf_window, ...)
    # AccountingStorageEnforce with its implications (associations, limits, qos, safe, wckeys):
    # whether association limits apply at all (trace.associations, sim.limits)
    enforce: frozenset = frozenset()

    def params_for(self, queue_names) -> dict | None:
        """``priority_params`` with the partition factors of the partitions a trace has (the
        multifactor policy refuses names that are not queues of the trace)."""
        if self.priority_params is None:
            return None
        names = {part.strip() for q in queue_names for part in str(q).split(",")}  # a,b: several
        present = {k: v for k, v in self.partition_factors.items() if k in names}
        return {**self.priority_params, "partition_priority": present}


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)
        self.globals: dict[str, tuple[str, str, int]] = {}  # key -> (Key as written, value, line)
        self.nodes: dict[str, dict] = {}  # host -> {cores, gpus, memory, line}
        self.partitions: list[dict] = []
        self.ignored: dict[str, None] = {}
        self.node_default: dict[str, tuple[str, str]] = {}
        self.partition_default: dict[str, tuple[str, str]] = {}

    def error(self, line: int, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.where}:{line}: {key}: {problem}")

    def ignore(self, what: str) -> None:
        self.ignored.setdefault(what, None)

    # --- lines ----------------------------------------------------------------------------
    def read(self, path: Path, depth: int = 0) -> None:
        data = read_input(str(path), f"the slurm.conf '{path}'", noun="slurm.conf")  # never an output
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not a text file ({exc.reason} at byte {exc.start})") from None
        where = self.where
        self.where = str(path)
        for number, raw in enumerate(text.splitlines(), start=1):
            line = re.sub(r"(?<!\\)#.*", "", raw).strip()
            if not line:
                continue
            if re.match(r"(?i)include\s", line):
                self._include(line.split(None, 1)[1].strip(), number, depth)
                continue
            try:
                words = shlex.split(line, posix=True)
            except ValueError as exc:
                raise self.error(number, line.split("=", 1)[0], f"cannot split the line ({exc})") from None
            pairs = []
            for word in words:
                key, sep, value = word.partition("=")
                if not sep or not key:
                    raise self.error(number, word, "expected Key=Value")
                pairs.append((key, value))
            head = pairs[0][0].lower()
            if head == "nodename":
                self._node(pairs, number)
            elif head == "partitionname":
                self._partition(pairs, number)
            elif head in ("nodeset", "downnodes", "frontendname", "switchname"):
                self.ignore(pairs[0][0])
            else:
                for key, value in pairs:
                    self.globals[key.lower()] = (key, value, number)
        self.where = where

    def _include(self, name: str, line: int, depth: int) -> None:
        if depth > 8:
            raise self.error(line, "Include", "includes nest more than 8 deep")
        target = Path(name)
        if not target.is_absolute():
            target = self.path.parent / target
        if not target.is_file():
            raise self.error(line, "Include", f"no such file {target}")
        self.read(target, depth + 1)

    def _fields(self, pairs, defaults: dict, known: set, what: str) -> dict | None:
        """A NodeName/PartitionName line's fields over the DEFAULT line's (None for a DEFAULT
        line, which only sets them); keys not modelled are noted."""
        fields = {k.lower(): (k, v) for k, v in pairs[1:]}
        if pairs[0][1].upper() == "DEFAULT":
            defaults.update(fields)
            return None
        fields = {**defaults, **fields}
        for key, (written, _) in fields.items():
            if key not in known:
                self.ignore(f"{what} {written}")
        return fields

    def _node(self, pairs, line: int) -> None:
        names = pairs[0][1]
        fields = self._fields(pairs, self.node_default, NODE_KEYS, "NodeName")
        if fields is None:
            return

        def whole(key: str, default: int, least: int = 1) -> int:
            if key not in fields:
                return default
            written, value = fields[key]
            try:
                number = int(value)
            except ValueError:
                raise self.error(line, written, f"expected a whole number, got {value!r}") from None
            if number < least:
                raise self.error(line, written, f"must be at least {least}, got {number}")
            return number

        cores = whole("cpus", 0) or whole("procs", 0)
        if not cores:
            cores = (whole("boards", 1) * whole("sockets", 1) * whole("corespersocket", 1)
                     * whole("threadspercore", 1))
        memory = whole("realmemory", 1)
        gpus = self._gpus(fields.get("gres"), line)
        try:
            hosts = expand(names)
        except ValueError as exc:
            raise self.error(line, "NodeName", str(exc)) from None
        for host in hosts:
            self.nodes[host] = {"cores": cores, "gpus": gpus, "memory": memory, "line": line}

    def _gpus(self, gres, line: int) -> int:
        if gres is None:
            return 0
        written, value = gres
        total = 0
        for item in value.split(","):
            parts = re.sub(r"\(.*\)$", "", item.strip()).split(":")
            if parts[0].lower() != "gpu":
                self.ignore(f"Gres {parts[0]}")
                continue
            count = parts[-1] if len(parts) > 1 else "1"
            if not count.isdigit():
                raise self.error(line, written, f"expected gpu[:type]:count, got {item!r}")
            total += int(count)
        return total

    def _partition(self, pairs, line: int) -> None:
        name = pairs[0][1]
        fields = self._fields(pairs, self.partition_default, PARTITION_KEYS, "PartitionName")
        if fields is None:
            return
        factor = 1.0
        if "priorityjobfactor" in fields:
            written, value = fields["priorityjobfactor"]
            if not value.isdigit():
                raise self.error(line, written, f"expected a whole number >= 0, got {value!r}")
            factor = float(value)
        limits = {}
        if "prioritytier" in fields:
            written, value = fields["prioritytier"]
            if not value.isdigit() or int(value) > 65533:
                raise self.error(line, written, f"expected a whole number 0-65533, got {value!r}")
            limits["priority_tier"] = int(value)
        if "maxnodes" in fields:
            written, value = fields["maxnodes"]
            if value.upper() not in ("UNLIMITED", "INFINITE"):
                if not value.isdigit():
                    raise self.error(line, written, f"expected a whole number or UNLIMITED, got {value!r}")
                limits["max_nodes"] = int(value)
        if "maxtime" in fields:
            written, value = fields["maxtime"]
            if value.upper() not in ("UNLIMITED", "INFINITE"):
                seconds = slurm_time(value)
                if seconds is None:
                    raise self.error(line, written, f"expected a Slurm time or UNLIMITED, got {value!r}")
                limits["max_time"] = seconds
        if "defaulttime" in fields:
            # Slurm: the limit of jobs that ask for none (else MaxTime); one above MaxTime is
            # dropped with a message (read_config.c), UNLIMITED gives them no limit
            written, value = fields["defaulttime"]
            if value.upper() not in ("UNLIMITED", "INFINITE"):
                seconds = slurm_time(value)
                if seconds is None:
                    raise self.error(line, written, f"expected a Slurm time or UNLIMITED, got {value!r}")
                if seconds > limits.get("max_time", math.inf):
                    self.ignore(f"PartitionName={name} DefaultTime={value} exceeds its MaxTime: "
                                f"dropped, as slurmctld does")
                else:
                    limits["default_time"] = seconds
        oversubscribe = (fields.get("oversubscribe") or fields.get("shared") or ("", "NO"))[1].upper()
        if oversubscribe.split(":")[0] in ("YES", "FORCE"):
            self.ignore(f"PartitionName OverSubscribe={oversubscribe}")
        self.partitions.append({
            "name": name, "line": line, "nodes": fields.get("nodes", ("Nodes", ""))[1],
            "default": fields.get("default", ("Default", "NO"))[1].upper() == "YES",
            "factor": factor, "exclusive": oversubscribe == "EXCLUSIVE", "limits": limits,
        })

    # --- the whole file -------------------------------------------------------------------
    def value(self, key: str, default: str) -> tuple[str, str, int]:
        return self.globals.get(key, (key, default, 0))

    def conf(self) -> SlurmConf:
        select = self.value("selecttype", "select/cons_tres")[1].lower()
        params = self.value("selecttypeparameters", "CR_Core_Memory")[1]
        if "selecttype" not in self.globals:
            self.ignore("SelectType unset: assumed select/cons_tres (set it explicitly)")
        if select not in ("select/linear", "select/cons_tres", "select/cons_res"):
            key, value, line = self.globals["selecttype"]
            raise self.error(line, key, f"{value!r} is not modelled (select/linear, select/cons_tres, "
                                        f"select/cons_res)")
        whole_nodes = select == "select/linear"
        memory_tracked = whole_nodes or "memory" in params.lower()
        for flag in params.split(","):
            if flag.strip() and not re.fullmatch(r"(?i)CR_(CPU|Core)(_Memory)?", flag.strip()):
                self.ignore(f"SelectTypeParameters {flag.strip()}")
        name = self.value("clustername", self.path.stem)[1]
        system = {"name": name, "partitions": self._pools(whole_nodes, memory_tracked)}
        priority, priority_params = self._priority()
        backfill, backfill_params = self._scheduler()
        used = {"clustername", "selecttype", "selecttypeparameters", "prioritytype", "priorityflags",
                "prioritymaxage", "prioritydecayhalflife", "prioritycalcperiod",
                "priorityfavorsmall", "schedulertype", "schedulerparameters", "accountingstorageenforce",
                *WEIGHTS}
        for key, (written, _, _) in self.globals.items():
            if key not in used:
                self.ignore(written)
        factors = {p["name"]: p["factor"] for p in self.partitions}
        enforce = self._enforce()
        if priority_params is not None:  # a job's time after the last tick is charged at its end
            priority_params["charge_ended_jobs"] = "limits" in enforce  # only under limits (multifactor.py)
        return SlurmConf(str(self.path), system, priority, backfill, priority_params,
                         factors if len(set(factors.values())) > 1 else {}, tuple(self.ignored),
                         backfill_params, enforce)

    def _enforce(self) -> frozenset:
        """``AccountingStorageEnforce`` with what each option implies (slurm.conf man page:
        ``limits``, ``qos``, ``wckeys`` imply ``associations``; ``safe`` implies ``limits``;
        ``all`` every option but ``nojobs``/``nosteps``); unset, or ``none`` (what ``scontrol
        write config`` and ``scontrol show config`` print for it then): nothing is enforced."""
        written, value, line = self.value("accountingstorageenforce", "")
        flags = set()
        items = [item.strip().lower() for item in value.split(",")]
        if "none" in items and len([item for item in items if item]) > 1:
            raise self.error(line, written, "'none' cannot be given with other AccountingStorageEnforce options")
        for item in items:
            if not item or item == "none":
                continue
            if item not in ("all", "associations", "limits", "nojobs", "nosteps", "qos", "safe", "wckeys"):
                raise self.error(line, written, f"{item!r} is not an AccountingStorageEnforce option")
            flags.add(item)
        if "all" in flags:
            flags |= {"associations", "limits", "qos", "safe", "wckeys"}
        if "safe" in flags:
            flags.add("limits")
        if flags & {"limits", "qos", "wckeys"}:
            flags.add("associations")
        for flag in sorted(flags & {"safe", "wckeys", "nojobs", "nosteps"}):
            self.ignore(f"AccountingStorageEnforce {flag}")
        return frozenset(flags)

    def _pools(self, whole_nodes: bool, memory_tracked: bool) -> list[dict]:
        if not self.partitions:
            raise ConfigError(f"{self.path}: no PartitionName line: the machine has no partition")
        hosts_of = []
        for part in self.partitions:
            text = part["nodes"]
            if not text:
                raise self.error(part["line"], f"PartitionName={part['name']}", "no Nodes=")
            if text.upper() == "ALL":
                hosts = list(self.nodes)
            else:
                try:
                    hosts = expand(text)
                except ValueError as exc:
                    raise self.error(part["line"], "Nodes", str(exc)) from None
            missing = [h for h in hosts if h not in self.nodes]
            if missing:
                raise self.error(part["line"], "Nodes", f"node {missing[0]!r} has no NodeName line")
            hosts_of.append(dict.fromkeys(hosts))
        # partitions that share a node are one pool (connected components, in file order)
        group = list(range(len(self.partitions)))

        def root(i: int) -> int:
            while group[i] != i:
                i = group[i]
            return i

        owner: dict[str, int] = {}
        for i, hosts in enumerate(hosts_of):
            for host in hosts:
                if host in owner:
                    a, b = root(owner[host]), root(i)
                    group[max(a, b)] = min(a, b)
                else:
                    owner[host] = i
        pools = []
        for first in sorted({root(i) for i in range(len(self.partitions))}):
            members = [i for i in range(len(self.partitions)) if root(i) == first]
            parts = [self.partitions[i] for i in members]
            hosts = list(dict.fromkeys(h for i in members for h in hosts_of[i]))
            names = [p["name"] for p in parts]
            if len(parts) > 1:
                self.ignore(f"partitions {', '.join(names)} share nodes: simulated as one pool")
            sizes = {(self.nodes[h]["cores"], self.nodes[h]["gpus"], self.nodes[h]["memory"]) for h in hosts}
            if len(sizes) > 1:
                a, b = sorted(sizes)[:2]
                raise self.error(parts[0]["line"], f"PartitionName={parts[0]['name']}",
                                 f"its nodes differ (cores, GPUs, MiB: {a} and {b}); drevt-sweep models a "
                                 f"partition as identical nodes: split it by node type")
            cores, gpus, memory = sizes.pop()
            exclusive = whole_nodes or all(p["exclusive"] for p in parts)
            queues = names + (["", "-1"] if any(p["default"] for p in parts) else [])
            pool = {"name": "+".join(names), "nodes": len(hosts), "cores": cores, "gpus": gpus,
                    "memory": float(memory) if memory_tracked else None,
                    "sharing": "exclusive" if exclusive else "shared", "queues": queues}
            limits = {p["name"]: p["limits"] for p in parts if p["limits"]}
            for p in parts:  # the default partition's limits also apply to jobs naming none
                if p["default"] and p["limits"]:
                    limits.update({"": p["limits"], "-1": p["limits"]})
            if limits:
                pool["limits"] = limits
            pools.append(pool)
        return pools

    def _priority(self) -> tuple[str, dict | None]:
        kind = self.value("prioritytype", "priority/basic")
        if kind[1].lower() not in ("priority/basic", "priority/multifactor"):
            raise self.error(kind[2], kind[0], f"{kind[1]!r} is not modelled (priority/basic, priority/multifactor)")
        basic = kind[1].lower() == "priority/basic"
        params = self._multifactor(note=not basic)  # read and checked even where basic leaves it unused
        if basic:
            for key in MULTIFACTOR_KEYS:
                if key in self.globals:
                    self.ignore(f"{self.globals[key][0]} (unused by priority/basic)")
            return "fcfs", None
        return "multifactor", params

    def _multifactor(self, note: bool) -> dict:
        """``priority/multifactor``'s settings; ``note``: list the ones it does not model."""
        weights = {}
        for key, name in WEIGHTS.items():
            written, value, line = self.value(key, "0")
            if not re.fullmatch(r"-?\d+", value):
                raise self.error(line, written, f"expected a whole number >= 0, got {value!r}")
            if int(value) < 0:
                raise self.error(line, written, f"a priority weight cannot be negative, got {value}")
            weights[name] = float(value)
        flags = [f.strip().upper() for f in self.value("priorityflags", "")[1].split(",") if f.strip()]
        if note:
            for key in ("priorityweightassoc", "priorityweighttres"):
                if key in self.globals:
                    self.ignore(self.globals[key][0])
            for flag in flags:
                if flag != "NO_FAIR_TREE":
                    self.ignore(f"PriorityFlags {flag}")
        half_life = self._time("prioritydecayhalflife", "7-0")
        favor = self.value("priorityfavorsmall", "NO")
        if favor[1].upper() not in ("YES", "NO"):
            raise self.error(favor[2], favor[0], f"expected YES or NO, got {favor[1]!r}")
        params = {
            "weights": weights,
            "max_age": self._time("prioritymaxage", "7-0", positive=True),
            "decay_half_life": half_life if half_life > 0 else NO_DECAY,
            "calc_period": self._time("prioritycalcperiod", "5", positive=True),
            "favor_small": favor[1].upper() == "YES",
            "fairshare": "classic" if "NO_FAIR_TREE" in flags else "fair_tree",
        }
        return params

    def _scheduler(self) -> tuple[str, dict]:
        """``SchedulerType`` and the ``SchedulerParameters`` the Slurm backfill models
        (``sim.policies.slurm_backfill``; others are listed as not modelled)."""
        key, value, line = self.value("schedulertype", "sched/backfill")
        written, text, pline = self.value("schedulerparameters", "")
        params: dict = {}
        for item in text.split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, raw = item.partition("=")
            name = name.strip().lower()
            if name == "bf_continue":
                if sep:
                    raise self.error(pline, written, f"bf_continue takes no value, got {item!r}")
                params[name] = True
                continue
            if name not in SCHEDULER_PARAMETERS:
                self.ignore(f"SchedulerParameters {item.split('=')[0]}")
                continue
            if not re.fullmatch(r"\d+", raw.strip()):
                raise self.error(pline, written, f"{name}: expected a whole number >= 0, got {raw!r}")
            number = int(raw)
            least, most = SCHEDULER_PARAMETERS[name]
            if number < least or (most is not None and number > most):
                bound = f"between {least} and {most}" if most is not None else f"at least {least}"
                raise self.error(pline, written, f"{name}: must be {bound} (Slurm's range), got {number}")
            params[name] = number
        if value.lower() == "sched/backfill":
            return "slurm", params
        if value.lower() == "sched/builtin":
            for name in params:
                if name.startswith("bf_"):
                    self.ignore(f"SchedulerParameters {name} (SchedulerType=sched/builtin has no backfill)")
            return "none", params
        raise self.error(line, key, f"{value!r} is not modelled (sched/backfill, sched/builtin)")

    def _time(self, key: str, default: str, positive: bool = False) -> float:
        written, value, line = self.value(key, default)
        seconds = slurm_time(value)
        if seconds is None or (positive and seconds <= 0):
            raise self.error(line, written, f"expected a Slurm time (minutes, [days-]hours:minutes:seconds, "
                                            f"days-hours){' > 0' if positive else ''}, got {value!r}")
        return seconds


_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def slurm_time(text: str) -> float | None:
    """Seconds of a Slurm time: ``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``,
    ``days-hours``, ``days-hours:minutes``, ``days-hours:minutes:seconds``; None if malformed."""
    match = _TIME.match(text.strip())
    if not match:
        return None
    days, a, b, c = match.groups()
    if days is not None:  # days-hours[:minutes[:seconds]]
        return float(((int(days) * 24 + int(a)) * 60 + int(b or 0)) * 60 + int(c or 0))
    if c is not None:  # hours:minutes:seconds
        return float((int(a) * 60 + int(b)) * 60 + int(c))
    if b is not None:  # minutes:seconds
        return float(int(a) * 60 + int(b))
    return float(int(a) * 60)  # minutes


def read_slurm_conf(path) -> SlurmConf:
    """The slurm.conf at ``path`` (see the module docstring); ConfigError on bad input."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"cannot read the slurm.conf {path}: no such file")
    reader = _Reader(path)
    reader.read(path)
    return reader.conf()
