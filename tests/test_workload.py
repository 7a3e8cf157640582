"""Workload scenarios (``drevt_sweep.sim.workload``): each transform against hand-computed
expectations (the arithmetic is in the comments), the ``workload`` config group, properties on
random tables (the result is a valid job table, deterministic, the input untouched, and the
engine's invariants hold on it), and the identity reproducing the untransformed schedule."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from drevt_sweep.sim.capacity import CapacitySchedule
from drevt_sweep.sim.engine import BACKFILL_POLICIES, simulate
from drevt_sweep.errors import ConfigError
from drevt_sweep.sim.runtime import RunTimeModel, draw_run_times, stream_rng
from drevt_sweep.sim.workload import (
    REPORT_KEYS,
    Maintenance,
    WorkloadSpec,
    apply_workload,
    parse_capacity,
    parse_time,
)
from drevt_sweep.sweep.workload_config import WorkloadConf, workload_spec
from jobtable_factory import make_jobs
from test_engine_capacity import check_capacity_invariants

REPO = Path(__file__).resolve().parents[1]
BUNDLED_KTH = REPO / "drevt_sweep" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Monday 2024-01-15 in Stockholm (CET = UTC+1): 00:00Z is epoch 1705276800.
MON_0800_CET = 1705276800 + 7 * 3600  # 08:00 CET = 07:00Z = 1705302000
TUE_0700_CET = 1705276800 + 86400 + 6 * 3600  # 1705384800
TUE_0800_CET = TUE_0700_CET + 3600  # 1705388400
TUE_1200_CET = TUE_0700_CET + 5 * 3600  # 1705402800


def in_zone(jobs, zone="Europe/Stockholm", **meta):
    return jobs.replace(meta=dataclasses.replace(jobs.meta, timezone=zone, **meta))


def as_forced_simulation(jobs):
    """A replay-capable table read with force_simulation: begin/end kept, simulation mode."""
    return jobs.replace(meta=dataclasses.replace(jobs.meta, mode="simulation"))


# --- the identity ---------------------------------------------------------------------------------


def test_the_default_spec_is_the_identity():
    jobs = make_jobs([0, 5, 9], [1, 2, 3], [10, 10, 10], [4, 5, 6])
    out, cap, report = apply_workload(jobs, WorkloadSpec(), seed=123)
    assert out is jobs and cap is None
    assert set(report) == set(REPORT_KEYS)
    assert report["jobs_in"] == report["jobs_out"] == 3 and report["dropped"] == report["moved"] == 0
    assert WorkloadSpec().is_identity and WorkloadSpec(load_factor=1.0, maintenance_horizon=5).is_identity
    assert not WorkloadSpec().stochastic and WorkloadSpec(shake=1).stochastic


@pytest.mark.parametrize("backfill", BACKFILL_POLICIES)
def test_load_factor_one_and_an_empty_capacity_schedule_reproduce_the_schedule_exactly(backfill):
    jobs = make_jobs([0, 0.1, 0.3, 7, 7, 20], [3, 5, 2, 8, 1, 4], [10, 3.3, 5, 20, 1, 9], [10, 2, 6, 5, 1, 9])
    plain = simulate(jobs, jobs.actual_run_time, 8, backfill=backfill)
    out, cap, _ = apply_workload(jobs, WorkloadSpec(load_factor=1.0, capacity=()), seed=0)
    for capacity in (cap, CapacitySchedule()):
        s = simulate(out, out.actual_run_time, 8, backfill=backfill, capacity=capacity)
        for name in ("begin", "end", "run_time", "killed", "rejected"):
            assert np.array_equal(getattr(s, name), getattr(plain, name), equal_nan=True)
        assert s.warnings == plain.warnings


def test_load_factor_one_reproduces_the_bundled_trace_exactly():
    from drevt_sweep.trace import ReadOptions, read_trace

    jobs = read_trace(BUNDLED_KTH, ReadOptions(trace_format="swf", force_simulation=True))
    out, cap, report = apply_workload(jobs, WorkloadSpec(load_factor=1.0), seed=5)
    assert out is jobs and cap is None and report["moved"] == 0
    rt = draw_run_times(jobs, RunTimeModel(), 0)
    plain = simulate(jobs, rt, 100, backfill="easy")
    again = simulate(out, rt, 100, backfill="easy", capacity=CapacitySchedule())
    assert np.array_equal(plain.begin, again.begin) and np.array_equal(plain.end, again.end)


# --- load scaling ---------------------------------------------------------------------------------


def test_load_scaling_divides_every_inter_arrival_gap():
    jobs = make_jobs([100, 110, 130, 160], [1, 2, 3, 4], [10, 20, 30, 40], [5, 6, 7, 8])
    # gaps 10, 20, 30 from t0 = 100 (the first submit):
    # f = 2   -> gaps 5, 10, 15  -> 100, 105, 115, 130
    # f = 0.5 -> gaps 20, 40, 60 -> 100, 120, 160, 220
    out, cap, report = apply_workload(jobs, WorkloadSpec(load_factor=2.0))
    assert out.submit.tolist() == [100, 105, 115, 130] and cap is None
    assert report["load_moved"] == report["moved"] == 3 and report["dropped"] == 0
    out, _, _ = apply_workload(jobs, WorkloadSpec(load_factor=0.5))
    assert out.submit.tolist() == [100, 120, 160, 220]
    # order, sizes, limits, run times, ids unchanged
    for name in ("num_nodes", "time_limit", "actual_run_time", "job_id", "source_line"):
        assert np.array_equal(getattr(out, name), getattr(jobs, name))


def test_load_scaling_counts_gaps_from_the_window_start():
    jobs = make_jobs([80, 100, 110, 130, 160], [1] * 5, [10] * 5, [5] * 5)
    # window [90, inf): the job at 80 is dropped; t0 = 90, offsets 10, 20, 40, 70 halved
    # -> 95, 100, 110, 125
    out, _, report = apply_workload(jobs, WorkloadSpec(window_start=90, load_factor=2.0))
    assert out.submit.tolist() == [95, 100, 110, 125]
    assert report["window_dropped_before"] == 1 and report["load_moved"] == 4


def test_moving_submit_times_drops_the_recorded_history():
    jobs = as_forced_simulation(make_jobs([0, 10], [1, 1], [10, 10], [5, 5], begin=[0, 10], end=[5, 15]))
    out, _, _ = apply_workload(jobs, WorkloadSpec(load_factor=2.0))
    assert np.isnan(out.begin).all() and np.isnan(out.end).all() and out.meta.mode == "simulation"
    assert np.array_equal(jobs.begin, [0, 10])  # the input is untouched


@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan, "2", True])
def test_load_factor_must_be_positive_and_finite(bad):
    with pytest.raises(ConfigError):
        WorkloadSpec(load_factor=bad)


# --- time window and job count ------------------------------------------------------------------


def test_window_bounds_as_iso_in_the_traces_zone_or_as_epoch():
    # [08:00, 09:00) CET on Monday = [1705302000, 1705305600): the job one second before the
    # start and the one exactly at the (exclusive) end are dropped.
    s = MON_0800_CET
    jobs = in_zone(make_jobs([s - 1, s, s + 1800, s + 3599, s + 3600], [1] * 5, [60] * 5, [30] * 5))
    for start, end in (
        ("2024-01-15T08:00", "2024-01-15 09:00:00"),  # wall clock in Europe/Stockholm
        ("2024-01-15T07:00Z", "2024-01-15T08:00+00:00"),  # explicit offsets
        (s, s + 3600),  # epoch numbers
        (str(s), f"{s + 3600}.0"),  # epoch as text
    ):
        out, _, report = apply_workload(jobs, WorkloadSpec(window_start=start, window_end=end))
        assert out.submit.tolist() == [s, s + 1800, s + 3599], (start, end)
        assert report["window_dropped_before"] == 1 and report["window_dropped_after"] == 1
        assert report["dropped"] == 2 and report["moved"] == 0


def test_iso_times_follow_daylight_saving_time_in_the_traces_zone():
    # 2024-07-02 08:00 in Stockholm is CEST (UTC+2): 06:00Z = 1719900000
    assert parse_time("2024-07-02T08:00", "Europe/Stockholm") == 1719900000.0
    assert parse_time("2024-07-02T08:00", "UTC") == 1719907200.0


def test_iso_times_need_a_trace_with_absolute_dates():
    jobs = make_jobs([0, 10], [1, 1], [5, 5], [5, 5])
    relative = jobs.replace(meta=dataclasses.replace(jobs.meta, timestamp_format="relative"))
    with pytest.raises(ConfigError, match="seconds from its start"):
        apply_workload(relative, WorkloadSpec(window_start="1970-01-01T00:00"))
    out, _, _ = apply_workload(relative, WorkloadSpec(window_start=5))
    assert out.submit.tolist() == [10]


@pytest.mark.parametrize("spec", [
    dict(window_start=10, window_end=10),
    dict(window_start="yesterday"),
    dict(window_end="2024-13-01T00:00"),
])
def test_bad_windows_are_config_errors(spec):
    with pytest.raises(ConfigError):
        apply_workload(make_jobs([0, 10], [1, 1], [5, 5], [5, 5]), WorkloadSpec(**spec))


def test_max_time_and_max_jobs_as_in_dr_evt():
    jobs = make_jobs([0, 10, 20, 30, 40], [1] * 5, [5] * 5, [5] * 5)
    # max_time 25: submitted before 0 + 25 -> 0, 10, 20; then max_jobs 2 -> 0, 10
    out, _, report = apply_workload(jobs, WorkloadSpec(max_time=25, max_jobs=2))
    assert out.submit.tolist() == [0, 10]
    assert report["max_time_dropped"] == 2 and report["max_jobs_dropped"] == 1 and report["dropped"] == 3
    # with a window, max_time counts from the window start: [15, ...) and 15 + 20 = 35 -> 20, 30
    out, _, _ = apply_workload(jobs, WorkloadSpec(window_start=15, max_time=20))
    assert out.submit.tolist() == [20, 30]


# --- warm start -------------------------------------------------------------------------------------


def warm_jobs():
    """10 nodes, window start 100 (submit, begin, end, nodes, limit):

    A (0, 10, 50, 4, 60):     finished before 100 -> dropped
    B (20, 30, 250, 6, 300):  running at 100 -> holds 6 nodes on [30, 250)
    C (40, 250, 300, 5, 60):  queued at 100 -> enters the queue at 100 (run 50)
    D (120, 130, 150, 3, 50): in the window (run 20)
    """
    return as_forced_simulation(make_jobs(
        [0, 20, 40, 120], [4, 6, 5, 3], [60, 300, 60, 50], [40, 220, 50, 20],
        begin=[10, 30, 250, 130], end=[50, 250, 300, 150],
    ))


def test_warm_start_holds_running_jobs_and_carries_queued_ones_in():
    out, cap, report = apply_workload(warm_jobs(), WorkloadSpec(window_start=100, warm_start=True))
    assert out.job_id.tolist() == [2, 3]  # C, D
    assert out.submit.tolist() == [100, 120]  # C's submit moved to the window start
    assert cap == CapacitySchedule(reductions=((30.0, 250.0, 6),))
    assert cap.levels(10) == ([-math.inf, 30.0, 250.0], [10, 4, 10])
    assert {k: report[k] for k in ("warm_running", "warm_queued", "warm_finished", "warm_held_nodes")} == {
        "warm_running": 1, "warm_queued": 1, "warm_finished": 1, "warm_held_nodes": 6,
    }
    assert report["dropped"] == 2 and report["moved"] == 1


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_a_warm_start_begins_with_busy_nodes(backfill):
    # At 100 only 10 - 6 = 4 nodes are free (B holds 6 until 250): C (5 nodes) waits; its
    # reservation is 250. D (3 nodes, limit 50) at 120 fits and ends by 170 <= 250 -> 120..140.
    # C runs 250..300: its wait counts from the window start, 250 - 100 = 150.
    out, cap, _ = apply_workload(warm_jobs(), WorkloadSpec(window_start=100, warm_start=True))
    s = simulate(out, out.actual_run_time, 10, backfill=backfill, capacity=cap)
    assert s.begin.tolist() == [250, 120] and s.end.tolist() == [300, 140]
    assert (s.begin - out.submit).tolist() == [150, 0]


def test_a_cold_start_begins_with_an_empty_machine():
    # Without warm start everything submitted before 100 is dropped: D alone, 120..140.
    out, cap, report = apply_workload(warm_jobs(), WorkloadSpec(window_start=100))
    assert out.job_id.tolist() == [3] and cap is None and report["window_dropped_before"] == 3
    s = simulate(out, out.actual_run_time, 10, capacity=cap)
    assert s.begin.tolist() == [120]


def test_warm_start_on_a_replay_keeps_the_recorded_times():
    jobs = warm_jobs().replace(meta=dataclasses.replace(warm_jobs().meta, mode="replay"))
    out, cap, _ = apply_workload(jobs, WorkloadSpec(window_start=100, warm_start=True))
    assert cap is None and out.begin.tolist() == [250, 130] and out.submit.tolist() == [100, 120]


def test_warm_start_needs_the_recorded_history():
    jobs = make_jobs([0, 20, 120], [1, 1, 1], [10, 10, 10], [5, 5, 5])
    with pytest.raises(ConfigError, match="begin and end"):
        apply_workload(jobs, WorkloadSpec(window_start=100, warm_start=True))
    with pytest.raises(ConfigError, match="window_start"):
        WorkloadSpec(warm_start=True)


# --- machine-size changes and maintenance ---------------------------------------------------------


def test_capacity_steps_accept_iso_and_epoch_times():
    assert parse_capacity("2024-01-15T08:00:50, 1705305600:80") == (("2024-01-15T08:00", 50), ("1705305600", 80))
    jobs = in_zone(make_jobs([MON_0800_CET], [1], [60], [60]))
    _, cap, report = apply_workload(jobs, WorkloadSpec(capacity=parse_capacity("2024-01-15T08:00:50,1705305600:80")))
    assert cap.steps == ((MON_0800_CET, 50), (MON_0800_CET + 3600.0, 80)) and report["capacity_steps"] == 2
    for bad in ("", "100", "abc:5", "100:x"):
        with pytest.raises(ConfigError):
            spec = WorkloadSpec(capacity=parse_capacity(bad))
            apply_workload(jobs, spec)


def test_weekly_maintenance_in_the_traces_zone():
    # Tuesday 08:00-12:00 CET = 07:00Z-11:00Z = [1705388400, 1705402800). Jobs on Monday 08:00
    # and Tuesday 07:00; windows are generated from the first submit over at least two weeks
    # (the pattern's period, twice), so a one-day horizon gives Tuesdays 2024-01-16 and -23.
    jobs = in_zone(make_jobs([MON_0800_CET, TUE_0700_CET], [1, 1], [60, 60], [60, 60]))
    spec = WorkloadSpec(maintenance=("tue 08:00-12:00 100",), maintenance_horizon=86400)
    _, cap, report = apply_workload(jobs, spec)
    week = 7 * 86400
    both = ((TUE_0800_CET, TUE_1200_CET, 100), (TUE_0800_CET + week, TUE_1200_CET + week, 100))
    assert cap.reductions == both and report["maintenance_windows"] == 2
    assert (cap.recurring_from, cap.period) == (MON_0800_CET + 2 * week, week)
    # no horizon: still the two weeks the pattern needs
    _, cap, _ = apply_workload(jobs, dataclasses.replace(spec, maintenance_horizon=0))
    assert cap.reductions == both
    # twenty days: also Tuesday 2024-01-30 (still CET): the same hours, 14 days on
    _, cap, _ = apply_workload(jobs, dataclasses.replace(spec, maintenance_horizon=20 * 86400))
    assert cap.reductions[2] == (TUE_0800_CET + 2 * week, TUE_1200_CET + 2 * week, 100)


def test_maintenance_specs():
    m = Maintenance.parse("Tuesday 22:00-02:00 7")
    assert (m.weekday, m.start, m.end, m.nodes) == (1, "22:00", "02:00", 7) and m.label() == "tue 22:00-02:00 7"
    # an end before the start is the next morning: 22:00 Tue to 02:00 Wed (UTC here)
    tue = 1705276800 + 86400
    assert m.occurrences(tue, tue + 86400, __import__("zoneinfo").ZoneInfo("UTC")) == [
        (tue + 22 * 3600, tue + 26 * 3600)
    ]
    assert Maintenance.parse("daily 01:00-02:00 1").weekday is None
    for bad in ("tue 8-12 100", "someday 08:00-12:00 1", "tue 08:00-12:00 0", "tue 08:00 12:00 5"):
        with pytest.raises(ConfigError):
            Maintenance.parse(bad)


@pytest.mark.parametrize("backfill", ["easy", "conservative", "easy_drevt"])
def test_a_maintenance_window_delays_a_job(backfill):
    # 100 nodes, all down Tuesday 08:00-12:00 CET. Both jobs submitted Tuesday 07:00 CET:
    # J0: 50 nodes for 2 h -> [07:00, 09:00) crosses 08:00: waits until 12:00 CET = 1705402800.
    # J1: 50 nodes for 1 h -> [07:00, 08:00) ends exactly as the maintenance begins: starts now.
    jobs = in_zone(make_jobs([TUE_0700_CET] * 2, [50, 50], [7200, 3600], [7200, 3600]))
    out, cap, _ = apply_workload(jobs, WorkloadSpec(maintenance=("tue 08:00-12:00 100",)))
    s = simulate(out, out.actual_run_time, 100, backfill=backfill, capacity=cap)
    assert s.begin.tolist() == [TUE_1200_CET, TUE_0700_CET]


# --- the maintenance horizon (issue 19, item 15) ------------------------------------------------------

UTC_0100 = 1705280400  # Monday 2024-01-15 01:00Z


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
def test_a_job_that_never_fits_between_two_windows_is_rejected_not_delayed(backfill):
    # 100 nodes, 50 down every day 02:00-03:00 UTC: the gaps are 23 h long.
    # J0: 60 nodes for 24 h never fits between two windows: rejected (it waited until the
    #     28-day calendar ran out). J1: 60 nodes for 22 h fits from 03:00. J2: 40 nodes for
    #     48 h is never affected (the 50 nodes left are enough): starts at once (backfilled).
    jobs = in_zone(make_jobs([UTC_0100] * 3, [60, 60, 40], [86400, 79200, 172800],
                             [86400, 79200, 172800]), zone="UTC")
    out, cap, _ = apply_workload(jobs, WorkloadSpec(maintenance=("daily 02:00-03:00 50",)))
    s = simulate(out, out.actual_run_time, 100, backfill=backfill, capacity=cap)
    assert s.rejected.tolist() == [True, False, False]
    assert s.warnings["rejected_capacity"] == 1
    # without backfilling J2 waits behind J1 (the head) and starts with it
    j2 = UTC_0100 + 2 * 3600 if backfill == "none" else UTC_0100
    assert s.begin[1:].tolist() == [UTC_0100 + 2 * 3600, j2]
    deadlines = cap.deadlines(100, out.submit, out.num_nodes, out.time_limit)
    assert math.isnan(deadlines[0]) and deadlines[1:].tolist() == [math.inf, math.inf]


@pytest.mark.slow
def test_the_readmes_daily_maintenance_on_kth_rejects_instead_of_waiting_for_the_calendar():
    """drevt-sim on KTH-SP2, 50 of 100 nodes down daily 02:00-03:00: wait_max was 294 days and
    the makespan 758 h longer than without maintenance, with nothing rejected."""
    import json
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.json"
        proc = subprocess.run(
            [sys.executable, "-m", "drevt_sweep.cli.sim", str(BUNDLED_KTH), "--trace_format", "swf",
             "--force-simulation", "--timezone", "Europe/Stockholm", "--quiet",
             "--maintenance", "daily 02:00-03:00 50", "--stats", str(stats)],
            capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        metrics = json.loads(stats.read_text())["metrics"]
    # 6 jobs of 64-80 nodes asking for 24 h or more: no regular 23 h gap fits them; 5 of them
    # would fit the 24 h gap of an autumn DST night (issue 27 item 7: job 2396 waited 149.6 days)
    assert metrics["jobs_rejected"] == 6
    assert "6 jobs can never run within the machine's capacity schedule" in proc.stderr
    assert "5 of them would fit only the longer gap between two maintenance windows of a DST day" in proc.stderr
    assert metrics["makespan"] == 28_763_776  # the trace's span, as without maintenance
    assert metrics["wait_max"] < 7 * 86400  # no job waits for a DST night
    assert "maintenance windows end" not in proc.stderr


# --- daily maintenance across DST (issue 27 item 7) ---------------------------------------------

def _la(text: str) -> float:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo("America/Los_Angeles")).timestamp()


def test_the_gaps_of_a_dst_day_beyond_the_regular_one():
    # daily 02:00-03:00 in Los Angeles: the regular gap is 23 h. 2024-03-10 has no 02:00 (the
    # clocks go from 02:00 PST to 03:00 PDT): no window that day, so from the end of the 9th's
    # (03:00 PST = 11:00Z) to the 11th's start (02:00 PDT = 09:00Z) 46 h pass; filled up to
    # 23 h before the 11th's start = 10:00Z on the 10th. 2024-11-03 gains an hour: from the
    # 2nd's end (03:00 PDT = 10:00Z) to the 3rd's start (02:00 PST = 10:00Z) 24 h, 1 h filled.
    from zoneinfo import ZoneInfo

    m = Maintenance.parse("daily 02:00-03:00 5")
    zone = ZoneInfo("America/Los_Angeles")
    hour = 3600.0
    assert m.irregular_gaps(_la("2024-03-01T00:00"), _la("2024-03-20T00:00"), zone) == [
        (_la("2024-03-09T03:00"), _la("2024-03-09T03:00") + 23 * hour)]
    assert m.irregular_gaps(_la("2024-10-25T00:00"), _la("2024-11-10T00:00"), zone) == [
        (_la("2024-11-02T03:00"), _la("2024-11-02T03:00") + hour)]
    assert m.irregular_gaps(_la("2024-05-01T00:00"), _la("2024-06-01T00:00"), zone) == []
    assert m.irregular_gaps(1704067200, 1704067200 + 365 * 86400, ZoneInfo("UTC")) == []
    # a weekly window: the week with the change has a 7 d + 1 h gap
    weekly = Maintenance.parse("fri 02:00-03:00 5")
    assert weekly.irregular_gaps(_la("2024-10-25T00:00"), _la("2024-11-10T00:00"), zone) == [
        (_la("2024-11-01T03:00"), _la("2024-11-01T04:00"))]


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
@pytest.mark.parametrize("zone, submit", [
    ("UTC", "2024-03-01T12:00"),
    ("America/Los_Angeles", "2024-02-27T12:00"),  # waited 11.6 days for the 10th of March
    ("America/Los_Angeles", "2024-04-15T12:00"),  # waited 201 days for the 2nd of November
])
def test_a_job_that_fits_only_a_dst_days_longer_gap_is_rejected_in_every_zone(backfill, zone, submit):
    """10 nodes, 5 down daily 02:00-03:00 (wall clock): J0 needs 6 nodes for 23.5 h, more than
    the 23 h between two windows: rejected at once, as in UTC, and counted as only a DST
    gap's job. J1 (6 nodes, 22 h) fits a regular gap: it starts at the next 03:00. J2 (1 node
    in December) keeps the calendar open over the autumn change."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    tz = ZoneInfo(zone)
    t0 = datetime.fromisoformat(submit).replace(tzinfo=tz).timestamp()
    december = datetime(2024, 12, 1, 12, tzinfo=tz).timestamp()
    jobs = in_zone(make_jobs([t0, t0, december], [6, 6, 1], [84600, 79200, 60], [84600, 79200, 60]),
                   zone=zone)
    out, cap, _ = apply_workload(jobs, WorkloadSpec(maintenance=("daily 02:00-03:00 5",)))
    s = simulate(out, out.actual_run_time, 10, backfill=backfill, capacity=cap)
    assert s.rejected.tolist() == [True, False, False]
    assert s.warnings["rejected_capacity"] == 1
    assert s.warnings.get("rejected_capacity_irregular_gap", 0) == (0 if zone == "UTC" else 1)
    next_0300 = datetime.fromisoformat(submit[:10] + "T03:00").replace(tzinfo=tz).timestamp() + 86400
    assert s.begin[1] == next_0300
    # The same case on two equal partitions of 10 nodes (the window takes 5 of 20 nodes: 3 + 2,
    # largest remainder to the first): J0 in A (7 left in a regular gap) fits; its copy J3 in B
    # (8 left) too; the 9-node J4 in B only fits a DST day's gap: rejected and counted there
    # (the December job keeps the calendar open, as above).
    from drevt_sweep.sim.machine import Machine, Partition
    from drevt_sweep.sim.partitioned import simulate_machine

    two = in_zone(make_jobs([t0, t0, t0, december], [6, 6, 9, 1], [84600] * 3 + [60], [84600] * 3 + [60],
                            queue=["a", "b", "b", "a"]), zone=zone)
    out2, cap2, _ = apply_workload(two, WorkloadSpec(maintenance=("daily 02:00-03:00 5",)))
    machine = Machine("m", (Partition("A", 10, queues=("a",)), Partition("B", 10, queues=("b",))))
    m = simulate_machine(out2, out2.actual_run_time, machine, backfill=backfill, capacity=cap2)
    assert m.rejected.tolist() == [False, False, True, False]
    assert m.warnings["rejected_capacity"] == 1
    assert m.warnings.get("rejected_capacity_irregular_gap", 0) == (0 if zone == "UTC" else 1)
    # The scheduler still sees the real windows: without the rule J0 would fit the DST gap.
    real = dataclasses.replace(cap, irregular=())
    assert math.isnan(cap.deadlines(10, out.submit, out.num_nodes, out.time_limit)[0])
    assert (zone == "UTC") == math.isnan(real.deadlines(10, out.submit, out.num_nodes, out.time_limit)[0])


# --- job-size rescaling -----------------------------------------------------------------------------


def test_rescaling_rounds_half_up_between_one_and_the_new_machine():
    jobs = make_jobs([0] * 6, [1, 2, 3, 5, 10, 100], [5] * 6, [5] * 6, machine_nodes=100)
    # f = 0.3: 0.3 -> 1 (at least 1); 0.6+0.5=1.1 -> 1; 0.9+0.5=1.4 -> 1; 1.5+0.5=2.0 -> 2;
    # 3.0+0.5=3.5 -> 3; 30+0.5 -> 30, above the new machine of 20 nodes -> 20 (capped)
    out, _, report = apply_workload(jobs, WorkloadSpec(rescale_nodes=0.3, rescale_machine_nodes=20))
    assert out.num_nodes.tolist() == [1, 1, 1, 2, 3, 20] and out.meta.machine_nodes == 20
    assert report["rescaled"] == 5 and report["rescale_capped"] == 1
    # without an explicit size, the trace's 100 nodes x 0.3 = 30 is the new machine
    out, _, _ = apply_workload(jobs, WorkloadSpec(rescale_nodes=0.3))
    assert out.num_nodes.tolist() == [1, 1, 1, 2, 3, 30] and out.meta.machine_nodes == 30
    # half up, not to even: 5 x 0.5 = 2.5 -> 3; 2 x 1.5 = 3
    out, _, _ = apply_workload(jobs, WorkloadSpec(rescale_nodes=0.5))
    assert out.num_nodes.tolist() == [1, 1, 2, 3, 5, 50]
    assert jobs.num_nodes.tolist() == [1, 2, 3, 5, 10, 100]  # the input is untouched


def test_rescaling_also_shrinks_the_warm_start_holds():
    # B's 6 held nodes x 0.5 = 3
    _, cap, report = apply_workload(warm_jobs(), WorkloadSpec(window_start=100, warm_start=True, rescale_nodes=0.5))
    assert cap.reductions == ((30.0, 250.0, 3),) and report["warm_held_nodes"] == 3


def test_a_replay_refuses_transforms_that_change_the_recorded_schedule():
    jobs = make_jobs([0, 10], [1, 1], [10, 10], [5, 5], begin=[0, 10], end=[5, 15])
    for spec in (WorkloadSpec(load_factor=2), WorkloadSpec(rescale_nodes=2), WorkloadSpec(shake=5),
                 WorkloadSpec(capacity=((5, 1),))):
        with pytest.raises(ConfigError, match="replay"):
            apply_workload(jobs, spec)


# --- input shaking --------------------------------------------------------------------------------


def test_shaking_draws_from_its_own_stream_and_re_sorts_stably():
    jobs = make_jobs([0, 0, 0, 100, 1000], [1, 2, 3, 4, 5], [10] * 5, [5] * 5)
    out, _, report = apply_workload(jobs, WorkloadSpec(shake=30.0), seed=7)
    delta = stream_rng(7, "input_shaking").uniform(-30.0, 30.0, size=5)
    shaken = jobs.submit + delta
    order = np.argsort(shaken, kind="stable")
    assert out.submit.tolist() == shaken[order].tolist()
    assert out.num_nodes.tolist() == jobs.num_nodes[order].tolist()  # rows move with their jobs
    assert (np.abs(out.submit - jobs.submit[order]) <= 30).all()
    assert report["shake_moved"] == 5 and report["shake_reordered"] == int((order != np.arange(5)).sum())
    # jobs 100 s apart or more never swap with a +-30 s shake
    assert out.job_id.tolist()[3:] == [3, 4]


def test_shaking_is_deterministic_per_seed_and_differs_between_seeds():
    jobs = make_jobs(np.arange(0, 500, 10).tolist(), [1] * 50, [10] * 50, [5] * 50)
    a = apply_workload(jobs, WorkloadSpec(shake=20), seed=1)[0]
    b = apply_workload(jobs, WorkloadSpec(shake=20), seed=1)[0]
    c = apply_workload(jobs, WorkloadSpec(shake=20), seed=2)[0]
    assert np.array_equal(a.submit, b.submit) and not np.array_equal(a.submit, c.submit)


def test_shaking_leaves_the_run_time_draws_of_the_seed_alone():
    # Common random numbers: the run-time stream of a seed is the same with and without
    # shaking (equal limits, so the re-sorted rows draw the same values).
    jobs = make_jobs(np.arange(0, 200, 10).tolist(), [1] * 20, [100] * 20, [50] * 20)
    model = RunTimeModel(mode="distribution", distribution="lognormal", scale=0.5, stddev=1.0)
    shaken = apply_workload(jobs, WorkloadSpec(shake=60), seed=3)[0]
    assert np.array_equal(draw_run_times(shaken, model, 3), draw_run_times(jobs, model, 3))


def test_shaking_does_not_move_jobs_before_the_window_start():
    jobs = make_jobs([100, 101, 102], [1] * 3, [10] * 3, [5] * 3)
    out, _, _ = apply_workload(jobs, WorkloadSpec(window_start=100, shake=50), seed=0)
    assert (out.submit >= 100).all()


# --- the workload config group -------------------------------------------------------------------


def composed(name: str):
    option = OmegaConf.load(REPO / "conf" / "workload" / f"{name}.yaml")
    return OmegaConf.merge(OmegaConf.structured(WorkloadConf), option)


@pytest.mark.parametrize("name", sorted(p.stem for p in (REPO / "conf" / "workload").glob("*.yaml")))
def test_every_workload_option_matches_the_schema(name):
    section = composed(name)
    assert section.name == name
    spec = workload_spec(section)
    assert isinstance(spec, WorkloadSpec)
    assert spec.is_identity == (name in ("none", "load"))


def test_workload_options_say_what_they_do():
    assert workload_spec(composed("maintenance")).maintenance == (Maintenance(1, "08:00", "12:00", 20),)
    assert workload_spec(composed("shaking")).shake == 60.0
    assert workload_spec(composed("rescale")).rescale_nodes == 0.5
    window = workload_spec(composed("window"))
    assert window.warm_start and window.window_start == "1997-03-01T00:00"
    section = composed("load")
    section.load_factor = 1.2
    assert workload_spec(section).load_factor == 1.2
    # system.total_nodes caps rescaling unless the workload names its own machine size
    assert workload_spec(composed("rescale"), total_nodes=64).rescale_machine_nodes == 64
    assert workload_spec(composed("none"), total_nodes=64).rescale_machine_nodes is None
    assert workload_spec(None).is_identity
    assert workload_spec({"capacity": [{"time": 5, "total_nodes": 3}], "window_start": "100"}).capacity == ((5, 3),)


def test_the_schema_rejects_misspelt_keys_and_wrong_types():
    base = OmegaConf.structured(WorkloadConf)
    with pytest.raises(Exception):
        OmegaConf.merge(base, {"load_factr": 1.1})
    with pytest.raises(Exception):
        OmegaConf.merge(base, {"load_factor": "fast"})
    with pytest.raises(ConfigError):
        workload_spec(OmegaConf.merge(base, {"load_factor": -1.0}))


def test_the_load_study_experiment():
    text = (REPO / "conf" / "experiment" / "load_study.yaml").read_text()
    assert text.startswith("# @package _global_")
    conf = yaml.safe_load(text)
    assert {"override /workload": "load"} in conf["defaults"]
    assert {"override /trace": "kth_sp2"} in conf["defaults"]
    params = conf["hydra"]["sweeper"]["params"]
    assert params["workload.load_factor"] == "0.8,0.9,1.0,1.1,1.2"
    assert params["policy"] == "fcfs,easy,conservative"


def test_the_window_option_on_the_bundled_trace():
    from drevt_sweep.trace import ReadOptions, read_trace

    jobs = read_trace(BUNDLED_KTH, ReadOptions(trace_format="swf", force_simulation=True))
    out, cap, report = apply_workload(jobs, workload_spec(composed("window")))
    start = parse_time("1997-03-01T00:00", "Europe/Stockholm")
    assert out.submit.min() == start and out.submit.max() < parse_time("1997-04-01T00:00", "Europe/Stockholm")
    assert report["warm_running"] > 0 and report["warm_held_nodes"] <= 100
    assert cap.at(start, 100) == 100 - report["warm_held_nodes"]
    s = simulate(out, out.actual_run_time, 100, capacity=cap)
    assert not s.rejected.any() and (s.begin >= out.submit).all()


# --- properties -----------------------------------------------------------------------------------


@st.composite
def tables_and_specs(draw):
    n = draw(st.integers(1, 14))
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 5, 10, 30, 0.5]), min_size=n, max_size=n))
    submit = np.cumsum(gaps)
    waits = np.array(draw(st.lists(st.sampled_from([0, 1, 5, 20, 60]), min_size=n, max_size=n)), dtype=float)
    limit = np.array(draw(st.lists(st.sampled_from([1, 5, 10, 30, 60, 2.5]), min_size=n, max_size=n)), dtype=float)
    run = limit * np.array(draw(st.lists(st.sampled_from([0.1, 0.5, 1.0]), min_size=n, max_size=n)))
    total = draw(st.integers(1, 10))
    nodes = draw(st.lists(st.integers(1, total), min_size=n, max_size=n))
    begin = submit + waits
    jobs = as_forced_simulation(make_jobs(submit.tolist(), nodes, limit.tolist(), run.tolist(),
                                          begin=begin.tolist(), end=(begin + run).tolist(), machine_nodes=total))
    span = float(submit[-1]) + 1
    start = draw(st.none() | st.floats(0, span, allow_nan=False))
    end = draw(st.none() | st.floats(0, span + 10, allow_nan=False))
    if start is not None and end is not None and end <= start:
        end = None
    spec = WorkloadSpec(
        load_factor=draw(st.sampled_from([1.0, 0.5, 0.8, 1.25, 3.0])),
        window_start=start,
        window_end=end,
        warm_start=start is not None and draw(st.booleans()),
        max_jobs=draw(st.none() | st.integers(1, 20)),
        max_time=draw(st.none() | st.sampled_from([5.0, 50.0, 500.0])),
        capacity=tuple(
            (t, draw(st.integers(0, total + 2)))
            for t in draw(st.lists(st.sampled_from([0, 3, 10, 40, 90]), max_size=3, unique=True))
        ),
        maintenance=tuple(draw(st.lists(st.sampled_from(["daily 00:00-00:01 1", "thu 00:00:30-00:02 2"]), max_size=2))),
        rescale_nodes=draw(st.sampled_from([1.0, 0.3, 0.5, 2.0])),
        shake=draw(st.sampled_from([0.0, 0.0, 1.0, 30.0])),
    )
    return jobs, spec, total, draw(st.integers(0, 3))


def snapshot(jobs):
    return {k: v.copy() for k, v in jobs.columns().items()}


@SETTINGS
@given(case=tables_and_specs())
def test_transforms_keep_the_job_table_valid(case):
    jobs, spec, total, seed = case
    before = snapshot(jobs)
    out, cap, report = apply_workload(jobs, spec, seed)
    n = len(out)
    for name, col in out.columns().items():
        assert col.shape == (n,), name
        assert col.dtype == before[name].dtype, name
    assert np.isfinite(out.submit).all() and (np.diff(out.submit) >= 0).all()
    assert (out.num_nodes >= 1).all() and (np.isfinite(out.time_limit) & (out.time_limit > 0)).all()
    if spec.rescale_nodes != 1:
        assert (out.num_nodes <= out.meta.machine_nodes).all()
    assert len(set(out.job_id.tolist())) == n  # no job duplicated
    # the input is untouched, the result deterministic
    for name, col in jobs.columns().items():
        assert np.array_equal(col, before[name], equal_nan=True), name
    again, cap2, report2 = apply_workload(jobs, spec, seed)
    assert np.array_equal(again.submit, out.submit) and cap2 == cap and report2 == report
    # the report adds up
    assert set(report) == set(REPORT_KEYS)
    assert report["jobs_in"] == len(jobs) and report["jobs_out"] == n
    assert report["dropped"] == len(jobs) - n == sum(
        report[k] for k in ("window_dropped_before", "window_dropped_after", "warm_running",
                            "warm_finished", "max_time_dropped", "max_jobs_dropped")
    )
    if spec.window_start is not None and n:
        assert out.submit.min() >= parse_time(spec.window_start, "UTC")


# Slurm's backfill models a constant machine size: it refuses a capacity schedule with a
# ConfigError (tests/test_slurm_backfill.py), so it is not among the policies drawn here.
CAPACITY_BACKFILLS = [b for b in BACKFILL_POLICIES if b != "slurm"]


@SETTINGS
@given(case=tables_and_specs(), backfill=st.sampled_from(CAPACITY_BACKFILLS))
def test_engine_invariants_hold_on_transformed_workloads(case, backfill):
    jobs, spec, total, seed = case
    out, cap, _ = apply_workload(jobs, spec, seed)
    machine = out.meta.machine_nodes or total
    s = simulate(out, out.actual_run_time, machine, backfill=backfill, capacity=cap)
    ran = ~s.rejected
    assert (s.begin[ran] >= out.submit[ran]).all()
    if cap is not None and cap.levels(machine)[0][1:]:
        check_capacity_invariants(out, machine, cap, s, enforce=True)
