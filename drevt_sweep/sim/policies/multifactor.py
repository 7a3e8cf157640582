"""Slurm's multifactor priority with the classic fair-share factor (``priority: multifactor``).

Sources: Slurm's "Multifactor Priority Plugin" page (slurm.schedmd.com/priority_multifactor.html)
and "Classic Fairshare Algorithm" page (slurm.schedmd.com/classic_fair_share.html; Slurm uses it
with ``PriorityFlags=NO_FAIR_TREE``). As documented there, a job's priority is

    priority = w_age * age + w_fairshare * fair-share + w_job_size * job size
               + w_partition * partition + w_qos * QOS

with every factor in [0, 1] and the result an integer (Slurm's priority is a 32-bit integer):
as ``_get_priority_internal`` in Slurm's ``src/plugins/priority/multifactor/priority_multifactor.c``
does, a sum below 1 is raised to 1 (0 means "held"), then truncated and capped at 2^32 - 1
(:func:`slurm_integer`; with weights around 1 the floor at 1 makes jobs tie that rounding down
would order). Here (parameter names are the slurm.conf ones in snake case):

* age = min(1, (now - submit) / max_age)  (``PriorityMaxAge``, default 7 days);
* job size = nodes / total_nodes, or with ``favor_small`` (``PriorityFavorSmall=YES``)
  (total_nodes - nodes) / total_nodes: a job asking for the whole machine gets 1.0 (0.0);
  on shared-node pools (``PriorityInputs.cpus``) the mean of that and the same ratio of CPUs,
  (nodes / total_nodes + cpus / total_cpus) / 2 (favor_small: of the complements), as
  ``_get_priority_internal`` computes it (``priority_multifactor.c``; ``sprio`` on a real
  Slurm with select/cons_tres shows 0.15625 for 1 CPU on 1 of 4 nodes of 4 CPUs,
  ``tests/test_real_slurm_shared.py``); on whole nodes the two ratios are equal;
* partition = the partition's ``PriorityJobFactor`` / the largest one of the trace's
  partitions (``partition_priority: {name: value}``, default 1 each, so 1.0 for everyone);
* QOS = the job's QOS ``Priority`` / the largest QOS ``Priority`` (Slurm's ``norm_priority``,
  ``assoc_mgr.c``): ``qos_priority: {qos: factor}`` for a job whose trace states its QOS
  (sacct's ``QOS``), else per association ``qos_factor: {"account/user": factor}`` (its ``Def
  QOS``); both filled from ``sacctmgr show assoc``/``show qos`` by ``system.associations``/
  ``--associations``; 0 otherwise (Slurm's ``normal`` QOS of priority 0);
* fair-share (classic) F = 2^(-UE / S). Associations form a tree root -> account -> user
  (``fairshare_by: account/user``, the job's group/account and user; ``user`` or ``account``:
  one level). Normalised shares S = (S_user / S_siblings) * (S_account / S_sibling_accounts)
  from raw shares (``account_shares``, ``user_shares``: {name: shares}, default 1 each: equal;
  ``association_shares``: {"account/user": shares}, a user's in one account, wins over
  ``user_shares``: what ``sacctmgr show assoc`` gives).
  Normalised usage U = an association's usage / the root's usage; an account's effective usage
  is its U (the tier under root), a user's UE = U_user + (UE_account - U_user) * S_user /
  S_siblings. With no usage at all, F = 1. Unknown users/groups form one association of their own.

Usage is node-seconds on whole-node pools and CPU-seconds on shared-node pools (the CPUs a job
holds: Slurm's billing TRES without ``TRESBillingWeights``; ``PriorityInputs.charge``, see
``sim.shared``), accumulated every ``calc_period`` (``PriorityCalcPeriod``, default 5 min)
of simulated time and decayed with ``decay_half_life`` (``PriorityDecayHalfLife``, default 7
days): at each tick ``t0 + k * calc_period``, usage = usage * 2^(-calc_period / half_life) + the
node-seconds the association's jobs ran since the previous tick. Priorities are recomputed at
each tick (an event while jobs wait); a job arriving between ticks gets its priority at
submission, with the fair-share factors of the last tick. (Internally usage is kept scaled by
2^(elapsed / half-life), so that a tick only touches the associations that ran; U/S, all that
fair-share uses, is the same.)

**A job that ends between ticks** (``charge_ended_jobs``). Slurm's decay thread charges each
running job at a tick for its time since the last one (``decay_apply_new_usage`` in
``priority_multifactor.c``), and skips jobs that have ended; a job's time from the last tick to
its end is charged when it ends, by ``priority_p_job_end``, which Slurm calls only from the
limits code: ``_adjust_limit_usage`` in ``src/slurmctld/acct_policy.c`` returns first unless
``AccountingStorageEnforce`` includes ``limits`` (or ``safe``, ``all``). So with ``limits``
(``charge_ended_jobs: true``, the default) every job's whole run is charged; without it
(``false``; ``system=slurm`` sets it from the slurm.conf) a job that starts and ends between two
ticks is never charged, and a job running over ticks only up to the last one. Seen on a real
Slurm: without ``limits``, ``sshare`` showed no usage for accounts whose jobs all ended between
ticks (docs/slurm.md, "Shared nodes on the real Slurm").

**Fair Tree** (``fairshare: fair_tree``; Slurm's default since 19.05, chosen by slurm.conf
unless ``PriorityFlags`` has ``NO_FAIR_TREE``; here ``classic`` stays the default so that
existing configs keep their schedules). Source: Slurm's "Fair Tree Fairshare Algorithm" page
(slurm.schedmd.com/fair_tree.html). Every association gets a level fair-share LF = S / U with
S its raw shares over its siblings' and U its usage over its parent's (U = 0: LF = inf). From
the root down, siblings are visited in decreasing LF (users before accounts on a tie); a user
gets the rank ``rank / N`` (N user associations, the rank starting at N and going down by one
per user visited), sibling users with the same LF the same rank, and sibling accounts with the
same LF have their children merged and sorted together. So every user of an account that is
better served than its sibling comes after every user of the sibling. Computed at every tick
from the same decayed usage as classic; the reference engine runs it, and so does the compiled
kernel of ``backfill: slurm`` (``kernel._extended._fair_tree``; EASY's compiled kernel has
classic only).

Weights default to a common site choice (age 1000, fairshare 10000, job_size 1000, partition
1000, qos 0); Slurm's own defaults are 0 (which would be FCFS).
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from ...errors import ConfigError
from ...jobs import distinct_codes
from .dynamic import PriorityInputs, lazy_list, number, take_params
from .registry import register_dynamic_priority

DAY = 86400.0
RESCALE_ABOVE = 2.0**600  # usage scales are brought back by RESCALE_BY past this
RESCALE_BY = 2.0**-600
FAIRSHARE_BY = ("account/user", "user", "account")
FAIRSHARE_ALGORITHMS = ("classic", "fair_tree")
WEIGHTS = ("age", "fairshare", "job_size", "partition", "qos")
DEFAULTS = {
    "weights": {"age": 1000, "fairshare": 10000, "job_size": 1000, "partition": 1000, "qos": 0},
    "max_age": 7 * DAY,
    "favor_small": False,
    "decay_half_life": 7 * DAY,
    "calc_period": 300.0,
    "fairshare_by": "account/user",
    "fairshare": "classic",
    "account_shares": {},
    "user_shares": {},
    "association_shares": {},  # "account/user" -> raw shares of that user association
    "partition_priority": {},
    "qos_factor": {},  # "account/user" -> the QOS factor of the association's jobs, in [0, 1]
    "qos_priority": {},  # QOS name -> its factor, for jobs whose trace states their QOS
    "charge_ended_jobs": True,  # AccountingStorageEnforce has limits: see the module docstring
}


def check_params(params: dict) -> dict:
    """The parameters with defaults filled in and checked (a ConfigError names a bad one);
    the names of accounts, users and partitions are checked against a trace later."""
    p = take_params("multifactor", params, DEFAULTS)
    given = dict(p["weights"] or {})
    unknown = sorted(set(given) - set(WEIGHTS))
    if unknown:
        raise ConfigError(f"multifactor has no weight(s) {', '.join(unknown)}; it has: {', '.join(WEIGHTS)}")
    weights = {**DEFAULTS["weights"], **given}
    p["weights"] = {k: number(f"multifactor weight {k}", v) for k, v in weights.items()}
    p["max_age"] = number("multifactor max_age", p["max_age"], positive=True)
    p["calc_period"] = number("multifactor calc_period", p["calc_period"], positive=True)
    p["decay_half_life"] = number("multifactor decay_half_life", p["decay_half_life"], positive=True)
    for key in ("favor_small", "charge_ended_jobs"):
        if not isinstance(p[key], bool):
            raise ConfigError(f"multifactor {key} must be true or false, got {p[key]!r}")
    if p["fairshare"] not in FAIRSHARE_ALGORITHMS:
        raise ConfigError(f"unknown multifactor fairshare {p['fairshare']!r}; choose one of: "
                          f"{', '.join(FAIRSHARE_ALGORITHMS)}")
    if p["fairshare_by"] not in FAIRSHARE_BY:
        raise ConfigError(f"unknown multifactor fairshare_by {p['fairshare_by']!r}; choose one of: "
                          f"{', '.join(FAIRSHARE_BY)}")
    for what in ("qos_factor", "qos_priority"):
        p[what] = dict(p[what] or {})
        for name, value in p[what].items():
            if number(f"multifactor {what}[{name!r}]", value) > 1:
                raise ConfigError(f"multifactor {what}[{name!r}] must be in [0, 1], got {value!r}")
    p["association_shares"] = dict(p["association_shares"] or {})
    for name, value in p["association_shares"].items():
        number(f"multifactor association_shares[{name!r}]", value, positive=True)
    for what in ("account_shares", "user_shares", "partition_priority"):
        p[what] = dict(p[what] or {})
        for name, value in p[what].items():
            number(f"multifactor {what}[{name!r}]", value, positive=what != "partition_priority")
    return p


@register_dynamic_priority("multifactor")
class Multifactor:
    check_params = staticmethod(check_params)

    def __init__(self, inputs: PriorityInputs, **params) -> None:
        p = check_params(params)
        w = p["weights"]
        self.w_age = w["age"]
        self.w_fs = w["fairshare"]
        self.max_age = p["max_age"]
        self.period = p["calc_period"]
        half_life = p["decay_half_life"]
        self._submit = inputs.submit

        nodes = inputs.num_nodes.astype(np.float64)
        total = float(inputs.total_nodes)
        size = (total - nodes) / total if p["favor_small"] else nodes / total
        if inputs.cpus is not None and inputs.total_cpus > 0:  # shared nodes: CPUs too (module docstring)
            cpus = np.asarray(inputs.cpus, dtype=np.float64)
            total_cpus = float(inputs.total_cpus)
            by_cpus = (total_cpus - cpus) / total_cpus if p["favor_small"] else cpus / total_cpus
            size = np.clip((size + by_cpus) / 2.0, 0.0, 1.0)
        part = _partition_factor(inputs, dict(p["partition_priority"] or {}))
        qos = _qos_factor(inputs, dict(p["qos_factor"] or {}), dict(p["qos_priority"] or {}), len(nodes))
        static = (w["job_size"] * size + w["partition"] * part) + w["qos"] * qos
        self.static = static

        if self.w_fs > 0 and len(inputs.submit):
            _check_who(inputs, p["fairshare_by"])
        tree = FairShareTree.build(inputs, p["fairshare_by"], dict(p["account_shares"] or {}),
                                   dict(p["user_shares"] or {}), dict(p["association_shares"] or {}))
        self.tree = tree
        self.fair_tree = p["fairshare"] == "fair_tree"  # (both compiled kernels have both)
        self.charge = inputs.num_nodes if inputs.charge is None else np.asarray(inputs.charge, dtype=np.int64)
        self.decay = 0.5 ** (self.period / half_life)
        self.t0 = float(inputs.t0)
        self.charge_ended = p["charge_ended_jobs"]
        n_leaves = tree.acct_of_leaf.shape[0]
        # Usage is kept scaled by 2^(elapsed ticks x calc_period / half_life) (``scale``), so a
        # tick only adds the new node-seconds of the associations that ran instead of decaying
        # every one: U / root, all fair-share needs, is unchanged by the common scale.
        self.scaled = np.zeros(n_leaves)  # per association
        self.scaled_acct = np.zeros(tree.n_acct)  # per account: the sum of its associations
        self.scaled_root = 0.0
        self.scale = 1.0
        self.acc = np.zeros(n_leaves)  # node-seconds since the last tick (up to the next one)
        self.running = np.zeros(n_leaves)  # nodes in use now
        self.k = 1
        self.next_tick = self.t0 + self.period
        self._due = False
        self._factors: dict[int, float] = {}

    # the reference engine's per-job lists (``dynamic.lazy_list``)
    submit = lazy_list("_submit")
    static_l = lazy_list("static")
    leaf_l = lazy_list("tree.leaf_of_job")
    nodes_l = lazy_list("charge")  # what a running job is charged per second

    @cached_property
    def began(self) -> list:
        return [0.0] * len(self.leaf_l)  # start times (charge_ended_jobs: false)

    # --- usage accounting ---------------------------------------------------------------

    def advance(self, now: float) -> None:
        """Process every tick <= now: usage = usage x decay + the interval's node-seconds."""
        while self.next_tick <= now:
            self.scale = self.scale / self.decay
            ran = np.flatnonzero(self.acc)  # in association order
            if ran.size:
                add = self.acc[ran] * self.scale
                self.scaled[ran] += add
                np.add.at(self.scaled_acct, self.tree.acct_of_leaf[ran], add)  # in order
                root = self.scaled_root
                for value in add.tolist():
                    root += value
                self.scaled_root = root
            if self.scale > RESCALE_ABOVE:  # a power of two: exact
                self.scaled *= RESCALE_BY
                self.scaled_acct *= RESCALE_BY
                self.scaled_root *= RESCALE_BY
                self.scale *= RESCALE_BY
            self.acc[:] = self.running * self.period
            self.k += 1
            self.next_tick = self.t0 + self.k * self.period
            self._due = True
            self._factors = {}

    def usage(self) -> np.ndarray:
        """Each association's decayed usage (node-seconds) as of the last tick."""
        return self.scaled / self.scale

    def start(self, j: int, now: float) -> None:
        leaf = self.leaf_l[j]
        n = self.nodes_l[j]
        self.running[leaf] += n
        self.acc[leaf] += n * (self.next_tick - now)
        self.began[j] = now

    def end(self, j: int, now: float) -> None:
        """The job's time after ``now`` is taken back; without ``charge_ended_jobs``, its time
        since the last tick too (the last tick: ``next_tick - period``)."""
        leaf = self.leaf_l[j]
        n = self.nodes_l[j]
        self.running[leaf] -= n
        since = now if self.charge_ended else max(self.began[j], self.next_tick - self.period)
        self.acc[leaf] -= n * (self.next_tick - since)

    def refresh_due(self) -> bool:
        due = self._due
        self._due = False
        return due

    # --- priorities ---------------------------------------------------------------------

    def fairshare(self, leaf: int) -> float:
        """F = 2^(-UE/S) of one association, from the usage as of the last tick."""
        f = self._factors.get(leaf)
        if f is None and self.fair_tree:
            factors = fair_tree_factors(self.scaled, self.scaled_acct, self.tree)
            self._factors = dict(enumerate(factors.tolist()))
            return self._factors[leaf]
        if f is None:
            tree = self.tree
            f = fairshare_factor(float(self.scaled[leaf]), float(self.scaled_acct[int(tree.acct_of_leaf[leaf])]),
                                 self.scaled_root, float(tree.sib_ratio[leaf]), float(tree.s_norm[leaf]))
            self._factors[leaf] = f
        return f

    def priorities(self, now: float, jobs) -> list[float]:
        """Each job's priority at ``now`` (the module docstring's sum, as Slurm's integer), in one
        loop: the engine asks for a whole queue's at every tick."""
        submit, leaf_of, static = self.submit, self.leaf_l, self.static_l
        w_age, w_fs, max_age = self.w_age, self.w_fs, self.max_age
        factors = self._factors
        out = []
        for j in jobs:
            age = (now - submit[j]) / max_age
            if age > 1.0:
                age = 1.0
            f = factors.get(leaf_of[j])
            if f is None:  # (this tick's first job of its association)
                f = self.fairshare(leaf_of[j])
                factors = self._factors  # (Fair Tree makes them all at once, in a new dict)
            out.append(slurm_integer(w_age * age + w_fs * f + static[j]))
        return out

    def priority(self, now: float, j: int) -> float:
        return self.priorities(now, (j,))[0]

    def key(self, now: float, j: int) -> float:
        return -self.priority(now, j)

    def keys(self, now: float, jobs) -> list[float]:
        return [-p for p in self.priorities(now, jobs)]

    def kernel_args(self) -> tuple:
        t = self.tree
        return (self.static, t.leaf_of_job, t.acct_of_leaf, t.sib_ratio, t.s_norm, t.n_acct,
                self.w_age, self.w_fs, self.max_age, self.period, self.decay, self.t0, self.charge_ended)


PRIORITY_MAX = 4294967295.0  # 2^32 - 1, Slurm's largest priority


def slurm_integer(priority: float) -> float:
    """Slurm's job priority from the weighted sum: at least 1, truncated, at most 2^32 - 1."""
    if priority < 1.0:
        return 1.0
    p = math.floor(priority)
    return p if p < PRIORITY_MAX else PRIORITY_MAX


def fairshare_factor(usage: float, acct_usage: float, root: float, sib_ratio: float, s_norm: float) -> float:
    """Slurm's classic F = 2^(-UE/S) (see the module docstring); 1 when nothing was used yet."""
    if root == 0.0:
        return 1.0
    u = usage / root
    ue = u + (acct_usage / root - u) * sib_ratio
    return 2.0 ** (-ue / s_norm)


def fair_tree_factors(usage: np.ndarray, acct_usage: np.ndarray, tree: FairShareTree) -> np.ndarray:
    """Slurm's Fair Tree factor of every leaf association (see the module docstring), from
    each leaf's and each account's usage (any common scale). Two levels (root -> account ->
    user) with ``account/user``, else the leaves sit under the root."""
    n = usage.shape[0]
    if n == 0:
        return np.zeros(0)
    if tree.two_levels:
        acct_lf = _level_fs(tree.acct_share, acct_usage, acct_usage.sum())
        # accounts in decreasing LF; equal LFs are one group (their children are merged)
        values = np.unique(-acct_lf)  # ascending -LF: the best served first
        group = np.searchsorted(values, -acct_lf)[tree.acct_of_leaf]
        user_lf = _level_fs(tree.sib_ratio, usage, acct_usage[tree.acct_of_leaf])
    else:
        group = np.zeros(n, dtype=np.int64)
        user_lf = _level_fs(tree.s_norm, usage, usage.sum())
    order = np.lexsort((-user_lf, group))  # by group, then decreasing LF within it
    g, lf = group[order], user_lf[order]
    new_run = np.ones(n, dtype=bool)  # a user not tied with the one visited before it
    new_run[1:] = (g[1:] != g[:-1]) | (lf[1:] != lf[:-1])
    start = np.maximum.accumulate(np.where(new_run, np.arange(n), 0))
    out = np.empty(n)
    out[order] = (n - start) / n  # rank = N minus the users visited before the tie's first
    return out


def _level_fs(shares: np.ndarray, usage: np.ndarray, parent_usage) -> np.ndarray:
    """LF = S / U with U = usage / the parent's usage (0 when the parent has none): inf when
    U = 0."""
    parent = np.broadcast_to(np.asarray(parent_usage, dtype=np.float64), usage.shape)
    u = np.divide(usage, parent, out=np.zeros_like(usage, dtype=np.float64), where=parent > 0)
    return np.divide(shares, u, out=np.full(usage.shape, np.inf), where=u > 0)


class FairShareTree:
    """The association tree as arrays: each job's leaf, each leaf's account and shares."""

    def __init__(self, leaf_of_job, acct_of_leaf, sib_ratio, s_norm, n_acct, leaf_names, acct_share=None,
                 two_levels: bool = True):
        self.leaf_of_job = leaf_of_job
        self.two_levels = two_levels  # root -> account -> user (else the leaves sit under the root)
        # each account's shares over its siblings' (Fair Tree's S one level down the root)
        self.acct_share = s_norm if acct_share is None else acct_share
        self.acct_of_leaf = acct_of_leaf
        self.sib_ratio = sib_ratio  # S_user / S_siblings (1 with one level)
        self.s_norm = s_norm  # normalised shares S
        self.n_acct = n_acct
        self._leaf_names = leaf_names  # a list, or a function that makes it (at its first use)

    @property
    def leaf_names(self) -> list:
        """(account, user) per leaf, for reports and tests."""
        if callable(self._leaf_names):
            self._leaf_names = self._leaf_names()
        return self._leaf_names

    @classmethod
    def build(cls, inputs: PriorityInputs, by: str, account_shares: dict, user_shares: dict,
              association_shares: dict | None = None) -> FairShareTree:
        if by not in FAIRSHARE_BY:
            raise ConfigError(f"unknown multifactor fairshare_by {by!r}; choose one of: {', '.join(FAIRSHARE_BY)}")
        users = np.asarray(inputs.user_code, dtype=np.int64)
        groups = np.asarray(inputs.group_code, dtype=np.int64)
        _check_shares("account_shares", account_shares, inputs.group_names, by != "user")
        _check_shares("user_shares", user_shares, inputs.user_names, by != "account")

        if by == "account/user":
            pairs = groups * (len(inputs.user_names) + 1) + (users + 1)
        else:
            pairs = users if by == "user" else groups
        leaves, leaf_of_job, first = distinct_codes(pairs)  # (first: a job of each leaf)
        leaf_user = users[first]
        leaf_group = groups[first]
        n = leaves.shape[0]
        if by == "account/user":
            accounts, acct_of_leaf = np.unique(leaf_group, return_inverse=True)
            s_acct = _raw_shares(account_shares, inputs.group_names)[accounts]
            s_user = _raw_shares(user_shares, inputs.user_names)[leaf_user]
            if association_shares:  # a user association's own shares ("account/user")
                for i, (g, u) in enumerate(zip(leaf_group.tolist(), leaf_user.tolist())):
                    if g >= 0 and u >= 0:
                        key = f"{inputs.group_names[g]}/{inputs.user_names[u]}"
                        if key in association_shares:
                            s_user[i] = float(association_shares[key])
            siblings = np.bincount(acct_of_leaf, weights=s_user)
            sib_ratio = s_user / siblings[acct_of_leaf]
            s_norm = sib_ratio * (s_acct[acct_of_leaf] / s_acct.sum())
            acct_share = s_acct / s_acct.sum()
            n_acct = accounts.shape[0]
        else:
            names = inputs.user_names if by == "user" else inputs.group_names
            codes = leaf_user if by == "user" else leaf_group
            s_leaf = _raw_shares(user_shares if by == "user" else account_shares, names)[codes]
            acct_of_leaf = np.arange(n)
            sib_ratio = np.ones(n)
            s_norm = s_leaf / s_leaf.sum()
            acct_share = s_norm
            n_acct = n

        def leaf_names():
            def label(names, code):
                return names[code] if code >= 0 else None

            return [(label(inputs.group_names, int(g)) if by != "user" else None,
                     label(inputs.user_names, int(u)) if by != "account" else None)
                    for g, u in zip(leaf_group, leaf_user)]

        return cls(leaf_of_job.astype(np.int64), np.asarray(acct_of_leaf, dtype=np.int64),
                   np.asarray(sib_ratio, dtype=np.float64), np.asarray(s_norm, dtype=np.float64),
                   int(n_acct), leaf_names, np.asarray(acct_share, dtype=np.float64),
                   two_levels=by == "account/user")


def _raw_shares(shares: dict, names: tuple) -> np.ndarray:
    """Each name's raw shares (1 unless ``shares`` gives it) by code, and 1 at code -1 (unknown:
    the last entry), so that one indexing gives every association's."""
    out = np.ones(len(names) + 1)
    if shares:
        for code, name in enumerate(names):
            if name in shares:
                out[code] = float(shares[name])
    return out


def _check_who(inputs: PriorityInputs, by: str) -> None:
    """Fair-share with no known user or account at all would be one association: say so."""
    known_user = (np.asarray(inputs.user_code) >= 0).any()
    known_group = (np.asarray(inputs.group_code) >= 0).any()
    missing = {"user": not known_user, "account": not known_group,
               "account/user": not (known_user or known_group)}[by]
    if missing:
        column = {"user": "user (SWF field 12, Slurm User, Lassen hashed_user_id, simple user/user_id/uid)",
                  "account": "group/account (SWF field 13, Slurm Account/Group, Lassen hashed_user_group_id, "
                             "simple group/account)"}
        needed = column["user"] if by == "user" else column["account"] if by == "account" else (
            f"{column['account']} or {column['user']}")
        raise ConfigError(f"multifactor fair-share by {by} needs each job's {needed}, but this trace has "
                          f"none; read a trace that has it, or set weights.fairshare to 0")


def _check_shares(what: str, shares: dict, names: tuple, used: bool) -> None:
    if shares and not used:
        raise ConfigError(f"multifactor {what} has no effect with this fairshare_by")
    missing = sorted(str(name) for name in shares if name not in names)
    if missing:
        raise ConfigError(f"multifactor {what} names {', '.join(missing)}, not in this trace")


def _qos_factor(inputs: PriorityInputs, factors: dict, by_qos: dict, n: int) -> np.ndarray:
    """Each job's QOS factor: its own QOS's (``by_qos``) when the trace states it, else its
    association's ("account/user", ``factors``); 0 when neither is listed."""
    out = _association_qos(inputs, factors, n)
    if by_qos and inputs.qos_code is not None and inputs.qos_names:
        code = np.asarray(inputs.qos_code, dtype=np.int64)
        known = np.array([name in by_qos for name in inputs.qos_names] + [False])[code]
        values = np.array([float(by_qos.get(name, 0.0)) for name in inputs.qos_names] + [0.0])[code]
        out = np.where(known, values, out)
    return out


def _association_qos(inputs: PriorityInputs, factors: dict, n: int) -> np.ndarray:
    if not factors:
        return np.zeros(n)
    users = tuple(inputs.user_names) + ("",)
    groups = tuple(inputs.group_names) + ("",)
    per_pair: dict[tuple[int, int], float] = {}
    out = np.zeros(n)
    user_code = np.asarray(inputs.user_code).tolist()
    group_code = np.asarray(inputs.group_code).tolist()
    for j, (g, u) in enumerate(zip(group_code, user_code)):
        f = per_pair.get((g, u))
        if f is None:
            f = per_pair[(g, u)] = float(factors.get(f"{groups[g]}/{users[u]}", 0.0))
        out[j] = f
    return out


def _partition_factor(inputs: PriorityInputs, priority: dict) -> np.ndarray:
    missing = sorted(str(name) for name in priority if name not in inputs.queue_names)
    if missing:
        raise ConfigError(f"multifactor partition_priority names {', '.join(missing)}, not a queue of this trace")
    values = np.array([number(f"multifactor partition_priority[{name!r}]", priority.get(name, 1))
                       for name in inputs.queue_names] or [1.0])
    top = values.max()
    factor = values / top if top > 0 else np.zeros_like(values)
    return factor[np.asarray(inputs.queue_code, dtype=np.int64)] if inputs.queue_names else np.ones(len(inputs.submit))
