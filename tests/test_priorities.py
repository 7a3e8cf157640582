"""Dynamic and literature priorities, run-time estimates, EASY++: hand-computed schedules,
fair-share accounting against a hand computation, bad configs, and invariants (hypothesis).

Each schedule is checked on the reference engine and on the compiled kernel (``kernel`` fixture),
which must agree bit for bit (tests/test_fast_kernel.py checks that on random traces too).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drevt_sweep.errors import ConfigError
from drevt_sweep.sim.engine import BACKFILL_POLICIES, simulate
from drevt_sweep.sim.policies import DYNAMIC_PRIORITY_POLICIES, PRIORITY_POLICIES
from drevt_sweep.sim.policies.dynamic import PriorityInputs
from drevt_sweep.sim.policies.literature import f1, f2, f3, f4
from drevt_sweep.sim.policies.multifactor import FairShareTree, Multifactor, fairshare_factor
from jobtable_factory import make_jobs

KERNELS = ["reference", "fast"]


@pytest.fixture(params=KERNELS)
def kernel(request):
    return request.param


def sim(jobs, total, **kw):
    return simulate(jobs, jobs.actual_run_time, total, **kw)


def begins(s):
    return s.begin.tolist()


# --- EASY++: predictions from the user's last two jobs, the correction, SJBF -----------------

# total 4. u's J0 [0,10) and J1 [10,40) complete -> J2 (u, 2 nodes, limit 100, runs 50) is
# predicted (10 + 30) / 2 = 20 s: planned end 60, real end 90. J3 (v, 4 nodes) is the head at 41
# with shadow 60 (extra nodes 0); J4 (v, 2 nodes, limit 30; v has no history -> its limit) would
# end at 72 > 60: not backfilled. At 60 J2 outlives its prediction: its estimate becomes its limit
# (planned end 140), the head's shadow moves to 140, and J4 (60 + 30 <= 140) backfills at 60.
# J3 starts when J2 really ends, at 90.
OVERRUN = dict(
    submit=[0, 0, 40, 41, 42], nodes=[4, 4, 2, 4, 2], limit=[100, 100, 100, 100, 30],
    run=[10, 30, 50, 10, 5], user=["u", "u", "u", "v", "v"],
)


def test_user_history_prediction_and_correction(kernel):
    jobs = make_jobs(**OVERRUN)
    s = sim(jobs, 4, estimate="user_history", kernel=kernel)
    assert begins(s) == [0, 10, 40, 90, 60]
    # with the limits as estimates J2's planned end is 140 from the start: J4 backfills at 42
    assert begins(sim(jobs, 4, estimate="user", kernel=kernel)) == [0, 10, 40, 90, 42]
    # perfect estimates: J2 ends at 90 as planned; J4 (42 + 30 <= 90) backfills at 42
    assert begins(sim(jobs, 4, estimate="actual", kernel=kernel)) == [0, 10, 40, 90, 42]


def test_prediction_is_capped_and_killed_at_the_real_limit(kernel):
    # J2 now runs 150 > its limit 100: predicted 20, corrected at 60, killed at 140 (its limit)
    jobs = make_jobs(**dict(OVERRUN, run=[10, 30, 150, 10, 5]))
    s = sim(jobs, 4, estimate="user_history", kernel=kernel)
    assert begins(s) == [0, 10, 40, 140, 60]
    assert s.killed.tolist() == [False, False, True, False, False]
    assert s.end[2] == 140


def test_fewer_than_two_completed_jobs_plan_with_the_limit(kernel):
    # Only J0 of u completed when J2 arrives (J1 is still running): J2 plans with its limit.
    jobs = make_jobs(submit=[0, 0, 5, 6, 7], nodes=[2, 1, 1, 4, 1], limit=[100, 100, 100, 100, 50],
                     run=[4, 60, 10, 10, 10], user=["u", "u", "u", "v", "v"])
    # 0: J0 [0,4), J1 [0,60) (3 nodes used). 5: J2 (1 node) fits: [5,15), planned to 105.
    # 6: J3 (4 nodes) head, shadow = 100 (J1's planned end; J2's is 105: 1 + 2 + 1 = 4 at 105).
    # 7: J4 1 node, 7 + 50 = 57 <= 105: backfills at 7 [7,17).
    s = sim(jobs, 4, estimate="user_history", kernel=kernel)
    assert begins(s) == [0, 0, 5, 60, 7]


# total 4; J0 (3 nodes) holds [0,100); the head J1 (4 nodes) waits for 100 with no extra nodes.
# J2 (limit 50) and J3 (limit 20) arrive together with one node free: FCFS backfill order tries
# J2 first, SJBF the shorter J3 first; the other one backfills when the first ends.
SJBF = dict(submit=[0, 1, 2, 2], nodes=[3, 4, 1, 1], limit=[100, 10, 50, 20], run=[100, 10, 50, 20])


def test_sjbf_tries_the_shortest_candidate_first(kernel):
    jobs = make_jobs(**SJBF)
    assert begins(sim(jobs, 4, kernel=kernel)) == [0, 100, 2, 52]
    assert begins(sim(jobs, 4, backfill_order="sjbf", kernel=kernel)) == [0, 100, 22, 2]


def test_easyplusplus_is_the_three_together(kernel):
    jobs = make_jobs(**OVERRUN)
    s = sim(jobs, 4, estimate="user_history", backfill_order="sjbf", kernel=kernel)
    assert begins(s) == [0, 10, 40, 90, 60]


def test_conservative_with_estimates_replans_after_an_overrun():
    # J2 is predicted 20 s (planned [40,60)). J3 (4 nodes) reserves 60; J4 (2 nodes, limit 30)
    # cannot end by 60, so it reserves 160 (after J3). At 60 J2 overruns: every reservation is
    # dropped and the queue re-placed in priority order with J2 planned to 140: J3 -> 140,
    # J4 -> 60 (2 nodes free until 140). J2 really ends at 90: J3 moves up to 90.
    jobs = make_jobs(**OVERRUN)
    s = sim(jobs, 4, backfill="conservative", estimate="user_history", kernel="reference")
    assert begins(s) == [0, 10, 40, 90, 60]


# --- multifactor -----------------------------------------------------------------------------


def inputs_of(jobs, total):
    return PriorityInputs(
        submit=jobs.submit, time_limit=jobs.time_limit, num_nodes=jobs.num_nodes, total_nodes=total,
        queue_code=jobs.queue_code, queue_names=jobs.queue_names, user_code=jobs.user_code,
        user_names=jobs.user_names, group_code=jobs.group_code, group_names=jobs.group_names,
        t0=float(jobs.submit.min()),
    )


def test_fairshare_usage_decays_as_computed_by_hand():
    # calc_period 10 s, half-life 10 s: each tick halves the usage, then adds the node-seconds
    # of the interval. u runs 2 nodes on [5, 25): intervals (0,10] 10, (10,20] 20, (20,30] 10,
    # (30,40] 0 node-seconds -> at the tick 40: 10/8 + 20/4 + 10/2 + 0 = 11.25.
    jobs = make_jobs([0, 0], [2, 1], [100, 100], [20, 1], user=["u", "w"])
    mf = Multifactor(inputs_of(jobs, 4), calc_period=10, decay_half_life=10, fairshare_by="user")
    mf.advance(5)
    mf.start(0, 5)
    expected = {10: 10.0, 20: 25.0, 30: 22.5, 40: 11.25}
    for t in (10, 20, 25, 30, 40):
        mf.advance(t)
        if t == 25:
            mf.end(0, 25)
        else:
            assert mf.usage()[0] == expected[t]
    # F = 2^(-U/S): u has all the usage (U = 1) with half the shares -> 2^-2; w none -> 1
    assert mf.fairshare(0) == 0.25 and mf.fairshare(1) == 1.0


def test_classic_fairshare_two_levels_by_hand():
    # accounts X (users a, b) and Y (user c), equal shares: S_a = S_b = 1/4, S_c = 1/2.
    # usage a 30, b 10, c 20 -> U_X = 2/3; UE_a = 1/2 + (2/3 - 1/2) / 2 = 7/12, UE_b = 5/12,
    # UE_c = U_c = 1/3 (the only user of Y). F = 2^(-UE/S).
    jobs = make_jobs([0, 0, 0], [1, 1, 1], [10, 10, 10], [1, 1, 1], user=["a", "b", "c"], group=["X", "X", "Y"])
    tree = FairShareTree.build(inputs_of(jobs, 4), "account/user", {}, {})
    assert tree.leaf_names == [("X", "a"), ("X", "b"), ("Y", "c")]
    assert tree.s_norm.tolist() == [0.25, 0.25, 0.5]
    usage = [30.0, 10.0, 20.0]
    acct = [40.0, 40.0, 20.0]
    got = [fairshare_factor(usage[i], acct[i], 60.0, tree.sib_ratio[i], tree.s_norm[i]) for i in range(3)]
    assert got == pytest.approx([2 ** (-(7 / 12) / 0.25), 2 ** (-(5 / 12) / 0.25), 2 ** (-(1 / 3) / 0.5)], rel=1e-15)
    # shares: give Y three times X's -> S_c = 3/4, S_a = 1/8
    tree = FairShareTree.build(inputs_of(jobs, 4), "account/user", {"Y": 3}, {})
    assert tree.s_norm.tolist() == [0.125, 0.125, 0.75]


def test_multifactor_fairshare_reorders_at_the_tick(kernel):
    # total 2. a's J0 runs [0,30). J1 (a) and J2 (b) arrive at 1 and 2 with no usage yet: equal
    # priority 1000 (F = 1), FCFS. At the tick 10 a has used 20 node-seconds (U = 1, S = 1/2):
    # F_a = 2^-2 -> 250, F_b = 1 -> 1000: J2 goes first when J0 ends.
    jobs = make_jobs([0, 1, 2], [2, 2, 2], [100, 100, 100], [30, 10, 10], user=["a", "a", "b"])
    params = dict(weights={"age": 0, "fairshare": 1000, "job_size": 0, "partition": 0},
                  calc_period=10, decay_half_life=10, fairshare_by="user")
    assert begins(sim(jobs, 2, kernel=kernel)) == [0, 30, 40]
    assert begins(sim(jobs, 2, priority="multifactor", priority_params=params, kernel=kernel)) == [0, 40, 30]


@pytest.mark.parametrize("favor_small, expected", [(True, [0, 15, 10]), (False, [0, 10, 20])])
def test_multifactor_job_size(favor_small, expected, kernel):
    # total 4; J0 [0,10) takes all. J1: 3 nodes, J2: 2 nodes (runs 5). Size factor n/4 or
    # (4 - n)/4 x 1000: large first -> J1 750 > J2 500: J1 [10,20), J2 at 20 (1 node free
    # meanwhile); small first -> J2 500 > J1 250: J2 [10,15), J1 waits for 3 nodes until 15.
    jobs = make_jobs([0, 1, 2], [4, 3, 2], [10, 10, 100], [10, 10, 5])
    params = dict(weights={"age": 0, "fairshare": 0, "job_size": 1000, "partition": 0}, favor_small=favor_small)
    assert begins(sim(jobs, 4, priority="multifactor", priority_params=params, kernel=kernel)) == expected


def test_multifactor_partition_and_age(kernel):
    # partition factor = PriorityJobFactor / max: hi 10 -> 1.0, lo 1 -> 0.1 (x1000: 1000 vs 100)
    jobs = make_jobs([0, 1, 2], [1, 1, 1], [10, 10, 10], [10, 10, 10], queue=["lo", "lo", "hi"])
    params = dict(weights={"age": 0, "fairshare": 0, "job_size": 0, "partition": 1000},
                  partition_priority={"hi": 10, "lo": 1})
    assert begins(sim(jobs, 1, priority="multifactor", priority_params=params, kernel=kernel)) == [0, 20, 10]
    # age alone (max_age 100 s): J1 waited longer than J2 -> FCFS order again; at the tick 300
    # both are capped at 1.0 and tie -> FCFS breaks the tie.
    params = dict(weights={"age": 1000, "fairshare": 0, "job_size": 0, "partition": 0}, max_age=100)
    assert begins(sim(jobs, 1, priority="multifactor", priority_params=params, kernel=kernel)) == [0, 10, 20]


def test_multifactor_priority_is_the_documented_integer():
    # age 0.5 x 1000 + fair-share 1 x 10000 + size 1/4 x 1000 + partition 1 x 1000, truncated
    jobs = make_jobs([0, 0], [1, 1], [10, 10], [1, 1], user=["a", "b"])
    mf = Multifactor(inputs_of(jobs, 4), max_age=1000)
    assert mf.priority(500.0, 0) == math.floor(500 + 10000 + 250 + 1000) == 11750
    mf = Multifactor(inputs_of(jobs, 3), max_age=1000)
    assert mf.priority(1.0, 0) == math.floor(1 + 10000 + 1000 / 3 + 1000) == 11334


def test_multifactor_raises_priorities_below_one_to_one(kernel):
    # As Slurm (issue 27 item 3): total 4, J0 [0,10) takes all; J1 (t=1, 2 nodes, run 10) and
    # J2 (t=2, 4 nodes) wait. Job size x 1.5: J1 0.5 x 1.5 = 0.75, J2 1.0 x 1.5 = 1.5. Slurm
    # raises 0.75 to 1 and truncates 1.5 to 1: a tie, FCFS: J1 [10,20), J2 [20,30). Rounding
    # 0.75 down to 0 would have put J2 first ([10,20)) and J1 at 20.
    jobs = make_jobs([0, 1, 2], [4, 2, 4], [10, 10, 10], [10, 10, 10])
    params = dict(weights={"age": 0, "fairshare": 0, "job_size": 1.5, "partition": 0})
    assert begins(sim(jobs, 4, priority="multifactor", priority_params=params, kernel=kernel)) == [0, 10, 20]
    # the same when the priorities are recomputed at every tick (calc_period 1 s) while they wait
    ticking = dict(params, calc_period=1.0)
    assert begins(sim(jobs, 4, priority="multifactor", priority_params=ticking, kernel=kernel)) == [0, 10, 20]
    mf = Multifactor(inputs_of(jobs, 4), **params)
    assert [mf.priority(5.0, j) for j in (1, 2)] == [1.0, 1.0]
    # a sum just at 1 stays 1; 2^32 - 1 is the largest priority (Slurm's 32-bit field)
    big = Multifactor(inputs_of(jobs, 4), weights={"age": 0, "fairshare": 0, "job_size": 2.0**40, "partition": 0})
    assert big.priority(5.0, 2) == 2.0**32 - 1


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(weights={"age": -1}), "weight age must be >= 0"),
        (dict(weights={"fairness": 1}), "no weight(s) fairness"),
        (dict(decay_half_life=0), "decay_half_life must be > 0"),
        (dict(calc_period=0), "calc_period must be > 0"),
        (dict(max_age=-5), "max_age must be > 0"),
        (dict(fairshare_by="login"), "unknown multifactor fairshare_by 'login'"),
        (dict(user_shares={"nobody": 2}), "names nobody, not in this trace"),
        (dict(user_shares={"a": -2}), "must be > 0"),
        (dict(partition_priority={"debug": 2}), "not a queue of this trace"),
        (dict(favor_small="yes"), "favor_small must be true or false"),
        (dict(halflife=3), "no parameter(s) halflife"),
    ],
)
def test_bad_multifactor_configs_are_clear_errors(params, message):
    jobs = make_jobs([0, 1], [1, 1], [10, 10], [1, 1], user=["a", "b"])
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sim(jobs, 2, priority="multifactor", priority_params=params, kernel="reference")


def test_no_user_column_is_a_clear_error():
    jobs = make_jobs([0, 1], [1, 1], [10, 10], [1, 1])  # nobody known
    with pytest.raises(ConfigError, match="estimate 'user_history'.*no job of this trace has a known user"):
        sim(jobs, 2, estimate="user_history")
    with pytest.raises(ConfigError, match="fair-share by account/user needs.*set weights.fairshare to 0"):
        sim(jobs, 2, priority="multifactor")
    with pytest.raises(ConfigError, match="fair-share by user needs each job's user"):
        sim(jobs, 2, priority="multifactor", priority_params={"fairshare_by": "user"})
    groups_only = make_jobs([0, 1], [1, 1], [10, 10], [1, 1], group=["X", "Y"])
    with pytest.raises(ConfigError, match="fair-share by user needs"):
        sim(groups_only, 2, priority="multifactor", priority_params={"fairshare_by": "user"})
    sim(groups_only, 2, priority="multifactor")  # account/user: accounts alone will do
    sim(jobs, 2, priority="multifactor", priority_params={"weights": {"fairshare": 0}})


def test_bad_estimate_configs_are_clear_errors():
    jobs = make_jobs([0, 1], [1, 1], [10, 10], [1, 1])
    with pytest.raises(ConfigError, match="unknown estimate 'oracle'"):
        sim(jobs, 2, estimate="oracle")
    with pytest.raises(ConfigError, match="unknown backfill_order"):
        sim(jobs, 2, backfill_order="ljbf")
    with pytest.raises(ConfigError, match="sjbf orders EASY's backfill candidates"):
        sim(jobs, 2, backfill="conservative", backfill_order="sjbf")
    with pytest.raises(ConfigError, match="takes no parameters"):
        sim(jobs, 2, priority="sjf", priority_params={"weights": {}})


# --- WFP3, UNICEF, F1-F4 ---------------------------------------------------------------------


@pytest.mark.parametrize("priority, expected", [("fcfs", [0, 10, 20]), ("wfp3", [0, 10, 20]), ("unicef", [0, 20, 10])])
def test_wfp3_favours_large_jobs_unicef_small_ones(priority, expected, kernel):
    # total 8; J0 [0,10) takes all; J1 (8 nodes) and J2 (2 nodes) wait from 1, same limit 10.
    # At 10, w = 9, r = 10: WFP3 (w/r)^3 n = 0.729 x 8 > 0.729 x 2 -> J1 first (takes all).
    # UNICEF w / (log2(n) r) = 9/30 < 9/10 -> J2 first; J1 then waits for 8 nodes until 20.
    jobs = make_jobs([0, 1, 1], [8, 8, 2], [10, 10, 10], [10, 10, 10])
    assert begins(sim(jobs, 8, priority=priority, kernel=kernel)) == expected


def test_wfp3_grows_with_the_wait_relative_to_the_limit(kernel):
    # total 1; at 10: J1 (w 9, r 100) scores 0.09^3, J2 (w 5, r 5) scores 1 -> J2 first
    jobs = make_jobs([0, 1, 5], [1, 1, 1], [10, 100, 5], [10, 1, 1])
    assert begins(sim(jobs, 1, priority="wfp3", kernel=kernel)) == [0, 11, 10]
    assert begins(sim(jobs, 1, priority="unicef", kernel=kernel)) == [0, 11, 10]


def test_f1_to_f4_values_by_hand():
    submit = np.array([0.0, 10.0, 20.0])
    r = np.array([100.0, 1e5, 10.0])
    n = np.array([64, 64, 1])
    s = np.array([1.0, 10.0, 20.0])  # seconds from the first submission, at least 1
    assert f1(submit, r, n)[0].tolist() == (np.log10(r) * n + 870 * np.log10(s)).tolist()
    assert f1(submit, r, n)[0][1] == pytest.approx(5 * 64 + 870)
    assert f2(submit, r, n)[0][2] == pytest.approx(math.sqrt(10) + 25600 * math.log10(20))
    assert f3(submit, r, n)[0][1] == pytest.approx(1e5 * 64 + 6860000)
    assert f4(submit, r, n)[0][1] == pytest.approx(1e5 * 8 + 530000)


@pytest.mark.parametrize("priority", ["f1", "f2", "f3", "f4"])
def test_f_functions_schedule(priority, kernel):
    # total 64; J0 [0,100) takes all. At 100: J1 (64 nodes, r 1e5, s 10) scores higher than J2
    # (1 node, r 10, s 20) under every F (e.g. F1: 5*64 + 870 = 1190 > 1 + 870 log10 20 = 1132.9),
    # so J2 goes first, then J1 when it ends.
    jobs = make_jobs([0, 10, 20], [64, 64, 1], [100, 1e5, 10], [100, 10, 10])
    assert begins(sim(jobs, 64, kernel=kernel)) == [0, 100, 110]
    assert begins(sim(jobs, 64, priority=priority, kernel=kernel)) == [0, 110, 100]


# --- invariants ------------------------------------------------------------------------------

NEW_PRIORITIES = ("f1", "wfp3", "unicef", "multifactor")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def traces(draw):
    total = draw(st.integers(1, 8))
    n = draw(st.integers(0, 14))
    gaps = draw(st.lists(st.sampled_from([0, 0, 0, 1, 2, 3, 5, 8, 60, 400, 0.5]), min_size=n, max_size=n))
    submit = np.cumsum(gaps).tolist() if n else []
    nodes = draw(st.lists(st.integers(1, total + 1), min_size=n, max_size=n))
    limit = draw(st.lists(st.sampled_from([1, 2, 5, 10, 20, 40, 300, 2.5]), min_size=n, max_size=n))
    frac = draw(st.lists(st.sampled_from([0, 0.25, 0.5, 1, 1, 1.5, 0.3]), min_size=n, max_size=n))
    user = draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n))
    if n and not any(user):
        user[0] = "a"  # at least one known user (without any, user_history and fair-share refuse)
    run = [lim * f for lim, f in zip(limit, frac)]
    return make_jobs(submit, nodes, limit, run, user=user, group=[u and u.upper() for u in user]), total


@pytest.mark.parametrize("estimate", ["user", "actual", "user_history"])
@pytest.mark.parametrize("backfill", BACKFILL_POLICIES)
@SETTINGS
@given(trace=traces(), priority=st.sampled_from(NEW_PRIORITIES), enforce=st.booleans(), sjbf=st.booleans(),
       refresh=st.sampled_from(["submit", "every_pass"]))
def test_invariants(trace, priority, backfill, estimate, enforce, sjbf, refresh):
    jobs, total = trace
    order = "sjbf" if sjbf and backfill in ("easy", "easy_drevt") else "fcfs"
    params = {"calc_period": 7.0, "decay_half_life": 30.0} if priority == "multifactor" else None
    s = simulate(jobs, jobs.actual_run_time, total, priority=priority, backfill=backfill, estimate=estimate,
                 backfill_order=order, enforce_limits=enforce, priority_params=params, kernel="reference",
                 estimate_refresh=refresh)
    ran = ~s.rejected
    assert np.array_equal(s.rejected, jobs.num_nodes > total)
    assert (s.begin[ran] >= jobs.submit[ran]).all()
    assert np.array_equal(s.end[ran], s.begin[ran] + s.run_time[ran])
    if enforce:  # nobody runs past its limit
        assert (s.run_time[ran] <= jobs.time_limit[ran]).all()
    events = []
    for j in np.flatnonzero(ran & (s.end > s.begin)):
        events += [(s.begin[j], 1, int(jobs.num_nodes[j])), (s.end[j], 0, -int(jobs.num_nodes[j]))]
    used = 0
    for _, _, d in sorted(events):  # no over-commit
        used += d
        assert used <= total
    fast = simulate(jobs, jobs.actual_run_time, total, priority=priority, backfill=backfill, estimate=estimate,
                    backfill_order=order, enforce_limits=enforce, priority_params=params, kernel="auto",
                    estimate_refresh=refresh)
    assert np.array_equal(fast.begin, s.begin, equal_nan=True)


def test_every_new_priority_is_registered():
    assert set(NEW_PRIORITIES) <= set(PRIORITY_POLICIES)
    assert set(DYNAMIC_PRIORITY_POLICIES) == {"multifactor", "wfp3", "unicef"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=0, max_size=40), st.integers(0, 2))
def test_distinct_codes_match_numpy_unique(values, spread):
    """The leaves of the fair-share tree without a sort: the same distinct values and inverse as
    np.unique, and a row of each value (with a wide span: np.unique's own path)."""
    from drevt_sweep.jobs import distinct_codes

    codes = np.asarray(values, dtype=np.int64) * (1, 1000, 10**9)[spread]
    got, inverse, holder = distinct_codes(codes)
    want, want_inverse = np.unique(codes, return_inverse=True)
    assert got.tolist() == want.tolist()
    assert inverse.tolist() == want_inverse.reshape(-1).tolist()
    assert holder.shape == got.shape and (codes[holder] == got).all()
