"""Long ``drevt-sim`` runs: Ctrl-C stops them quickly, and a terminal shows their progress.

Real subprocesses and real signals: the bundled KTH-SP2 trace at ``--load_factor 2`` under
conservative backfilling (a queue of hundreds of jobs, several seconds even in the compiled
kernel) gets a SIGINT while it simulates and must exit 130 soon after; the same run on a
pseudo-terminal prints the progress line, and prints nothing with ``--quiet`` or ``CI`` set.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest

from conftest import BUNDLED_KTH

pytestmark = pytest.mark.slow

LONG_RUN = [sys.executable, "-m", "drevt_sweep.cli.sim", str(BUNDLED_KTH), "--trace_format", "swf", "--force-simulation",
            "--backfill_policy", "conservative", "--load_factor", "2", "--quiet"]


def _env(kernel: str, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(DREVT_KERNEL=kernel, **extra)
    return env


@pytest.fixture(scope="module", autouse=True)
def compiled_kernel():
    """Compile (or load) the conservative kernel once, so the subprocesses only load it."""
    from drevt_sweep.sim import kernel as fast

    if not fast.warm("conservative"):
        pytest.skip("numba is not importable")


@pytest.mark.parametrize("kernel", ["fast", "reference"])
def test_ctrl_c_stops_a_long_simulation_within_a_second(kernel):
    proc = subprocess.Popen(LONG_RUN, env=_env(kernel), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(4.0)  # reading the trace and loading the kernel take about 1-2 s; then it simulates
    assert proc.poll() is None, "the run ended before it could be interrupted; make it longer"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    waited = time.monotonic() - sent
    assert proc.returncode == 130, err
    assert "drevt-sim: interrupted" in err and "Traceback" not in err
    # 1 s is the requirement; the margin is for a loaded 2-core test machine
    assert waited < 2.0, f"took {waited:.2f} s to stop after SIGINT"


def _stderr_on_a_terminal(argv, env, seconds: float, until: str = "") -> str:
    """Run ``argv`` with stderr on a pseudo-terminal for ``seconds`` (or until it has written
    ``until``), then interrupt it."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and proc.poll() is None and not (until and until.encode() in out):
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    out += os.read(master, 4096)
                except OSError:
                    break
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()  # a run that ignored SIGINT must not outlive the test (the assert says why)
            proc.wait()
            raise
        finally:
            os.close(master)
    return out.decode(errors="replace")


@pytest.mark.parametrize("kernel", ["fast", "reference"])
def test_progress_shows_on_a_terminal_after_two_seconds(kernel):
    # Up to a minute: on a loaded test machine reading the trace and loading numba took > 5 s of
    # wall (a fixed 5.5 s failed at a 1-minute load of 12); the line comes 2 s into simulating.
    text = _stderr_on_a_terminal([a for a in LONG_RUN if a != "--quiet"], _env(kernel), 60.0, until="jobs/s")
    assert "drevt-sim: simulated day" in text and "jobs done" in text and "jobs/s" in text


@pytest.mark.parametrize("how", ["quiet", "ci"])
def test_no_progress_with_quiet_or_in_ci(how):
    argv = LONG_RUN if how == "quiet" else [a for a in LONG_RUN if a != "--quiet"]
    env = _env("fast", **({"CI": "true"} if how == "ci" else {}))
    text = _stderr_on_a_terminal(argv, env, 5.0)
    assert "simulated day" not in text


def test_no_progress_when_stderr_is_a_pipe():
    """A log file or a CI runner's pipe, without CI set: still no progress line."""
    proc = subprocess.Popen([a for a in LONG_RUN if a != "--quiet"], env=_env("fast"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(5.0)
    assert proc.poll() is None, "the run ended before progress would show; make it longer"
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "simulated day" not in err and "\r" not in err, err


def test_no_progress_on_a_short_run_on_a_terminal():
    """Under 2 s of simulating (KTH-SP2 under EASY: a fraction of a second) nothing is shown."""
    short = [sys.executable, "-m", "drevt_sweep.cli.sim", str(BUNDLED_KTH), "--trace_format", "swf",
             "--force-simulation"]
    text = _stderr_on_a_terminal(short, _env("reference"), 30.0)
    assert "rows excluded" in text  # the run's own warnings reached the terminal
    assert "simulated day" not in text
