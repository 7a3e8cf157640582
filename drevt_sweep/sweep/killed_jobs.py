"""``result.json`` for the jobs an interrupt killed in other processes.

Under ``hydra/launcher=joblib`` the configurations run in joblib's worker processes, which an
interrupt kills (joblib terminates them) before they can write their ``result.json``: the job
folder then held Hydra's files and a log, and nothing saying what became of it, although the
README promises an interrupted configuration is marked KILLED. After an interrupt the sweep
writes a KILLED ``result.json`` into every job folder of this multirun that has Hydra's files
but no result (a job that closed itself, in this process or a worker, keeps its own).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from omegaconf import OmegaConf

_sweep: dict = {"dir": None, "since": None}


def remember(sweep_dir: Path) -> None:
    """The multirun's folder, and when it started (older job folders are a resumed sweep's)."""
    _sweep.update(dir=Path(sweep_dir), since=time.time())


def mark_killed(reason: str, label_of) -> list[Path]:
    """Write a KILLED ``result.json`` (``error``: ``reason``) into each job folder of this
    multirun that started and has none; ``label_of(hydra_node)`` names a configuration (the
    app's ``configuration_label``). Returns those folders."""
    from ..files import write_file

    sweep_dir, since = _sweep["dir"], _sweep["since"]
    if sweep_dir is None:
        return []
    marked = []
    for hydra_file in sorted(sweep_dir.glob("*/.hydra/hydra.yaml")):
        folder = hydra_file.parent.parent
        try:
            if (folder / "result.json").exists() or hydra_file.stat().st_mtime < since - 1:
                continue
            result = {**_describe(folder, label_of), "status": "KILLED", "error": reason, "seeds": [],
                      "parent_run_id": None}
            write_file(folder / "result.json", json.dumps(result, indent=2).encode())
        except Exception:  # noqa: BLE001 - the interrupt goes on; the folder stays unmarked
            continue
        marked.append(folder)
    return marked


def _describe(folder: Path, label_of) -> dict:
    """The job's label, run name and group choices, from the files Hydra saved for it."""
    from .naming import run_name, sweep_varying_keys

    hydra = OmegaConf.load(folder / ".hydra" / "hydra.yaml").hydra
    choices = dict(hydra.runtime.choices)
    label = label_of(hydra)
    try:
        cfg = OmegaConf.load(folder / ".hydra" / "config.yaml")
        name = run_name(cfg, choices, sweep_varying_keys(str(folder.parent.absolute())))
    except Exception:  # noqa: BLE001 - the label says it too
        name = label
    return {"label": label, "name": name, "choices": choices}
