"""Hand-computed schedules for the simulation engine.

Every expected begin time below was worked out by hand from the semantics in
``drevt_sweep/engine.py`` and ``drevt_sweep/policies/`` (reasoning in the comments), not by
running the code. Notation: Jk = row k; "L" = time_limit; "run" = actual run time;
"est end" = begin + L (what the scheduler plans with).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from drevt_sweep.sim.engine import BACKFILL_POLICIES, PRIORITY_POLICIES, replay, simulate
from drevt_sweep.errors import ConfigError
from jobtable_factory import make_jobs

ALL_BACKFILLS = ("none", "easy", "conservative", "easy_drevt")


def sim(submit, nodes, limit, run, total, **kw):
    jobs = make_jobs(submit, nodes, limit, run)
    return simulate(jobs, jobs.actual_run_time, total, **kw)


def begins(schedule):
    return schedule.begin.tolist()


BASIC_PRIORITIES = ("fcfs", "sjf", "ljf", "smallest", "largest")


def test_policy_names_are_the_documented_ones():
    assert PRIORITY_POLICIES == BASIC_PRIORITIES + ("f1", "f2", "f3", "f4", "wfp3", "unicef", "multifactor")
    # plus Slurm's backfill, whose schedules depend on its bf_* settings (tests/test_slurm_backfill.py)
    assert BACKFILL_POLICIES == ALL_BACKFILLS + ("slurm",)


# --- 1. The seeds' "Testing" example --------------------------------------------------------
# test.csv: submits 0/50/120, 10 nodes each, limits 100/50/80; recorded begin/end
# 0-100, 100-150, 150-230 (so actual run times 100, 50, 80).
SEED_SUBMIT = [0, 50, 120]
SEED_NODES = [10, 10, 10]
SEED_LIMIT = [100, 50, 80]
SEED_BEGIN = [0, 100, 150]
SEED_END = [100, 150, 230]


def test_seed_example_replay_is_sequential():
    # The trace carries begin_time, so it is a replay: times are the recorded ones, exactly,
    # whatever the machine size. That is where the seeds' "sequential execution" comes from.
    jobs = make_jobs(SEED_SUBMIT, SEED_NODES, SEED_LIMIT, begin=SEED_BEGIN, end=SEED_END)
    s = replay(jobs, 100)
    assert begins(s) == [0, 100, 150]
    assert s.end.tolist() == [100, 150, 230]
    assert s.warnings["replay_overcommit_instants"] == 0


@pytest.mark.parametrize("backfill", ALL_BACKFILLS)
def test_seed_example_simulated_on_100_nodes_overlaps(backfill):
    # Simulated with the actual run times (100, 50, 80) on 100 nodes, 10-node jobs never wait:
    # J0 [0,100); J1 arrives at 50, 90 nodes free -> [50,100); J2 arrives at 120 -> [120,200).
    # So the seeds' "sequential, no overlap" is true for replay only, not for simulation.
    s = sim(SEED_SUBMIT, SEED_NODES, SEED_LIMIT, [100, 50, 80], 100, backfill=backfill)
    assert begins(s) == [0, 50, 120]
    assert s.end.tolist() == [100, 100, 200]


@pytest.mark.parametrize("backfill", ALL_BACKFILLS)
def test_seed_example_simulated_on_10_nodes_is_sequential(backfill):
    # On a 10-node machine each job needs the whole machine: J0 [0,100); J1 (submit 50) waits
    # for J0 -> [100,150); J2 (submit 120) waits for J1 -> [150,230): the seeds' three lines.
    s = sim(SEED_SUBMIT, SEED_NODES, SEED_LIMIT, [100, 50, 80], 10, backfill=backfill)
    assert begins(s) == SEED_BEGIN
    assert s.end.tolist() == SEED_END


# --- 2. Backfill allowed / 3. blocked by time --------------------------------------------------
# 10 nodes. J0: t=0, 6 nodes, L=run=100 -> starts at 0, est end 100.
# J1: t=1, 8 nodes, L=run=50. Free 4 < 8: J1 is the blocked head. Shadow: J0 frees 6 at 100
#     -> 10 free >= 8, shadow 100, extra = 10 - 8 = 2.
# J2: t=2, 4 nodes, L=run=X.


@pytest.mark.parametrize("backfill", ["easy", "easy_drevt", "conservative"])
def test_backfill_allowed_when_done_before_shadow(backfill):
    # X=90: J2 fits in the 4 free nodes and ends by 2+90 = 92 <= 100 (also < 100, so the strict
    # DR_EVT test passes too). Conservative: J1 holds [100,150) with 8 nodes; J2 needs 4 nodes
    # over [2,92), free is 4 until 100 -> fits at 2. J1 starts at 100 when J0 ends.
    s = sim([0, 1, 2], [6, 8, 4], [100, 50, 90], [100, 50, 90], 10, backfill=backfill)
    assert begins(s) == [0, 100, 2]


def test_no_backfill_keeps_order():
    # Same jobs without backfilling: J2 waits behind J1. At 100 J1 starts (2 nodes left),
    # J2 needs 4 -> waits for J1's end at 150.
    s = sim([0, 1, 2], [6, 8, 4], [100, 50, 90], [100, 50, 90], 10, backfill="none")
    assert begins(s) == [0, 100, 150]


@pytest.mark.parametrize("backfill", ALL_BACKFILLS)
def test_backfill_blocked_by_time(backfill):
    # X=99: J2 would end at 101 > shadow 100 and needs 4 > extra 2 nodes -> may not start.
    # At 100 J0 ends, J1 starts (2 free), J2 still does not fit; at 150 J1 ends, J2 starts.
    # Conservative: profile free = 4 on [2,100), 2 on [100,150) (J1), 10 after; J2 needs 4
    # over 99 s: [2,101) crosses the 2-node step -> earliest fit 150.
    s = sim([0, 1, 2], [6, 8, 4], [100, 50, 99], [100, 50, 99], 10, backfill=backfill)
    assert begins(s) == [0, 100, 150]


# --- 4. Allowed by extra nodes (and the DR_EVT variant refusing it) --------------------------
# 10 nodes. J0: t=0, 6 nodes, L=run=100. J1: t=1, 7 nodes, L=run=50 -> blocked head,
# shadow 100, extra = 10 - 7 = 3.
# J2: t=2, 2 nodes, L=run=500: ends at 502 > 100, but 2 <= extra 3 -> EASY starts it at 2;
#     extra becomes 1.
# J3: t=3, 2 nodes, L=run=500: fits the 2 free nodes, but ends at 503 > 100 and 2 > extra 1
#     -> waits. At 100 J0 ends: 8 free -> J1 starts (1 free); J3 is now the blocked head and
#     starts when J1 ends at 150.
EXTRA = dict(submit=[0, 1, 2, 3], nodes=[6, 7, 2, 2], limit=[100, 50, 500, 500], run=[100, 50, 500, 500])


def test_easy_backfills_with_extra_nodes():
    s = sim(**EXTRA, total=10, backfill="easy")
    assert begins(s) == [0, 100, 2, 150]


def test_easy_drevt_has_no_extra_nodes_rule():
    # DR_EVT: J2 (ends 502, not < 100) may not pass. At 100 J0 ends: J1 starts (3 free), then
    # J2 fits in priority order (1 free); J3 (2 nodes) waits for J1's end at 150.
    s = sim(**EXTRA, total=10, backfill="easy_drevt")
    assert begins(s) == [0, 100, 100, 150]


def test_easy_extra_nodes_are_used_up_within_a_pass():
    # 10 nodes. J0: t=0, 6 nodes, L=run=100. J1: t=1, 7 nodes, L=run=50 -> blocked head,
    # shadow 100, extra 3. J2 and J3 both arrive at 2 (2 nodes, L=run=500 each): in that one
    # pass J2 takes 2 of the 3 extra nodes (1 left); J3 ends after 100 and 2 > 1 -> waits.
    # At 100: 2 + 6 = 8 free -> J1 starts (1 free); J3 starts when J1 ends, at 150.
    s = sim([0, 1, 2, 2], [6, 7, 2, 2], [100, 50, 500, 500], [100, 50, 500, 500], 10, backfill="easy")
    assert begins(s) == [0, 100, 2, 150]


def test_easy_extra_nodes_count_everything_freed_at_the_shadow_time():
    # 10 nodes. J0 and J1 at t=0, 4 nodes each, L=run=100 (2 free). J2: t=1, 5 nodes, L=run=10
    # -> blocked. Shadow: J0's release at 100 already gives 2 + 4 = 6 >= 5, and J1 also frees
    # its 4 at 100, so 10 are free then: extra = 10 - 5 = 5 (not 1).
    # J3: t=2, 2 nodes, L=run=500: ends after 100 but 2 <= 5 -> starts at 2.
    # At 100 J2 starts (10 - 2 = 8 free).
    s = sim([0, 0, 1, 2], [4, 4, 5, 2], [100, 100, 10, 500], [100, 100, 10, 500], 10, backfill="easy")
    assert begins(s) == [0, 0, 100, 2]
    # DR_EVT: no extra-nodes rule -> J3 waits; at 100 J2 starts (5 free), then J3 fits too.
    s = sim([0, 0, 1, 2], [4, 4, 5, 2], [100, 100, 10, 500], [100, 100, 10, 500], 10, backfill="easy_drevt")
    assert begins(s) == [0, 0, 100, 100]


def test_conservative_matches_easy_on_extra_nodes_case():
    # J1 reserved [100,150) (profile: 4 free on [1,100), 3 on [100,150), 10 after).
    # J2 (2 nodes, 500 s) fits from 2 throughout -> starts at 2 (then 2 / 1 / 8 / 10 free).
    # J3 (2 nodes, 500 s): at 3 fine until 100 where only 1 is free -> next candidate 150,
    # 8 free then 10: reserved 150. J0 and J1 end on time, so nothing moves.
    s = sim(**EXTRA, total=10, backfill="conservative")
    assert begins(s) == [0, 100, 2, 150]


# --- 5. Early completion frees the head ------------------------------------------------------
@pytest.mark.parametrize("backfill", ALL_BACKFILLS)
def test_early_completion_frees_the_head(backfill):
    # 10 nodes. J0: t=0, 10 nodes, L=100 but run=30 -> [0,30).
    # J1: t=5, 10 nodes, L=run=50: planned for 100 (J0's est end), but J0 ends at 30 -> J1
    #     starts at 30 (conservative: J0's early end triggers compression, 100 -> 30), ends 80.
    # J2: t=6, 5 nodes, L=run=60: no free node before 30; at 30 J1 takes all 10; J2 starts
    #     when J1 ends at 80.
    s = sim([0, 5, 6], [10, 10, 5], [100, 50, 60], [30, 50, 60], 10, backfill=backfill)
    assert begins(s) == [0, 30, 80]
    assert s.end.tolist() == [30, 80, 140]


# --- 6. Simultaneous submits: file order breaks ties; <= vs strict < at the shadow -------------
# 4 nodes. All submitted at 0, in file order J0 (2 nodes), J1 (3), J2 (2), L=run=10 each.
# Pass at 0: J0 starts (2 free); J1 (3) blocked. Shadow: J0 frees 2 at 10 -> 4 >= 3: shadow
# 10, extra 1.


def test_simultaneous_submits_easy():
    # J2 fits (2 free) and ends at 0+10 = 10 <= shadow 10 -> starts at 0. At 10 J0 and J2 end
    # (completions first), J1 starts.
    s = sim([0, 0, 0], [2, 3, 2], [10, 10, 10], [10, 10, 10], 4, backfill="easy")
    assert begins(s) == [0, 10, 0]


@pytest.mark.parametrize("backfill", ["none", "easy_drevt"])
def test_simultaneous_submits_strict_or_none(backfill):
    # none: J2 waits behind J1. DR_EVT: 10 < 10 is false and 2 > extra... (no extra rule): J2
    # waits. At 10 J1 starts (1 free), J2 (2) waits for J1's end at 20.
    s = sim([0, 0, 0], [2, 3, 2], [10, 10, 10], [10, 10, 10], 4, backfill=backfill)
    assert begins(s) == [0, 10, 20]


def test_simultaneous_submits_conservative():
    # Placed in FCFS (= file) order at 0: J0 fits at 0 -> starts; J1 (3 nodes) -> 10,
    # [10,20); J2 (2 nodes, 10 s): 2 free on [0,10), then 1 on [10,20) -> fits [0,10) -> 0.
    s = sim([0, 0, 0], [2, 3, 2], [10, 10, 10], [10, 10, 10], 4, backfill="conservative")
    assert begins(s) == [0, 10, 0]


# --- 7. Oversized job --------------------------------------------------------------------------
@pytest.mark.parametrize("backfill", ALL_BACKFILLS)
def test_oversized_job_is_rejected_and_never_blocks(backfill):
    # 4 nodes. J0 asks for 5 -> rejected up front (NaN times, counted). J1 (t=1, 2 nodes) is
    # not blocked by it and starts at once; J2 (t=1, 4 nodes) waits for J1 (ends 11).
    s = sim([0, 1, 1], [5, 2, 4], [10, 10, 10], [10, 10, 10], 4, backfill=backfill)
    assert s.rejected.tolist() == [True, False, False]
    assert math.isnan(s.begin[0]) and math.isnan(s.end[0]) and math.isnan(s.run_time[0])
    assert s.begin[1:].tolist() == [1, 11]
    assert s.warnings["rejected_oversized"] == 1
    assert not s.killed[0]


# --- 8. Killed job -----------------------------------------------------------------------------
@pytest.mark.parametrize("backfill", ALL_BACKFILLS)
def test_job_killed_at_its_limit(backfill):
    # 4 nodes. J0: 4 nodes, L=10, run=15 -> killed at 10 (run_time 10, end 10).
    # J1: t=1, 4 nodes, L=run=5 -> starts at 10, ends 15.
    s = sim([0, 1], [4, 4], [10, 5], [15, 5], 4, backfill=backfill)
    assert s.killed.tolist() == [True, False]
    assert s.run_time.tolist() == [10, 5]
    assert begins(s) == [0, 10]
    assert s.end.tolist() == [10, 15]


@pytest.mark.parametrize("backfill", ALL_BACKFILLS)
def test_limits_not_enforced_job_outlives_its_limit(backfill):
    # Same without enforcement: J0 runs its full 15 s; J1 starts at 15.
    s = sim([0, 1], [4, 4], [10, 5], [15, 5], 4, backfill=backfill, enforce_limits=False)
    assert s.killed.tolist() == [False, False]
    assert s.run_time.tolist() == [15, 5]
    assert begins(s) == [0, 15]


def test_easy_overdue_job_only_extra_nodes_may_pass():
    # Limits not enforced. 10 nodes. J0: t=0, 6 nodes, L=10, run=100 (overdue from 10 on).
    # J1: t=1, 8 nodes, L=run=10 -> blocked head (4 free); shadow 10, extra 2.
    # J2: t=20, 2 nodes, L=run=1000. J0 is overdue: assumed to end right after 20, so the
    #     shadow is nextafter(20) and extra = 4 + 6 - 8 = 2; J2 cannot end by then but uses
    #     2 <= 2 extra nodes -> starts at 20 (2 free left).
    # J3: t=21, 3 nodes, L=run=5: 3 > 2 free -> waits.
    # At 100 J0 ends: 8 free -> J1 starts (0 free). J1 ends at 110 -> J3 starts at 110.
    s = sim([0, 1, 20, 21], [6, 8, 2, 3], [10, 10, 1000, 5], [100, 10, 1000, 5], 10,
            backfill="easy", enforce_limits=False)
    assert begins(s) == [0, 100, 20, 110]
    # Enforced: J0 is killed at 10, J1 runs [10,20); J2 arrives at 20 as J1 ends -> starts;
    # J3 at 21 finds 8 free -> starts.
    s = sim([0, 1, 20, 21], [6, 8, 2, 3], [10, 10, 1000, 5], [100, 10, 1000, 5], 10, backfill="easy")
    assert begins(s) == [0, 10, 20, 21]
    assert s.killed.tolist() == [True, False, False, False]


# --- 9. Conservative vs EASY differ ------------------------------------------------------------
# 10 nodes. J0: t=0, 6 nodes, L=run=100.
# J1: t=1, 6 nodes, L=run=10: 4 free -> blocked; shadow 100, extra 10 - 6 = 4.
# J2: t=2, 10 nodes, L=run=10: does not fit.
# J3: t=3, 4 nodes, L=run=1000.
CONS = dict(submit=[0, 1, 2, 3], nodes=[6, 6, 10, 4], limit=[100, 10, 10, 1000], run=[100, 10, 10, 1000])


def test_easy_lets_a_backfilled_job_delay_the_second_job():
    # EASY protects only the head: J3 fits (4 free), ends long after 100 but uses 4 <= extra 4
    # -> starts at 3. At 100 J0 ends: 6 free -> J1 [100,110). At 110 J2 needs 10 but J3 holds
    # 4 until 1003 -> J2 starts at 1003.
    s = sim(**CONS, total=10, backfill="easy")
    assert begins(s) == [0, 100, 1003, 3]


@pytest.mark.parametrize("backfill", ["conservative", "none", "easy_drevt"])
def test_conservative_protects_every_reservation(backfill):
    # Conservative: J1 reserved [100,110), J2 [110,120) (all 10 nodes). Profile for J3:
    # 4 free on [3,100), 4 on [100,110), 0 on [110,120), 10 after -> J3 (4 nodes, 1000 s)
    # cannot start before 120. Starts: J1 100, J2 110, J3 120.
    # none gives the same (J3 waits its turn), and so does DR_EVT's EASY (J3 does not end
    # before the shadow and there is no extra-nodes rule).
    s = sim(**CONS, total=10, backfill=backfill)
    assert begins(s) == [0, 100, 110, 120]


# --- 10. Each priority order ---------------------------------------------------------------------
# 10 nodes. J0: t=0, 10 nodes, L=run=100 fills the machine until 100. Then
#   A: t=1, 7 nodes, L=run=40   B: t=2, 9 nodes, L=run=20
#   C: t=3, 6 nodes, L=run=30   D: t=4, 8 nodes, L=run=20
# Any two of A..D need > 10 nodes, so they run one at a time from 100 on, in priority order,
# and nothing can be backfilled (after a head starts at most 4 nodes are free).
PRIO = dict(submit=[0, 1, 2, 3, 4], nodes=[10, 7, 9, 6, 8], limit=[100, 40, 20, 30, 20], run=[100, 40, 20, 30, 20])
PRIO_EXPECTED = {
    # fcfs: A 100-140, B 140-160, C 160-190, D 190-210
    "fcfs": [0, 100, 140, 160, 190],
    # sjf (L asc, ties FCFS): B(20) 100-120, D(20) 120-140, C(30) 140-170, A(40) 170-210
    "sjf": [0, 170, 100, 140, 120],
    # ljf (L desc, ties FCFS): A(40) 100-140, C(30) 140-170, B(20) 170-190, D(20) 190-210
    "ljf": [0, 100, 170, 140, 190],
    # smallest: C(6) 100-130, A(7) 130-170, D(8) 170-190, B(9) 190-210
    "smallest": [0, 130, 190, 100, 170],
    # largest: B(9) 100-120, D(8) 120-140, A(7) 140-180, C(6) 180-210
    "largest": [0, 140, 100, 180, 120],
}


@pytest.mark.parametrize("backfill", ["none", "easy", "easy_drevt"])
@pytest.mark.parametrize("priority", BASIC_PRIORITIES)
def test_priority_order(priority, backfill):
    s = sim(**PRIO, total=10, priority=priority, backfill=backfill)
    assert begins(s) == PRIO_EXPECTED[priority]


@pytest.mark.parametrize("priority", BASIC_PRIORITIES)
def test_conservative_reservations_follow_arrival_when_nothing_ends_early(priority):
    # Conservative places each newcomer without delaying existing reservations: A [100,140),
    # B [140,160), C [160,190), D [190,210) as they arrive, whatever the priority; J0 ends on
    # time so nothing is re-planned. (Priority decides compression order; see the next test.)
    s = sim(**PRIO, total=10, priority=priority, backfill="conservative")
    assert begins(s) == PRIO_EXPECTED["fcfs"]


# J0 now ends early, at 50 (run 50 < L 100): conservative re-plans in priority order.
PRIO_EARLY = dict(PRIO, run=[50, 40, 20, 30, 20])


def test_conservative_compression_follows_priority_sjf():
    # Reservations before 50 (see above): A 100, B 140, C 160, D 190. At 50 J0 ends early ->
    # re-plan in sjf order B, D, C, A, each taken out and put back at its earliest fit:
    #   B (9, 20 s): 10 free at 50 until A at 100 -> 50 (runs [50,70)).
    #   D (8, 20 s): 1 free at 50; 10 free on [70,100) -> 70.
    #   C (6, 30 s): [90,120) hits A's 7 nodes at 100 (3 free); next: 10 free from 140 -> 140.
    #   A (7, 40 s): out of [100,140), 10 free on [90,140) -> 90.
    # Second round: C now fits at 130 (A ends 130, C's old [140,170) released) -> 130; nothing
    # else moves; third round: no change. B starts at 50, D 70, A 90, C 130 (all run = L).
    s = sim(**PRIO_EARLY, total=10, priority="sjf", backfill="conservative")
    assert begins(s) == [0, 90, 50, 130, 70]


def test_conservative_compression_follows_priority_fcfs():
    # Same with fcfs order A, B, C, D: A -> 50 ([50,90)), B -> 90, C -> 110, D -> 140: the
    # plain FCFS sequence, which is also what `none` does.
    s = sim(**PRIO_EARLY, total=10, priority="fcfs", backfill="conservative")
    assert begins(s) == [0, 50, 90, 110, 140]
    s = sim(**PRIO_EARLY, total=10, priority="fcfs", backfill="none")
    assert begins(s) == [0, 50, 90, 110, 140]


# --- 11. Zero run time and exact end ---------------------------------------------------------------
@pytest.mark.parametrize("backfill", ALL_BACKFILLS)
def test_zero_run_time_job_frees_its_nodes_at_the_same_instant(backfill):
    # 2 nodes. J0 and J1 submitted at 0, 2 nodes each; J0 runs 0 s. Pass at 0 starts J0;
    # its completion is an event at 0 too, after which J1 starts, still at 0.
    s = sim([0, 0], [2, 2], [10, 5], [0, 5], 2, backfill=backfill)
    assert begins(s) == [0, 0]
    assert s.end.tolist() == [0, 5]


def test_end_is_begin_plus_run_time_in_float64():
    # Non-integral times: end must be exactly begin + run_time as float64 addition.
    s = sim([0.1, 0.2], [1, 1], [1.0, 2.5], [0.7, 0.3], 1, backfill="easy")
    # J0 [0.1, 0.1+0.7); J1 waits for it.
    assert s.begin[0] == 0.1 and s.end[0] == 0.1 + 0.7
    assert s.begin[1] == 0.1 + 0.7 and s.end[1] == (0.1 + 0.7) + 0.3


# --- 12. Input checks ----------------------------------------------------------------------------
def test_unknown_policy_names_list_the_choices():
    jobs = make_jobs([0], [1], [10], [5])
    with pytest.raises(ConfigError, match="sjf"):
        simulate(jobs, jobs.actual_run_time, 4, priority="shortest")
    with pytest.raises(ConfigError, match="conservative"):
        simulate(jobs, jobs.actual_run_time, 4, backfill="greedy")


@pytest.mark.parametrize("total", [0, -3, 2.5, True])
def test_bad_total_nodes(total):
    jobs = make_jobs([0], [1], [10], [5])
    with pytest.raises(ConfigError, match="total_nodes"):
        simulate(jobs, jobs.actual_run_time, total)
    with pytest.raises(ConfigError, match="total_nodes"):
        replay(make_jobs([0], [1], [10], begin=[0], end=[5]), total)


def test_bad_run_times():
    jobs = make_jobs([0, 1], [1, 1], [10, 10])  # no actual run time: NaN
    with pytest.raises(ConfigError, match="run time"):
        simulate(jobs, jobs.actual_run_time, 4)
    with pytest.raises(ConfigError, match="run time"):
        simulate(jobs, np.array([1.0, -1.0]), 4)
    with pytest.raises(ValueError, match="shape"):
        simulate(jobs, np.array([1.0]), 4)
    # a rejected job's run time is never looked at
    big = make_jobs([0], [9], [10])
    s = simulate(big, big.actual_run_time, 4)
    assert s.rejected.tolist() == [True]


def test_numpy_integer_total_nodes_and_empty_table():
    jobs = make_jobs([], [], [], [])
    s = simulate(jobs, jobs.actual_run_time, np.int64(4))
    assert len(s) == 0 and s.total_nodes == 4 and s.warnings["rejected_oversized"] == 0


def test_unsorted_table_arrives_in_submit_order():
    # Readers sort by submit, but the engine does not rely on it: 1 node; row 0 submitted at 5,
    # row 1 at 0 (both 1 node, L=run=10). Row 1 runs [0,10); row 0 waits until 10.
    s = sim([5, 0], [1, 1], [10, 10], [10, 10], 1, backfill="easy")
    assert begins(s) == [10, 0]


# --- Compression orders (policy.compression) -------------------------------------------------
# 10 nodes, sjf. J0: t=0, 10 nodes, L=100, run 50 (ends early at 50). J1: t=1, 10 nodes,
# L=run=50: reserved at 100. J2: t=50, 10 nodes, L=run=10: arrives at the instant J0 ends early
# and ranks first under sjf (shorter limit).
ARRIVAL_AT_EARLY_END = dict(submit=[0, 1, 50], nodes=[10, 10, 10], limit=[100, 50, 10], run=[50, 50, 10])


@pytest.mark.parametrize("kernel", ["reference", "fast"])
@pytest.mark.parametrize("compression, expected", [
    # completions, then compress J1 (100 -> 50, [50,100)), then place J2 at its earliest fit: 100
    ("compress_first", [0, 50, 100]),
    # one sweep in sjf order: J2 (new) takes [50,60) first, then J1 is compressed only to 60
    ("interleaved", [0, 60, 50]),
    # one round over the waiting jobs (J1 -> 50), then the arrivals: as compress_first here
    ("one_pass", [0, 50, 100]),
])
def test_compression_order_decides_who_gets_capacity_freed_at_an_arrival(compression, expected, kernel):
    s = sim(**ARRIVAL_AT_EARLY_END, total=10, priority="sjf", backfill="conservative",
            compression=compression, kernel=kernel)
    assert begins(s) == expected


@pytest.mark.parametrize("kernel", ["reference", "fast"])
@pytest.mark.parametrize("compression, expected", [
    ("compress_first", [0, 90, 50, 130, 70]),  # rounds to a fixpoint (see the sjf test above)
    ("interleaved", [0, 90, 50, 130, 70]),  # no arrival at 50: the same
    # One round at 50: B -> 50, D -> 70, C -> 140 (A still held [100,140) when C was placed),
    # A -> 90; no second round, so C stays at 140 for now although A ends at 130. At 70 B ends
    # on time and the queue is re-placed once more (issue 27 item 1): C (6 nodes, 30 s; D holds
    # 8 until 90, A 7 on [90,130)) -> 130.
    ("one_pass", [0, 90, 50, 130, 70]),
])
def test_one_pass_compresses_once_without_a_fixpoint(compression, expected, kernel):
    s = sim(**PRIO_EARLY, total=10, priority="sjf", backfill="conservative", compression=compression, kernel=kernel)
    assert begins(s) == expected


# Issue 27 item 1: 100 nodes, fcfs. J1 t=0 30 nodes L=100 run 80; J2 t=22 90 nodes L=5 run 4;
# J3 t=63 50 nodes L=run=20; J4 t=75 50 nodes L=run=10.
ON_TIME_END = dict(submit=[0, 22, 63, 75], nodes=[30, 90, 50, 50], limit=[100, 5, 20, 10], run=[80, 4, 20, 10])


@pytest.mark.parametrize("kernel", ["reference", "fast"])
def test_one_pass_replaces_the_queue_when_a_job_ends_on_time(kernel):
    # Before 80: J2 reserved at 100 (J1's estimated end); J3 starts at 63 (70 free, ends 83);
    # J4 reserved at 83 ([83,93), beside J1). At 80 J1 ends early: one round in queue order
    # moves J2 to 93 (J3 holds 50 until 83, then J4's [83,93)) and J4 to 80 (runs [80,90)).
    # At 83 J3 ends on time: the queue is re-placed once (as pyss and batsched do at every
    # termination) and J2 moves to 90, J4's end; without that pass it would wait until 93.
    s = sim(**ON_TIME_END, total=100, backfill="conservative", compression="one_pass", kernel=kernel)
    assert begins(s) == [0, 90, 63, 80]
    assert s.end.tolist() == [80, 94, 83, 90]


def test_unknown_compression_order_is_a_clear_error():
    with pytest.raises(ConfigError, match="compression order"):
        sim(**PRIO, total=10, backfill="conservative", compression="fixpoint")
