"""drevt-sweep-report rebuilds a sweep whose folder is gone from the default embedded store
(``$DREVT_ROOT/outputs/mlflow.db``, else ``./outputs/mlflow.db``), as the README promises,
without being told ``--tracking-uri``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from drevt_sweep.report import html as report

TINY = Path(__file__).parent / "data" / "traces" / "sweep_tiny.csv"


@pytest.fixture(scope="module")
def gone_sweep(tmp_path_factory):
    """A finished two-configuration sweep under ROOT/outputs whose folder was then removed."""
    root = tmp_path_factory.mktemp("root")
    sweep = root / "outputs" / "multirun" / "s"
    cmd = [sys.executable, "-m", "drevt_sweep", "-m", "trace=custom", f"trace.path={TINY}",
           "format=simple", "format.queues=[all]", "system=custom", "system.total_nodes=10",
           "policy=fcfs,easy", "figures=none", "progress=false", f"paths.root={root}",
           f"hydra.sweep.dir={sweep}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    shutil.rmtree(sweep)
    return root, sweep


@pytest.mark.slow
def test_a_gone_folder_is_rebuilt_from_the_default_store(gone_sweep, monkeypatch, capsys):
    root, sweep = gone_sweep
    monkeypatch.setenv("DREVT_ROOT", str(root))
    assert report.main([str(sweep), "--per-configuration", "none"]) == 0
    assert capsys.readouterr().out.strip() == f"report: {sweep / 'report.html'}"
    text = (sweep / "report.html").read_text()
    assert f"sqlite:///{(root / 'outputs' / 'mlflow.db').resolve()}" in text
    assert "fcfs" in text and "easy" in text


@pytest.mark.slow
def test_a_folder_the_default_store_does_not_know_names_the_store(gone_sweep, monkeypatch, capsys):
    root, _ = gone_sweep
    monkeypatch.setenv("DREVT_ROOT", str(root))
    assert report.main([str(root / "outputs" / "multirun" / "never")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and str(root / "outputs" / "mlflow.db") in err
    assert "--tracking-uri" in err


def test_without_a_store_the_message_says_none_names_it(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DREVT_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert report.default_store() is None
    assert report.main([str(tmp_path / "gone")]) == 2
    assert "no MLflow store names it; give --tracking-uri" in capsys.readouterr().err
    assert not (tmp_path / "outputs").exists()  # looked for, never created
