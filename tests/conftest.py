"""Shared fixtures: paths to the repository, the bundled trace and the public traces."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUNDLED_KTH = REPO / "drevt_sweep" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
SHARED_TRACES = REPO.parent / "shared" / "traces"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    """The public traces beside the repository (present for developers and CI)."""
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"public traces not found at {SHARED_TRACES}")
    return SHARED_TRACES


def pytest_sessionstart(session):
    """Compile the numba kernels in a process of their own (``warm_kernels.py``) while the
    first tests run: on a fresh checkout that is about 90 s of compiling moved off the tests'
    core. ``DREVT_NO_WARM=1`` turns it off."""
    import os
    import subprocess
    import sys

    if os.environ.get("DREVT_NO_WARM") or hasattr(session.config, "workerinput"):
        return
    session.config._drevt_warm = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("warm_kernels.py"))],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)


def pytest_sessionfinish(session, exitstatus):
    warm = getattr(session.config, "_drevt_warm", None)
    if warm is not None and warm.poll() is None:
        warm.terminate()
        warm.wait(timeout=30)
