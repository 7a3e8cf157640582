"""``system=slurm`` / ``policy=slurm``: a sweep's machine and scheduler from a slurm.conf.

``system.slurm_conf=PATH`` makes the machine (``trace.slurm_conf``'s nodes and partitions);
``policy=slurm`` also takes the priority (``PriorityType``, ``PriorityWeight*``, Fair Tree or
classic) and backfilling (``SchedulerType``) from it. Sweeping ``system.slurm_conf`` over a few
copies of a slurm.conf is how a sweep asks "what if this line changed". Each file is read once
per process, and what it says that is not modelled is logged once. ``system.associations``
(``sacctmgr -P show assoc``) and ``system.qos`` (``show qos``) add the association tree's
shares, QOS priorities and limits (``trace.associations``, enforced by ``sim.limits`` under
backfill ``slurm``; any other backfill with them is an error).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from ..errors import ConfigError
from ..trace.associations import Associations, read_associations
from ..trace.slurm_conf import SlurmConf, read_slurm_conf

log = logging.getLogger(__name__)
_read: dict[tuple[str, float], SlurmConf] = {}
_read_assoc: dict[tuple, Associations] = {}


def slurm_conf_of(system) -> SlurmConf | None:
    """The slurm.conf a ``system`` section names (``slurm_conf``), or None."""
    name = system.get("slurm_conf") if hasattr(system, "get") else None
    if not name:
        return None
    path = Path(str(name)).expanduser().resolve()
    try:
        key = (str(path), path.stat().st_mtime)
    except OSError:
        raise ConfigError(f"system.slurm_conf: cannot read the slurm.conf {name}: no such file") from None
    if key not in _read:
        conf = read_slurm_conf(path)
        if conf.ignored:
            log.warning("%s: not modelled, ignored (docs/slurm.md): %s", name, "; ".join(conf.ignored))
        _read[key] = conf
    return _read[key]


def associations_of(system) -> Associations | None:
    """The associations (``sacctmgr -P show assoc``) and QOS (``show qos``) a ``system``
    section names (``associations``, ``qos``), or None; read once per process, what is not
    modelled logged once."""
    get = system.get if hasattr(system, "get") else (lambda key: None)
    name, qos = get("associations"), get("qos")
    if not name:
        if qos:
            raise ConfigError("system.qos gives the QOS of the associations: set system.associations too")
        return None
    key = []
    for what, given in (("associations", name), ("qos", qos)):
        if not given:
            key.append(None)
            continue
        path = Path(str(given)).expanduser().resolve()
        try:
            key.append((str(path), path.stat().st_mtime))
        except OSError:
            raise ConfigError(f"system.{what}: cannot read {given}: no such file") from None
    key = tuple(key)
    if key not in _read_assoc:
        assoc = read_associations(key[0][0], key[1][0] if key[1] else None)
        if assoc.ignored:
            log.warning("%s: not modelled, ignored (docs/slurm.md): %s", name, "; ".join(assoc.ignored))
        conf = slurm_conf_of(system)
        if conf is not None and "limits" not in conf.enforce:
            log.warning("%s: AccountingStorageEnforce has no 'limits', so Slurm enforces no association or QOS "
                        "limit: system.associations gives shares and QOS priorities%s only", conf.path,
                        " and rejects jobs without an association" if "associations" in conf.enforce else "")
        _read_assoc[key] = assoc
    return _read_assoc[key]


_checked: set[tuple] = set()  # (trace, its jobs and names, slurm.conf read) that passed: once per process


def check_partitions(cfg, jobs, machine) -> None:
    """With ``system.slurm_conf``, every job's partition must be one the file defines, unless
    ``format.on_bad_row=skip`` (then they are rejected and counted): ``machine.check_partitions_defined``,
    once per trace and file in a process, whatever the number of configurations."""
    conf = slurm_conf_of(cfg.system)
    if conf is None or machine is None or str(getattr(cfg.format.on_bad_row, "value", cfg.format.on_bad_row)) == "skip":
        return
    key = (jobs.meta.checksum, len(jobs), tuple(jobs.partition_names), tuple(jobs.queue_names),
           id(conf))  # (``_read`` keeps each file's reading alive)
    if key in _checked:
        return
    from ..sim.machine import check_partitions_defined

    check_partitions_defined(jobs, machine, f"system.slurm_conf {cfg.system.slurm_conf}", "set format.on_bad_row=skip")
    _checked.add(key)


def with_association_priority(params: dict | None, assoc: Associations | None, group_names, user_names,
                              explicit=()) -> dict | None:
    """Multifactor's parameters with the associations' shares and QOS factors, for the keys the
    configuration leaves unset (``explicit``: keys it sets); notes logged once per call."""
    if params is None or assoc is None:
        return params
    extra, notes = assoc.priority_params(group_names, user_names)
    for note in notes:
        log.warning("%s: %s", assoc.path, note)
    out = dict(params)
    for key, value in extra.items():
        if key not in explicit and not out.get(key):
            out[key] = value
    return out


def slurm_policy(conf: SlurmConf | None, queue_names) -> tuple[str, str, dict | None]:
    """``policy=slurm``: (priority, backfill, priority parameters) from the slurm.conf."""
    if conf is None:
        raise ConfigError("policy=slurm takes the priority and backfilling from a slurm.conf: "
                          "add system=slurm system.slurm_conf=PATH")
    return conf.priority, conf.backfill, conf.params_for(queue_names)


BACKFILL_KEYS = ("bf_interval", "bf_max_job_test", "bf_window", "bf_resolution", "bf_max_job_user",
                 "bf_max_job_part", "bf_continue", "bf_job_part_count_reserve", "default_queue_depth",
                 "sched_interval")


def backfill_params(policy, conf: SlurmConf | None) -> dict | None:
    """Backfill ``slurm``'s settings: the slurm.conf's ``SchedulerParameters`` (if any), with
    the ``policy.bf_*`` keys that are set on top (so ``policy.bf_window=...`` sweeps a line of
    the file). None when nothing is set (Slurm's defaults)."""
    params = dict(conf.backfill_params) if conf is not None else {}
    for key in BACKFILL_KEYS:
        value = policy.get(key) if hasattr(policy, "get") else None
        if value is not None:
            params[key] = value
    return params or None

SYSTEM_FILES = ("slurm_conf", "associations", "qos")  # files a system names: their content counts


def identity_settings(settings: dict) -> dict:
    """The result settings as they identify a configuration (its hash, its params): a named
    slurm.conf adds its sha256, since a changed file must not resume old results; the keys
    this feature added are left out while unset (``system.slurm_conf: null``,
    ``policy.fairshare: classic``, ``policy.estimate_refresh: submit``, ``policy.charge_ended_jobs:
    true``), so that earlier sweeps keep their hashes and resume."""
    system, policy = settings.get("system"), settings.get("policy")
    for key in SYSTEM_FILES:  # a named file's sha256 joins its path
        if isinstance(system, dict) and key in system:
            if system[key] is None:
                system = {k: v for k, v in system.items() if k != key}
            else:
                path = Path(str(system[key])).expanduser()
                try:
                    digest = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError:
                    digest = None  # reported when the machine is built
                system = {**system, f"{key}_sha256": digest}
    defaults = {"fairshare": "classic", "estimate_refresh": "submit", "charge_ended_jobs": True}  # added in 2026-12
    defaults.update({key: None for key in BACKFILL_KEYS})  # issue 26: unset = as before
    if isinstance(policy, dict):
        policy = {k: v for k, v in policy.items() if k not in defaults or v != defaults[k]}
    return {**settings, "system": system, "policy": policy}
