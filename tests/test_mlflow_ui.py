"""What a person sees in the MLflow UI after a sweep, read back from a real sqlite store: one
parent per configuration and one child per seed with the metrics a seed gives when recomputed,
`make ui` serving them on loopback, run names that tell runs apart, seeds that filter by
policy, who ran it from which commit, the trace as a dataset, one report per sweep, compressed
schedules, and the link the sweep prints opened in a real headless Chromium. Most of it reads
one shared multirun (the ``sweep`` fixture) and one ``make ui`` serving it (``make_ui``)."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from drevt_sweep.sim.metrics import compute_metrics
from drevt_sweep.sim.runtime import RunTimeModel
from drevt_sweep.sweep.seeds import RunSpec, simulate_seed
from drevt_sweep.trace import ReadOptions, read_trace

from sweep_helpers import TINY, run_sweep

pytestmark = pytest.mark.slow
SWF = TINY.parent / "swf_replay.swf"  # its header says Europe/Stockholm


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ui")
    proc = run_sweep(tmp, "policy=fcfs,easy", "run_time=limit,normal", "replicates=2",
                     "figures=auto")  # its schedules are logged (auto keeps them in small sweeps)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp / 'out' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("drevt-sweep")
    return tmp, proc, client, experiment.experiment_id


def kind(runs, name):
    return [r for r in runs if r.data.tags.get("drevt_kind") == name]


def test_multirun_logs_one_parent_per_configuration_and_one_child_per_seed(sweep):
    tmp, proc, client, eid = sweep
    assert "Traceback" not in proc.stderr
    runs = client.search_runs([eid], max_results=1000)
    parents, children = kind(runs, "configuration"), kind(runs, "seed")
    assert len(parents) == 4
    assert all(r.info.status == "FINISHED" for r in runs)
    by_parent = {p.info.run_id: [c for c in children if c.data.tags["mlflow.parentRunId"] == p.info.run_id]
                 for p in parents}
    jobs = read_trace(TINY, ReadOptions(trace_format="simple", queues="all", force_simulation=True))
    for parent in parents:
        kids = by_parent[parent.info.run_id]
        normal = parent.data.params["run_time.mode"] == "distribution"
        assert len(kids) == (2 if normal else 1)  # deterministic models need one seed
        model = RunTimeModel(mode=parent.data.params["run_time.mode"],
                             distribution=parent.data.params["run_time.distribution"],
                             scale=float(parent.data.params["run_time.scale"]),
                             stddev=float(parent.data.params["run_time.stddev"]))
        spec = RunSpec(total_nodes=10, priority=parent.data.params["policy.priority"],
                       backfill=parent.data.params["policy.backfill"], run_time=model)
        for kid in kids:
            seed = int(kid.data.params["seed"])
            expected = compute_metrics(*simulate_seed(jobs, spec, seed))
            for name in ("wait_mean", "bsld_mean", "utilization", "makespan"):
                assert kid.data.metrics[name] == pytest.approx(expected[name], rel=1e-12)
        mean_wait = sum(k.data.metrics["wait_mean"] for k in kids) / len(kids)
        assert parent.data.metrics["wait_mean"] == pytest.approx(mean_wait)
    summary = pd.read_csv(tmp / "sweep" / "summary.csv")
    assert len(summary) == 4 and set(summary.status) == {"FINISHED"}
    assert "mean wait" in proc.stdout


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _session_of(proc: Path) -> int | None:
    try:  # field 6 of /proc/PID/stat, after the parenthesised command
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[3])
    except (OSError, IndexError, ValueError):
        return None


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.fixture(scope="module")
def make_ui(sweep, repo_root):
    """``make ui`` on the shared sweep's store, once its API answers: (port, the process, the
    lines it printed so far). One server for the tests that look at it (an MLflow server costs
    ~10 s of CPU to start)."""
    import threading

    tmp = sweep[0]
    port = free_port()
    ui = subprocess.Popen(
        ["make", "-s", "ui", f"UI_PORT={port}", f"TRACKING_DB={tmp / 'out' / 'mlflow.db'}"],
        cwd=repo_root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    printed: list[str] = []
    threading.Thread(target=lambda: printed.extend(ui.stdout), daemon=True).start()  # (drained)
    try:
        deadline = time.time() + 240
        while True:
            assert ui.poll() is None, "".join(printed)
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
                break
            except OSError:
                assert time.time() < deadline, "the UI never answered"
                time.sleep(0.5)
        yield port, ui, printed
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(timeout=30)


def test_make_ui_serves_the_sweep_on_loopback(make_ui):
    port, ui, _ = make_ui
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/2.0/mlflow/runs/search",
        data=json.dumps({"experiment_ids": ["1"], "max_results": 100}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    kinds = sorted(
        tag["value"] for run in body["runs"] for tag in run["data"]["tags"]
        if tag["key"] == "drevt_kind"
    )
    # 4 configurations; seeds: 1 per limit configuration, 2 per normal one; the sweep's run
    assert kinds == ["configuration"] * 4 + ["seed"] * 6 + ["sweep"]
    import shutil

    if shutil.which("ss"):
        listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
        bound = [line for line in listening.splitlines() if f":{port} " in line]
        assert bound and all("127.0.0.1:" in line for line in bound)  # loopback only
    # ... and without MLflow's job runners (Huey consumers, ~1 GB we never use)
    session = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _session_of(p) == ui.pid]
    commands = [_cmdline(p) for p in session]
    assert any("mlflow" in c for c in commands) and not any("huey" in c for c in commands), commands


# ---------------------------------------------------------------- the link, in a real browser
# (issue 24, item 2): the link a sweep prints, opened in a real headless Chromium against the
# UI on the sweep's own store, shows the configuration runs (not their seeds) with the headline
# metrics' values in the runs table.
def _shown(value: float) -> str:
    """A number as the UI (JavaScript's shortest round-trip text) writes it."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _page_text(url: str, profile: Path) -> str:
    import html
    import re

    from test_report_browser import FLAGS, chromium

    profile.mkdir()
    proc = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", "--window-size=2600,1000",
                           "--virtual-time-budget=60000", "--dump-dom", url],
                          capture_output=True, text=True, timeout=300)
    body = re.sub(r"<(script|style).*?</\1>", "", proc.stdout, flags=re.S)
    return re.sub(r"\s*\|[\s|]*", "|", html.unescape(re.sub(r"<[^>]+>", "|", body)))


def test_the_sweep_prints_the_link_and_make_ui_prints_it_again(sweep, make_ui):
    import re

    from drevt_sweep.tracking import ui

    port, _, printed = make_ui
    (link,) = re.findall(r"open: (\S+)", sweep[1].stdout)
    assert link.startswith(f"{ui.DEFAULT_UI}/#/experiments/") and ui.VIEW_KEY in link
    assert re.findall(r"open: (\S+)", "".join(printed)) == [link.replace(":5000", f":{port}")]


def test_the_link_opens_the_configurations_with_their_headline_metrics(sweep, make_ui, tmp_path):
    import re

    from drevt_sweep.tracking import ui

    tmp, proc, client, experiment_id = sweep
    port = make_ui[0]
    (printed,) = re.findall(r"open: (\S+)", proc.stdout)
    text = _page_text(printed.replace(ui.DEFAULT_UI, f"http://127.0.0.1:{port}"), tmp_path / "profile")
    configurations = client.search_runs([experiment_id], ui.FILTER)
    assert len(configurations) == 4
    header = text[text.index("Run Name"):]
    for metric in ("wait_mean", "bsld_mean", "utilization", "makespan"):
        assert f"|{metric}|" in header, metric
    for run in configurations:
        assert f"|{run.info.run_name}|" in text
        for metric in ("wait_mean", "bsld_mean", "utilization"):
            assert f"|{_shown(run.data.metrics[metric])}|" in text, (run.info.run_name, metric)
    assert "|seed 0|" not in text  # the filter shows configurations, not their seeds
    # sorted by mean wait, best first
    names = sorted(configurations, key=lambda r: r.data.metrics["wait_mean"])
    positions = [text.index(f"|{r.info.run_name}|") for r in names]
    assert positions == sorted(positions)


def test_every_run_has_a_short_distinct_name(sweep):
    _, _, client, eid = sweep
    runs = client.search_runs([eid], max_results=1000)
    parents = kind(runs, "configuration")
    assert sorted(r.info.run_name for r in parents) == [
        "easy · limit", "easy · normal", "fcfs · limit", "fcfs · normal"]
    for parent in parents:  # the full label stays findable
        assert "policy=" in parent.data.tags["drevt_label"]
        children = [r for r in kind(runs, "seed")
                    if r.data.tags["mlflow.parentRunId"] == parent.info.run_id]
        assert sorted(c.info.run_name for c in children) == [
            f"seed {c.data.params['seed']}" for c in sorted(children, key=lambda c: c.data.params["seed"])]


def test_seeds_filter_by_policy_and_carry_their_configuration(sweep):
    _, _, client, eid = sweep
    easy = client.search_runs(
        [eid], "tags.drevt_kind = 'seed' and params.`policy.name` = 'easy'", max_results=100)
    assert len(easy) == 3  # limit: one seed (deterministic), normal: two
    assert {r.data.params["run_time.name"] for r in easy} == {"limit", "normal"}
    assert all(r.data.params["system.total_nodes"] == "10" for r in easy)


def test_runs_say_who_ran_them_from_which_commit_and_how_to_rerun_them(sweep, repo_root):
    _, _, client, eid = sweep
    commit = subprocess.run(["git", "-C", str(repo_root), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    for run in client.search_runs([eid], max_results=1000):
        tags = run.data.tags
        assert tags["mlflow.user"] and tags["mlflow.source.name"] == "drevt-sweep"
        assert tags["mlflow.source.git.commit"] == commit
        assert tags["drevt_experiment"] == "none"
        assert "drevt-sweep" in tags["mlflow.note.content"]
    seed = client.search_runs([eid], "tags.drevt_kind = 'seed' and params.seed = '1'")[0]
    assert "seed=1 replicates=1" in seed.data.tags["mlflow.note.content"]


def test_the_trace_is_the_runs_dataset_with_its_checksum(sweep):
    _, _, client, eid = sweep
    import hashlib

    checksum = hashlib.sha256(TINY.read_bytes()).hexdigest()
    for run in kind(client.search_runs([eid], max_results=1000), "seed"):
        (entry,) = run.inputs.dataset_inputs
        assert entry.dataset.name == TINY.name
        assert entry.dataset.digest == checksum[:36]
        assert json.loads(entry.dataset.profile)["sha256"] == checksum
        assert json.loads(entry.dataset.source)["uri"] == TINY.resolve().as_uri()


def test_one_seed_logs_means_only(sweep):
    _, _, client, eid = sweep
    for parent in kind(client.search_runs([eid], max_results=1000), "configuration"):
        spread = [m for m in parent.data.metrics if m.endswith(("_std", "_ci95"))]
        if parent.data.params["run_time.name"] == "limit":  # one seed
            assert spread == []
        else:
            assert "wait_mean_ci95" in spread


def test_the_report_is_logged_once_to_a_sweep_run(sweep):
    tmp, _, client, eid = sweep
    runs = client.search_runs([eid], max_results=1000)
    (sweep_run,) = kind(runs, "sweep")
    names = {a.path for a in client.list_artifacts(sweep_run.info.run_id)}
    assert {"report.html", "summary.csv"} <= names
    for parent in kind(runs, "configuration"):
        assert parent.data.tags["drevt_sweep_run_id"] == sweep_run.info.run_id
        assert "report" not in {a.path for a in client.list_artifacts(parent.info.run_id)}
        (schedule,) = client.list_artifacts(parent.info.run_id, "schedules")
        assert schedule.path.endswith(".csv.gz")
    local = next((tmp / "sweep").glob("*/schedule_seed*.csv.gz"))
    assert gzip.decompress(local.read_bytes()).startswith(b"job_id,")


def test_the_zone_logged_is_the_zone_used(tmp_path):
    run_sweep(tmp_path, f"trace.path={SWF}", "format=swf", "run_time=limit", "policy=fcfs,easy",
              "timezone=trace,utc")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    eid = client.get_experiment_by_name("drevt-sweep").experiment_id
    zones = {}
    for run in client.search_runs([eid], "tags.drevt_kind = 'configuration'"):
        choice = run.info.run_name.split(" · ")[1]  # "easy · utc"
        zones.setdefault(choice, set()).add(run.data.params["timezone.name"])
    assert zones == {"trace": {"Europe/Stockholm"}, "utc": {"UTC"}}
    assert {r.data.params["trace_timezone_header"] for r in client.search_runs([eid])
            if r.data.tags.get("drevt_kind") == "configuration"} == {"Europe/Stockholm"}
    results = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("*/result.json")]
    assert sorted({r["timezone"] for r in results}) == ["Europe/Stockholm", "UTC"]


def test_a_preset_goes_to_its_own_experiment(tmp_path):
    # machine_size's own trace is KTH-SP2; the tiny trace keeps this fast (the command line wins).
    run_sweep(tmp_path, "experiment=machine_size", "system.total_nodes=10,12")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("drevt-sweep/machine_size")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], "tags.drevt_kind = 'configuration'")
    assert sorted(r.info.run_name for r in runs) == [
        "easy · total_nodes=10", "easy · total_nodes=12", "fcfs · total_nodes=10", "fcfs · total_nodes=12"]
    assert {r.data.tags["drevt_experiment"] for r in runs} == {"machine_size"}
