"""The sweep's configuration schema, registered with Hydra's ConfigStore.

Each YAML file under ``conf/`` is checked against these dataclasses when Hydra composes the
config, so a misspelt key, a wrong type or an unknown option (an Enum value) fails before any
simulation runs, with Hydra's own message.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from enum import Enum
from datetime import datetime
from pathlib import Path
from typing import Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from .. import __version__
from .search_config import SearchConf
from .workload_config import WorkloadConf


class TraceFormat(Enum):
    simple = "simple"
    lassen = "lassen"
    swf = "swf"
    slurm = "slurm"


class TimestampFormat(Enum):
    auto = "auto"
    epoch = "epoch"
    iso = "iso"


class BadRowAction(Enum):
    error = "error"
    skip = "skip"


class MissingTimeLimit(Enum):
    run_time = "run_time"
    drop = "drop"
    fail = "fail"


class RunTimeMode(Enum):
    actual = "actual"
    limit = "limit"
    distribution = "distribution"


class Distribution(Enum):
    normal = "normal"
    lognormal = "lognormal"
    uniform = "uniform"


class Priority(Enum):
    fcfs = "fcfs"
    sjf = "sjf"
    ljf = "ljf"
    smallest = "smallest"
    largest = "largest"
    f1 = "f1"
    f2 = "f2"
    f3 = "f3"
    f4 = "f4"
    wfp3 = "wfp3"
    unicef = "unicef"
    multifactor = "multifactor"


class Estimate(Enum):
    user = "user"
    actual = "actual"
    user_history = "user_history"


class BackfillOrder(Enum):
    fcfs = "fcfs"
    sjbf = "sjbf"


class EstimateRefresh(Enum):
    """When ``user_history`` predicts a waiting job (``sim.estimates``)."""

    submit = "submit"  # once, at submission (our reading of Tsafrir et al. 2007)
    every_pass = "every_pass"  # again before every scheduling pass, as pyss does


class Backfill(Enum):
    none = "none"
    easy = "easy"
    conservative = "conservative"
    easy_drevt = "easy_drevt"
    slurm = "slurm"  # Slurm's main scheduler + backfill cycle (sim.policies.slurm_backfill)


class Compression(Enum):
    """Conservative backfilling's compression order (``sim.policies.conservative``)."""

    compress_first = "compress_first"  # completions, compress the waiting jobs, place arrivals
    interleaved = "interleaved"  # one priority-ordered sweep (before issue 16)
    one_pass = "one_pass"  # batsched / pyss: one compression round per completion instant


class ParallelBackend(Enum):
    loky = "loky"  # processes on this machine (the default)
    threading = "threading"
    sequential = "sequential"
    dask = "dask"  # a dask.distributed cluster: parallel.dask_address, or a LocalCluster
    ray = "ray"  # a Ray cluster: parallel.ray_address, or a local Ray instance


@dataclass
class TraceConf:
    """Which trace file; ``path`` is absolute or relative to the project root."""

    name: str = "kth_sp2"
    path: str = "???"


@dataclass
class FormatConf:
    """How to read it (the seeds' --trace_format and --timestamp_format, plus row handling)."""

    name: TraceFormat = TraceFormat.simple
    timestamp_format: TimestampFormat = TimestampFormat.auto
    # null = the format's default queue filter; ["all"] keeps every queue.
    queues: Optional[List[str]] = None
    on_bad_row: BadRowAction = BadRowAction.error
    swf_missing_time_limit: MissingTimeLimit = MissingTimeLimit.run_time


@dataclass
class TimezoneConf:
    """The IANA zone of timestamps that carry no offset (the seeds' --timezone). Null: the
    trace's own (an SWF header's TimeZoneString), else America/Los_Angeles; a zone given here
    wins over the header's. The zone used is the one logged."""

    name: Optional[str] = None


@dataclass
class RunTimeConf:
    """How long a job really runs in a simulation (the seeds' --run_time_mode and friends)."""

    name: str = "actual"
    mode: RunTimeMode = RunTimeMode.actual
    distribution: Distribution = Distribution.normal
    scale: float = 1.0
    stddev: float = 0.0
    min_run_time: float = 1.0


@dataclass
class MultifactorWeights:
    """Slurm's PriorityWeight* (``priority: multifactor``); Slurm's own defaults are 0."""

    age: float = 1000.0
    fairshare: float = 10000.0
    job_size: float = 1000.0
    partition: float = 1000.0
    qos: float = 0.0


@dataclass
class PolicyConf:
    """Queue order, backfilling and run-time estimates; ``replay`` replays the trace's own
    history instead. The keys after ``estimate_refresh`` are ``multifactor``'s (slurm.conf names
    in snake case, see ``sim.policies.multifactor``) and ignored by the other priorities."""

    name: str = "easy"
    priority: Priority = Priority.fcfs
    backfill: Backfill = Backfill.easy
    compression: Compression = Compression.compress_first  # conservative only
    replay: bool = False
    estimate: Estimate = Estimate.user
    backfill_order: BackfillOrder = BackfillOrder.fcfs
    estimate_refresh: EstimateRefresh = EstimateRefresh.submit
    weights: MultifactorWeights = field(default_factory=MultifactorWeights)
    max_age: float = 604800.0  # PriorityMaxAge, seconds
    favor_small: bool = False  # PriorityFavorSmall
    decay_half_life: float = 604800.0  # PriorityDecayHalfLife, seconds
    calc_period: float = 300.0  # PriorityCalcPeriod, seconds
    fairshare_by: str = "account/user"  # the association tree: account/user, user or account
    fairshare: str = "classic"  # classic | fair_tree (Slurm's default unless PriorityFlags=NO_FAIR_TREE)
    account_shares: Dict[str, float] = field(default_factory=dict)
    user_shares: Dict[str, float] = field(default_factory=dict)
    partition_priority: Dict[str, float] = field(default_factory=dict)  # PriorityJobFactor
    # A job's time from the last tick to its end charged to its fair-share usage: Slurm does it
    # only with AccountingStorageEnforce=limits (system=slurm sets it from the slurm.conf).
    charge_ended_jobs: bool = True
    # Slurm's backfill (backfill: slurm, or policy=slurm with SchedulerType=sched/backfill): the
    # SchedulerParameters of the same names; null = the slurm.conf's value, else Slurm's default.
    # Numbers may be inf where "no limit" makes sense (bf_max_job_test, bf_window, depth).
    bf_interval: Optional[float] = None  # s; 0 = at every scheduling pass
    bf_max_job_test: Optional[float] = None
    bf_window: Optional[float] = None  # minutes
    bf_resolution: Optional[float] = None  # s; 0 = exact
    bf_max_job_user: Optional[int] = None  # 0 = no limit
    bf_max_job_part: Optional[int] = None  # 0 = no limit
    bf_continue: Optional[bool] = None
    bf_job_part_count_reserve: Optional[int] = None  # 0 = reserve for every job
    default_queue_depth: Optional[float] = None
    sched_interval: Optional[float] = None  # s; 0 = no periodic full-queue pass


class Sharing(Enum):
    exclusive = "exclusive"  # a job takes whole nodes
    shared = "shared"  # jobs are packed onto nodes by cores, GPUs and memory


@dataclass
class PartitionConf:
    """One node pool of the machine (``drevt_sweep.sim.machine.Partition``); null resources
    are not modelled. ``queues``: the job partition/queue names it serves (empty: its name;
    ``"*"``: every name no other partition serves)."""

    name: str = "???"
    nodes: int = "???"  # type: ignore[assignment]
    cores: Optional[int] = None
    gpus: Optional[int] = None
    memory: Optional[float] = None  # MiB per node
    sharing: Sharing = Sharing.exclusive
    queues: List[str] = field(default_factory=list)


@dataclass
class SystemConf:
    """The machine: null total_nodes means the size the trace states (else 795, Lassen).
    ``partitions`` (a list) describes a machine with node pools instead; total_nodes is then
    their sum."""

    name: str = "trace"
    total_nodes: Optional[int] = None
    enforce_limits: bool = True
    partitions: Optional[List[PartitionConf]] = None
    slurm_conf: Optional[str] = None  # system=slurm: a slurm.conf gives the partitions instead
    associations: Optional[str] = None  # sacctmgr -P show assoc: shares, association limits
    qos: Optional[str] = None  # sacctmgr -P show qos: QOS priority and limits (with associations)


@dataclass
class ParallelConf:
    """Seed-level fan-out with joblib; n_jobs=-1 uses every core.

    ``backend`` picks joblib's backend. ``dask`` sends the seeds to a dask.distributed
    scheduler at ``dask_address`` (``tcp://host:8786``, or the path of a ``--scheduler-file``
    JSON); null starts a LocalCluster of ``n_jobs`` worker processes on this machine. ``ray``
    connects to ``ray_address`` (``auto``, ``ray://host:10001``); null starts a local Ray
    instance. With either, the parsed trace goes to the workers once, not once per seed.
    """

    n_jobs: int = -1
    backend: ParallelBackend = ParallelBackend.loky
    # A multirun's (configuration, seed) tasks per chunk sent to a worker (null: a few chunks
    # per worker, 64 at most); results do not depend on it.
    chunk_size: Optional[int] = None
    dask_address: Optional[str] = None
    ray_address: Optional[str] = None


@dataclass
class TrackingConf:
    """MLflow: null uri means the embedded sqlite store under outputs/."""

    uri: Optional[str] = None
    artifact_root: Optional[str] = None
    experiment: str = "drevt-sweep"
    log_schedule: bool = True  # the schedule CSV of the first seed, as an artifact
    enabled: bool = True


@dataclass
class PathsConf:
    root: str = "???"
    output_root: str = "???"
    cache_dir: str = "???"
    trace_dir: str = "???"


@dataclass
class SweepConfig:
    """The root config: one Hydra job = one configuration, run over ``replicates`` seeds."""

    trace: TraceConf = field(default_factory=TraceConf)
    format: FormatConf = field(default_factory=FormatConf)
    timezone: TimezoneConf = field(default_factory=TimezoneConf)
    run_time: RunTimeConf = field(default_factory=RunTimeConf)
    policy: PolicyConf = field(default_factory=PolicyConf)
    system: SystemConf = field(default_factory=SystemConf)
    workload: WorkloadConf = field(default_factory=WorkloadConf)
    parallel: ParallelConf = field(default_factory=ParallelConf)
    tracking: TrackingConf = field(default_factory=TrackingConf)
    paths: PathsConf = field(default_factory=PathsConf)
    search: SearchConf = field(default_factory=SearchConf)  # kind=none: an ordinary sweep
    seed: int = 0
    replicates: int = 5
    resume: bool = False
    progress: bool = True
    wait_for_folder: bool = False  # another drevt-sweep on the folder: wait, not exit 2
    # Each configuration's figures (and its kept schedule file): auto = only in sweeps of up to
    # sweep/figure_choice.py's FIGURES_AUTO_MAX configurations; per_configuration; none.
    figures: str = "auto"


def register_configs() -> None:
    """Register the root schema; ``conf/config.yaml`` lists it first, so every group's YAML is
    merged into (and checked against) its typed field. Also the ``drevt_cwd`` resolver: the
    directory the command was started from, which ``paths.root`` defaults to (Hydra's own
    ``hydra:runtime.cwd`` cannot be resolved yet when the sweep folder is named), and
    ``drevt_trace``, where a catalogue trace is on this machine (``catalogue.locate``)."""
    ConfigStore.instance().store(name="sweep_schema", node=SweepConfig)
    from ..trace import catalogue

    resolvers = {
        "drevt_cwd": os.getcwd,
        # ${drevt_trace:lanl_cm5}: the user data folder's copy, else $DREVT_TRACE_DIR's
        "drevt_trace": catalogue.locate,
        "drevt_data_dir": lambda: str(catalogue.data_dir()),
        "drevt_version": lambda: __version__,
        "drevt_output_dir": output_dir,
        # ${drevt_conf_file:system/lassen_slurm.conf}: a file shipped beside the configs
        "drevt_conf_file": conf_file,
    }
    for name, resolver in resolvers.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(
                name, resolver, use_cache=name in ("drevt_cwd", "drevt_output_dir"))


def conf_file(name: str) -> str:
    """The path of a file shipped in drevt-sweep's config folder (``conf/`` at the top of a
    source tree, ``drevt_sweep/conf`` when installed), e.g. a preset's slurm.conf."""
    package = Path(__file__).resolve().parents[1]
    for folder in (package / "conf", package.parent / "conf"):
        if (folder / name).is_file():
            return str(folder / name)
    return str(package.parent / "conf" / name)  # missing: the error names this path


STAMP = "%Y-%m-%d_%H-%M-%S"
_STAMPED = re.compile(r"^\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d$")


def output_dir(base: str, resume=False) -> str:
    """A run's or sweep's folder: ``base/<date>_<time>`` (cached, so every job of a multirun
    gets the same one), or with ``resume`` the latest such folder under ``base`` (a new one if
    there is none), so that ``resume=true`` continues the sweep it resumes."""
    if resume in (True, "true", "True"):
        folder = Path(base)
        earlier = sorted(p.name for p in folder.iterdir() if p.is_dir() and _STAMPED.match(p.name)) \
            if folder.is_dir() else []
        if earlier:
            return str(folder / earlier[-1])
    return str(Path(base) / datetime.now().strftime(STAMP))
