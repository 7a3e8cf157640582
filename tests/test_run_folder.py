"""A single run refused for a bad value leaves no empty run folder behind (issue 24, item 8)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_a_refused_run_leaves_no_folder(tmp_path):
    (tmp_path / "outputs" / "runs" / "earlier").mkdir(parents=True)  # someone else's run stays
    proc = subprocess.run([sys.executable, "-m", "drevt_sweep", "replicates=0",
                           f"paths.output_root={tmp_path / 'outputs'}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 2 and "replicates=0: must be >= 1" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "outputs" / "runs").iterdir()) == ["earlier"]
