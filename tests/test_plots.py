"""Figures: the binned series are exact, the figures carry the right titles, labels and legends,
and they are written as valid PNG files. Small hand-built schedules; no engine needed."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest
from jobtable_factory import make_jobs

from drevt_sweep.report import figures as plots
from drevt_sweep.sim.metrics import compute_metrics
from drevt_sweep.report.html import configuration_figures, seed_percentile_ci
from drevt_sweep.sim.engine import historical_baseline
from drevt_sweep.sim.schedule import Schedule

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def frame(submit, begin, run, nodes, limit=None, job_id=None) -> pd.DataFrame:
    submit = np.asarray(submit, dtype=float)
    begin = np.asarray(begin, dtype=float)
    run = np.asarray(run, dtype=float)
    return pd.DataFrame({
        "job_id": np.arange(submit.size) if job_id is None else job_id,
        "job_submit_time": submit,
        "begin_time": begin,
        "end_time": begin + run,
        "num_nodes": np.asarray(nodes),
        "time_limit": run * 2 if limit is None else np.asarray(limit, dtype=float),
        "actual_run_time": run,
    })


def jobs_and_schedule(total_nodes=4):
    """Five jobs on a 4-node machine, with a hand-made (valid) schedule and a history."""
    submit = [0, 10, 20, 30, 40]
    nodes = [2, 2, 4, 1, 1]
    run = [100, 50, 30, 20, 5]
    limit = [200, 100, 60, 40, 10]
    begin = [0, 10, 110, 140, 140]
    hist_begin = [5, 15, 130, 160, 170]
    jobs = make_jobs(submit, nodes, limit, run, begin=hist_begin,
                     end=[b + r for b, r in zip(hist_begin, run)], job_id=[101, 102, 103, 104, 105])
    b = np.asarray(begin, dtype=float)
    r = np.asarray(run, dtype=float)
    schedule = Schedule("simulation", total_nodes, b, b + r, r, np.zeros(5, bool), np.zeros(5, bool))
    return jobs, schedule


def legend_texts(fig) -> list[str]:
    texts = []
    for legend in list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
        texts.extend(t.get_text() for t in legend.get_texts())
    return texts


def assert_png(path):
    from matplotlib.image import imread

    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100


@pytest.fixture(autouse=True)
def no_leaked_figures():
    # Closed before as well as after: under xdist a test of another module that ran earlier in the
    # same worker may have left a figure open, which the check below must not blame on this code.
    plots.plt.close("all")
    yield
    plots.plt.close("all")


# ------------------------------------------------------------------ binned series are exact
def brute_force_bins(instants, level, edges, samples=4000):
    """Time average and max per bin by dense sampling of the step function (for checking)."""
    means, peaks = [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        t = np.linspace(lo, hi, samples, endpoint=False)
        i = np.searchsorted(instants, t, side="right") - 1
        values = np.where(i >= 0, level[np.maximum(i, 0)], 0.0)
        means.append(values.mean())
        inside = instants[(instants > lo) & (instants < hi)]
        j = np.searchsorted(instants, inside, side="right") - 1
        peaks.append(max([values[0]] + list(level[j])))
    return np.array(means), np.array(peaks)


def test_step_profile_applies_simultaneous_events_together():
    # A job ending at 10 while another of the same size starts then: no dip to 0 at 10.
    instants, level = plots.step_profile([0, 10], [10, 20], [3, 3])
    assert instants.tolist() == [0, 10, 20]
    assert level.tolist() == [3, 3, 0]
    # submit and start at one instant (no wait): the job is never counted as queued
    instants, level = plots.step_profile([5, 5], [5, 9])
    assert level.max() == 1 and level.tolist() == [1, 0]


def test_binned_mean_and_peak_by_hand():
    instants, level = plots.step_profile([10], [30], [2])  # 2 nodes busy on [10, 30)
    mean, peak = plots.binned_mean_max(instants, level, np.array([0.0, 20.0, 40.0]))
    assert mean.tolist() == [1.0, 1.0]
    assert peak.tolist() == [2.0, 2.0]
    mean, peak = plots.binned_mean_max(instants, level, np.array([0.0, 5.0, 10.0, 35.0, 50.0]))
    assert mean == pytest.approx([0.0, 0.0, 40 / 25, 0.0])
    assert peak.tolist() == [0.0, 0.0, 2.0, 0.0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binned_series_match_a_brute_force_sampling(seed):
    rng = np.random.default_rng(seed)
    up = rng.uniform(0, 1000, 60)
    down = up + rng.uniform(1, 300, 60)
    weight = rng.integers(1, 5, 60)
    instants, level = plots.step_profile(up, down, weight)
    edges = np.linspace(-50, 1400, 13)
    mean, peak = plots.binned_mean_max(instants, level, edges)
    want_mean, want_peak = brute_force_bins(instants, level, edges)
    assert mean == pytest.approx(want_mean, abs=0.05)
    assert peak.tolist() == want_peak.tolist()


def test_binned_utilization_and_queue_integrate_to_the_metrics():
    jobs, schedule = jobs_and_schedule()
    f = plots.schedule_frame(jobs, schedule)
    metrics = compute_metrics(jobs, schedule)
    t0, t1 = f.job_submit_time.min(), f.end_time.max()
    edges = plots.bin_edges(t0, t1, bins=7)
    series = plots.usage_series(f, 4, edges)
    widths = np.diff(edges)
    assert (series["utilization"] * widths).sum() / (t1 - t0) == pytest.approx(metrics["utilization"])
    assert (series["queue_mean"] * widths).sum() / (t1 - t0) == pytest.approx(metrics["queue_length_mean"])
    assert series["queue_peak"].max() == metrics["queue_length_max"]
    assert plots.overall_utilization(f, 4) == pytest.approx(metrics["utilization"])


def test_default_bins_are_round_and_bounded():
    edges = plots.bin_edges(0.0, 333 * 86400.0)
    assert edges.size - 1 <= plots.DEFAULT_BINS
    assert edges[1] - edges[0] == 86400.0  # a year-long trace is shown day by day
    assert edges[-1] == 333 * 86400.0
    assert plots.bin_edges(0.0, 1e9, bins=10**6).size - 1 == plots.MAX_BINS


def test_a_million_jobs_draw_a_small_figure_quickly(tmp_path):
    rng = np.random.default_rng(0)
    n = 1_000_000
    submit = np.sort(rng.uniform(0, 3e7, n))
    wait = np.where(rng.random(n) < 0.3, 0.0, rng.exponential(3600, n))
    f = frame(submit, submit + wait, rng.exponential(3000, n), rng.integers(1, 64, n))
    started = time.perf_counter()
    fig = plots.usage_figure(f, 4096, label="big")
    path = plots.save_figure(fig, tmp_path / "big.png")
    elapsed = time.perf_counter() - started
    assert elapsed < 15, elapsed  # about 2 s on a busy 2-core machine
    assert path.stat().st_size < 400_000
    assert_png(path)


# ------------------------------------------------------------------ wait-time CDF
def test_wait_cdf_handles_zero_waits_and_carries_labels(tmp_path):
    sim = frame([0, 0, 0, 0], [0, 0, 5, 100], [10, 10, 10, 10], [1, 1, 1, 1])
    base = frame([0, 0, 0, 0], [0, 50, 60, 500], [10, 10, 10, 10], [1, 1, 1, 1])
    fig = plots.wait_cdf_figure({"easy · actual": sim, "fcfs": np.array([0.0, 3.0, 1e4])}, base,
                                seed_percentiles={"easy · actual": {0.5: (20.0, 5.0)}},
                                title="Waits")
    ax = fig.axes[0]
    assert ax.get_title() == "Waits"
    assert ax.get_xscale() == "log"
    assert ax.get_xlabel().startswith("wait time (h, log scale") and "0 included" in ax.get_xlabel()
    assert ax.get_ylabel() == "fraction of jobs with wait ≤ x"
    texts = legend_texts(fig)
    assert any(t.startswith("easy · actual (50% wait ≤ 1 s, n = 4)") for t in texts)
    assert any(t.startswith("fcfs (33% wait ≤ 1 s") for t in texts)
    assert any(t.startswith(plots.REPLAY_LABEL + " (25% wait ≤ 1 s") for t in texts)
    assert "percentiles over seeds: mean ± 95% CI" in texts
    # the curve starts at the share of waits at or below the floor: the jump at 0 is shown
    first = ax.get_lines()[0]
    assert first.get_xdata()[0] == plots.WAIT_FLOOR / 3600 and first.get_ydata()[0] == 0.5  # hours
    assert first.get_ydata()[-1] == 1.0
    assert_png(plots.save_figure(fig, tmp_path / "cdf.png"))


def test_ecdf_on_grid_counts_waits_at_or_below():
    assert plots.ecdf_on_grid(np.array([3.0, 0.0, 1.0, np.nan]), np.array([0.5, 1.0, 5.0])).tolist() == [
        1 / 3, 2 / 3, 1.0]


# ------------------------------------------------------------------ utilization and queue
def test_usage_figure_axes_and_legend(tmp_path):
    jobs, schedule = jobs_and_schedule()
    f = plots.schedule_frame(jobs, schedule)
    base = plots.schedule_frame(jobs, historical_baseline(jobs, 4))
    fig = plots.usage_figure(f, 4, baseline=base, label="easy", title="Usage")
    top, bottom = fig.axes
    assert top.get_title().startswith("Usage\n(time averages over")
    assert top.get_ylabel() == "utilization (%)"
    assert bottom.get_ylabel() == "queue length (waiting jobs)"
    assert bottom.get_xlabel().startswith("time (s; 0 = first submit")
    texts = legend_texts(fig)
    assert any(t.startswith("easy (overall ") for t in texts)
    assert any(t.startswith(plots.REPLAY_LABEL + " (overall ") for t in texts)
    assert "easy: peak in bin" in texts and "easy: mean" in texts
    util = top.get_lines()[0].get_ydata()
    assert 0 <= util.min() and util.max() <= 100
    assert_png(plots.save_figure(fig, tmp_path / "usage.png"))


# ------------------------------------------------------------------ slowdown by class
def test_slowdown_classes_by_size_and_limit():
    f = frame([0] * 6, [0, 10, 0, 0, 100, 0], [5, 20, 20, 3600, 100, 50],
              [1, 2, 4, 5, 16, 17], limit=[60, 600, 601, 3600, 7200, 10**6])
    by_size = plots.slowdown_by_class(f, "size")
    assert by_size["class"].tolist()[:4] == ["1", "2–4", "5–16", "17–64"]
    assert by_size["jobs"].tolist()[:4] == [1, 2, 2, 1]
    # job 0: wait 0, run 5 < tau -> max(1, 5/10) = 1; job 1: (10+20)/20 = 1.5; job 2: 1
    assert by_size["mean"].tolist()[:2] == [1.0, pytest.approx(1.25)]
    by_limit = plots.slowdown_by_class(f, "limit")
    assert by_limit["class"].tolist()[0] == "≤ 10 min"
    assert by_limit["jobs"].tolist() == [2, 2, 1, 0, 0, 1]  # 600 s is in "≤ 10 min"


def test_slowdown_figure_labels(tmp_path):
    jobs, schedule = jobs_and_schedule()
    f = plots.schedule_frame(jobs, schedule)
    fig = plots.slowdown_figure({"easy": f, plots.REPLAY_LABEL: f}, title="Slowdown")
    left, right = fig.axes
    assert fig.get_suptitle() == "Slowdown"
    assert left.get_xlabel() == "job size (nodes)"
    assert right.get_xlabel() == "requested time (time limit)"
    assert left.get_ylabel().startswith("mean bounded slowdown (τ = 10 s")
    assert legend_texts(fig) == ["easy", plots.REPLAY_LABEL]
    assert [t.get_text().split("\n")[0] for t in left.get_xticklabels()] == ["1", "2–4"]
    assert_png(plots.save_figure(fig, tmp_path / "bsld.png"))


# ------------------------------------------------------------------ Gantt chart
def test_gantt_slots_never_overlap_and_stay_on_the_machine(tmp_path):
    rng = np.random.default_rng(3)
    from drevt_sweep.sim import engine

    n = 60
    submit = np.sort(rng.uniform(0, 2000, n))
    nodes = rng.choice([1, 2, 3, 8], n)
    run = rng.uniform(10, 400, n).round()
    jobs = make_jobs(submit, nodes, run * 2, run)
    schedule = engine.simulate(jobs, jobs.actual_run_time, 8, priority="fcfs", backfill="easy")
    f = plots.schedule_frame(jobs, schedule)
    slots = plots.assign_slots(f.begin_time.to_numpy(), f.end_time.to_numpy(), f.num_nodes.to_numpy())
    sets = [{s + k for s, c in runs for k in range(c)} for runs in slots]
    for j in range(n):
        assert len(sets[j]) == f.num_nodes[j] and max(sets[j]) < 8
        for k in range(j + 1, n):
            if f.begin_time[j] < f.end_time[k] and f.begin_time[k] < f.end_time[j]:
                assert not sets[j] & sets[k]
    fig = plots.gantt_figure(f, 8, title="Schedule")
    ax = fig.axes[0]
    assert ax.get_title() == "Schedule: 60 jobs on 8 nodes (labels = job id)"
    assert ax.get_ylabel() == "node slot"
    assert ax.get_xlabel().startswith("time (")
    assert legend_texts(fig) == ["machine size (8 nodes)"]
    assert {t.get_text() for t in ax.texts} <= {str(i) for i in f.job_id}
    assert_png(plots.save_figure(fig, tmp_path / "gantt.png"))


def test_gantt_labels_jobs_and_refuses_huge_schedules():
    jobs, schedule = jobs_and_schedule()
    f = plots.schedule_frame(jobs, schedule)
    fig = plots.gantt_figure(f, 4)
    assert {t.get_text() for t in fig.axes[0].texts} >= {"101", "102", "103"}
    with pytest.raises(ValueError, match="unreadable"):
        plots.gantt_figure(pd.concat([f] * 100), 4, max_jobs=400)


# ------------------------------------------------------------------ sweep figures
def comparison_rows():
    rows = []
    for policy, factor in (("fcfs", 50.0), ("easy", 1.0)):
        for model, bump in (("actual", 1.0), ("lognormal", 0.6)):
            rows.append({"policy": policy, "model": model,
                         "wait_mean": 1000 * factor * bump, "wait_mean_ci95": 0 if model == "actual" else 100.0,
                         "wait_p95": 5000 * factor * bump, "wait_p95_ci95": np.nan,
                         "bsld_mean": 10 * factor * bump, "bsld_mean_ci95": 1.0,
                         "utilization": 0.7 * bump, "utilization_ci95": 0.01})
    return pd.DataFrame(rows)


def test_comparison_figure_titles_ticks_and_legend(tmp_path):
    reference = pd.DataFrame([{"policy": "replay", "model": "history", "wait_mean": 9000.0,
                               "wait_p95": 20000.0, "bsld_mean": 40.0, "utilization": 0.71}])
    fig = plots.comparison_figure(comparison_rows(), reference=reference)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == [
        "mean wait", "95th percentile of the wait", "mean bounded slowdown (τ = 10 s)", "utilization"]
    assert fig.get_suptitle() == "Policies × run-time models: mean over seeds ± 95% CI"
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["fcfs", "easy"]
    assert axes[0].get_xlabel() == "policy"
    assert axes[0].get_yscale() == "log"  # 50x apart
    assert axes[0].get_ylabel() == "wait (h), log scale"
    assert axes[3].get_yscale() == "linear" and axes[3].get_ylabel() == "utilization (%)"
    assert axes[3].get_ylim()[0] == 0
    assert legend_texts(fig) == [plots.REPLAY_LABEL, "actual", "lognormal"]
    assert fig.legends[0].get_title().get_text() == "run-time model"
    assert_png(plots.save_figure(fig, tmp_path / "comparison.png"))


def test_paired_difference_by_hand():
    from scipy import stats

    a = {0: 10.0, 1: 12.0, 2: 14.0, 3: 99.0}
    b = {0: 9.0, 1: 11.0, 2: 13.5}
    d = plots.paired_difference(a, b)
    assert d.n == 3  # only the common seeds
    assert d.difference == pytest.approx(-2.5 / 3)
    diffs = np.array([-1.0, -1.0, -0.5])
    assert d.paired_ci95 == pytest.approx(stats.t.ppf(0.975, 2) * diffs.std(ddof=1) / math.sqrt(3))
    welch = stats.ttest_ind([9.0, 11.0, 13.5], [10.0, 12.0, 14.0], equal_var=False)
    ci = welch.confidence_interval(0.95)
    assert d.unpaired_ci95 == pytest.approx((ci.high - ci.low) / 2)
    assert d.paired_ci95 < d.unpaired_ci95 / 5  # common random numbers: far tighter
    assert d.ratio > 5
    one = plots.paired_difference({0: 1.0}, {0: 3.0})
    assert one.n == 1 and one.difference == 2.0 and math.isnan(one.paired_ci95)
    assert plots.paired_difference({0: 1.0}, {1: 1.0}).n == 0


def test_paired_figure_rows_and_legend(tmp_path):
    table = pd.DataFrame([
        {"comparison": "easy − fcfs · lognormal", "metric": "wait_mean", "difference": -30000.0,
         "paired_ci95": 4000.0, "unpaired_ci95": 5000.0},
        {"comparison": "easy − fcfs · lognormal", "metric": "utilization", "difference": 0.0001,
         "paired_ci95": 0.0002, "unpaired_ci95": 0.01},
        {"comparison": "conservative − easy · lognormal", "metric": "wait_mean", "difference": 150.0,
         "paired_ci95": 180.0, "unpaired_ci95": 450.0},
    ])
    fig = plots.paired_figure(table)
    assert fig.axes[0].get_title() == "mean wait" and fig.axes[1].get_title() == "utilization"
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["easy − fcfs · lognormal"]
    # one unit per metric (units.py), whatever the size of the difference
    assert fig.axes[0].get_xlabel() == "B − A (h)" and fig.axes[2].get_xlabel() == "B − A (h)"
    texts = legend_texts(fig)
    assert texts[0].startswith("paired 95% CI") and texts[1].startswith("unpaired 95% CI")
    assert_png(plots.save_figure(fig, tmp_path / "paired.png"))


def test_metric_curves_figure(tmp_path):
    rows = []
    for policy in ("fcfs", "easy"):
        for f in (0.8, 1.0, 1.2):
            rows.append({"load_factor": f, "line": policy, "wait_mean": 3600 * f * (3 if policy == "fcfs" else 1),
                         "wait_mean_ci95": 360.0, "bsld_mean": 2 * f, "bsld_mean_ci95": 0.1,
                         "utilization": 0.6 * f, "utilization_ci95": 0.01})
    fig = plots.metric_curves_figure(pd.DataFrame(rows), x="load_factor", x_label="workload.load_factor",
                                     metrics=("wait_mean", "bsld_mean", "utilization"))
    assert [ax.get_xlabel() for ax in fig.axes] == ["workload.load_factor"] * 3
    assert fig.axes[0].get_title() == "mean wait" and fig.axes[0].get_ylabel() == "mean wait (h)"
    assert fig.axes[2].get_ylabel() == "utilization (%)"
    assert legend_texts(fig) == ["fcfs", "easy"]
    line = fig.axes[0].get_lines()[0]
    assert line.get_xdata().tolist() == [0.8, 1.0, 1.2]
    assert line.get_ydata().tolist() == pytest.approx([2.4, 3.0, 3.6])  # hours
    bands = [c for c in fig.axes[0].collections]
    assert len(bands) == 2  # one CI band per line
    assert_png(plots.save_figure(fig, tmp_path / "load.png"))


# ------------------------------------------------------------------ per configuration
def test_configuration_figures_writes_valid_pngs(tmp_path):
    jobs, schedule = jobs_and_schedule()
    baseline = historical_baseline(jobs, 4)
    assert baseline is not None and baseline.mode == "replay"
    seeds = [{"wait_median": 10.0, "wait_p90": 50.0, "wait_p95": 60.0, "wait_p99": 70.0},
             {"wait_median": 12.0, "wait_p90": 55.0, "wait_p95": 66.0, "wait_p99": 80.0}]
    paths = configuration_figures(tmp_path / "figs", jobs, schedule, baseline, label="easy · actual",
                                  seed_metrics=seeds, seed=0)
    assert [p.name for p in paths] == ["wait_cdf.png", "utilization_queue.png",
                                       "slowdown_by_class.png", "gantt.png"]
    for path in paths:
        assert_png(path)
    assert not plots.plt.get_fignums()  # every figure was closed


def test_historical_baseline_needs_recorded_times():
    jobs = make_jobs([0, 1], [1, 1], [10, 10], [5, 5])
    assert historical_baseline(jobs, 4) is None


def test_seed_percentile_ci():
    assert seed_percentile_ci([{"wait_median": 1.0}]) == {}
    ci = seed_percentile_ci(pd.DataFrame({"wait_median": [1.0, 3.0], "wait_p95": [10.0, 10.0]}))
    assert ci[0.5][0] == 2.0 and ci[0.5][1] > 0
    assert ci[0.95] == (10.0, 0.0)


def test_the_student_t_quantile_is_scipy_stats_own():
    """aggregate() and the figures' CI use scipy.special.stdtrit, not scipy.stats (its import
    costs more than the figures): the same numbers, bit for bit."""
    from scipy import stats
    from scipy.special import stdtrit

    for n in (2, 3, 8, 30, 100, 1000):
        assert stdtrit(n - 1, 0.975) == stats.t.ppf(0.975, n - 1)


def test_the_sweep_s_figures_are_the_report_s(tmp_path):
    """figures.configuration_figure_files (what the sweep draws) writes the files
    report.html's configuration_figures writes, byte for byte."""
    jobs, schedule = jobs_and_schedule()
    baseline = historical_baseline(jobs, 4)
    seeds = [{"wait_median": 10.0, "wait_p90": 50.0, "wait_p95": 60.0, "wait_p99": 70.0},
             {"wait_median": 12.0, "wait_p90": 55.0, "wait_p95": 66.0, "wait_p99": 80.0}]
    ours = plots.configuration_figure_files(
        tmp_path / "a", plots.schedule_frame(jobs, schedule), int(schedule.total_nodes),
        plots.schedule_frame(jobs, baseline), label="easy · actual", seed_metrics=seeds, seed=0)
    theirs = configuration_figures(tmp_path / "b", jobs, schedule, baseline, label="easy · actual",
                                   seed_metrics=seeds, seed=0)
    assert [p.name for p in ours] == [p.name for p in theirs]
    assert [p.read_bytes() for p in ours] == [p.read_bytes() for p in theirs]
    assert plots.seed_percentile_ci(seeds) == seed_percentile_ci(seeds)


def test_log_axes_are_labelled_without_mathtext():
    fig = plots.wait_cdf_figure({"a": np.array([0.0, 5.0, 50.0, 5e4, 2e5])})
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    plots.plt.close(fig)
    assert labels and not any("$" in text for text in labels)
    assert {"0.001", "0.01", "0.1", "1", "10"} <= set(labels)  # hours: 5 s to 56 h
    formatter = plots.PlainLogFormatter(labelOnlyBase=False)
    assert [formatter._num_to_string(x, 0, 0) for x in (1000.0, 1e4, 1e5, 1e-4)] == ["1000", "10⁴", "10⁵", "10⁻⁴"]
