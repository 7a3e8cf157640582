"""Slurm's association and QOS limits, enforced while Slurm's backfill schedules (issue 26 item 4).

Sources (reference only, read at SchedMD/slurm 284c3b95): ``src/slurmctld/acct_policy.c``
(``_acct_policy_validate`` at submission, ``acct_policy_job_runnable_pre_select`` and
``_post_select`` before a start), the "Resource Limits" page (slurm.schedmd.com/
resource_limits.html, "Hierarchy": job QOS, then the user association, then the accounts up
the tree, the first place a limit is set wins) and the ``sacctmgr`` man page. What a job runs
under: the association of its user in its account (``JobTable.group`` is the account), the
partition's own one if the file has it; its QOS is the one the trace states (sacct's ``QOS``)
when the QOS file has it, else the association's ``Def QOS``, else ``normal`` when the QOS file
has it.

* **Per-association limits** (``Max*``: ``MaxJobs``, ``MaxSubmit``, ``MaxTRES`` cpu/node per
  job, ``MaxWall``) apply to the user association, inherited from its account, then the
  account's parent... when unset on it (sacctmgr prints them inherited unless ``WOPLimits``;
  both exports give the same limits here). A QOS that sets the same kind of limit
  (``MaxJobsPU``, ``MaxSubmitPU``, ``MaxTRES``, ``MaxWall``) replaces it (acct_policy.c skips
  the association's when the QOS has one).
* **Group limits** (``GrpJobs``, ``GrpSubmit``, ``GrpTRES`` cpu/node) apply at every level, to
  the sum over the association's subtree (an account's covers all its users' jobs); a QOS
  ``GrpJobs``/``GrpTRES`` replaces the associations' of the same kind; the QOS's own are the
  sums over its jobs, ``MaxTRESPU``/``MaxJobsPU``/``MaxSubmitPU`` per user within the QOS.
* **When**: at submission, ``MaxSubmit``/``GrpSubmit``/``MaxSubmitPU`` over (pending + running
  jobs + this one) refuse the job (``rejected_assoc_max_submit``, ``_assoc_grp_submit``,
  ``_qos_max_submit_pu``); before a start, ``MaxJobs``/``GrpJobs``/``MaxJobsPU`` (running jobs
  >= limit: pre-select) and ``GrpTRES``/``MaxTRESPU`` (in use + the job's > limit: post-select,
  tested only for a job that could start now) hold it: ``held_<Slurm's reason>``
  (``AssocMaxJobsLimit``, ``AssocGrpJobsLimit``, ``AssocGrpCpuLimit``, ``AssocGrpNodeLimit``,
  ``QOSMaxJobsPerUserLimit``, ``QOSGrpJobsLimit``, ``QOSGrpCpuLimit``, ``QOSGrpNodeLimit``,
  ``QOSMaxCpuPerUserLimit``, ``QOSMaxNodePerUserLimit``). A job no limit could ever let run
  (over ``MaxWall`` or a per-job/group/per-user TRES limit on its own, or a ``MaxJobs``/
  ``GrpJobs`` of 0) stays pending for ever in Slurm: it is rejected up front here
  (``rejected_assoc_max_wall``, ``_qos_max_wall``, ``_assoc_job_limit``, ``_qos_job_limit``),
  and so is a job whose user has no association in its account (Slurm refuses it at
  submission with ``AccountingStorageEnforce=associations``): ``rejected_no_association``.
* A job that asked for no limit (``JobTable.time_limit_unstated``) in a partition without
  ``DefaultTime`` gets its MaxWall (QOS first), at most the partition's ``MaxTime``: Slurm's
  ``_set_time_limit`` at submission (``_valid_job_part`` has already applied ``DefaultTime``),
  then ``select_nodes``' cap at ``MaxTime``.
* CPUs of a job: its nodes x the pool's cores per node (whole nodes: Slurm's ``select/linear``
  and ``OverSubscribe=EXCLUSIVE`` allocate every CPU), on shared-node pools x the cores per node
  it asked for (``sim.shared`` enforces the limits in Slurm's backfill, ``_SlurmShared``).

What is enforced follows the slurm.conf's ``AccountingStorageEnforce``
(``Associations.enforced``: ``limits``, ``associations`` alone, or nothing).

Cost: counters per association, QOS and (QOS, user) are updated at each submission, start and
end; a test reads the job's precomputed chain of limited associations (its depth): O(1) per
job and event, no scan of the running jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError
from ..jobs import JobTable

if TYPE_CHECKING:  # plain data read by trace.associations; the simulator does no I/O
    from ..trace.associations import Associations

SUBMIT_REASONS = ("assoc_max_submit", "assoc_grp_submit", "qos_max_submit_pu")  # refused at submission
STATIC_REASONS = ("no_association", "assoc_max_wall", "qos_max_wall", "assoc_job_limit", "qos_job_limit")
NONE = -1


@dataclass
class _Node:
    """A tree association with its group limits (None: unset) and live counters."""

    grp_jobs: int | None
    grp_submit: int | None
    grp_cpu: int | None
    grp_node: int | None
    jobs: int = 0  # running in the subtree
    cpus: int = 0
    nodes: int = 0
    submitted: int = 0  # pending + running in the subtree


class AssociationLimits:
    """The limits of one table's jobs (see the module docstring): static per-job data, and a
    :class:`LimitState` per node pool (``state_for``)."""

    def __init__(self, assoc: Associations, jobs: JobTable, cpus_per_node: np.ndarray) -> None:
        n = len(jobs)
        if n and not (np.asarray(jobs.user_code) >= 0).any():
            raise ConfigError("association limits need each job's user (Slurm User, SWF field 12, a simple "
                              "trace's user column), but this trace has none")
        if n and not (np.asarray(jobs.group_code) >= 0).any():
            raise ConfigError("association limits need each job's account (Slurm Account, SWF field 13, a simple "
                              "trace's group/account column), but this trace has none")
        self.assoc = assoc
        accounts = assoc.accounts
        qos_names = list(assoc.qos)
        qos_index = {name: i for i, name in enumerate(qos_names)}
        self.qos = [assoc.qos[name] for name in qos_names]
        # tree nodes: accounts first, then the user associations jobs use
        self.nodes: list[_Node] = []
        node_of_account: dict[str, int] = {}

        def grp(a):
            return _Node(a.grp_jobs, a.grp_submit, a.grp_tres.get("cpu"), a.grp_tres.get("node"))

        for name, a in accounts.items():
            node_of_account[name] = len(self.nodes)
            self.nodes.append(grp(a))
        leaf_of: dict[tuple, int] = {}
        # per leaf: (chain of limited node ids, leaf first; max_jobs, max_submit, max_cpu, max_node, max_wall)
        self.chains: list[tuple[int, ...]] = []
        self.leaf_max: list[tuple] = []
        self.leaf_qos: list[int] = []
        # one lookup per distinct (account, user, partition) of the trace, not per job
        codes = np.stack([np.asarray(jobs.group_code, dtype=np.int64), np.asarray(jobs.user_code, dtype=np.int64),
                          np.asarray(jobs.partition_code, dtype=np.int64)], axis=1) if n else np.zeros((0, 3), np.int64)
        distinct, inverse = np.unique(codes, axis=0, return_inverse=True)
        leaf_of_key = np.full(len(distinct), NONE, dtype=np.int64)
        group_names, user_names, part_names = jobs.group_names, jobs.user_names, jobs.partition_names
        for k, (g, u, p) in enumerate(distinct.tolist()):
            if g < 0 or u < 0:
                continue
            a = assoc.user_association(group_names[g], user_names[u], part_names[p])
            if a is None:
                continue
            leaf = leaf_of.get((a.account, a.user, a.partition))
            if leaf is None:
                leaf = leaf_of[(a.account, a.user, a.partition)] = self._add_leaf(
                    a, accounts, node_of_account, qos_index)
            leaf_of_key[k] = leaf
        self.leaf = leaf_of_key[inverse.reshape(-1)] if n else np.zeros(0, dtype=np.int64)
        leaf_qos = np.array(self.leaf_qos + [NONE], dtype=np.int64)
        self.job_qos = leaf_qos[self.leaf]
        # a job whose trace states its QOS (sacct's QOS) runs in it, when the QOS file has it
        own = np.array([qos_index.get(name, NONE) for name in jobs.qos_names] + [NONE], dtype=np.int64)
        stated = own[np.asarray(jobs.qos_code, dtype=np.int64)] if n else np.zeros(0, dtype=np.int64)
        self.job_qos = np.where(stated != NONE, stated, self.job_qos)
        nodes_l = np.asarray(jobs.num_nodes, dtype=np.int64)
        self.job_nodes = nodes_l
        self.job_cpus = nodes_l * np.asarray(cpus_per_node, dtype=np.int64)
        self.users = np.asarray(jobs.user_code, dtype=np.int64)
        self.reason = self._static(np.asarray(jobs.time_limit, dtype=np.float64))

    def _add_leaf(self, a, accounts, node_of_account, qos_index) -> int:
        leaf_node = len(self.nodes)
        self.nodes.append(_Node(a.grp_jobs, a.grp_submit, a.grp_tres.get("cpu"), a.grp_tres.get("node")))
        chain = [leaf_node]
        limits = {"max_jobs": a.max_jobs, "max_submit": a.max_submit, "cpu": a.max_tres.get("cpu"),
                  "node": a.max_tres.get("node"), "max_wall": a.max_wall}
        name = a.account
        seen = set()
        while name in accounts and name not in seen:  # the account, then its parents
            seen.add(name)
            parent = accounts[name]
            node = node_of_account[name]
            if any(v is not None for v in (parent.grp_jobs, parent.grp_submit, parent.grp_tres.get("cpu"),
                                           parent.grp_tres.get("node"))):
                chain.append(node)
            for key, value in (("max_jobs", parent.max_jobs), ("max_submit", parent.max_submit),
                               ("cpu", parent.max_tres.get("cpu")), ("node", parent.max_tres.get("node")),
                               ("max_wall", parent.max_wall)):
                if limits[key] is None:  # inherited: the first level that sets it wins
                    limits[key] = value
            name = parent.parent
        qos_name = self.assoc.job_qos(a)
        self.leaf_qos.append(qos_index.get(qos_name, NONE))
        self.chains.append(tuple(chain))
        self.leaf_max.append((limits["max_jobs"], limits["max_submit"], limits["cpu"], limits["node"],
                              limits["max_wall"]))
        return len(self.chains) - 1

    def _static(self, limit: np.ndarray) -> np.ndarray:
        """Per job: 0, or 1 + the index in STATIC_REASONS of why it can never run."""
        n = self.leaf.shape[0]
        reason = np.zeros(n, dtype=np.int8)
        none = self.leaf == NONE
        reason[none] = 1 + STATIC_REASONS.index("no_association")
        maybe = np.zeros(len(self.chains) + 1, dtype=bool)  # leaves with a limit a job could exceed
        for leaf in range(len(self.chains)):
            maybe[leaf] = (any(v is not None for v in self.leaf_max[leaf][:1] + self.leaf_max[leaf][2:])
                           or any(self.nodes[c].grp_jobs is not None or self.nodes[c].grp_cpu is not None
                                  or self.nodes[c].grp_node is not None for c in self.chains[leaf]))
        qos_maybe = np.array([q.max_wall is not None or q.max_jobs_pu is not None or q.grp_jobs is not None
                              or bool(q.max_tres) or bool(q.grp_tres) or bool(q.max_tres_pu) for q in self.qos]
                             + [False], dtype=bool)  # QOS with such a limit (last: none)
        for j in np.flatnonzero(~none & (maybe[self.leaf] | qos_maybe[self.job_qos])).tolist():
            why = self._never(j, float(limit[j]))
            if why:
                reason[j] = 1 + STATIC_REASONS.index(why)
        return reason

    def _never(self, j: int, limit: float) -> str | None:
        """Why job j can never run under its limits (None: it can, some day)."""
        leaf = int(self.leaf[j])
        max_jobs, _, max_cpu, max_node, max_wall = self.leaf_max[leaf]
        q = self.qos[self.job_qos[j]] if self.job_qos[j] != NONE else None
        cpus, nodes = int(self.job_cpus[j]), int(self.job_nodes[j])
        if q is not None:
            if q.max_wall is not None and limit > q.max_wall:
                return "qos_max_wall"
            for tres, value in (("cpu", cpus), ("node", nodes)):
                for table in (q.max_tres, q.grp_tres, q.max_tres_pu):
                    if table.get(tres) is not None and value > table[tres]:
                        return "qos_job_limit"
            if q.max_jobs_pu == 0 or q.grp_jobs == 0:
                return "qos_job_limit"
        if (q is None or q.max_wall is None) and max_wall is not None and limit > max_wall:
            return "assoc_max_wall"
        for tres, value, most in (("cpu", cpus, max_cpu), ("node", nodes, max_node)):
            if (q is None or q.max_tres.get(tres) is None) and most is not None and value > most:
                return "assoc_job_limit"
        if (q is None or q.max_jobs_pu is None) and max_jobs == 0:
            return "assoc_job_limit"
        for node_id in self.chains[leaf]:
            node = self.nodes[node_id]
            if (q is None or q.grp_jobs is None) and node.grp_jobs == 0:
                return "assoc_job_limit"
            for value, most, tres in ((cpus, node.grp_cpu, "cpu"), (nodes, node.grp_node, "node")):
                if (q is None or q.grp_tres.get(tres) is None) and most is not None and value > most:
                    return "assoc_job_limit"
        return None

    def max_wall(self) -> np.ndarray:
        """Each job's MaxWall in seconds (its QOS's, else its association's, inherited; NaN:
        none)."""
        leaf_wall = np.array([m[4] if m[4] is not None else np.nan for m in self.leaf_max] + [np.nan])
        qos_wall = np.array([q.max_wall if q.max_wall is not None else np.nan for q in self.qos] + [np.nan])
        own = qos_wall[self.job_qos]
        return np.where(np.isnan(own), leaf_wall[self.leaf], own)

    def static_counts(self, reason: np.ndarray) -> dict[str, int]:
        found = np.bincount(reason, minlength=len(STATIC_REASONS) + 1)
        return {f"rejected_{r}": int(found[i + 1]) for i, r in enumerate(STATIC_REASONS) if found[i + 1]}

    def split_over_pools(self, pool: np.ndarray) -> int:
        """Jobs under a running or submission limit (of an association, an account above it or
        their QOS) whose other jobs run in another node pool: each pool enforces the limit on
        its own jobs only (pools are simulated apart), so these jobs may start earlier than in
        Slurm. 0 when every limit's jobs share one pool."""
        runs = np.flatnonzero(pool >= 0)
        if runs.size == 0:
            return 0
        groups: dict[tuple, set] = {}  # a limited node or QOS -> pools of its jobs
        limited_of_leaf = []
        for leaf, chain in enumerate(self.chains):
            mj, ms = self.leaf_max[leaf][0], self.leaf_max[leaf][1]
            keys = [("node", c) for c in chain[1:]]
            node = self.nodes[chain[0]]
            if mj is not None or ms is not None or any(v is not None for v in (
                    node.grp_jobs, node.grp_submit, node.grp_cpu, node.grp_node)):
                keys.append(("node", chain[0]))
            limited_of_leaf.append(keys)
        qos_group = [q.grp_jobs is not None or bool(q.grp_tres) for q in self.qos]
        qos_user = [q.max_jobs_pu is not None or q.max_submit_pu is not None or bool(q.max_tres_pu)
                    for q in self.qos]
        leaf = self.leaf[runs].tolist()
        qos = self.job_qos[runs].tolist()
        user = self.users[runs].tolist()
        where = pool[runs].tolist()
        keys_of_job = []
        for x, q, u, p in zip(leaf, qos, user, where):
            keys = list(limited_of_leaf[x]) if x != NONE else []
            if q != NONE and qos_group[q]:
                keys.append(("qos", q))
            if q != NONE and qos_user[q]:
                keys.append(("qos-user", q, u))
            for key in keys:
                groups.setdefault(key, set()).add(p)
            keys_of_job.append(keys)
        split = {key for key, pools in groups.items() if len(pools) > 1}
        return sum(1 for keys in keys_of_job if any(k in split for k in keys)) if split else 0

    def state_for(self, rows: np.ndarray) -> LimitState:
        """The live limits of one pool's jobs (the policy's job j is table row ``rows[j]``)."""
        return LimitState(self, np.asarray(rows, dtype=np.int64))


class LimitState:
    """Counters and the tests the Slurm backfill calls (``submit``, ``pre``, ``post``, ``start``,
    ``end``; job numbers are the pool's rows). Every association is shared by the pools of one
    run only through this object: one per pool, so a limit over jobs of several pools is
    enforced per pool (``docs/slurm.md``)."""

    def __init__(self, limits: AssociationLimits, rows: np.ndarray) -> None:
        self.nodes = [_Node(x.grp_jobs, x.grp_submit, x.grp_cpu, x.grp_node) for x in limits.nodes]
        self.qos = limits.qos
        self.q_jobs = [0] * len(limits.qos)
        self.q_cpus = [0] * len(limits.qos)
        self.q_nodes = [0] * len(limits.qos)
        self.pu: dict[tuple[int, int], list[int]] = {}  # (qos, user) -> [jobs, cpus, nodes, submitted]
        leaf = limits.leaf[rows]
        self.leaf = leaf.tolist()
        self.chain = [limits.chains[x] if x != NONE else () for x in self.leaf]
        self.max = [limits.leaf_max[x] if x != NONE else (None,) * 5 for x in self.leaf]
        self.q = limits.job_qos[rows].tolist()
        self.user = limits.users[rows].tolist()
        self.cpus = limits.job_cpus[rows].tolist()
        self.n = limits.job_nodes[rows].tolist()
        # per job: whether it is under any running-jobs (pre) or TRES (post) limit at all, so
        # that the scheduler skips the test for the others
        qos = self.qos
        pre_leaf, post_leaf = {}, {}
        for leaf in set(self.leaf):
            if leaf == NONE:
                pre_leaf[leaf] = post_leaf[leaf] = False
                continue
            chain = [self.nodes[c] for c in limits.chains[leaf]]
            pre_leaf[leaf] = limits.leaf_max[leaf][0] is not None or any(c.grp_jobs is not None for c in chain)
            post_leaf[leaf] = any(c.grp_cpu is not None or c.grp_node is not None for c in chain)
        q_pre = [q.max_jobs_pu is not None or q.grp_jobs is not None for q in qos] + [False]
        q_post = [bool(q.grp_tres) or bool(q.max_tres_pu) for q in qos] + [False]
        self.gated_pre = [pre_leaf[x] or q_pre[q] for x, q in zip(self.leaf, self.q)]
        self.gated_post = [post_leaf[x] or q_post[q] for x, q in zip(self.leaf, self.q)]

    def _pu(self, j: int) -> list[int]:
        key = (self.q[j], self.user[j])
        entry = self.pu.get(key)
        if entry is None:
            entry = self.pu[key] = [0, 0, 0, 0]
        return entry

    # --- submission ----------------------------------------------------------------------
    def submit(self, j: int) -> str | None:
        """A submission: the reason Slurm refuses it (``rejected_<reason>``), else None (counted)."""
        q = self.qos[self.q[j]] if self.q[j] != NONE else None
        if q is not None and q.max_submit_pu is not None and self._pu(j)[3] + 1 > q.max_submit_pu:
            return "qos_max_submit_pu"
        nodes = self.nodes
        chain = self.chain[j]
        for k, node_id in enumerate(chain):
            node = nodes[node_id]
            if node.grp_submit is not None and node.submitted + 1 > node.grp_submit:
                return "assoc_grp_submit"
            if k == 0:
                max_submit = self.max[j][1]
                if (max_submit is not None and (q is None or q.max_submit_pu is None)
                        and node.submitted + 1 > max_submit):
                    return "assoc_max_submit"
        for node_id in chain:
            nodes[node_id].submitted += 1
        if q is not None:
            self._pu(j)[3] += 1
        return None

    # --- before a start ------------------------------------------------------------------
    def pre(self, j: int) -> str | None:
        """Running-job counts (``acct_policy_job_runnable_pre_select``): a reason or None."""
        qi = self.q[j]
        q = self.qos[qi] if qi != NONE else None
        if q is not None:
            if q.max_jobs_pu is not None and self._pu(j)[0] >= q.max_jobs_pu:
                return "QOSMaxJobsPerUserLimit"
            if q.grp_jobs is not None and self.q_jobs[qi] >= q.grp_jobs:
                return "QOSGrpJobsLimit"
        nodes = self.nodes
        for k, node_id in enumerate(self.chain[j]):
            node = nodes[node_id]
            if node.grp_jobs is not None and (q is None or q.grp_jobs is None) and node.jobs >= node.grp_jobs:
                return "AssocGrpJobsLimit"
            if k == 0:
                max_jobs = self.max[j][0]
                if max_jobs is not None and (q is None or q.max_jobs_pu is None) and node.jobs >= max_jobs:
                    return "AssocMaxJobsLimit"
        return None

    def post(self, j: int) -> str | None:
        """TRES in use (``acct_policy_job_runnable_post_select``; cpu before node, as Slurm's
        TRES order): a reason or None."""
        qi = self.q[j]
        q = self.qos[qi] if qi != NONE else None
        cpus, n = self.cpus[j], self.n[j]
        if q is not None:
            g = q.grp_tres
            if g.get("cpu") is not None and self.q_cpus[qi] + cpus > g["cpu"]:
                return "QOSGrpCpuLimit"
            if g.get("node") is not None and self.q_nodes[qi] + n > g["node"]:
                return "QOSGrpNodeLimit"
            p = q.max_tres_pu
            if p:
                used = self._pu(j)
                if p.get("cpu") is not None and used[1] + cpus > p["cpu"]:
                    return "QOSMaxCpuPerUserLimit"
                if p.get("node") is not None and used[2] + n > p["node"]:
                    return "QOSMaxNodePerUserLimit"
        nodes = self.nodes
        for node_id in self.chain[j]:
            node = nodes[node_id]
            if node.grp_cpu is not None and (q is None or "cpu" not in q.grp_tres) and node.cpus + cpus > node.grp_cpu:
                return "AssocGrpCpuLimit"
            if node.grp_node is not None and (q is None or "node" not in q.grp_tres) and node.nodes + n > node.grp_node:
                return "AssocGrpNodeLimit"
        return None

    # --- counters ------------------------------------------------------------------------
    def start(self, j: int) -> None:
        self._count(j, 1)

    def end(self, j: int) -> None:
        self._count(j, -1)
        for node_id in self.chain[j]:
            self.nodes[node_id].submitted -= 1
        if self.q[j] != NONE:
            self._pu(j)[3] -= 1

    def _count(self, j: int, sign: int) -> None:
        cpus, n = sign * self.cpus[j], sign * self.n[j]
        for node_id in self.chain[j]:
            node = self.nodes[node_id]
            node.jobs += sign
            node.cpus += cpus
            node.nodes += n
        qi = self.q[j]
        if qi != NONE:
            self.q_jobs[qi] += sign
            self.q_cpus[qi] += cpus
            self.q_nodes[qi] += n
            used = self._pu(j)
            used[0] += sign
            used[1] += cpus
            used[2] += n
