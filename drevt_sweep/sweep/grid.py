"""A multirun's configurations, composed once per distinct choice of config groups.

Hydra's basic sweeper composes every job from scratch, three times (the sweep's validation,
``validate_batch_is_legal``, the launcher): 0.27 s per configuration, 267 s before the first of
1,000 runs (issue 23). Composition has two stages, and only the first is expensive: the
defaults list (which group options, read and merged) depends only on the *group* overrides
(``policy=fcfs``, ``system=custom``); plain value overrides (``system.total_nodes=60``) are
applied to the composed config at the very end, by Hydra's own
``ConfigLoaderImpl._apply_overrides_to_config``. So the grid is expanded with Hydra's parser
and ``BasicSweeper.split_arguments`` (the same jobs in the same order), each distinct choice of
groups is composed once by Hydra, and each job is a copy of it with its value overrides
applied by that same function: the config Hydra would have composed, key for key
(``tests/test_sweep_scale.py`` compares them).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import re
from dataclasses import dataclass

from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

from ..errors import ConfigError


def sweep_arguments(config: DictConfig) -> list[str]:
    """The sweeper's arguments as Hydra's basic sweeper builds them: a preset's
    ``hydra.sweeper.params`` first, then the command line's overrides."""
    params = OmegaConf.select(config, "hydra.sweeper.params", default=None) or {}
    params = OmegaConf.to_container(params, resolve=False) if params else {}
    # Not resolved: an override's value may be an interpolation (seed=${oc.env:SEED}).
    task = OmegaConf.to_container(config.hydra.overrides.task, resolve=False)
    return [f"{k}={v}" for k, v in params.items()] + [str(o) for o in task]


def expand(arguments: list[str], loader=None) -> list[list[str]]:
    """Every job's overrides, in Hydra's order; a malformed sweep is one ``ConfigError`` line."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    parser = OverridesParser.create(config_loader=loader)
    errors = (HydraException, OmegaConfBaseException, ValueError, TypeError)
    overrides = []
    for line in arguments:  # one at a time, so that the message names the one that is wrong
        try:
            override = parser.parse_overrides([line])[0]  # (with the loader: glob)
            BasicSweeper.split_arguments([override], None)
        except errors as exc:
            raise ConfigError(f"{line}: {_why(line, exc)}") from None
        overrides.append(override)
    try:
        jobs = [job for batch in BasicSweeper.split_arguments(overrides, None) for job in batch]
    except errors as exc:
        raise ConfigError(f"the sweep's overrides: {one_line(exc)}") from None
    if not jobs or any(not job and arguments for job in jobs) or _empty_sweep(overrides):
        swept = [o.input_line for o in overrides if o.is_sweep_override() and _is_empty(o)]
        raise ConfigError(f"{swept[0] if swept else ' '.join(arguments)}: the sweep has no "
                          "configuration (an empty range or list)")
    return jobs


def _is_empty(override) -> bool:
    try:
        return override.is_discrete_sweep() and not list(override.sweep_string_iterator())
    except Exception:  # noqa: BLE001 - only for the message
        return False


def _empty_sweep(overrides) -> bool:
    return any(o.is_sweep_override() and _is_empty(o) for o in overrides)


def _why(line: str, exc: BaseException) -> str:
    """What is wrong with one sweep override, in the grammar's terms a user can act on."""
    text = one_line(exc)
    if "range(" in line and ("Set[str]" in text or "RangeSweep" in text):
        return ("a range() cannot be one item of a list (write key=range(0,3) alone, or list "
                "the values: key=0,1,2)")
    if "INTERVAL" in text:
        return ("interval() is for search sweepers (Optuna, Ax); a grid needs values: "
                "key=0.1,0.5,1 or key=range(...), or search=optimize (README: 'Search')")
    return text


def one_line(exc: BaseException) -> str:
    """Hydra's parse errors span lines (the override, a caret, the grammar's complaint)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


@dataclass
class Job:
    """One configuration of the grid: its number, its overrides and its composed config."""

    num: int
    overrides: list[str]
    config: DictConfig  # with its ``hydra`` node, as Hydra's launcher hands it to ``run_job``


_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")


class Composer:
    """Composes a multirun's jobs, each distinct choice of groups once (see the module)."""

    def __init__(self, loader, master: DictConfig) -> None:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        self.loader, self.master = loader, master
        self.parser = OverridesParser.create(config_loader=loader)
        # Unresolved, as Hydra's load_sweep_config reads them: an override's value may be an
        # interpolation of the job's keys (hydra.sweep.subdir=${policy.name}), resolved per job.
        self.hydra_overrides = [str(o) for o in OmegaConf.to_container(
            master.hydra.overrides.hydra, resolve=False)]
        self._bases: dict[tuple[str, ...], DictConfig] = {}
        self._copies: dict[tuple[str, ...], bytes] = {}  # each base, pickled (see :meth:`copy`)
        self._task_bases: dict[tuple[str, ...], DictConfig] = {}  # the same without ``hydra``
        self._task_copies: dict[tuple[str, ...], bytes] = {}  # ... pickled
        self._parsed: dict[str, tuple] = {}  # line -> (its Override, is it a group choice)
        self._int_templates: dict[str, object] = {}  # "key=" -> a parsed key=<int> override
        self._groups: dict[str, bool] = {}  # key -> is it a config group
        self._reads_hydra: dict[tuple[str, ...], bool] = {}  # see :meth:`_task_reads_hydra`
        self._plain: dict[tuple, tuple[bytes, list]] = {}  # (groups, keys) -> :meth:`_plan`
        self._raws: dict[tuple[str, ...], bytes] = {}  # see :meth:`_raw`
        self._folders: dict[tuple, str] = {}  # see :meth:`_job_folder`
        self._hydra_nodes: dict[tuple, DictConfig] = {}  # see :meth:`_run_job_shared`
        self.copied = 0  # copies made (:meth:`copy`)
        self._last_tasks: dict[tuple, tuple] = {}  # groups -> (keys, task): see :meth:`recycle`
        self._spare_tasks: dict[tuple, tuple] = {}  # groups -> (keys, task) given back
        self._shared: dict[int, tuple] = {}  # id(shared hydra node) -> (node, its holder, its choices)
        self.composed = 0  # how many times Hydra composed (the distinct choices of groups)

    def parsed(self, line: str):
        """``(override, is_group)`` of one override line, parsed once per sweep. A plain
        integer (``system.total_nodes=61``, most of a ``range()`` sweep) is the parsed
        ``key=<int>`` of its key with the new number: what the grammar gives (an INT token is
        ``int(text)``), without running the ANTLR parser 10,000 times."""
        known = self._parsed.get(line)
        if known is not None:
            return known
        key, sep, value = line.partition("=")
        template = self._int_templates.get(key) if sep and _INT.fullmatch(value) else None
        if template is not None:
            override = dataclasses.replace(template, _value=int(value), input_line=line)
        else:
            override = self.parser.parse_overrides([line])[0]
            if (sep and _INT.fullmatch(value) and type(override._value) is int
                    and override.value_type is not None and override.value_type.name == "ELEMENT"
                    and override._value == int(value)):
                self._int_templates[key] = override
        known = self._parsed[line] = (override, self._is_group(override))
        return known

    def _parse(self, line: str):
        return self.parsed(line)[0]

    def _is_group(self, override) -> bool:
        """Hydra's own rule (``defaults_list.Overrides``): a config group's name, not a dict."""
        group = self._groups.get(override.key_or_group)
        if group is None:  # (a look-up in the config search path: once per key)
            group = self._groups[override.key_or_group] = self.loader.repository.group_exists(
                override.key_or_group)
        return group and not isinstance(override.value(), dict)

    def split(self, overrides: list[str]) -> tuple[tuple[str, ...], list, list]:
        """A job's choice of groups, its value overrides in the order :meth:`job` applies them
        (Hydra's own first), and every override it has (parsed)."""
        parsed = [self.parsed(line) for line in self.hydra_overrides + list(overrides)]
        own = parsed[len(self.hydra_overrides):]
        groups = tuple(o.input_line for o, is_group in own if is_group)
        return groups, [o for o, is_group in parsed if not is_group], [o for o, _ in parsed]

    def base(self, groups: tuple[str, ...]) -> DictConfig:
        """The config Hydra composes for one choice of groups (once per sweep)."""
        base = self._bases.get(groups)
        if base is None:
            base = self.loader.load_sweep_config(self.master, list(groups))
            self._bases[groups] = base
            self.composed += 1
        return base

    def copy(self, groups: tuple[str, ...], task: bool = False) -> DictConfig:
        """A fresh copy of the groups' config (``task``: without its ``hydra`` node): unpickled
        from bytes pickled once per choice of groups. The same tree as ``copy.deepcopy`` --
        nodes, flags, parents, schema -- at a quarter of the cost (pickle's C loop against
        deepcopy's Python one: 4.7 ms against 18.5 ms for a job's config, 1.2 against 6.5 for
        a task's), and copying was most of composing a configuration."""
        self.copied += 1
        store = self._task_copies if task else self._copies
        data = store.get(groups)
        if data is None:
            data = store[groups] = pickle.dumps(
                self.task_base(groups) if task else self.base(groups), protocol=pickle.HIGHEST_PROTOCOL)
        return pickle.loads(data)

    def task_base(self, groups: tuple[str, ...]) -> DictConfig:
        """The task config (no ``hydra`` node) of one choice of groups, before any value
        override: shared, not to be changed (``run_job`` copies it)."""
        base = self._task_bases.get(groups)
        if base is None:
            base = self._task_bases[groups] = task_config(self.base(groups))
        return base

    def job(self, num: int, overrides: list[str]) -> Job:
        groups, values, parsed = self.split(overrides)
        cfg = self.copy(groups)
        apply_values(cfg, values)
        with open_dict(cfg.hydra):
            _set_job_keys(cfg.hydra, parsed, num)
        OmegaConf.copy_cache(from_config=self.master, to_config=cfg)
        return Job(num, list(overrides), cfg)


    def run_job(self, num: int, overrides: list[str], share_hydra: bool = False) -> tuple[DictConfig, DictConfig]:
        """What Hydra's ``run_job`` gives a job before its task runs -- the task's config (no
        ``hydra`` node) and ``HydraConfig`` set to the job's, its output folder filled in --
        with one copy of the whole config instead of three (Hydra copies it for the task and
        again for ``HydraConfig.set_config``). The job's config, its value overrides applied,
        becomes the task: its ``hydra`` node is taken out and held by ``HydraConfig``, parented
        (as ``set_config`` parents its copy) to a root holding that node and the task's own
        sections (:func:`_job_root`), so that the ``hydra`` node still reads the task's keys
        (``hydra.sweep.dir: ${paths.output_root}/...``). Where the task's keys could read
        ``hydra`` themselves (:meth:`_task_reads_hydra`), the task is a second copy instead, as
        Hydra's is. Returns ``(task, hydra node)``. ``share_hydra``: see :meth:`_run_job_shared`."""
        from hydra.core.hydra_config import HydraConfig
        from omegaconf import read_write

        if share_hydra:
            made = self._run_job_shared(num, overrides)
            if made is not None:
                return made
        cfg = self.job(num, overrides).config
        groups, values, _ = self.split(overrides)
        output_dir = self._job_folder(groups, values, cfg, num)
        with read_write(cfg.hydra.runtime), open_dict(cfg.hydra.runtime):
            cfg.hydra.runtime.output_dir = os.path.abspath(output_dir)
        OmegaConf.set_readonly(cfg.hydra, True)
        task_values = [o for o in values if not o.is_hydra_override()]
        hydra = cfg._get_node("hydra")
        holder = _holder(hydra)
        if self._task_reads_hydra(groups, task_values):
            hydra._set_parent(cfg)
            task = self.copy(groups, task=True)
            _apply(task, task_values)
            OmegaConf.copy_cache(from_config=self.master, to_config=task)
        else:
            task = cfg
            with read_write(task), open_dict(task):
                del task["hydra"]
            hydra._set_parent(_job_root(task, hydra, self.master))
        HydraConfig.instance().cfg = holder
        return task, HydraConfig.get()

    def _run_job_shared(self, num: int, overrides: list[str]):
        """:meth:`run_job` copying only the task's part of the config: the ``hydra`` node is one
        per choice of groups and of Hydra's own overrides, its job's keys (the overrides, the
        override dirname, the job's number, its output folder) set anew for each job. Only for a
        caller done with the node before it makes the next job (the sweep engine's released
        configurations, ``app.release_config``); copying the whole config was ~0.9 ms of a job's
        ~1.9 (the task alone: 0.4 ms). None where the task could read the node (then
        :meth:`run_job` copies as Hydra does)."""
        from hydra.core.hydra_config import HydraConfig
        from omegaconf import read_write

        groups, values, parsed = self.split(overrides)
        task_values = [o for o in values if not o.is_hydra_override()]
        if self._task_reads_hydra(groups, task_values):
            return None
        hydra_values = [o for o in values if o.is_hydra_override()]
        key = (groups, tuple(o.input_line for o in hydra_values))
        hydra = self._hydra_nodes.get(key)
        if hydra is None:
            cfg = self.copy(groups)
            apply_values(cfg, hydra_values)
            hydra = self._hydra_nodes[key] = cfg._get_node("hydra")
            # (what only wraps the node, and its group choices: the same for every job of it)
            self._shared[id(hydra)] = (hydra, _holder(hydra), dict(hydra.runtime.choices))
        task = self._task_for(groups, task_values)
        _apply(task, task_values)
        OmegaConf.copy_cache(from_config=self.master, to_config=task)
        root = _job_root(task, hydra, self.master)
        hydra._set_parent(root)
        with read_write(hydra), open_dict(hydra):
            _set_job_keys(hydra, parsed, num)
            hydra.runtime.output_dir = os.path.abspath(self._job_folder(groups, values, root, num))
        OmegaConf.set_readonly(hydra, True)
        HydraConfig.instance().cfg = self._shared[id(hydra)][1]
        return task, HydraConfig.get()

    def _task_for(self, groups: tuple[str, ...], values: list) -> DictConfig:
        """A task config of ``groups`` for a job whose value overrides are ``values``: a copy
        (:meth:`copy`), or the last job's, given back (:meth:`recycle`), when that job set the
        same keys and both set them to plain values (then applying this job's values gives what
        a copy would: every key the last job changed is set again, and nothing merges)."""
        keys = _plain_edits(values)
        spare = self._spare_tasks.pop(groups, None)
        task = spare[1] if keys is not None and spare is not None and spare[0] == keys else self.copy(groups, task=True)
        if keys is not None:
            self._last_tasks[groups] = (keys, task)
        return task

    def recycle(self, task: DictConfig) -> None:
        """``task`` (from :meth:`run_job` with ``share_hydra``) is read no more -- the engine
        released its configuration (``app.release_config``) -- and the next job of its groups
        may have it instead of a copy (:meth:`_task_for`): unpickling the task was ~40% of
        making a job (0.47 of 1.19 ms)."""
        for groups, (keys, last) in self._last_tasks.items():
            if last is task:
                self._spare_tasks[groups] = (keys, task)
                del self._last_tasks[groups]
                return

    def plain_choices(self, hydra) -> dict:
        """``dict(hydra.runtime.choices)``: made once per shared ``hydra`` node (the same for
        every job of its groups; ~0.1 ms each time), else now."""
        known = self._shared.get(id(hydra))
        return known[2] if known is not None and known[0] is hydra else dict(hydra.runtime.choices)

    def resolved(self, overrides: list[str], task: DictConfig):
        """``resolve_config(task)`` -- the task's config resolved, as plain data -- without
        resolving the whole tree again for each configuration (~4 ms each, most of it
        OmegaConf parsing the ``paths.*`` interpolations: the largest single cost of
        preparing one). The groups' task config is converted once, unresolved; its
        interpolations that cannot differ between the configurations overriding the same keys
        (:func:`_constant`) are resolved once for them; each configuration re-reads from its
        own task only the values its overrides set and the other interpolations. Falls back to
        :func:`resolve_config` for an override it cannot place (a deletion, a key into a list, a
        new key under a new one) and gives None where a key does not resolve, as it
        does. The same dict, key order included (tests/test_sweep_scale.py)."""
        groups, values, _ = self.split(overrides)
        keys = _task_keys(values)
        if keys is None:
            return resolve_config(task)
        plan = self._plain.get((groups, tuple(keys)))
        if plan is None:
            plan = self._plan(groups, keys, task)
        plain = pickle.loads(plan[0])
        try:
            for path in plan[1]:
                _put(plain, path, _read(task, path))
            for key in keys:
                if not _put(plain, key.split("."), _read(task, key.split("."))):
                    return resolve_config(task)
        except Exception:  # noqa: BLE001 - as resolve_config: the step that reads the key says why
            return None
        return plain

    def _plan(self, groups: tuple[str, ...], keys: list[str], task: DictConfig) -> tuple[bytes, list]:
        """For the jobs of one choice of groups that override ``keys``: the groups' config as
        plain data (pickled), its constant interpolations resolved, and the paths of the
        interpolations each job resolves itself."""
        data = pickle.loads(self._raw(groups))
        each = []
        for path in list(_interpolated(data, [])):
            if _constant(_get(data, path), data, keys, set()):
                try:
                    _put(data, path, _read(task, path))
                    continue
                except Exception:  # noqa: BLE001 - each job resolves it, and fails, itself
                    pass
            each.append(path)
        plan = self._plain[(groups, tuple(keys))] = (
            pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL), each)
        return plan

    def _raw(self, groups: tuple[str, ...]) -> bytes:
        """The groups' task config as plain data, unresolved (pickled: a fresh copy each load)."""
        raw = self._raws.get(groups)
        if raw is None:
            raw = self._raws[groups] = pickle.dumps(OmegaConf.to_container(
                self.task_base(groups), resolve=False, enum_to_str=True), protocol=pickle.HIGHEST_PROTOCOL)
        return raw

    def _job_folder(self, groups: tuple[str, ...], values: list, cfg: DictConfig, num: int) -> str:
        """``hydra.sweep.dir``/``hydra.sweep.subdir`` of a job. The sweep folder is resolved
        once for the jobs overriding the same keys where none of them can change it
        (:func:`_constant`; its interpolation, ``drevt_output_dir`` of ``paths.output_root``,
        was 1-2 ms of OmegaConf's parser per configuration), the subdir is the job's number
        where it is Hydra's ``${hydra.job.num}``."""
        keys = _task_keys(values)
        sweep = cfg.hydra.sweep
        texts = (sweep._get_node("dir")._value(), sweep._get_node("subdir")._value())
        memo = (groups, None if keys is None else tuple(keys), repr(texts[0]))
        folder = self._folders.get(memo)
        if folder is None:
            folder = str(OmegaConf.select(cfg, "hydra.sweep.dir"))
            if keys is not None and (not isinstance(texts[0], str)
                                     or _constant(texts[0], pickle.loads(self._raw(groups)), keys, set())):
                self._folders[memo] = folder
        subdir = str(num) if texts[1] == "${hydra.job.num}" else str(OmegaConf.select(cfg, "hydra.sweep.subdir"))
        return os.path.join(folder, subdir)

    def _task_reads_hydra(self, groups: tuple[str, ...], task_values: list) -> bool:
        """Whether a value of the task could read the ``hydra`` node through its root: an
        interpolation naming ``hydra`` in the groups' task config (looked at once per choice
        of groups) or in one of the job's value overrides. Hydra's task has no ``hydra`` key, so such a value
        fails there; it must fail here too (the task keeps a root of its own)."""
        known = self._reads_hydra.get(groups)
        if known is None:
            plain = OmegaConf.to_container(self.task_base(groups), resolve=False)
            known = self._reads_hydra[groups] = _names_hydra(plain)
        return known or any("hydra" in o.input_line for o in task_values)  # (escaped: $\\{)


_PLAIN_KEY = re.compile(r"[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*")  # a dotted key into dicts


def resolve_config(cfg: DictConfig) -> dict | None:
    """The config resolved once, as plain data, for both its settings and its ``config.yaml``
    (OmegaConf resolution was ~9 ms each, per configuration); None when some key cannot be
    resolved (the configuration then fails where it reads it, as before)."""
    try:
        return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    except Exception:  # noqa: BLE001 - reported by the step that needs the key
        return None


def _interpolated(data, path: list):
    """The paths (lists of keys and list indexes) of the string values holding ``${``."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        if isinstance(value, (dict, list)):
            yield from _interpolated(value, path + [key])
        elif isinstance(value, str) and "${" in value:
            yield path + [key]


# Resolvers whose value is the same for every job of a sweep (their arguments aside): the
# environment, the start folder, the data folder, a catalogue trace's or a shipped file's path.
# drevt_output_dir: cached by OmegaConf, which every job's config shares (``copy_cache``).
_CONSTANT_RESOLVERS = frozenset({"oc.env", "oc.decode", "drevt_cwd", "drevt_trace", "drevt_data_dir",
                                 "drevt_version", "drevt_conf_file", "drevt_output_dir"})
_WORD = re.compile(r"([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*)(:?)")


def _constant(text: str, data: dict, keys: list[str], seen: set) -> bool:
    """Whether an interpolation resolves to the same value in every job of one choice of
    groups whose value overrides set ``keys`` (whatever their values). Conservative, on the
    text: every word is taken for a key it might name -- one a job overrides, one holding a
    container, or the ``hydra`` node make it vary; one holding an interpolation is followed --
    and every ``name:`` for a resolver, which must be one of ``_CONSTANT_RESOLVERS``;
    relative interpolations (``${.x}``) vary."""
    if "${." in text:
        return False
    for word, colon in _WORD.findall(text):
        if colon:
            if word not in _CONSTANT_RESOLVERS:
                return False
            continue
        if word == "hydra" or word.startswith("hydra.") or any(
                word == key or word.startswith(key + ".") or key.startswith(word + ".") for key in keys):
            return False
        try:
            value = _get(data, word.split("."))
        except (KeyError, IndexError, TypeError):
            continue  # (not a key: a literal)
        if isinstance(value, (dict, list)):
            return False
        if isinstance(value, str) and "${" in value and word not in seen:
            if not _constant(value, data, keys, seen | {word}):
                return False
    return True


def _task_keys(values: list) -> list[str] | None:
    """The dotted keys a job's value overrides set in its task (not ``hydra.*``); None where
    one deletes or is not a plain dotted key into dicts."""
    keys = []
    for override in values:
        if override.is_hydra_override():
            continue
        if override.is_delete() or not _PLAIN_KEY.fullmatch(override.key_or_group):
            return None
        keys.append(override.key_or_group)
    return keys


def _get(data, path: list):
    for key in path:
        data = data[key]
    return data


def _read(cfg, path: list):
    """The resolved value at ``path`` of a DictConfig, as ``OmegaConf.to_container(resolve=True,
    enum_to_str=True)`` gives it."""
    from enum import Enum

    from omegaconf import Container

    node = cfg
    for key in path:
        node = node[key]
    if isinstance(node, Container):
        return OmegaConf.to_container(node, resolve=True, enum_to_str=True)
    return node.name if isinstance(node, Enum) else node


def _put(plain: dict, path: list, value) -> bool:
    """Set ``path`` in plain data; False where the path's parent is not there."""
    parent = plain
    for key in path[:-1]:
        if not isinstance(parent, (dict, list)):
            return False
        try:
            parent = parent[key]
        except (KeyError, IndexError, TypeError):
            return False
    if isinstance(parent, list) and isinstance(path[-1], int):
        parent[path[-1]] = value
    elif isinstance(parent, dict):
        parent[path[-1]] = value
    else:
        return False
    return True


def _names_hydra(data) -> bool:
    """Whether some interpolation of plain, unresolved config data names ``hydra``."""
    if isinstance(data, dict):
        return any(_names_hydra(v) for v in data.values())
    if isinstance(data, (list, tuple)):
        return any(_names_hydra(v) for v in data)
    return isinstance(data, str) and "${" in data and "hydra" in data


def _set_job_keys(hydra, parsed: list, num: int) -> None:
    """The keys Hydra sets in a job's ``hydra`` node (open for writing): its task and Hydra
    overrides, its override dirname, its id and number."""
    from hydra._internal.config_loader_impl import get_overrides_dirname

    app = [o for o in parsed if not o.is_hydra_override()]
    _set_strings(hydra.overrides, "task", [o.input_line for o in app])
    _set_strings(hydra.overrides, "hydra", [o.input_line for o in parsed if o.is_hydra_override()])
    named = hydra.job.config.override_dirname
    hydra.job.override_dirname = get_overrides_dirname(
        overrides=app, kv_sep=named.kv_sep, item_sep=named.item_sep, exclude_keys=named.exclude_keys)
    hydra.job.id = num
    hydra.job.num = num


def _set_strings(node, key: str, values: list[str]) -> None:
    """``node[key] = values`` for a list of strings, setting only the items that differ when
    the list already has that length: a shared ``hydra`` node's override lists differ from
    the last job's in the swept values only, and OmegaConf validates and wraps every item it
    is given (the whole lists were ~40% of making a job)."""
    current = node._get_node(key)
    if isinstance(current, ListConfig) and not current._is_none() and not current._is_missing() \
            and len(current) == len(values):
        for i, value in enumerate(values):
            if current._get_node(i)._value() != value:  # (the raw line: "${...}" unresolved)
                current[i] = value
    else:
        node[key] = values


def _plain_edits(values: list) -> tuple | None:
    """The keys of a job's value overrides when each sets an existing key to a plain value or
    a list of them (``key=value``, no ``+``/``++``/``~``; OmegaConf's merge replaces a list
    whole, but keeps a dict's other keys); else None."""
    from hydra.core.override_parser.types import OverrideType

    def plain(value) -> bool:
        return value is None or isinstance(value, (str, int, float, bool))

    keys = []
    for o in values:
        value = o.value()
        if o.type != OverrideType.CHANGE or not (plain(value) or isinstance(value, list)
                                                   and all(plain(v) for v in value)):
            return None
        keys.append(o.key_or_group)
    return tuple(keys)


def _holder(hydra) -> DictConfig:
    """What ``HydraConfig`` holds: a root with the job's ``hydra`` node itself, not a copy (the
    caller parents the node afterwards, as ``set_config`` parents its copy)."""
    holder = OmegaConf.create({}, flags={"no_deepcopy_set_nodes": True})
    holder["hydra"] = hydra
    holder._set_flag("no_deepcopy_set_nodes", None)
    return holder


def _job_root(task: DictConfig, hydra, master: DictConfig) -> DictConfig:
    """A root for the job's ``hydra`` node: that node and the task's sections -- the task's own
    nodes, not copies, which keep the task as their parent, so the task's values resolve as in
    the task (without ``hydra``), and the ``hydra`` node's interpolations find the task's keys
    (``OmegaConf.select`` walks a container's ``_content``). Its flags are the task's (the
    job config's: the task is that config less its ``hydra`` key)."""
    root = OmegaConf.create({}, flags=dict(task._metadata.flags))
    root.__dict__["_content"] = {"hydra": hydra, **task.__dict__["_content"]}
    OmegaConf.copy_cache(from_config=master, to_config=root)
    return root


def _apply(cfg: DictConfig, values: list) -> None:
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.errors import ConfigCompositionException
    from omegaconf.errors import OmegaConfBaseException

    try:
        ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
    except OmegaConfBaseException as exc:
        raise ConfigCompositionException(str(exc)) from exc


def apply_values(cfg: DictConfig, values: list) -> None:
    """Value overrides applied as Hydra applies them at the end of composing (its own code)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.errors import ConfigCompositionException
    from omegaconf.errors import OmegaConfBaseException

    try:
        OmegaConf.set_readonly(cfg.hydra, False)
        ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
    except OmegaConfBaseException as exc:
        raise ConfigCompositionException(str(exc)) from exc


def task_config(job_config: DictConfig) -> DictConfig:
    """What Hydra's ``run_job`` hands the task function: the config without its ``hydra`` node."""
    from omegaconf import read_write

    task = copy.deepcopy(job_config)
    with read_write(task), open_dict(task):
        del task["hydra"]
    return task


_composers: dict[int, Composer] = {}


def composer_for(loader, master: DictConfig) -> Composer:
    """One composer per multirun config: the sweep's validation and its run share the groups
    composed (the config Hydra hands the callbacks is the one it hands the sweeper)."""
    key = id(master)
    if key not in _composers:
        _composers.clear()
        _composers[key] = Composer(loader, master)
    return _composers[key]
