"""The Makefile's menu and install stamps (issue 24, items 1 and 8): `make run` installs what
running needs, `make test` adds the test extra, and `make help` shows real values."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _make(*args: str) -> str:
    proc = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *args], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_help_expands_the_ports():
    text = _make("help", "UI_PORT=5123")
    assert "127.0.0.1:5123" in text and "$(" not in text


def test_run_installs_the_package_alone_and_test_adds_its_extra(tmp_path):
    venv = tmp_path / "venv"
    run = _make("-n", "run", f"VENV={venv}")
    assert "pip install --progress-bar off -e ." in run and "[test]" not in run
    test = _make("-n", "test", f"VENV={venv}")
    assert "pip install --progress-bar off -e '.[test]'" in test


def test_a_test_install_counts_as_a_run_install_not_the_reverse(tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    later = time.time() + 10  # newer than pyproject.toml
    (venv / ".installed-stamp").touch()
    os.utime(venv / ".installed-stamp", (later, later))
    assert "pip install" not in _make("-n", "run", f"VENV={venv}")
    assert "pip install --progress-bar off -e '.[test]'" in _make("-n", "test", f"VENV={venv}")  # the extra is missing
    (venv / ".installed-test-stamp").touch()
    os.utime(venv / ".installed-test-stamp", (later, later))
    assert "pip install" not in _make("-n", "test", f"VENV={venv}")


def test_installs_compile_the_modules_on_every_core_not_in_pip(tmp_path):
    """pip's own byte-compile runs on one core (~35 s of the test install's CPU): both installs
    leave it to compileall, which uses every core and skips the packages' test suites."""
    for target in ("run", "test"):
        text = _make("-n", target, f"VENV={tmp_path / 'venv'}")
        assert "--no-compile" in text and "-m compileall -qq -j 0 -x 'site-packages/.*/tests?/'" in text
