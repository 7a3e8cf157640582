"""Figures per configuration and a self-contained HTML report per sweep.

``configuration_figures`` is what the sweep calls for each configuration (from the schedule of the
seed it kept, with the trace's own history as the baseline); ``build_report`` gathers a finished
sweep — from the MLflow store (the parent runs whose ``drevt_sweep_dir`` tag is the sweep folder)
or, when no store answers, from the ``result.json`` files of the folder — and writes
``report.html`` from the Jinja2 template ``templates/report.html.j2`` (autoescaped; figures
embedded as base64 PNG, so the file travels alone) with the PNGs beside
it in ``report_files/``. ``drevt-sweep-report SWEEP_DIR`` rebuilds it at any time.

Sources, in order: the job folders (``result.json``, ``config.yaml``, ``seed_metrics.csv``,
``schedule_seed<N>.csv.gz``, or ``.csv`` from older sweeps, ``.hydra/overrides.yaml``) when they exist; the MLflow store for the
same runs, which also covers a folder that has been deleted (configs and schedules are then
downloaded from the runs' artifacts, seeds from the child runs).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import __version__
from .. import units
from ..errors import DrevtError
from ..files import load_yaml
from ..garbage import fewer_collections
from ..tracking.store import flatten
from .factors import as_number, numeric_keys, others_label, short_key, swept_keys
from .headline import headline_view, offered_load_view

PROG = "drevt-sweep-report"
REPORT_NAME = "report.html"
FIGURE_DIR = "report_files"
CONFIGURATION_FIGURE_DIR = "figures"  # where the sweep writes a job's figures (configuration_figures)
FIGURE_NAMES = ("wait_cdf.png", "utilization_queue.png", "slowdown_by_class.png", "gantt.png")
KEY_METRICS = ("wait_mean", "wait_p95", "bsld_mean", "utilization")
PAIRED_METRICS = ("wait_mean", "wait_p95", "bsld_mean", "utilization")
# Config sections that are bookkeeping, not part of what decides results.
BOOKKEEPING_SECTIONS = ("parallel", "tracking", "paths", "hydra")
LOAD_FACTOR = "workload.load_factor"
# The config sections that decide results (sweep.RESULT_SECTIONS): the MLflow params kept when a
# run's config.yaml is not available (other params, e.g. excluded.* or workload_report.*, are
# bookkeeping).
CONFIG_SECTIONS = ("trace", "format", "timezone", "run_time", "policy", "system", "workload")
MAX_CDF_CURVES = 12  # more curves than this on one CDF are unreadable
PAIRED_OPEN_MAX = 60  # a longer paired table starts folded (<details>): the headline sums it up
MAX_PAIRED_FIGURE_ROWS = 12  # comparisons in the forest plot (the table holds every one)
MAX_COMPARISON_HUES = 12  # more run-time models x settings than this: the curves show them instead
# Per-configuration sections (details, config, four figures each) up to this many
# configurations; above it only on request (``--per-configuration all``): at 1,000
# configurations they would be ~1,000 figures, minutes of drawing and hundreds of MB.
PER_CONFIGURATION_MAX = 50


class ReportError(DrevtError):
    """The sweep folder or store cannot give a report (a message for the user)."""


# =============================================================================== per configuration
def seed_percentile_ci(seed_metrics) -> dict[float, tuple[float, float]]:
    """Mean and 95% CI half-width over seeds of the wait percentiles (``figures.seed_percentile_ci``)."""
    from . import figures

    return figures.seed_percentile_ci(seed_metrics)


def frame_figures(out_dir: Path, frame: pd.DataFrame, total_nodes: int,
                  baseline: pd.DataFrame | None = None, *, label: str = "simulated",
                  seed_metrics=None, seed: int | None = None,
                  gantt_max_jobs: int | None = None) -> list[Path]:
    """The per-configuration figures of a schedule frame: the same files the sweep draws
    (``figures.configuration_figure_files``)."""
    from . import figures

    gantt_max_jobs = figures.GANTT_MAX_JOBS if gantt_max_jobs is None else gantt_max_jobs
    return figures.configuration_figure_files(out_dir, frame, total_nodes, baseline, label=label,
                                              seed_metrics=seed_metrics, seed=seed,
                                              gantt_max_jobs=gantt_max_jobs)


def configuration_figures(
    out_dir: Path,
    jobs,
    schedule,
    baseline_schedule=None,
    *,
    label: str = "simulated",
    seed_metrics=None,
    seed: int | None = None,
) -> list[Path]:
    """Write the figures of one configuration into ``out_dir`` and return their paths.

    From the schedule of one seed: the wait-time CDF (with ``baseline_schedule``, the replay of
    the same trace, as the reference curve), utilization and queue length over time, bounded
    slowdown by job-size and requested-time class, and for at most a few hundred jobs a Gantt
    chart. ``seed_metrics`` (one metrics dict per seed, or a frame) adds the mean ± 95% CI of the
    wait percentiles over all seeds to the CDF. Files: ``wait_cdf.png``,
    ``utilization_queue.png``, ``slowdown_by_class.png`` and maybe ``gantt.png``.
    """
    from .figures import schedule_frame

    frame = schedule_frame(jobs, schedule)
    baseline = schedule_frame(jobs, baseline_schedule) if baseline_schedule is not None else None
    return frame_figures(out_dir, frame, int(schedule.total_nodes), baseline, label=label,
                         seed_metrics=seed_metrics, seed=seed)


# =============================================================================== what a sweep holds
@dataclass
class ConfigRecord:
    """One configuration of a sweep, from its folder and/or its MLflow parent run."""

    label: str
    status: str
    params: dict[str, str] = field(default_factory=dict)  # flattened result config, as strings
    metrics: dict[str, float] = field(default_factory=dict)  # aggregates over seeds
    seeds: list[int] = field(default_factory=list)
    seed_metrics: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per seed
    trace_checksum: str | None = None
    config_hash: str | None = None
    total_nodes: int | None = None
    jobs: int | None = None
    run_id: str | None = None
    error: str | None = None
    config_text: str | None = None  # the resolved YAML
    config: dict | None = None  # config_text parsed (once)
    overrides: list[str] | None = None  # the job's Hydra overrides
    schedule_path: Path | None = None
    schedule_seed: int | None = None
    job_dir: Path | None = None
    version: str | None = None
    # filled by describe()
    key: str = ""
    short: str = ""
    policy: str = ""
    model: str = ""
    line: str = ""

    @property
    def replay(self) -> bool:
        return self.params.get("policy.replay") == "True"

    @property
    def recorded_run_times(self) -> bool:
        """Jobs run as long as they did on the real machine (``run_time=actual``)."""
        return self.params.get("run_time.mode", "actual") == "actual"

    @property
    def stochastic(self) -> bool:
        return not self.replay and self.params.get("run_time.mode") == "distribution"


def config_params(config: Mapping) -> dict[str, str]:
    """The result-deciding part of a resolved config, flattened, values as MLflow logs them."""
    sections = {k: v for k, v in config.items()
                if isinstance(v, Mapping) and k not in BOOKKEEPING_SECTIONS}
    return {k: str(v) for k, v in flatten(sections).items()}


_SECTIONS: dict[str, tuple] = {}  # a top-level section's YAML -> (its key, its value, its params)
_TOP_LEVEL = re.compile(r"(?m)^(?=[^\s#])")  # where a line starts a top-level key


def _config_and_params(text: str) -> tuple[dict, dict[str, str]]:
    """A ``config.yaml`` and its :func:`config_params`, each top-level section parsed once per
    distinct text: a sweep's configurations differ in a section or two, and parsing each whole
    file was a third of reading a 1,000-configuration folder. The same result as parsing the
    whole text (a block mapping's top-level keys start at column 0 and nothing else does);
    anything else -- a section that is not one key, a key twice -- is parsed whole. The
    sections' values are shared by the configurations that have them (copying them was a
    quarter of reading a 10,000-configuration folder): the report only reads them."""
    sections = [_section(piece) for piece in _TOP_LEVEL.split(text) if piece]
    keys = {section[0] for section in sections if section is not None}
    if not sections or None in sections or len(keys) != len(sections):
        config = load_yaml(text) or {}
        return config, config_params(config)
    config = {key: value for key, value, _ in sections}
    params = {name: value for _, _, own in sections for name, value in own.items()}
    return config, params


def _section(piece: str) -> tuple | None:
    """``(key, value, params)`` of one top-level section's YAML (cached); None when it is not
    one key on its own."""
    known = _SECTIONS.get(piece)
    if known is None:
        try:
            parsed = load_yaml(piece)
        except Exception:  # noqa: BLE001 - the whole text decides
            return None
        if not isinstance(parsed, dict) or len(parsed) != 1:
            return None
        if len(_SECTIONS) >= 20_000:  # bounded: a long sweep of ever-new values
            _SECTIONS.clear()
        known = _SECTIONS[piece] = (*next(iter(parsed.items())), config_params(parsed))
    return known


_ITEMS: dict[str, list | None] = {}  # an overrides.yaml item's YAML -> [its string], or None
_ITEM_START = re.compile(r"(?m)^(?=- )")  # where a block sequence's item starts


def _overrides_of(text: str) -> list[str]:
    """An ``overrides.yaml`` (a list of strings), each item parsed once per distinct text: a
    sweep's configurations share most of their overrides (each item of a block sequence
    starts a line with ``- ``, its continuation lines are indented). Anything else -- an
    empty list ``[]``, an item that is not one string -- is parsed whole, as before."""
    items = []
    for piece in _ITEM_START.split(text):
        if not piece:
            continue
        parsed = _ITEMS.get(piece, False)
        if parsed is False:
            if len(_ITEMS) >= 20_000:  # bounded: a long sweep of ever-new values
                _ITEMS.clear()
            try:
                value = load_yaml(piece)
            except Exception:  # noqa: BLE001 - the whole text decides
                value = None
            parsed = _ITEMS[piece] = value if isinstance(value, list) and len(value) == 1 \
                and isinstance(value[0], str) else None
        if parsed is None:
            return [str(o) for o in (load_yaml(text) or [])]
        items.extend(parsed)
    return items


def _job_order(path: Path) -> tuple[int, str]:
    return (int(path.name), "") if path.name.isdigit() else (1 << 30, path.name)


def load_folder(sweep_dir: Path) -> tuple[list[ConfigRecord], list[str]]:
    """Records from the ``result.json`` files of a sweep folder (or of a single run's folder)."""
    notes: list[str] = []
    if not sweep_dir.is_dir():
        return [], notes
    dirs = sorted((p.parent for p in sweep_dir.glob("*/result.json")), key=_job_order)
    if (sweep_dir / "result.json").is_file():
        dirs.insert(0, sweep_dir)
    records = []
    for job_dir in dirs:
        try:
            result = json.loads((job_dir / "result.json").read_text())
        except (OSError, ValueError) as exc:
            notes.append(f"{job_dir / 'result.json'}: unreadable ({exc}); left out")
            continue
        record = ConfigRecord(
            label=str(result.get("label", job_dir.name)),
            status=str(result.get("status", "?")),
            metrics={k: float(v) for k, v in (result.get("metrics") or {}).items()
                     if isinstance(v, (int, float))},
            seeds=[int(s) for s in result.get("seeds") or []],
            trace_checksum=result.get("trace_checksum"),
            config_hash=result.get("config_hash"),
            total_nodes=result.get("total_nodes"),
            jobs=result.get("jobs"),
            run_id=result.get("parent_run_id"),
            error=result.get("error"),
            job_dir=job_dir,
            version=result.get("drevt_version"),
        )
        _fill_from_folder(record, job_dir)
        records.append(record)
    return records, notes


def _fill_from_folder(record: ConfigRecord, job_dir: Path) -> None:
    """Config, overrides, per-seed metrics and the kept schedule from a job folder (listed
    once: two globs and the checks of each file were a tenth of reading 10,000 folders)."""
    try:
        with os.scandir(job_dir) as listing:
            files = {entry.name for entry in listing if entry.is_file()}
    except OSError:
        files = set()
    for name in ("config.yaml", ".hydra/config.yaml"):
        path = job_dir / name
        if record.config_text is None and (name in files if "/" not in name else path.is_file()):
            record.config_text = path.read_text()
            try:
                record.config, record.params = _config_and_params(record.config_text)
            except Exception:  # noqa: BLE001 - a damaged file only costs the params
                pass
    overrides = job_dir / ".hydra" / "overrides.yaml"
    if overrides.is_file():
        try:
            record.overrides = _overrides_of(overrides.read_text())
        except Exception:  # noqa: BLE001
            pass
    metrics_csv = job_dir / "seed_metrics.csv"
    if "seed_metrics.csv" in files and metrics_csv.stat().st_size > 1:
        try:
            record.seed_metrics = seed_metrics_by_seed(metrics_csv)
        except (ValueError, pd.errors.EmptyDataError, pd.errors.ParserError):
            pass
    schedules = sorted(n for n in files if n.startswith("schedule_seed"))
    _set_schedule(record, [job_dir / n for n in schedules if n.endswith(".csv.gz")]
                  or [job_dir / n for n in schedules if n.endswith(".csv")])


def seed_metrics_by_seed(path: Path) -> pd.DataFrame | None:
    """A ``seed_metrics.csv`` indexed by seed, in seed order (None without a seed column):
    plain numbers go into one float block at once, 4x faster than a column dict and
    ``set_index`` (a 1,000-configuration report reads 1,000 of them); anything else goes
    through :func:`read_seed_metrics`."""
    import csv

    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    if rows and "seed" in rows[0] and len(set(rows[0])) == len(rows[0]):
        header, body = rows[0], rows[1:]
        try:
            if any(len(row) != len(header) for row in body):
                raise ValueError("not a plain table")
            values = np.array([[float(v) if v != "" else np.nan for v in row] for row in body],
                              dtype=float).reshape(len(body), len(header))
            at = header.index("seed")
            seeds = values[:, at]
            if np.isfinite(seeds).all() and (seeds == np.round(seeds)).all():
                frame = pd.DataFrame(np.delete(values, at, axis=1), columns=header[:at] + header[at + 1:],
                                     index=pd.Index(seeds.astype(np.int64), name="seed"))
                return frame if frame.index.is_monotonic_increasing else frame.sort_index()
        except ValueError:
            pass
    frame = read_seed_metrics(path)
    return frame.set_index("seed").sort_index() if "seed" in frame else None


def read_seed_metrics(path: Path) -> pd.DataFrame:
    """A ``seed_metrics.csv`` (a header and a few rows of numbers) as a frame: parsed by the
    csv module, since ``pd.read_csv``'s ~5 ms of set-up per file was 5 s of a 1,000-configuration
    report; anything that is not plain numbers goes through ``pd.read_csv`` as before."""
    import csv

    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    if not rows:
        raise pd.errors.EmptyDataError(f"{path}: empty")
    header, body = rows[0], rows[1:]
    try:
        columns = {name: [float(row[i]) if row[i] != "" else np.nan for row in body]
                   for i, name in enumerate(header)}
        if any(len(row) != len(header) for row in body) or len(set(header)) != len(header):
            raise ValueError("not a plain table")
    except (ValueError, IndexError):
        return pd.read_csv(path)
    frame = pd.DataFrame(columns, columns=header)
    if "seed" in frame and body:
        frame["seed"] = frame["seed"].astype(np.int64)
    return frame


def _set_schedule(record: ConfigRecord, paths: Sequence[Path]) -> None:
    def seed_of(path: Path) -> int:
        match = re.search(r"schedule_seed(\d+)\.csv(\.gz)?$", path.name)
        return int(match.group(1)) if match else 1 << 30

    if paths:
        path = min(paths, key=seed_of)
        record.schedule_path, record.schedule_seed = path, seed_of(path)


# ------------------------------------------------------------------------------- the MLflow store
def discover_uri(records: Sequence[ConfigRecord]) -> str | None:
    """The tracking store the sweep's own configs name (the embedded one when it exists)."""
    from ..tracking.store import embedded_uri

    for record in records:
        if not record.config_text:
            continue
        try:
            config = record.config if record.config is not None else load_yaml(record.config_text) or {}
        except Exception:  # noqa: BLE001
            continue
        tracking = config.get("tracking") or {}
        if not tracking.get("enabled", True):
            continue
        if tracking.get("uri"):
            return str(tracking["uri"])
        root = (config.get("paths") or {}).get("output_root")
        if root and (Path(root) / "mlflow.db").is_file():
            return embedded_uri(root)
    return None


def default_store() -> str | None:
    """The embedded store a sweep run from here writes by default (``paths.output_root``:
    ``$DREVT_ROOT/outputs``, else ``./outputs``), when it exists: a folder that is gone names
    no store, and the README promises a rebuild from the store."""
    from ..tracking.store import embedded_uri

    root = Path(os.environ.get("DREVT_ROOT") or Path.cwd()) / "outputs"
    return embedded_uri(root) if (root / "mlflow.db").is_file() else None


def _check_store(uri: str) -> None:
    """Fail with a clear message instead of silently creating an empty store."""
    if uri.startswith("sqlite:///"):
        path = Path(uri[len("sqlite:///"):])
        if not path.is_file():
            raise ReportError(f"no MLflow store at {path} (the sqlite file does not exist)")
    else:
        from ..tracking.store import check_reachable

        check_reachable(uri)


def _same_folder(tag: str | None, sweep_dir: Path) -> bool:
    if not tag:
        return False
    candidates = {os.path.normpath(str(sweep_dir)), os.path.normpath(str(sweep_dir.resolve()))}
    return os.path.normpath(tag) in candidates or os.path.normpath(os.path.realpath(tag)) in candidates


def _search_all(client, experiment_ids: list[str], filter_string: str) -> list:
    from ..tracking.store import search_all_runs

    return search_all_runs(client, experiment_ids, filter_string)


def load_mlflow(
    sweep_dir: Path, uri: str, folder_records: Sequence[ConfigRecord], download_dir: Path
) -> list[ConfigRecord]:
    """Records from the parent runs tagged with this sweep folder (empty if there are none).

    When the folder's ``result.json`` files name their parent runs, exactly those are used;
    otherwise every parent run tagged with the folder, the latest per configuration label.
    """
    from ..tracking.store import TAG_CONFIG_HASH, TAG_ERROR, TAG_KIND, TAG_LABEL, TAG_SWEEP_DIR

    _check_store(uri)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment_ids = [e.experiment_id for e in client.search_experiments()]
    if not experiment_ids:
        return []
    filter_string = f"tags.{TAG_KIND} = 'configuration'"
    if "'" not in str(sweep_dir):
        filter_string += f" and tags.{TAG_SWEEP_DIR} = '{sweep_dir}'"
    parents = [r for r in _search_all(client, experiment_ids, filter_string)
               if _same_folder(r.data.tags.get(TAG_SWEEP_DIR), sweep_dir)]
    if not parents and "'" not in str(sweep_dir) and sweep_dir.resolve() != sweep_dir:
        parents = [r for r in _search_all(client, experiment_ids, f"tags.{TAG_KIND} = 'configuration'")
                   if _same_folder(r.data.tags.get(TAG_SWEEP_DIR), sweep_dir)]
    by_id = {r.info.run_id: r for r in parents}
    wanted = [rec.run_id for rec in folder_records if rec.run_id in by_id]
    if wanted:
        chosen = [by_id[i] for i in wanted]
    else:
        latest: dict[str, object] = {}
        for run in sorted(parents, key=lambda r: r.info.start_time or 0):
            latest[run.info.run_name or run.info.run_id] = run
        chosen = sorted(latest.values(), key=lambda r: r.info.start_time or 0)
    folder_by_id = {rec.run_id: rec for rec in folder_records if rec.run_id}
    records = []
    for run in chosen:
        params = dict(run.data.params)
        tags = dict(run.data.tags)
        record = ConfigRecord(
            label=tags.get(TAG_LABEL) or run.info.run_name or run.info.run_id,
            status=run.info.status,
            params={k: v for k, v in params.items() if k.split(".", 1)[0] in CONFIG_SECTIONS},
            metrics=dict(run.data.metrics),
            trace_checksum=params.get("trace_checksum") or tags.get("trace_checksum"),
            config_hash=tags.get(TAG_CONFIG_HASH),
            total_nodes=_int_or_none(params.get("total_nodes")),
            jobs=_int_or_none(params.get("jobs")),
            run_id=run.info.run_id,
            error=tags.get(TAG_ERROR),
            version=params.get("drevt_version"),
        )
        first, count = _int_or_none(params.get("seed")), _int_or_none(params.get("n_seeds"))
        seed_range = set(range(first, first + count)) if first is not None and count else None
        local = folder_by_id.get(run.info.run_id)
        # The job folder's seed_metrics.csv is what the sweep logged as this run's seeds: when
        # it holds every one of them, one store query per configuration is saved (1,000 of them
        # in a 1,000-configuration sweep).
        complete = (local is not None and seed_range is not None and not local.seed_metrics.empty
                    and set(local.seed_metrics.index) == seed_range)
        if complete:
            record.seeds, record.seed_metrics = sorted(seed_range), local.seed_metrics
        elif record.config_hash:
            children = _search_all(
                client, [run.info.experiment_id],
                f"tags.{TAG_CONFIG_HASH} = '{record.config_hash}' and tags.{TAG_KIND} = 'seed' "
                "and attributes.status = 'FINISHED'",
            )
            rows: dict[int, tuple[bool, int, dict]] = {}
            for child in children:
                seed = _int_or_none(child.data.params.get("seed"))
                if seed is None or (seed_range is not None and seed not in seed_range):
                    continue
                own = child.data.tags.get("mlflow.parentRunId") == run.info.run_id
                rank = (own, child.info.start_time or 0)
                if seed not in rows or rank > rows[seed][:2]:
                    rows[seed] = (own, child.info.start_time or 0, dict(child.data.metrics))
            if rows:
                record.seed_metrics = pd.DataFrame(
                    [{"seed": s, **m} for s, (_, _, m) in sorted(rows.items())]
                ).set_index("seed")
                record.seeds = sorted(rows)
        if local is not None:  # the folder has the Hydra overrides and the files already
            record.job_dir = local.job_dir
            record.config_text = local.config_text
            record.overrides = local.overrides
            record.schedule_path, record.schedule_seed = local.schedule_path, local.schedule_seed
            if not record.seeds:
                record.seeds, record.seed_metrics = local.seeds, local.seed_metrics
            record.jobs = record.jobs or local.jobs
        else:
            _download(client, record, download_dir / run.info.run_id)
        if record.config_text:  # the resolved config is exact; params are strings of it
            try:
                parsed = local.config if local is not None and local.config is not None else None
                record.config = parsed if parsed is not None else load_yaml(record.config_text) or {}
                record.params = config_params(record.config) or record.params
            except Exception:  # noqa: BLE001
                pass
        records.append(record)
    return records


def _download(client, record: ConfigRecord, where: Path) -> None:
    """The resolved config and the kept schedule, from the parent run's artifacts."""
    where.mkdir(parents=True, exist_ok=True)
    try:
        names = {a.path for a in client.list_artifacts(record.run_id)}
        if "config.yaml" in names:
            path = client.download_artifacts(record.run_id, "config.yaml", str(where))
            record.config_text = Path(path).read_text()
        if "schedules" in names:
            schedules = [a.path for a in client.list_artifacts(record.run_id, "schedules")
                         if a.path.endswith((".csv", ".csv.gz"))]
            local = [Path(client.download_artifacts(record.run_id, p, str(where))) for p in schedules[:1]]
            _set_schedule(record, local)
    except Exception:  # noqa: BLE001 - missing artifacts only cost figures
        pass


def _int_or_none(value) -> int | None:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None


# =============================================================================== labels and factors
def describe(records: Sequence[ConfigRecord]) -> None:
    """Short labels from what varies across the sweep: ``policy``, ``model`` (run-time model and
    the other varying settings) and ``line`` (the same without the load factor)."""
    keys = sorted({k for r in records for k in r.params})
    values = {k: [r.params.get(k, "—") for r in records] for k in keys}
    varying = [k for k in keys if len(set(values[k])) > 1]

    # per sub-key, the values it takes under each option's name (one pass, not one per record)
    under_name: dict[tuple[str, str], set] = {}
    for r in records:
        for k in varying:
            name_key = f"{k.split('.', 1)[0]}.name"
            under_name.setdefault((k, r.params.get(name_key)), set()).add(r.params.get(k, "—"))

    def parts(record: ConfigRecord, group: str) -> list[str]:
        name_key = f"{group}.name"
        out = []
        if name_key in varying and name_key in record.params:
            out.append(record.params[name_key])
        for k in varying:
            if not k.startswith(group + ".") or k == name_key or k not in record.params:
                continue
            # a sub-key that only follows the option's name is implied by it
            if len(under_name[(k, record.params.get(name_key))]) > 1:
                short = k.split(".", 1)[1] if group in ("policy", "run_time") else k
                out.append(f"{short}={record.params[k]}")
        return out

    groups = list(dict.fromkeys(k.split(".", 1)[0] for k in varying))
    for record in records:
        policy = " ".join(parts(record, "policy")) or record.params.get("policy.name", "?")
        if record.replay:
            policy = "replay"
        model = parts(record, "run_time") if not record.replay else ["history"]
        others = []
        for group in groups:
            if group not in ("policy", "run_time"):
                others.extend(p for p in parts(record, group))
        if not model and not record.replay:
            model = [record.params.get("run_time.name", "")]
        line_others = [p for p in others if not p.startswith(LOAD_FACTOR + "=")]
        record.policy = policy
        record.model = " · ".join([p for p in model + others if p]) or "—"
        record.line = " · ".join([p for p in [policy] + model + line_others if p])
        record.short = " · ".join([p for p in [policy] + model + others if p])
    seen: dict[str, int] = {}
    for record in records:
        base = record.short or record.label
        seen[base] = seen.get(base, 0) + 1
        record.key = base if seen[base] == 1 else f"{base} #{seen[base]}"


def _slug(record: ConfigRecord, index: int) -> str:
    if record.job_dir is not None and record.job_dir.name.isdigit():
        return f"config_{record.job_dir.name}"
    return f"config_{index}"


def line_styles(records: Sequence[ConfigRecord]) -> dict[str, dict]:
    """Colour by policy, dash pattern by model: the same policy reads as one family of lines."""
    from .figures import plt

    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    dashes = ["-", ":", "-.", (0, (5, 1.5)), (0, (3, 1, 1, 1, 1, 1))]
    policies = list(dict.fromkeys(r.policy for r in records))
    models = list(dict.fromkeys(r.model for r in records))
    if len(policies) * len(models) > len(records) * 2 or len(models) > len(dashes):
        return {}  # not a policy x model grid: plain colour cycle
    return {r.key: {"color": colors[policies.index(r.policy) % len(colors)],
                    "linestyle": dashes[models.index(r.model)]} for r in records}


# =============================================================================== tables
def comparison_table(records: Sequence[ConfigRecord]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(simulated configurations, replay baselines) with policy, model and the key metrics."""
    rows = []
    for r in records:
        if not r.metrics:
            continue
        row = {"policy": r.policy, "model": r.model, "replay": r.replay, "label": r.key}
        for m in KEY_METRICS:
            row[m] = r.metrics.get(m, np.nan)
            row[f"{m}_ci95"] = r.metrics.get(f"{m}_ci95", np.nan)
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame, frame
    reference = frame[frame.replay].drop_duplicates(subset=list(KEY_METRICS)).reset_index(drop=True)
    return frame[~frame.replay].reset_index(drop=True), reference


def paired_table(records: Sequence[ConfigRecord], metrics: Sequence[str] = PAIRED_METRICS) -> pd.DataFrame:
    """Per-seed differences between policies that share everything else and their seeds."""
    from .figures import paired_difference

    groups: dict[tuple, list[ConfigRecord]] = {}
    for r in records:
        if r.replay or r.seed_metrics.empty or r.status != "FINISHED":
            continue
        key = tuple(sorted((k, v) for k, v in r.params.items() if not k.startswith("policy.")))
        groups.setdefault(key, []).append(r)
    rows = []
    for members in groups.values():
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                if a.policy == b.policy:
                    continue
                for metric in metrics:
                    if metric not in a.seed_metrics or metric not in b.seed_metrics:
                        continue
                    d = paired_difference(a.seed_metrics[metric], b.seed_metrics[metric])
                    if d.n == 0:
                        continue
                    rows.append({
                        "comparison": f"{b.policy} − {a.policy}" + (f" · {a.model}" if a.model != "—" else ""),
                        "a": a.key, "b": b.key, "model": a.model, "metric": metric, "seeds": d.n,
                        "mean_a": d.mean_a, "mean_b": d.mean_b, "difference": d.difference,
                        "paired_ci95": d.paired_ci95, "unpaired_ci95": d.unpaired_ci95,
                        "ratio": d.ratio, "deterministic": not (a.stochastic or b.stochastic),
                    })
    return pd.DataFrame(rows)


# =============================================================================== formatting
def column_places(metric: str, values: Iterable[float]) -> int:
    """The decimals of a whole table column of ``metric`` (``units.decimals``): one unit per
    metric (``units.unit``), named in the header, the same precision in every cell."""
    return units.decimals(metric, [v for v in values if v is not None])


def fmt_metric(metric: str, value, half=None, places: int | None = None) -> str:
    """A metric value (± its CI half-width) in the metric's display unit, without the unit's
    name (the column's header names it); ``places``: the column's decimals."""
    if value is None or not np.isfinite(value):
        return "–"
    places = units.decimals(metric, [value]) if places is None else places
    text = units.number(metric, value, places)
    if half is not None and np.isfinite(half) and half > 0:
        text += " ± " + units.number(metric, half, places)
    return text


def _command(args: Sequence[str], multirun: bool = False) -> str:
    return " ".join(["drevt-sweep"] + (["-m"] if multirun else []) + [shlex.quote(a) for a in args])


def reproduce_command(record: ConfigRecord) -> tuple[str, str]:
    """The command line that reruns one configuration, and where it came from."""
    if record.overrides is not None:
        return _command(record.overrides), "the job's Hydra overrides (.hydra/overrides.yaml)"
    args = [t for t in record.label.split() if "=" in t]
    first = record.seeds[0] if record.seeds else None
    if first is not None:
        args.append(f"seed={first}")
    if record.seeds:
        args.append(f"replicates={len(record.seeds)}")
    return _command(args), "reconstructed from the MLflow run (its name, seeds and params)"


def sweep_command(sweep_dir: Path) -> str | None:
    """The original multirun command, from the sweep's ``multirun.yaml``."""
    path = sweep_dir / "multirun.yaml"
    if not path.is_file():
        return None
    try:
        config = load_yaml(path.read_text()) or {}
        overrides = config["hydra"]["overrides"]
        task = [str(o) for o in overrides.get("task") or []]
        extra = [str(o) for o in overrides.get("hydra") or [] if not str(o).startswith("hydra.mode=")]
    except (KeyError, TypeError, ValueError):
        return None
    except Exception:  # noqa: BLE001 - a damaged file
        return None
    return _command(task + extra, multirun=True)


# =============================================================================== the report
@dataclass
class _Context:
    sweep_dir: Path
    figure_dir: Path
    records: list[ConfigRecord]
    source: str
    notes: list[str]
    uri: str | None
    per_configuration: bool = True  # figures in the per-configuration sections
    sections: bool = True  # per-configuration sections at all
    embed: "_Embedder | None" = None  # how a figure is saved and embedded (set by _render)


@fewer_collections()  # thousands of parsed configs: the default collected ~20% of the time
def build_report(
    sweep_dir: Path,
    tracking_uri: str | None = None,
    *,
    log_to_mlflow: bool = False,
    per_configuration: bool | None = None,
    sections: bool | None = None,
    from_folder: bool = False,
) -> Path:
    """Write ``report.html`` (and ``report_files/*.png``) into ``sweep_dir``; return its path.

    The runs come from the MLflow store at ``tracking_uri`` (default: the store the sweep's
    configs name, when it exists) — the parent runs tagged ``drevt_sweep_dir`` = this folder —
    or, when no store answers, from the folder's ``result.json`` files. ``log_to_mlflow`` also
    attaches the report to the sweep's own run (``drevt_kind=sweep``; created if missing);
    ``sections``: one section per configuration (its details, resolved config and figures);
    default for sweeps of at most ``PER_CONFIGURATION_MAX`` configurations. Larger sweeps get
    the headline, the sortable table and the curves only, and build in seconds.
    ``per_configuration=False`` keeps the sections but leaves out their figures (four per
    configuration add up); default: figures wherever there are sections. Raises ``ReportError`` when neither source knows the sweep.
    ``from_folder``: the sweep that has just written the folder builds its own report from
    its ``result.json``/``seed_metrics.csv`` files, which hold what it sent to the store (the
    same records, without reading 2 runs per configuration back: 10-25 s at 200 configurations
    on a loaded machine, issue 23); the store is still named for the rebuild command.
    """
    sweep_dir = Path(sweep_dir).expanduser().absolute()
    if sweep_dir.exists() and not sweep_dir.is_dir():
        raise ReportError(f"{sweep_dir} is not a folder")
    folder_records, notes = load_folder(sweep_dir)
    uri = tracking_uri or discover_uri(folder_records) or (None if folder_records else default_store())
    records: list[ConfigRecord] = []
    source = f"the result.json files in {sweep_dir}"
    with tempfile.TemporaryDirectory(prefix="drevt-report-") as scratch:
        if from_folder and folder_records:
            records = folder_records
            source = f"the sweep folder {sweep_dir}" + (f" (its runs: the MLflow store {uri})" if uri else "")
        elif uri:
            try:
                records = load_mlflow(sweep_dir, uri, folder_records, Path(scratch))
                if records:
                    source = f"the MLflow store {uri}"
                else:
                    notes.append(f"the MLflow store {uri} has no parent run tagged "
                                 f"drevt_sweep_dir={sweep_dir}; using the folder")
            except DrevtError as exc:
                notes.append(f"MLflow store not used: {exc}")
            except Exception as exc:  # noqa: BLE001 - an unreadable store: fall back to files
                notes.append(f"MLflow store not used: {type(exc).__name__}: {exc}")
        if not records:
            records = folder_records
        if not records:
            if tracking_uri and notes:
                raise ReportError(f"nothing to report for {sweep_dir}: no result.json files there; "
                                  + notes[-1])
            if not sweep_dir.exists():
                searched = f"the MLflow store {uri} has no runs of it" if uri else "no MLflow store names it"
                raise ReportError(f"{sweep_dir} does not exist ({searched}; give --tracking-uri)")
            raise ReportError(f"no sweep results in {sweep_dir}: no */result.json files and no "
                              "MLflow parent runs tagged with this folder")
        describe(records)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        figure_dir = sweep_dir / FIGURE_DIR
        if figure_dir.is_dir():
            shutil.rmtree(figure_dir)
        figure_dir.mkdir(parents=True)
        if sections is None:
            sections = len(records) <= PER_CONFIGURATION_MAX
        context = _Context(sweep_dir, figure_dir, records, source, notes, uri,
                           per_configuration=sections if per_configuration is None else per_configuration,
                           sections=sections)
        document = _render(context)
    target = sweep_dir / REPORT_NAME
    tmp = target.with_name(f".{REPORT_NAME}.tmp")
    tmp.write_text(document, encoding="utf-8")
    os.replace(tmp, target)
    if log_to_mlflow and uri and source.startswith("the MLflow store"):
        _log_report(uri, sweep_dir, records, target)
    return target


def _log_report(uri: str, sweep_dir: Path, records: Sequence[ConfigRecord], path: Path) -> None:
    """Attach the report to the sweep's own run (``drevt_kind=sweep``, tagged with the folder;
    created when the sweep has none), once, rather than to every parent run."""
    from mlflow.tracking import MlflowClient

    from ..tracking.store import TAG_KIND, TAG_SWEEP_DIR, TAG_SWEEP_RUN, Tracker

    client = MlflowClient(tracking_uri=uri)
    parents = [r for r in records if r.run_id]
    if not parents:
        return
    experiment_id = client.get_run(parents[0].run_id).info.experiment_id
    tracker = Tracker(uri, experiment_id)
    found = [r for r in _search_all(client, [experiment_id], f"tags.{TAG_KIND} = 'sweep'")
             if _same_folder(r.data.tags.get(TAG_SWEEP_DIR), sweep_dir)]
    if found:
        run_id = max(found, key=lambda r: r.info.start_time or 0).info.run_id
    else:
        run_id = tracker.start_run(f"sweep {sweep_dir.name}",
                                   {TAG_KIND: "sweep", TAG_SWEEP_DIR: str(sweep_dir)})
        tracker.finish(run_id, "FINISHED")
        for record in parents:
            tracker.log(record.run_id, tags={TAG_SWEEP_RUN: run_id})
    tracker.log_artifact(run_id, path)


class _Figures:
    """Schedules read once; baselines by trace checksum."""

    def __init__(self, context: _Context) -> None:
        self.context = context
        self._frames: dict[int, pd.DataFrame | None] = {}
        self._history: dict[tuple, pd.DataFrame | None] = {}

    def frame(self, record: ConfigRecord) -> pd.DataFrame | None:
        key = id(record)
        if key not in self._frames:
            frame = None
            if record.schedule_path is not None and record.schedule_path.is_file():
                from .figures import read_schedule_csv

                try:
                    frame = read_schedule_csv(record.schedule_path)
                except Exception as exc:  # noqa: BLE001
                    self.context.notes.append(f"{record.schedule_path}: unreadable ({exc})")
            self._frames[key] = frame
        return self._frames[key]

    def baseline(self, record: ConfigRecord) -> tuple[pd.DataFrame | None, str]:
        """The replay of the same trace: a replay configuration of the sweep, else the trace's
        own recorded history read again (through the trace cache). Only for a configuration
        that uses the recorded run times: beside drawn ones, the history is no reference."""
        if record.replay or not record.recorded_run_times:
            return None, ""
        workload = _workload_params(record)
        for other in self.context.records:
            if (other.replay and other.trace_checksum == record.trace_checksum
                    and _workload_params(other) == workload):
                frame = self.frame(other)
                if frame is not None:
                    return frame, f"the replay configuration '{other.key}'"
        if record.params.get("workload.name", "none") != "none":
            return None, ""  # a transformed workload: the trace's history is another workload
        key = (record.trace_checksum, record.total_nodes)
        if key not in self._history:
            self._history[key] = _history_from_trace(record)
        frame = self._history[key]
        return frame, ("the trace's recorded begin/end times" if frame is not None else "")


def _workload_params(record: ConfigRecord) -> dict[str, str]:
    return {k: v for k, v in record.params.items() if k.startswith("workload.")}


def _history_from_trace(record: ConfigRecord) -> pd.DataFrame | None:
    """Read the trace again (cached) for its historical begin/end times, if it has them."""
    if not record.config_text or not record.total_nodes:
        return None
    try:
        from omegaconf import OmegaConf

        from .figures import schedule_frame
        from ..sim.engine import historical_baseline
        from ..trace.options import read_options, resolve_trace_path
        from ..trace.cache import load_trace

        cfg = OmegaConf.create(record.config_text)
        path = resolve_trace_path(str(cfg.trace.path), str(cfg.paths.root))
        if not path.is_file():
            return None
        jobs = load_trace(path, read_options(cfg), cache_dir=str(cfg.paths.cache_dir))
        if record.trace_checksum and jobs.meta.checksum != record.trace_checksum:
            return None
        schedule = historical_baseline(jobs, int(record.total_nodes))
        return schedule_frame(jobs, schedule) if schedule is not None else None
    except Exception:  # noqa: BLE001 - no baseline is not an error
        return None


def _sweep_figures(record: ConfigRecord) -> list[Path]:
    """The figures the sweep drew into the job folder, if they belong to its latest run
    (written after that run's config.yaml), in the usual order."""
    if record.job_dir is None:
        return []
    folder = record.job_dir / CONFIGURATION_FIGURE_DIR
    config = record.job_dir / "config.yaml"
    paths = [folder / name for name in FIGURE_NAMES if (folder / name).is_file()]
    if not paths or not config.is_file():
        return []
    if min(p.stat().st_mtime for p in paths) < config.stat().st_mtime:
        return []  # left over from an earlier run in the same folder
    return paths


def _figure(path: Path, alt: str, caption: str = "") -> dict:
    """A saved PNG as the template embeds it (base64, so the page is one self-contained file)."""
    return {"data": _png64(path), "alt": alt, "caption": caption}


def _png64(path: Path) -> str:
    return base64.b64encode(Path(path).read_bytes()).decode("ascii")


class _Embedder:
    """``embed(fig, path, alt, caption)``: a figure the report embeds, saved by a child forked
    from this process (``figure_child.py``) while this one builds the report's other parts;
    :meth:`finish` waits for them and fills in the PNGs. Saving is most of a figure's cost
    (layout, drawing, PNG: a 200-configuration sweep's curves figure 0.29 s of the report's
    0.47 s), and the report is what a sweep does last, on one core. The same code draws the
    same figure in the child: the same bytes. Where ``fork`` is missing or the child fails,
    the figure is saved here, as before."""

    MAX_CHILDREN = 4  # children drawing at once (each a copy-on-write fork of this process)
    TIMEOUT = 120.0  # seconds a child may take before the figure is drawn here instead

    def __init__(self, plots) -> None:
        self.plots, self.pending = plots, []
        # What saving a PNG imports, imported before any fork: a child must not import (an
        # import lock held by another thread at the fork would never be released in it).
        import matplotlib.backends.backend_agg  # noqa: F401
        import PIL.PngImagePlugin  # noqa: F401

    def __call__(self, fig, path: Path, alt: str, caption: str = "") -> dict:
        from .figure_child import FiguresInChild

        item = {"data": None, "alt": alt, "caption": caption}
        if len(self.pending) >= self.MAX_CHILDREN:
            self._finish_one()
        child = FiguresInChild.start(lambda: [self.plots.save_figure(fig, path)])
        if child is None:
            item["data"] = _png64(self.plots.save_figure(fig, path))
        else:
            self.pending.append((item, child, fig, path))
        return item

    def _finish_one(self) -> None:
        item, child, fig, path = self.pending.pop(0)
        try:
            child.result(self.TIMEOUT)
        except RuntimeError:  # the child failed: drawn here (the same error, if it is the figure's)
            self.plots.save_figure(fig, path)
        else:
            self.plots.plt.close(fig)
        item["data"] = _png64(path)

    def finish(self) -> None:
        while self.pending:
            self._finish_one()

    def cancel(self) -> None:
        """An interrupt or an error: the children still drawing go too."""
        for _, child, fig, _ in self.pending:
            child.kill()
            self.plots.plt.close(fig)
        self.pending.clear()


@lru_cache(maxsize=1)
def _template():
    """The report template; autoescape on, so every value the view passes is escaped once."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("drevt_sweep.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template("report.html.j2")


def _render(ctx: _Context) -> str:
    from . import figures as plots

    ctx.embed = _Embedder(plots)
    try:
        view = _view(ctx)
        ctx.embed.finish()
    finally:
        ctx.embed.cancel()  # (nothing left once finished)
    return _template().render(**view)


def _view(ctx: _Context) -> dict:
    """Everything the template shows, as plain values: figures are drawn and saved here."""
    from . import figures as plots

    records = ctx.records
    figures = _Figures(ctx)
    traces = {}
    for r in records:
        if r.trace_checksum:
            traces.setdefault(r.trace_checksum, r)
    view = {
        "title": f"drevt-sweep report: {ctx.sweep_dir.name}",
        "sweep_dir": str(ctx.sweep_dir),
        "source": ctx.source,
        "records": records,
        "finished": sum(r.status == "FINISHED" for r in records),
        "built": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "version": __version__,
        "versions": sorted({r.version for r in records if r.version}),
        "notes": ctx.notes,
        "bsld_tau": f"{plots.BSLD_TAU:g}",
    }

    swept = swept_keys(records)
    numeric = numeric_keys(records, swept)
    # First: a large sweep's one figure, drawn by a child while the rest is built (_Embedder).
    view["curves"] = _curves_view(records, swept, numeric, ctx, plots)
    view["summary"] = _summary_view(records, swept)
    view["headline"] = headline_view(records, swept, numeric)
    view["offered_load"] = offered_load_view(records, figures.frame)

    view["comparison"] = None
    simulated, reference = comparison_table(records)
    hues = simulated["model"].nunique() if not simulated.empty else 0
    if not simulated.empty and hues <= MAX_COMPARISON_HUES:  # else the curves show it
        if reference.empty and len(traces) == 1:  # no replay configuration: the trace's history
            sims = [r for r in records if not r.replay and r.metrics and r.recorded_run_times]
            baseline, _ = figures.baseline(sims[0]) if sims else (None, "")
            if baseline is not None:
                reference = pd.DataFrame([{"policy": "replay", "model": "history", "replay": True,
                                           **history_metrics(baseline, int(sims[0].total_nodes))}])
        mixed = any(" · " in m or "=" in m for m in simulated["model"])
        recorded = {r.model for r in records if not r.replay and r.recorded_run_times}
        fig = plots.comparison_figure(simulated, reference=reference if not reference.empty else None,
                                      reference_hues=recorded,
                                      legend_title="run-time model and settings" if mixed else "run-time model")
        view["comparison"] = ctx.embed(
            fig, ctx.figure_dir / "comparison.png",
            "comparison of the key metrics by policy and run-time model",
            "Each key metric by policy (x) and run-time model (colour): mean over seeds "
            "± 95% CI; the dashed line is the replay of the trace's history.")

    from .partitions import partition_view

    view["partitions"] = partition_view(records, ctx.figure_dir, plots, fmt_metric=fmt_metric,
                                        column_places=column_places, embed=ctx.embed)

    view["cdfs"] = []
    for checksum, first in traces.items():  # one wait-time CDF figure per trace
        members = _first_with(records, MAX_CDF_CURVES, lambda r: r.trace_checksum == checksum and not r.replay
                              and figures.frame(r) is not None)
        if not members:
            continue
        recorded = [r for r in members if r.recorded_run_times]
        baseline, _ = figures.baseline(recorded[0]) if recorded else (None, "")
        name = first.params.get("trace.name", checksum[:12])
        fig = plots.wait_cdf_figure(
            {r.key: figures.frame(r) for r in members}, baseline, styles=line_styles(members),
            title=f"Wait-time distribution on {name} (one seed per configuration)",
        )
        shown = "" if len(members) < MAX_CDF_CURVES else f" At most {MAX_CDF_CURVES} curves: the first configurations."
        view["cdfs"].append(ctx.embed(fig, ctx.figure_dir / f"wait_cdf_{checksum[:12]}.png",
                                    f"wait-time CDF on {name}",
                                    "The CDF of each configuration from the schedule of the seed it kept." + shown))

    view["per_user"] = _per_user_view(records, ctx, plots)

    view["paired"] = _paired_view(records, ctx, plots)
    view["paired_open_max"] = PAIRED_OPEN_MAX


    view["sections"] = ctx.sections
    view["per_configuration_max"] = PER_CONFIGURATION_MAX
    view["configurations"] = ([_configuration_view(r, index, ctx, figures) for index, r in enumerate(records)]
                              if ctx.sections else [])

    view["sweep_command"] = sweep_command(ctx.sweep_dir)
    view["traces"] = [{"name": r.params.get("trace.name", "?"), "path": r.params.get("trace.path", "?"),
                       "checksum": checksum, "jobs": f"{r.jobs:,}" if isinstance(r.jobs, int) else "–"}
                      for checksum, r in traces.items()]
    rebuild = [PROG, str(ctx.sweep_dir)] + (["--tracking-uri", ctx.uri] if ctx.uri else [])
    view["rebuild"] = " ".join(shlex.quote(a) for a in rebuild)
    return view


PER_USER_FILE = "per_user.csv"  # written by the sweep next to the kept seed's schedule


def _per_user_view(records: Sequence[ConfigRecord], ctx: _Context, plots) -> dict | None:
    """The per-user figure from the job folders' per_user.csv (the kept seed), if any."""
    tables = {}
    for r in records:
        path = r.job_dir / PER_USER_FILE if r.job_dir is not None else None
        if r.replay or path is None or not path.is_file():
            continue
        try:
            table = pd.read_csv(path, keep_default_na=False)
        except (OSError, ValueError, pd.errors.ParserError):
            continue
        if len(table) and {"bsld_mean", "wait_mean"} <= set(table.columns):
            tables[r.key] = table
    if not tables:
        return None
    chosen = dict(list(tables.items())[:MAX_CDF_CURVES])
    fig = plots.per_user_figure(chosen, styles=line_styles([r for r in records if r.key in chosen]))
    return ctx.embed(fig, ctx.figure_dir / "per_user.png", "per-user slowdown and wait",
                   "Users sorted worst first, from the seed each configuration kept: a flatter curve is a "
                   "fairer schedule. The summary gives the worst user's mean wait and Jain's index "
                   "(Σx)²/(n Σx²) over the users' mean bounded slowdowns (1 = all equal).")


def _first_with(records: Sequence[ConfigRecord], count: int, wanted) -> list[ConfigRecord]:
    """The first ``count`` records for which ``wanted(record)`` holds, testing no more (a test
    may read a schedule: a 1,000-configuration sweep must not read them all for 12 curves)."""
    out = []
    for r in records:
        if len(out) >= count:
            break
        if wanted(r):
            out.append(r)
    return out


SUMMARY_METRICS = {"wait_mean": "mean wait", "wait_p95": "p95 wait", "bsld_mean": "mean bounded slowdown",
                   "utilization": "utilization", "makespan": "makespan",
                   "user_wait_mean_max": "worst user's mean wait",
                   "user_bsld_jain": "Jain's index (users' slowdown)"}


def _cell(text: str, value=None) -> dict:
    """A table cell: its text and the number it sorts by (none: it sorts as text)."""
    number = float(value) if isinstance(value, (int, float)) and np.isfinite(value) else None
    return {"text": text, "v": "" if number is None else repr(number)}


def _summary_view(records: Sequence[ConfigRecord], swept: Sequence[str]) -> dict:
    """The sortable table of every configuration: the swept numbers as their own columns (sort
    by machine size, load ...), jobs run, rejected jobs when any configuration rejected some,
    and the metrics in one unit per column, named in its header (``units``)."""
    numeric = [k for k in numeric_keys(records, swept)]
    rejected = any(r.metrics.get("jobs_rejected", 0) > 0 for r in records)
    metrics = [m for m in SUMMARY_METRICS if any(m in r.metrics for r in records)] or list(SUMMARY_METRICS)[:4]
    places = {m: column_places(m, [r.metrics.get(m) for r in records]) for m in metrics}
    header = ["configuration", "status", *(short_key(k) for k in numeric), "seeds", "jobs run"]
    header += ["rejected jobs"] if rejected else []
    header += [units.header(m, SUMMARY_METRICS[m]) for m in metrics]
    rows = []
    for r in records:
        m = r.metrics
        ran = m.get("jobs_simulated", r.jobs if isinstance(r.jobs, int) else None)
        cells = [_cell(r.params.get(k, "–"), as_number(r.params.get(k))) for k in numeric]
        cells += [_cell(str(len(r.seeds)), len(r.seeds)),
                  _cell(f"{ran:,.0f}" if ran is not None else "–", ran)]
        if rejected:
            cells.append(_cell(f"{m['jobs_rejected']:,.0f}" if "jobs_rejected" in m else "–",
                               m.get("jobs_rejected")))
        cells += [_cell(fmt_metric(metric, m.get(metric), m.get(f"{metric}_ci95"), places[metric]),
                        m.get(metric)) for metric in metrics]
        rows.append({"key": r.key, "label": r.label, "status": r.status,
                     "error": r.error.splitlines()[0] if r.error else "", "cells": cells})
    return {"header": header, "rows": rows, "rejected": rejected}


CURVE_METRICS = ("wait_mean", "wait_p95", "bsld_mean", "utilization")


def _curves_view(records: Sequence[ConfigRecord], swept: Sequence[str], numeric: Sequence[str],
                 ctx: _Context, plots) -> list[dict]:
    """For each swept number: the headline metrics against it, one line per combination of the
    other swept keys, the seed CI as a band (and the rejected jobs when some were)."""
    out = []
    simulated = [r for r in records if not r.replay and r.metrics and r.status == "FINISHED"]
    if not simulated:
        return out
    rejected = any(r.metrics.get("jobs_rejected", 0) > 0 for r in simulated)
    metrics = [m for m in CURVE_METRICS if any(m in r.metrics for r in simulated)]
    metrics += ["jobs_rejected"] if rejected else []
    for key in numeric:
        others = [k for k in swept if k != key]
        rows = []
        for r in simulated:
            x = as_number(r.params.get(key))
            if x is None:
                continue
            row = {"x": x, "line": others_label(r, others)}
            for m in metrics:
                row[m] = r.metrics.get(m, np.nan)
                row[f"{m}_ci95"] = r.metrics.get(f"{m}_ci95", np.nan)
            rows.append(row)
        table = pd.DataFrame(rows)
        if table.empty or table["x"].nunique() < 2:
            continue
        lines = table["line"].nunique()
        fig = plots.metric_curves_figure(
            table, x="x", x_label=key, metrics=metrics,
            legend_title=" · ".join(k.split(".")[0] if k.endswith(".name") else short_key(k)
                                    for k in others) or None,
            title=f"Against {key}: mean over seeds ± 95% CI (band), one line per "
                  + ("combination of the other swept keys" if others else "sweep"))
        name = f"curves_{re.sub(r'[^A-Za-z0-9_.-]', '_', key)}.png"
        out.append(ctx.embed(fig, ctx.figure_dir / name, f"metrics against {key}",
                           f"{table['x'].nunique()} values of {key}, {lines} line(s) "
                           f"({' · '.join(others) if others else 'nothing else swept'}); units as in the "
                           "summary table."))
    return out


def _paired_view(records: Sequence[ConfigRecord], ctx: _Context, plots) -> dict:
    """The paired-comparison table (and its figure when some pair has two or more seeds)."""
    paired = paired_table(records)
    view = {"figure": None, "rows": [],
            "header": ["comparison (B − A)", "metric", "seeds", "A", "B", "B − A", "paired 95% CI",
                       "unpaired 95% CI", "unpaired / paired", "verdict"]}
    if paired.empty:
        return view
    places_of = {m: column_places(m, list(rows["mean_a"]) + list(rows["mean_b"]))
                 for m, rows in paired.groupby("metric")}
    stochastic = paired[paired["seeds"] >= 2]
    if not stochastic.empty and stochastic["comparison"].nunique() <= MAX_PAIRED_FIGURE_ROWS:
        headline = stochastic["metric"].isin(("wait_mean", "bsld_mean"))
        fig = plots.paired_figure(stochastic[headline] if headline.any() else stochastic)
        view["figure"] = ctx.embed(fig, ctx.figure_dir / "paired.png",
                                 "paired versus unpaired confidence intervals",
                                 "Thick: paired 95% CI of the per-seed difference; thin grey: unpaired CI.")
    for p in paired.to_dict("records"):  # (not iterrows: a Series per row, 1 s at 10,000 configurations)
        metric = p["metric"]
        places = places_of[metric]
        if p["seeds"] < 2:
            paired_text = unpaired_text = "exact" if p["deterministic"] else "– (one seed)"
            ratio = "–"
            verdict = "–"
            if p["deterministic"]:
                verdict = ("equal within rounding" if _rounds_to_zero(metric, p["difference"], places)
                           else _better_or_worse(metric, p["difference"]))
        else:
            paired_text = "± " + units.number(metric, p["paired_ci95"], places)
            unpaired_text = "± " + units.number(metric, p["unpaired_ci95"], places)
            ratio = f"{p['ratio']:.1f}×" if np.isfinite(p["ratio"]) else "–"
            lo, hi = p["difference"] - p["paired_ci95"], p["difference"] + p["paired_ci95"]
            verdict = (_better_or_worse(metric, p["difference"]) if hi < 0 or lo > 0
                       else "equal" if lo == hi == 0 else "not resolved")
        view["rows"].append([
            p["comparison"], _metric_row_label(metric), str(int(p["seeds"])),
            units.number(metric, p["mean_a"], places), units.number(metric, p["mean_b"], places),
            units.number(metric, p["difference"], places, signed=True), paired_text, unpaired_text,
            ratio, verdict,
        ])
    return view


def _metric_row_label(metric: str) -> str:
    """A metric's name and unit for a table that mixes metrics row by row."""
    from .figures import METRIC_LABELS

    u = units.unit(metric)
    label = METRIC_LABELS.get(metric, metric)
    if u.difference_name != u.name:
        return f"{label} ({u.name}; B − A in {u.difference_name})"
    return units.header(metric, label)


def _better_or_worse(metric: str, difference: float) -> str:
    """The verdict on B − A in plain words: "B better" or "B worse"."""
    better = difference < 0 if units.lower_is_better(metric) else difference > 0
    return "B better" if better else "B worse"


def _rounds_to_zero(metric: str, difference: float, places: int) -> bool:
    """A difference that the table's rounding shows as zero is no finding, whatever its sign."""
    return abs(units.shown(metric, difference)) < 0.5 * 10.0 ** -places


def _configuration_view(r: ConfigRecord, index: int, ctx: _Context, figures: _Figures) -> dict:
    """One configuration's section: what it was, how to rerun it, and its figures."""
    def item(name, value, kind="text", note=""):
        return {"name": name, "value": value, "kind": kind, "note": note}

    items = [item("full label", r.label, "code"), item("status", r.status)]
    if r.job_dir is not None:
        items.append(item("job folder", str(r.job_dir), "code"))
    if r.run_id:
        items.append(item("MLflow parent run", r.run_id, "code"))
    items.append(item("seeds", ", ".join(map(str, r.seeds)) or "–"))
    items.append(item("trace checksum (sha256)", r.trace_checksum or "–", "code"))
    items.append(item("config hash", r.config_hash or "–", "code"))
    if r.total_nodes:
        items.append(item("machine", f"{r.total_nodes:,} nodes"))
    command, origin = reproduce_command(r)
    items.append(item("reproduce", command, "code", origin))
    if r.error:
        items.append(item("error", r.error, "pre"))
    view = {"slug": _slug(r, index), "key": r.key, "details": items, "notes": [], "figures": [],
            "config_text": r.config_text}
    if not ctx.per_configuration:
        return view
    drawn = _sweep_figures(r)
    frame = None if drawn else figures.frame(r)
    if drawn:
        target = ctx.figure_dir / _slug(r, index)
        target.mkdir(parents=True, exist_ok=True)
        view["notes"].append(f"Figures drawn by the sweep itself ({drawn[0].parent}).")
        view["figures"] = [_figure(Path(shutil.copy2(path, target / path.name)),
                                   f"{path.stem.replace('_', ' ')}: {r.key}") for path in drawn]
    elif frame is not None and len(frame) and r.total_nodes:
        baseline, origin = figures.baseline(r)
        paths = frame_figures(ctx.figure_dir / _slug(r, index), frame, int(r.total_nodes), baseline,
                              label=r.key, seed_metrics=r.seed_metrics if len(r.seed_metrics) else None,
                              seed=r.schedule_seed)
        if origin:
            view["notes"].append(f"Baseline: {origin}.")
        view["figures"] = [_figure(path, f"{path.stem.replace('_', ' ')}: {r.key}") for path in paths]
    else:
        view["notes"].append("No schedule was kept for this configuration "
                             "(tracking.log_schedule=false, or it failed): no per-configuration figures.")
    return view


def history_metrics(frame: pd.DataFrame, total_nodes: int) -> dict[str, float]:
    """The key metrics of a schedule frame (as ``metrics.compute_metrics`` defines them)."""
    from ..sim.metrics import bounded_slowdown
    from .figures import overall_utilization, waits_of

    wait = waits_of(frame)
    run = frame["actual_run_time"].to_numpy(dtype=float)
    return {
        "wait_mean": float(wait.mean()),
        "wait_p95": float(np.percentile(wait, 95.0)),
        "bsld_mean": float(bounded_slowdown(wait, run).mean()),
        "utilization": overall_utilization(frame, total_nodes),
    }


# =============================================================================== command line
def main(argv: Sequence[str] | None = None) -> int:
    """``drevt-sweep-report SWEEP_DIR [--tracking-uri URI]``: 0 done, 2 bad input, 1 a bug."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Build report.html (summary, figures, configs, how to reproduce) for a "
        "finished drevt-sweep multirun, from the MLflow store or the sweep folder.",
    )
    parser.add_argument("sweep_dir", metavar="SWEEP_DIR", help="the multirun folder (hydra.sweep.dir)")
    parser.add_argument("--tracking-uri", default=None,
                        help="MLflow store (default: the one the sweep's configs name, if it exists, else "
                        "./outputs/mlflow.db)")
    parser.add_argument("--log-to-mlflow", action="store_true",
                        help="also attach report.html to the sweep's own MLflow run")
    parser.add_argument("--per-configuration", choices=("auto", "all", "none"), default="auto",
                        help="one section (details, config, figures) per configuration: auto = only "
                        f"for sweeps of at most {PER_CONFIGURATION_MAX} configurations (default), "
                        "all = always, none = never")
    parser.add_argument("--sweep-figures-only", action="store_true",
                        help="keep the per-configuration sections but draw none of their figures")
    args = parser.parse_args(argv)
    from ..tracking import without_telemetry

    without_telemetry()
    # MLflow draws a progress bar per artifact it downloads (three per configuration rebuilt)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    sections = {"auto": None, "all": True, "none": False}[args.per_configuration]
    try:
        path = build_report(Path(args.sweep_dir), args.tracking_uri, log_to_mlflow=args.log_to_mlflow,
                            per_configuration=False if args.sweep_figures_only else None,
                            sections=sections)
    except DrevtError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug: one line unless debugging
        if os.environ.get("DREVT_DEBUG"):
            raise
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc} (set DREVT_DEBUG=1 for the "
              "traceback)", file=sys.stderr)
        return 1
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
