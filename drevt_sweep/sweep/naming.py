"""What a person sees of a run in the MLflow UI: its name, who ran it from which code, and the
command that makes it again.

A parent run is named by the settings that vary across its sweep (``easy · lognormal``), so
that the runs table tells them apart at a glance; a seed's run is ``seed 3``. The full label
(every group choice and explicit override) stays in the tag ``drevt_label``.
"""

from __future__ import annotations

import functools
import getpass
import os
import re
import shlex
import subprocess
from pathlib import Path
from collections.abc import Mapping

from omegaconf import DictConfig, OmegaConf

from ..files import load_yaml

SEPARATOR = " · "
SHOWN_GROUPS = ("policy", "run_time")  # a name's fallback when nothing varies
GROUP_ORDER = ("policy", "run_time", "trace", "format", "timezone", "system", "workload")


@functools.lru_cache(maxsize=8)
def sweep_varying_keys(sweep_dir: str) -> tuple[str, ...]:
    """The keys a multirun sweeps (``policy``, ``system.total_nodes``, ...), from the
    ``multirun.yaml`` that Hydra's sweeper writes into the sweep folder before any job runs:
    the command line's sweep overrides and the preset's ``hydra.sweeper.params``."""
    path = Path(sweep_dir) / "multirun.yaml"
    if not path.is_file():
        return ()
    try:
        hydra = (load_yaml(path.read_text()) or {}).get("hydra") or {}
        task = [str(o) for o in (hydra.get("overrides") or {}).get("task") or []]
        params = (hydra.get("sweeper") or {}).get("params") or {}
        task += [f"{k}={v}" for k, v in params.items()]
        return varying_keys(task)
    except Exception:  # noqa: BLE001 - a name is not worth a failed configuration
        return ()


def varying_keys(overrides: list[str]) -> tuple[str, ...]:
    """The keys of the sweep overrides (``a=x,y``, ``range(...)``, ``choice(...)``) in order."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    keys: list[str] = []
    for override in OverridesParser.create().parse_overrides(overrides):
        key = override.get_key_element().lstrip("+~")
        if override.is_sweep_override() and key not in keys:
            keys.append(key)

    def order(key: str) -> tuple:  # group choices first: the policy, the run-time model, ...
        head = key.split(".", 1)[0]
        return ("." in key, GROUP_ORDER.index(head) if head in GROUP_ORDER else len(GROUP_ORDER))

    return tuple(sorted(keys, key=order))


def _shown(value) -> str:
    text = str(getattr(value, "value", value))
    if "/" in text and not text.startswith(("http:", "https:")):
        text = Path(text).name or text  # a path: its file name says enough
    return text


def run_name(cfg: DictConfig, choices: Mapping, varying: tuple[str, ...]) -> str:
    """``easy · lognormal``: the value of every swept key (a group by its option's name,
    another key as ``leaf=value``); with nothing swept, the policy and run-time model."""
    parts = []
    for key in varying or SHOWN_GROUPS:
        if key in choices and "." not in key:
            if choices[key] is not None:
                parts.append(str(choices[key]))
            continue
        value = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        parts.append(f"{key.rsplit('.', 1)[-1]}={_shown(value)}")
    return SEPARATOR.join(parts) or "drevt-sweep"


def seed_run_name(seed: int) -> str:
    return f"seed {seed}"


def reproduce_command(task_overrides: list[str], seed: int | None = None,
                      replicates: int | None = None) -> str:
    """The command line that reruns one configuration (``seed``: that seed alone)."""
    args = [o for o in task_overrides
            if not (seed is not None and o.split("=", 1)[0] in ("seed", "replicates"))]
    if seed is not None:
        args += [f"seed={seed}", "replicates=1"]
    elif replicates is not None and not any(o.startswith("replicates=") for o in args):
        args.append(f"replicates={replicates}")
    return " ".join(["drevt-sweep"] + [shlex.quote(a) for a in args])


def description(command: str, note: str = "") -> str:
    """The run's description (MLflow's ``mlflow.note.content``, markdown).

    The command sits in a fenced code block whose fence is longer than any run of backticks in
    it: by CommonMark's rule (spec 0.31, "Fenced code blocks") a block ends only at a fence at
    least as long as the opening one, so an override value holding a newline and a fence cannot
    end the block and put markdown or HTML (an ``<img onerror=…>``, a ``javascript:`` link)
    into the rendered description."""
    fence = "`" * max(3, longest_backtick_run(command) + 1)
    text = f"Reproduce:\n\n{fence}\n{command}\n{fence}\n"
    return text + (f"\n{note}\n" if note else "")


def longest_backtick_run(text: str) -> int:
    """The length of the longest run of consecutive backticks in ``text``."""
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


@functools.lru_cache(maxsize=1)
def source_tags() -> dict[str, str]:
    """``mlflow.user``, ``mlflow.source.*``: the UI's "Created by" and "Source", and the git
    commit of the code when it runs from a checkout (a ``-dirty`` flag tag when it has
    uncommitted changes)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        user = os.environ.get("USER", "unknown")
    tags = {"mlflow.user": user, "mlflow.source.name": "drevt-sweep",
            "mlflow.source.type": "LOCAL"}
    checkout = Path(__file__).resolve().parents[2]
    git = ["git", "-C", str(checkout)]
    try:
        commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        branch = subprocess.run(git + ["rev-parse", "--abbrev-ref", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):  # no git, or not a checkout (an installed package)
        return tags
    if commit:
        tags["mlflow.source.git.commit"] = commit
        if branch and branch != "HEAD":
            tags["mlflow.source.git.branch"] = branch
        tags["drevt_git_dirty"] = "true" if dirty else "false"
    return tags
