"""The engine with a machine capacity that changes over time (``capacity=CapacitySchedule``).

Hand-computed scenarios (the arithmetic is in the comments), then properties on random traces
and random capacity schedules for every policy: begin >= submit, end = begin + run time, nodes
in use never above the capacity at a start instant (at any instant while limits are enforced),
nothing left waiting, an empty or constant schedule changes nothing, bit for bit.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drevt_sweep.sim.capacity import CapacitySchedule, latest_fit_start, latest_starts
from drevt_sweep.sim.engine import BACKFILL_POLICIES as ALL_BACKFILL_POLICIES, PRIORITY_POLICIES, simulate
from drevt_sweep.errors import ConfigError
from drevt_sweep.sim.policies.base import Capacity
from drevt_sweep.sim.policies.conservative import ConservativeBackfill
from jobtable_factory import make_jobs

# Slurm's backfill models a constant machine size only (it refuses a capacity schedule): tests/test_slurm_backfill.py
BACKFILL_POLICIES = tuple(b for b in ALL_BACKFILL_POLICIES if b != "slurm")

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAN = math.nan


def run(jobs, total, capacity, **kw):
    return simulate(jobs, jobs.actual_run_time, total, capacity=capacity, **kw)


# --- the schedule itself ----------------------------------------------------------------------


def test_levels_merge_steps_and_reductions():
    cap = CapacitySchedule(steps=((100, 8), (300, 12)), reductions=((50, 150, 3), (120, 130, 10)))
    # -inf..50: 10 | 50: 10-3=7 | 100: 8-3=5 | 120: 8-3-10 -> clipped 0 | 130: 5 | 150: 8 | 300: 12
    assert cap.levels(10) == ([-math.inf, 50, 100, 120, 130, 150, 300], [10, 7, 5, 0, 5, 8, 12])
    assert cap.at(125, 10) == 0 and cap.at(150, 10) == 8 and cap.at(0, 10) == 10
    assert CapacitySchedule().is_empty and CapacitySchedule().levels(7) == ([-math.inf], [7])
    assert CapacitySchedule(steps=((5, 7),)).levels(7) == ([-math.inf], [7])  # no real change


@pytest.mark.parametrize("bad", [
    dict(steps=((1, 5), (1, 6))),  # two steps at one time
    dict(steps=((math.nan, 5),)),
    dict(steps=((1, -1),)),
    dict(reductions=((10, 5, 1),)),  # ends before it starts
    dict(reductions=((0, 5, 1.5),)),
])
def test_bad_schedules_are_config_errors(bad):
    with pytest.raises(ConfigError):
        CapacitySchedule(**bad)


def test_latest_start_is_exact_in_float64():
    t = latest_fit_start(np.array([1.0, 1e9 + 0.1, math.inf]), np.array([0.1, 3600.3, 5.0]))
    assert t[0] + 0.1 <= 1.0 and np.nextafter(t[0], math.inf) + 0.1 > 1.0
    assert t[1] + 3600.3 <= 1e9 + 0.1 and np.nextafter(t[1], math.inf) + 3600.3 > 1e9 + 0.1
    assert t[2] == math.inf


def test_latest_starts_per_job():
    # capacity 10 until 100, 4 from 100 on. Job (submit, nodes, limit):
    #   (0, 4, 50): 4 nodes forever -> inf;  (0, 6, 60): must end by 100 -> start <= 40;
    #   (0, 6, 200): would have to start by -100 < submit -> never (NaN);  (0, 11, 1): never.
    times, levels = CapacitySchedule(steps=((100, 4),)).levels(10)
    got = latest_starts(times, levels, np.zeros(4), np.array([4, 6, 6, 11]), np.array([50.0, 60, 200, 1]))
    assert got[0] == math.inf and np.isnan(got[2]) and np.isnan(got[3])
    # 40, up to float64 rounding: the largest t with t + 60 <= 100 when computed in float64
    assert got[1] == pytest.approx(40.0, abs=1e-12)
    assert got[1] + 60.0 <= 100.0 < np.nextafter(got[1], math.inf) + 60.0


# --- hand-computed scenarios --------------------------------------------------------------------

# 10 nodes; maintenance takes 6 of them on [100, 200) (capacity 4 there).
MAINTENANCE = CapacitySchedule(reductions=((100, 200, 6),))


def maintenance_jobs():
    # A: submit 0, 5 nodes, limit = run = 150 -> [0, 150) overlaps [100, 150) where only 4 exist,
    #    so A cannot start at 0 although 10 nodes are free then; its earliest fit is 200.
    # B: submit 0, 4 nodes, limit = run = 50.   C: submit 10, 10 nodes, limit = run = 20.
    return make_jobs([0, 0, 10], [5, 4, 10], [150, 50, 20], [150, 50, 20])


@pytest.mark.parametrize("backfill", ["easy", "conservative", "easy_drevt"])
def test_a_maintenance_window_delays_a_job_and_others_backfill(backfill):
    # A's reservation: 200. B (0 + 50 < 200, 4 nodes fit) starts at 0 and ends at 50.
    # C at 10: 10 - 4 (B) = 6 free, no. At 50 (B ends): 10 free on [50, 70), before the
    # maintenance at 100 and done before A's reservation -> C runs 50..70. A runs 200..350.
    s = run(maintenance_jobs(), 10, MAINTENANCE, backfill=backfill)
    assert s.begin.tolist() == [200, 0, 50]
    assert s.end.tolist() == [350, 50, 70]
    assert s.warnings == {"rejected_oversized": 0, "rejected_capacity": 0}


def test_a_maintenance_window_without_backfilling_blocks_the_queue():
    # none: A blocks B until 200; then A (5) + B (4) = 9 <= 10 start together; C (10 nodes)
    # waits for both: B ends 250, A ends 350 -> C runs 350..370.
    s = run(maintenance_jobs(), 10, MAINTENANCE, backfill="none")
    assert s.begin.tolist() == [200, 200, 350]
    assert s.end.tolist() == [350, 250, 370]


def test_without_the_maintenance_the_same_jobs_start_at_once():
    # Control: A (5) + B (4) start at 0; C (10) waits for A's end at 150 -> 150..170.
    s = run(maintenance_jobs(), 10, None, backfill="easy")
    assert s.begin.tolist() == [0, 0, 150]


@pytest.mark.parametrize("backfill", BACKFILL_POLICIES)
def test_a_capacity_increase_is_an_event_that_starts_a_job(backfill):
    # 4 nodes until 100, then 8. X: submit 0, 6 nodes, limit 10 -> nothing else happens until
    # the capacity grows at 100, where X starts (100..110). Jobs larger than the smallest
    # capacity are delayed, not rejected.
    jobs = make_jobs([0], [6], [10], [10])
    s = run(jobs, 4, CapacitySchedule(steps=((100, 8),)), backfill=backfill)
    assert s.begin.tolist() == [100] and s.end.tolist() == [110] and not s.rejected.any()


def test_a_running_job_is_not_killed_by_a_capacity_drop():
    # 10 nodes, 4 from 50 on. P: submit 0, 8 nodes, limit 40, runs 60 (limits not enforced):
    # fits [0, 40) -> starts 0, overruns into the drop, ends 60 (not killed; 8 > 4 in use on
    # [50, 60) is allowed). Q: submit 1, 4 nodes, limit = run = 10: at 1, 2 free; at 50 (an
    # event: capacity change) 4 - 8 = -4 free; at 60 (P ends) 4 free for [60, 70) -> 60..70.
    jobs = make_jobs([0, 1], [8, 4], [40, 10], [60, 10])
    drop = CapacitySchedule(steps=((50, 4),))
    s = run(jobs, 10, drop, enforce_limits=False)
    assert s.begin.tolist() == [0, 60] and s.end.tolist() == [60, 70]
    # with limits enforced P is killed at its limit (40), and Q fits [40, 50) at once
    s = run(jobs, 10, drop, enforce_limits=True)
    assert s.begin.tolist() == [0, 40] and s.end.tolist() == [40, 50] and s.killed.tolist() == [True, False]


def rejection_jobs():
    # 10 nodes until 100, then 4. Each (submit 0, nodes, limit, run):
    # J0: 12 nodes -> more than the largest capacity ever: rejected_oversized.
    # J1: 8 nodes for 200 s -> would have to start by -100: never fits -> rejected_capacity.
    # J2: 6 nodes, 60 s -> [0, 60) fits: starts 0.
    # J3: 6 nodes, 60 s -> must start by 40 (end by 100), but J2 holds 6 of 10 until 60:
    #     withdrawn at the first event after 40 (J2's end at 60) -> rejected_capacity.
    # J4: 4 nodes, 30 s.
    return make_jobs([0] * 5, [12, 8, 6, 6, 4], [1, 200, 60, 60, 30], [1, 200, 60, 60, 30])


@pytest.mark.parametrize("backfill", ["easy", "conservative", "easy_drevt"])
def test_jobs_that_can_never_run_are_rejected_the_others_only_delayed(backfill):
    # J4 fits next to J2 (4 free, [0, 30) before the drop) -> 0..30.
    s = run(rejection_jobs(), 10, CapacitySchedule(steps=((100, 4),)), backfill=backfill)
    assert s.rejected.tolist() == [True, True, False, True, False]
    assert s.warnings == {"rejected_oversized": 1, "rejected_capacity": 2}
    np.testing.assert_array_equal(s.begin, [NAN, NAN, 0, NAN, 0])
    assert np.isnan(s.run_time[s.rejected]).all() and not s.killed.any()


def test_a_withdrawn_head_stops_blocking_the_queue():
    # none: J2 starts at 0; J3 does not fit, so J4 waits behind it until J3 is withdrawn at 60
    # (J2's end); then J4 fits [60, 90) in the 4 nodes left after the drop -> 60..90.
    s = run(rejection_jobs(), 10, CapacitySchedule(steps=((100, 4),)), backfill="none")
    np.testing.assert_array_equal(s.begin, [NAN, NAN, 0, NAN, 60])


def test_easy_reserves_the_head_where_it_fits_for_its_whole_limit():
    # 10 nodes, 4 on [100, 200). R runs 8 nodes on [0, 50). H (submit 1, 8 nodes, limit 100)
    # fits at 50 only until 100 -> its reservation is 200. L (submit 2, 2 nodes, limit 300):
    # fits now (2 free) but would run into [200, 300) where H needs 8 of 10 -> only
    # 10 - 8 = 2 spare: it fits (extra nodes) -> starts at 2. M (submit 3, 2 nodes, limit 300):
    # 0 free -> waits. easy_drevt: L would not end before the shadow -> waits.
    jobs = make_jobs([0, 1, 2, 3], [8, 8, 2, 2], [50, 100, 300, 300], [50, 100, 300, 300])
    cap = CapacitySchedule(reductions=((100, 200, 6),))
    reservations = []
    s = simulate(jobs, jobs.actual_run_time, 10, capacity=cap, backfill="easy",
                 on_reservation=lambda now, j, t: reservations.append((now, j, t)))
    assert (1, 1, 200) in reservations
    assert s.begin[1] == 200 and s.begin[2] == 2
    # M: at 50 R ends: 8 free but [50, 350) crosses the maintenance (4 - 2 = 2 free) and H's
    # reservation (10 - 8 - 2 = 0 free on [200, 300)) -> after H and L: H ends 300, L ends 302
    # -> M's earliest fit is 300 (10 - 2 (L) = 8 free)
    assert s.begin[3] == 300
    d = run(jobs, 10, cap, backfill="easy_drevt")
    assert d.begin[2] > 2


# --- properties on random traces and schedules -------------------------------------------------


@st.composite
def scenarios(draw):
    total = draw(st.integers(1, 10))
    n = draw(st.integers(0, 12))
    gaps = draw(st.lists(st.sampled_from([0, 0, 0, 1, 2, 3, 5, 8, 13, 0.5]), min_size=n, max_size=n))
    submit = np.cumsum(gaps).tolist() if n else []
    nodes = draw(st.lists(st.integers(1, total + 2), min_size=n, max_size=n))
    limit = draw(st.lists(st.sampled_from([1, 2, 3, 5, 8, 10, 20, 40, 2.5]), min_size=n, max_size=n))
    frac = draw(st.lists(st.sampled_from([0, 0.25, 0.5, 1, 1, 1, 1.5, 2]), min_size=n, max_size=n))
    run = [lim * f for lim, f in zip(limit, frac)]
    step_times = draw(st.lists(st.sampled_from([0, 1, 2, 4, 5, 7.5, 10, 15, 20, 30, 45, 60]), max_size=4, unique=True))
    steps = tuple((t, draw(st.integers(0, total + 3))) for t in step_times)
    reductions = tuple(
        (a, a + d, k)
        for a, d, k in draw(st.lists(
            st.tuples(st.sampled_from([0, 1, 3, 6, 10, 12, 25]), st.sampled_from([1, 2, 5, 10, 30]),
                      st.integers(1, total)),
            max_size=3,
        ))
    )
    users = [f"u{i % 3}" for i in range(len(submit))]  # so that multifactor's fair-share has users
    return make_jobs(submit, nodes, limit, run, user=users), total, CapacitySchedule(steps=steps, reductions=reductions)


def check_capacity_invariants(jobs, total, cap, s, enforce):
    submit, nodes, limit = jobs.submit, jobs.num_nodes, jobs.time_limit
    ran = ~s.rejected
    assert np.isfinite(s.begin[ran]).all() and np.isnan(s.begin[~ran]).all()
    assert (s.begin[ran] >= submit[ran]).all()
    assert np.array_equal(s.end[ran], s.begin[ran] + s.run_time[ran])
    assert not s.killed[~ran].any()
    assert s.warnings["rejected_oversized"] == int((nodes > max(cap.levels(total)[1])).sum())
    assert s.warnings["rejected_oversized"] + s.warnings["rejected_capacity"] == int(s.rejected.sum())
    # nodes in use on [t, t+) never exceed the capacity at a start instant (with limits
    # enforced: at any instant, as each job fitted for its whole limit)
    instants = set(s.begin[ran].tolist())
    if enforce:
        instants |= set(s.end[ran].tolist()) | set(cap.levels(total)[0][1:])
    for t in instants:
        busy = ran & (s.begin <= t) & (s.end > t)
        assert int(nodes[busy].sum()) <= cap.at(t, total), f"over capacity at {t}"
    # every job that ran fitted the capacity alone for its whole limit from its start
    for j in np.flatnonzero(ran):
        b, e = s.begin[j], s.begin[j] + limit[j]
        points = [b] + [t for t in cap.levels(total)[0][1:] if b < t < e]
        assert all(cap.at(t, total) >= nodes[j] for t in points), f"job {j} started without room for its limit"


@pytest.mark.parametrize("enforce", [True, False])
@pytest.mark.parametrize("backfill", BACKFILL_POLICIES)
@SETTINGS
@given(scenario=scenarios(), priority=st.sampled_from(PRIORITY_POLICIES))
def test_invariants_under_random_capacity(scenario, priority, backfill, enforce):
    jobs, total, cap = scenario
    kw = dict(priority=priority, backfill=backfill, enforce_limits=enforce)
    s = run(jobs, total, cap, **kw)
    if cap.levels(total)[0][1:]:
        check_capacity_invariants(jobs, total, cap, s, enforce)
    again = run(jobs, total, cap, **kw)
    for name in ("begin", "end", "run_time", "killed", "rejected"):
        assert np.array_equal(getattr(s, name), getattr(again, name), equal_nan=True), name


@pytest.mark.parametrize("backfill", BACKFILL_POLICIES)
@SETTINGS
@given(scenario=scenarios(), priority=st.sampled_from(PRIORITY_POLICIES), enforce=st.booleans())
def test_an_empty_or_constant_schedule_changes_nothing(scenario, priority, backfill, enforce):
    jobs, total, _ = scenario
    kw = dict(priority=priority, backfill=backfill, enforce_limits=enforce)
    plain = simulate(jobs, jobs.actual_run_time, total, **kw)
    for cap in (None, CapacitySchedule(), CapacitySchedule(steps=((3.0, total),))):
        other = run(jobs, total, cap, **kw)
        for name in ("begin", "end", "run_time", "killed", "rejected"):
            assert np.array_equal(getattr(plain, name), getattr(other, name), equal_nan=True), name
        assert other.warnings == plain.warnings


@settings(SETTINGS, max_examples=80)
@given(scenario=scenarios(), priority=st.sampled_from(PRIORITY_POLICIES))
def test_conservative_reservations_only_move_earlier_under_a_capacity_schedule(scenario, priority):
    jobs, total, cap = scenario
    records = defaultdict(list)
    s = simulate(jobs, jobs.actual_run_time, total, capacity=cap, backfill="conservative", priority=priority,
                 on_reservation=lambda now, j, t: records[j].append(t))
    for j in np.flatnonzero(~s.rejected):
        finite = [t for t in records[j] if t != math.inf]
        assert finite and s.begin[j] == finite[-1] and s.begin[j] <= finite[0]
        assert finite == sorted(finite, reverse=True)


@settings(SETTINGS, max_examples=80)
@given(scenario=scenarios())
def test_fcfs_easy_head_never_starts_later_than_its_first_reservation(scenario):
    jobs, total, cap = scenario
    records = defaultdict(list)
    s = simulate(jobs, jobs.actual_run_time, total, capacity=cap, backfill="easy",
                 on_reservation=lambda now, j, t: records[j].append(t))
    for j, times in records.items():
        finite = [t for t in times if t != math.inf]
        if finite and not s.rejected[j]:
            assert s.begin[j] <= finite[0]


@SETTINGS
@given(scenario=scenarios(), enforce=st.booleans())
def test_conservative_shortcut_changes_nothing_under_a_capacity_schedule(scenario, enforce):
    jobs, total, cap = scenario
    fast = run(jobs, total, cap, backfill="conservative", enforce_limits=enforce)
    ConservativeBackfill.ALWAYS_REPLAN = True
    try:
        full = run(jobs, total, cap, backfill="conservative", enforce_limits=enforce)
    finally:
        ConservativeBackfill.ALWAYS_REPLAN = False
    assert np.array_equal(fast.begin, full.begin, equal_nan=True)


def test_step_capacity_is_never_sent_to_the_compiled_kernel():
    cap = Capacity.stepwise([-math.inf, 10.0], [4, 8])  # only grows: minimum == total
    assert cap.variable and type(cap) is not Capacity and cap.minimum == cap.total
