"""One display unit per metric (``drevt_sweep.units``), and search.html in it: hours for
waits, percent for utilization, plain decimals, never scientific notation (issue 24 item 7)."""

from __future__ import annotations

import re

import pytest

from drevt_sweep import units


@pytest.mark.parametrize("metric, unit", [
    ("wait_mean", "h"), ("wait_p95_ci95", "h"), ("queue/gpu/wait_mean", "h"), ("makespan", "h"),
    ("partition/batch/node_utilization", "%"), ("utilization_std", "%"), ("bsld_mean", ""),
    ("jobs_rejected", "jobs"), ("something_new", ""),
])
def test_every_form_of_a_metric_has_its_one_unit(metric, unit):
    assert units.unit(metric).name == unit


def test_numbers_are_plain_decimals_with_three_significant_digits():
    assert units.number("wait_mean", 7 * 3600 + 360) == "7.10"
    assert units.number("wait_mean", 1e10) == "2,777,778"  # 1e10 s, not 2.78e+06
    assert units.number("wait_mean", 1.0) == "0.0003"  # at most 4 decimals
    assert units.number("utilization", 0.6971) == "69.7"
    assert units.number("utilization", -0.012, signed=True) == "−1.20"
    assert units.quantity("utilization", 0.012, signed=True) == "+1.20 pp"
    assert units.quantity("wait_mean", 5400.0) == "1.50 h"
    assert units.number("bsld_mean", float("nan")) == "–"
    assert units.decimals("wait_mean", [36.0, 3600.0, 360000.0]) == 2  # from the median, 1.00 h
    assert units.header("wait_p95", "p95 wait") == "p95 wait (h)"
    assert units.header("bsld_mean", "mean bounded slowdown") == "mean bounded slowdown"
    assert units.header("utilization", "B − A", difference=True) == "B − A (pp)"
    assert units.lower_is_better("wait_mean") and not units.lower_is_better("queue/a/utilization")


def test_search_html_shows_its_metric_in_its_unit_without_exponents(tmp_path):
    from drevt_sweep.report.search import plain, write_search_report

    probes = [{"value": v, "mean": m, "ci95": c, "side": s, "n_seeds": 4}
              for v, m, c, s in ((1e-4, 1.5e6, 2.0e5, "fail"), (0.5, 9000.0, 400.0, "pass"),
                                 (2_000_000.0, 3600.0, float("nan"), "pass"))]
    result = {"kind": "threshold", "question": {"metric": "wait_p95", "target": 14400.0, "direction": "below",
                                                "param": "workload.load_factor", "low": 1e-4, "high": 2e6,
                                                "max_seeds": 8},
              "probes": probes, "runs": 12, "answer": None, "bracket": [1e-4, 2e6], "sentence": "s",
              "warnings": [], "simulated_runs": 12, "reused_runs": 0, "seconds": 1.0, "trace_checksum": "x"}
    page = write_search_report(result, tmp_path).read_text()
    table = page[page.index("<table>"):page.index("</table>")]
    assert not re.search(r"\de[+-]?\d", table)  # no scientific notation anywhere in the table
    assert "<th>wait_p95 (h)</th>" in table
    cells = re.findall(r"<td>(.*?)</td>", table)
    assert cells[:5] == ["0.0001", "416.67", "± 55.56", "4", "fail"]  # 1.5e6 s = 416.67 h
    assert cells[10:13] == ["2000000", "1.00", ""]  # one number of decimals for the column
    assert plain(0.32500000000000007) == "0.325"  # float noise does not reach the page


def test_the_sweep_summary_shows_each_metric_in_the_reports_unit():
    """Issue 24 item 7: one unit per metric in the terminal, summary.csv and the report."""
    from drevt_sweep.sweep.app import format_summary, summary_frame

    result = {"name": "easy", "status": "FINISHED", "seeds": [0, 1],
              "metrics": {"wait_mean": 7200.0, "wait_mean_ci95": 360.0, "wait_p95": 36000.0,
                          "bsld_mean": 3.5, "utilization": 0.625, "makespan": 86400.0,
                          "jobs_rejected": 0}}
    frame = summary_frame([result])
    row = frame.iloc[0]
    assert row["wait_mean_h"] == 2.0 and row["wait_mean_h_ci95"] == 0.1
    assert row["wait_p95_h"] == 10.0 and row["utilization_pct"] == 62.5 and row["makespan_h"] == 24.0
    table = format_summary(frame)
    assert "mean wait (h)" in table and "2.00 ± 0.10" in table and "utilization (%)" in table
    assert "62.5" in table


def test_a_long_sweeps_terminal_table_shows_both_ends_and_where_the_rest_is():
    from drevt_sweep.sweep.app import format_summary, summary_frame

    def result(i: int, rejected: int = 0) -> dict:
        return {"name": f"nodes={i}", "status": "FINISHED", "seeds": [0],
                "metrics": {"wait_mean": 3600.0 * i, "wait_p95": 0.0, "bsld_mean": 1.0,
                            "utilization": 0.5, "makespan": 3600.0, "jobs_rejected": rejected}}

    # one configuration in the middle rejected jobs: the column is there though its row is not
    frame = summary_frame([result(i, rejected=5 if i == 50 else 0) for i in range(100)])
    lines = format_summary(frame, max_rows=10).split("\n")
    assert len(lines) == 1 + 10 + 1
    assert "rejected (jobs)" in lines[0]
    assert lines[1].split()[0] == "nodes=0" and lines[5].split()[0] == "nodes=4"
    assert lines[6] == "… 90 more configurations: every one is in summary.csv and report.html …"
    assert lines[7].split()[0] == "nodes=95" and lines[-1].split()[0] == "nodes=99"
    assert format_summary(frame, max_rows=100).count("\n") == 100  # all of them: no note
