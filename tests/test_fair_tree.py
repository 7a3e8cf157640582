"""Slurm's Fair Tree fair-share (issue 26 item 2), hand-computed from the algorithm documented at
slurm.schedmd.com/fair_tree.html: LF = S / U per association (S its shares over its siblings',
U its usage over its parent's), siblings visited in decreasing LF, users ranked N, N-1, ...,
ties share a rank, tied accounts have their children merged; factor = rank / N."""

from __future__ import annotations

from types import SimpleNamespace

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


# The compiled kernels keep Fair Tree's order from tick to tick (``_extended._fair_tree_update``):
# only the units (accounts, or leaves with one level) that gained usage move; the factors must be
# those of a full computation at every tick.


def kernel_history(adds, by="account/user", **shares):
    """``_fair_tree_update``'s factors after each tick of ``adds`` (usage added per leaf of
    ``USERS``; a leaf with a non-zero add is active at that tick, as ``_ticks`` marks them), and
    whether each tick was an update in place (not a full computation)."""
    from drevt_sweep.sim.kernel import _extended as ext
    from drevt_sweep.sim.kernel import _fair_tree_arrays

    jobs = make_jobs([0, 0, 0], [1, 1, 1], [10, 10, 10], [1, 1, 1], **USERS)
    tree = FairShareTree.build(inputs_of(jobs, 4), by, shares.get("account_shares", {}),
                               shares.get("user_shares", {}))
    n = tree.sib_ratio.shape[0]
    share, ftk, fti, plan, stack = _fair_tree_arrays(SimpleNamespace(tree=tree), n, tree.n_acct)
    assert fti[ext.FT_STATE, ext.FS_MODE] == ext.FT_ALWAYS_FULL  # (a tree this small is ranked in full: forced here)
    fti[ext.FT_STATE, ext.FS_MODE] = ext.FT_FULL
    usage, raw = np.zeros(n), np.zeros(tree.n_acct)
    fval, fstamp = np.zeros(n), np.zeros(n, np.int64)
    out, kept = [], []
    for stamp, add in enumerate(adds):
        active = np.flatnonzero(add)
        ext._fair_tree_dirty(fti, active, active.shape[0], tree.acct_of_leaf, tree.two_levels)
        for leaf in active:
            usage[leaf] += add[leaf]
            raw[tree.acct_of_leaf[leaf]] += add[leaf]
        kept.append(fti[ext.FT_STATE, ext.FS_MODE] == ext.FT_KEPT)
        ext._fair_tree_update(usage, raw, tree.acct_of_leaf, tree.sib_ratio, tree.s_norm, share, tree.two_levels,
                              plan, stack, stamp, fval, fstamp, ftk, fti, 1.0)
        assert (fstamp == stamp).all()
        out.append(fval.tolist())
    return out, kept


def test_fair_tree_kept_from_tick_to_tick_by_hand():
    # a, b in X, c in Y, equal shares. Tick 0: nothing used, all tie (rank 3). Tick 1: a 30, b 10,
    # c 20 (the first case above). Tick 2: c +40: X 40 < Y 60, X first, b (10/40) before a (30/40),
    # c last. Tick 3: b +20: X 60 = Y 60, the accounts tie and merge their users, whose LF are all 1
    # (a 30/60, b 30/60 with 1/2 the shares; c 60/60 with all of Y's): one tie at rank 3. Tick 4:
    # a +10: Y (60 of 130) first; in X b (30/70) before a (40/70). Tick 5: nothing gained.
    adds = [[0, 0, 0], [30, 10, 20], [0, 0, 40], [0, 20, 0], [10, 0, 0], [0, 0, 0]]
    out, kept = kernel_history(adds)
    assert out == [[1.0] * 3, [1 / 3, 2 / 3, 1.0], [2 / 3, 1.0, 1 / 3], [1.0] * 3, [1 / 3, 2 / 3, 1.0],
                   [1 / 3, 2 / 3, 1.0]]
    assert kept == [False, True, True, True, True, True]  # (after the first, every tick in place)
    # one level: a 30, b 10, c 20 (b, c, a), then c +40 (b, a, c), then a +50, b +70 (80, 80, 60: c first,
    # a and b tie at rank 2)
    out, kept = kernel_history([[30, 10, 20], [0, 0, 40], [50, 70, 0]], by="user")
    assert out == [[1 / 3, 1.0, 2 / 3], [2 / 3, 1.0, 1 / 3], [2 / 3, 2 / 3, 1.0]] and kept == [False, True, True]
    # one level: a 10, b 10 tie (rank 2) after c 5; then a gives 4 back (6): c, a, b. a keeps its
    # place, but b no longer ties with it: its rank drops to 1
    out, kept = kernel_history([[0, 0, 0], [10, 10, 5], [-4, 0, 0]], by="user")
    assert out[1:] == [[2 / 3, 2 / 3, 1.0], [2 / 3, 1 / 3, 1.0]] and kept == [False, True, True]
    # two levels, a run of two: a 10, b 10, c 20, the accounts tie (X 20 = Y 20) and so do their
    # users (LF 1): one tie at rank 3. Then a gives 4 back: X (16) first, a (6/16) before b (10/16),
    # both of X's leaves stay where they are (``_ft_run``), but c no longer ties with them: rank 1
    out, kept = kernel_history([[0, 0, 0], [10, 10, 20], [-4, 0, 0]])
    assert out[1:] == [[1.0] * 3, [1.0, 2 / 3, 1 / 3]] and kept == [False, True, True]
    # S / r one ulp apart but the same LF at this T: a 3, b 3 + 2^-51, c 7 (T = 13): 1/3 / (3 / 13)
    # rounds to the same float for a and b, which tie at rank 3, as in the reference
    out, kept = kernel_history([[0, 0, 0], [3.0, np.nextafter(3.0, 4.0), 7.0]], by="user")
    assert out[1] == [1.0, 1.0, 1 / 3] and kept == [False, True]


def random_fair_tree(rng, n_max: int, two_levels: bool) -> FairShareTree:
    """A random association tree of fewer than ``n_max`` users with many ties: every account has
    a user, shares drawn from few values (equal shares, accounts of equal LF whose users merge)."""
    n = int(rng.integers(1, n_max))
    n_acct = int(rng.integers(1, n + 1)) if two_levels else n
    acct = np.sort(np.concatenate([np.arange(n_acct), rng.integers(0, n_acct, n - n_acct)]))
    s_user = rng.choice([1.0, 1.0, 2.0, 5.0], n)
    s_acct = rng.choice([1.0, 1.0, 3.0], n_acct)
    siblings = np.bincount(acct, weights=s_user, minlength=n_acct)
    sib = s_user / siblings[acct] if two_levels else np.ones(n)
    snorm = sib * (s_acct[acct] / s_acct.sum()) if two_levels else s_user / s_user.sum()
    acct_share = s_acct / s_acct.sum() if two_levels else snorm
    return FairShareTree(np.zeros(1, np.int64), acct, sib, snorm, n_acct, [], acct_share, two_levels=two_levels)


@pytest.mark.parametrize("two_levels", [True, False])
def test_fair_tree_kept_from_tick_to_tick_is_the_full_computation(two_levels):
    """Random trees and histories (few active associations per tick, equal shares and adds, long
    unused associations, ties of accounts that merge their users, now and then every usage
    rescaled by 2^-600 as ``_ticks`` does): the factors updated in place are the reference's,
    float for float, at every tick; and most ticks are updated in place."""
    from drevt_sweep.sim.kernel import _extended as ext
    from drevt_sweep.sim.kernel import _fair_tree_arrays

    rng = np.random.default_rng(26)
    kept = ticks = 0
    for _ in range(120):
        tree = random_fair_tree(rng, 30, two_levels)
        n, n_acct, acct = len(tree.acct_of_leaf), tree.n_acct, tree.acct_of_leaf
        sib, snorm = tree.sib_ratio, tree.s_norm
        share, ftk, fti, plan, stack = _fair_tree_arrays(SimpleNamespace(tree=tree), n, n_acct)
        fti[ext.FT_STATE, ext.FS_MODE] = ext.FT_FULL  # (small trees are ranked in full by default)
        usage, raw = np.zeros(n), np.zeros(n_acct)
        fval, fstamp = np.zeros(n), np.full(n, -1, np.int64)
        scale = 1.0
        for stamp in range(40):
            active = np.unique(rng.integers(0, n, int(rng.integers(0, 4))))
            ext._fair_tree_dirty(fti, active, active.shape[0], acct, two_levels)
            scale *= 1.5
            for leaf in active:
                add = float(rng.choice([1.0, 2.0, 0.5, 3.0, 1e-3, 7.0, 1e4])) * scale
                usage[leaf] += add
                raw[acct[leaf]] += add
            if rng.random() < 0.05:
                usage *= 2.0**-600
                raw *= 2.0**-600
                scale *= 2.0**-600
            kept += fti[ext.FT_STATE, ext.FS_MODE] == ext.FT_KEPT
            ticks += 1
            ext._fair_tree_update(usage, raw, acct, sib, snorm, share, two_levels, plan, stack, stamp, fval, fstamp,
                                  ftk, fti, scale)
            want = fair_tree_factors(usage, raw if two_levels else usage, tree)
            assert (fval.view(np.int64) == want.view(np.int64)).all() and (fstamp == stamp).all()
    assert kept > 0.6 * ticks


def test_fair_tree_in_place_only_for_trees_of_many_small_units():
    """The update in place moves every user of an account that gained usage: with few accounts, or
    many users each, ranking them all costs less, and ``_fair_tree_arrays`` says so."""
    from drevt_sweep.sim.kernel import _extended as ext
    from drevt_sweep.sim.kernel import _fair_tree_arrays

    def mode(n_acct, users_each, two_levels=True):
        n = n_acct * users_each
        acct = np.repeat(np.arange(n_acct), users_each) if two_levels else np.arange(n)
        ones = np.full(n, 1.0 / n)
        tree = FairShareTree(np.zeros(1, np.int64), acct, ones, ones, n_acct if two_levels else n, [],
                             np.full(n_acct, 1.0 / n_acct), two_levels=two_levels)
        fti = _fair_tree_arrays(SimpleNamespace(tree=tree), n, tree.n_acct)[2]
        return fti[ext.FT_STATE, ext.FS_MODE]

    assert mode(252, 1) == ext.FT_FULL  # (KTH-SP2's shape: a first full computation, then in place)
    assert mode(8, 8) == mode(15, 1) == mode(40, 5) == ext.FT_ALWAYS_FULL
    assert mode(16, 4) == mode(1, 16, two_levels=False) == ext.FT_FULL


def test_slurm_kernel_keys_a_job_waiting_alone_when_another_arrives():
    """``_slurm._pending_key``: the key of a job waiting alone is computed only when another job
    arrives, as of the tick that re-keyed it. 4 nodes, ticks every 100 s, age over 1,024 s (exact
    floats). W (u1, 4 nodes) waits from 10 behind L1 and L2 (u1's), the re-keying at each tick
    deferred while nothing fits; L2 ends at 450, the re-keying of the tick at 400 done then, W
    alone. N (u2, no usage: factor 1, u1's 1/2) arrives at 460: W's priority as of 400 is
    380.86 + 400 -> 780, N's 800, so N goes first and takes L1's nodes at 480 (as of 450 W's would
    be 829: W first)."""
    from test_fast_kernel import assert_same

    jobs = make_jobs([0.0, 0.0, 10.0, 460.0], [2, 2, 4, 4], [480.0, 450.0, 100.0, 100.0],
                     [480.0, 450.0, 100.0, 100.0], user=["u1", "u1", "u1", "u2"], group=["g1", "g1", "g1", "g2"])
    params = {"fairshare": "fair_tree", "calc_period": 100.0, "max_age": 1024.0,
              "weights": {"age": 1000, "fairshare": 800, "job_size": 0, "partition": 0, "qos": 0}}
    ref = assert_same(jobs, jobs.actual_run_time, 4, backfill="slurm", priority="multifactor", priority_params=params)
    assert ref.begin.tolist() == [0.0, 0.0, 580.0, 480.0]
