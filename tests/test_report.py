"""The sweep report: built from a sweep folder (hand-made here, fast) or from a real multirun's
MLflow store (slow, in a subprocess); valid HTML with the summary, the embedded figures, the
configs, checksums, reproduce commands and paired comparisons."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from jobtable_factory import make_jobs

from drevt_sweep.report import html as report
from drevt_sweep.sim import engine
from drevt_sweep.sim.metrics import compute_metrics
from drevt_sweep.outputs import write_schedule_csv

TINY = Path(__file__).parent / "data" / "traces" / "sweep_tiny.csv"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHECKSUM = "ab" * 32


class Page(HTMLParser):
    """Collects what the tests look at: title, headings, tables, images, text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.headings: dict[str, list[str]] = {"h1": [], "h2": [], "h3": []}
        self.tables: list[dict] = []  # {"class": ..., "rows": [[cell text, ...], ...]}
        self.images: list[dict] = []
        self.text: list[str] = []
        self._stack: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self._stack.append(tag)
        if tag == "table":
            self.tables.append({"class": attrs.get("class", ""), "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "img":
            self.images.append(attrs)
            self._stack.pop()  # a void element

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self.tables:
            self.tables[-1]["rows"][-1].append("".join(self._cell).strip())
            self._cell = None
        while self._stack:
            if self._stack.pop() == tag:
                break

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        current = self._stack[-1] if self._stack else ""
        if current == "title":
            self.title += data
        elif current in self.headings:
            self.headings[current].append(data.strip())

    def table(self, cls: str) -> list[list[str]]:
        return next(t["rows"] for t in self.tables if cls in t["class"].split())


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    assert not page._stack, f"unclosed tags: {page._stack}"
    return page


def assert_embedded_pngs(page: Page) -> None:
    from matplotlib.image import imread

    assert page.images
    for image in page.images:
        prefix = "data:image/png;base64,"
        assert image["src"].startswith(prefix) and image.get("alt")
        data = base64.b64decode(image["src"][len(prefix):], validate=True)
        assert data[:8] == PNG_MAGIC
        assert imread(io.BytesIO(data), format="png").ndim == 3


# ====================================================================== a hand-made sweep folder
def tiny_jobs():
    rng = np.random.default_rng(7)
    n = 16
    submit = np.sort(rng.uniform(0, 600, n)).round()
    nodes = rng.choice([1, 2, 3, 4], n)
    run = rng.uniform(20, 200, n).round()
    # a history: every job starts a little after it was submitted (nodes not checked: a replay)
    begin = submit + rng.uniform(0, 120, n).round()
    return make_jobs(submit, nodes, run * 2, run, begin=begin, end=begin + run)


def config_dict(policy: str, backfill: str, model: str, replay: bool = False, workload=None) -> dict:
    cfg = {
        "trace": {"name": "tiny", "path": "/nonexistent/tiny.csv"},
        "format": {"name": "simple", "timestamp_format": "epoch", "queues": ["all"]},
        "timezone": {"name": "UTC"},
        "run_time": {"name": model, "mode": "distribution" if model == "normal" else model,
                     "distribution": "normal", "scale": 1.0, "stddev": 0.2 if model == "normal" else 0.0,
                     "min_run_time": 1.0},
        "policy": {"name": policy, "priority": "fcfs", "backfill": backfill, "replay": replay},
        "system": {"name": "custom", "total_nodes": 4, "enforce_limits": True},
        "parallel": {"n_jobs": 1, "backend": "loky"},
        "tracking": {"uri": None, "experiment": "drevt-sweep", "log_schedule": True, "enabled": False},
        "paths": {"root": "/nonexistent", "output_root": "/nonexistent/out"},
        "seed": 0, "replicates": 3,
    }
    if workload is not None:
        cfg["workload"] = workload
    return cfg


def write_job(sweep: Path, num: int, cfg: dict, overrides: list[str], jobs, schedule, seeds: list[int],
              status: str = "FINISHED", error: str | None = None) -> None:
    job = sweep / str(num)
    (job / ".hydra").mkdir(parents=True)
    (job / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    (job / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    label = " ".join(f"{g}={cfg[g]['name']}" for g in ("trace", "policy", "run_time", "system"))
    result = {"label": label, "status": status, "parent_run_id": None, "config_hash": f"hash{num}",
              "trace_checksum": CHECKSUM, "total_nodes": 4, "jobs": len(jobs), "seeds": seeds}
    if error:
        result["error"] = error
    if schedule is not None:
        base = compute_metrics(jobs, schedule)
        rows = []
        for s in seeds:  # per-seed metrics that move together (common random numbers)
            rows.append({"seed": s, **{k: v * (1 + 0.05 * s) for k, v in base.items()}})
        frame = pd.DataFrame(rows)
        frame.to_csv(job / "seed_metrics.csv", index=False)
        metrics = {}
        for name in base:
            values = frame[name].to_numpy()
            metrics[name] = float(values.mean())
            metrics[f"{name}_std"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
            metrics[f"{name}_ci95"] = float(2.0 * values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0
        result["metrics"] = metrics
        write_schedule_csv(job / f"schedule_seed{seeds[0]}.csv", jobs, schedule)
    (job / "result.json").write_text(json.dumps(result, indent=2))


def make_sweep(root: Path, workload_factors=None, policies=(("fcfs", "none"), ("easy", "easy")),
               models=("actual", "normal"), extras: bool = True) -> Path:
    """A sweep folder as drevt-sweep writes it; ``extras`` adds a replay and a failed job."""
    sweep = root / "sweep"
    sweep.mkdir(parents=True)
    jobs = tiny_jobs()
    sim = make_jobs(jobs.submit, jobs.num_nodes, jobs.time_limit, jobs.actual_run_time)
    num = 0
    for factor in workload_factors or [None]:
        for policy, backfill in policies:
            for model in models:
                schedule = engine.simulate(sim, sim.actual_run_time, 4, priority="fcfs", backfill=backfill)
                workload = None if factor is None else {"name": "load", "load_factor": factor}
                overrides = [f"policy={policy}", f"run_time={model}", "replicates=3"]
                if factor is not None:
                    overrides.append(f"workload.load_factor={factor}")
                seeds = [0, 1, 2] if model == "normal" else [0]
                write_job(sweep, num, config_dict(policy, backfill, model, workload=workload), overrides,
                          sim, schedule, seeds)
                num += 1
    if extras:
        write_job(sweep, num, config_dict("replay", "none", "actual", replay=True), ["policy=replay"],
                  jobs, engine.replay(jobs, 4), [0])
        write_job(sweep, num + 1, config_dict("sjf", "none", "actual"), ["policy=sjf"], sim, None, [0],
                  status="FAILED", error="something went wrong\nsecond line")
    (sweep / "multirun.yaml").write_text(yaml.safe_dump({"hydra": {"overrides": {
        "hydra": [f"hydra.sweep.dir={sweep}", "hydra.mode=MULTIRUN"],
        "task": ["policy=fcfs,easy,replay,sjf", "run_time=actual,normal", "replicates=3"]}}}))
    return sweep


def small_sweep(root: Path) -> Path:
    return make_sweep(root, policies=(("easy", "easy"),), models=("actual",), extras=False)


def test_report_from_a_sweep_folder(tmp_path):
    sweep = make_sweep(tmp_path)
    path = report.build_report(sweep)
    assert path == sweep.absolute() / "report.html"
    page = parse(path)
    assert page.title == "drevt-sweep report: sweep"
    assert page.headings["h1"] == ["drevt-sweep report: sweep"]
    assert page.headings["h2"] == ["Headline", "Summary", "Comparison", "Wait-time distributions",
                                   "Paired comparisons (common random numbers)", "Configurations",
                                   "How to reproduce"]
    assert page.headings["h3"] == ["fcfs · actual", "fcfs · normal", "easy · actual", "easy · normal",
                                   "replay · history", "sjf · actual"]
    summary = page.table("summary")
    assert summary[0][:3] == ["configuration", "status", "seeds"]
    assert [row[1] for row in summary[1:]] == ["FINISHED"] * 5 + ["FAILEDsomething went wrong"]
    assert [row[2] for row in summary[1:]] == ["1", "3", "1", "3", "1", "1"]
    assert_embedded_pngs(page)
    text = "".join(page.text)
    assert CHECKSUM in text
    assert "drevt-sweep policy=fcfs run_time=normal replicates=3" in text  # from overrides.yaml
    assert f"drevt-sweep -m policy=fcfs,easy,replay,sjf run_time=actual,normal replicates=3 hydra.sweep.dir={sweep}" in text
    assert "Baseline: the replay configuration 'replay · history'." in text
    assert "backfill: easy" in text  # the resolved configs are embedded
    paired = page.table("paired")
    comparisons = {(row[0], row[1]) for row in paired[1:]}
    assert ("easy − fcfs · normal", "mean wait (h)") in comparisons  # the unit beside the metric
    assert ("easy − fcfs · actual", "mean wait (h)") in comparisons
    exact = next(row for row in paired[1:] if row[0] == "easy − fcfs · actual")
    assert exact[6] == "exact"
    files = sorted(p.relative_to(sweep / "report_files").as_posix()
                   for p in (sweep / "report_files").rglob("*.png"))
    assert "comparison.png" in files and "paired.png" in files
    assert {"config_0/wait_cdf.png", "config_0/utilization_queue.png", "config_0/slowdown_by_class.png",
            "config_0/gantt.png"} <= set(files)
    assert not any(f.startswith("config_5/") for f in files)  # the failed one kept no schedule
    assert len(page.images) == 3 + 5 * 4  # sweep figures + 4 per configuration with a schedule


def test_rebuilding_replaces_stale_figures(tmp_path):
    sweep = small_sweep(tmp_path)
    stale = sweep / "report_files" / "config_99" / "old.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(PNG_MAGIC)
    report.build_report(sweep)
    assert not stale.exists()


def test_a_swept_number_gets_its_curves(tmp_path):
    sweep = make_sweep(tmp_path, workload_factors=[0.8, 1.2], models=("normal",), extras=False)
    page = parse(report.build_report(sweep, per_configuration=False))
    assert "Metrics against the swept values" in page.headings["h2"]
    assert (sweep / "report_files" / "curves_workload.load_factor.png").is_file()
    assert "metrics against workload.load_factor" in {image["alt"] for image in page.images}
    assert page.headings["h3"] == ["fcfs · normal · workload.load_factor=0.8", "easy · normal · workload.load_factor=0.8",
                                   "fcfs · normal · workload.load_factor=1.2", "easy · normal · workload.load_factor=1.2"]
    records, _ = report.load_folder(sweep)
    report.describe(records)
    assert {r.line for r in records} == {"fcfs · normal", "easy · normal"}  # one line per policy
    assert report.numeric_keys(records) == ["workload.load_factor"]
    summary = page.table("summary")
    assert summary[0][2] == "load_factor"  # the swept number has a column of its own, to sort by
    assert [row[2] for row in summary[1:]] == ["0.8", "0.8", "1.2", "1.2"]


def test_labels_describe_what_varies():
    def record(**params):
        return report.ConfigRecord(label="x", status="FINISHED",
                                   params={k.replace("__", "."): str(v) for k, v in params.items()})

    records = [record(policy__name="easy", run_time__name="lognormal", run_time__scale=s,
                      system__total_nodes=100) for s in (0.5, 1.0)]
    report.describe(records)
    assert [r.short for r in records] == ["easy · scale=0.5", "easy · scale=1.0"]
    records = [record(policy__name=p, run_time__name=m, run_time__scale=0.5 if m == "lognormal" else 1.0)
               for p in ("fcfs", "easy") for m in ("actual", "lognormal")]
    report.describe(records)  # the scale follows the model's name: not repeated
    assert [r.short for r in records] == ["fcfs · actual", "fcfs · lognormal", "easy · actual",
                                          "easy · lognormal"]
    assert [r.policy for r in records] == ["fcfs", "fcfs", "easy", "easy"]


def test_fmt_metric_units():
    """One unit per metric (hours for waits, % for utilization) whatever the value's size;
    the header names it, the cell holds plain numbers with three significant digits."""
    assert report.fmt_metric("wait_mean", 90.0, 10.0) == "0.0250 ± 0.0028"
    assert report.fmt_metric("wait_mean", 4074.1, 396.1) == "1.13 ± 0.11"
    assert report.fmt_metric("wait_mean", 7200.0) == "2.00"
    assert report.fmt_metric("wait_mean", 7200.0, places=0) == "2"  # a column's decimals
    assert report.fmt_metric("wait_mean", 3.6e9) == "1,000,000"  # never 1e+06
    assert report.fmt_metric("utilization", 0.6971, 0.002) == "69.7 ± 0.2"
    assert report.fmt_metric("bsld_mean", float("nan")) == "–"
    assert report.column_places("wait_mean", [36.0, 3600.0, 360000.0]) == 2  # the median's 1.00 h


@pytest.mark.parametrize("make, message", [
    (lambda tmp: tmp / "missing", "does not exist"),
    (lambda tmp: (tmp / "file.txt", (tmp / "file.txt").write_text("x"))[0], "is not a folder"),
    (lambda tmp: (tmp / "empty", (tmp / "empty").mkdir())[0], "no sweep results"),
])
def test_bad_input_exits_2_with_a_clear_message(tmp_path, capsys, make, message):
    target = make(tmp_path)
    assert report.main([str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("drevt-sweep-report: error: ") and message in err
    assert "Traceback" not in err


def test_a_store_that_does_not_exist_is_not_created(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    db = tmp_path / "nope.db"
    assert report.main([str(tmp_path / "empty"), "--tracking-uri", f"sqlite:///{db}"]) == 2
    assert "no MLflow store" in capsys.readouterr().err
    assert not db.exists()


def test_main_prints_where_the_report_is(tmp_path, capsys):
    sweep = small_sweep(tmp_path)
    assert report.main([str(sweep), "--sweep-figures-only"]) == 0
    assert capsys.readouterr().out.strip() == f"report: {sweep.absolute() / 'report.html'}"
    page = parse(sweep / "report.html")
    assert page.headings["h3"] == ["easy · actual"]
    assert not (sweep / "report_files" / "config_0").exists()


# ====================================================================== a real sweep (slow)
def run_sweep(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable, "-m", "drevt_sweep", "-m",
        "trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
        "system=custom", "system.total_nodes=10", "tracking.enabled=true",
        f"paths.output_root={tmp_path / 'out'}", f"hydra.sweep.dir={tmp_path / 'sweep'}",
        "progress=false", *overrides,
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def real_sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    run_sweep(root, "policy=fcfs,easy", "run_time=actual,normal", "replicates=3", "parallel.n_jobs=1")
    return root


@pytest.mark.slow
def test_report_of_a_real_sweep_reads_the_mlflow_store(real_sweep):
    sweep = real_sweep / "sweep"
    page = parse(report.build_report(sweep))
    text = "".join(page.text)
    assert f"read from the MLflow store sqlite:///{(real_sweep / 'out' / 'mlflow.db').resolve()}" in text
    assert page.headings["h3"] == ["fcfs · actual", "fcfs · normal", "easy · actual", "easy · normal"]
    summary = page.table("summary")
    assert [row[2] for row in summary[1:]] == ["1", "3", "1", "3"]  # seeds from the child runs
    assert_embedded_pngs(page)
    assert (sweep / "report_files" / "config_1" / "gantt.png").is_file()  # 10 jobs: a Gantt chart
    assert f"drevt-sweep trace=custom trace.path={TINY} format=simple" in text
    assert "policy=easy run_time=normal replicates=3" in text
    result = json.loads((sweep / "1" / "result.json").read_text())
    assert result["trace_checksum"] in text and result["parent_run_id"] in text
    paired = page.table("paired")
    normal = [row for row in paired[1:] if row[0] == "easy − fcfs · normal"]
    assert normal and all(row[2] == "3" for row in normal)


@pytest.mark.slow
def test_the_command_logs_the_report_once_to_the_sweeps_run(real_sweep):
    from mlflow.tracking import MlflowClient

    sweep = real_sweep / "sweep"
    proc = subprocess.run([sys.executable, "-m", "drevt_sweep.report.html", str(sweep), "--log-to-mlflow"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"report: {sweep / 'report.html'}"
    client = MlflowClient(tracking_uri=f"sqlite:///{real_sweep / 'out' / 'mlflow.db'}")
    parents = [json.loads(job.read_text())["parent_run_id"] for job in sorted(sweep.glob("*/result.json"))]
    (sweep_run,) = {client.get_run(run_id).data.tags["drevt_sweep_run_id"] for run_id in parents}
    assert "report.html" in {a.path for a in client.list_artifacts(sweep_run)}
    for run_id in parents:  # not a copy in every parent run
        assert client.list_artifacts(run_id, "report") == []


@pytest.mark.slow
def test_report_is_rebuilt_from_the_store_alone_when_the_folder_is_gone(real_sweep, tmp_path):
    sweep = real_sweep / "sweep"
    kept = tmp_path / "kept"
    shutil.copytree(sweep, kept)
    try:
        shutil.rmtree(sweep)
        uri = f"sqlite:///{real_sweep / 'out' / 'mlflow.db'}"
        page = parse(report.build_report(sweep, uri))
        text = "".join(page.text)
        assert len(page.table("summary")) == 1 + 4
        assert "reconstructed from the MLflow run" in text
        assert (sweep / "report_files" / "config_1" / "wait_cdf.png").is_file()  # downloaded schedule
        assert "backfill: easy" in text  # the config artifact
        assert_embedded_pngs(page)
    finally:
        shutil.rmtree(sweep, ignore_errors=True)
        shutil.copytree(kept, sweep)


def test_no_history_baseline_for_a_transformed_workload(tmp_path):
    sweep = make_sweep(tmp_path, workload_factors=[1.2], policies=(("easy", "easy"),), models=("actual",))
    page = parse(report.build_report(sweep))
    text = "".join(page.text)
    assert "Baseline:" not in text  # the replay is of the recorded workload, not of this one
    assert page.headings["h3"][:2] == ["easy · actual · load", "replay · history"]


def test_figures_the_sweep_drew_are_reused_unless_stale(tmp_path):
    sweep = small_sweep(tmp_path)
    job = sweep / "0"
    jobs = tiny_jobs()
    drawn = report.configuration_figures(job / report.CONFIGURATION_FIGURE_DIR, jobs,
                                         engine.replay(jobs, 4), label="drawn by the sweep")
    page = parse(report.build_report(sweep))
    assert "Figures drawn by the sweep itself" in "".join(page.text)
    assert (sweep / "report_files" / "config_0" / "wait_cdf.png").read_bytes() == drawn[0].read_bytes()
    os.utime(job / "config.yaml", (drawn[0].stat().st_mtime + 10,) * 2)  # a later run's config
    page = parse(report.build_report(sweep))
    assert "Figures drawn by the sweep itself" not in "".join(page.text)


def test_the_template_escapes_what_runs_and_configs_carry(tmp_path):
    """Labels, errors and configs come from users' overrides and traces: the page shows them as
    text (the template engine escapes them), never as markup."""
    sweep = small_sweep(tmp_path)
    hostile = '<script>alert("x")</script>'
    write_job(sweep, 1, config_dict("sjf", "none", "actual"), ["policy=sjf", f"+note={hostile}"],
              tiny_jobs(), None, [0], status="FAILED", error=f"{hostile}\nsecond line")
    raw = report.build_report(sweep).read_text()
    assert '<script>alert' not in raw  # the page's own script (sortable tables) is the only one
    assert raw.count("<script>") == 1
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in raw
    page = parse(sweep / "report.html")
    assert hostile in "".join(page.text)  # shown to the reader as the text it is


def test_the_folder_report_reads_the_compressed_schedules_the_sweep_writes(tmp_path):
    """A sweep keeps its schedules as schedule_seed<N>.csv.gz; a report built from the folder
    alone (tracking off) must still find them."""
    import gzip

    sweep = small_sweep(tmp_path)
    for path in sweep.glob("*/schedule_seed*.csv"):
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        path.unlink()
    page = parse(report.build_report(sweep, per_configuration=False))
    assert "Wait-time distributions" in page.headings["h2"]


MATH_NAME = r"$\frac$ trace_$x^2$"  # mathtext that matplotlib cannot parse (issue 29 item 3)


@pytest.mark.slow
def test_a_mathtext_trace_name_is_drawn_as_plain_text(tmp_path, capsys):
    """A trace named like mathtext used to stop the report ("ParseSyntaxException ... \\frac",
    exit 1): every text of every figure is plain text, whatever the user's names."""
    sweep = make_sweep(tmp_path, extras=False)
    for config in sweep.glob("*/config.yaml"):
        cfg = yaml.safe_load(config.read_text())
        cfg["trace"]["name"] = MATH_NAME
        config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert report.main([str(sweep)]) == 0, capsys.readouterr().err
    page = parse(sweep / "report.html")
    assert_embedded_pngs(page)
    assert f"wait-time CDF on {MATH_NAME}" in {image["alt"] for image in page.images}


def test_no_figure_text_is_parsed_as_math():
    from drevt_sweep.report import figures, search

    fig = figures.wait_cdf_figure({MATH_NAME: np.array([0.0, 5.0, 50.0])}, title=MATH_NAME)
    texts = [fig.axes[0].title, *fig.legends[0].get_texts()]
    assert all(not t.get_parse_math() for t in texts)
    fig.savefig(io.BytesIO(), format="png")  # drawing it raised before
    figures.plt.close(fig)
    result = {"question": {"metric": "wait_p95", "target": 10.0, "direction": "below",
                           "param": MATH_NAME, "low": 1, "high": 5},
              "probes": [{"value": v, "mean": m, "ci95": 1.0, "side": "pass", "n_seeds": 2}
                         for v, m in ((1, 1.0), (3, 100.0), (5, 1000.0))],
              "runs": 6, "answer": None, "bracket": [1, 5]}
    fig = search.threshold_figure(result)
    fig.canvas.draw()
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert ticks and not any("$" in t for t in ticks)  # log ticks as plain text too
    figures.plt.close(fig)


@pytest.mark.parametrize("text", [
    "policy:\n  name: easy\n  weights:\n    age: 1.0\nsystem:\n  total_nodes: 64\nseed: 3\n",
    "policy:\n  name: fcfs\n# a comment\nsystem:\n  queues:\n  - a\n  - b\n",
    "a: 1\na: 2\n",  # a key twice: parsed whole (the last wins, as PyYAML's)
    "---\npolicy:\n  name: easy\n",
    "",
])
def test_a_config_read_by_sections_is_the_config_read_whole(text):
    """``_config_and_params`` parses each top-level section once per distinct text; the config
    and params (and their order) are those of the whole file parsed at once."""
    from drevt_sweep.files import load_yaml
    from drevt_sweep.report.html import _config_and_params, config_params

    whole = load_yaml(text) or {}
    for _ in range(2):  # cold, then from the section cache
        config, params = _config_and_params(text)
        assert config == whole and list(config) == list(whole)
        assert params == config_params(whole) and list(params) == list(config_params(whole))


def _report_files(sweep: Path) -> dict:
    return {p.relative_to(sweep).as_posix(): p.read_bytes() for p in sorted((sweep / "report_files").rglob("*.png"))}


@pytest.mark.slow
def test_figures_saved_by_forked_children_are_the_ones_saved_here(tmp_path, monkeypatch):
    """The report's figures are saved by children forked from the report's process
    (``html._Embedder``); without ``fork`` they are saved in-process: the same bytes, the same page."""
    from drevt_sweep.report import figure_child

    sweep = make_sweep(tmp_path, workload_factors=[0.8, 1.2], models=("normal",))
    forked = report.build_report(sweep).read_text()
    forked_files = _report_files(sweep)
    monkeypatch.setattr(figure_child.FiguresInChild, "start", classmethod(lambda cls, draw: None))
    here = report.build_report(sweep).read_text()
    assert _report_files(sweep) == forked_files and len(forked_files) >= 4
    built = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w*")
    assert built.sub("", forked) == built.sub("", here)


def test_a_child_that_fails_leaves_the_figure_to_this_process(tmp_path, monkeypatch):
    from drevt_sweep.report import figure_child

    def failing(cls, draw):  # a child that answers with an error
        return figure_child.FiguresInChild.__new__(cls)

    monkeypatch.setattr(figure_child.FiguresInChild, "start", classmethod(failing))
    monkeypatch.setattr(figure_child.FiguresInChild, "result",
                        lambda self, timeout=None: (_ for _ in ()).throw(RuntimeError("the child died")))
    sweep = small_sweep(tmp_path)
    page = parse(report.build_report(sweep))
    assert_embedded_pngs(page)
    assert (sweep / "report_files" / "comparison.png").is_file()


def test_an_error_while_building_ends_the_children_still_drawing(tmp_path, monkeypatch):
    from drevt_sweep.report import figure_child, html

    started = []
    real_start = figure_child.FiguresInChild.start.__func__

    def start(cls, draw):
        child = real_start(cls, lambda: (__import__("time").sleep(30), draw())[1])  # still drawing
        started.append(child)
        return child

    monkeypatch.setattr(figure_child.FiguresInChild, "start", classmethod(start))
    monkeypatch.setattr(html, "_paired_view", lambda *a: (_ for _ in ()).throw(ValueError("boom")))
    sweep = small_sweep(tmp_path)
    with pytest.raises(ValueError, match="boom"):
        report.build_report(sweep)
    assert started
    for child in started:  # killed and reaped: no such process any more
        with pytest.raises(ChildProcessError):
            os.waitpid(child.pid, os.WNOHANG)


@pytest.mark.parametrize("overrides", [
    ["policy=fcfs", "system.total_nodes=60", "paths.output_root=/tmp/x y"],
    ["+tracking.note='a: \"quoted\", 1e3, yes'", "seed=${oc.env:S,0}", "a=é", "b=- c", "x=1 # no comment"],
    ["multi=line one\nline two", "k=[1,2]", "d={a: 1}", "yes", "5=5", "~gone"],
    [], ["- leading dash", "  spaced", "#hash"]])
def test_overrides_read_item_by_item_are_the_file_read_whole(overrides):
    """``overrides.yaml`` as the sweep engine writes it (``batch._overrides_yaml``, what
    OmegaConf saves), read back item by item, gives what parsing it whole gives."""
    from drevt_sweep.files import load_yaml
    from drevt_sweep.sweep.batch import _overrides_yaml

    text = _overrides_yaml(overrides)
    for _ in range(2):  # the second time from the cache
        assert report._overrides_of(text) == [str(o) for o in (load_yaml(text) or [])] == overrides
