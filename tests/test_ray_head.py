"""The supervisor of a sweep's local Ray instance (``sweep/ray_head.py``) with a stand-in for
``ray start --block`` (a script that prints what Ray prints): what it tells the sweep, that a
``ray start`` refusing the lean flags is run again without them, that SIGTERM stops it and its
folder goes, and that it dies with its parent. The real Ray: ``test_sweep_backends.py``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SUPERVISOR = Path(__file__).parents[1] / "drevt_sweep" / "sweep" / "ray_head.py"

# A stand-in for `ray start --head --block`: refuses --no-monitor when REFUSE is set, else says
# its address and blocks until SIGTERM, as Ray does.
FAKE_RAY = textwrap.dedent("""
    import os, signal, sys, time
    if os.environ.get("REFUSE") and "--no-monitor" in sys.argv:
        print("Error: No such option: --no-monitor", flush=True)
        sys.exit(2)
    with open(os.environ["SEEN"], "w") as seen:
        seen.write(" ".join(sys.argv[1:]))
    print("Local node IP: 127.0.0.1", flush=True)
    print("  ray start --address='127.0.0.1:6390'", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(0.1)
""")


def supervised(tmp_path: Path, refuse: bool, parent_script: str | None = None) -> subprocess.Popen:
    """The supervisor, with `ray` replaced by FAKE_RAY (ray_command reads the interpreter's
    folder: a stand-in interpreter folder whose `ray` is the fake)."""
    fake = tmp_path / "ray"
    fake.write_text(f"#!{sys.executable}\n{FAKE_RAY}")
    fake.chmod(0o755)
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(SUPERVISOR.parent)!r})
        import ray_head
        ray_head.Path = lambda _: __import__("pathlib").Path({str(tmp_path)!r}) / "python"
        sys.exit(ray_head.supervise(1, int(sys.argv[1])))
    """)
    env = {**os.environ, "SEEN": str(tmp_path / "seen"), "REFUSE": "1" if refuse else ""}
    if parent_script is None:
        return subprocess.Popen([sys.executable, "-c", code, str(os.getpid())], stdout=subprocess.PIPE,
                                text=True, env=env)
    return subprocess.Popen([sys.executable, "-c", parent_script, code], stdout=subprocess.PIPE,
                            text=True, env=env)


def wait_gone(pid: int, timeout: float = 20) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG and /proc are Linux's")
@pytest.mark.parametrize("refuse", [False, True])
def test_the_supervisor_says_the_address_and_sigterm_stops_ray_and_removes_its_folder(tmp_path, refuse):
    proc = supervised(tmp_path, refuse)
    try:
        address, folder = proc.stdout.readline().split()
        assert address == "127.0.0.1:6390"
        assert Path(folder).is_dir() and Path(folder).name.startswith("drevt-ray-")
        seen = (tmp_path / "seen").read_text()
        assert f"--temp-dir={folder}" in seen and "--head --block" in seen
        # A Ray that refuses the hidden --no-monitor gets the command without the lean flags.
        assert ("--no-monitor" in seen) is not refuse and ("--include-log-monitor=false" in seen) is not refuse
        proc.send_signal(signal.SIGINT)  # (a Ctrl-C in the terminal is the sweep's to handle)
        time.sleep(0.3)
        assert proc.poll() is None
        proc.terminate()
        assert proc.wait(timeout=20) == 0
        assert not Path(folder).exists()
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """A failed test's supervisor: stopped as the sweep stops it (its folder goes), then killed."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG and /proc are Linux's")
def test_the_supervisor_and_ray_die_with_a_sigkilled_parent_not_with_the_thread_that_started_them(tmp_path):
    # The parent starts the supervisor from a thread that reads its address and then ends,
    # prints the supervisor's pid and the address line, and waits to be killed.
    parent = textwrap.dedent("""
        import os, subprocess, sys, threading, time
        said = []

        def start():
            child = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(os.getpid())],
                                     stdout=subprocess.PIPE, text=True)
            said.append(f"{child.pid} {child.stdout.readline().strip()}")

        thread = threading.Thread(target=start)
        thread.start()
        thread.join()
        print(said[0], flush=True)
        time.sleep(600)
    """)
    proc = supervised(tmp_path, refuse=False, parent_script=parent)
    try:
        supervisor, _, folder = proc.stdout.readline().split()
        ray = int(subprocess.run(["pgrep", "-P", supervisor], capture_output=True, text=True).stdout.split()[0])
        time.sleep(1.0)  # (PR_SET_PDEATHSIG on the supervisor would have ended it with the thread)
        assert not wait_gone(int(supervisor), timeout=0.1) and Path(folder).is_dir()
        proc.kill()
        assert wait_gone(int(supervisor)) and wait_gone(ray)
        deadline = time.time() + 20
        while Path(folder).exists() and time.time() < deadline:
            time.sleep(0.05)
        assert not Path(folder).exists()
    finally:
        proc.kill()


def test_no_local_instance_is_started_without_ray_installed(monkeypatch):
    import importlib.util

    from drevt_sweep.sweep import backends

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    backends.start_local_ray(1)
    assert "process" not in backends._HEAD
