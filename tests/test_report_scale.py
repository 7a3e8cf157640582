"""The report at scale and its headline, on sweep folders of real KTH-SP2 simulations written by
``benchmarks/gen_sweep_folder.py`` (the files ``drevt-sweep -m`` writes, without Hydra).

A 1,000-configuration sweep's report: at most 5 MB, no per-configuration sections unless asked,
every configuration in the sortable table, a figure of each metric against the swept machine
size, a rejected-jobs column (KTH-SP2 has 100-node jobs; machines below 100 nodes reject them),
and in headless Chromium it renders within 3 s and sorts by a header click. The headline names
EASY over FCFS on KTH-SP2, where backfilling lowers the wait."""

from __future__ import annotations

import importlib.util
import json
import re
import time
from pathlib import Path

import pytest

from drevt_sweep.report import html as report
from test_report import parse

GENERATOR = Path(__file__).parents[1] / "benchmarks" / "gen_sweep_folder.py"


def generator():
    spec = importlib.util.spec_from_file_location("gen_sweep_folder", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def easy_vs_fcfs(tmp_path_factory):
    """FCFS and EASY on 100 nodes, a week of KTH-SP2, lognormal run times over 4 common seeds."""
    out = tmp_path_factory.mktemp("known") / "sweep"
    return generator().write_sweep_folder(out, days=7, seeds=4, sizes=[100], models=["lognormal", "actual"])


def headline_text(page) -> str:
    text = " ".join(page.text)
    return re.sub(r"\s+", " ", text[text.index("Headline"):text.index("Summary")])


def test_the_headline_names_the_known_winner(easy_vs_fcfs):
    records, _ = report.load_folder(easy_vs_fcfs)
    by_policy = {(r.params["policy.name"], r.params["run_time.name"]): r for r in records}
    for model in ("lognormal", "actual"):  # what the headline must find
        assert by_policy[("easy", model)].metrics["wait_mean"] < by_policy[("fcfs", model)].metrics["wait_mean"]
    page = parse(report.build_report(easy_vs_fcfs))
    assert page.headings["h2"][0] == "Headline"
    text = headline_text(page)
    lognormal = text[text.index("lognormal (2 configurations)"):]
    assert lognormal.startswith("lognormal (2 configurations). Best mean wait: easy (")
    assert "runner-up fcfs" in lognormal
    # the paired CI over the 4 common seeds, in hours, with better/worse wording
    match = re.search(r"Best mean wait: easy \([\d.,]+ h\); runner-up fcfs \([\d.,]+ h\): [\d.,]+ h lower"
                      r"(?: \(better\); paired 95% CI of the difference −[\d.,]+ h to −[\d.,]+ h over 4 "
                      r"common seeds, so the difference is resolved|, not resolved — the paired 95% CI)", lognormal)
    assert match, lognormal[:600]
    actual = text[text.index("actual (2 configurations)"):]
    assert re.search(r"Best mean wait: easy \([\d.,]+ h\); runner-up fcfs \([\d.,]+ h\): [\d.,]+ h lower \(better\), "
                     r"exact \(deterministic run times, one seed each\)", actual), actual[:400]


def test_a_ci_spanning_zero_is_not_resolved_and_equal_metrics_say_why(easy_vs_fcfs, tmp_path):
    """Two configurations that differ in a setting the simulation ignores: every metric is the
    same, the headline says so and why for utilization; a pair whose CI spans zero says
    "not resolved"."""
    from drevt_sweep.report.headline import metric_sentence

    records, _ = report.load_folder(easy_vs_fcfs)
    report.describe(records)
    easy = next(r for r in records if r.params["policy.name"] == "easy" and r.params["run_time.name"] == "lognormal")
    twin = report.ConfigRecord(**{**easy.__dict__, "key": "easy twin"})
    sentence = metric_sentence([easy, twin], "utilization", "utilization")
    assert sentence.startswith("Utilization is ") and "for every configuration here" in sentence
    assert "the makespan is set by the arrivals" in sentence
    noisy = report.ConfigRecord(**{**easy.__dict__, "key": "easy noisy"})
    frame = easy.seed_metrics.copy()
    frame["wait_mean"] = frame["wait_mean"] + [-3600.0, 3600.0, -3000.0, 3300.0]  # mean +75 s, wide spread
    noisy.seed_metrics = frame
    noisy.metrics = {**easy.metrics, "wait_mean": float(frame["wait_mean"].mean())}
    sentence = metric_sentence([easy, noisy], "wait_mean", "mean wait")
    assert "not resolved — the paired 95% CI of the difference" in sentence and "spans zero" in sentence


def test_offered_load_per_configuration(easy_vs_fcfs):
    page = parse(easy_vs_fcfs / "report.html" if (easy_vs_fcfs / "report.html").is_file()
                 else report.build_report(easy_vs_fcfs))
    rows = page.table("offered")
    assert rows[0] == ["configuration", "nodes", "node-hours demanded (node-h)", "arrival span (h)",
                       "offered load (%)", "utilization (%)"]
    records, _ = report.load_folder(easy_vs_fcfs)
    # by hand for one configuration: node-seconds of its seeds over nodes x the arrival span
    from drevt_sweep.report.figures import read_schedule_csv

    r = next(r for r in records if r.params["policy.name"] == "fcfs" and r.params["run_time.name"] == "actual")
    frame = read_schedule_csv(r.schedule_path)
    demand = float(((frame["end_time"] - frame["begin_time"]) * frame["num_nodes"]).sum())
    span = frame["job_submit_time"].max() - frame["job_submit_time"].min()
    row = next(row for row in rows[1:] if row[0] == "fcfs · actual")
    assert row[1] == "100"
    assert float(row[2].replace(",", "")) == pytest.approx(demand / 3600, abs=0.5)
    assert float(row[4]) == pytest.approx(100 * demand / (100 * span), abs=0.051)
    # the same policy-independent demand for EASY (the same jobs and run times)
    assert next(row for row in rows[1:] if row[0] == "easy · actual")[2] == row[2]


# ============================================================== 1,000 configurations (slow)
@pytest.fixture(scope="module")
def thousand(tmp_path_factory):
    out = tmp_path_factory.mktemp("big") / "sweep"
    # (no schedule files: a sweep of more than 8 configurations keeps none, figures=auto)
    return generator().write_sweep_folder(out, configurations=1000, days=7, seeds=2, schedules=False)


@pytest.mark.slow
def test_a_1000_configuration_report_stays_small_and_whole(thousand):
    started = time.process_time()
    path = report.build_report(thousand)
    cpu = time.process_time() - started
    size = path.stat().st_size
    assert size <= 5 * 1024 * 1024, f"{size / 1e6:.1f} MB"
    page = parse(path)
    assert page.headings["h3"] == []  # no per-configuration sections above the threshold
    summary = page.table("summary")
    assert len(summary) == 1 + 1000
    assert summary[0][:5] == ["configuration", "status", "total_nodes", "seeds", "jobs run"]
    assert summary[0][5] == "rejected jobs" and summary[0][6] == "mean wait (h)"
    assert any(row[5] != "0" for row in summary[1:])  # small machines reject KTH's widest jobs
    offered = page.table("offered")
    assert offered[0][:3] == ["configuration", "nodes", "rejected jobs"] and len(offered) == 1 + 1000
    alts = {image["alt"] for image in page.images}
    assert "metrics against system.total_nodes" in alts
    assert len(page.images) <= 4  # sweep figures only
    text = headline_text(page)
    wins = re.findall(r"Best mean wait, of 100 values of system.total_nodes: easy at (\d+)", text)
    assert len(wins) == 5 and all(int(n) >= 50 for n in wins), text[:2000]  # per run-time model
    assert not (thousand / "report_files" / "config_0").exists()
    (thousand / "build.json").write_text(json.dumps({"cpu": cpu, "bytes": size}))


@pytest.mark.slow
def test_sections_on_request(thousand, tmp_path):
    """``--per-configuration all`` adds the sections (here without their figures, to stay fast)."""
    assert report.main([str(thousand), "--per-configuration", "all", "--sweep-figures-only"]) == 0
    page = parse(thousand / "report.html")
    assert len(page.headings["h3"]) == 1000


SORT_PROBE = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="report" style="width:1366px;height:900px;border:0"></iframe>
<script>
var frame = document.getElementById("report"), started = performance.now();
frame.addEventListener("load", function () {
  var doc = frame.contentDocument;
  doc.documentElement.getBoundingClientRect();  // layout done
  var loaded = performance.now() - started;
  var table = doc.querySelector("table.summary"), th = table.tHead.rows[0].cells[2];
  var t0 = performance.now();
  th.click();  // ascending
  th.click();  // descending
  var sorted = performance.now() - t0;
  var first = Array.prototype.slice.call(table.tBodies[0].rows, 0, 3).map(function (r) {
    return r.cells[2].textContent; });
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({loaded: loaded, sorted: sorted, first: first,
                                    rows: table.tBodies[0].rows.length, images: doc.images.length,
                                    broken: Array.prototype.filter.call(doc.images, function (i) {
                                      return !(i.complete && i.naturalWidth > 0); }).length});
  document.body.appendChild(out);
});
frame.src = "%(url)s";
</script></body></html>"""


@pytest.mark.slow
def test_a_1000_configuration_report_renders_in_chromium_whole_and_sortable(thousand, tmp_path):
    from test_report_browser import FLAGS, chromium, console_messages

    path = thousand / "report.html"
    if not path.is_file() or len(parse(path).headings["h3"]):
        report.build_report(thousand)
    probe = tmp_path / "probe.html"
    probe.write_text(SORT_PROBE % {"url": path.as_uri()})
    import subprocess

    profile = tmp_path / "profile"
    profile.mkdir()
    proc = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", "--allow-file-access-from-files",
                           "--enable-logging=stderr", "--v=0", "--window-size=1366,900", "--dump-dom",
                           probe.as_uri()], capture_output=True, text=True, timeout=180)
    match = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout)
    assert match, proc.stderr[-2000:]
    found = json.loads(match.group(1))
    assert console_messages(proc.stderr) == []
    assert found["rows"] == 1000 and found["broken"] == 0
    # ms from navigation to a laid-out page. The target (<= 3 s) is benchmarks/bench_report.py's
    # to measure; here only a render gone badly wrong (a quadratic script, a blocking resource)
    # fails: 3.3 s was measured at load 9 on the 2-core machine, the suite beside it.
    assert found["loaded"] <= 15000, found
    assert found["first"] == ["159", "159", "159"]  # sorted by machine size, largest first
    (thousand / "render.json").write_text(json.dumps(found))
