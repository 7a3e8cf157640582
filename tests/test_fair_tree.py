"""Slurm's Fair Tree fair-share (issue 26 item 2), hand-computed from the algorithm documented at
slurm.schedmd.com/fair_tree.html: LF = S / U per association (S its shares over its siblings',
U its usage over its parent's), siblings visited in decreasing LF, users ranked N, N-1, ...,
ties share a rank, tied accounts have their children merged; factor = rank / N."""

from __future__ import annotations

import numpy as np
import pytest

from drevt_sweep.errors import ConfigError
from drevt_sweep.sim.engine import simulate
from drevt_sweep.sim.policies.multifactor import FairShareTree, fair_tree_factors
from jobtable_factory import make_jobs
from test_priorities import inputs_of

USERS = dict(user=["a", "b", "c"], group=["X", "X", "Y"])


def factors(usage, by="account/user", **shares):
    jobs = make_jobs([0, 0, 0], [1, 1, 1], [10, 10, 10], [1, 1, 1], **USERS)
    tree = FairShareTree.build(inputs_of(jobs, 4), by, shares.get("account_shares", {}),
                               shares.get("user_shares", {}))
    usage = np.asarray(usage, dtype=np.float64)
    acct = np.bincount(tree.acct_of_leaf, weights=usage, minlength=tree.n_acct)
    return fair_tree_factors(usage, acct, tree).tolist()


def test_fair_tree_ranks_accounts_then_their_users_by_hand():
    # accounts X (a, b), Y (c), equal shares; usage a 30, b 10, c 20 (X 40, Y 20, root 60).
    # LF_X = 0.5 / (40/60) = 0.75 < LF_Y = 0.5 / (20/60) = 1.5: Y first, c gets rank 3 of 3.
    # In X: LF_a = 0.5 / (30/40) = 2/3, LF_b = 0.5 / (10/40) = 2: b rank 2, a rank 1.
    assert factors([30, 10, 20]) == [1 / 3, 2 / 3, 1.0]
    # nothing used yet: every LF is inf, all tie at rank 3 -> 1.0
    assert factors([0, 0, 0]) == [1.0, 1.0, 1.0]
    # a tie of accounts merges their users: a 15, b 5, c 20 -> LF_X = LF_Y = 1; merged users
    # b (0.5 / 0.25 = 2), c (1 / 1 = 1), a (0.5 / 0.75 = 2/3): ranks 3, 2, 1
    assert factors([15, 5, 20]) == [1 / 3, 1.0, 2 / 3]
    # tied users share a rank and the next one skips it: a 10, b 10, c 30 -> LF_X = 0.5/0.4 =
    # 1.25 > LF_Y = 0.5/0.6: X first; a and b tie (LF 1) at rank 3; c gets rank 1
    assert factors([10, 10, 30]) == [1.0, 1.0, 1 / 3]
    # shares: Y has three times X's (S_X = 1/4): LF_X = 0.25 / (40/60) < LF_Y = 0.75 / (20/60)
    assert factors([30, 10, 20], account_shares={"Y": 3}) == [1 / 3, 2 / 3, 1.0]


def test_fair_tree_with_one_level_ranks_the_users_by_lf():
    # fairshare_by user: a, b, c under the root, 1/3 of the shares each; usage 30, 10, 20
    # -> LF 1/3 / (1/2), 1/3 / (1/6), 1/3 / (1/3): b, c, a
    assert factors([30, 10, 20], by="user") == [1 / 3, 1.0, 2 / 3]


# The order Fair Tree and classic disagree on. 20 nodes; J0 (a, account X) 11 nodes, J1 (c, Y) and
# J2 (d, Y) 4 nodes each, all [0, 30). At the tick 10: U_X = 11/19, U_Y = 8/19, c and d 4/19 each.
# Classic (F = 2^(-UE/S)): b (no usage, S = 1/4) UE = 0.5 U_X -> F_b = 2^(-2 x 11/19) = 0.448;
# c (S = 1/4) UE = 4/19 + (8/19 - 4/19) / 2 = 6/19 -> F_c = 2^(-24/19) = 0.417: b's J3 first.
# Fair Tree: LF_Y = 0.5 / (8/19) > LF_X = 0.5 / (11/19): Y's users first; c and d tie (LF 1) at
# rank 4 -> F_c = 1; then X: b (inf) rank 2 -> 0.5: c's J4 first. J3 and J4 need all 20 nodes.
TREE_CASE = dict(submit=[0, 0, 0, 1, 2], nodes=[11, 4, 4, 20, 20], limit=[100] * 5, run=[30, 30, 30, 10, 10],
                 user=["a", "c", "d", "b", "c"], group=["X", "Y", "Y", "X", "Y"])


def run(fairshare: str, kernel: str = "auto", backfill: str = "easy"):
    c = TREE_CASE
    jobs = make_jobs(c["submit"], c["nodes"], c["limit"], c["run"], user=c["user"], group=c["group"])
    params = dict(weights={"age": 0, "fairshare": 1000, "job_size": 0, "partition": 0},
                  calc_period=10, decay_half_life=1e9, fairshare=fairshare)
    return simulate(jobs, jobs.actual_run_time, 20, priority="multifactor", priority_params=params,
                    kernel=kernel, backfill=backfill).begin.tolist()


def test_fair_tree_puts_the_better_served_accounts_users_first_where_classic_does_not():
    assert run("classic", kernel="reference") == [0, 0, 0, 30, 40]
    assert run("fair_tree") == [0, 0, 0, 40, 30]
    assert run("fair_tree", kernel="reference") == [0, 0, 0, 40, 30]


def test_fair_tree_runs_compiled_under_every_backfill_the_kernels_have():
    for backfill in ("easy", "easy_drevt", "none", "slurm"):
        assert run("fair_tree", kernel="fast", backfill=backfill) == run("fair_tree", kernel="reference",
                                                                        backfill=backfill), backfill
    assert run("fair_tree", kernel="fast") == [0, 0, 0, 40, 30]  # (the case above, compiled)
    assert run("fair_tree", kernel="fast", backfill="slurm") != run("classic", kernel="fast", backfill="slurm")
    with pytest.raises(ConfigError, match="unknown multifactor fairshare 'tree'"):
        run("tree")
