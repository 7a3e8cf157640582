"""The first run after an install says that numba is compiling and keeps saying so, instead of
sitting silent for minutes (issue 24, item 1); later runs say nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from drevt_sweep.sweep import first_run

KERNEL = Path(first_run.__file__).resolve().parents[1] / "sim" / "kernel"


def _kernel_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "kernel"
    folder.mkdir()
    for source in KERNEL.glob("*.py"):
        shutil.copy2(source, folder / source.name)
    return folder


def test_cold_until_compiled_once_and_again_after_a_kernel_changes(tmp_path):
    folder = _kernel_copy(tmp_path)
    cached = sorted(p.name for p in folder.glob("*.py") if "cache=True" in p.read_text())
    assert cached and first_run.cold_sources(folder) == cached  # fresh: every cached kernel is cold
    first_run._stamp(folder)
    assert first_run.cold_sources(folder) == []
    edited = folder / cached[0]
    later = time.time() + 5
    os.utime(edited, (later, later))
    assert first_run.cold_sources(folder) == [cached[0]]
    assert "__init__.py" not in first_run.cold_sources(folder)  # no numba code, nothing to cache


def _compile(folder: Path, interval: float, quiet_for: float, env=None) -> subprocess.CompletedProcess:
    code = ("import sys; from pathlib import Path; from drevt_sweep.sweep.first_run import compile_if_cold; "
            f"print(compile_if_cold(kernel_dir=Path({str(folder)!r}), interval={interval}, quiet_for={quiet_for}))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})})


def test_a_cold_cache_prints_the_notice_then_progress_then_stays_quiet(tmp_path):
    folder = _kernel_copy(tmp_path)
    # In a fresh process, loading numba and the kernels' code (compiled, or from numba's cache)
    # takes well over 0.05 s: the notice, then progress lines at that interval.
    proc = _compile(folder, interval=0.05, quiet_for=0.0)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == f"drevt-sweep: {first_run.NOTICE}"
    assert any(line.startswith("drevt-sweep: still compiling the simulation kernels (") for line in lines[1:])
    assert lines[-1].startswith("drevt-sweep: kernels compiled in ") and proc.stdout.strip() == "True"
    assert first_run.cold_sources(folder) == []
    again = _compile(folder, interval=0.05, quiet_for=0.0)  # warm: nothing to do, nothing said
    assert (again.stdout.strip(), again.stderr) == ("False", "")


def test_the_reference_engine_compiles_nothing(tmp_path):
    folder = _kernel_copy(tmp_path)
    proc = _compile(folder, interval=0.05, quiet_for=0.0, env={"DREVT_KERNEL": "reference"})
    assert (proc.stdout.strip(), proc.stderr) == ("False", "")
    assert first_run.cold_sources(folder)
