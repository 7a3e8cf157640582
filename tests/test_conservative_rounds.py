"""Conservative backfilling's compression rounds, hand-computed: a job the first round leaves in
place moves in the second, into room that a lower-priority job's move freed.

Whatever lets the compiled kernel pass over jobs in a later round (the O(1) test of
``conservative_steps``; any test of what grew since a job was last looked at) must still look
at such a job: the room it moves into opened after it was looked at, before its reservation,
and exactly as wide as it needs. Notation as in ``test_engine_scenarios.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from drevt_sweep.sim.engine import simulate
from jobtable_factory import make_jobs

# 2 nodes; fcfs. X and Y start at 0 (1 node each): X's limit 100 but it ends at 10, Y ends at 50
# on time. A (2 nodes, L 40) and B (1 node, L 30) arrive at 1:
#   at 1 A is reserved at 100 (both nodes free only once X's estimated end is reached) and B
#   at 50 (one node free from Y's end to A's reservation: [50, 100) holds its 30).
#   at 10 X ends early (one node free on [10, 100)): round 1 looks at A first: two nodes free
#   for 40 before 100? [80, 100) only (B holds one node on [50, 80)): no, A stays at 100. B:
#   one node free on [10, 40): it moves to 10 (and starts). Its old slot [50, 80) is free
#   again, so [50, 100) has both nodes free: round 2 moves A from 100 to 50.
SUBMIT = [0, 0, 1, 1]
NODES = [1, 1, 2, 1]
LIMIT = [100, 50, 40, 30]
RUN = [10, 50, 40, 30]
BEGIN = [0, 0, 50, 10]


@pytest.mark.parametrize("kernel", ["reference", "fast"])
@pytest.mark.parametrize("compression", ["compress_first", "interleaved"])
def test_second_round_moves_a_job_into_room_a_later_move_freed(kernel, compression):
    jobs = make_jobs(SUBMIT, NODES, LIMIT, RUN)
    s = simulate(jobs, jobs.actual_run_time, 2, backfill="conservative", compression=compression, kernel=kernel)
    assert s.begin.tolist() == BEGIN
    assert s.end.tolist() == [10, 50, 90, 40]


def test_one_pass_moves_it_at_the_next_end_instead():
    # one_pass runs one round per end: A stays at 100 at 10, and moves at B's end (40) into
    # [50, 100) -- the same begin, one event later.
    jobs = make_jobs(SUBMIT, NODES, LIMIT, RUN)
    for kernel in ("reference", "fast"):
        s = simulate(jobs, jobs.actual_run_time, 2, backfill="conservative", compression="one_pass", kernel=kernel)
        assert s.begin.tolist() == BEGIN


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_long_queue_many_rounds_as_the_reference(seed):
    """Long queues with many compression rounds per pass (jobs end long before their limits):
    the rounds' tests that pass over jobs or whole blocks of the queue (the versions test of
    ``conservative_steps``) must leave the schedule the reference computes."""
    rng = np.random.default_rng(seed)
    n = 400
    submit = np.sort(rng.integers(0, 4000, n)).astype(float)
    nodes = rng.choice([1, 2, 3, 4, 6, 8], n)
    limit = rng.choice([50.0, 100.0, 200.0, 400.0], n)
    run = np.maximum(1.0, np.round(limit * rng.uniform(0.05, 1.0, n)))
    jobs = make_jobs(submit.tolist(), nodes.tolist(), limit.tolist(), run.tolist())
    ref, fast = (simulate(jobs, jobs.actual_run_time, 8, backfill="conservative", kernel=k)
                 for k in ("reference", "fast"))
    assert fast.begin.tolist() == ref.begin.tolist()


# 1 node; fcfs. X (limit 30) starts at 0 and ends at 10. A (limit L) and B (limit 20) arrive at 1:
# A is reserved at X's estimated end, 30, and B after A. At 10 A moves to 10: with L = 50 its new
# slot [10, 60) overlaps its old one [30, 80) (the move changes the profile only on [10, 30) and
# [60, 80)), with L = 15 they are apart ([10, 25) and [30, 45)). B then moves to A's new end.
@pytest.mark.parametrize("kernel", ["reference", "fast"])
@pytest.mark.parametrize("a_limit, b_begin", [(50, 60), (15, 25)])
def test_a_move_within_its_old_slot_and_apart_from_it(kernel, a_limit, b_begin):
    jobs = make_jobs([0, 1, 1], [1, 1, 1], [30, a_limit, 20], [10, a_limit, 20])
    s = simulate(jobs, jobs.actual_run_time, 1, backfill="conservative", kernel=kernel)
    assert s.begin.tolist() == [0, 10, b_begin]
    assert s.end.tolist() == [10, 10 + a_limit, b_begin + 20]
