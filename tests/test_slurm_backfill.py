"""Backfill ``slurm`` (``sim.policies.slurm_backfill``): Slurm's main scheduler and backfill cycle.

Each knob has a hand-computed case (a few jobs where it changes the schedule; the expected start
times are worked out in the comments), and the reductions are checked bit for bit: with every
limit infinite, ``bf_interval=0`` and ``bf_job_part_count_reserve=1`` it is ``easy``; with
Slurm's default ``bf_job_part_count_reserve=0`` it is conservative backfilling replanned from
scratch, equal to ``conservative`` when no job ends before its limit, different otherwise.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from jobtable_factory import make_jobs

from drevt_sweep.errors import ConfigError
from drevt_sweep.sim import engine
from drevt_sweep.sim.policies.slurm_backfill import DEFAULTS, check_backfill_params

INF = math.inf
# every limit off, a cycle at every pass, exact times: what the knob tests below start from
EXACT = dict(bf_interval=0, bf_max_job_test=INF, bf_window=INF, bf_resolution=0,
             default_queue_depth=INF, sched_interval=0, bf_job_part_count_reserve=0)
EASY = {**EXACT, "bf_job_part_count_reserve": 1}


def run(jobs, total, run_time=None, **params):
    rt = jobs.actual_run_time if run_time is None else run_time
    return engine.simulate(jobs, rt, total, backfill="slurm", kernel="reference", backfill_params=params)


def starts(schedule):
    return schedule.begin.tolist()


# ------------------------------------------------------------------------- hand-computed knobs
def four_jobs():
    """10 nodes, FCFS, every job runs for its whole limit.
    J0: t=0, 6 nodes, 100 s -> runs [0, 100).
    J1: t=1, 8 nodes, 100 s -> cannot start (4 free): its earliest start is 100.
    J2: t=2, 10 nodes, 100 s -> after J1: earliest start 200 if J1 is reserved [100, 200).
    J3: t=3, 2 nodes, 500 s -> fits now (4 free) and beside J1's reservation (10 - 8 = 2 free
        over [100, 200)), but it would overlap J2's reservation [200, 300) (0 free)."""
    return make_jobs([0, 1, 2, 3], [6, 8, 10, 2], [100, 100, 100, 500], [100, 100, 100, 500])


def test_part_count_reserve_one_is_easy_and_zero_reserves_every_job():
    jobs = four_jobs()
    # reserve=1 (EASY): only J1 is reserved, J3 starts at 3; J1 starts at 100 (J0 ends, 8 free
    # beside J3); J2 needs all 10 nodes: after J3 ends at 503.
    assert starts(run(jobs, 10, **EASY)) == [0, 100, 503, 3]
    assert starts(engine.simulate(jobs, jobs.actual_run_time, 10, backfill="easy")) == [0, 100, 503, 3]
    # reserve=0 (Slurm's default): J2 is reserved [200, 300), so J3 waits until 300.
    assert starts(run(jobs, 10, **EXACT)) == [0, 100, 200, 300]


def test_bf_window_reserves_only_within_the_window():
    jobs = four_jobs()
    # bf_window=3 min: at t=3 the window ends at 183; J2's earliest start (200) is past it, so
    # J2 gets no reservation and J3 starts at 3 (as EASY); J2 then waits for J3 (503).
    assert starts(run(jobs, 10, **{**EXACT, "bf_window": 3})) == [0, 100, 503, 3]
    # bf_window=4 min: the window ends at 243 > 200: J2 is reserved, J3 waits (as above).
    assert starts(run(jobs, 10, **{**EXACT, "bf_window": 4})) == [0, 100, 200, 300]


def test_bf_max_job_test_ends_the_cycle():
    jobs = four_jobs()
    # EASY-like (reserve 1). bf_max_job_test=2: at t=3 the cycle tests J1 (reserved) and J2
    # (cannot start, no second reservation) and stops before J3. At 100 J1 starts (main
    # scheduler), at 200 J2 (J1 ended), J3 (2 nodes, 0 free) only when J2 ends at 300.
    assert starts(run(jobs, 10, **{**EASY, "bf_max_job_test": 2})) == [0, 100, 200, 300]
    # bf_max_job_test=3 reaches J3 at t=3: EASY's schedule.
    assert starts(run(jobs, 10, **{**EASY, "bf_max_job_test": 3})) == [0, 100, 503, 3]


def test_bf_resolution_rounds_reservations_out():
    # 10 nodes. J0: t=0, 6 nodes, 90 s. J1: t=1, 10 nodes, 100 s: reserved at 90 (J0's end).
    # J2: t=2, 4 nodes, 70 s: ends at 72 < 90, so it fits before J1's reservation [90, 190).
    # With bf_resolution=60 the reservation is [floor(90/60)*60, floor((190+59)/60)*60) =
    # [60, 240): J2 would overlap it over [60, 72) and waits; J1 starts at 90 when J0 ends, J2
    # at 190 when J1 ends.
    jobs = make_jobs([0, 1, 2], [6, 10, 4], [90, 100, 70], [90, 100, 70])
    assert starts(run(jobs, 10, **EXACT)) == [0, 90, 2]
    assert starts(run(jobs, 10, **{**EXACT, "bf_resolution": 1})) == [0, 90, 2]  # whole seconds: exact
    assert starts(run(jobs, 10, **{**EXACT, "bf_resolution": 60})) == [0, 90, 190]


def test_a_reservation_rounded_to_before_now_takes_nothing():
    # 10 nodes, limits not enforced, bf_resolution=0.75. J0: t=0, 5 nodes, limit 1, runs 100 s
    # (overdue from t=1: its nodes count as free "right after now"). J1: t=0, 6 nodes, limit
    # 1e-9: never fits now. J2: t=0, 1 node, 5 s: backfilled at 0. At t=5 (J2 ends) J3 arrives
    # (1 node, 2 s). J1's earliest start is nextafter(5): its reservation [floor(s/r)*r -> 5,
    # floor((s + 1e-9 + r - 1)/r)*r = 4.5) ends before it starts and takes nothing, so J3
    # starts at 5 (it once split the profile before now and J3 waited for J0's end at 100).
    jobs = make_jobs([0, 0, 0, 5], [5, 6, 1, 1], [1, 1e-9, 5, 2], [100, 1e-9, 5, 2])
    s = engine.simulate(jobs, jobs.actual_run_time, 10, backfill="slurm", kernel="reference", enforce_limits=False,
                        backfill_params={**EXACT, "bf_resolution": 0.75})
    assert starts(s) == [0, 100, 0, 5]


def blocked_then_small(users=None):
    """4 nodes. J0: t=0, 2 nodes, 100 s. J1: t=1, 4 nodes, 100 s: blocked; the main scheduler
    stops at it (the partition failed), so only a backfill cycle can start what follows.
    J2, J3: t=2, 1 node, 10 s each: end long before J1's reservation at 100."""
    return make_jobs([0, 1, 2, 2], [2, 4, 1, 1], [100, 100, 10, 10], [100, 100, 10, 10], user=users)


def test_bf_interval_spaces_the_backfill_cycles():
    jobs = blocked_then_small()
    # bf_interval=0: a cycle at every pass: J2, J3 start when submitted (t=2).
    assert starts(run(jobs, 4, **EXACT)) == [0, 100, 2, 2]
    # bf_interval=30: cycles at 0 (the first pass), 30, 60 ...: J2, J3 start at 30.
    assert starts(run(jobs, 4, **{**EXACT, "bf_interval": 30})) == [0, 100, 30, 30]
    assert starts(run(jobs, 4, **{**EXACT, "bf_interval": 45})) == [0, 100, 45, 45]


def test_bf_max_job_user_caps_the_jobs_tested_per_user_and_cycle():
    jobs = blocked_then_small(["a", "a", "b", "b"])
    # cycle at 30 tests J1 (a), J2 (b, starts); J3 is b's second job: skipped; next cycle 60.
    assert starts(run(jobs, 4, **{**EXACT, "bf_interval": 30, "bf_max_job_user": 1})) == [0, 100, 30, 60]
    assert starts(run(jobs, 4, **{**EXACT, "bf_interval": 30, "bf_max_job_user": 2})) == [0, 100, 30, 30]
    other = blocked_then_small(["a", "a", "b", "c"])  # J3 has a user of its own: not capped
    assert starts(run(other, 4, **{**EXACT, "bf_interval": 30, "bf_max_job_user": 1})) == [0, 100, 30, 30]


def test_bf_max_job_part_caps_the_jobs_tested_per_partition_and_cycle():
    jobs = blocked_then_small(["a", "b", "c", "d"])
    # cycle at 30 tests J1 and J2 (2 in the partition): J3 waits for the cycle at 60.
    assert starts(run(jobs, 4, **{**EXACT, "bf_interval": 30, "bf_max_job_part": 2})) == [0, 100, 30, 60]
    assert starts(run(jobs, 4, **{**EXACT, "bf_interval": 30, "bf_max_job_part": 3})) == [0, 100, 30, 30]


def depth_jobs():
    """4 nodes; backfill only at the first pass (bf_interval 10000). J0: t=0, 1 node, 2000 s.
    J1, J2, J3: t=10, 1 node, 100 s each (3 free nodes: all fit). Only the main scheduler runs
    at t=10 and at the completions."""
    return make_jobs([0, 10, 10, 10], [1, 1, 1, 1], [2000, 100, 100, 100], [2000, 100, 100, 100])


def test_default_queue_depth_and_slurms_off_by_one():
    jobs = depth_jobs()
    base = {**EXACT, "bf_interval": 10000}
    # depth 0 still looks at one job (job_scheduler.c: job_depth++ > def_job_limit): J1 at 10,
    # J2 when J1 ends (110), J3 when J2 ends (210).
    assert starts(run(jobs, 4, **{**base, "default_queue_depth": 0})) == [0, 10, 110, 210]
    assert starts(run(jobs, 4, **{**base, "default_queue_depth": 1})) == [0, 10, 10, 110]
    assert starts(run(jobs, 4, **{**base, "default_queue_depth": 2})) == [0, 10, 10, 10]


def test_sched_interval_runs_the_main_scheduler_over_the_whole_queue():
    jobs = depth_jobs()
    base = {**EXACT, "bf_interval": 10000, "default_queue_depth": 0}
    # sched_interval=60: a full-queue pass at 60 starts J2 and J3 (free nodes, no depth limit).
    assert starts(run(jobs, 4, **{**base, "sched_interval": 60})) == [0, 10, 60, 60]
    assert starts(run(jobs, 4, **{**base, "sched_interval": 0})) == [0, 10, 110, 210]


def test_main_scheduler_stops_at_the_first_job_that_cannot_start():
    # 4 nodes, no backfill cycle after t=0. J0: t=0, 3 nodes, 100 s. J1: t=5, 2 nodes, 100 s
    # (1 free: cannot start). J2: t=5, 1 node, 10 s: fits, but the partition failed at J1:
    # it waits for J0's end at 100, when J1 and J2 start together.
    jobs = make_jobs([0, 5, 5], [3, 2, 1], [100, 100, 10], [100, 100, 10])
    assert starts(run(jobs, 4, **{**EXACT, "bf_interval": 10000})) == [0, 100, 100]
    assert starts(run(jobs, 4, **EXACT)) == [0, 100, 5]  # a backfill cycle at t=5 starts J2


def test_reserving_every_job_is_not_todays_conservative_when_jobs_end_early():
    # 10 nodes. R1: t=0, 8 nodes, limit 100, ends at 20. R2: t=0, 2 nodes, 50 s.
    # j1: t=1, 10 nodes, 10 s: reserved at 100. j2: t=2, 2 nodes, 40 s: reserved [50, 90).
    # At 20 R1 ends early.
    #   Slurm (replanned from scratch): j1 first: 10 free when R2 ends, 50 -> [50, 60); j2 can
    #   no longer run [20, 60): reserved at 60. j1 starts at 50, j2 at 60.
    #   conservative (compressed): j1 is re-placed around j2's reservation [50, 90): 90; j2 then
    #   fits [20, 60) before it and starts at 20; a second round moves j1 to 60.
    jobs = make_jobs([0, 0, 1, 2], [8, 2, 10, 2], [100, 50, 10, 40], [20, 50, 10, 40])
    assert starts(run(jobs, 10, **EXACT)) == [0, 0, 50, 60]
    conservative = engine.simulate(jobs, jobs.actual_run_time, 10, backfill="conservative")
    assert starts(conservative) == [0, 0, 60, 20]


def test_bf_continue_changes_nothing_in_zero_time_cycles(generated):
    """Slurm's bf_continue only matters when jobs or nodes change while a cycle has yielded its
    locks (real time); simulated cycles take none, so it cannot change a schedule here."""
    jobs, rt, total = generated
    head = np.arange(400)  # a guard against a model change, not a measurement: 400 jobs suffice
    jobs, rt = jobs.take(head), rt[head]
    a = run(jobs, total, rt, **{**DEFAULTS, "bf_continue": False})
    b = run(jobs, total, rt, **{**DEFAULTS, "bf_continue": True})
    assert np.array_equal(a.begin, b.begin, equal_nan=True)


# ------------------------------------------------------------------------------- reductions
@pytest.fixture(scope="module")
def generated():
    """2,000 jobs on 32 nodes at a load near 0.9, float times, most jobs ending before their limit."""
    rng = np.random.default_rng(26)
    n = 2000
    submit = np.cumsum(rng.exponential(700.0, n)) + rng.random(n)
    nodes = np.minimum(32, np.ceil(2 ** rng.uniform(0, 5.2, n))).astype(int)
    limit = rng.uniform(60, 7200, n)
    rt = limit * rng.uniform(0.05, 1.0, n)
    full = rng.random(n) < 0.2
    rt[full] = limit[full]  # some run to their limit
    jobs = make_jobs(submit.tolist(), nodes.tolist(), limit.tolist(), rt.tolist(),
                     user=[f"u{k}" for k in rng.integers(0, 12, n)])
    return jobs, rt, 32


@pytest.fixture(scope="module")
def kth():
    from conftest import BUNDLED_KTH
    from drevt_sweep.trace import ReadOptions, read_trace

    return read_trace(BUNDLED_KTH, ReadOptions(trace_format="swf", force_simulation=True))


def same(a, b):
    return (np.array_equal(a.begin, b.begin, equal_nan=True) and np.array_equal(a.end, b.end, equal_nan=True)
            and np.array_equal(a.rejected, b.rejected))


@pytest.mark.parametrize("enforce", [True, False])
def test_unlimited_with_one_reservation_is_easy_bit_for_bit_on_kth(kth, enforce):
    rt = kth.actual_run_time
    a = engine.simulate(kth, rt, 100, backfill="easy", kernel="reference", enforce_limits=enforce)
    b = engine.simulate(kth, rt, 100, backfill="slurm", kernel="reference", enforce_limits=enforce,
                        backfill_params=EASY)
    assert same(a, b) and (a.begin > kth.submit).sum() > 5000


def test_unlimited_with_one_reservation_is_easy_bit_for_bit_on_a_generated_trace(generated):
    jobs, rt, total = generated
    a = engine.simulate(jobs, rt, total, backfill="easy", kernel="reference")
    b = run(jobs, total, rt, **EASY)
    assert same(a, b) and (a.begin > jobs.submit).sum() > 500


def _conservative_when_jobs_run_to_their_limit(table, size) -> None:
    limit = np.asarray(table.time_limit, dtype=float)
    a = engine.simulate(table, limit, size, backfill="conservative", kernel="reference")
    b = run(table, size, limit, **EXACT)
    assert same(a, b)


@pytest.mark.slow  # the reference's conservative re-plans the long queue at every pass: ~11 s
def test_reserving_every_job_is_conservative_when_jobs_run_to_their_limit(generated):
    jobs, _, total = generated
    _conservative_when_jobs_run_to_their_limit(jobs, total)


def test_reserving_every_job_is_conservative_on_kth_when_jobs_run_to_their_limit(kth):
    """KTH-SP2's first 3,000 jobs: run to their limits the whole trace queues thousands of jobs,
    which the reference re-plans from scratch at every pass for minutes."""
    _conservative_when_jobs_run_to_their_limit(kth.take(np.arange(3000)), 100)


def test_slurm_defaults_differ_from_easy_on_kth(kth):
    """With Slurm's defaults (cycles every 30 s, reservations for every job in a 1-day window at
    60 s, 500 jobs a cycle, depth 100) the schedule is neither EASY's nor unlimited Slurm's."""
    rt = kth.actual_run_time
    head = kth.take(np.arange(4000))
    d = run(head, 100, rt[:4000])
    e = engine.simulate(head, rt[:4000], 100, backfill="easy", kernel="reference")
    x = run(head, 100, rt[:4000], **EXACT)
    assert not same(d, e) and not same(d, x)
    assert np.all(np.nan_to_num(d.begin) >= np.nan_to_num(head.submit))


# ----------------------------------------------------------------------------- settings
def test_bad_settings_are_one_clear_error():
    with pytest.raises(ConfigError, match="bf_window must be > 0"):
        check_backfill_params({"bf_window": 0})
    with pytest.raises(ConfigError, match="bf_max_job_user must be finite"):
        check_backfill_params({"bf_max_job_user": INF})
    with pytest.raises(ConfigError, match="has no setting.*bf_windw"):
        check_backfill_params({"bf_windw": 10})
    with pytest.raises(ConfigError, match="bf_interval must be a number >= 0"):
        check_backfill_params({"bf_interval": -1})
    assert check_backfill_params({"bf_window": "inf", "bf_interval": None})["bf_window"] == INF
    assert check_backfill_params({})["bf_interval"] == 30.0  # Slurm's defaults


# ------------------------------------------------------------------ partition tiers and limits
def tiered_machine(**limits):
    from drevt_sweep.sim.machine import Machine, Partition

    return Machine("m", (Partition("low+high", 4, queues=("low", "high"), limits=limits),))


def test_priority_tier_orders_the_queue_before_priority():
    from drevt_sweep.sim.partitioned import simulate_machine

    # one pool of 4 nodes serving 'low' and 'high' (Slurm partitions sharing nodes). J0: t=0,
    # low, 4 nodes, 100 s. J1: t=1, low, 4 nodes; J2: t=2, high, 4 nodes (100 s each).
    # FCFS alone: J1 at 100, J2 at 200. high has PriorityTier 2 (low: Slurm's default 1): J2
    # is ordered first and starts at 100, J1 at 200.
    jobs = make_jobs([0, 1, 2], [4, 4, 4], [100] * 3, [100] * 3, queue=["low", "low", "high"])
    flat = simulate_machine(jobs, jobs.actual_run_time, tiered_machine(), backfill="slurm",
                            backfill_params=EXACT)
    assert starts(flat) == [0, 100, 200]
    tiered = simulate_machine(jobs, jobs.actual_run_time, tiered_machine(high={"priority_tier": 2}),
                              backfill="slurm", backfill_params=EXACT)
    assert starts(tiered) == [0, 200, 100]


def test_partition_max_nodes_and_max_time_keep_jobs_from_running():
    from drevt_sweep.sim.partitioned import simulate_machine

    # 'high' allows 2 nodes and 50 s: J1 (3 nodes) and J2 (60 s) never run; J0 is in 'low'.
    jobs = make_jobs([0, 1, 2], [3, 3, 1], [60, 40, 60], [10, 10, 10], queue=["low", "high", "high"])
    machine = tiered_machine(high={"max_nodes": 2, "max_time": 50.0})
    s = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", backfill_params=EXACT)
    assert starts(s)[0] == 0 and np.isnan(s.begin[1:]).all()
    assert s.warnings["rejected_partition_max_nodes"] == 1 and s.warnings["rejected_partition_time_limit"] == 1


def test_a_slurm_conf_gives_the_partition_tiers_and_limits(tmp_path):
    from drevt_sweep.trace.slurm_conf import read_slurm_conf

    conf = tmp_path / "slurm.conf"
    conf.write_text("SelectType=select/linear\nSchedulerParameters=bf_window=60,bf_continue\n"
                    "NodeName=n[1-4] CPUs=8\n"
                    "PartitionName=low Nodes=n[1-4] Default=YES MaxTime=UNLIMITED\n"
                    "PartitionName=high Nodes=n[1-4] PriorityTier=2 MaxNodes=2 MaxTime=1:00:00\n")
    read = read_slurm_conf(conf)
    assert read.backfill == "slurm" and read.backfill_params == {"bf_window": 60, "bf_continue": True}
    assert read.system["partitions"][0]["limits"] == {"high": {"priority_tier": 2, "max_nodes": 2,
                                                               "max_time": 3600.0}}
    conf.write_text("NodeName=n1 CPUs=8\nPartitionName=p Nodes=n1 MaxNodes=two\n")
    with pytest.raises(ConfigError, match=r"slurm.conf:2: MaxNodes: expected a whole number"):
        read_slurm_conf(conf)
    conf.write_text("SchedulerParameters=bf_window=0\nNodeName=n1 CPUs=8\nPartitionName=p Nodes=n1\n")
    with pytest.raises(ConfigError, match=r"slurm.conf:1: SchedulerParameters: bf_window: must be between 1"):
        read_slurm_conf(conf)


def test_a_capacity_schedule_is_refused_with_one_clear_error():
    """Slurm's backfill models a constant machine size: a maintenance window (a node
    reduction) is a ConfigError naming why, not a schedule that silently ignores it; an empty
    schedule is no change and runs."""
    from drevt_sweep.sim.capacity import CapacitySchedule

    jobs = make_jobs([0, 1], [2, 2], [100, 100], [100, 100])
    with pytest.raises(ConfigError, match="constant machine size"):
        engine.simulate(jobs, jobs.actual_run_time, 4, backfill="slurm",
                        capacity=CapacitySchedule(reductions=((10.0, 50.0, 2),)))
    s = engine.simulate(jobs, jobs.actual_run_time, 4, backfill="slurm", capacity=CapacitySchedule())
    assert s.begin.tolist() == [0, 1]
