"""The README's Python example runs as it is written (CI runs it as a script)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.slow
def test_the_quickstart_example_runs(tmp_path):
    env = {**os.environ, "DREVT_EXAMPLE_OUT": str(tmp_path), "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, str(EXAMPLES / "quickstart.py")], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "mean wait" in proc.stdout and "policy.name" in proc.stdout
