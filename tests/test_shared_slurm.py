"""Backfill ``slurm`` on shared-node pools (``select/cons_tres``; issue 26): Slurm's main
scheduler and backfill cycle (``sim.shared._SlurmShared``). Running jobs hold their cores, GPUs
and memory; a backfill reservation holds its nodes whole (backfill.c's ``node_space_map_t``).

Each knob has a hand-computed case on two nodes of 4 cores (the whole-node cases of
``test_slurm_backfill.py`` with cores in place of nodes; the expected starts are worked out in
the docstrings), two cases where a whole-node reservation and a per-resource one differ, and
the reductions are checked bit for bit on random workloads: with every limit infinite,
``bf_interval=0`` and Slurm's default ``bf_job_part_count_reserve=0`` it is the shared
engine's ``conservative`` when jobs run to their limit and no two jobs can share a node; with
one reservation on a single node it is ``easy_drevt`` (EASY without the extra-resources rule)
when no job can end exactly at the shadow time.
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from jobtable_factory import make_jobs
from test_shared import _max_use_per_node

from drevt_sweep.cli.sim import main as sim_main
from drevt_sweep.errors import ConfigError
from drevt_sweep.sim import kernel as fast
from drevt_sweep.sim.machine import Partition
from drevt_sweep.sim.shared import simulate_shared

INF = math.inf
# every limit off, a cycle at every pass, exact times (as test_slurm_backfill.EXACT)
EXACT = dict(bf_interval=0, bf_max_job_test=INF, bf_window=INF, bf_resolution=0,
             default_queue_depth=INF, sched_interval=0, bf_job_part_count_reserve=0)
EASY = {**EXACT, "bf_job_part_count_reserve": 1}
TWO = Partition("p", 2, cores=4, sharing="shared")


def run(jobs, cores, part=TWO, backfill="slurm", run_time=None, **params):
    """The reference's schedule; under ``slurm`` the compiled kernel's (``kernel._shared_slurm``)
    too, which must be the same."""
    n = len(jobs)
    rt = jobs.actual_run_time if run_time is None else run_time
    schedules = [simulate_shared(jobs, rt, part, np.asarray(cores), np.zeros(n, np.int64), np.zeros(n),
                                 backfill=backfill, kernel=kernel,
                                 backfill_params=params if backfill == "slurm" else None)
                 for kernel in ("reference", "fast") if kernel == "reference" or (
                     backfill == "slurm" and fast.load(warn=False) is not None)]
    assert all(_same(schedules[0], s) for s in schedules[1:])
    return schedules[0]


def starts(schedule):
    return schedule.begin.tolist()


# ------------------------------------------------------------------------- hand-computed knobs
def four_jobs():
    """2 nodes x 4 cores, FCFS, every job runs for its whole limit.

    ==  ======  ======================  =====
    J   submit  request                 limit
    ==  ======  ======================  =====
    J0  0       2 nodes x 3 cores       100  -> runs [0, 100) on n0, n1 (1 core free on each)
    J1  1       1 node x 4 cores        100  -> earliest fit 100 on n0: reserved [100, 200)
    J2  2       2 nodes x 4 cores       100  -> after J1: earliest fit 200 (n0, n1), [200, 300)
    J3  3       1 node x 1 core         500  -> fits now; on n0 it would overlap J1's
                                                reservation (n0 reserved whole), on n1 J2's
    ==  ======  ======================  =====
    """
    return make_jobs([0, 1, 2, 3], [2, 1, 2, 1], [100, 100, 100, 500], [100, 100, 100, 500]), [3, 4, 4, 1]


def test_reserving_every_job_or_only_the_first():
    jobs, cores = four_jobs()
    # reserve=1: only J1 is reserved; J3 starts at 3 on n1 (n0 holds J1's reservation); J1
    # at 100 on n0; J2 needs all 4 cores of both nodes: after J3 ends at 503.
    s = run(jobs, cores, **EASY)
    assert starts(s) == [0, 100, 503, 3] and s.nodes_of(3) == [1] and s.nodes_of(1) == [0]
    assert starts(run(jobs, cores, backfill="easy")) == [0, 100, 503, 3]
    # reserve=0 (Slurm's default): J2 is reserved [200, 300) on both nodes: J3 waits until 300.
    assert starts(run(jobs, cores, **EXACT)) == [0, 100, 200, 300]


def test_bf_max_job_test_ends_the_cycle():
    jobs, cores = four_jobs()
    # reserve=1. bf_max_job_test=2: at t=3 the cycle tests J1 (reserved) and J2 (no second
    # reservation) and stops before J3. At 100 J1 starts on n0 (main scheduler); the cycle
    # reserves J2 at 200 (both nodes), so J3 (n1, [100, 600)) would overlap it: it waits. J2
    # starts at 200, J3 when J2 ends (300).
    assert starts(run(jobs, cores, **{**EASY, "bf_max_job_test": 2})) == [0, 100, 200, 300]
    # bf_max_job_test=3 reaches J3 at t=3: as above (EASY-like).
    assert starts(run(jobs, cores, **{**EASY, "bf_max_job_test": 3})) == [0, 100, 503, 3]


def test_bf_window_reserves_only_within_the_window():
    jobs, cores = four_jobs()
    # reserve=0, bf_window=3 min: at t=3 the window ends at 183; J1 is reserved [100, 183) on
    # n0, J2's earliest fit (200) is past the window: no reservation, so J3 starts at 3 on n1
    # (the map is empty after 183); J2 then waits for J3 (503).
    assert starts(run(jobs, cores, **{**EXACT, "bf_window": 3})) == [0, 100, 503, 3]
    # bf_window=4 min: the window ends at 243 > 200: J2 is reserved, J3 waits (as reserve=0).
    assert starts(run(jobs, cores, **{**EXACT, "bf_window": 4})) == [0, 100, 200, 300]


def blocked_then_small(users=None):
    """2 nodes x 4 cores. J0: t=0, 2 nodes x 2 cores, 100 s. J1: t=1, 2 nodes x 4 cores, 100 s:
    blocked; the main scheduler stops at it (the partition failed), so only a backfill cycle
    starts what follows. J2, J3: t=2, 1 node x 1 core, 10 s each: fit beside J0 on n0 and end
    long before J1's reservation at 100."""
    jobs = make_jobs([0, 1, 2, 2], [2, 2, 1, 1], [100, 100, 10, 10], [100, 100, 10, 10], user=users)
    return jobs, [2, 4, 1, 1]


def test_bf_interval_spaces_the_backfill_cycles():
    jobs, cores = blocked_then_small()
    # bf_interval=0: a cycle at every pass: J2, J3 start when submitted (t=2), both on n0.
    s = run(jobs, cores, **EXACT)
    assert starts(s) == [0, 100, 2, 2] and s.nodes_of(2) == s.nodes_of(3) == [0]
    # bf_interval=30: cycles at 0 (the first pass), 30, 60 ...: J2, J3 start at 30.
    assert starts(run(jobs, cores, **{**EXACT, "bf_interval": 30})) == [0, 100, 30, 30]
    assert starts(run(jobs, cores, **{**EXACT, "bf_interval": 45})) == [0, 100, 45, 45]


def test_bf_max_job_user_caps_the_jobs_tested_per_user_and_cycle():
    jobs, cores = blocked_then_small(["a", "a", "b", "b"])
    # cycle at 30 tests J1 (a), J2 (b, starts); J3 is b's second job: skipped; at 40 (J2 ends)
    # the main scheduler stops at J1; the cycle at 60 starts J3.
    assert starts(run(jobs, cores, **{**EXACT, "bf_interval": 30, "bf_max_job_user": 1})) == [0, 100, 30, 60]
    assert starts(run(jobs, cores, **{**EXACT, "bf_interval": 30, "bf_max_job_user": 2})) == [0, 100, 30, 30]
    other, _ = blocked_then_small(["a", "a", "b", "c"])  # J3 has a user of its own: not capped
    assert starts(run(other, cores, **{**EXACT, "bf_interval": 30, "bf_max_job_user": 1})) == [0, 100, 30, 30]


def test_bf_max_job_part_caps_the_jobs_tested_per_partition_and_cycle():
    jobs, cores = blocked_then_small(["a", "b", "c", "d"])
    # cycle at 30 tests J1 and J2 (2 in the partition): J3 waits for the cycle at 60.
    assert starts(run(jobs, cores, **{**EXACT, "bf_interval": 30, "bf_max_job_part": 2})) == [0, 100, 30, 60]
    assert starts(run(jobs, cores, **{**EXACT, "bf_interval": 30, "bf_max_job_part": 3})) == [0, 100, 30, 30]


def test_bf_resolution_rounds_reservations_out():
    """1 node x 4 cores. J0: t=0, 3 cores, 90 s. J1: t=1, 4 cores, 100 s: reserved at 90.
    J2: t=2, 1 core, 70 s: ends at 72 < 90, before J1's reservation [90, 190). With
    bf_resolution=60 the reservation is [60, 240): J2 would overlap it over [60, 72) and waits;
    J1 starts at 90, J2 at 190."""
    one = Partition("p", 1, cores=4, sharing="shared")
    jobs = make_jobs([0, 1, 2], [1, 1, 1], [90, 100, 70], [90, 100, 70])
    assert starts(run(jobs, [3, 4, 1], one, **EXACT)) == [0, 90, 2]
    assert starts(run(jobs, [3, 4, 1], one, **{**EXACT, "bf_resolution": 60})) == [0, 90, 190]


def test_a_reservation_holds_its_nodes_whole_a_running_job_only_its_cores():
    """1 node x 8 cores, reserve=0. J0: t=0, 6 cores, 100 s. J1: t=1, 4 cores, 100 s: 6 + 4 > 8,
    reserved at its earliest fit, [100, 200). J2: t=2, 2 cores, 500 s: fits now beside J0 by cores
    (6 + 2 <= 8) and would fit beside J1's 4 cores too (4 + 2 <= 8), but Slurm's backfill map holds
    a reserved job's nodes whole: ``_add_reservation`` ands every ``node_space_map_t`` slot of
    ``[start, end_reserve)`` with the complement of the job's nodes, and a candidate may only use
    nodes set in every slot its run overlaps (backfill.c, ``_attempt_backfill``). So J2, over
    [2, 502), may not use the node: it is reserved [200, 700) after J1. At 100 J0 ends and the
    main scheduler starts J1 (4 cores), then J2: a running job holds only its cores (the select
    plugin counts them, not the map), 4 + 2 <= 8: J2 starts at 100. (With reservations held per
    resource, J2 would start at 2.)"""
    one = Partition("p", 1, cores=8, sharing="shared")
    jobs = make_jobs([0, 1, 2], [1, 1, 1], [100, 100, 500], [100, 100, 500])
    assert starts(run(jobs, [6, 4, 2], one, **EXACT)) == [0, 100, 100]
    assert starts(run(jobs, [6, 4, 2], one, backfill="conservative")) == [0, 100, 2]  # per resource
    # J1 asks 7 cores: at 100, 7 + 2 > 8 beside the running J1: J2 starts at 200, after it.
    assert starts(run(jobs, [6, 7, 2], one, **EXACT)) == [0, 100, 200]


def test_a_small_job_that_fits_beside_a_reservation_by_cores_waits_for_it():
    """2 nodes x 4 cores, reserve=0 (each waiting job reserved). J0: t=0, 1 node x 3 cores,
    100 s, on n0. J1: t=0, 1 node x 4 cores, 100 s: on n1. J2: t=1, 1 node x 2 cores, 100 s:
    1 + 2 cores would fit on n0 at 100 only (3 + 2 > 4 before); its earliest fit is 100 on n0
    (first fit by index; n1 is free at 100 too), reserved [100, 200) there, whole. J3: t=2, 1 node
    x 1 core, 300 s: fits now on n0 beside J0 (3 + 1 <= 4) and, by cores, beside J2's reservation
    from 100 (2 + 1 <= 4), but n0 is J2's reserved node over [100, 200): under Slurm's rule it
    may not start on n0; n1 is full until 100, then free for good: J3's earliest fit is 100 on
    n1 (n0 is still blocked until 200). At 100 J0 and J1 end: the main scheduler starts J2 on n0
    (first fit), then J3 on n0 beside it (2 + 1 <= 4: running jobs hold only their cores).
    Per resource, J3 would have started at 2 on n0."""
    jobs = make_jobs([0, 0, 1, 2], [1, 1, 1, 1], [100, 100, 100, 300], [100, 100, 100, 300])
    s = run(jobs, [3, 4, 2, 1], **EXACT)
    assert starts(s) == [0, 0, 100, 100]
    assert s.nodes_of(0) == [0] and s.nodes_of(1) == [1] and s.nodes_of(2) == s.nodes_of(3) == [0]
    c = run(jobs, [3, 4, 2, 1], backfill="conservative")  # reservations per resource
    assert starts(c) == [0, 0, 100, 2] and c.nodes_of(3) == [0]


def test_default_queue_depth_and_slurms_off_by_one():
    """1 node x 4 cores, backfill only at the first pass (bf_interval 10000). J0: t=0, 1 core,
    2000 s. J1, J2, J3: t=10, 1 core, 100 s each (3 free cores: all fit); only the main
    scheduler runs at 10 and at the completions."""
    one = Partition("p", 1, cores=4, sharing="shared")
    jobs = make_jobs([0, 10, 10, 10], [1] * 4, [2000, 100, 100, 100], [2000, 100, 100, 100])
    base = {**EXACT, "bf_interval": 10000}
    assert starts(run(jobs, [1] * 4, one, **{**base, "default_queue_depth": 0})) == [0, 10, 110, 210]
    assert starts(run(jobs, [1] * 4, one, **{**base, "default_queue_depth": 1})) == [0, 10, 10, 110]
    assert starts(run(jobs, [1] * 4, one, **{**base, "sched_interval": 60, "default_queue_depth": 0})) \
        == [0, 10, 60, 60]


def test_priority_tier_orders_the_queue_before_priority():
    """1 node x 4 cores, FCFS. J0: t=0, 4 cores, 100 s. J1 (t=1, tier 1) and J2 (t=2, tier 2):
    4 cores each; the higher tier goes first: J2 at 100, J1 at 200."""
    one = Partition("p", 1, cores=4, sharing="shared")
    jobs = make_jobs([0, 1, 2], [1, 1, 1], [100, 100, 100], [100, 100, 100])
    assert starts(run(jobs, [4, 4, 4], one, **EXACT)) == [0, 100, 200]
    assert starts(run(jobs, [4, 4, 4], one, **EXACT, tier=[1, 1, 2])) == [0, 200, 100]


def test_a_job_starts_on_the_nodes_cons_tres_picks_best_fit_not_first_fit():
    """Slurm's cons_tres (``_eval_nodes``, ``sim.shared.cons_tres_nodes``) places a job starting
    now by best fit; the real Slurm of tests/test_real_slurm_shared.py put B1 (1 core) on the
    node with 2 free cores rather than the lower one with 3.

    One node job, 3 nodes x 4 cores: J0 (2 cores) goes to n0 (all equal: the first), J1 (3
    cores) to n1 (n0 has 2 free: too few; n1 and n2 tie), J2 (1 core) to n1, which has 1 core
    free, not to n0 (2 free), where first fit would put it; all at t=0.

    Runs of nodes, 4 nodes x 4 cores: J0 and J1 (4 cores) fill n0 and n1; J0 ends at 10. J2
    (t=20, 2 nodes x 1 core): the usable nodes are n0 and n2-n3, two runs; n0 alone has too
    few nodes, n2-n3 has enough: J2 runs on n2, n3 (first fit: n0, n2)."""
    three = Partition("p", 3, cores=4, sharing="shared")
    jobs = make_jobs([0, 0, 0], [1, 1, 1], [100, 100, 100], [100, 100, 100])
    s = run(jobs, [2, 3, 1], three, **EXACT)
    assert starts(s) == [0, 0, 0] and [s.nodes_of(j) for j in range(3)] == [[0], [1], [1]]
    four = Partition("p", 4, cores=4, sharing="shared")
    jobs = make_jobs([0, 0, 20], [1, 1, 2], [100, 100, 100], [10, 100, 100])
    s = run(jobs, [4, 4, 1], four, **EXACT)
    assert starts(s) == [0, 0, 20] and s.nodes_of(2) == [2, 3]


@pytest.mark.parametrize("kernel", ["reference", "fast"])
def test_the_job_size_factor_weighs_the_cpus_asked_for_as_slurm_does(kernel):
    """1 node x 4 cores; multifactor with the job-size weight only (1000). J0: t=0, 4 cores,
    100 s. J1 (t=1, 2 cores) and J2 (t=2, 3 cores), 50 s each, wait for it; both ask for the one
    node of one, so by nodes alone they tie. Slurm's factor is the mean of nodes / nodes and
    CPUs / CPUs (``priority_multifactor.c``; ``sprio`` shows it on a real cons_tres Slurm,
    tests/test_real_slurm_shared.py): J1 (1 + 2/4) / 2 * 1000 = 750, J2 (1 + 3/4) / 2 * 1000 =
    875. J2 goes first at 100 and J1 (2 cores beside J2's 3: no) at 150. With
    ``PriorityFavorSmall``, (0 + 2/4) / 2 = 0.25 against (0 + 1/4) / 2 = 0.125: J1 at 100,
    J2 at 150. The compiled shared kernel (``backfill: easy``) gives the same order."""
    one = Partition("p", 1, cores=4, sharing="shared")
    jobs = make_jobs([0, 1, 2], [1, 1, 1], [100, 50, 50], [100, 50, 50])
    weights = {"age": 0, "fairshare": 0, "job_size": 1000, "partition": 0, "qos": 0}
    cores = np.array([4, 2, 3])

    def begin(backfill, favor_small):
        params = {"weights": weights, "favor_small": favor_small}
        s = simulate_shared(jobs, jobs.actual_run_time, one, cores, np.zeros(3, np.int64), np.zeros(3),
                            priority="multifactor", priority_params=params, backfill=backfill,
                            kernel="reference" if backfill == "slurm" else kernel,
                            backfill_params=EXACT if backfill == "slurm" else None)
        return starts(s)

    for backfill in ("slurm", "easy"):
        assert begin(backfill, False) == [0, 150, 100]
        assert begin(backfill, True) == [0, 100, 150]


def test_a_bad_setting_is_refused_with_one_clear_error():
    jobs, cores = four_jobs()
    with pytest.raises(ConfigError, match="bf_max_job_test"):
        run(jobs, cores, bf_max_job_test=0)


# ------------------------------------------------------------------------------- reductions
@st.composite
def workloads(draw, max_nodes=3, exclusive=False):
    """Random jobs on 1..max_nodes shared nodes; ``exclusive``: every job asks for more than half
    a node's cores, so no two jobs ever share a node."""
    n_nodes = draw(st.integers(1, max_nodes))
    n = draw(st.integers(1, 25))
    cap, gcap = draw(st.integers(1, 8)), draw(st.integers(0, 2))
    submit = np.cumsum(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))).astype(float)
    nodes = draw(st.lists(st.integers(1, n_nodes), min_size=n, max_size=n))
    limit = draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    run_time = [draw(st.integers(0, lim + 3)) for lim in limit]
    cores = draw(st.lists(st.integers(cap // 2 + 1 if exclusive else 0, cap), min_size=n, max_size=n))
    gpus = draw(st.lists(st.integers(0, gcap), min_size=n, max_size=n))
    memory = draw(st.lists(st.sampled_from([0.0, 100.0, 250.5, 500.0]), min_size=n, max_size=n))
    jobs = make_jobs(submit, nodes, limit, run_time)
    part = Partition("p", n_nodes, cores=cap, gpus=gcap, memory=500.0, sharing="shared")
    return part, jobs, (np.asarray(cores), np.asarray(gpus, dtype=np.int64), np.asarray(memory))


def _same(a, b):
    return (np.array_equal(a.begin, b.begin, equal_nan=True) and np.array_equal(a.end, b.end, equal_nan=True)
            and np.array_equal(a.node_start, b.node_start) and np.array_equal(a.node_list, b.node_list))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(exclusive=True))
def test_reserving_every_job_is_shared_conservative_when_no_two_jobs_share_a_node(case):
    """Every limit off, ``bf_interval=0``, reserve=0, jobs run to their limit: every waiting job
    is reserved at its earliest fit at every pass, as ``conservative`` does, but Slurm holds a
    reservation's nodes whole and ``conservative`` only its request. When every job asks for
    more than half a node's cores (single-core nodes, whole-node requests) nothing fits beside
    a reservation either way, and the two are the same bit for bit."""
    part, jobs, (cores, gpus, memory) = case
    limit = np.asarray(jobs.time_limit, dtype=float)
    a = simulate_shared(jobs, limit, part, cores, gpus, memory, backfill="conservative", kernel="reference")
    b = simulate_shared(jobs, limit, part, cores, gpus, memory, backfill="slurm", kernel="reference",
                        backfill_params=EXACT)
    assert _same(a, b)


@st.composite
def tie_free_on_one_node(draw):
    """One shared node; every job submitted at 0 and run to its limit, the limits distinct
    powers of two: every event time is the sum of the limits of one chain of jobs, so no job
    can end exactly at another's reserved start (the one place where ``easy_drevt``'s strict
    test and Slurm's differ)."""
    n = draw(st.integers(1, 20))
    cap, gcap = draw(st.integers(1, 8)), draw(st.integers(0, 2))
    limit = draw(st.permutations([2.0 ** i for i in range(n)]))
    cores = draw(st.lists(st.integers(0, cap), min_size=n, max_size=n))
    gpus = draw(st.lists(st.integers(0, gcap), min_size=n, max_size=n))
    memory = draw(st.lists(st.sampled_from([0.0, 100.0, 250.5, 500.0]), min_size=n, max_size=n))
    jobs = make_jobs([0.0] * n, [1] * n, limit, limit)
    part = Partition("p", 1, cores=cap, gpus=gcap, memory=500.0, sharing="shared")
    return part, jobs, (np.asarray(cores), np.asarray(gpus, dtype=np.int64), np.asarray(memory))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tie_free_on_one_node())
def test_one_reservation_on_a_single_node_is_easy_without_the_extra_resources_rule(case):
    """Every limit off, ``bf_interval=0``, one reservation (``bf_job_part_count_reserve=1``), one
    node: the head is reserved at its shadow time, and as the reservation holds the node whole a
    later job starts now only if it fits now and ends by then -- EASY without its
    extra-resources rule, i.e. ``easy_drevt`` but for ties at the shadow time (Slurm's
    reservation is ``[start, end)``, so a job may end exactly when it starts; ``easy_drevt`` is
    strict), which this workload cannot have."""
    part, jobs, (cores, gpus, memory) = case
    rt = jobs.actual_run_time
    a = simulate_shared(jobs, rt, part, cores, gpus, memory, backfill="easy_drevt", kernel="reference")
    b = simulate_shared(jobs, rt, part, cores, gpus, memory, backfill="slurm", kernel="reference",
                        backfill_params=EASY)
    assert _same(a, b)


# ------------------------------------------------------------------------------- slurm.conf
SLURM_CONF = """\
ClusterName=small
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
{params}NodeName=n[1-2] CPUs=4
PartitionName=batch Nodes=n[1-2] Default=YES MaxTime=1-00:00:00
"""
# blocked_then_small at minute scale: J0 2 x 2 cores for 6000 s; J1 (t=60) 2 x 4 cores,
# blocked; J2 (t=120) 1 x 1 core for 600 s, which fits beside J0 and ends before J1 can start.
TRACE = ("job_submit_time,num_nodes,num_cores,queue,time_limit,actual_run_time\n"
         "0,2,2,batch,6000,6000\n60,2,4,batch,6000,6000\n120,1,1,batch,600,600\n")


def test_drevt_sim_runs_slurms_backfill_on_a_cons_tres_pool(tmp_path, capsys):
    """Through ``drevt-sim --slurm-conf``: with Slurm's defaults the cycle at 120 (every 30 s
    from 0) backfills J2 at 120, as EASY does; with ``bf_max_job_test=1`` the cycle tests only J1,
    so J2 waits until J1 has started and ended (12000), unlike EASY."""
    trace = tmp_path / "jobs.csv"
    trace.write_text(TRACE)
    begins = {}
    for name, params, extra in (("defaults", "", []), ("tight", "SchedulerParameters=bf_max_job_test=1\n", []),
                                ("easy", "SchedulerParameters=bf_max_job_test=1\n", ["--backfill_policy", "easy"])):
        conf = tmp_path / f"{name}.conf"
        conf.write_text(SLURM_CONF.format(params=params))
        out, stats = tmp_path / f"{name}.csv", tmp_path / f"{name}.json"
        code = sim_main([str(trace), "--queues", "all", "--slurm-conf", str(conf), "--quiet",
                         "--stats", str(stats), "--output", str(out), *extra])
        assert code == 0, capsys.readouterr().err
        run_info = json.loads(stats.read_text())["run"]
        assert run_info["backfill_policy"] == ("easy" if name == "easy" else "slurm")
        with out.open() as f:
            begins[name] = [float(r["begin_time"]) for r in csv.DictReader(f)]
    assert begins["defaults"] == [0, 6000, 120]
    assert begins["tight"] == [0, 6000, 12000]
    assert begins["easy"] == [0, 6000, 120]


def test_a_job_the_main_scheduler_passes_over_waits_for_the_next_cycle_on_an_idle_pool():
    """1 node x 4 cores, default_queue_depth=0 (the main scheduler looks at one job), cycles
    every 30 s. J0: t=0, 4 cores, 10 s. J1, J2: t=5, 1 core, 100 s each. At 10 (J0 ends) the
    main scheduler starts J1 only; nothing else happens until the cycle at 30, which starts J2
    (the pool is never idle here, but J2 waits for a cycle, not an event)."""
    one = Partition("p", 1, cores=4, sharing="shared")
    jobs = make_jobs([0, 5, 5], [1, 1, 1], [10, 100, 100], [10, 100, 100])
    assert starts(run(jobs, [4, 1, 1], one, **{**EXACT, "bf_interval": 30, "default_queue_depth": 0})) \
        == [0, 10, 30]


SETTINGS = st.fixed_dictionaries({
    "bf_interval": st.sampled_from([0, 3, 30]), "bf_max_job_test": st.sampled_from([1, 2, 500]),
    "bf_window": st.sampled_from([0.05, 1, 1440]), "bf_resolution": st.sampled_from([0, 1, 7, 60]),
    "bf_max_job_user": st.sampled_from([0, 1]), "bf_max_job_part": st.sampled_from([0, 2]),
    "bf_job_part_count_reserve": st.sampled_from([0, 1]), "default_queue_depth": st.sampled_from([0, 100]),
    "sched_interval": st.sampled_from([0, 60])})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), SETTINGS, st.booleans())
def test_no_node_is_ever_over_its_resources_under_any_settings(case, params, enforce):
    """Whatever the limits, every job runs once, after its submission, on distinct nodes that
    hold its cores, GPUs and memory beside every other job running there."""
    part, jobs, (cores, gpus, memory) = case
    s = simulate_shared(jobs, jobs.actual_run_time, part, cores, gpus, memory, backfill="slurm",
                        kernel="reference", enforce_limits=enforce, backfill_params=params)
    assert (s.begin >= jobs.submit).all()
    for j in range(len(jobs)):
        assert len(set(s.nodes_of(j))) == jobs.num_nodes[j]
    cap = (part.cores, part.gpus, math.ceil(part.memory * 1024))
    kib = np.ceil(memory * 1024).astype(np.int64)
    for peak in _max_use_per_node(s, jobs, cores, gpus, kib, part.nodes):
        assert peak[0] <= cap[0] and peak[1] <= cap[1] and peak[2] <= cap[2]
