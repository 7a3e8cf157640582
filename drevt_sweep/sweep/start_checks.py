"""What a run or a multirun checks and takes before Hydra writes anything.

- The sweep's own files never replace a trace: ``trace_output_problems`` is one of the value
  checks (``validate.check_config``), which the summary callback runs for every job of a
  multirun, and for a single run, before Hydra saves ``multirun.yaml``, ``.hydra/`` or the job
  log. A trace inside the run or sweep folder, or a file there (or a log file Hydra is told to
  write) that is the trace through a hard or symbolic link, is refused, exit code 2.
- ``StartChecks``, a Hydra callback listed after the summary callback in
  ``conf/hydra/default.yaml`` (so that the values and the store are checked first), locks the
  folder for the command's life (:mod:`.folder_lock`) and remembers a multirun's folder, so
  that an interrupt marks its killed jobs KILLED (:mod:`.killed_jobs`).
"""

from __future__ import annotations

import functools
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ..files import sweep_output_clash
from .folder_lock import lock_folder


class StartChecks(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        from . import killed_jobs

        sweep_dir = Path(config.hydra.sweep.dir)
        lock_folder(sweep_dir, wait=bool(config.get("wait_for_folder", False)))
        killed_jobs.remember(sweep_dir)

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        lock_folder(config.hydra.run.dir, wait=bool(config.get("wait_for_folder", False)))


def trace_output_problems(cfg: DictConfig) -> list[str]:
    """``trace.path=…: why`` when the configuration's trace could be written over by the run's or
    sweep's own files; ``cfg`` is a composed config with its ``hydra`` node (a job's config
    without it: the running job's Hydra config)."""
    from ..trace.options import resolve_trace_path

    hydra = cfg.get("hydra") if "hydra" in cfg else None
    if hydra is None:
        from hydra.core.hydra_config import HydraConfig

        if not HydraConfig.initialized():
            return []
        hydra = HydraConfig.get()
    try:
        raw = str(cfg.trace.path)
        root = str(cfg.paths.root)
    except Exception:  # noqa: BLE001 - a missing value has its own message
        return []
    if raw.startswith(("http://", "https://")):
        return []
    multirun = str(OmegaConf.select(hydra, "mode", default="")).endswith("MULTIRUN")
    key = "sweep.dir" if multirun else "run.dir"
    folder = _resolved(hydra, key)
    if folder is None:
        return []
    trace = str(resolve_trace_path(raw, root))
    clash = _clash(trace, (folder,), tuple(_log_files(hydra)))
    return [f"trace.path={raw}: {clash}"] if clash else []


@functools.lru_cache(maxsize=64)
def _clash(trace: str, folders: tuple[str, ...], files: tuple[str, ...]) -> str | None:
    """Once per trace and folder (a multirun checks every job)."""
    return sweep_output_clash(trace, folders, files)


def _resolved(node, key: str) -> str | None:
    try:
        value = OmegaConf.select(node, key, throw_on_resolution_failure=True)
    except Exception:  # noqa: BLE001 - not resolvable before the job runs
        return None
    return str(value) if value not in (None, "") else None


def _log_files(hydra) -> list[str]:
    """The files Hydra's logging set-up would open, where they can be named before a job runs."""
    found = []
    for section in ("job_logging", "hydra_logging"):
        handlers = OmegaConf.select(hydra, f"{section}.handlers", default=None) or {}
        for name in handlers:
            path = _resolved(hydra, f"{section}.handlers.{name}.filename")
            if path and "???" not in path:
                found.append(path)
    return found
