"""The compiled ``backfill: slurm`` (``sim.kernel._slurm``) against the reference
(``policies.slurm_backfill``), bit for bit: KTH-SP2 with Slurm's defaults and non-default
settings, random small traces over every knob, with static priorities and with multifactor
(classic fair-share and Fair Tree: its ticks re-order the queue), the slices (progress, Ctrl-C), and which runs
``_use_fast_kernel`` sends to the kernel."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jobtable_factory import make_jobs
from slices import check_progress_then_interrupt
from test_fast_kernel import SETTINGS, assert_same, traces

from drevt_sweep.errors import ConfigError
from drevt_sweep.sim import kernel as fast
from drevt_sweep.sim.engine import simulate
from drevt_sweep.sim.policies import STATIC_PRIORITY_POLICIES

pytestmark = pytest.mark.skipif(fast.load(warn=False) is None, reason="numba is not importable")

INF = math.inf
EASY = dict(bf_interval=0, bf_max_job_test=INF, bf_window=INF, bf_resolution=0, default_queue_depth=INF,
            sched_interval=0, bf_job_part_count_reserve=1)
VARIANTS = {
    "defaults": {},
    "easy_reduction": EASY,
    "reserve_all_unlimited": {**EASY, "bf_job_part_count_reserve": 0},
    "tight": dict(bf_max_job_test=20, bf_max_job_user=2, bf_window=600, bf_job_part_count_reserve=3,
                  default_queue_depth=5, bf_interval=45, sched_interval=100, bf_resolution=90),
    "short_window": dict(bf_window=90, bf_resolution=300, bf_max_job_part=7, sched_interval=0),
    "every_pass": dict(bf_interval=0, bf_max_job_test=50, default_queue_depth=0, bf_resolution=1),
}


def run(jobs, kernel, **params):
    return simulate(jobs, jobs.actual_run_time, 100, backfill="slurm", kernel=kernel, backfill_params=params)


@pytest.fixture(scope="module")
def kth_head():
    from conftest import BUNDLED_KTH
    from drevt_sweep.trace import ReadOptions, read_trace

    jobs = read_trace(BUNDLED_KTH, ReadOptions(trace_format="swf", force_simulation=True))
    return jobs.take(np.arange(3000))


@pytest.mark.slow  # a real trace against the reference engine; random traces: fast
@pytest.mark.parametrize("enforce", [True, False])
@pytest.mark.parametrize("variant", VARIANTS)
def test_slurm_kernel_matches_reference_on_kth(kth_head, variant, enforce):
    ref = assert_same(kth_head, kth_head.actual_run_time, 100, backfill="slurm", enforce_limits=enforce,
                      backfill_params=VARIANTS[variant])
    assert (ref.begin > kth_head.submit).sum() > 1000  # a busy stretch: the limits matter


@st.composite
def knobs(draw):
    """Slurm's settings, each often at a value that changes small schedules."""
    pick = lambda *values: draw(st.sampled_from(values))  # noqa: E731
    return dict(bf_interval=pick(0, 1, 3, 7.5, 30), sched_interval=pick(0, 2, 5, 60),
                bf_window=pick(INF, 0.05, 0.1, 0.5, 1440), bf_resolution=pick(0, 1, 2, 4, 60, 0.75),
                bf_max_job_test=pick(1, 2, 3, 500, INF), bf_max_job_user=pick(0, 1, 2),
                bf_max_job_part=pick(0, 1, 3), bf_job_part_count_reserve=pick(0, 1, 2),
                default_queue_depth=pick(0, 1, 2, 100, INF))


# Cases found by the strategy below against kernels that jumped across later window ends
# without one of ``window_ok``'s tests (each fails without it): a reservation cut by the window end
# with no room after it moves in a later window and frees room a later job starts in; with
# bf_job_part_count_reserve, a job past the window takes a reservation in a later window and a
# later job loses its own.
WINDOW_CASES = {
    "cut_reservation": (dict(
        submit=[0, 20, 20, 25, 30, 32, 42, 62, 82, 92, 94, 114, 114, 116, 136, 141, 151, 156, 156, 156, 158, 168,
                170, 175, 176, 186, 188, 198, 198, 218, 238, 239, 239, 239, 239, 244, 246, 256, 276, 281, 282,
                282, 284, 285, 290, 310, 320, 321, 323, 333, 343, 363, 368, 368, 368, 388, 389, 390],
        nodes=[5, 7, 4, 3, 3, 7, 6, 9, 1, 7, 2, 3, 9, 1, 2, 5, 7, 3, 2, 4, 1, 2, 6, 8, 3, 6, 2, 10, 7, 5, 4, 4, 4,
               8, 8, 4, 1, 7, 10, 5, 1, 10, 7, 8, 8, 8, 4, 9, 3, 1, 2, 1, 8, 9, 8, 10, 3, 9],
        limit=[60, 10, 120, 20, 90, 5, 45, 120, 5, 20, 120, 20, 5, 20, 30, 10, 30, 45, 90, 120, 90, 60, 20, 30,
               60, 60, 5, 60, 200, 90, 200, 45, 200, 10, 10, 30, 30, 10, 200, 30, 200, 20, 30, 10, 5, 20, 120, 5,
               200, 10, 30, 45, 200, 30, 60, 90, 45, 120],
        run=[60, 1, 120, 20, 81, 5, 40.5, 12, 5, 10, 120, 20, 5, 2, 3, 9, 3, 45, 81, 120, 9, 54, 20, 15, 60, 54,
             0.5, 60, 200, 90, 200, 45, 200, 10, 1, 30, 15, 10, 20, 15, 200, 10, 3, 5, 5, 2, 12, 4.5, 180, 9, 30,
             40.5, 180, 30, 60, 81, 40.5, 120],
    ), 10, dict(bf_interval=1, sched_interval=7, bf_window=1, bf_resolution=1)),
    "part_count_reserve": (dict(
        submit=[10, 10, 10, 10, 12, 12, 17, 18, 28, 28, 28, 28, 30, 32, 37, 37, 38, 39, 44, 54, 56, 56, 61],
        nodes=[7, 1, 1, 9, 7, 8, 8, 1, 1, 4, 7, 7, 4, 3, 3, 6, 3, 9, 6, 9, 2, 2, 2],
        limit=[30, 5, 200, 60, 20, 200, 10, 120, 120, 5, 10, 45, 30, 30, 90, 10, 200, 10, 20, 10, 90, 30, 90],
        run=[30, 4.5, 20, 54, 20, 180, 9, 120, 120, 5, 10, 45, 15, 15, 90, 5, 100, 10, 10, 10, 90, 3, 90],
    ), 9, dict(bf_interval=5, sched_interval=7, bf_window=3, bf_resolution=30, bf_job_part_count_reserve=1)),
}


@pytest.mark.parametrize("case", WINDOW_CASES)
def test_slurm_kernel_recomputes_a_later_window_that_can_change_the_cycle(case):
    c, total, params = WINDOW_CASES[case]
    jobs = make_jobs(c["submit"], c["nodes"], c["limit"], c["run"])
    assert_same(jobs, jobs.actual_run_time, total, backfill="slurm", backfill_params=params)


# A pass at which no waiting job fits in the free nodes starts nothing, and neither does any
# pass before the next arrival or completion: the kernel skips them all (``idle`` in
# ``slurm_steps``). 10 nodes: A (6 nodes) runs 0-100, B (6) waits behind it from 1, C (4 nodes,
# 20 s) arrives at 2 (FCFS: the main scheduler stops at B; the cycle at 30 backfills C) or, in
# the second case, at 20, a multifactor tick (every 10 s) while the kernel jumps over B's idle
# passes. C must start before A ends: it does not if C's 4 nodes count as not fitting the 4
# free ones, if the sorted queue's fewest-nodes bound is not lowered at C's arrival, or if the
# jump goes on across a tick that brought an arrival (or, at 100, A's completion).
IDLE_CASES = {"arrival_fits": 2.0, "arrival_at_a_tick": 20.0}


@pytest.mark.parametrize("priority", [("fcfs", None), ("multifactor", {"calc_period": 10.0}),
                                      ("multifactor", {"calc_period": 10.0, "fairshare": "fair_tree"}),
                                      ("unicef", None)])
@pytest.mark.parametrize("case", IDLE_CASES)
def test_slurm_kernel_skips_passes_only_while_no_waiting_job_fits(case, priority):
    jobs = make_jobs([0.0, 1.0, IDLE_CASES[case]], [6, 6, 4], [100.0, 100.0, 20.0], [100.0, 100.0, 20.0],
                     user=["u1", "u2", "u3"], group=["g1", "g1", "g2"])
    ref = assert_same(jobs, jobs.actual_run_time, 10, backfill="slurm", priority=priority[0],
                      priority_params=priority[1])
    assert ref.begin[2] < 100.0
    if priority[0] == "fcfs":
        assert ref.begin.tolist() == [0.0, 100.0, 30.0]


@pytest.mark.parametrize("priority", [("fcfs", None), ("multifactor", {"weights": {"fairshare": 0, "job_size": 0}})])
def test_slurm_kernel_cycle_stops_after_the_last_job_that_fits(priority):
    """A cycle stops after the last waiting job (in priority order) that fits in the free nodes:
    none after it can start before an event. 10 nodes, A (6) runs 0-100; B (7), C (4 nodes,
    200 s), D (6), E (1 node, 20 s) wait from 1-4. The cycle at 30 reserves B at 100, leaving 3
    nodes from then: C fits the 4 free nodes now but not for 200 s, so it is reserved at 200;
    E, the last job that fits the free nodes (found from the right of the segment tree, or from
    the end of the sorted queue), starts."""
    jobs = make_jobs([0.0, 1.0, 2.0, 3.0, 4.0], [6, 7, 4, 6, 1], [100.0, 100.0, 200.0, 100.0, 20.0],
                     [100.0, 100.0, 200.0, 100.0, 20.0])
    ref = assert_same(jobs, jobs.actual_run_time, 10, backfill="slurm", priority=priority[0],
                      priority_params=priority[1])
    assert ref.begin.tolist() == [0.0, 100.0, 200.0, 200.0, 30.0]  # (multifactor by age alone: FCFS's order)


def test_slurm_kernel_jump_ends_at_an_arrival_ahead_of_a_tested_job():
    """While the clocks jump over cycles that start nothing, an arrival that cannot start (more
    nodes than are free) keeps the jump only if it waits behind every job the last cycle
    tested. SJF, 10 nodes, exact reservations (``bf_resolution=0``): A (6 nodes) runs 0-100; k (7 nodes, 60 s) and m (4 nodes, 80 s) wait.
    The cycle at 30 reserves k at 100, so m (which would run past 100) waits for 160; the next
    cycle that could start a job is at 120. X (5 nodes, 50 s) arrives at 40 and, shorter,
    goes ahead of k: reserved at 100-150, it pushes k to 150, and m fits from the cycle at 60."""
    jobs = make_jobs([0.0, 1.0, 2.0, 40.0], [6, 7, 4, 5], [100.0, 60.0, 80.0, 50.0], [100.0, 60.0, 80.0, 50.0])
    ref = assert_same(jobs, jobs.actual_run_time, 10, backfill="slurm", priority="sjf",
                      backfill_params={"bf_resolution": 0})
    assert ref.begin.tolist() == [0.0, 150.0, 60.0, 100.0]


# ``firm`` (``_slurm._firm_bound``): the jump crosses later window ends up to the earliest start
# that a job fitting the free nodes, after the first tested job to reach the window end, finds in
# the profile before that job is placed. 10 nodes, exact resolution, a cycle every 5 s, A1 (3
# nodes) runs 0-50 and A2 (3) from 0. Both cases are computed by hand.
FIRM_CASES = {
    # A2 runs to 200. P (7 nodes, 20 s) is reserved at 50-70; X (10) cannot start before 200,
    # past every window end until 80 (window 2 min): no reservation; K (7, 100 s) is reserved at
    # 70, cut by the window end (no room for it after X's nodes: the window check forbids a
    # jump across window ends); C (4, 60 s) fits the 4 free nodes but not past P's
    # reservation, which does not depend on the window: its earliest start without X, K and C
    # placed is 70, so the clocks jump from 5 to A1's end at 50 instead of visiting every cycle.
    "jump_across_window_ends": (
        [0, 0, 1, 2, 3, 4], [3, 3, 7, 10, 7, 4], [50, 200, 20, 30, 100, 60], 2,
        [0.0, 0.0, 50.0, 200.0, 70.0, 230.0]),
    # A2 runs to 100. X (10 nodes, 30 s) is past the window end (1 min) until the cycle at 45,
    # where the window reaches 105 and X is reserved at 100-105: B (7, 100 s), reserved at 50
    # (cut by the window end) before, now cannot start before 105, and C (4, 50 s), which B
    # blocked, starts at 45. C's start without X, B and C placed is now: no jump. A bound
    # over jobs before X only, or over the cycle's final profile (B's reservation in it), jumps
    # from 5 to 50 and starts C at 50.
    "must_not_jump": (
        [0, 0, 1, 2, 3], [3, 3, 10, 7, 4], [50, 100, 30, 100, 50], 1, [0.0, 0.0, 100.0, 130.0, 45.0]),
}


@pytest.mark.parametrize("case", FIRM_CASES)
def test_slurm_kernel_jumps_across_window_ends_only_before_a_firm_start(case):
    submit, nodes, limit, window, begin = FIRM_CASES[case]
    jobs = make_jobs(submit, nodes, limit, limit)
    ref = assert_same(jobs, jobs.actual_run_time, 10, backfill="slurm",
                      backfill_params=dict(bf_interval=5, sched_interval=0, bf_resolution=0, bf_window=window))
    assert ref.begin.tolist() == begin


# An arrival that fits the free nodes during a jump ends it only if it fits before the jump's
# target in the profile the last cycle left, fitted from that cycle's time. 10 nodes, FCFS, a
# cycle every 5 s, exact resolution: A (6 nodes) runs 0-100; K (7 nodes, 60 s, at 1) and W (4
# nodes, 150 s, at 2) wait. The cycle at 5 reserves K at 100-160 and W at 160-310 (its 150 s
# from 5 cross K's reservation, where 3 nodes are free) and jumps to the cycle at 100. X (4
# nodes) arrives at 41, in the profile 4 nodes free on [5, 100), 3 on [100, 160), 6 on [160, 310).
ARRIVAL_CASES = {
    # X for 50 s fits from 5 (before 100): the jump ends, X starts at the cycle at 45. Fitted
    # from its arrival at 41 (the next breakpoint is 100), or not fitted at all, it would wait
    # for K's end at 160.
    "starts_in_the_jump": (50.0, [0.0, 100.0, 160.0, 45.0]),
    # X for 200 s fits at 160 at the earliest (past 100): the jump goes on to 100, where K
    # starts; W and X start at K's end.
    "waits_past_the_jump": (200.0, [0.0, 100.0, 160.0, 160.0]),
}


@pytest.mark.parametrize("case", ARRIVAL_CASES)
def test_slurm_kernel_arrival_ends_a_jump_only_if_it_may_start_before_its_target(case):
    x_limit, begin = ARRIVAL_CASES[case]
    jobs = make_jobs([0.0, 1.0, 2.0, 41.0], [6, 7, 4, 4], [100.0, 60.0, 150.0, x_limit],
                     [100.0, 60.0, 150.0, x_limit])
    ref = assert_same(jobs, jobs.actual_run_time, 10, backfill="slurm",
                      backfill_params=dict(bf_interval=5, sched_interval=0, bf_resolution=0))
    assert ref.begin.tolist() == begin


# A tick during a jump over passes at which no waiting job fits does not re-key the queue: the
# re-keying waits for the jump's end and is then done as at the last tick (its time, the jobs
# waiting then). Multifactor by age (max 500 s) and size (nodes / 10), a tick every 100 s; R (10
# nodes) runs 0-560, so nothing fits until it ends, between the ticks at 500 and 600.
DEFERRED_CASES = {
    # B (5 nodes, submitted at 1) and A (6, at 101). At the tick 500: B 1000 * 499/500 + 500 =
    # 1498, A 1000 * 399/500 + 600 = 1398, B first: B starts at 560, A when B ends. Keyed at 560
    # (age 559 capped, 459): B 1500, A 1518: A would start first.
    "at_the_ticks_time": ([0.0, 1.0, 101.0], [10, 5, 6], [0.0, 560.0, 660.0]),
    # Z (9 nodes) submitted at 460, X (10) at 530, after the last tick: at 560 Z has its key of
    # the tick 500 (80 + 900 = 980), X its arrival's (0 + 1000): X first. Keyed as at 500 too, X's
    # negative age would give it 940: Z would start first.
    "later_arrivals_keep_their_key": ([0.0, 460.0, 530.0], [10, 9, 10], [0.0, 660.0, 560.0]),
}


@pytest.mark.parametrize("case", DEFERRED_CASES)
def test_slurm_kernel_rekeys_after_a_jump_as_at_the_last_tick(case):
    submit, nodes, begin = DEFERRED_CASES[case]
    jobs = make_jobs(submit, nodes, [600.0, 100.0, 100.0], [560.0, 100.0, 100.0])
    params = {"weights": {"age": 1000, "fairshare": 0, "job_size": 1000, "partition": 0}, "max_age": 500.0,
              "calc_period": 100.0}
    ref = assert_same(jobs, jobs.actual_run_time, 10, backfill="slurm", priority="multifactor",
                      priority_params=params)
    assert ref.begin.tolist() == begin


@st.composite
def long_jobs_short_window(draw):
    """Jobs of up to 200 s against a window of 30-180 s: reservations cut by the window end,
    jobs past it, and many cycles jumped across later window ends."""
    total = draw(st.integers(3, 12))
    n = draw(st.integers(10, 60))
    pick = lambda values: draw(st.lists(st.sampled_from(values), min_size=n, max_size=n))  # noqa: E731
    submit = np.cumsum(pick([0, 0, 1, 2, 5, 10, 20])).astype(float).tolist()
    limit = pick([5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 200.0])
    run = [lim * f for lim, f in zip(limit, pick([0.1, 0.5, 1, 1, 0.9]))]
    jobs = make_jobs(submit, draw(st.lists(st.integers(1, total), min_size=n, max_size=n)), limit, run)
    params = dict(bf_interval=draw(st.sampled_from([1, 2, 5, 10])),
                  sched_interval=draw(st.sampled_from([0, 3, 7])),
                  bf_window=draw(st.sampled_from([0.5, 1, 1.5, 2, 3])),
                  bf_resolution=draw(st.sampled_from([0, 1, 5, 10, 30])),
                  bf_job_part_count_reserve=draw(st.sampled_from([0, 0, 1, 2, 3])),
                  bf_max_job_test=draw(st.sampled_from([500, 5])))
    return jobs, total, params


@SETTINGS
@given(case=long_jobs_short_window())
def test_slurm_kernel_matches_reference_across_window_ends(case):
    jobs, total, params = case
    assert_same(jobs, jobs.actual_run_time, total, backfill="slurm", backfill_params=params)


@SETTINGS
@given(trace=traces(), params=knobs(), priority=st.sampled_from(STATIC_PRIORITY_POLICIES), enforce=st.booleans())
def test_slurm_kernel_matches_reference_on_random_traces(trace, params, priority, enforce):
    jobs, total = trace
    assert_same(jobs, jobs.actual_run_time, total, priority=priority, backfill="slurm", enforce_limits=enforce,
                backfill_params=params)


# Slurm's multifactor priority (classic fair-share, Fair Tree) under Slurm's backfill: the queue is re-keyed
# at every ``calc_period`` tick, so the kernel's jumps over idle cycles must stop where a tick
# changes the order (``slurm_steps``).
MULTIFACTOR = {
    "defaults": None,
    "short_calc_period": {"calc_period": 60.0, "decay_half_life": 3600.0},
    "favor_small": {"favor_small": True, "max_age": 3600.0, "weights": {"age": 5000, "job_size": 20000}},
    "by_user": {"fairshare_by": "user", "calc_period": 30.0},
    "by_account": {"fairshare_by": "account", "weights": {"fairshare": 100000}},
    "fair_tree": {"fairshare": "fair_tree"},
    "fair_tree_by_user": {"fairshare": "fair_tree", "fairshare_by": "user", "calc_period": 60.0},
    "fair_tree_by_account": {"fairshare": "fair_tree", "fairshare_by": "account", "decay_half_life": 3600.0},
    # without AccountingStorageEnforce=limits: a job's time after the last tick is never charged
    "not_charged_at_end": {"charge_ended_jobs": False, "calc_period": 60.0, "decay_half_life": 3600.0},
}


@pytest.mark.slow  # a real trace against the reference engine; random traces: fast
@pytest.mark.parametrize("enforce", [True, False])
@pytest.mark.parametrize("variant", MULTIFACTOR)
def test_slurm_kernel_matches_reference_with_multifactor_on_kth(kth_head, variant, enforce):
    ref = assert_same(kth_head, kth_head.actual_run_time, 100, backfill="slurm", enforce_limits=enforce,
                      priority="multifactor", priority_params=MULTIFACTOR[variant])
    fcfs = simulate(kth_head, kth_head.actual_run_time, 100, backfill="slurm", enforce_limits=enforce)
    assert (ref.begin > kth_head.submit).sum() > 1000  # a busy stretch: the priorities matter ...
    assert (ref.begin != fcfs.begin).sum() > 300  # ... and give another schedule than FCFS


@pytest.mark.slow  # a real trace against the reference engine; random traces: fast
@pytest.mark.parametrize("variant", ["tight", "every_pass", "easy_reduction"])
def test_slurm_kernel_matches_reference_with_multifactor_and_other_limits(kth_head, variant):
    assert_same(kth_head, kth_head.actual_run_time, 100, backfill="slurm", backfill_params=VARIANTS[variant],
                priority="multifactor", priority_params=MULTIFACTOR["short_calc_period"])


# WFP3 and UNICEF re-key every waiting job before every pass: no jump over cycles, but a cycle
# that the jump would have passed over is not computed while the order stays as it was.
@pytest.mark.slow  # a real trace against the reference engine; random traces: fast
@pytest.mark.parametrize("enforce", [True, False])
@pytest.mark.parametrize("variant", ["defaults", "tight", "every_pass"])
@pytest.mark.parametrize("priority", ["wfp3", "unicef"])
def test_slurm_kernel_matches_reference_with_wfp3_and_unicef_on_kth(kth_head, priority, variant, enforce):
    ref = assert_same(kth_head, kth_head.actual_run_time, 100, backfill="slurm", backfill_params=VARIANTS[variant],
                      priority=priority, enforce_limits=enforce)
    assert (ref.begin > kth_head.submit).sum() > 1000


@SETTINGS
@given(trace=traces(), params=knobs(), priority=st.sampled_from(["wfp3", "unicef"]), enforce=st.booleans())
def test_slurm_kernel_matches_reference_with_wfp3_and_unicef_on_random_traces(trace, params, priority, enforce):
    jobs, total = trace
    assert_same(jobs, jobs.actual_run_time, total, priority=priority, backfill="slurm", enforce_limits=enforce,
                backfill_params=params)


@SETTINGS
@given(case=long_jobs_short_window(), priority=st.sampled_from(["wfp3", "unicef"]))
def test_slurm_kernel_matches_reference_with_wfp3_and_unicef_across_window_ends(case, priority):
    jobs, total, params = case
    assert_same(jobs, jobs.actual_run_time, total, priority=priority, backfill="slurm", backfill_params=params)


def test_slurm_kernel_matches_reference_with_multifactor_shares_and_partitions(kth_head):
    """Partition factor (two queues of one pool), account and user shares."""
    head = kth_head.take(np.arange(2000))
    users = [f"u{u % 9}" for u in head.user_code]
    jobs = make_jobs(head.submit, head.num_nodes, head.time_limit, head.actual_run_time,
                     queue=["a" if i % 3 else "b" for i in range(len(head))], user=users,
                     group=[f"g{int(u[1:]) % 3}" for u in users])
    params = {"partition_priority": {"a": 1, "b": 3}, "weights": {"partition": 5000},
              "account_shares": {"g0": 4, "g2": 1}, "user_shares": {"u1": 5}, "calc_period": 120.0}
    for fairshare in ("classic", "fair_tree"):
        ref = assert_same(jobs, jobs.actual_run_time, 100, backfill="slurm", priority="multifactor",
                          priority_params={**params, "fairshare": fairshare}, backfill_params={"bf_max_job_user": 3})
        assert (ref.begin > jobs.submit).sum() > 500


@pytest.mark.parametrize("two_levels", [True, False])
def test_fair_tree_factors_in_the_kernel_are_the_references(two_levels):
    """``_extended._fair_tree`` against ``multifactor.fair_tree_factors`` on random trees with
    many ties (unused associations, equal usage and shares, accounts of equal LF whose users
    merge), factor for factor."""
    from drevt_sweep.sim.kernel._extended import _fair_tree, pairwise_plan
    from drevt_sweep.sim.policies.multifactor import fair_tree_factors
    from test_fair_tree import random_fair_tree

    rng = np.random.default_rng(7)
    for _ in range(300):
        tree = random_fair_tree(rng, 40, two_levels)
        n, n_acct, acct = len(tree.acct_of_leaf), tree.n_acct, tree.acct_of_leaf
        sib, snorm, acct_share = tree.sib_ratio, tree.s_norm, tree.acct_share
        usage = rng.choice([0.0, 0.0, 1.0, 2.0, 3.5, 1e6, 0.1], n)
        raw_acct = np.bincount(acct, weights=usage, minlength=n_acct) if two_levels else usage.copy()
        want = fair_tree_factors(usage, raw_acct, tree)
        plan = pairwise_plan(n_acct if two_levels else n)
        fval, fstamp = np.zeros(n), np.full(n, -1, np.int64)
        last = rng.permutation(n) if rng.random() < 0.5 else np.arange(n)  # the last tick's order: any permutation
        _fair_tree(usage, raw_acct, acct, sib, snorm, acct_share, two_levels, plan, np.empty(plan.shape[0]), 3,
                   fval, fstamp, np.empty(n), np.empty(n), last, np.empty(n, np.int64), np.empty(n, np.int64))
        assert (fval.view(np.int64) == want.view(np.int64)).all() and (fstamp == 3).all()


def test_fair_tree_parent_usage_is_numpys_sum_bit_for_bit():
    """Fair Tree divides by the parent's usage, which the reference sums with ``ndarray.sum``
    (pairwise): the kernel's ``_np_sum`` must give the same float for every length (blocks of
    8 and 128, the halves above) and spread of magnitudes."""
    from drevt_sweep.sim.kernel._extended import _np_sum, pairwise_plan

    def np_sum(a):
        plan = pairwise_plan(a.shape[0])
        return _np_sum(a, plan, np.empty(plan.shape[0]))

    rng = np.random.default_rng(26)
    for n in list(range(0, 300)) + [511, 512, 513, 1000, 1031]:
        a = rng.random(n) * 10.0 ** rng.integers(-6, 18, n)
        a[rng.random(n) < 0.3] = 0.0
        assert np.float64(np_sum(a)).view(np.int64) == a.sum().view(np.int64)
    naive = 0.0
    a = np.full(200, 0.1)
    for x in a:
        naive += x
    assert naive != a.sum() and np_sum(a) == a.sum()  # (the order matters: a plain loop differs)


@st.composite
def multifactor_knobs(draw):
    """Multifactor's settings for small traces: ticks from every second to rarely, fast and
    slow decay, each weight often off or dominant."""
    pick = lambda *values: draw(st.sampled_from(values))  # noqa: E731
    return dict(calc_period=pick(1.0, 2.5, 3.0, 7.5, 30.0, 300.0), decay_half_life=pick(2.0, 60.0, 1e6),
                max_age=pick(5.0, 20.0, 1e6), favor_small=draw(st.booleans()),
                fairshare_by=pick("account/user", "user", "account"), fairshare=pick("classic", "fair_tree"),
                weights=dict(age=pick(0, 1, 100, 1000), fairshare=pick(0, 1000, 10000),
                             job_size=pick(0, 10, 1000), partition=pick(0, 1000)))


@SETTINGS
@given(trace=traces(), params=knobs(), mf=multifactor_knobs(), enforce=st.booleans())
def test_slurm_kernel_matches_reference_with_multifactor_on_random_traces(trace, params, mf, enforce):
    jobs, total = trace
    if (np.asarray(jobs.group_code) < 0).all():  # no account at all: fair-share by account refuses it
        mf["fairshare_by"] = "user"
    assert_same(jobs, jobs.actual_run_time, total, priority="multifactor", priority_params=mf, backfill="slurm",
                enforce_limits=enforce, backfill_params=params)


@SETTINGS
@given(case=long_jobs_short_window(), mf=multifactor_knobs(), users=st.lists(st.sampled_from("abcd"), min_size=60,
                                                                              max_size=60))
def test_slurm_kernel_matches_reference_with_multifactor_across_window_ends(case, mf, users):
    """Long jobs of four users, many cycles jumped over and ticks among them."""
    jobs, total, params = case
    users = users[:len(jobs)]
    jobs = make_jobs(jobs.submit, jobs.num_nodes, jobs.time_limit, jobs.actual_run_time, user=users,
                     group=["x" if u in "ab" else "y" for u in users])
    assert_same(jobs, jobs.actual_run_time, total, priority="multifactor", priority_params=mf, backfill="slurm",
                backfill_params=params)


@pytest.mark.parametrize("variant", ["short_calc_period", "fair_tree", "wfp3"])
def test_slurm_kernel_dynamic_slices_do_not_change_the_schedule(kth_head, monkeypatch, variant):
    kw = dict(backfill="slurm", kernel="fast", priority="wfp3") if variant == "wfp3" else dict(
        backfill="slurm", kernel="fast", priority="multifactor", priority_params=MULTIFACTOR[variant])
    whole = simulate(kth_head, kth_head.actual_run_time, 100, **kw)
    for budget in (1, 5):
        monkeypatch.setattr(fast, "STEP_BUDGET", budget)
        sliced = simulate(kth_head, kth_head.actual_run_time, 100, **kw)
        for name in ("begin", "end"):
            assert (getattr(sliced, name).view(np.int64) == getattr(whole, name).view(np.int64)).all()


def test_slurm_kernel_slices_report_progress_and_stop_on_interrupt(kth_head, monkeypatch):
    monkeypatch.setattr(fast, "STEP_BUDGET", 64)
    for priority in ("fcfs", "multifactor", "wfp3"):
        check_progress_then_interrupt(lambda progress: simulate(
            kth_head, kth_head.actual_run_time, 100, backfill="slurm", kernel="fast", priority=priority,
            progress=progress), len(kth_head))


def test_only_the_supported_slurm_runs_use_the_kernel(kth_head):
    jobs = kth_head.take(np.arange(50))
    assert fast.slurm_supported({"bf_window": 60}, extended=False) is None
    for params, extended in (({"limits": object()}, False), ({"tier": [1] * 50}, False), (None, True)):
        assert fast.slurm_supported(params, extended)
    for priority in ("multifactor", "wfp3", "unicef"):
        simulate(jobs, jobs.actual_run_time, 100, backfill="slurm", kernel="fast", priority=priority)
    with pytest.raises(ConfigError, match="run-time estimates"):
        simulate(jobs, jobs.actual_run_time, 100, backfill="slurm", kernel="fast", priority="multifactor",
                 estimate="actual")
    fair_tree = dict(priority="multifactor", priority_params={"fairshare": "fair_tree"})
    simulate(jobs, jobs.actual_run_time, 100, backfill="slurm", kernel="fast", **fair_tree)
    simulate(jobs, jobs.actual_run_time, 100, backfill="easy", kernel="fast", **fair_tree)  # (EASY's has it too)
    with pytest.raises(ConfigError, match="no compiled version with dynamic priorities"):
        simulate(jobs, jobs.actual_run_time, 100, backfill="conservative", kernel="fast", **fair_tree)
    with pytest.raises(ConfigError, match="on_reservation"):
        simulate(jobs, jobs.actual_run_time, 100, backfill="slurm", kernel="fast", on_reservation=lambda *a: None)


def test_slurm_kernel_runs_each_exclusive_partition_as_the_reference(kth_head, monkeypatch):
    """Two pools (``partitioned._compiled_exclusive``): each partition's Slurm clocks and limits
    are its own, as in the reference's one ``engine.simulate`` per partition; a pool serving
    partitions of two tiers falls back to the reference."""
    from jobtable_factory import make_jobs

    from drevt_sweep.sim.machine import Machine, Partition
    from drevt_sweep.sim.partitioned import simulate_machine

    head = kth_head.take(np.arange(1500))
    jobs = make_jobs(head.submit, np.minimum(head.num_nodes, 40), head.time_limit, head.actual_run_time,
                     queue=["a" if i % 3 else "b" for i in range(len(head))],
                     user=[f"u{u % 7}" for u in head.user_code])
    params = dict(bf_max_job_user=2, bf_interval=20)
    calls = []
    run_slurm = fast.run_slurm
    monkeypatch.setattr(fast, "run_slurm", lambda **kw: calls.append(kw["total"]) or run_slurm(**kw))
    for machine, compiled in ((Machine("m", (Partition("a", 60, queues=("a",)), Partition("b", 40, queues=("b",)))),
                               [60, 40]),
                              (Machine("m", (Partition("a", 60, queues=("a",)),
                                             Partition("b", 40, queues=("b", "c"),
                                                       limits={"c": {"priority_tier": 2}}))),
                               [60])):  # the two-tier pool on the reference
        calls.clear()
        ref, got = (simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel=kernel,
                                     backfill_params=params) for kernel in ("reference", "auto"))
        assert np.array_equal(ref.begin, got.begin, equal_nan=True)
        assert np.array_equal(ref.end, got.end, equal_nan=True)
        assert (ref.begin > jobs.submit).sum() > 300 and calls == compiled


@pytest.mark.parametrize("fairshare", ["classic", "fair_tree"])
def test_slurm_kernel_runs_multifactor_per_exclusive_partition_as_the_reference(kth_head, monkeypatch, fairshare):
    """Two pools under multifactor: each partition is its own ``engine.simulate`` (its own
    fair-share tree and ticks), compiled, bit for bit the reference's."""
    from drevt_sweep.sim.machine import Machine, Partition
    from drevt_sweep.sim.partitioned import simulate_machine

    head = kth_head.take(np.arange(1500))
    users = [f"u{u % 7}" for u in head.user_code]
    jobs = make_jobs(head.submit, np.minimum(head.num_nodes, 40), head.time_limit, head.actual_run_time,
                     queue=["a" if i % 3 else "b" for i in range(len(head))], user=users,
                     group=[f"g{int(u[1:]) % 2}" for u in users])
    machine = Machine("m", (Partition("a", 60, queues=("a",)), Partition("b", 40, queues=("b",))))
    calls = []
    run_slurm = fast.run_slurm
    monkeypatch.setattr(fast, "run_slurm", lambda **kw: calls.append(kw["total"]) or run_slurm(**kw))
    kw = dict(backfill="slurm", priority="multifactor", backfill_params={"bf_interval": 20},
              priority_params={"fairshare": fairshare, "calc_period": 60.0})
    ref, got = (simulate_machine(jobs, jobs.actual_run_time, machine, kernel=kernel, **kw)
                for kernel in ("reference", "fast"))
    assert np.array_equal(ref.begin, got.begin, equal_nan=True) and np.array_equal(ref.end, got.end, equal_nan=True)
    assert (ref.begin > jobs.submit).sum() > 300 and sorted(calls) == [40, 60]
