"""A multirun's value checks in one pass: each check once per distinct value of what it reads.

Checking every composed job whole (``validate.check_config``) cost ~18 ms of CPU per job (an
OmegaConf deep copy, the schema walk of ``unknown_keys``, resolving the paths): 3 minutes for
10,000 configurations before the first simulation (issue 23). But a grid's jobs differ in a
few keys and most checks read one: ``system.total_nodes >= 1`` needs checking once per distinct
node count, not once per (policy, node count). So, per distinct choice of config groups:

- one working config: the groups composed once (``grid.Composer.base``), the value overrides
  every job of that choice shares applied once, as Hydra applies them;
- each check of ``validate.CHECKS`` names the keys it reads; followed through the config's
  interpolations (a check reading ``hydra.sweep.dir`` reads ``paths.output_root``, hence
  ``paths.root``, and ``resume``), they say which of the swept keys matter to it;
- a check runs once per distinct combination of those keys' values, set in place on the
  working config with Hydra's own override code (a value Hydra refuses fails its first job);
- a job's problems are its checks' results in ``check_config``'s order, with its rules: a gated
  check runs only when the ones before it found nothing, and a value that cannot be resolved
  is the job's one line.

The answer is ``check_config``'s on every job's composed config, in job order, each problem
once, and a composition error is the same line for the same first job (``tests/
test_sweep_scale.py`` compares both ways on a few hundred configurations). What this cannot
follow is checked the slow way, the job composed whole (``grid.Composer.job``): a swept key
that another override contains or is inside of (``a`` and ``a.b``), a swept dict value or
deletion (``~key``), a swept value that is itself an interpolation, jobs of one choice of groups
that override different keys, and a check that reads a job's own Hydra bookkeeping
(``hydra.job.num``, ``hydra.overrides``) or a relative interpolation.
"""

from __future__ import annotations

import copy
import re

from omegaconf import DictConfig, ListConfig, OmegaConf


# What differs between jobs of one choice of groups besides their overrides (grid.Composer.job).
PER_JOB = ("hydra.job.num", "hydra.job.id", "hydra.job.override_dirname", "hydra.overrides")
# A key an interpolation may name (resolver names, before ':', are not keys).
_REF = re.compile(r"(?<![\w.\-])([A-Za-z_][\w\-]*(?:\.[\w\-]+)*)(?![\w.\-])(?!\s*:)")
_RELATIVE = re.compile(r"(?:\$\{|[:,])\s*\.")
_EXACT = None  # a check that needs each job composed whole


def touches(a: str, b: str) -> bool:
    """One key is the other or inside it: setting one changes what reading the other gives."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


class _Raised:
    """A check that raised OmegaConf's error: the job's one problem (``validate._checked``)."""

    def __init__(self, line: str) -> None:
        self.line = line


class _Failed(Exception):
    """This job does not compose: its one line is Hydra's, from composing it whole."""


def check_jobs(composer, jobs: list[list[str]]) -> list[str]:
    """The problems of every job (each said once, in job order); a job that does not compose
    ends the list with its one line, as the job-by-job check did."""
    from .validate import _checked

    problems: dict[str, None] = {}
    split = {}
    members: dict[tuple, list[int]] = {}
    for num, overrides in enumerate(jobs):
        try:
            split[num] = composer.split(overrides)
        except Exception:  # noqa: BLE001 - composing it says why, in Hydra's words
            continue
        members.setdefault(split[num][0], []).append(num)
    groups: dict[tuple, _Group] = {}
    shared: dict = {}  # results and accepted values, across choices of groups (see _Group)
    for num, overrides in enumerate(jobs):
        try:
            if num not in split:
                raise _Failed
            names, values, parsed = split[num]
            group = groups.get(names)
            if group is None:
                group = groups[names] = _Group(composer, names, [split[n][1] for n in members[names]],
                                                shared)
            found = (group.problems(num, overrides, values, parsed) if not group.exact
                     else _checked(_composed(composer, num, overrides)))
        except _Failed:
            line = _composition_error(composer, num, overrides)
            if line is None:  # (it composes after all: check it whole)
                found = _checked(composer.job(num, overrides).config)
            else:
                problems.setdefault(line)
                break
        for problem in found:
            problems.setdefault(problem)
    return list(problems)


def _composed(composer, num: int, overrides: list[str]) -> DictConfig:
    try:
        return composer.job(num, overrides).config
    except Exception:  # noqa: BLE001 - Hydra's composition errors: one line each
        raise _Failed from None


def _composition_error(composer, num: int, overrides: list[str]) -> str | None:
    from .grid import one_line

    try:
        composer.job(num, overrides)
    except Exception as exc:  # noqa: BLE001 - Hydra's composition errors: one line each
        return f"{' '.join(overrides)}: {one_line(exc)}"
    return None


class _Group:
    """The jobs of one choice of config groups: one working config, each check's results by
    the values of the swept keys it reads."""

    def __init__(self, composer, names: tuple, values: list[list], shared: dict) -> None:
        self.composer, self.names, self.shared = composer, names, shared
        self.exact = False
        self.broken = False  # composing the groups or applying the shared overrides failed
        first = values[0]
        keys = [o.key_or_group for o in first]
        if any([o.key_or_group for o in job] != keys for job in values):
            self.exact = True  # (not a grid: its jobs override different keys)
            return
        self.varying = [p for p in range(len(keys)) if len({job[p].input_line for job in values}) > 1]
        if not all(self._followable(first, p, values) for p in self.varying):
            self.exact = True
            return
        self.keys, self.first = keys, first
        self.present: dict[int, bool] = {}  # a +key: was it absent before the job added it
        self.current: dict[int, str] = {}
        try:
            from .grid import apply_values

            # The first job's overrides in its order (keys then stand where Hydra puts them:
            # unknown_keys names them in that order); the others set the swept ones in place.
            self.work = copy.deepcopy(composer.base(names))
            for p, o in enumerate(first):
                if p in self.varying and o.is_add():
                    self.present[p] = self._present(keys[p])
                apply_values(self.work, [o])
                if p in self.varying:
                    self.current[p] = o.input_line
            OmegaConf.copy_cache(from_config=composer.master, to_config=self.work)
        except Exception:  # noqa: BLE001 - its first job fails (the check stops there):
            self.broken = True  # composing it says why
            return
        self.tried: set[str] = {first[p].input_line for p in self.varying}
        # Whether Hydra takes a value depends on the node it sets alone: another choice of
        # groups with the same kind of node there need not try it again.
        self.slots = {p: _slot(self.work, keys[p]) for p in self.varying if not first[p].is_add()}
        self.relevant, self.scopes = self._relevant()

    def _followable(self, first: list, p: int, values: list[list]) -> bool:
        """A swept override this can set in place: a value (not a dict, not an interpolation,
        not a deletion) of a key no other override of the job contains or is inside of."""
        key = first[p].key_or_group
        if any(touches(key, o.key_or_group) for q, o in enumerate(first) if q != p):
            return False
        for job in values:
            o = job[p]
            if o.is_delete() or "${" in (o.input_line or "") or isinstance(o.value(), dict):
                return False
        return True

    def _present(self, key: str) -> bool:
        return OmegaConf.select(self.work, key, throw_on_missing=False) is not None

    def _relevant(self) -> list:
        """For each check: the positions of the swept keys it reads, or _EXACT."""
        from .validate import CHECKS, UNKNOWN_KEYS

        refs = _interpolations(OmegaConf.to_container(self.work, resolve=False), "")
        out, scopes = [], []
        for k, check in enumerate(CHECKS):
            if check.reads == (UNKNOWN_KEYS,):  # (it reads the whole config's shape)
                out.append([p for p in self.varying if self._shapes(p)])
                scopes.append((k, self.names))
                continue
            read = _closure(check.reads, refs)
            if read is _EXACT or any(touches(k, j) for k in read for j in PER_JOB):
                out.append(_EXACT)
                scopes.append(None)
                continue
            out.append([p for p in self.varying if any(touches(self.keys[p], k) for k in read)])
            # What the check reads, unresolved, apart from the swept values: another choice of
            # groups that gives the same (``policy=fcfs`` and ``easy`` for a node-count check)
            # shares its results.
            scopes.append((k, tuple((key, _raw(self.work, key)) for key in sorted(read))))
        return out, scopes

    def _shapes(self, p: int) -> bool:
        """A swept key that can change the config's shape (what ``unknown_keys`` walks): an
        added key (``+key``), or one that is not a leaf of the schema."""
        from omegaconf import MISSING

        from .validate import _schema

        o = self.first[p]
        if o.is_add() or o.is_force_add():
            return True
        leaf = OmegaConf.select(_schema(), self.keys[p], default=MISSING, throw_on_missing=False)
        return leaf is MISSING or isinstance(leaf, (DictConfig, ListConfig, dict, list))

    def problems(self, num: int, overrides: list[str], values: list, parsed: list) -> list[str]:
        from .validate import CHECKS

        if self.broken:
            raise _Failed
        for p in self.varying:  # each swept value once: does Hydra take it?
            o = values[p]
            if o.input_line not in self.tried:
                slot = self.slots.get(p)
                if slot is None or (slot, o.input_line) not in self.shared:
                    try:
                        self._set(p, o)
                    except Exception:  # noqa: BLE001 - composing the job says why
                        raise _Failed from None
                    if slot is not None:
                        self.shared[slot, o.input_line] = True
                self.tried.add(o.input_line)
        found: list[str] = []
        composed = None
        for k, check in enumerate(CHECKS):
            if check.gated and found:
                continue
            positions = self.relevant[k]
            if positions is _EXACT:
                if composed is None:
                    composed = _composed(self.composer, num, overrides)
                result = _run(check, composed, None)
            else:
                key = (self.scopes[k], tuple(values[p].input_line for p in positions))
                result = self.shared.get(key)
                if result is None:
                    for p in positions:
                        self._set(p, values[p])
                    app = None
                    if check.reads[0] == "unknown_keys":
                        app = [o.input_line for o in parsed if not o.is_hydra_override()]
                    result = self.shared[key] = _run(check, self.work, app)
            if isinstance(result, _Raised):
                return [result.line]
            found.extend(result)
        return found

    def _set(self, p: int, o) -> None:
        """One swept override on the working config, as Hydra applies it to a fresh one."""
        if self.current.get(p) == o.input_line:
            return
        self.current.pop(p, None)
        if o.is_add() and not self.present[p]:  # (absent before the first job added it)
            OmegaConf.update(self.work, o.key_or_group, o.value(), merge=True, force_add=True)
        else:
            from .grid import apply_values

            apply_values(self.work, [o])
        self.current[p] = o.input_line


def _run(check, cfg: DictConfig, overrides: list[str] | None):
    """One check on one config: its problems, or the one line of OmegaConf's error."""
    from omegaconf.errors import OmegaConfBaseException

    from .validate import _Checks, _unresolvable

    c = _Checks(cfg, overrides)
    try:
        check.run(c)
    except OmegaConfBaseException as exc:
        return _Raised(_unresolvable(exc))
    return c.problems


def _node(cfg, key: str):
    """The node at ``key``, unresolved (``None``: absent; a str: where an interpolation, a
    null or ??? stands in the way)."""
    node = cfg
    for part in key.split("."):
        if not isinstance(node, (DictConfig, ListConfig)):
            return None
        if node._is_none() or node._is_missing() or node._is_interpolation():
            return repr(node._value())
        try:
            node = node._get_node(int(part) if isinstance(node, ListConfig) else part)
        except Exception:  # noqa: BLE001 - absent, or not a list index
            return None
        if node is None:
            return None
    return node


def _raw(cfg, key: str) -> str:
    """What a key holds, unresolved, as text (equal text: equal config there)."""
    node = _node(cfg, key)
    if node is None or isinstance(node, str):
        return repr(node)
    if isinstance(node, (DictConfig, ListConfig)):
        return repr((type(node).__name__, OmegaConf.to_container(node, resolve=False)))
    return repr((type(node).__name__, node._metadata.ref_type, node._metadata.optional,
                 node._value()))


def _slot(cfg, key: str):
    """The kind of value node at ``key`` (None: not a value node: no sharing)."""
    from omegaconf import ValueNode

    node = _node(cfg, key)
    if not isinstance(node, ValueNode):
        return None
    return (key, type(node).__name__, repr(node._metadata.ref_type), node._metadata.optional,
            repr(getattr(node, "enum_type", None)))


def _interpolations(node, prefix: str) -> list[tuple[str, object]]:
    """Every interpolation of a config (a plain container): its key and the keys it names
    (_EXACT for a relative one, which names keys by where it is)."""
    found = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        path = f"{prefix}{key}"
        if isinstance(value, (dict, list)):
            found.extend(_interpolations(value, path + "."))
        elif isinstance(value, str) and "${" in value:
            found.append((path, _EXACT if _RELATIVE.search(value) else set(_REF.findall(value))))
    return found


def _closure(reads: tuple[str, ...], refs: list) -> set | None:
    """The keys a check reads, with every key an interpolation among them names, and so on."""
    keys, frontier = set(reads), list(reads)
    while frontier:
        read = frontier.pop()
        for path, named in refs:
            if touches(path, read):
                if named is _EXACT:
                    return _EXACT
                for key in named - keys:
                    keys.add(key)
                    frontier.append(key)
    return keys
