"""The ``drevt-sweep`` Hydra app: one Hydra job = one configuration, run over its seeds.

Flow of a job: compose config -> open the tracking store (in the tracking helper process, while
the trace is read once from the on-disk cache and the workers start) -> fan seeds out with
joblib (no more are handed out once the store is known to have failed) -> aggregate -> send one
parent run and one child run per seed to the helper, which writes them while the outputs and
figures are made -> wait for it -> write ``result.json`` into the job's folder. A multirun's ``SweepSummaryCallback`` gathers those
files into ``summary.csv`` and a printed table.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import shlex
import sys
import time
import traceback
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from .. import __version__
from .callback_policy import guard_hydra_callbacks
from .grid import resolve_config as resolved  # (the config resolved, as plain data)
from .slurm_system import (associations_of, backfill_params, check_partitions, identity_settings, slurm_conf_of,
                           slurm_policy, with_association_priority)
from .config import register_configs
from .interrupts import (end_idle_workers, end_workers, exit_code, ignore_late_signals, install_handlers,
                         signal_name)
from ..errors import ConfigError, DrevtError
from ..process_exit import leave
from .first_run import compile_if_cold
from .seeds import (
    Progress,
    RunSpec,
    SeedResult,
    aggregate,
    run_seeds,
    seeds_for,
    start_workers,
)
from ..sim.machine import Machine, machine_from_mapping
from ..sim.runtime import RunTimeModel, is_stochastic
from ..trace.options import read_options, resolve_trace_path
from ..tracking.bulk import RunRecord
from ..tracking.store import flatten
from ..tracking.helper import (
    TrackingError,
    TrackingService,
    start_helper,
    stop_helper,
)
from ..sim.workload import WorkloadSpec, apply_workload
from .plain_view import PlainView
from .naming import (
    description,
    reproduce_command,
    run_name,
    seed_run_name,
    source_tags,
    sweep_varying_keys,
)
from .sweep_checks import check_sweep
from .validate import check_config, raise_problems
from .workload_config import workload_spec

log = logging.getLogger("drevt_sweep")

LASSEN_NODES = 795  # the seeds' default machine when the trace does not state one
# Config sections that decide results; the rest is bookkeeping (paths, parallelism, tracking).
RESULT_SECTIONS = ("trace", "format", "timezone", "run_time", "policy", "system", "workload")
QUEUE_KEYS_FILE = "queue_keys.json"  # metric/param key -> queue name, where they differ

# SLURM sends SIGKILL 30 s (its default KillWait) after SIGTERM: mark the runs KILLED before.
KILL_WAIT_SECONDS = 20.0

# Set by the console script for the processes it starts (a joblib launcher's workers): tags
# every run, so that an interrupted sweep can close the runs its killed workers left open.
SWEEP_ID_ENV = "DREVT_SWEEP_ID"

_failures: list[str] = []  # configurations that failed in this process (sets the exit code)
# ran: whether any configuration started (bad options stop before that); store: the tracking
# store of a multirun whose configurations run on this machine, for the runs left RUNNING.
_state: dict = {"ran": False, "store": None}
_results: dict[str, dict] = {}  # job folder -> result, as written to its result.json
_marks: dict[str, float] = {}  # start-up instants (epoch seconds), copied into result.json


# ---------------------------------------------------------------- config -> plain objects
def _value(node):
    """Enum members come back from structured configs as Enums; we want their names."""
    return getattr(node, "value", node)


def run_spec(cfg: DictConfig, machine_nodes: int | None,
             workload: WorkloadSpec | None = None, queue_names=(), who=((), ())) -> RunSpec:
    """``queue_names``: the trace's, for ``policy=slurm``'s partition factors; ``who``: its
    (accounts, users), for the associations' shares and QOS factors."""
    rt = cfg.run_time
    total_nodes = cfg.system.total_nodes
    if total_nodes is not None and total_nodes < 1:
        raise ConfigError(f"system.total_nodes must be at least 1, got {total_nodes}")
    machine = system_machine(cfg.system)
    if machine is not None:
        total_nodes = machine.total_nodes
    priority, backfill = _value(cfg.policy.priority), _value(cfg.policy.backfill)
    options = policy_options(cfg.policy)
    if cfg.policy.name == "slurm":  # everything from system.slurm_conf
        priority, backfill, options["priority_params"] = slurm_policy(slurm_conf_of(cfg.system), queue_names)
    if backfill == "slurm":  # SchedulerParameters from the slurm.conf, policy.bf_* on top
        from ..sim.policies.slurm_backfill import check_backfill_params

        options["backfill_params"] = backfill_params(cfg.policy, slurm_conf_of(cfg.system))
        check_backfill_params(options["backfill_params"])
    assoc = associations_of(cfg.system)
    conf = slurm_conf_of(cfg.system)
    limits = assoc.enforced(conf.enforce if conf is not None else None) if assoc is not None else None
    if assoc is not None:
        if limits is not None and limits.has_limits() and backfill != "slurm":
            raise ConfigError(f"system.associations: association and QOS limits are enforced by Slurm's backfill "
                              f"(policy=slurm with SchedulerType=sched/backfill, or policy.backfill=slurm); "
                              f"backfill {backfill!r} would ignore them")
        explicit = [k for k in ("account_shares",) if cfg.policy.get(k)]
        if cfg.policy.get("user_shares"):  # the configuration's user shares win over sacctmgr's
            explicit.append("association_shares")
        options["priority_params"] = with_association_priority(options["priority_params"], assoc, *who,
                                                               explicit=explicit)
    return RunSpec(
        machine=machine,
        total_nodes=int(total_nodes or machine_nodes or LASSEN_NODES),
        priority=priority,
        backfill=backfill,
        compression=_value(cfg.policy.compression),
        replay=bool(cfg.policy.replay),
        run_time=_run_time_model(rt),
        enforce_limits=bool(cfg.system.enforce_limits),
        workload=workload or WorkloadSpec(),
        limits=limits,
        **options,
    )


def _run_time_model(rt) -> RunTimeModel:
    return RunTimeModel(mode=_value(rt.mode), distribution=_value(rt.distribution), scale=float(rt.scale),
                        stddev=float(rt.stddev), min_run_time=float(rt.min_run_time))


def system_machine(system) -> Machine | None:
    """The machine with partitions a ``system`` section describes (``partitions``, or a
    slurm.conf), or None (one pool)."""
    conf = slurm_conf_of(system)
    if conf is not None:
        try:
            return machine_from_mapping(conf.system)
        except ConfigError as exc:
            raise ConfigError(f"system.slurm_conf {system.slurm_conf}: {exc}") from None
    if system.get("partitions") is None:
        return None
    data = _container(system)
    try:
        return machine_from_mapping(data)
    except ConfigError as exc:
        raise ConfigError(f"system={system.name}: {exc}") from None


def _container(section) -> dict:
    """A config section as plain data of its own: a DictConfig resolved (enums as names), a
    resolved config's view (``PlainView``) copied, as callers may change what they get."""
    if isinstance(section, PlainView):
        return copy.deepcopy(section._data)
    return OmegaConf.to_container(section, resolve=True, enum_to_str=True)


def policy_options(policy: DictConfig) -> dict:
    """Estimates, backfill order, when predictions are made and a dynamic priority's parameters,
    checked up front."""
    from ..sim.estimates import check_estimate
    from ..sim.policies import DYNAMIC_PRIORITY_POLICIES, check_priority_params

    priority, backfill = _value(policy.priority), _value(policy.backfill)
    estimate, order = _value(policy.estimate), _value(policy.backfill_order)
    refresh = _value(policy.estimate_refresh)
    if not policy.replay:
        check_estimate(estimate, order, backfill, refresh)
    params = None
    if priority == "multifactor":
        plain = _container(policy)
        params = {key: plain[key] for key in ("weights", "max_age", "favor_small", "decay_half_life", "calc_period",
                                              "fairshare_by", "fairshare", "account_shares", "user_shares",
                                              "partition_priority", "charge_ended_jobs")}
    if priority in DYNAMIC_PRIORITY_POLICIES:
        check_priority_params(priority, params)
    return {"estimate": estimate, "backfill_order": order, "estimate_refresh": refresh, "priority_params": params}


def result_config(cfg: DictConfig, plain: dict | None = None) -> dict:
    """The resolved settings that decide results: hashed for resume, logged as params
    (``plain``: the whole config already resolved, :func:`resolved`)."""
    if plain is not None:
        return identity_settings({k: plain[k] for k in RESULT_SECTIONS})
    return identity_settings(
        {k: OmegaConf.to_container(cfg[k], resolve=True, enum_to_str=True) for k in RESULT_SECTIONS})


_YAML_PIECES: dict[tuple[str, str], str] = {}  # (top-level key, repr of its value) -> YAML


def config_yaml(plain: dict) -> str:
    """``OmegaConf.to_yaml(cfg, resolve=True)``, byte for byte, from the resolved plain config:
    each top-level section is dumped once per distinct value and the pieces joined (a block
    mapping's keys are written one after the other at column 0, so the text is the same; a
    sweep's configurations differ in a section or two, and the YAML dump was ~20 ms each)."""
    import yaml
    from omegaconf._utils import get_omega_conf_dumper

    def dump(data) -> str:
        return yaml.dump(data, default_flow_style=False, allow_unicode=True, sort_keys=False,
                         Dumper=get_omega_conf_dumper())

    if not plain or not all(isinstance(k, str) for k in plain):
        return dump(plain)
    parts = []
    for key, value in plain.items():
        piece_key = (key, repr(value))
        text = _YAML_PIECES.get(piece_key)
        if text is None:
            if len(_YAML_PIECES) >= 4096:  # bounded: a long sweep of ever-new values
                _YAML_PIECES.clear()
            text = _YAML_PIECES[piece_key] = dump({key: value})
        parts.append(text)
    return "".join(parts)


def configuration_label(hydra_cfg, choices: Mapping | None = None) -> str:
    """A short, readable name: the group choices, plus explicit overrides of result settings
    (bookkeeping such as paths, tracking or parallelism never appears in it). ``choices``:
    ``hydra_cfg.runtime.choices`` as a dict, when the caller has it."""
    choices = hydra_cfg.runtime.choices if choices is None else choices
    parts = [f"{g}={choices[g]}" for g in ("trace", "policy", "run_time") if g in choices]
    for group in ("system", "workload"):
        if choices.get(group) not in (None, "trace", "none"):
            parts.append(f"{group}={choices[group]}")
    overrides = []
    for override in hydra_cfg.overrides.task:
        key = override.split("=", 1)[0].lstrip("+~")
        if "." in key and key.split(".", 1)[0] in RESULT_SECTIONS + ("workload",):
            overrides.append(override)
    return " ".join(parts + sorted(overrides))


def _n_jobs(cfg: DictConfig) -> int:
    """One level of process parallelism per machine: under a Hydra launcher that runs several
    configurations on this machine (joblib, submitit_local), seeds run in turn. A SLURM job
    owns its allocation (cpus_per_task), so its seeds fan out over those cores."""
    launcher = str(HydraConfig.get().launcher.get("_target_", ""))
    if "SlurmLauncher" in launcher:
        return int(cfg.parallel.n_jobs)  # -1 = the cores SLURM gave this job
    if "joblib" in launcher.lower() or "submitit" in launcher.lower():
        return 1
    return int(cfg.parallel.n_jobs)


def _backend_options(cfg: DictConfig) -> dict:
    """Where a cluster backend sends the seeds (null: a local cluster of n_jobs workers)."""
    backend = _value(cfg.parallel.backend)
    address = {"dask": cfg.parallel.dask_address, "ray": cfg.parallel.ray_address}.get(backend)
    return {"address": str(address) if address is not None else None}


# ---------------------------------------------------------------- tracking
def _tracker(cfg: DictConfig, wait: bool = False) -> TrackingService | None:
    """The configuration's tracking store, opening in the helper (``wait``: until it is open)."""
    if not cfg.tracking.enabled:
        stop_helper()  # started early in case it was needed: it is not
        return None
    from ..tracking.store import embedded_uri

    uri = cfg.tracking.uri or embedded_uri(cfg.paths.output_root)
    from ..tracking.liveness import hold

    hold(uri, os.environ.get(SWEEP_ID_ENV, ""))  # before any run carries this sweep's id
    artifacts = cfg.tracking.artifact_root
    if artifacts is None and not cfg.tracking.uri:
        artifacts = str(Path(cfg.paths.output_root) / "mlartifacts")
    # A tracking server (tracking.uri) keeps artifacts where it was told to (clients upload
    # them through it), so every machine of a cluster sees the same ones.
    opened = TrackingService(uri, cfg.tracking.experiment, artifacts)
    if wait:
        opened.wait()
    return opened


# ---------------------------------------------------------------- one configuration
@dataclass
class Configuration:
    """One configuration on its way through a sweep: what :func:`prepare_configuration` found
    (the trace, the spec, the seeds still to run), for :func:`complete_configuration`. The
    Hydra job path runs the three steps in a row; the sweep engine (``batch.py``) prepares many,
    runs all their seeds as one task list, then completes each."""

    cfg: DictConfig
    hydra_cfg: DictConfig
    out_dir: Path
    label: str
    name: str
    settings: dict
    result: dict
    started: float
    phase: float
    tracker: TrackingService | None = None
    parent_id: str | None = None
    params: dict = field(default_factory=dict)
    jobs: object = None
    spec: RunSpec | None = None
    path: Path | None = None
    chash: str | None = None
    seeds: list[int] = field(default_factory=list)
    reused: dict = field(default_factory=dict)
    todo: list[int] = field(default_factory=list)
    keep: int | None = None  # the seed whose schedule is kept (its files and figures)
    figures: bool = True  # per-configuration figures (``figures=``, batch.py decides for a sweep)
    remember: bool = True  # keep the result in memory after result.json is written
    # The configuration's own run is written with its seeds' at completion, in one transaction
    # (the sweep engine, which waits for the store once per wave), not opened in prepare.
    deferred: bool = False
    warming: object = None
    plain: dict | None = None  # the config resolved once (settings, config.yaml)
    sweep_tagged: bool = False  # its run was written with the sweep run's id as a tag
    runs_sent: bool = False  # its deferred runs went to the store (an interrupt then ends it FINISHED)

    @property
    def timings(self) -> dict:
        return self.result["timings"]

    @property
    def marks(self) -> dict:
        return self.result["marks"]


def run_configuration(cfg: DictConfig) -> dict:
    """Run one configuration over its seeds, track it, and return its ``result.json`` content."""
    opening = _state.pop("store_opening", False)  # a single run's store, still opening
    if not opening:
        store_ready()  # a multirun's store, opened in on_multirun_start
    try:
        return _run_configuration(cfg, opening)
    except SystemExit:
        if opening:  # its store did not open after all: exit 2, and no folder left behind
            _discard_unused_run_dir()
        raise


def _run_configuration(cfg: DictConfig, opening: bool) -> dict:
    run = begin_configuration(cfg, HydraConfig.get())
    # Worker processes start while the store opens and the trace is read (a single run's
    # started in on_run_start).
    run.warming = _state.pop("warming", None) or _start_workers(cfg, _n_jobs(cfg))
    seeds_done = False
    with configuration_errors(run, final=False):
        try:
            prepare_configuration(run)
        finally:
            _tell_workers(run, _n_jobs(cfg))
        if run.warming is not None:
            run.warming.join()
        run.marks["workers"] = time.time()
        importing = None
        if run.figures and run.keep is not None:  # its figures' modules, while the seeds run
            from ..report.figure_child import import_in_background

            importing = import_in_background()
        # A store that does not work stops the seeds as soon as it is found out (a single
        # run's store that did not open: exit 2). (The helper
        # keeps its priority: with the seed runs written in one transaction it has nothing to
        # do while the seeds run, and lowered to nice 10 it was starved at the end on a shared
        # machine -- 1-7 s of waiting for it, against 0.1 s at normal priority, measured.)
        fresh = _run_todo(run, store_failed if opening else None)
        if importing is not None:
            importing.join()  # (before the figures' child is forked)
        seeds_done = True
    if not seeds_done:
        return run.result  # failed or interrupted: result.json written
    if opening:
        store_ready()  # before anything is written from the seeds
        run.marks["store_after_seeds"] = time.time()
    with configuration_errors(run, final=True):
        complete_configuration(run, fresh)
    return run.result


def _start_workers(cfg: DictConfig, n_jobs: int):
    """``seeds.start_workers`` for a configuration of several seeds (None for one: a
    deterministic run-time model runs one seed whatever ``replicates`` says, as the default
    run does, and two workers importing the simulator beside it took the cores it runs on)."""
    if cfg.replicates <= 1:
        return None
    shaking = float(cfg.workload.get("shake", 0.0) or 0.0) > 0
    if not shaking and (cfg.policy.replay or not is_stochastic(_run_time_model(cfg.run_time))):
        return None
    backfill = None if cfg.policy.replay else _value(cfg.policy.backfill)
    # (a multirun whose jobs Hydra hands out one by one -- a swept hydra.* key -- may have
    # started the pool before composing: joined first, never two threads driving it)
    _state["work"] = work = Future()  # the kernel is loaded once the trace says it pays
    return start_workers(n_jobs, _value(cfg.parallel.backend), backfill,
                         after=_state.pop("early_workers", None), work=work)


def _tell_workers(run=None, n_jobs: int = 1) -> None:
    """Tell the workers ``_start_workers`` is starting what they will run, once the trace is
    read (``run`` prepared): the jobs of a seed and about how many seeds each runs; ``None``
    (nothing will run, or the preparation failed) lets the start end without loading the
    kernel. Always called before that start is joined: it waits for this."""
    work = _state.pop("work", None)
    if work is None or work.done():
        return
    jobs, seeds = getattr(run, "jobs", None), getattr(run, "seeds", None)
    if jobs is None or not seeds:
        work.set_result(None)
        return
    from .backends import local_workers

    work.set_result((len(jobs), -(-len(seeds) // local_workers(n_jobs))))


def begin_configuration(cfg: DictConfig, hydra_cfg, figures: bool | None = None,
                        plain: dict | None = None, choices: dict | None = None) -> Configuration:
    """A configuration's folder, names and result skeleton (nothing that can fail on input).
    ``plain``: the config already resolved (the sweep engine's ``Composer.resolved``);
    ``choices``: its group choices as a dict (``Composer.plain_choices``)."""
    _state["ran"] = True
    out_dir = Path(hydra_cfg.runtime.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    choices = dict(hydra_cfg.runtime.choices if choices is None else choices)
    label = configuration_label(hydra_cfg, choices)
    name = _run_name(cfg, hydra_cfg, choices)
    result: dict = {"label": label, "name": name, "status": "FAILED",
                    "choices": choices, "parent_run_id": None,
                    "drevt_version": __version__}
    result["timings"] = {}  # seconds per phase, for the sweep benchmark
    # Wall-clock instants (epoch seconds) of the phase ends, from the console script's start:
    # with the benchmark's own start and end they give every phase, Hydra's included.
    result["marks"] = {**_marks, "configuration": time.time()}
    started = time.perf_counter()
    if figures is None:  # one configuration of its own (a Hydra job)
        from .figure_choice import figures_wanted

        figures = figures_wanted(str(cfg.figures), 1)
    if plain is None:
        plain = resolved(cfg)
    return Configuration(cfg, hydra_cfg, out_dir, label, name, result_config(cfg, plain), result,
                         started, started, figures=figures, plain=plain)


def _read(run: Configuration, *path: str):
    """A key of the configuration, from its resolved config where there is one: its
    interpolations (``paths.*``) are not parsed again (~0.5 ms each)."""
    value = run.cfg if run.plain is None else run.plain
    for key in path:
        value = value[key]
    return value


def _probe(jobs, wspec: WorkloadSpec, seed: int) -> tuple:
    """What the first seed's workload transform tells the spec -- ``(machine nodes, queue
    names, (group names, user names))`` -- and its report, remembered for the last few (table,
    spec, seed): a sweep's configurations mostly share them, and the transform copies the table
    (0.2 ms of a configuration's ~4 on KTH-SP2's first 30 days). The report is copied: each
    configuration's result holds its own."""
    import weakref

    def transform() -> tuple:
        probe, _, report = apply_workload(jobs, wspec, seed)
        return (probe.meta.machine_nodes, probe.queue_names, (probe.group_names, probe.user_names)), report

    key = (id(jobs), wspec, seed)
    try:
        hit = _PROBES.get(key)
    except TypeError:  # (a spec holding something unhashable: not remembered)
        return transform()
    if hit is None or hit[0]() is not jobs:  # (an id reused by a new table: computed again)
        if len(_PROBES) >= 8:
            _PROBES.clear()
        hit = _PROBES[key] = (weakref.ref(jobs), *transform())
    return hit[1], dict(hit[2])


_PROBES: dict = {}  # (id(table), spec, seed) -> (weak reference to the table, facts, report)


def prepare_configuration(run: Configuration, load=None, finished: dict | None = None) -> None:
    """Open its parent run, read the trace, make the spec and choose the seeds to run
    (``resume``: those not already FINISHED; ``finished``, the sweep engine's one lookup).
    ``load(path, options, cache_dir)`` reads the trace (the sweep engine shares one table
    among its configurations)."""
    cfg, hydra_cfg, result = run.cfg, run.hydra_cfg, run.result
    if run.tracker is None:  # (the sweep engine shares one among its configurations)
        run.tracker = _tracker(cfg)  # opens in the helper while the trace is read
    tracker = run.tracker
    from ..tracking.store import TAG_KIND, TAG_SWEEP_DIR, config_hash

    run.params = params = _setting_params(run.settings)
    if tracker and not run.deferred:
        command = reproduce_command(list(hydra_cfg.overrides.task))
        run.parent_id = tracker.start_run(run.name, {
            TAG_KIND: "configuration", TAG_SWEEP_DIR: str(run.out_dir.parent), **_sweep_tag(),
            **_run_tags(cfg, hydra_cfg, run.label, description(command)),
        }, _state.get("sweep_run"))
        # The settings go first, so that even a configuration failing early shows them.
        tracker.log(run.parent_id, params=params)

    if load is None:
        from ..trace.cache import load_trace as load

    # The settings read from the resolved config where there is one (attribute reads of the
    # OmegaConf tree were half of preparing a configuration; the same values, enums as names).
    view = cfg if run.plain is None else PlainView(run.plain)
    run.path = path = resolve_trace_path(str(_read(run, "trace", "path")), _read(run, "paths", "root"))
    run.jobs = jobs = load(path, read_options(view), cache_dir=_read(run, "paths", "cache_dir"))
    run.marks["trace"] = time.time()
    wspec = workload_spec(view.workload, view.system.total_nodes)
    # The first seed's transform: what each transform kept, moved or dropped, and the
    # machine size after a job-size rescaling.
    (machine_nodes, queues, who), workload_report = _probe(jobs, wspec, int(view.seed))
    run.spec = spec = run_spec(view, machine_nodes, wspec, queues, who)
    check_partitions(view, jobs, spec.machine)
    if view.policy.name == "slurm":  # what the slurm.conf chose (policy.priority is a placeholder)
        chosen = {"slurm.priority": spec.priority, "slurm.backfill": spec.backfill,
                  "slurm.fairshare": (spec.priority_params or {}).get("fairshare")}
        result["slurm_policy"] = chosen
        params.update(chosen)
        if tracker and not run.deferred:
            tracker.log(run.parent_id, params=chosen)
    result["workload_report"] = workload_report
    result["timezone"] = jobs.meta.timezone  # the zone used (the trace's own, or the user's)
    if "timezone.name" not in params:  # null: the trace's zone, known now
        params["timezone.name"] = jobs.meta.timezone
        if tracker and not run.deferred:
            tracker.log(run.parent_id, params={"timezone.name": jobs.meta.timezone})
    if tracker and not run.deferred:
        tracker.log_trace_input(run.parent_id, _trace_name(cfg, path), jobs.meta.checksum, path,
                                len(jobs))
    run.chash = chash = config_hash({"settings": run.settings, "checksum": jobs.meta.checksum})
    run.seeds = seeds = seeds_for(spec, int(view.seed), int(view.replicates))
    result.update(
        config_hash=chash,
        trace_checksum=jobs.meta.checksum,
        total_nodes=spec.total_nodes,
        jobs=len(jobs),
        seeds=seeds,
    )
    _write_rejects(jobs, run.out_dir)
    run.marks["trace_prepared"] = time.time()
    run.phase = _lap(run.timings, "read", run.phase)
    _choose_seeds(run, finished)


def release_config(run: Configuration, choices: dict | None = None) -> None:
    """A prepared configuration of the sweep engine lets go of its OmegaConf trees: what its
    completion, a wave later, reads of them (``seed``, ``trace.name``; Hydra's task overrides
    and group choices) it reads from plain data (``plain_view.py`` says why); the ``hydra``
    node is then the next job's (``Composer.run_job(share_hydra=True)``). Not with
    per-configuration figures, which read the whole config. ``choices``: the group choices as a
    dict, when the caller has them (``Composer.plain_choices``)."""
    if run.figures:
        return
    hydra_cfg = run.hydra_cfg
    run.hydra_cfg = PlainView({"overrides": {"task": list(hydra_cfg.overrides.task)},
                               "runtime": {"choices": choices if choices is not None
                                           else dict(hydra_cfg.runtime.choices)}})
    if run.plain is not None:
        run.cfg = PlainView(run.plain)


def complete_configuration(run: Configuration, fresh: list[SeedResult]) -> None:
    """Aggregate, write the outputs and figures, and close the runs: ``result`` is final."""
    cfg, result, tracker, parent_id = run.cfg, run.result, run.tracker, run.parent_id
    run.phase = _lap(run.timings, "seeds", run.phase)
    run.marks["seeds"] = time.time()
    results = sorted(list(run.reused.values()) + list(fresh), key=lambda r: r.seed)
    ok = [r for r in results if r.ok]
    failed = [r for r in results if not r.ok]
    metrics = aggregate(results, stochastic=run.spec.stochastic)
    result.update(
        status="FINISHED" if not failed else "FAILED",
        metrics=metrics,
        reused_seeds=sorted(run.reused),
        failed_seeds=[{"seed": r.seed, "error": r.error} for r in failed],
        seconds=time.perf_counter() - run.started,
    )
    if tracker and not run.deferred:  # written by the helper while the outputs and figures are made here
        _log_seed_runs(tracker, parent_id, cfg, run.jobs, run.spec, run.chash, run.label, results,
                       run.reused, result, run.params, run.path, run.hydra_cfg)
    draw = _figure_drawer(run.out_dir, run.spec, ok, cfg) if run.figures else None
    child = None
    if draw is not None and not run.deferred:  # a single run: drawn beside its outputs
        from ..report.figure_child import FiguresInChild

        child = FiguresInChild.start(draw)
    _write_outputs(run.out_dir, cfg, run.jobs, ok, result, run.plain)
    run.phase = _lap(run.timings, "outputs", run.phase)
    run.marks["outputs"] = time.time()
    figures = _figures_of(child, draw, run.timings)
    run.phase = _lap(run.timings, "figures", run.phase)
    run.marks["figures"] = time.time()
    if tracker and run.deferred:  # the engine waits for the store, once per wave
        _log_configuration_runs(run, results, figures, failed)
    elif tracker:
        _log_artifacts(tracker, parent_id, run.out_dir, figures, result)
        tracker.wait()  # raises the store's first error, if any
        result["parent_run_id"] = tracker.run_id(parent_id)
        run.phase = _lap(run.timings, "tracking_wait", run.phase)  # all the sweep waited for MLflow
        run.marks["tracking"] = time.time()
    if failed:
        raise _SeedsFailed(f"{len(failed)} of {len(results)} seeds failed: "
                           + "; ".join(f"seed {r.seed}: {r.error.splitlines()[0]}" for r in failed))
    log.info("%s: %d seeds in %.1f s", run.name, len(results), result["seconds"])


@contextlib.contextmanager
def configuration_errors(run: Configuration, final: bool):
    """A failure fails this configuration only (FAILED everywhere, one line in the log); an
    interrupt marks its runs KILLED and goes on up. ``final``: the configuration ends here
    (or when anything fails): ``result.json`` is written."""
    ended = final
    try:
        yield
    except (DrevtError, _SeedsFailed) as exc:
        ended = True
        fail_configuration(run, str(exc))
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP (interrupts.py)
        ended = True
        kill_configuration(run, exc)
        raise
    except OSError as exc:  # a full disk, a read-only or vanished folder, a quota
        ended = True
        fail_configuration(run, _os_error(exc), details=traceback.format_exc())
    except TrackingError as exc:  # the store failed while writing: keep its own traceback
        ended = True
        fail_configuration(run, f"tracking store: {exc}", details=exc.details)
    except Exception as exc:  # a dead worker, a full disk, a bug: fail this configuration only
        from ..errors import describe

        ended = True
        fail_configuration(run, describe(exc), details=traceback.format_exc())
    finally:
        if ended:
            write_result(run)


def fail_configuration(run: Configuration, message: str, details: str | None = None) -> None:
    """FAILED everywhere: result.json, the log, and its MLflow run (a deferred configuration
    that failed before its run was written gets one now, FAILED)."""
    if run.deferred and run.tracker and run.parent_id is None:
        from ..tracking.store import TAG_KIND, TAG_SWEEP_DIR

        command = reproduce_command(list(run.hydra_cfg.overrides.task))
        tags = {TAG_KIND: "configuration", TAG_SWEEP_DIR: str(run.out_dir.parent), **_sweep_tag(),
                **_run_tags(run.cfg, run.hydra_cfg, run.label, description(command))}
        try:
            run.parent_id = run.tracker.log_runs([RunRecord(
                run.name, tags, params=run.params or _setting_params(run.settings),
                status="FAILED", parent_id=_state.get("sweep_run"))])[0]
        except Exception as exc:  # noqa: BLE001 - a broken store must not hide the error
            log.error("could not record the error in the tracking store: %s", exc)
    _record_failure(run.result, run.label, message, run.tracker, run.parent_id, run.out_dir,
                    details=details)


def kill_configuration(run: Configuration, exc: BaseException) -> None:
    """An interrupted configuration: KILLED in its result and in the store (every run of it
    still open), before SLURM's KillWait is up."""
    run.result.update(status="KILLED", error=f"interrupted ({signal_name(exc)})")
    if run.tracker:
        try:
            # Finished runs queued but not sent belong to configurations an interrupt kills
            # (the sweep engine's batch): never written, rather than FINISHED beside a KILLED result.
            run.tracker.discard_queued()
            run.tracker.finish_open_runs("KILLED")  # the parent and any seed run in flight
            run.tracker.wait(timeout=KILL_WAIT_SECONDS)
        except Exception as error:  # noqa: BLE001 - the interrupt is what matters
            log.error("could not mark the runs KILLED: %s", error)


def write_result(run: Configuration) -> None:
    """``result.json`` (kept in memory too, should a full disk refuse it)."""
    result, tracker, parent_id = run.result, run.tracker, run.parent_id
    if tracker and parent_id and result["parent_run_id"] is None:
        try:
            result["parent_run_id"] = tracker.run_id(parent_id)
        except Exception:  # noqa: BLE001 - an interrupted or broken helper
            pass
    if run.sweep_tagged and result["parent_run_id"]:
        _state.setdefault("tagged_parents", set()).add(result["parent_run_id"])
    result["marks"]["result"] = time.time()
    _results[str(run.out_dir)] = result  # for the summary, should result.json not be written
    try:
        (run.out_dir / "result.json").write_text(json.dumps(result, indent=2, default=str))
    except OSError as exc:
        log.error("%s: %s", run.label, _os_error(exc, run.out_dir / "result.json"))
    else:
        if not run.remember:  # a big sweep: the summary reads the file, not memory
            _results.pop(str(run.out_dir), None)


def keep_finished(result: dict, out_dir: Path, remember: bool = True) -> None:
    """A configuration that ``resume=true`` found done (``resume.py``): its ``result.json``
    rewritten with its seeds reused, nothing else touched. Its runs stay under the sweep run
    that ran them (not tagged again: 10,000 tags cost minutes)."""
    _state["ran"] = True
    if result.get("parent_run_id"):
        _state.setdefault("tagged_parents", set()).add(result["parent_run_id"])
    result.setdefault("marks", {})["resumed"] = time.time()
    _results[str(out_dir)] = result
    path = out_dir / "result.json"
    spare = out_dir / "result.json.tmp"
    try:  # the earlier file stays whole until the new one is
        spare.write_text(json.dumps(result, indent=2, default=str))
        os.replace(spare, path)
    except OSError as exc:
        log.error("%s: %s", result.get("label", out_dir.name), _os_error(exc, path))
        with contextlib.suppress(OSError):
            spare.unlink()
    else:
        if not remember:
            _results.pop(str(out_dir), None)


def _os_error(exc: OSError, path=None) -> str:
    """One line for a file that could not be written (a full disk, a read-only or vanished
    folder, a quota): ``cannot write PATH: No space left on device``. ``path`` names the file
    when the error does not (a full disk is often found at write or close, not at open)."""
    name = exc.filename or path
    where = f" {name}" if name else ""
    return f"cannot write{where}: {exc.strerror or exc}"


def _sweep_tag() -> dict[str, str]:
    from ..tracking.store import TAG_SWEEP_ID

    sweep_id = os.environ.get(SWEEP_ID_ENV)
    return {TAG_SWEEP_ID: sweep_id} if sweep_id else {}


def _kill_runs_left_running() -> None:
    """After an interrupt: the configurations that ran in other processes of this machine (a
    joblib launcher's workers, killed by joblib) may not have closed their runs; close them."""
    if _state["store"] is None or not os.environ.get(SWEEP_ID_ENV):
        return
    try:
        killed = TrackingService(*_state["store"]).kill_running(
            os.environ[SWEEP_ID_ENV], timeout=KILL_WAIT_SECONDS)
        if killed:
            log.info("%d run(s) left RUNNING by interrupted workers marked KILLED", killed)
    except Exception as exc:  # noqa: BLE001 - the interrupt is what matters
        log.error("could not mark the runs KILLED: %s", exc)


def _lap(timings: dict, name: str, since: float) -> float:
    now = time.perf_counter()
    timings[name] = now - since
    return now


def _record_failure(result, label, message, tracker, parent_id, out_dir, details=None) -> None:
    """Mark a configuration FAILED everywhere: result.json, the log, and its MLflow run."""
    result.update(status="FAILED", error=message)
    _failures.append(label)
    log.error("%s: %s", label, message)
    if tracker and parent_id and _run_exists(tracker, parent_id):
        _fail_run(tracker, parent_id, message + (f"\n\n{details}" if details else ""), out_dir)


def _run_exists(tracker, handle: str) -> bool:
    """Whether a run was created (not when the store itself failed to open)."""
    try:
        tracker.wait()  # what was sent before the failure
    except Exception as exc:  # noqa: BLE001 - reporting goes on
        log.error("tracking store: %s", exc)
    try:
        return tracker.run_id(handle) is not None
    except Exception:  # noqa: BLE001 - a dead helper
        return False


class _SeedsFailed(Exception):
    """Some seeds failed; the others were still run, tracked and summarised."""


def _choose_seeds(run: Configuration, finished: dict | None = None) -> None:
    """With ``resume=true``, reuse seeds already FINISHED in the store; the rest are to run.
    ``finished`` (run key -> metrics): the sweep engine's one lookup for the whole sweep."""
    from ..tracking.store import run_key

    run.reused = {}
    if run.cfg.resume and run.tracker:
        if finished is None:
            finished = run.tracker.finished_seed_runs(run.chash)
        for seed in run.seeds:
            metrics = finished.get(run_key(run.chash, run.jobs.meta.checksum, seed))
            if metrics is not None:
                run.reused[seed] = SeedResult(seed, metrics=metrics)
    run.todo = [s for s in run.seeds if s not in run.reused]
    run.keep = run.todo[0] if (run.todo and run.cfg.tracking.log_schedule and run.figures) else None


def _run_todo(run: Configuration, store_failed=None) -> list[SeedResult]:
    """The configuration's seeds still to run, fanned out with joblib (stopped by a store
    that failed: ``store_failed`` first, a single run's check that its store opened)."""
    cfg, tracker = run.cfg, run.tracker
    if not run.todo:
        if store_failed is not None:
            store_failed()
        return []
    checks = [c for c in (store_failed, tracker.raise_if_failed if tracker else None) if c]

    def stop_if() -> None:
        for check in checks:
            check()

    progress = Progress(len(run.todo), run.label, enabled=bool(cfg.progress))
    return run_seeds(
        run.jobs, run.spec, run.todo, n_jobs=_n_jobs(cfg), backend=_value(cfg.parallel.backend),
        keep_schedule_of=run.keep, progress=progress, backend_options=_backend_options(cfg),
        stop_if=stop_if if checks else None,
    )


def _write_rejects(jobs, out_dir: Path) -> None:
    """``rejects.csv`` and, where a queue name is not its own metric key, ``queue_keys.json``."""
    from ..files import write_file
    from ..names import queue_key_map
    from ..trace.table import write_rejects

    if jobs.meta.rejects:
        write_rejects(str(out_dir / "rejects.csv"), jobs.meta.rejects)
    excluded = [r[len("queue:"):] for r in jobs.meta.excluded if r.startswith("queue:")]
    mapping = queue_key_map([*jobs.queue_names, *excluded])
    if mapping:
        write_file(out_dir / QUEUE_KEYS_FILE, (json.dumps(mapping, indent=2) + "\n").encode())


def _write_outputs(out_dir: Path, cfg: DictConfig, jobs, ok: list[SeedResult], result: dict,
                   plain: dict | None = None) -> None:
    from ..files import write_file
    from ..outputs import write_per_user_csv, write_schedule_csv
    from .seed_csv import seed_metrics_csv

    text = config_yaml(plain) if plain is not None else OmegaConf.to_yaml(cfg, resolve=True)
    # Through files.write_file: never onto the trace (e.g. one kept in a job folder).
    write_file(out_dir / "config.yaml", text.encode())
    rows = [{"seed": r.seed, **r.metrics} for r in ok]
    write_file(out_dir / "seed_metrics.csv", seed_metrics_csv(rows).encode())  # (pandas' text)
    for r in ok:
        if r.schedule is not None:
            # gzip: a KTH-SP2 schedule is 1.6 MB as text, 0.4 MB compressed
            write_schedule_csv(out_dir / f"schedule_seed{r.seed}.csv.gz", r.jobs, r.schedule)
            if len(r.jobs.user_names):
                write_per_user_csv(out_dir / "per_user.csv", r.jobs, r.schedule)


def _figure_drawer(out_dir: Path, spec: RunSpec, ok: list[SeedResult], cfg):
    """What draws the PNG figures of the kept seed's schedule, with the machine's own history
    as the baseline when the run times are the recorded ones; None when no schedule was kept
    (``tracking.log_schedule=false``, or every seed reused by resume).

    A single run draws them in a forked child while it writes its outputs (``report/figure_child.py``);
    the sweep engine here, after the outputs (drawing them in an idle loky worker was tried and
    measured slower on the 2 shared cores: the worker imports pandas and matplotlib first,
    benchmarks/RESULTS.md)."""
    kept = next((r for r in ok if r.schedule is not None), None)
    if kept is None:
        return None

    def draw() -> list[Path]:
        from ..report.figures import configuration_figure_files, schedule_frame
        from ..report.html import CONFIGURATION_FIGURE_DIR
        from ..sim.engine import historical_baseline

        recorded = not spec.replay and spec.run_time.mode == "actual"
        baseline = historical_baseline(kept.jobs, spec.total_nodes) if recorded else None
        return configuration_figure_files(
            out_dir / CONFIGURATION_FIGURE_DIR, schedule_frame(kept.jobs, kept.schedule),
            int(kept.schedule.total_nodes),
            schedule_frame(kept.jobs, baseline) if baseline is not None else None,
            label=f"{cfg.policy.name} · {cfg.run_time.name}",
            seed_metrics=[r.metrics for r in ok], seed=kept.seed)

    return draw


def _figures_of(child, draw, timings: dict) -> list[Path]:
    """The figures' paths (``timings["figures_cpu"]``: their CPU seconds), from the child
    drawing them or drawn here; drawing them never fails the configuration."""
    if draw is None:
        return []
    cpu = time.process_time()
    try:
        if child is not None:
            paths, child_cpu = child.result()
            cpu -= child_cpu or 0.0
            return paths
        return draw()
    except Exception as exc:  # noqa: BLE001 - a figure is not worth a failed configuration
        log.warning("figures not drawn: %s", exc)
        return []
    finally:
        timings["figures_cpu"] = time.process_time() - cpu


def _log_seed_runs(tracker, parent_id, cfg, jobs, spec, chash, label, results, reused,
                   result, settings: dict, path, hydra_cfg) -> None:
    """Parent: params and aggregates. Children: one per newly run seed, named ``seed N``,
    with the configuration's settings too (so seeds filter by policy) and the trace as input."""
    from ..tracking.store import TAG_CONFIG_HASH

    params = _configuration_params(cfg, jobs, spec, results, result)
    tracker.log(parent_id, metrics=result["metrics"], params=params,
                tags={TAG_CONFIG_HASH: chash, "trace_checksum": jobs.meta.checksum})
    tracker.log_runs(_seed_records(parent_id, cfg, jobs, spec, chash, label, results, reused,
                                   settings, path, hydra_cfg))  # one command, one transaction


def _log_configuration_runs(run: Configuration, results, figures: list[Path], failed) -> None:
    """The configuration's run and its seeds' in one command (one transaction in an SQL
    store), its files copied beside; nested under the sweep's run."""
    from ..tracking.store import TAG_CONFIG_HASH, TAG_KIND, TAG_SWEEP_DIR, TAG_SWEEP_RUN

    cfg, jobs = run.cfg, run.jobs
    command = reproduce_command(list(run.hydra_cfg.overrides.task))
    tags = {TAG_KIND: "configuration", TAG_SWEEP_DIR: str(run.out_dir.parent), **_sweep_tag(),
            **_run_tags(cfg, run.hydra_cfg, run.label, description(command)),
            TAG_CONFIG_HASH: run.chash, "trace_checksum": jobs.meta.checksum}
    params = {**run.params, **_configuration_params(cfg, jobs, run.spec, results, run.result)}
    if _state.get("sweep_run"):  # (its MLflow id, in the helper): no tagging at the end
        tags[TAG_SWEEP_RUN] = _state["sweep_run"]
        run.sweep_tagged = True
    parent = RunRecord(run.name, tags, params=params, metrics=run.result["metrics"],
                       status="FAILED" if failed else "FINISHED", parent_id=_state.get("sweep_run"),
                       dataset=(_trace_name(cfg, run.path), jobs.meta.checksum, str(run.path), len(jobs)),
                       artifacts=tuple(_artifact_files(run.out_dir, figures)))
    seeds = _seed_records(None, cfg, jobs, run.spec, run.chash, run.label, results, run.reused,
                          run.params, run.path, run.hydra_cfg)
    seeds = [replace(record, parent_index=0) for record in seeds]
    run.parent_id = run.tracker.log_runs([parent] + seeds, batch=True)[0]  # (a wave's: one command)


def _configuration_params(cfg, jobs, spec, results, result) -> dict:
    """A configuration run's params beyond its settings: the machine, the trace, the seeds."""
    params = {
        "total_nodes": spec.total_nodes,
        "trace_checksum": jobs.meta.checksum,
        "trace_mode": jobs.meta.mode,
        "jobs": len(jobs),
        "seed": int(cfg.seed),
        "n_seeds": len(results),
        "drevt_version": __version__,
    }
    from ..names import QueueKeys, excluded_key, run_queue_keys

    if jobs.meta.header_timezone:  # what the file says, beside the zone used (timezone.name)
        params["trace_timezone_header"] = jobs.meta.header_timezone
    for name, count in jobs.meta.excluded.items():  # queue names made valid, unique, stable
        params[f"excluded.{excluded_key(name, run_queue_keys(jobs))}"] = count
    # keyed as the partition's metrics are (partition/<key>/...): a slurm.conf pool of partitions
    # sharing nodes is named "a+b", which MLflow refuses in a key
    part_key = QueueKeys(spec.machine.partition_names if spec.machine is not None else ())
    for part in (spec.machine.partitions if spec.machine is not None else ()):
        for field in ("nodes", "cores", "gpus", "memory", "sharing"):
            params[f"partition.{part_key(part.name)}.{field}"] = getattr(part, field)
        params[f"partition.{part_key(part.name)}.queues"] = ",".join(part.queues)
    for name, value in (result.get("workload_report") or {}).items():
        params[f"workload_report.{name}"] = value
    return params


def _seed_records(parent_id, cfg, jobs, spec, chash, label, results, reused, settings: dict, path,
                  hydra_cfg) -> list[RunRecord]:
    """One finished run per newly run seed, named ``seed N``, with the configuration's settings
    too (so seeds filter by policy) and the trace as input."""
    from ..tracking.store import TAG_CONFIG_HASH, TAG_ERROR, TAG_KIND, TAG_RUN_KEY, run_key

    overrides = list(hydra_cfg.overrides.task)
    dataset = (_trace_name(cfg, path), jobs.meta.checksum, str(path), len(jobs))
    common = {"total_nodes": spec.total_nodes, "trace_checksum": jobs.meta.checksum,
              "drevt_version": __version__}
    children = []
    for r in results:
        if r.seed in reused:
            continue
        command = reproduce_command(overrides, seed=r.seed)
        tags = {TAG_KIND: "seed", TAG_CONFIG_HASH: chash,
                TAG_RUN_KEY: run_key(chash, jobs.meta.checksum, r.seed), **_sweep_tag(),
                **_run_tags(cfg, hydra_cfg, label, description(command))}
        if not r.ok:
            tags[TAG_ERROR] = r.error[:5000]
        children.append(RunRecord(
            seed_run_name(r.seed), tags, params={**settings, "seed": r.seed, **common},
            metrics=r.metrics, status="FINISHED" if r.ok else "FAILED", parent_id=parent_id,
            dataset=dataset))
    return children


def _run_name(cfg: DictConfig, hydra_cfg, choices: Mapping) -> str:
    """A parent run's name: what varies across its sweep (``easy · lognormal``)."""
    from hydra.types import RunMode

    varying = ()
    if hydra_cfg.mode == RunMode.MULTIRUN:
        if hydra_cfg.sweep._get_node("subdir")._value() == "${hydra.job.num}":
            # (the job's folder is in the sweep's: no need to parse sweep.dir's interpolation)
            sweep_dir = str(Path(hydra_cfg.runtime.output_dir).parent)
        else:
            sweep_dir = str(Path(hydra_cfg.sweep.dir).absolute())
        varying = _varying_keys(sweep_dir)
    return run_name(cfg, choices, varying)


def _varying_keys(sweep_dir: str) -> tuple[str, ...]:
    """``sweep_varying_keys`` read once per sweep, not once per configuration (it parses the
    whole ``multirun.yaml``); read again should that file change."""
    path = Path(sweep_dir) / "multirun.yaml"
    try:
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        stamp = None
    key = (sweep_dir, stamp)
    if key not in _varying_cache:
        _varying_cache.clear()
        _varying_cache[key] = sweep_varying_keys(sweep_dir)
    return _varying_cache[key]


_varying_cache: dict = {}


def _trace_name(cfg: DictConfig, path: Path) -> str:
    """The dataset's name: the catalogue's (``kth_sp2``), or the file's for your own trace."""
    return Path(path).name if cfg.trace.name == "custom" else str(cfg.trace.name)


def _setting_params(settings: dict) -> dict:
    """The result settings as MLflow params; a null time zone (the trace's own) is logged once
    the trace says which zone it is."""
    from ..tracking.store import PARAM_VALUE_LIMIT, fitted
    from ..tracking.ui import own_params

    params = own_params(flatten(settings))
    if params.get("timezone.name") is None:
        params.pop("timezone.name", None)
    return fitted(params, PARAM_VALUE_LIMIT)  # a 1,200-queue list: cut with a marker


def _run_tags(cfg: DictConfig, hydra_cfg, label: str, text: str) -> dict:
    """Who ran it from which commit, under which preset, and how to run it again."""
    from ..tracking.store import TAG_DESCRIPTION, TAG_LABEL, TAG_PRESET, TAG_VALUE_LIMIT, fitted

    preset = hydra_cfg.runtime.choices.get("experiment")
    return fitted({**source_tags(), TAG_LABEL: label, TAG_PRESET: str(preset or "none"),
                   TAG_DESCRIPTION: text}, TAG_VALUE_LIMIT)


def _artifact_files(out_dir: Path, figures: list[Path]):
    """The parent's files, as (file, artifact folder or None)."""
    for path in figures:
        yield path, "figures"
    for name in ("config.yaml", "seed_metrics.csv", "rejects.csv", QUEUE_KEYS_FILE, "per_user.csv"):
        if (out_dir / name).exists():
            yield out_dir / name, None
    for path in sorted(out_dir.glob("schedule_seed*.csv.gz")):  # what _write_outputs writes
        yield path, "schedules"


def _log_artifacts(tracker, parent_id, out_dir: Path, figures: list[Path], result: dict) -> None:
    """The parent's files; then it is closed, unless some seeds failed (closed FAILED later)."""
    for path, folder in _artifact_files(out_dir, figures):
        tracker.log_artifact(parent_id, path, folder)
    if result["status"] == "FINISHED":
        tracker.finish(parent_id, "FINISHED")


def _fail_run(tracker, run_id: str, message: str, out_dir: Path) -> None:
    """Tag the error, attach it as an artifact and close the run FAILED (best effort: a
    broken store must not hide the original error)."""
    from ..tracking.store import TAG_ERROR

    path = out_dir / "error.txt"
    try:
        path.write_text(message + "\n")
    except OSError:  # a full disk: the tag below still carries the message
        path = None
    try:
        tracker.log(run_id, tags={TAG_ERROR: message[:5000]})
        if path is not None:
            tracker.log_artifact(run_id, path)
        tracker.finish(run_id, "FAILED")
        tracker.finish_open_runs("FAILED")  # seed runs the failure caught half-written
        tracker.wait()
    except Exception as exc:  # noqa: BLE001 - reporting must go on
        log.error("could not record the error in the tracking store: %s", exc)


# ---------------------------------------------------------------- the sweep summary
# summary.csv's metric columns: (metric, column with its unit, divisor from the metric's unit)
def _summary_units():
    """(metric, column, scale) of the summary: the shared display unit of each metric
    (``drevt_sweep/units.py``, as in the report and search.html), named in the column."""
    from ..units import UNITS

    suffix = {"h": "_h", "%": "_pct"}
    return tuple((metric, metric + suffix.get(UNITS[metric].name, ""), UNITS[metric].scale)
                 for metric in ("wait_mean", "wait_p95", "bsld_mean", "utilization", "makespan",
                                "jobs_rejected"))


SUMMARY_UNITS = _summary_units()


def summary_frame(results: list[dict]):
    """One row per configuration: mean ± 95% CI of the key metrics (each column named with
    its unit: ``wait_mean_h``, ``utilization_pct``), the jobs rejected (too big for the machine: a
    smaller machine's mean wait is over fewer jobs), and the status."""
    import pandas as pd

    rows = []
    for res in results:
        row = {"configuration": res.get("name") or res.get("label", "?"), "status": res.get("status"),
               "seeds": len(res.get("seeds", []))}
        metrics = res.get("metrics") or {}
        for name, column, scale in SUMMARY_UNITS:
            value, half = metrics.get(name), metrics.get(f"{name}_ci95")
            row[column] = None if value is None else value / scale
            if name != "jobs_rejected":
                row[f"{column}_ci95"] = None if half is None else half / scale
        row["error"] = (res.get("error") or "").splitlines()[0] if res.get("error") else ""
        rows.append(row)
    return pd.DataFrame(rows)


SUMMARY_ROWS = 60  # the terminal's table shows at most this many configurations (half each end)


def format_summary(frame, max_rows: int = SUMMARY_ROWS) -> str:
    """The terminal's table: the summary's columns, the unit in each header; a rejected-jobs
    column wherever any configuration rejected jobs. A longer sweep shows its first and last
    ``max_rows / 2`` configurations and says where the rest are (10,000 rows scrolled the
    terminal away, and formatting them took 0.5 s)."""
    import pandas as pd

    any_rejected = bool((frame["jobs_rejected"].fillna(0) > 0).any())
    hidden = len(frame) - max_rows if len(frame) > max_rows else 0
    if hidden:
        frame = pd.concat([frame.head(max_rows // 2), frame.tail(max_rows - max_rows // 2)])
    def pm(value, half, digits=1):
        if value is None or value != value:
            return "-"
        text = f"{value:.{digits}f}"
        if half is not None and half == half and half > 0:
            text += f" ± {half:.{digits}f}"
        return text

    table = frame[["configuration", "status", "seeds"]].copy()
    for column, header, digits in (("wait_mean_h", "mean wait (h)", 2), ("wait_p95_h", "p95 wait (h)", 2),
                                   ("bsld_mean", "bounded slowdown", 2),
                                   ("utilization_pct", "utilization (%)", 1),
                                   ("makespan_h", "makespan (h)", 1)):
        table[header] = [pm(v, h, digits) for v, h in zip(frame[column], frame[f"{column}_ci95"])]
    if any_rejected:
        table["rejected (jobs)"] = [pm(v, None, 0) for v in frame["jobs_rejected"]]
    text = table.to_string(index=False)
    if not hidden:
        return text
    lines = text.split("\n")  # (the header, then one line per row)
    cut = 1 + max_rows // 2
    return "\n".join(lines[:cut] + [f"… {hidden:,} more configurations: every one is in summary.csv "
                                     "and report.html …"] + lines[cut:])


def _read_result(path: Path) -> dict:
    """A job's result.json; from memory when a full disk left it empty or cut short, else a
    FAILED entry saying so (never dropped from the summary)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        known = _results.get(str(path.parent))
        if known is not None:
            return known
        return {"label": path.parent.name, "status": "FAILED", "seeds": [],
                "error": f"{path} cannot be read ({type(exc).__name__}: {exc})"}


def job_results(sweep_dir: Path) -> dict[str, dict]:
    """Every job folder's result under ``sweep_dir``, by folder: the result.json files, and the
    results of this process that a full disk kept from being written."""
    by_folder = {str(path.parent): _read_result(path) for path in sweep_dir.glob("*/result.json")}
    for folder, result in _results.items():
        if Path(folder).parent == sweep_dir:
            by_folder.setdefault(folder, result)
    return by_folder


def write_summary(sweep_dir: Path) -> tuple[str, list[str]]:
    """Gather every job's result.json into summary.csv; return the table and the failures."""
    by_folder = job_results(sweep_dir)
    _state["gathered"] = (sweep_dir, by_folder)  # (the sweep's own run reads them next: _log_sweep_run)
    results = [by_folder[k] for k in sorted(by_folder, key=lambda f: _job_number(Path(f).name))]
    if not results:
        return "no configuration finished", []
    frame = summary_frame(results)
    try:
        frame.to_csv(sweep_dir / "summary.csv", index=False)
    except OSError as exc:
        log.error(_os_error(exc, sweep_dir / "summary.csv"))
    failed = [r["label"] for r in results if r.get("status") != "FINISHED"]
    return format_summary(frame), failed


def _job_number(name: str) -> int:
    return int(name) if name.isdigit() else 1 << 30


class SweepSummaryCallback(Callback):
    """Creates the store before any job starts, and prints/writes the summary at the end."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        raise_problems(check_sweep(config))  # every job's values, before the store opens
        _marks["validated"] = time.time()
        if config.resume:
            sweep_dir = Path(config.hydra.sweep.dir)
            state = "continuing" if (sweep_dir / "multirun.yaml").is_file() else "no earlier sweep: starting"
            print(f"resume: {state} {sweep_dir}", file=sys.stderr)
        if config.tracking.enabled:
            launcher = str(config.hydra.launcher.get("_target_", ""))
            if "SlurmLauncher" in launcher and not config.tracking.uri:
                log.warning(
                    "SLURM jobs will share the embedded sqlite store %s; on a network file "
                    "system sqlite locks and corrupts. Start a tracking server (README: "
                    "'Running on a cluster') and pass tracking.uri=http://HOST:PORT",
                    config.paths.output_root,
                )
            try:
                # Opening in the helper (MLflow's import, the store's creation: 3-13 s on a
                # loaded machine) overlaps the sweep's start; the jobs wait for it, with the
                # same exit 2, in :func:`store_ready` -- the engine after its first wave's
                # seeds, before any result is written; Hydra's launchers before the first job.
                store = _tracker(config)
            except (DrevtError, TrackingError) as exc:
                raise SystemExit(f"drevt-sweep: error: {exc}") from None
            _state["opening"] = store
            if "SlurmLauncher" not in launcher:
                # Jobs run on this machine; SLURM tasks outlive an interrupted submitter.
                _state["store"] = store._key

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        """A single run is checked up front as a multirun is: its values, then its store (a
        dead server, a ``foo://`` URI, a corrupt or read-only store: exit 2, nothing run)."""
        _marks["composed"] = time.time()  # Hydra's start-up and composition are done
        raise_problems(check_config(config))
        if config.tracking.enabled:
            # The seeds' workers start (numpy, the kernel) while the helper imports MLflow and
            # opens the store: the two waits overlap instead of adding up.
            warming = _start_workers(config, int(config.parallel.n_jobs))
            try:
                checked = _store_checked_here(config)
                service = _tracker(config, wait=not checked)
            except (DrevtError, TrackingError) as exc:
                if warming is not None:
                    _tell_workers()
                    warming.join()  # not left starting workers while the interpreter exits
                raise SystemExit(f"drevt-sweep: error: {exc}") from None
            if checked:  # the seeds run while MLflow opens it; run_configuration waits after them
                _state["opening"], _state["store_opening"] = service, True
            else:
                _marks["store"] = time.time()  # the store is open (the helper imported MLflow)
            _state["warming"] = warming

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        if _value(config.search.kind) != "none":  # a multirun of searches: each answered itself
            from .search import print_search_answers

            print_search_answers(sweep_dir)
            return
        table, failed = write_summary(sweep_dir)
        _report(table, failed, sweep_dir, config)
        if config.resume:
            print(resume_note(sweep_dir.glob("*/result.json"), sweep_dir))
        _failures.extend(f for f in failed if f not in _failures)
        try:
            from ..report.html import build_report
            from ..tracking.store import embedded_uri

            uri = None
            if config.tracking.enabled:
                uri = config.tracking.uri or embedded_uri(config.paths.output_root)
            print("report: writing report.html …", flush=True)  # tens of seconds on a busy machine
            # The engine wrote every configuration's files here, and their runs from them.
            report = build_report(sweep_dir, uri, from_folder=bool(_state.get("engine")))
            print(f"report: {report}")
        except OSError as exc:  # a full disk: say which file
            log.warning("report not built (rebuild with drevt-sweep-report): %s",
                        _os_error(exc, sweep_dir / "report.html"))
            report = None
        except Exception as exc:  # noqa: BLE001 - the runs are safe; the report can be rebuilt
            log.warning("report not built (rebuild with drevt-sweep-report): %s", exc)
            report = None
        if config.tracking.enabled:
            try:
                _log_sweep_run(config, sweep_dir, report)
            except Exception as exc:  # noqa: BLE001 - the configurations' runs are safe
                log.warning("the sweep's own MLflow run was not written: %s", exc)

    def on_run_end(self, config: DictConfig, **kwargs) -> None:
        run_dir = Path(config.hydra.run.dir)
        result = _results.get(str(run_dir))
        if result is None and (run_dir / "result.json").exists():
            result = _read_result(run_dir / "result.json")
        if result is not None:
            frame = summary_frame([result])
            try:
                frame.to_csv(run_dir / "summary.csv", index=False)
            except OSError as exc:
                log.error(_os_error(exc, run_dir / "summary.csv"))
            failed = [] if result.get("status") == "FINISHED" else [result["label"]]
            _report(format_summary(frame), failed, run_dir, config)
            if config.resume:
                print(resume_note([run_dir / "result.json"], run_dir))


def _store_checked_here(config: DictConfig) -> bool:
    """Whether a single run's store was checked here, without MLflow: an sqlite file (the
    embedded store or an ``sqlite:///`` URI) is checked as ``Tracker.open`` checks it (a
    folder, read-only, corrupt: exit 2 now, nothing run); the run then does not wait for
    MLflow's import and open (1-5 s, the largest wait of a 100-seed run) before its seeds, only
    before their results are written. Any other store (a server, PostgreSQL) is waited for."""
    from ..tracking.store import check_sqlite_store, embedded_uri

    uri = str(config.tracking.uri or embedded_uri(config.paths.output_root))
    if not uri.startswith("sqlite:///"):
        return False
    check_sqlite_store(Path(uri[len("sqlite:///"):]))  # (the path as Tracker.open reads it)
    return True


def store_ready() -> None:
    """Wait for the store the multirun opened (``on_multirun_start``): a store that cannot be
    used (read-only, corrupt, a deleted experiment) stops the sweep with one line and exit 2,
    before any configuration's result is written."""
    _store_check(wait=True)


def store_failed() -> None:
    """Without waiting: ``store_ready``'s exit when the open has already failed."""
    _store_check(wait=False)


def _store_check(wait: bool) -> None:
    service = _state.get("opening")
    if service is None:
        return
    try:
        if wait:
            _state.pop("opening", None)
            service.wait()
        else:
            service.raise_if_failed()
    except (DrevtError, TrackingError) as exc:
        _state.pop("opening", None)
        _state["refused"] = True  # bad input found late: still exit 2 (main)
        raise SystemExit(f"drevt-sweep: error: {exc}") from None


def start_sweep_run(tracker, config: DictConfig, sweep_dir: Path) -> str:
    """The sweep's own run, opened before its configurations so that they nest under it
    (sweep -> configuration -> seed); named after the sweep folder, unique per sweep."""
    from ..tracking.store import TAG_DESCRIPTION, TAG_KIND, TAG_PRESET, TAG_SWEEP_DIR

    overrides = [str(o) for o in config.hydra.overrides.task]
    preset = config.hydra.runtime.choices.get("experiment")
    command = " ".join(["drevt-sweep", "-m"] + [shlex.quote(o) for o in overrides])
    handle = tracker.start_run(f"sweep {sweep_dir.name}", {
        TAG_KIND: "sweep", TAG_SWEEP_DIR: str(sweep_dir), TAG_PRESET: str(preset or "none"),
        **source_tags(), **_sweep_tag(), TAG_DESCRIPTION: description(
            command, "The sweep's configurations are this run's children; report.html and "
                     "summary.csv are its artifacts."),
    })
    _state["sweep_run"] = handle
    return handle


SWEEP_BEST = ("wait_mean", "wait_p95", "bsld_mean")  # the sweep run's "best configuration" metrics


def _log_sweep_run(config: DictConfig, sweep_dir: Path, report: Path | None) -> None:
    """One run for the whole sweep (tag ``drevt_kind=sweep``) holding ``report.html`` and
    ``summary.csv`` once, instead of a copy of the report in every parent run; each parent
    names it in its tag ``drevt_sweep_run_id`` (and, from the sweep engine, is its child).
    It summarises them: how many, and the best configuration on each of ``SWEEP_BEST`` (its
    value, its name and a link to its run). FAILED when any configuration failed, so the
    runs table shows a sweep that needs a look."""
    from ..tracking.store import TAG_DESCRIPTION, TAG_SWEEP_RUN

    gathered = _state.pop("gathered", None)  # what write_summary read (10,000 files: 0.5 s)
    results = list((gathered[1] if gathered and gathered[0] == sweep_dir else job_results(sweep_dir)).values())
    parents = [r["parent_run_id"] for r in results if r.get("parent_run_id")]
    handle = _state.get("sweep_run")
    if not parents and handle is None:
        return
    tracker = _tracker(config)
    if handle is None:
        handle = start_sweep_run(tracker, config, sweep_dir)
    failed = [r for r in results if r.get("status") != "FINISHED"]
    metrics = {"configurations": len(results), "configurations_failed": len(failed)}
    tags, lines = {}, []
    for name in SWEEP_BEST:
        scored = [r for r in results if r.get("status") == "FINISHED"
                  and (r.get("metrics") or {}).get(name) is not None]
        if not scored:
            continue
        best = min(scored, key=lambda r: r["metrics"][name])
        metrics[f"best_{name}"] = best["metrics"][name]
        tags[f"drevt_best_{name}"] = best.get("name") or best.get("label", "")
        link = f"[{tags[f'drevt_best_{name}']}](#/runs/{best['parent_run_id']})" if best.get(
            "parent_run_id") else tags[f"drevt_best_{name}"]
        lines.append(f"| {name} | {best['metrics'][name]:.6g} | {link} |")
    tracker.log(handle, metrics=metrics,
                params={"configurations": len(results), "drevt_version": __version__}, tags=tags)
    if lines:
        overrides = [str(o) for o in config.hydra.overrides.task]
        command = " ".join(["drevt-sweep", "-m"] + [shlex.quote(o) for o in overrides])
        table = "\n".join(["| metric (lowest) | value | configuration |", "|---|---|---|", *lines])
        tracker.log(handle, tags={TAG_DESCRIPTION: description(
            command, f"{len(results)} configurations ({len(failed)} not finished); each is a child "
                     f"of this run.\n\n{table}")})
    for path in (report, sweep_dir / "summary.csv"):
        if path is not None and path.is_file():
            tracker.log_artifact(handle, path)
    tracker.finish(handle, "FAILED" if failed else "FINISHED")
    tracker.wait()
    _state["sweep_run"] = None
    tagged = set(_state.get("tagged_parents", ()))  # the engine's, tagged when written
    untagged = [p for p in parents if p not in tagged]
    if untagged:
        tracker.tag_runs(untagged, {TAG_SWEEP_RUN: tracker.run_id(handle)})
    tracker.wait()


def resume_note(result_files, where: Path) -> str:
    """``resume: <folder>: reused 6 seeds, ran 2`` (what ``resume=true`` did)."""
    reused = ran = 0
    for path in result_files:
        result = _read_result(Path(path))
        done = len(result.get("reused_seeds") or [])
        reused += done
        ran += len(result.get("seeds") or []) - done
    return f"resume: {where}: reused {reused} seeds, ran {ran}"


def _report(table: str, failed: list[str], where: Path, config: DictConfig) -> None:
    print("\n" + table)
    print(f"\nsummary: {where / 'summary.csv'}")
    if config.tracking.enabled:
        if config.tracking.uri:
            uri = config.tracking.uri
            print(f"runs: MLflow at {config.tracking.uri}, experiment '{config.tracking.experiment}'")
        else:
            from ..tracking.store import embedded_uri

            uri = embedded_uri(config.paths.output_root)
            print(f"runs: {uri[len('sqlite:///'):]} (experiment '{config.tracking.experiment}')")
        from ..tracking.ui import after_sweep

        try:
            service = _tracker(config)  # the helper's (open already): no MLflow import here
        except Exception:  # noqa: BLE001 - only the link is at stake
            service = None
        after_sweep(uri, config.tracking.experiment, service)  # the UI link that opens on the results
    if failed:
        print(f"\n{len(failed)} configuration(s) failed: " + "; ".join(failed), file=sys.stderr)


# ---------------------------------------------------------------- entry points
def _tolerate_a_full_disk() -> None:
    """A full disk (or a quota) fails the configurations that cannot write their outputs, each
    with one line, and the multirun still summarises: Hydra's saving of a job's ``.hydra``
    files (which would abort the whole multirun) only warns, and a log file that cannot be
    written no longer prints logging's traceback (the console still shows every message)."""
    import hydra.core.utils as hydra_utils

    logging.raiseExceptions = False
    original = hydra_utils._save_config
    if getattr(original, "_drevt_tolerant", False):
        return

    def save_config(cfg, filename, output_dir) -> None:
        try:
            original(cfg, filename, output_dir)
        except OSError as exc:
            log.warning("Hydra's %s not saved in %s: %s", filename, output_dir, exc.strerror)

    save_config._drevt_tolerant = True
    hydra_utils._save_config = save_config



def _compose_once(argv: list[str]) -> None:
    """Hydra composes the whole config twice per command: first only to read ``hydra.mode``
    (whether a config file asks for a multirun; ``None`` when none does), then for the run --
    about a fifth of drevt-sweep's start-up (0.4 s of CPU, measured). No config of ours sets
    ``hydra.mode``, so the first compose is skipped unless the command line could bring one
    that does: a ``hydra.mode`` or search-path override, or another config directory."""
    from hydra._internal.hydra import Hydra

    original = Hydra.get_mode
    if getattr(original, "_drevt_once", False):
        return
    elsewhere = any(a.startswith(("--config-dir", "-cd", "--config-path", "-cp", "--config-name",
                                  "-cn")) for a in argv)

    def get_mode(self, config_name, overrides):
        keys = [o.split("=", 1)[0].lstrip("+~") for o in overrides]
        if elsewhere or any(k in ("hydra.mode", "hydra.searchpath") for k in keys):
            return original(self, config_name, overrides)
        return None

    get_mode._drevt_once = True
    Hydra.get_mode = get_mode


@hydra.main(version_base="1.3", config_path="pkg://drevt_sweep.conf", config_name="config")
def _app(cfg: DictConfig) -> dict:
    if not _state["ran"]:  # a multirun checked every job before the first one (on_multirun_start)
        problems = check_config(cfg)
        if problems:
            _discard_unused_run_dir()
        raise_problems(problems)
    if not cfg.policy.replay:
        compile_if_cold()  # a fresh install: say so while numba compiles, instead of 2 min of silence
    if _value(cfg.search.kind) != "none":  # a question (bisection, Optuna) instead of one configuration
        from .search import AppHooks, run_search

        store_ready()  # a multirun's store, opened in on_multirun_start
        _state["ran"] = True
        return run_search(cfg, AppHooks(run_spec, result_config, _n_jobs, _backend_options, _tracker,
                                        _record_failure))
    return run_configuration(cfg)


def _discard_unused_run_dir() -> None:
    """A single run refused for bad values leaves no folder behind: Hydra made the job's
    folder (``outputs/runs/<date>_<time>``) before the values could be checked, and nothing
    but Hydra's own files (``.hydra/``, the log) and this run's folder lock is in it (also
    used when its store turned out unusable after its seeds, before anything was written)."""
    import shutil

    from .folder_lock import LOCK_NAME

    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode == hydra_cfg.mode.MULTIRUN:
        return
    folder = Path(hydra_cfg.runtime.output_dir)
    if folder.is_dir() and all(p.name in (".hydra", LOCK_NAME) or p.suffix == ".log"
                               for p in folder.iterdir()):
        shutil.rmtree(folder, ignore_errors=True)
        try:
            folder.parent.rmdir()  # outputs/runs/, when this run had just made it
        except OSError:
            pass


def main() -> None:
    """Console script: exit 0 when every configuration finished, 1 when any failed, 2 on bad
    options, 128 + N when ended by signal N (SIGINT 130, SIGTERM 143, SIGHUP 129: runs in
    flight are then marked KILLED in the store and the worker processes ended)."""
    _marks["main"] = time.time()  # Python and the app's imports are done
    if _asks_for_version(sys.argv[1:]):
        print(f"drevt-sweep {__version__}")
        return
    if _completing(sys.argv[1:]):  # a TAB in the shell: Hydra lists keys, nothing runs
        register_configs()
        _app()
        return
    _start_ray_early(sys.argv[1:])  # (first: Ray takes longest to be ready; no thread, so the helper still forks)
    install_handlers()
    from ..tracking import without_telemetry
    from ..tracking.store import sweep_id

    without_telemetry()  # (before the helper forks: it and the workers inherit it)

    os.environ[SWEEP_ID_ENV] = sweep_id()
    register_configs()
    _find_sweeper_plugin()
    guard_hydra_callbacks()
    _tolerate_a_full_disk()
    _compose_once(sys.argv[1:])
    import pandas  # noqa: F401 - needed here anyway; imported before the fork, the helper shares it

    start_helper(fork=True)  # the tracking helper, ready while Hydra composes
    _marks["helper_started"] = time.time()
    _state["early_workers"] = _start_workers_early(sys.argv[1:])  # (after the fork: threads now)
    try:
        _app()
        end_idle_workers()  # done with them: the exit need not wait for each to wind down
        ignore_late_signals()
    except SystemExit as exc:
        _stop_early_workers()
        if exc.code in (0, None) or (_state["ran"] and not _state.get("refused")):
            raise
        # Hydra reports a bad option or config (and we an unreachable store) before any
        # configuration runs: that is bad input, exit code 2 as for drevt-sim.
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as exc:
        _kill_runs_left_running()
        from .killed_jobs import mark_killed

        # The jobs that joblib's killed workers could not close get a KILLED result.json.
        mark_killed(f"interrupted ({signal_name(exc)})", configuration_label)
        end_workers()
        print(f"\ndrevt-sweep: interrupted by {signal_name(exc)}; runs in flight were marked "
              "KILLED and the workers ended (run again with resume=true to finish)",
              file=sys.stderr)
        leave(exit_code(exc))  # (not sys.exit: under python -m it could end by SIGINT, process_exit)
    leave(1 if _failures else 0)


# A multirun command whose arguments cannot change whether or how its seeds run on this
# machine's loky workers (the defaults: parallel.n_jobs=-1, backend loky, Hydra's basic
# launcher, no search): anything naming these keeps the workers' start where it was.
_EARLY_WORKERS_UNLESS = ("parallel", "+parallel", "hydra/launcher", "hydra.launcher", "+hydra",
                         "search", "+search", "experiment", "+experiment", "resume", "-")


def _start_workers_early(argv: list[str]):
    """Start a multirun's seed workers now, while Hydra composes and checks the sweep: they
    take ~1.6 s to be ready (spawning, importing the simulator, loading the kernel's machine
    code, which loads every backfill's at once), and the first wave waited for them after
    the ~1.5 s of Hydra's start-up (issue 23). Only for a ``-m`` command that keeps the
    default workers (``_EARLY_WORKERS_UNLESS``); the engine's own start (``batch``) then
    finds them warm. A thread, or None."""
    if not any(a in ("-m", "--multirun") for a in argv):
        return None
    rest = [a for a in argv if a not in ("-m", "--multirun")]
    if any(a.split("=", 1)[0].startswith(_EARLY_WORKERS_UNLESS) for a in rest):
        return None
    try:
        return start_workers(-1, "loky", work=False)  # the kernel: once the trace says it pays
    except Exception:  # noqa: BLE001 - only an early start: the engine starts them anyway
        return None


def _start_ray_early(argv: list[str]) -> None:
    """``parallel.backend=ray`` on the command line, without a cluster address or another
    launcher: the local Ray instance starts now, in the background, while Hydra composes and
    the sweep prepares (``backends.start_local_ray``; 2.4-3.7 s, measured). A preset that
    chooses Ray starts it when the sweep first needs it, as before."""
    values = {a.lstrip("+").split("=", 1)[0]: a.split("=", 1)[1] for a in argv if "=" in a}
    if values.get("parallel.backend") != "ray" or values.get("parallel.ray_address", "null") != "null":
        return
    if any(k.startswith(("hydra/launcher", "hydra.launcher")) for k in values):
        return  # (the seeds run in the launcher's jobs)
    try:
        from .backends import start_local_ray

        start_local_ray(int(values.get("parallel.n_jobs", -1)))
    except Exception:  # noqa: BLE001 - only an early start: ray_ready starts it anyway
        pass


def _stop_early_workers() -> None:
    """A command refused before its sweep ran (a bad option, exit 2): the workers started
    early are ended, not waited for (their start fails in its thread, which says nothing):
    the interpreter's exit would wait for them to finish starting (3 refused multiruns 10.7 s
    -> 6.5 s, measured)."""
    early = _state.pop("early_workers", None)
    if early is not None:
        end_idle_workers()
        early.join()
        end_idle_workers()  # (had the thread not created the pool yet, it did while joined)


def _completing(args: list[str]) -> bool:
    """``-sc query=…`` (``--shell-completion``): the shell asks for completions on every TAB,
    so it gets Hydra alone, without the tracking helper (mlflow) or pandas (2.2 s of CPU per
    TAB before, measured)."""
    return any(a in ("-sc", "--shell-completion") or a.startswith("--shell-completion=") for a in args)


def _find_sweeper_plugin() -> None:
    """Our Hydra sweeper is the package ``hydra_plugins.drevt_sweeper`` beside ``drevt_sweep``
    (installed with it); an editable install made before it existed does not map it, so the
    source tree's copy is put on the path (Hydra finds plugins in that namespace package)."""
    try:  # the folders Hydra's plugin scan walks (pkgutil), not import hooks
        import hydra_plugins

        folders = [Path(p) for p in hydra_plugins.__path__]
    except ImportError:
        folders = []
    if any((folder / "drevt_sweeper" / "__init__.py").is_file() for folder in folders):
        return
    root = Path(__file__).resolve().parents[2]
    if (root / "hydra_plugins" / "drevt_sweeper" / "__init__.py").is_file():
        sys.path.append(str(root))


def _asks_for_version(args: list[str]) -> bool:
    """``--version`` or ``version=true``: drevt-sweep's version, not Hydra's."""
    return any(a == "--version" or a.lower() in ("version=true", "+version=true") for a in args)


if __name__ == "__main__":
    main()
