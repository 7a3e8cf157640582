"""Running a real drevt-sweep multirun in a subprocess on the tiny test trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TINY = Path(__file__).parent / "data" / "traces" / "sweep_tiny.csv"


def run_sweep(tmp_path: Path, *overrides: str, check: bool = True) -> subprocess.CompletedProcess:
    """A multirun over ``overrides`` on a 10-node machine, with outputs under ``tmp_path``."""
    cmd = [
        sys.executable, "-m", "drevt_sweep", "-m",
        "trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
        "system=custom", "system.total_nodes=10",
        f"paths.output_root={tmp_path / 'out'}", f"hydra.sweep.dir={tmp_path / 'sweep'}",
        "progress=false", *overrides,
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if check:
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc
