"""Slurm's associations and QOS as ``sacctmgr -P`` prints them (issue 26 item 4).

Input: the output of ``sacctmgr -P show assoc`` (optionally with ``format=...,ParentName,...``
for account trees deeper than root -> account -> user) and of ``sacctmgr -P show qos``:
``|``-separated, the first line a header naming the columns (case and spaces ignored: ``Def
QOS`` = ``DefQOS``). Read here into plain data (no simulator objects; ``sim.limits`` enforces
them):

* associations: ``Account``, ``User`` (empty: the account's own association), ``Partition``
  (empty: every partition), ``ParentName`` (``Par Name``; an account's parent, ``root`` when the
  column is absent), ``Share`` (raw shares; ``parent``: the parent's), ``GrpJobs``,
  ``GrpSubmit``, ``GrpTRES`` (``cpu``, ``node``), ``MaxJobs``, ``MaxSubmit``, ``MaxTRES``
  (per job: ``cpu``, ``node``), ``MaxWall``, ``QOS``, ``Def QOS``;
* QOS: ``Name``, ``Priority``, ``GrpJobs``, ``GrpTRES``, ``MaxTRES`` (per job), ``MaxWall``,
  ``MaxJobsPU``, ``MaxSubmitPU``, ``MaxTRESPU``.

Every other column sacctmgr prints (``Cluster``, ``GrpWall``, ``GrpTRESMins``, ``MaxTRESMins``,
``MaxTRESPerNode``, ``Flags``, ``Preempt``, ...), and TRES other than ``cpu`` and ``node``
(``mem``, ``gres/gpu``, ``billing``), when set on some line, is listed in ``ignored`` once, for
the caller to warn about. A column sacctmgr does not print, a malformed number, time or TRES
(``cpu=abc``), a negative number, a repeated association or QOS, or a file without the
needed columns raises ``ConfigError`` naming the file, line and column; nothing half-read is
returned. Empty cells mean "no limit" (sacctmgr prints nothing for unset limits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from ..files import read_input
from .slurm_conf import slurm_time

# column (normalised: lower case, no spaces/underscores) -> our field name
ASSOC_COLUMNS = {
    "account": "account", "user": "user", "partition": "partition", "parentname": "parent",
    "parname": "parent", "share": "share", "shares": "share", "fairshare": "share",
    "grpjobs": "grp_jobs", "grpsubmit": "grp_submit", "grpsubmitjobs": "grp_submit",
    "grptres": "grp_tres", "maxjobs": "max_jobs", "maxsubmit": "max_submit",
    "maxsubmitjobs": "max_submit", "maxtres": "max_tres", "maxtresperjob": "max_tres",
    "maxwall": "max_wall", "maxwalldurationperjob": "max_wall", "qos": "qos", "defqos": "def_qos",
    "defaultqos": "def_qos",
}
QOS_COLUMNS = {
    "name": "name", "priority": "priority", "grpjobs": "grp_jobs", "grptres": "grp_tres",
    "maxtres": "max_tres", "maxtresperjob": "max_tres", "maxwall": "max_wall",
    "maxwalldurationperjob": "max_wall", "maxjobspu": "max_jobs_pu", "maxjobsperuser": "max_jobs_pu",
    "maxsubmitpu": "max_submit_pu", "maxsubmitjobsperuser": "max_submit_pu",
    "maxtrespu": "max_tres_pu", "maxtresperuser": "max_tres_pu",
}
# columns sacctmgr prints that are read but not modelled (listed when set)
ASSOC_OTHER = {"cluster", "priority", "grpjobsaccrue", "grptresmins", "grptresrunmins", "grpwall",
               "maxjobsaccrue", "maxtrespernode", "maxtresmins", "maxtresrunmins", "id", "lft", "rgt",
               "parid", "parentid", "comment", "lineage", "flags"}
QOS_OTHER = {"gracetime", "preempt", "preemptexempttime", "preemptmode", "flags", "usagethres",
             "usagefactor", "limitfactor", "grptresmins", "grptresrunmins", "grpsubmit", "grpsubmitjobs",
             "grpwall", "grpjobsaccrue", "maxtrespernode", "maxtresmins", "maxtresrunmins", "maxtrespa",
             "maxtresperaccount", "maxjobspa", "maxjobsperaccount", "maxsubmitpa", "maxsubmitjobsperaccount",
             "maxjobsaccruepu", "maxjobsaccruepa", "mintres", "mintresperjob", "minpriothreshold",
             "description", "id"}
# a column sacctmgr never leaves unset in the output (read, never "not modelled")
QUIET = {"cluster", "id", "lft", "rgt", "parid", "parentid", "lineage", "description", "flags", "gracetime",
         "preemptmode", "usagefactor", "limitfactor"}
TRES = ("cpu", "node")  # the TRES enforced


@dataclass(frozen=True)
class Association:
    """One line of ``sacctmgr show assoc`` (limits None: unset)."""

    account: str
    user: str  # "" for the account's own association
    partition: str  # "" for every partition
    parent: str  # the parent account of an account association ("" for users: their account)
    share: float | None  # raw shares; None: "parent"
    grp_jobs: int | None = None
    grp_submit: int | None = None
    grp_tres: dict = field(default_factory=dict)  # {"cpu": n, "node": n}
    max_jobs: int | None = None
    max_submit: int | None = None
    max_tres: dict = field(default_factory=dict)
    max_wall: float | None = None  # seconds
    qos: tuple[str, ...] = ()
    def_qos: str = ""
    line: int = 0


@dataclass(frozen=True)
class Qos:
    """One line of ``sacctmgr show qos``."""

    name: str
    priority: int = 0
    grp_jobs: int | None = None
    grp_tres: dict = field(default_factory=dict)
    max_tres: dict = field(default_factory=dict)  # per job
    max_wall: float | None = None
    max_jobs_pu: int | None = None
    max_submit_pu: int | None = None
    max_tres_pu: dict = field(default_factory=dict)
    line: int = 0


@dataclass(frozen=True)
class Associations:
    """The association tree and QOS of a cluster, as ``sacctmgr`` printed them."""

    path: str
    associations: tuple[Association, ...]
    qos: dict = field(default_factory=dict)  # name -> Qos
    qos_path: str | None = None
    ignored: tuple[str, ...] = ()  # columns/TRES set in the files but not modelled, once each
    has_parents: bool = False  # the file had a ParentName column

    @property
    def accounts(self) -> dict[str, Association]:
        """Each account's own association (User empty, Partition empty)."""
        return {a.account: a for a in self.associations if not a.user and not a.partition}

    def user_association(self, account: str, user: str, partition: str = "") -> Association | None:
        """The association a job of ``user`` in ``account`` (and ``partition``) runs under: the
        partition's own one if there is one, else the user's one for every partition."""
        index = self._index
        return index.get((account, user, partition)) or index.get((account, user, ""))

    @property
    def _index(self) -> dict:
        cached = self.__dict__.get("_index_cache")
        if cached is None:
            cached = {(a.account, a.user, a.partition): a for a in self.associations if a.user}
            object.__setattr__(self, "_index_cache", cached)
        return cached

    def qos_factors(self) -> dict[str, float]:
        """Each QOS's priority factor: its Priority over the largest one (Slurm's
        ``norm_priority``, assoc_mgr.c ``assoc_mgr_update_qos_priority``); 0 when all are 0."""
        top = max((q.priority for q in self.qos.values()), default=0)
        return {name: (q.priority / top if top > 0 else 0.0) for name, q in self.qos.items()}

    def has_limits(self) -> bool:
        """Whether any association or QOS sets a limit (MaxJobs, GrpTRES, MaxWall, ...)."""
        for a in self.associations:
            if any(v is not None for v in (a.grp_jobs, a.grp_submit, a.max_jobs, a.max_submit, a.max_wall)) \
                    or a.grp_tres or a.max_tres:
                return True
        return any(any(v is not None for v in (q.grp_jobs, q.max_wall, q.max_jobs_pu, q.max_submit_pu))
                   or q.grp_tres or q.max_tres or q.max_tres_pu for q in self.qos.values())

    def without_limits(self) -> Associations:
        """The same tree and QOS with no limit set: a job needs an association, nothing else
        is enforced (``AccountingStorageEnforce=associations`` without ``limits``)."""
        import dataclasses

        bare = tuple(dataclasses.replace(a, grp_jobs=None, grp_submit=None, grp_tres={}, max_jobs=None,
                                         max_submit=None, max_tres={}, max_wall=None) for a in self.associations)
        qos = {name: Qos(name=q.name, priority=q.priority, line=q.line) for name, q in self.qos.items()}
        return dataclasses.replace(self, associations=bare, qos=qos)

    def enforced(self, enforce) -> Associations | None:
        """What a slurm.conf's ``AccountingStorageEnforce`` (``SlurmConf.enforce``; None: no
        slurm.conf, everything enforced) makes Slurm apply: every limit with ``limits``, only
        "a job needs an association" with ``associations`` alone, nothing without either
        (None). Shares and QOS priorities apply whatever it says (``priority_params``)."""
        if enforce is None or "limits" in enforce:
            return self
        return self.without_limits() if "associations" in enforce else None

    def priority_params(self, group_names, user_names) -> tuple[dict, list[str]]:
        """Multifactor's ``account_shares``, ``association_shares`` ("account/user"),
        ``qos_factor`` and ``qos_priority`` for the trace's accounts and users (the fair-share
        tree is the trace's account -> user: an account's ``Share`` from its own association, a
        user's from its association in that account), and notes on what could not be used."""
        notes = []
        groups, users = set(group_names), set(user_names)
        account_shares = {name: a.share for name, a in self.accounts.items()
                          if name in groups and a.share is not None and a.share > 0}
        association_shares = {f"{a.account}/{a.user}": a.share for a in self.associations
                              if a.user in users and a.account in groups and not a.partition
                              and a.share is not None and a.share > 0}
        zero = sorted(name for name, a in self.accounts.items() if name in groups and a.share == 0)
        zero += sorted(f"{a.account}/{a.user}" for a in self.associations
                       if a.user in users and a.account in groups and not a.partition and a.share == 0)
        if zero:
            notes.append(f"Share=0 (no fair share) of {', '.join(zero)} not modelled: 1 is used")
        factors = self.qos_factors()
        qos_factor = {}
        for a in self.associations:
            if a.user and not a.partition and a.account in groups and a.user in users:
                f = factors.get(self.job_qos(a), 0.0)
                if f:
                    qos_factor[f"{a.account}/{a.user}"] = f
        qos_priority = {name: f for name, f in factors.items() if f}
        return ({"account_shares": account_shares, "association_shares": association_shares,
                 "qos_factor": qos_factor, "qos_priority": qos_priority}, notes)

    def job_qos(self, assoc: Association) -> str:
        """The QOS a job of this association runs in when its trace states none: the default
        QOS (``Def QOS``, inherited from the accounts), else ``normal`` when that QOS exists,
        else ""."""
        if assoc.def_qos:
            return assoc.def_qos
        account = self.accounts.get(assoc.account)
        seen = set()
        while account is not None and account.account not in seen:  # inherited, as Slurm's
            seen.add(account.account)
            if account.def_qos:
                return account.def_qos
            account = self.accounts.get(account.parent)
        return "normal" if "normal" in self.qos else ""


def _norm(name: str) -> str:
    return re.sub(r"[\s_]", "", name).lower()


class _Table:
    """A ``|``-separated sacctmgr output with a header."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = str(path)
        data = read_input(str(path), f"the {what} '{path}'", noun=what)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not a text file ({exc.reason} at byte {exc.start})") from None
        lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if not lines:
            raise ConfigError(f"{path}: empty: expected the output of sacctmgr -P show ... (a header line)")
        self.header_line, header = lines[0]
        self.columns = [c.strip() for c in header.split("|")]
        if self.columns and self.columns[-1] == "":  # sacctmgr -p (lower case) ends lines with |
            self.columns.pop()
        self.rows = lines[1:]

    def error(self, line: int, column: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.path}:{line}: {column}: {problem}")

    def records(self, known: dict, other: set, ignored: dict):
        """(line, {field: (column as written, text)}) per data line; unknown columns refused."""
        names = []
        for column in self.columns:
            key = _norm(column)
            if key in known:
                names.append(known[key])
            elif key in other:
                names.append("-" + key)
            else:
                raise self.error(self.header_line, column or "(empty)", f"not a column sacctmgr prints "
                                 f"(modelled: {', '.join(sorted(set(known.values())))})")
        read = [n for n in names if not n.startswith("-")]
        if len(set(read)) != len(read):
            raise self.error(self.header_line, "header", "a column is named twice")
        for number, raw in self.rows:
            cells = raw.split("|")
            if len(cells) == len(names) + 1 and cells[-1] == "":
                cells.pop()
            if len(cells) != len(names):
                raise self.error(number, "line", f"{len(cells)} fields, the header has {len(names)}")
            record = {}
            for column, name, cell in zip(self.columns, names, cells):
                cell = cell.strip()
                if name.startswith("-"):
                    if cell and name[1:] not in QUIET:
                        ignored.setdefault(f"{column}", None)
                    continue
                record[name] = (column, cell)
            yield number, record

    # --- cells ---------------------------------------------------------------------------
    def whole(self, line: int, cell, least: int = 0) -> int | None:
        column, text = cell
        if not text:
            return None
        if not re.fullmatch(r"-?\d+", text):
            raise self.error(line, column, f"expected a whole number, got {text!r}")
        value = int(text)
        if value < least:
            raise self.error(line, column, f"must be at least {least}, got {value}")
        return value

    def wall(self, line: int, cell) -> float | None:
        column, text = cell
        if not text or text.upper() in ("UNLIMITED", "INFINITE"):
            return None
        seconds = slurm_time(text)
        if seconds is None:
            raise self.error(line, column, f"expected a Slurm time ([days-]hours:minutes:seconds, minutes), got {text!r}")
        return seconds

    def tres(self, line: int, cell, ignored: dict) -> dict:
        column, text = cell
        out = {}
        if not text:
            return out
        for item in text.split(","):
            name, sep, value = item.strip().partition("=")
            name = name.strip().lower()
            if not sep or not name:
                raise self.error(line, column, f"expected TRES=count (cpu=16,node=2), got {item!r}")
            if name in TRES:
                if not re.fullmatch(r"\d+", value.strip()):
                    raise self.error(line, column, f"{name}: expected a whole number >= 0, got {value!r}")
                out[name] = int(value)
            else:
                if not re.fullmatch(r"\d+[KMGTP]?", value.strip(), flags=re.I):
                    raise self.error(line, column, f"{name}: expected a count, got {value!r}")
                ignored.setdefault(f"{column} {name}", None)
        return out


def read_associations(path, qos_path=None) -> Associations:
    """``sacctmgr -P show assoc`` at ``path`` and ``sacctmgr -P show qos`` at ``qos_path`` (see
    the module docstring); ConfigError on bad input."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"cannot read the associations file {path}: no such file")
    ignored: dict[str, None] = {}
    table = _Table(path, "associations file")
    present = {ASSOC_COLUMNS.get(_norm(c)) for c in table.columns}
    for needed in ("account", "user"):
        if needed not in present:
            raise table.error(table.header_line, needed.capitalize(),
                              "missing: expected the output of sacctmgr -P show assoc (Account and User columns)")
    empty = ("", "")
    associations = []
    seen: dict[tuple, int] = {}
    for line, rec in table.records(ASSOC_COLUMNS, ASSOC_OTHER, ignored):
        account = rec["account"][1]
        user = rec["user"][1]
        partition = rec.get("partition", empty)[1]
        if not account:
            raise table.error(line, rec["account"][0], "empty: every association names its account")
        key = (account, user, partition)
        if key in seen:
            raise table.error(line, "Account/User/Partition",
                              f"the association {'/'.join(key)} is repeated (first at line {seen[key]}); "
                              f"export one cluster (sacctmgr show assoc cluster=NAME)")
        seen[key] = line
        share_cell = rec.get("share", empty)
        if share_cell[1].lower() == "parent":
            share = None
        elif share_cell[1]:
            try:
                share = float(share_cell[1])
            except ValueError:
                raise table.error(line, share_cell[0], f"expected a number or 'parent', got {share_cell[1]!r}") from None
            if not share >= 0:
                raise table.error(line, share_cell[0], f"must be >= 0, got {share_cell[1]}")
        else:
            share = 1.0  # sacctmgr's default Fairshare=1
        parent = rec.get("parent", empty)[1] if not user else ""
        if not user and account != "root" and not parent:
            parent = "root"
        qos = tuple(q.strip() for q in rec.get("qos", empty)[1].split(",") if q.strip())
        associations.append(Association(
            account=account, user=user, partition=partition, parent=parent, share=share,
            grp_jobs=table.whole(line, rec.get("grp_jobs", empty)),
            grp_submit=table.whole(line, rec.get("grp_submit", empty)),
            grp_tres=table.tres(line, rec.get("grp_tres", empty), ignored),
            max_jobs=table.whole(line, rec.get("max_jobs", empty)),
            max_submit=table.whole(line, rec.get("max_submit", empty)),
            max_tres=table.tres(line, rec.get("max_tres", empty), ignored),
            max_wall=table.wall(line, rec.get("max_wall", empty)),
            qos=qos, def_qos=rec.get("def_qos", empty)[1], line=line,
        ))
    if not any(a.user for a in associations):
        raise ConfigError(f"{path}: no user association (a line with a User): no job could run")
    qos: dict[str, Qos] = {}
    if qos_path is not None:
        qos_path = Path(qos_path)
        if not qos_path.is_file():
            raise ConfigError(f"cannot read the QOS file {qos_path}: no such file")
        qtable = _Table(qos_path, "QOS file")
        if "name" not in {QOS_COLUMNS.get(_norm(c)) for c in qtable.columns}:
            raise qtable.error(qtable.header_line, "Name", "missing: expected the output of sacctmgr -P show qos")
        for line, rec in qtable.records(QOS_COLUMNS, QOS_OTHER, ignored):
            name = rec["name"][1]
            if not name:
                raise qtable.error(line, rec["name"][0], "empty: every QOS has a name")
            if name in qos:
                raise qtable.error(line, rec["name"][0], f"QOS {name!r} is repeated (first at line {qos[name].line})")
            qos[name] = Qos(
                name=name, priority=qtable.whole(line, rec.get("priority", empty)) or 0,
                grp_jobs=qtable.whole(line, rec.get("grp_jobs", empty)),
                grp_tres=qtable.tres(line, rec.get("grp_tres", empty), ignored),
                max_tres=qtable.tres(line, rec.get("max_tres", empty), ignored),
                max_wall=qtable.wall(line, rec.get("max_wall", empty)),
                max_jobs_pu=qtable.whole(line, rec.get("max_jobs_pu", empty)),
                max_submit_pu=qtable.whole(line, rec.get("max_submit_pu", empty)),
                max_tres_pu=qtable.tres(line, rec.get("max_tres_pu", empty), ignored),
                line=line,
            )
    accounts = {a.account for a in associations if not a.user and not a.partition}
    for a in associations:
        if a.user and a.account not in accounts:
            raise table.error(a.line, "Account", f"the user association {a.account}/{a.user} has no account "
                                                 f"association {a.account!r} (a line with Account={a.account} and no User)")
        if not a.user and a.parent and a.parent != "root" and a.parent not in accounts:
            raise table.error(a.line, "ParentName", f"the parent account {a.parent!r} has no association")
        for name in (*a.qos, *([a.def_qos] if a.def_qos else [])):
            if qos and name not in qos:
                raise table.error(a.line, "QOS", f"QOS {name!r} is not in the QOS file {qos_path}")
    _check_no_cycle(associations, table)
    return Associations(str(path), tuple(associations), qos, str(qos_path) if qos_path else None,
                        tuple(ignored), has_parents="parent" in present)


def _check_no_cycle(associations, table: _Table) -> None:
    parent = {a.account: a.parent for a in associations if not a.user and not a.partition}
    for a in associations:
        if a.user or a.partition:
            continue
        seen = set()
        name = a.account
        while name in parent and name != "root":
            if name in seen:
                raise table.error(a.line, "ParentName", f"the accounts above {a.account!r} form a cycle")
            seen.add(name)
            name = parent[name]
