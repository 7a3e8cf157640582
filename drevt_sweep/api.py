"""drevt-sweep from Python (a notebook, a script): one call from a trace to a schedule and its
metrics, and one call from a finished sweep to a tidy DataFrame.

    from drevt_sweep.api import simulate_trace, load_sweep
    run = simulate_trace("kth_sp2", backfill="conservative")
    run.metrics["wait_mean"], run.frame().head()
    runs = load_sweep("outputs/multirun/2026-12-01_09-30-00")   # or an experiment's name

Nothing here needs Hydra; only :func:`load_sweep` imports MLflow.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .trace.catalogue import CATALOGUE, locate
from .errors import ConfigError
from .jobs import JobTable
from .sim.runtime import RunTimeModel
from .sim.schedule import Schedule
from .sim.workload import WorkloadSpec

__all__ = ["Simulation", "simulate_trace", "load_sweep", "trace_path"]

BUNDLED = {"kth_sp2": "pkg://drevt_sweep/data/traces/KTH-SP2-1996-2.1-cln.swf.gz"}
DEFAULT_NODES = 795  # Lassen, the seeds' default, when the trace states no machine size


@dataclass(frozen=True)
class Simulation:
    """One simulated (or replayed) seed: the jobs as simulated, their schedule, its metrics."""

    jobs: JobTable
    schedule: Schedule
    metrics: dict[str, float]

    def frame(self) -> pd.DataFrame:
        """One row per job: the job's columns, begin, end, wait, run time (``Schedule.to_frame``)."""
        return self.schedule.to_frame(self.jobs)


def trace_path(trace: str | Path) -> Path:
    """A file path as it is; a catalogue name (``kth_sp2``, ``lanl_cm5`` ...) where it is."""
    from .trace.options import resolve_trace_path

    text = str(trace)
    if text in BUNDLED:
        return resolve_trace_path(BUNDLED[text], ".")
    if text in CATALOGUE and not Path(text).exists():
        return Path(locate(text))
    return resolve_trace_path(text, ".")


def simulate_trace(
    trace: str | Path,
    *,
    trace_format: str | None = None,
    priority: str = "fcfs",
    backfill: str = "easy",
    replay: bool = False,
    total_nodes: int | None = None,
    run_time: str | RunTimeModel = "actual",
    scale: float = 1.0,
    stddev: float = 0.0,
    seed: int = 0,
    timezone: str | None = None,
    queues: str | tuple[str, ...] = "all",
    workload: WorkloadSpec | None = None,
    enforce_limits: bool = True,
    cache: bool = True,
) -> Simulation:
    """Read a trace (through the on-disk cache) and simulate one seed of it.

    ``trace``: a path or a catalogue name. ``trace_format``: ``swf`` for ``.swf``/``.swf.gz``
    names, else ``simple`` unless given (``lassen``, ``slurm``). ``priority``/``backfill``: the
    engine's names (fcfs/sjf/ljf/smallest/largest; none/easy/conservative/easy_drevt);
    ``replay=True`` replays the recorded history instead. ``run_time``: ``actual``, ``limit``,
    or a distribution (``normal``, ``lognormal``, ``uniform``) with ``scale``/``stddev`` as in
    the README, or a ``RunTimeModel``. ``total_nodes``: default the size the trace states,
    else 795. Raises ``DrevtError`` (a message naming file, line and value) on bad input.
    """
    from .sweep.seeds import RunSpec, simulate_seed
    from .sim.metrics import compute_metrics
    from .trace import ReadOptions, read_trace
    from .trace.cache import load_trace

    path = trace_path(trace)
    if trace_format is None:
        trace_format = "swf" if path.name.endswith((".swf", ".swf.gz")) else "simple"
    options = ReadOptions(trace_format=trace_format, timezone=timezone, queues=queues,
                          force_simulation=not replay)
    jobs = load_trace(path, options) if cache else read_trace(path, options)
    if isinstance(run_time, str):
        if run_time in ("actual", "limit"):
            model = RunTimeModel(mode=run_time)
        elif run_time in ("normal", "lognormal", "uniform"):
            model = RunTimeModel(mode="distribution", distribution=run_time, scale=scale,
                                 stddev=stddev)
        else:
            raise ConfigError(f"run_time must be actual, limit, normal, lognormal or uniform, "
                              f"got {run_time!r}")
    else:
        model = run_time
    model.validate()
    spec = RunSpec(total_nodes=int(total_nodes or jobs.meta.machine_nodes or DEFAULT_NODES),
                   priority=priority, backfill=backfill, replay=replay, run_time=model,
                   enforce_limits=enforce_limits, workload=workload or WorkloadSpec())
    seed_jobs, schedule = simulate_seed(jobs, spec, seed)
    return Simulation(seed_jobs, schedule, compute_metrics(seed_jobs, schedule))


# ------------------------------------------------------------------------------ a sweep's runs
SETTING_SECTIONS = ("trace", "format", "timezone", "run_time", "policy", "system", "workload")


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
    latest: dict[str, object] = {}
    for run in sorted(seeds, key=lambda r: r.info.start_time or 0):
        latest[run.data.tags.get(TAG_RUN_KEY) or run.info.run_id] = run
    rows = []
    for run in latest.values():
        parent = run.data.tags.get("mlflow.parentRunId")
        row = {"configuration": names.get(parent) or hashes.get(run.data.tags.get(TAG_CONFIG_HASH)),
               "seed": int(run.data.params["seed"])}
        row.update({k: _number(v) for k, v in sorted(run.data.params.items())
                    if k.split(".", 1)[0] in SETTING_SECTIONS})
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


def _number(text: str):
    """MLflow keeps params as text: numbers become numbers again, the rest stays text."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return text
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value
