"""drevt-sweep from Python (a notebook, a script): one call from a trace to a schedule and its
metrics, and one call from a finished sweep to a tidy DataFrame.

    from drevt_sweep.api import simulate_trace, load_sweep
    run = simulate_trace("kth_sp2", backfill="conservative")
    run.metrics["wait_mean"], run.frame().head()
    runs = load_sweep("outputs/multirun/2026-12-01_09-30-00")   # or an experiment's name

Nothing here needs Hydra; only :func:`load_sweep` imports MLflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .trace.catalogue import CATALOGUE, locate, missing_hint
from .errors import ConfigError
from .jobs import JobTable
from .sim.machine import Machine
from .sim.runtime import RunTimeModel
from .sim.schedule import Schedule
from .sim.workload import WorkloadSpec

__all__ = ["Simulation", "simulate_trace", "load_sweep", "trace_path"]

BUNDLED = {"kth_sp2": "pkg://drevt_sweep/data/traces/KTH-SP2-1996-2.1-cln.swf.gz"}
DEFAULT_NODES = 795  # Lassen, the seeds' default, when the trace states no machine size


@dataclass(frozen=True, repr=False)
class Simulation:
    """One simulated (or replayed) seed: the jobs as simulated, their schedule, its metrics,
    and the machine it ran on (``total_nodes``: its node count)."""

    jobs: JobTable
    schedule: Schedule
    metrics: dict[str, float]
    total_nodes: int | None = None

    def frame(self, datetimes: bool = False) -> pd.DataFrame:
        """One row per job: the job's columns, begin, end, wait, run time (``Schedule.to_frame``).
        Times are epoch seconds; ``datetimes=True`` adds ``submit_time``, ``begin_time`` and
        ``end_time`` as date-times in the trace's time zone (NaT for rejected jobs)."""
        frame = self.schedule.to_frame(self.jobs)
        if datetimes:
            zone = self.jobs.meta.timezone or "UTC"
            for column in ("submit", "begin", "end"):
                frame[f"{column}_time"] = pd.to_datetime(frame[column], unit="s", utc=True).dt.tz_convert(zone)
        return frame

    def __repr__(self) -> str:
        m = self.metrics
        nodes = f", {self.total_nodes} nodes" if self.total_nodes else ""
        shown = ", ".join(f"{key}={m[key]:.6g}" for key in ("wait_mean", "bsld_mean", "utilization") if key in m)
        return f"Simulation({len(self.jobs)} jobs{nodes}, {m.get('jobs_simulated', 0):g} simulated; {shown})"


def trace_path(trace: str | Path) -> Path:
    """A file path as it is; a catalogue name (``kth_sp2``, ``lanl_cm5`` ...) where it is."""
    from .trace.options import resolve_trace_path

    text = str(trace)
    if text in BUNDLED:
        return resolve_trace_path(BUNDLED[text], ".")
    if text in CATALOGUE and not Path(text).exists():
        path = Path(locate(text))
        if not path.is_file():
            raise ConfigError(f"trace {text!r}: {missing_hint(text)}")
        return path
    return resolve_trace_path(text, ".")


def simulate_trace(
    trace: str | Path,
    *,
    trace_format: str | None = None,
    priority: str = "fcfs",
    backfill: str = "easy",
    compression: str = "compress_first",
    replay: bool = False,
    total_nodes: int | None = None,
    system: str | Path | Mapping | Machine | None = None,
    run_time: str | RunTimeModel = "actual",
    scale: float = 1.0,
    stddev: float = 0.0,
    seed: int = 0,
    timezone: str | None = None,
    queues: str | tuple[str, ...] = "all",
    workload: WorkloadSpec | None = None,
    enforce_limits: bool = True,
    cache: bool = True,
    backfill_params: dict | None = None,
) -> Simulation:
    """Read a trace (through the on-disk cache) and simulate one seed of it.

    ``trace``: a path or a catalogue name. ``trace_format``: ``swf`` for ``.swf``/``.swf.gz``
    names, else ``simple`` unless given (``lassen``, ``slurm``). ``priority``/``backfill``: the
    engine's names (fcfs/sjf/ljf/smallest/largest; none/easy/conservative/easy_drevt);
    ``compression``: conservative backfilling's order (``compress_first``, ``interleaved``,
    ``one_pass``); ``replay=True`` replays the recorded history instead. ``run_time``:
    ``actual``, ``limit``, or a distribution (``normal``, ``lognormal``, ``uniform``) with
    ``scale``/``stddev`` as in the README, or a ``RunTimeModel``. ``total_nodes``: one pool of
    that many nodes, default the size the trace states, else 795. ``system``: a machine with
    partitions instead, as ``drevt-sweep system=...`` gives it: a bundled name (``lassen``,
    ``kabre``), a YAML file in the ``system`` group's format, that data as a mapping, or a
    ``Machine``. ``backfill_params``: ``backfill="slurm"``'s settings (``bf_window`` etc.,
    ``sim.policies.slurm_backfill``). Raises ``DrevtError`` with drevt-sweep's message (``system.total_nodes=0:
    must be >= 1``; a file's line and value) on bad input.
    """
    from .sweep.seeds import RunSpec, simulate_seed
    from .sweep.validate import check_values
    from .sim.metrics import compute_metrics
    from .trace import ReadOptions, read_trace
    from .trace.cache import load_trace

    model = _run_time_model(run_time, scale, stddev)
    problems = check_values({
        "seed": seed, "system": {"total_nodes": total_nodes}, "timezone": {"name": timezone},
        "run_time": {"mode": model.mode, "distribution": model.distribution, "scale": model.scale,
                     "stddev": model.stddev, "min_run_time": model.min_run_time}})
    if problems:
        raise ConfigError("; ".join(problems))
    if compression not in COMPRESSIONS:
        raise ConfigError(f"compression={compression}: must be one of {', '.join(COMPRESSIONS)}")
    machine = _machine(system)
    if machine is not None and total_nodes is not None:
        raise ConfigError("system describes the whole machine: give system or total_nodes, not both")
    path = trace_path(trace)
    if trace_format is None:
        trace_format = "swf" if path.name.endswith((".swf", ".swf.gz")) else "simple"
    options = ReadOptions(trace_format=trace_format, timezone=timezone, queues=queues,
                          force_simulation=not replay)
    jobs = load_trace(path, options) if cache else read_trace(path, options)
    nodes = machine.total_nodes if machine is not None else int(
        total_nodes if total_nodes is not None else jobs.meta.machine_nodes or DEFAULT_NODES)
    spec = RunSpec(total_nodes=nodes, machine=machine, priority=priority, backfill=backfill,
                   compression=compression, replay=replay, run_time=model,
                   enforce_limits=enforce_limits, workload=workload or WorkloadSpec(),
                   backfill_params=backfill_params)
    seed_jobs, schedule = simulate_seed(jobs, spec, seed)
    return Simulation(seed_jobs, schedule, compute_metrics(seed_jobs, schedule), nodes)


COMPRESSIONS = ("compress_first", "interleaved", "one_pass")


def _run_time_model(run_time, scale: float, stddev: float) -> RunTimeModel:
    if not isinstance(run_time, str):
        return run_time
    if run_time in ("actual", "limit"):
        return RunTimeModel(mode=run_time)
    if run_time in ("normal", "lognormal", "uniform"):
        return RunTimeModel(mode="distribution", distribution=run_time, scale=scale, stddev=stddev)
    raise ConfigError(f"run_time must be actual, limit, normal, lognormal or uniform, got {run_time!r}")


def _machine(system) -> Machine | None:
    """The machine ``system`` names (see :func:`simulate_trace`), or None: one pool."""
    if system is None or isinstance(system, Machine):
        return system
    from .sim.machine import machine_from_mapping

    if isinstance(system, Mapping):
        return machine_from_mapping(system)
    bundled = Path(__file__).resolve().parent / "conf" / "system" / f"{system}.yaml"
    if not bundled.is_file():  # an editable install: conf/ is at the top of the repository
        bundled = Path(__file__).resolve().parents[1] / "conf" / "system" / f"{system}.yaml"
    path = bundled if str(system).isidentifier() and bundled.is_file() else Path(system)
    if not path.is_file():
        raise ConfigError(f"system={system}: neither a bundled machine (lassen, kabre) nor a YAML file")
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    try:
        return machine_from_mapping(data or {})
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


# ------------------------------------------------------------------------------ a sweep's runs
SETTING_SECTIONS = ("trace", "format", "timezone", "run_time", "policy", "system", "workload")
CONFIGURATION_PARAMS = ("total_nodes", "jobs", "n_seeds")


def load_sweep(source: str | Path, tracking_uri: str | None = None,
               status: str | None = "FINISHED") -> pd.DataFrame:
    """The seeds of a sweep as a tidy DataFrame: one row per configuration x seed, with the
    configuration's name, its settings (``policy.name``, ``run_time.scale`` ...), ``seed``, every
    metric, and the MLflow ids.

    ``source``: a sweep folder (``outputs/multirun/<date>_<time>``: its configurations' seeds,
    those reused by ``resume`` too) or the name of an MLflow experiment (every seed in it; a
    configuration x seed run twice counts once, the latest). ``tracking_uri``: default the
    store the folder's configs name, else ``outputs/mlflow.db`` under the current directory.
    ``status``: which seed runs (None: all, with a ``status`` column to tell them apart).
    """
    from mlflow.tracking import MlflowClient

    from .tracking.store import TAG_CONFIG_HASH, TAG_KIND, TAG_RUN_KEY, TAG_SWEEP_DIR, embedded_uri
    from .tracking.store import search_all_runs as _all

    folder = Path(source).expanduser()
    uri = tracking_uri or _folder_uri(folder) or embedded_uri(Path.cwd() / "outputs")
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).is_file():
        raise ConfigError(f"no MLflow store at {uri[len('sqlite:///'):]}; give tracking_uri")
    client = MlflowClient(tracking_uri=uri)
    wanted = f" and attributes.status = '{status}'" if status else ""
    if folder.is_dir():
        experiments = [e.experiment_id for e in client.search_experiments()]
        parents = [r for r in _all(client, experiments, f"tags.{TAG_KIND} = 'configuration'")
                   if _same(r.data.tags.get(TAG_SWEEP_DIR), folder)]
        seeds = []
        for parent in parents:  # its own seeds, and those reused from earlier sweeps
            first = int(parent.data.params.get("seed", 0))
            count = int(parent.data.params.get("n_seeds", 0))
            found = _all(client, [parent.info.experiment_id],
                         f"tags.{TAG_CONFIG_HASH} = '{parent.data.tags.get(TAG_CONFIG_HASH)}' "
                         f"and tags.{TAG_KIND} = 'seed'" + wanted)
            seeds += [r for r in found if first <= int(r.data.params["seed"]) < first + count]
    else:
        experiment = client.get_experiment_by_name(str(source))
        if experiment is None:
            raise ConfigError(f"{source}: neither a sweep folder nor an MLflow experiment in {uri}")
        parents = _all(client, [experiment.experiment_id], f"tags.{TAG_KIND} = 'configuration'")
        seeds = _all(client, [experiment.experiment_id], f"tags.{TAG_KIND} = 'seed'" + wanted)
    names = {p.info.run_id: p.info.run_name for p in parents}
    hashes = {p.data.tags.get(TAG_CONFIG_HASH): p.info.run_name for p in parents}
    by_id = {p.info.run_id: p for p in parents}
    by_hash = {p.data.tags.get(TAG_CONFIG_HASH): p for p in parents}
    latest: dict[str, object] = {}
    for run in sorted(seeds, key=lambda r: r.info.start_time or 0):
        latest[run.data.tags.get(TAG_RUN_KEY) or run.info.run_id] = run
    rows = []
    for run in latest.values():
        parent = run.data.tags.get("mlflow.parentRunId")
        row = {"configuration": names.get(parent) or hashes.get(run.data.tags.get(TAG_CONFIG_HASH)),
               "seed": int(run.data.params["seed"])}
        row.update({k: _typed(v) for k, v in sorted(run.data.params.items())
                    if k.split(".", 1)[0] in SETTING_SECTIONS})
        owner = by_id.get(parent) or by_hash.get(run.data.tags.get(TAG_CONFIG_HASH))
        # what the configuration ran on: the node count used (the trace's, when the setting
        # is null), the jobs simulated and the number of seeds
        row.update({k: _typed(owner.data.params[k]) if owner is not None and k in owner.data.params else None
                    for k in CONFIGURATION_PARAMS})
        row.update(run.data.metrics)
        row.update(status=run.info.status, run_id=run.info.run_id, parent_run_id=parent)
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.sort_values(["configuration", "seed"], kind="stable").reset_index(drop=True)


def _folder_uri(folder: Path) -> str | None:
    """The store a sweep folder's configs name (as the report finds it)."""
    if not folder.is_dir():
        return None
    from .report.html import discover_uri, load_folder

    records, _ = load_folder(folder)
    return discover_uri(records)


def _same(tag: str | None, folder: Path) -> bool:
    return bool(tag) and Path(tag).resolve() == folder.resolve()


def _typed(text: str):
    """MLflow keeps params as text: numbers, booleans, None and lists become values again
    (None and NaN as pandas shows missing values), the rest stays text."""
    special = {"None": None, "null": None, "True": True, "False": False, "true": True, "false": False}
    if text in special:
        return special[text]
    if text.startswith(("[", "{", "(")):
        import ast

        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text
    try:
        value = float(text)
    except (TypeError, ValueError):
        return text
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value
