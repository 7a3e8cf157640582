"""Metrics against values computed by hand on small schedules (the arithmetic is in comments)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drevt_sweep.jobs import JobTable, TraceMeta
from drevt_sweep.sim.metrics import PER_USER_METRICS, METRIC_DEFINITIONS, bounded_slowdown, compute_metrics
from drevt_sweep.sim.schedule import Schedule


def table_and_schedule(rows, total_nodes, queues=("pbatch",), columns=None):
    """rows: (submit, nodes, queue_code, begin, run_time, killed, rejected) per job (or the
    same seven as whole ``columns``)."""
    columns = columns if columns is not None else list(zip(*rows))
    submit, nodes, code, begin, run, killed, rejected = (np.asarray(c) for c in columns)
    n = submit.size
    begin = np.where(rejected, np.nan, begin).astype(np.float64)
    run = np.where(rejected, np.nan, run).astype(np.float64)
    meta = TraceMeta(
        path="t.csv", trace_format="simple", mode="simulation", checksum="0", timezone="UTC",
        timestamp_format="epoch", machine_nodes=None, has_actual_run_time=True, rows_read=n,
        rows_kept=n,
    )
    jobs = JobTable(
        job_id=np.arange(n, dtype=np.int64), source_line=np.arange(2, n + 2, dtype=np.int64),
        submit=submit.astype(np.float64), begin=np.full(n, np.nan), end=np.full(n, np.nan),
        num_nodes=nodes.astype(np.int64), time_limit=np.full(n, 1000.0),
        actual_run_time=run.copy(), queue_code=code.astype(np.int32), queue_names=tuple(queues),
        exit_status=np.zeros(n, dtype=np.int64), meta=meta,
    )
    schedule = Schedule(
        mode="simulation", total_nodes=total_nodes, begin=begin, end=begin + run, run_time=run,
        killed=killed.astype(bool), rejected=rejected.astype(bool),
    )
    return jobs, schedule


# The seeds' "Testing" example on 10 of 100 nodes... here on a 10-node machine, so that the
# three jobs run back to back:
#   A: submit   0, begin   0, run 100, end 100, wait  0
#   B: submit  50, begin 100, run  50, end 150, wait 50
#   C: submit 120, begin 150, run  80, end 230, wait 30
SEEDS = [
    (0, 10, 0, 0, 100, False, False),
    (50, 10, 0, 100, 50, False, False),
    (120, 10, 0, 150, 80, False, False),
]


def test_the_seeds_example_by_hand():
    jobs, schedule = table_and_schedule(SEEDS, total_nodes=10)
    m = compute_metrics(jobs, schedule)
    assert m["jobs_simulated"] == 3 and m["jobs_rejected"] == 0 and m["jobs_killed"] == 0
    # waits sorted [0, 30, 50]; numpy's linear percentile at rank q/100 * (n - 1):
    assert m["wait_mean"] == pytest.approx(80 / 3)
    assert m["wait_median"] == 30
    assert m["wait_p90"] == pytest.approx(46.0)  # rank 1.8: 30 + 0.8 * 20
    assert m["wait_p95"] == pytest.approx(48.0)  # rank 1.9: 30 + 0.9 * 20
    assert m["wait_p99"] == pytest.approx(49.6)  # rank 1.98: 30 + 0.98 * 20
    assert m["wait_max"] == 50
    # turnaround 100, 100, 110
    assert m["turnaround_mean"] == pytest.approx(310 / 3)
    # bsld: A 100/100 = 1, B (50+50)/50 = 2, C (30+80)/80 = 1.375; sorted [1, 1.375, 2]
    assert m["bsld_mean"] == pytest.approx(4.375 / 3)
    assert m["bsld_p95"] == pytest.approx(1.375 + 0.9 * 0.625)
    # span 0 -> 230; node-seconds 10*(100+50+80) = 2300 = 10 nodes * 230 s: fully busy
    assert m["makespan"] == 230
    assert m["utilization"] == pytest.approx(1.0)
    assert m["throughput"] == pytest.approx(3 / (230 / 3600))
    # waiting jobs: B over [50, 100), C over [120, 150): 50 + 30 = 80 job-seconds over 230 s
    assert m["queue_length_mean"] == pytest.approx(80 / 230)
    assert m["queue_length_max"] == 1


# A 4-node machine, two queues a (0) and b (1):
#   j0 a: submit 0, 2 nodes, begin 0, run 5 (shorter than tau)  -> wait 0,  end 5
#   j1 b: submit 0, 8 nodes: more than the machine -> rejected
#   j2 b: submit 2, 4 nodes, begin 5, run 20, killed at its limit -> wait 3, end 25
#   j3 a: submit 4, 2 nodes, begin 25, run 4                      -> wait 21, end 29
MIXED = [
    (0, 2, 0, 0, 5, False, False),
    (0, 8, 1, 0, 0, False, True),
    (2, 4, 1, 5, 20, True, False),
    (4, 2, 0, 25, 4, False, False),
]


def test_rejected_jobs_are_counted_and_left_out_of_everything_else():
    jobs, schedule = table_and_schedule(MIXED, total_nodes=4, queues=("a", "b"))
    m = compute_metrics(jobs, schedule)
    assert (m["jobs_simulated"], m["jobs_rejected"], m["jobs_killed"]) == (3, 1, 1)
    assert m["wait_mean"] == pytest.approx(8.0)  # (0 + 3 + 21) / 3
    assert m["wait_median"] == 3 and m["wait_max"] == 21
    assert m["turnaround_mean"] == pytest.approx(53 / 3)  # 5 + 23 + 25
    # bsld: j0 max(1, 5/max(5,10)) = 1; j2 23/20 = 1.15; j3 25/max(4,10) = 2.5
    assert m["bsld_mean"] == pytest.approx(4.65 / 3)
    # span 0 -> 29; node-seconds 2*5 + 4*20 + 2*4 = 98 over 4 * 29 = 116
    assert m["makespan"] == 29
    assert m["utilization"] == pytest.approx(98 / 116)
    assert m["throughput"] == pytest.approx(3 * 3600 / 29)
    # waiting: j2 over [2, 5), j3 over [4, 25) -> 3 + 21 = 24 job-seconds; peak 2 on [4, 5)
    assert m["queue_length_mean"] == pytest.approx(24 / 29)
    assert m["queue_length_max"] == 2


def test_per_queue_breakdown_by_hand():
    jobs, schedule = table_and_schedule(MIXED, total_nodes=4, queues=("a", "b"))
    m = compute_metrics(jobs, schedule)
    # queue a: j0 and j3
    assert m["queue/a/jobs_simulated"] == 2 and m["queue/a/jobs_rejected"] == 0
    assert m["queue/a/wait_mean"] == pytest.approx(10.5)
    assert m["queue/a/wait_median"] == pytest.approx(10.5)
    assert m["queue/a/turnaround_mean"] == pytest.approx(15.0)  # (5 + 25) / 2
    assert m["queue/a/bsld_mean"] == pytest.approx(1.75)  # (1 + 2.5) / 2
    assert m["queue/a/utilization"] == pytest.approx(18 / 116)  # its share of the machine
    assert m["queue/a/queue_length_mean"] == pytest.approx(21 / 29)
    assert m["queue/a/queue_length_max"] == 1
    # queue b: j2 ran (and was killed), j1 was rejected
    assert (m["queue/b/jobs_simulated"], m["queue/b/jobs_rejected"]) == (1, 1)
    assert m["queue/b/jobs_killed"] == 1
    assert m["queue/b/wait_max"] == 3
    assert m["queue/b/utilization"] == pytest.approx(80 / 116)
    assert m["queue/b/queue_length_mean"] == pytest.approx(3 / 29)
    # the per-queue shares add up to the whole
    assert m["queue/a/utilization"] + m["queue/b/utilization"] == pytest.approx(m["utilization"])
    assert "queue/a/makespan" not in m


def test_simultaneous_submit_and_start_is_not_a_wait():
    # Two jobs submitted and started at t=10, one waits until t=20 on a 1-node machine.
    rows = [(10, 1, 0, 10, 10, False, False), (10, 1, 0, 20, 10, False, False)]
    jobs, schedule = table_and_schedule(rows, total_nodes=1)
    m = compute_metrics(jobs, schedule)
    # span 10 -> 30: one job waits over [10, 20) -> 10 job-seconds / 20 s
    assert m["queue_length_mean"] == pytest.approx(0.5)
    assert m["queue_length_max"] == 1  # not 2: the first starts at the instant it arrives
    assert m["utilization"] == pytest.approx(1.0)


def test_all_jobs_rejected_gives_counts_and_nan():
    rows = [(0, 8, 0, 0, 0, False, True)]
    jobs, schedule = table_and_schedule(rows, total_nodes=4)
    m = compute_metrics(jobs, schedule)
    assert m["jobs_simulated"] == 0 and m["jobs_rejected"] == 1
    for key in ("wait_mean", "utilization", "makespan", "throughput", "queue_length_mean"):
        assert math.isnan(m[key])


def test_every_value_is_a_float_and_every_metric_is_defined():
    jobs, schedule = table_and_schedule(MIXED, total_nodes=4, queues=("a", "b"))
    m = compute_metrics(jobs, schedule)
    assert all(type(v) is float for v in m.values())
    top = [k for k in m if not k.startswith("queue/")]
    assert top == [k for k in METRIC_DEFINITIONS if not k.startswith("queue/") and k not in PER_USER_METRICS]
    assert all(k.split("/")[-1] in METRIC_DEFINITIONS for k in m)


def test_queue_names_are_made_safe_for_tracking():
    rows = [(0, 1, 0, 0, 10, False, False), (0, 1, 1, 0, 10, False, False)]
    jobs, schedule = table_and_schedule(rows, total_nodes=2, queues=("p batch/1", "p_batch_1"))
    m = compute_metrics(jobs, schedule)
    from drevt_sweep.names import queue_key

    assert "queue/p_batch_1/wait_mean" in m  # a valid name is its own key
    hashed = queue_key("p batch/1")  # the other is sanitised with a hash: no collision
    assert hashed.startswith("p_batch_1_x") and f"queue/{hashed}/wait_mean" in m


def test_queues_without_jobs_are_not_reported():
    jobs, schedule = table_and_schedule(SEEDS, total_nodes=10, queues=("pbatch", "pall"))
    assert not any(k.startswith("queue/pall/") for k in compute_metrics(jobs, schedule))


def test_bounded_slowdown_uses_tau_of_ten_seconds():
    wait = np.array([0.0, 10.0, 10.0, 90.0])
    run = np.array([1.0, 5.0, 20.0, 10.0])
    # (0+1)/10 -> 1; (10+5)/10 = 1.5; (10+20)/20 = 1.5; (90+10)/10 = 10
    assert bounded_slowdown(wait, run).tolist() == [1.0, 1.5, 1.5, 10.0]


def test_a_large_table_is_handled_without_loops():
    # A smoke test of the vectorised path (no timing asserted): 200k jobs on 3 queues.
    rng = np.random.default_rng(0)
    n = 200_000
    submit = np.sort(rng.integers(0, 10**7, n)).astype(float)
    wait = rng.exponential(100, n).round()
    run = rng.integers(1, 5000, n).astype(float)
    columns = (submit, np.ones(n), rng.integers(0, 3, n), submit + wait, run,
               np.zeros(n, bool), np.zeros(n, bool))
    jobs, schedule = table_and_schedule(None, 10**6, queues=("a", "b", "c"), columns=columns)
    m = compute_metrics(jobs, schedule)
    assert m["jobs_simulated"] == n
    assert m["wait_mean"] == pytest.approx(wait.mean())
    total = sum(m[f"queue/{q}/jobs_simulated"] for q in "abc")
    assert total == n


# --- properties -------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _queue_length_by_events(submit, begin, span_end):
    """Reference: replay +1/-1 events instant by instant."""
    times = np.concatenate((submit, begin))
    deltas = np.concatenate((np.ones(submit.size), -np.ones(begin.size)))
    instants, where = np.unique(times, return_inverse=True)
    length = np.cumsum(np.bincount(where, weights=deltas))
    durations = np.diff(np.append(instants, span_end))
    return float(np.dot(length, durations)) / (span_end - submit.min()), float(length.max())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 20), st.integers(1, 30)),
                min_size=1, max_size=40))
def test_queue_length_matches_an_event_by_event_count(jobs):
    submit, wait, run = (np.array(c, dtype=float) for c in zip(*jobs))
    n = submit.size
    columns = (submit, np.ones(n), np.zeros(n), submit + wait, run, np.zeros(n, bool),
               np.zeros(n, bool))
    table, schedule = table_and_schedule(None, total_nodes=n, columns=columns)
    m = compute_metrics(table, schedule)
    mean, peak = _queue_length_by_events(submit, submit + wait, (submit + wait + run).max())
    assert m["queue_length_mean"] == pytest.approx(mean)
    assert m["queue_length_max"] == peak


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 500), st.integers(1, 12), st.integers(1, 300),
                       st.integers(1, 400), st.sampled_from("ab")), min_size=1, max_size=30),
    st.sampled_from(["none", "easy", "conservative", "easy_drevt"]),
    st.sampled_from(["fcfs", "sjf", "largest"]),
)
def test_metrics_of_simulated_schedules_are_consistent(rows, backfill, priority):
    engine = pytest.importorskip("drevt_sweep.sim.engine")
    import jobtable_factory

    rows.sort(key=lambda r: r[0])
    submit, nodes, limit, run, queue = (list(c) for c in zip(*rows))
    jobs = jobtable_factory.make_jobs(submit, nodes, limit, run, queue=queue)
    schedule = engine.simulate(jobs, jobs.actual_run_time, 10, priority=priority,
                               backfill=backfill)
    m = compute_metrics(jobs, schedule)
    ran = ~schedule.rejected
    assert m["jobs_simulated"] + m["jobs_rejected"] == len(jobs)
    assert m["jobs_killed"] == int((np.array(run) > np.array(limit))[ran].sum())
    if ran.any():
        assert 0 < m["utilization"] <= 1 + 1e-12
        assert 0 <= m["wait_mean"] <= m["wait_max"]
        assert m["wait_median"] <= m["wait_p90"] <= m["wait_p95"] <= m["wait_p99"] <= m["wait_max"]
        assert m["bsld_mean"] >= 1
        wait = (schedule.begin - jobs.submit)[ran]
        assert m["queue_length_mean"] == pytest.approx(wait.sum() / m["makespan"])
    names = [k.split("/")[1] for k in m if k.endswith("/jobs_simulated")]
    assert len(names) == (len(set(queue)) if len(set(queue)) > 1 else 0)
    if not names:  # a single queue: no per-queue copy of the totals
        return
    assert sum(m[f"queue/{q}/jobs_simulated"] for q in names) == m["jobs_simulated"]
    assert sum(m[f"queue/{q}/jobs_rejected"] for q in names) == m["jobs_rejected"]


def test_a_single_queue_adds_no_per_queue_copy_of_the_totals():
    one_queue = [(s, n, 0, b, r, k, x) for s, n, _, b, r, k, x in MIXED]
    jobs, schedule = table_and_schedule(one_queue, total_nodes=8, queues=("a", "b"))
    m = compute_metrics(jobs, schedule)
    assert not any(k.startswith("queue/") for k in m)
    assert list(m) == [k for k in METRIC_DEFINITIONS if not k.startswith("queue/") and k not in PER_USER_METRICS]


def test_per_user_metrics_by_hand(tmp_path):
    from drevt_sweep.outputs import write_per_user_csv
    from drevt_sweep.sim.metrics import jain_index, per_user
    from jobtable_factory import make_jobs

    # a: waits 0 and 10, b: 30, an unknown user's job waits 50 (left out); every run is 10 s.
    jobs = make_jobs([0, 0, 0, 0], [1, 1, 1, 1], [10, 10, 10, 10], [10, 10, 10, 10], user=["a", "a", "b", None])
    schedule = Schedule(mode="simulation", total_nodes=1, begin=np.array([0.0, 10, 30, 50]),
                        end=np.array([10.0, 20, 40, 60]), run_time=np.full(4, 10.0),
                        killed=np.zeros(4, bool), rejected=np.zeros(4, bool), warnings={})
    users = per_user(jobs, schedule)
    assert users["user"].tolist() == ["a", "b"] and users["jobs"].tolist() == [2, 1]
    assert users["wait_mean"].tolist() == [5.0, 30.0]
    assert users["bsld_mean"].tolist() == [1.5, 4.0]  # a: max(1, 10/10), 20/10; b: 40/10
    m = compute_metrics(jobs, schedule)
    assert m["users"] == 2 and m["user_wait_mean_max"] == 30.0
    assert m["user_bsld_jain"] == pytest.approx(5.5**2 / (2 * (1.5**2 + 4.0**2)))
    assert jain_index(np.array([3.0, 3.0, 3.0])) == 1.0
    assert jain_index(np.array([1.0, 0.0, 0.0, 0.0])) == 0.25
    text = write_per_user_csv(tmp_path / "per_user.csv", jobs, schedule).read_text()
    assert text == "user,jobs,wait_mean,bsld_mean,node_seconds\na,2,5,1.5,20\nb,1,30,4,10\n"


def test_per_user_metrics_without_users_are_left_out():
    from jobtable_factory import make_jobs

    jobs = make_jobs([0], [1], [10], [10])  # no user column: every job's user is unknown
    schedule = Schedule(mode="simulation", total_nodes=1, begin=np.array([0.0]), end=np.array([10.0]),
                        run_time=np.array([10.0]), killed=np.zeros(1, bool), rejected=np.zeros(1, bool),
                        warnings={})
    m = compute_metrics(jobs, schedule)
    assert not set(PER_USER_METRICS) & set(m)
