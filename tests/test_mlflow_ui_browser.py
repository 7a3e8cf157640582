"""The MLflow UI opens on the results (issue 24, item 2): the link a sweep prints, opened in a
real headless Chromium against a real ``mlflow ui`` on the sweep's own store, shows the
configuration runs (not their seeds) with the headline metrics' values in the runs table."""

from __future__ import annotations

import html
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from sweep_helpers import run_sweep
from test_report_browser import FLAGS, chromium

from drevt_sweep.tracking import ui
from drevt_sweep.tracking.server import without_job_runners

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _shown(value: float) -> str:
    """A number as the UI (JavaScript's shortest round-trip text) writes it."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _page_text(url: str, profile: Path) -> str:
    profile.mkdir()
    proc = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", "--window-size=2600,1000",
                           "--virtual-time-budget=60000", "--dump-dom", url],
                          capture_output=True, text=True, timeout=300)
    body = re.sub(r"<(script|style).*?</\1>", "", proc.stdout, flags=re.S)
    return re.sub(r"\s*\|[\s|]*", "|", html.unescape(re.sub(r"<[^>]+>", "|", body)))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ui_browser")
    proc = run_sweep(tmp, "policy=fcfs,easy", "run_time=limit,normal", "replicates=2")
    return tmp, proc


def test_the_sweep_prints_the_link_and_make_ui_prints_it_again(store):
    tmp, proc = store
    (printed,) = re.findall(r"open: (\S+)", proc.stdout)
    assert printed.startswith(f"{ui.DEFAULT_UI}/#/experiments/") and ui.VIEW_KEY in printed
    db = tmp / "out" / "mlflow.db"
    again = subprocess.run([sys.executable, "-m", "drevt_sweep.tracking.ui", "--uri", f"sqlite:///{db}",
                            "--ui", "http://127.0.0.1:5123"], capture_output=True, text=True, timeout=120)
    assert re.findall(r"open: (\S+)", again.stdout) == [printed.replace(":5000", ":5123")]


def test_the_link_opens_the_configurations_with_their_headline_metrics(store, tmp_path):
    tmp, proc = store
    (printed,) = re.findall(r"open: (\S+)", proc.stdout)
    port = _free_port()
    server = subprocess.Popen([str(Path(sys.executable).with_name("mlflow")), "ui", "--host", "127.0.0.1",
                               "--port", str(port), "--backend-store-uri", f"sqlite:///{tmp / 'out' / 'mlflow.db'}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=without_job_runners(os.environ))
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 240
        while True:
            try:
                urllib.request.urlopen(f"{base}/health", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "mlflow ui did not start"
                time.sleep(1)
        text = _page_text(printed.replace(ui.DEFAULT_UI, base), tmp_path / "profile")
    finally:
        server.terminate()
        server.wait(timeout=30)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp / 'out' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("drevt-sweep")
    configurations = client.search_runs([experiment.experiment_id], ui.FILTER)
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
