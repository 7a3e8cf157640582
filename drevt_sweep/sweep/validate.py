"""Value checks of a composed configuration, before any store opens or seed runs.

The schema (``config.py``) checks types and option names; this checks ranges and meanings:
a machine of 0 nodes, a load factor of 0, a window that ends before it starts, an unknown time
zone, a ``+key`` the schema does not know. Each problem names the key and the value, and the
app exits with code 2 (as ``drevt-sim`` does for bad input) instead of running a sweep that
fails late or, worse, "succeeds" doing nothing.
"""

from __future__ import annotations

import difflib
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from omegaconf import DictConfig, ListConfig, OmegaConf

from ..errors import ConfigError


def _v(node):
    return getattr(node, "value", node)


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


class _Checks:
    def __init__(self, cfg: DictConfig, overrides: list[str] | None = None) -> None:
        self.cfg = cfg
        self.overrides = overrides  # the job's overrides (None: its hydra.overrides.task)
        self.problems: list[str] = []

    def get(self, key: str):
        return OmegaConf.select(self.cfg, key, default=None, throw_on_missing=False)

    def fail(self, key: str, value, why: str) -> None:
        self.problems.append(f"{key}={_shown(value)}: {why}")

    def at_least(self, key: str, low: float, optional: bool = False, strict: bool = False) -> None:
        value = self.get(key)
        if value is None and optional:
            return
        number = _number(value)
        ok = number is not None and math.isfinite(number) and (number > low if strict else number >= low)
        if not ok:
            self.fail(key, value, f"must be {'>' if strict else '>='} {low:g}")


def _shown(value) -> str:
    value = _v(value)
    if isinstance(value, (DictConfig, ListConfig)):
        return str(OmegaConf.to_container(value))
    return "null" if value is None else str(value)


@dataclass(frozen=True)
class _Check:
    """One of :func:`check_config`'s checks: what it reads (key prefixes, followed through
    interpolations by the sweep's check) and whether it runs only when the checks before it
    found nothing (its rule needs their values sound)."""

    reads: tuple[str, ...]
    run: Callable[["_Checks"], None]
    gated: bool = False


def _tracking_experiment(c: "_Checks") -> None:
    if not str(c.get("tracking.experiment") or "").strip():
        c.fail("tracking.experiment", c.get("tracking.experiment"), "must not be empty")


def _figures(c: "_Checks") -> None:
    from .figure_choice import FIGURE_CHOICES

    if str(c.get("figures")) not in FIGURE_CHOICES:
        c.fail("figures", c.get("figures"), "must be " + ", ".join(FIGURE_CHOICES))


def _queues(c: "_Checks") -> None:
    queues = c.get("format.queues")
    if queues is not None and (len(queues) == 0 or any(not str(q).strip() for q in queues)):
        c.fail("format.queues", queues, "must name at least one queue (null = the format's "
               "default, [all] = every queue)")


def _n_jobs(c: "_Checks") -> None:
    if c.get("parallel.n_jobs") == 0:
        c.fail("parallel.n_jobs", 0, "must not be 0 (1 = no parallelism, -1 = every core)")


def _resume(c: "_Checks") -> None:
    if c.get("resume") and not c.get("tracking.enabled"):
        c.fail("resume", True, "needs the tracking store (tracking.enabled=false): only the store "
               "knows which seeds finished")


def _trace_output(c: "_Checks") -> None:
    from .start_checks import trace_output_problems

    c.problems.extend(trace_output_problems(c.cfg))  # never under the sweep's own files


UNKNOWN_KEYS = "unknown_keys"  # the check that reads the config's shape (see check_sweep)

CHECKS: tuple[_Check, ...] = (
    _Check(("seed",), lambda c: c.at_least("seed", 0)),
    _Check(("replicates",), lambda c: c.at_least("replicates", 1)),
    _Check(("parallel.n_jobs",), _n_jobs),
    _Check(("system.total_nodes",), lambda c: c.at_least("system.total_nodes", 1, optional=True)),
    _Check(("run_time",), lambda c: _run_time_values(c)),
    _Check(("run_time",), lambda c: _run_time_model(c), gated=True),
    _Check(("timezone.name",), lambda c: _check_zone(c)),
    _Check(("format.queues",), _queues),
    _Check(("workload", "timezone.name"), lambda c: _workload_values(c)),
    _Check(("workload", "system.total_nodes"), lambda c: _workload_rules(c), gated=True),
    _Check(("resume", "tracking.enabled"), _resume),
    _Check(("tracking.enabled", "trace.name", "trace.path"), lambda c: _check_tracking_limits(c)),
    _Check(("figures",), _figures),
    _Check(("tracking.experiment",), _tracking_experiment),
    _Check((UNKNOWN_KEYS,), lambda c: c.problems.extend(unknown_keys(c.cfg, c.overrides))),
    _Check(("trace.path", "trace.name", "paths.root"),
           lambda c: c.problems.extend(check_trace_file(c.cfg))),
    _Check(("trace.path", "paths.root", "hydra.mode", "hydra.sweep.dir", "hydra.run.dir",
            "hydra.job_logging.handlers", "hydra.hydra_logging.handlers"), _trace_output),
)


def check_config(cfg: DictConfig) -> list[str]:
    """Every range or meaning problem of a composed sweep config, as ``key=value: why``."""
    c = _Checks(cfg)
    for check in CHECKS:
        if not (check.gated and c.problems):
            check.run(c)
    return c.problems


def check_values(values: dict) -> list[str]:
    """The checks of :func:`check_config` that need neither the schema nor the trace file, on
    plain values keyed as in the config (``{"system": {"total_nodes": 0}, ...}``): the Python
    API's ``simulate_trace`` runs them, so it says what ``drevt-sweep`` says."""
    c = _Checks(OmegaConf.create(values))
    if c.get("seed") is not None:
        c.at_least("seed", 0)
    c.at_least("system.total_nodes", 1, optional=True)
    if c.get("run_time") is not None:
        _check_run_time(c)
    _check_zone(c)
    return c.problems


def _check_tracking_limits(c: _Checks) -> None:
    """Names MLflow refuses (after the simulation, so before it): the trace's dataset name
    (``trace.name``, or the file's name for trace=custom) is at most 500 characters. Longer
    params and tags are cut with a marker when logged (``tracking/store.py: shortened``)."""
    from ..tracking.store import DATASET_NAME_LIMIT

    if not c.get("tracking.enabled"):
        return
    name = str(c.get("trace.name") or "")
    if name == "custom":
        name = Path(str(c.get("trace.path") or "")).name
    if len(name) > DATASET_NAME_LIMIT:
        c.fail("trace.name", name[:60] + "...", f"is {len(name)} characters: MLflow's dataset "
               f"names (the trace's name) are at most {DATASET_NAME_LIMIT}")


def _check_run_time(c: _Checks) -> None:
    _run_time_values(c)
    if not c.problems:
        _run_time_model(c)


def _run_time_values(c: _Checks) -> None:
    uniform = _v(c.get("run_time.distribution")) == "uniform"
    c.at_least("run_time.scale", 0, strict=not uniform)
    c.at_least("run_time.stddev", 0)
    c.at_least("run_time.min_run_time", 0, strict=True)


def _run_time_model(c: _Checks) -> None:
    if _v(c.get("run_time.mode")) == "distribution":
        from ..sim.runtime import RunTimeModel

        rt = c.cfg.run_time
        try:  # the model's own cross-field rules (uniform: low < high)
            RunTimeModel(mode="distribution", distribution=_v(rt.distribution),
                         scale=float(rt.scale), stddev=float(rt.stddev),
                         min_run_time=float(rt.min_run_time)).validate()
        except ConfigError as exc:
            c.problems.append(f"run_time: {exc}")


def _check_zone(c: _Checks) -> None:
    name = c.get("timezone.name")
    if name is None:
        return  # the trace's own zone
    from ..trace.timestamps import resolve_zone

    try:
        resolve_zone(str(name))
    except ConfigError:
        c.fail("timezone.name", name, "not an IANA time zone (e.g. UTC, Europe/Stockholm, "
               "America/Los_Angeles)")


def _workload_values(c: _Checks) -> None:
    c.at_least("workload.load_factor", 0, strict=True)
    c.at_least("workload.rescale_nodes", 0, strict=True)
    c.at_least("workload.rescale_machine_nodes", 1, optional=True)
    c.at_least("workload.shake", 0)
    c.at_least("workload.max_jobs", 1, optional=True)
    c.at_least("workload.max_time", 0, optional=True, strict=True)
    c.at_least("workload.maintenance_horizon_days", 0, strict=True)
    for i, _ in enumerate(c.get("workload.capacity") or []):
        c.at_least(f"workload.capacity[{i}].total_nodes", 0)
    for i, _ in enumerate(c.get("workload.maintenance") or []):
        c.at_least(f"workload.maintenance[{i}].nodes", 1)
    from ..sim.workload import parse_time

    zone = str(c.get("timezone.name") or "UTC")  # start < end does not depend on the zone
    bounds = {}
    for key in ("workload.window_start", "workload.window_end"):
        value = c.get(key)
        if value is None:
            continue
        try:
            bounds[key] = parse_time(value, zone, key, "iso")
        except ConfigError as exc:
            c.fail(key, value, str(exc).split(", got")[0])
    if len(bounds) == 2 and bounds["workload.window_start"] >= bounds["workload.window_end"]:
        c.fail("workload.window_end", c.get("workload.window_end"),
               f"the window is empty: it must end after window_start={c.get('workload.window_start')}")


def _workload_rules(c: _Checks) -> None:
    from .workload_config import workload_spec

    try:  # the transform's own cross-field rules (warm_start needs a window_start, ...)
        workload_spec(c.cfg.workload, c.get("system.total_nodes"))
    except ConfigError as exc:
        c.problems.append(f"workload: {exc}")


def unknown_keys(cfg: DictConfig, overrides: list[str] | None = None) -> list[str]:
    """Keys that are not in the schema (``+polcy=sjf``, ``+foo=1``): Hydra's ``+`` adds any
    key, so a misspelt one would be stored and silently ignored. ``overrides``: the job's
    (default: its ``hydra.overrides.task``), to name the one that added the key."""
    schema = _schema()
    if overrides is None:
        overrides = [str(o) for o in OmegaConf.select(cfg, "hydra.overrides.task", default=[]) or []]
    if not overrides:  # a job's config has no hydra section: Hydra's own copy has them
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            overrides = [str(o) for o in HydraConfig.get().overrides.task]
    problems = []
    for key in _extra_keys(cfg, schema, ""):
        given = next((o for o in overrides if o.lstrip("+~").split("=", 1)[0] == key), None)
        parent, _, leaf = key.rpartition(".")
        known = list((OmegaConf.select(schema, parent) if parent else schema).keys())
        close = difflib.get_close_matches(leaf, [str(k) for k in known], n=1)
        hint = f"; did you mean {(parent + '.' if parent else '') + close[0]}?" if close else ""
        problems.append(f"{given or key}: unknown key '{key}' (the schema has no such setting"
                        f"{hint})")
    return problems


@functools.lru_cache(maxsize=1)
def _schema() -> DictConfig:
    """The schema's defaults as a config (made once: building it costs ~0.1 s)."""
    from .config import SweepConfig

    return OmegaConf.structured(SweepConfig)


def _extra_keys(node, schema, prefix: str) -> list[str]:
    if not isinstance(node, DictConfig) or not isinstance(schema, DictConfig):
        return []
    extra = []
    for key in node.keys():
        if prefix == "" and key == "hydra":
            continue
        name = f"{prefix}{key}"
        if key not in schema.keys():  # ("in" is False for a ??? value)
            extra.append(name)
        else:
            extra.extend(_extra_keys(node._get_node(key), schema._get_node(key), name + "."))
    return extra


def check_trace_file(cfg: DictConfig) -> list[str]:
    """The trace file exists, is a regular file and, for a catalogue trace, is its file."""
    from ..trace.options import trace_file_problems

    return trace_file_problems(cfg)


def sweep_job_configs(config: DictConfig):
    """Every job config of a multirun with Hydra's basic sweeper or ours, composed as the
    sweeper will compose them (other sweepers choose their values as they go: only ``config``
    itself). Raises ConfigError (one line) for a sweep that cannot be expanded."""
    from hydra.core.global_hydra import GlobalHydra

    from . import grid

    target = str(OmegaConf.select(config, "hydra.sweeper._target_", default="") or "")
    if (not target.endswith(("BasicSweeper", "DrevtSweeper"))
            or not GlobalHydra.instance().is_initialized()):
        yield config
        return
    loader = GlobalHydra.instance().config_loader()
    composer = grid.composer_for(loader, config)
    for num, overrides in enumerate(grid.expand(grid.sweep_arguments(config), loader)):
        try:
            yield composer.job(num, overrides).config
        except Exception as exc:  # noqa: BLE001 - Hydra's composition errors: one line each
            raise ConfigError(f"{' '.join(overrides)}: {grid.one_line(exc)}") from None


def check_sweep(config: DictConfig) -> list[str]:
    """The problems of every job of a multirun (each said once), before any job starts: with
    Hydra's basic sweeper or ours, each check once per distinct value of the swept keys it
    reads (``sweep_checks``), not once per job; other sweepers choose their values as they
    go, so only ``config`` itself is checked."""
    from hydra.core.global_hydra import GlobalHydra

    from . import grid
    from .sweep_checks import check_jobs

    target = str(OmegaConf.select(config, "hydra.sweeper._target_", default="") or "")
    try:
        if (not target.endswith(("BasicSweeper", "DrevtSweeper"))
                or not GlobalHydra.instance().is_initialized()):
            return _checked(config)
        loader = GlobalHydra.instance().config_loader()
        composer = grid.composer_for(loader, config)
        return check_jobs(composer, grid.expand(grid.sweep_arguments(config), loader))
    except ConfigError as exc:
        return [str(exc)]


def check_sweep_job_by_job(config: DictConfig) -> list[str]:
    """:func:`check_sweep` the slow way, every job composed and checked whole (the reference
    the one-pass check is tested against)."""
    problems: dict[str, None] = {}
    try:
        for job in sweep_job_configs(config):
            for problem in _checked(job):
                problems.setdefault(problem)
    except ConfigError as exc:
        problems.setdefault(str(exc))
    return list(problems)


def _checked(cfg: DictConfig) -> list[str]:
    """check_config, with a value that cannot be resolved (``${oc.env:UNSET}``, ``${now:}``)
    said in one line instead of OmegaConf's traceback."""
    from omegaconf.errors import OmegaConfBaseException

    try:
        return check_config(cfg)
    except OmegaConfBaseException as exc:
        return [_unresolvable(exc)]


def _unresolvable(exc) -> str:
    key = getattr(exc, "full_key", None)
    return f"{key or 'config'}: {' '.join(str(exc).split()).split(' full_key:')[0]}"


def raise_problems(problems: list[str]) -> None:
    """Stop with every problem: the app turns this into exit code 2, before anything runs."""
    if problems:
        raise SystemExit("drevt-sweep: error: " + "\ndrevt-sweep: error: ".join(problems))
