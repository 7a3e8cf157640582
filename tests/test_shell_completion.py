"""A TAB in the shell runs ``drevt-sweep -sc query=bash`` each time: it gets Hydra's answer
without the tracking helper or pandas (issue 24, item 8: ~6 s per TAB before; 2.2-2.6 s of CPU
before, 0.7-0.9 s after, measured on the shared 2-core machine)."""

from __future__ import annotations

import os
import subprocess
import sys

CODE = """
import atexit, sys
atexit.register(lambda: print("loaded:", "mlflow" in sys.modules, "pandas" in sys.modules, file=sys.stderr))
sys.argv = ["drevt-sweep", "-sc", "query=bash"]
from drevt_sweep.sweep.app import main
main()
"""


def test_a_tab_completes_keys_without_the_tracking_helper():
    env = {**os.environ, "COMP_LINE": "drevt-sweep pol", "COMP_POINT": "15", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "policy=" in proc.stdout.split()
    assert "loaded: False False" in proc.stderr
