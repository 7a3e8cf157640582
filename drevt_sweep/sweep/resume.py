"""``resume=true`` at scale: a configuration already FINISHED is skipped before it is composed.

Resuming used to compose, prepare and complete every configuration again, only to find that
all its seeds were FINISHED (~0.12 s of CPU each: 672 s for 1,000 configurations, issue 23).
A configuration is now skipped -- its folder kept, its result read back -- only when it is
provably the one that ran:

- the same **inputs**: the *resume key* its ``result.json`` records, a hash of the job's
  overrides (less the bookkeeping ones below, which do not change results) and of the config
  its choice of groups composes -- the config files' text before resolution, and resolved
  (environment variables, the working folder, the catalogue's trace paths) -- computed once
  per choice of groups, not per configuration. An override whose value is an interpolation
  (``seed=${oc.env:SEED}``), a choice of groups whose config cannot be resolved on its own, or a
  folder name that is not the job's number make the configuration doubtful: prepared as before;
- the same **files**: the trace's sha256 (its checksum, read once per trace for the whole
  sweep, never parsed) and the slurm.conf's, as recorded;
- the same **seeds**, each FINISHED in the tracking store (the sweep's one lookup): a seed run
  deleted since, or a seed that failed, sends the configuration through the usual path,
  which runs what is missing and reuses the rest;
- its files still there (``config.yaml``, ``seed_metrics.csv``: the report reads them).

Anything else is prepared as before, and resumes seed by seed with the store's lookup. The
skipped configuration's ``result.json`` is rewritten with its seeds as reused (the summary and
the report read the folder); its runs stay where they are, under the sweep run that ran them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("drevt_sweep")

RESUME_FIELD = "resume"  # result.json: {"key": ..., "trace": path, "files": {path: sha256}}
KEY_VERSION = 1
# Overrides that decide how a configuration runs, not what it computes (the config hash leaves
# them out too): a resumed sweep may change them and still skip what is done.
BOOKKEEPING = ("resume", "progress", "figures", "wait_for_folder")
BOOKKEEPING_PREFIXES = ("parallel.",)
OUTPUT_FILES = ("config.yaml", "seed_metrics.csv")  # what the report reads from a job folder
NUMBERED = "${hydra.job.num}"  # Hydra's default ``hydra.sweep.subdir``


def _key_of(line: str) -> tuple[str, str, str]:
    """``(prefix, key, value)`` of an override line (``++a.b=1`` -> ``("++", "a.b", "1")``)."""
    key, _, value = line.partition("=")
    bare = key.lstrip("+~")
    return key[:len(key) - len(bare)], bare, value


def _is_bookkeeping(key: str) -> bool:
    return key in BOOKKEEPING or key.startswith(BOOKKEEPING_PREFIXES)


def sha256_of_file(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).expanduser().read_bytes()).hexdigest()
    except OSError:
        return None


class ResumeKeys:
    """The resume key of a multirun's jobs (see the module), each choice of groups's part once."""

    def __init__(self, composer) -> None:
        self.composer = composer
        self._bases: dict[tuple[str, ...], tuple[str | None, object]] = {}

    def key(self, overrides: list[str]) -> str | None:
        """The job's resume key; None when its inputs cannot be pinned down (an override whose
        value is an interpolation, or a config that does not resolve on its own)."""
        kept = []
        for line in overrides:
            prefix, key, value = _key_of(str(line))
            if "${" in value:
                return None
            if _is_bookkeeping(key) and not prefix.startswith("~"):
                continue
            kept.append(str(line))
        base = self._base_of(overrides)[0]
        if base is None:
            return None
        text = json.dumps({"v": KEY_VERSION, "overrides": kept, "base": base})
        return hashlib.sha256(text.encode()).hexdigest()

    def resume_wanted(self, overrides: list[str]) -> bool:
        """Whether the job itself has ``resume`` true (its last override of it, else its
        config's), as ``app._choose_seeds`` asks."""
        value = self._base_of(overrides)[1]
        for line in overrides:
            prefix, key, text = _key_of(str(line))
            if key == "resume":
                value = None if prefix.startswith("~") else text.strip().lower() == "true"
        return value is True

    def _base_of(self, overrides: list[str]) -> tuple[str | None, object]:
        try:
            groups = self.composer.split(list(overrides))[0]
        except Exception:  # noqa: BLE001 - reported where the configuration is composed
            return None, None
        return self._base(groups)

    def _base(self, groups: tuple[str, ...]) -> tuple[str | None, object]:
        """``(fingerprint, resume)`` of one choice of groups: the sha256 of its task config
        unresolved (the config files' text) and resolved (what comes from outside: the
        environment, the working folder, the catalogue)."""
        known = self._bases.get(groups)
        if known is None:
            try:
                task = self.composer.task_base(groups)
            except Exception:  # noqa: BLE001 - reported where the configuration is composed
                known = (None, None)
            else:
                known = _fingerprint(task)
            self._bases[groups] = known
        return known


def _fingerprint(task: DictConfig) -> tuple[str | None, object]:
    import copy

    try:
        unresolved = OmegaConf.to_yaml(task, resolve=False)
        plain = OmegaConf.to_container(copy.deepcopy(task), resolve=True, throw_on_missing=False,
                                       enum_to_str=True)
        resolved = json.dumps(plain, sort_keys=True, default=str)
    except Exception:  # noqa: BLE001 - doubtful: its configurations are prepared as before
        return None, None
    digest = hashlib.sha256(unresolved.encode() + b"\0" + resolved.encode()).hexdigest()
    resume = plain.get("resume") if isinstance(plain, dict) else None
    return digest, resume if isinstance(resume, bool) else None


def record(result: dict, key: str | None, trace_path, settings: dict) -> None:
    """What :class:`FinishedConfigurations` checks next time, in the configuration's result."""
    if key is None:
        result.pop(RESUME_FIELD, None)
        return
    from .slurm_system import SYSTEM_FILES

    files = {}
    system = settings.get("system")
    for name in SYSTEM_FILES:  # (their sha256 is in the settings: slurm_system.identity_settings)
        if isinstance(system, dict) and system.get(name) is not None:
            files[str(system[name])] = system.get(f"{name}_sha256")
    result[RESUME_FIELD] = {"key": key, "trace": str(trace_path), "files": files}


class FinishedConfigurations:
    """Which configurations of a resumed sweep are done already (see the module)."""

    def __init__(self, config: DictConfig, keys: ResumeKeys, finished: dict) -> None:
        self.keys, self.finished = keys, finished
        self.sweep_dir = Path(os.path.abspath(str(config.hydra.sweep.dir)))
        subdir = OmegaConf.to_container(config.hydra.sweep, resolve=False).get("subdir")
        self.numbered = subdir == NUMBERED  # else a job's folder is known only once composed
        self._traces: dict[str, str | None] = {}
        self._files: dict[str, str | None] = {}

    def result(self, num: int, overrides: list[str]) -> dict | None:
        """Job ``num``'s ``result.json`` when it is done (every seed FINISHED, same inputs),
        with its seeds marked reused; None when it must be prepared."""
        if not self.numbered or not self.keys.resume_wanted(overrides):
            return None
        folder = self.sweep_dir / str(num)
        try:
            result = json.loads((folder / "result.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(result, dict):
            return None
        recorded, seeds = result.get(RESUME_FIELD), result.get("seeds")
        if (result.get("status") != "FINISHED" or not isinstance(recorded, dict)
                or result.get("failed_seeds") or not isinstance(seeds, list) or not seeds
                or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)):
            return None
        key = self.keys.key(overrides)
        if key is None or recorded.get("key") != key:
            return None
        if self._trace_checksum(str(recorded.get("trace"))) != result.get("trace_checksum"):
            return None
        files = recorded.get("files") or {}
        if any(self._file_digest(path) != digest for path, digest in files.items()):
            return None
        if not self._all_finished(result):
            return None
        if not all((folder / name).is_file() for name in OUTPUT_FILES):
            return None
        result["reused_seeds"] = sorted(seeds)
        return result

    def _all_finished(self, result: dict) -> bool:
        from ..tracking.store import run_key

        chash, checksum = result.get("config_hash"), result.get("trace_checksum")
        if not chash or not checksum:
            return False
        return all(run_key(chash, checksum, seed) in self.finished for seed in result["seeds"])

    def _trace_checksum(self, path: str) -> str | None:
        """The trace's sha256 now (its checksum), once per trace for the sweep."""
        if path not in self._traces:
            from ..errors import DrevtError
            from ..trace.source import checksum_of, read_bytes

            try:
                self._traces[path] = checksum_of(read_bytes(path))
            except (DrevtError, OSError):
                self._traces[path] = None
        return self._traces[path]

    def _file_digest(self, path: str) -> str | None:
        if path not in self._files:
            self._files[path] = sha256_of_file(path)
        return self._files[path]
