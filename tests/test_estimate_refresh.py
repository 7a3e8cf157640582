"""When ``user_history`` predicts a waiting job (``estimate_refresh``, issue 27 item 2): once at
its submission (``submit``), or again before every scheduling pass (``every_pass``, as pyss).

pyss' golden EASY++ schedules ``plus_plus_easy.10`` and ``.11`` (its ``schedulers/tests.py``
checks every job's finish time; 100 processors, EASY + SJBF + the mean of the user's last two
finished jobs) are written out below: under ``every_pass`` every job ends as pyss says; under
``submit`` the six jobs named below differ, and only those. Each schedule is hand-checked in the
comments. The other fourteen golden files of that test agree under both settings.
"""

from __future__ import annotations

import numpy as np
import pytest

from drevt_sweep.errors import ConfigError
from drevt_sweep.sim.engine import simulate
from jobtable_factory import make_jobs

EASYPP = dict(estimate="user_history", backfill_order="sjbf", backfill="easy")

# (submit, limit, nodes, run, user, end in pyss' golden schedule); 100 processors.
# t=50: J2 ends; the head J3 (100 nodes) waits for J1's end at 100 (no extra nodes); J4, J5
# (1 s each, predicted 1 = their limit) backfill, 20 nodes free. t=51: they end, u7 now has two
# finished jobs (1, 1): J6 and J8 are predicted 1 s again (J8 was submitted at 41 with no history:
# its limit, 8). SJBF tries J6 (1), J8 (1), J7 (2): J6 takes the 20 free nodes. t=52: J8 (1)
# before J7 (2): J8 starts, really runs 8 s (corrected to its limit at 53), ends at 60; J7 then
# runs [60, 62). Predicted at submission, J8 keeps 8 > J7's 2: J7 runs [52, 54), J8 [54, 62).
PYSS_10 = [
    (0, 100, 80, 100, "uid_1", 100),
    (0, 50, 20, 50, "uid_2", 50),
    (1, 2000, 100, 2000, "uid_3", 2100),
    (38, 1, 10, 1, "uid_7", 51),
    (38, 1, 10, 1, "uid_7", 51),
    (39, 1, 20, 1, "uid_7", 52),
    (40, 2, 20, 2, "uid_8", 62),
    (41, 8, 20, 8, "uid_7", 60),
]
PYSS_10_SUBMIT_ENDS = {6: 54, 7: 62}  # 0-based rows that end elsewhere when predicted at submit

# t=50: J2 ends (20 nodes free; the head J3 waits for 100). J4-J6 (u7, limit 2, run 1; 7 + 7 + 6
# nodes) backfill, end at 51: u7's last two ran 1 s, so J9, J10 (limit 9, 10 nodes each) are
# predicted 1 s and go before J7, J8 (u2, no history, 2 s): J9, J10 run [51, 60) (corrected at
# 52), then J7, J8 [60, 62). Predicted at submission J9, J10 keep 9 s: J7, J8 run [51, 53), then
# J9, J10 [53, 62).
PYSS_11 = [
    (0, 100, 80, 100, "uid_1", 100),
    (0, 50, 20, 50, "uid_1", 50),
    (1, 2000, 100, 2000, "uid_10", 2100),
    (39, 2, 7, 1, "uid_7", 51),
    (39, 2, 7, 1, "uid_7", 51),
    (39, 2, 6, 1, "uid_7", 51),
    (40, 2, 10, 2, "uid_2", 62),
    (40, 2, 10, 2, "uid_2", 62),
    (41, 9, 10, 9, "uid_7", 60),
    (41, 9, 10, 9, "uid_7", 60),
]
PYSS_11_SUBMIT_ENDS = {6: 53, 7: 53, 8: 62, 9: 62}


def pyss_jobs(rows):
    submit, limit, nodes, run, user, _ = zip(*rows)
    return make_jobs(list(submit), list(nodes), list(limit), list(run), user=list(user))


@pytest.mark.parametrize("rows, submit_ends", [(PYSS_10, PYSS_10_SUBMIT_ENDS), (PYSS_11, PYSS_11_SUBMIT_ENDS)],
                         ids=["plus_plus_easy.10", "plus_plus_easy.11"])
def test_pyss_golden_easyplusplus_schedules(rows, submit_ends):
    jobs = pyss_jobs(rows)
    golden = [row[5] for row in rows]
    every_pass = simulate(jobs, jobs.actual_run_time, 100, estimate_refresh="every_pass", **EASYPP)
    assert every_pass.end.tolist() == golden
    at_submit = simulate(jobs, jobs.actual_run_time, 100, **EASYPP)
    assert at_submit.end.tolist() == [submit_ends.get(k, end) for k, end in enumerate(golden)]
    assert sum(a != b for a, b in zip(every_pass.end, at_submit.end)) == len(submit_ends)


# 4 nodes. J0, J1 (u, 1 node, 5 s) and J2 (w, 2 nodes, 20 s) start at 0; the head J3 (v, 4 nodes)
# is promised 20. J4 (u, 2 nodes, limit 100, runs 8) arrives at 2 before u has a finished job:
# planned 100, it can only go after J3 (EASY: 2 + 100 > 20; conservative: reserved at 70). At 5,
# J0 and J1 end on time: u's last two ran 5 s. every_pass predicts J4 5 s: it fits before 20 on
# the 2 free nodes and starts at 5 (conservative re-places the reservations). It outlives the
# prediction (corrected to its limit at 10) and ends at 13; J3 still starts at 20.
HOLE = dict(submit=[0, 0, 0, 1, 2], nodes=[1, 1, 2, 4, 2], limit=[5, 5, 20, 50, 100],
            run=[5, 5, 20, 50, 8], user=["u", "u", "w", "v", "u"])


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_a_waiting_job_predicted_again_fills_the_hole(backfill):
    jobs = make_jobs(**HOLE)
    kw = dict(estimate="user_history", backfill=backfill)
    every_pass = simulate(jobs, jobs.actual_run_time, 4, estimate_refresh="every_pass", **kw)
    assert every_pass.begin.tolist() == [0, 0, 0, 20, 5]
    assert simulate(jobs, jobs.actual_run_time, 4, **kw).begin.tolist() == [0, 0, 0, 20, 70]


def test_conservative_replans_when_a_prediction_changes():
    # The reservations the policy promises (on_reservation): J4's first one, at 70 behind J3,
    # moves to 5 when it is predicted again at 5, with J3's kept at 20.
    jobs = make_jobs(**HOLE)
    promised = []
    simulate(jobs, jobs.actual_run_time, 4, estimate="user_history", backfill="conservative",
             estimate_refresh="every_pass", on_reservation=lambda now, j, start: promised.append((now, j, start)))
    assert (2, 4, 70) in promised and (5, 4, 5) in promised and (5, 3, 20) in promised


def test_every_pass_runs_on_the_reference_engine():
    jobs = pyss_jobs(PYSS_10)
    with pytest.raises(ConfigError, match="estimate_refresh 'every_pass' re-predicts waiting jobs"):
        simulate(jobs, jobs.actual_run_time, 100, estimate_refresh="every_pass", kernel="fast", **EASYPP)
    auto = simulate(jobs, jobs.actual_run_time, 100, estimate_refresh="every_pass", kernel="auto", **EASYPP)
    assert auto.end.tolist() == [row[5] for row in PYSS_10]


@pytest.mark.parametrize("estimate", ["user", "actual"])
def test_estimates_that_never_change_are_the_same_under_both(estimate):
    jobs = pyss_jobs(PYSS_11)
    kw = dict(estimate=estimate, backfill_order="sjbf", backfill="easy")
    fixed = simulate(jobs, jobs.actual_run_time, 100, kernel="fast", **kw)
    refreshed = simulate(jobs, jobs.actual_run_time, 100, estimate_refresh="every_pass", kernel="fast", **kw)
    assert np.array_equal(fixed.begin, refreshed.begin)


def test_an_unknown_refresh_is_refused():
    jobs = pyss_jobs(PYSS_10)
    with pytest.raises(ConfigError, match="unknown estimate_refresh 'sometimes'; choose one of: submit, every_pass"):
        simulate(jobs, jobs.actual_run_time, 100, estimate_refresh="sometimes", **EASYPP)
