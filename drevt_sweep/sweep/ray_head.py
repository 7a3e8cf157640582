"""A local Ray instance for one sweep, started in the background and gone when the sweep is.

``ray.init()`` starting a local instance blocks the sweep's main thread for 2.5-3.4 s (GCS,
raylet, workers; Ray 2.60, measured), and must run on that thread: started from another one,
the driver cannot reach it. On a 200-configuration sweep that loky runs in 3.5 s, that start
and its 1.4 s ``ray.shutdown()`` made Ray x2.2-2.4 loky (issue 23). So the sweep starts the
instance as a process of its own (``ray start --head --block``) as soon as the command line says
Ray will be used, and connects to it once the first wave is prepared (0.3-0.4 s).

This module is that process's supervisor (run as a file, ``python .../ray_head.py CPUS PID``):

- it prints the instance's address and its temporary folder on its standard output, once Ray
  says it has started, or ``FAILED`` and the end of Ray's output;
- it stops Ray on SIGTERM (the sweep's end; ``ray start --block`` ends its processes on
  SIGTERM) and when the sweep has gone, even SIGKILLed: it looks at its parent every 0.2 s
  (``PR_SET_PDEATHSIG`` would also fire when the *thread* that started it ends, and a sweep
  may start Ray from a thread other than its main one); Ray itself gets ``PR_SET_PDEATHSIG``
  from this single-threaded supervisor;
- it ignores SIGINT, and Ray runs in a session of its own, so a Ctrl-C in the terminal reaches
  the sweep, which decides (as it does for its loky workers);
- Ray's session files, and the ``ray_current_cluster`` address file that would make every later
  ``ray.init()`` on this machine try to join the (then dead) instance, live in a temporary
  folder of their own, removed once Ray has stopped.

The instance accepts only drivers holding the sweep's token (``RAY_AUTH_TOKEN``, inherited).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ADDRESS = re.compile(r"--address='([^']+)'")
PR_SET_PDEATHSIG = 1


try:  # (looked up here, not in the forked child: the watchdog thread runs beside the fork)
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: the supervisor's SIGTERM still stops Ray
    _PRCTL = None


def _die_with_parent() -> None:
    """In Ray's process, before it runs: SIGTERM when the supervisor dies (Linux)."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)


def _watch_parent(parent: int, stop) -> None:
    """``stop()`` once the sweep (``parent``) is gone: this process is then re-parented."""
    while os.getppid() == parent:
        time.sleep(0.2)
    stop()


def ray_command(cpus: int, temp_dir: str, lean: bool = True) -> list[str]:
    """``ray start`` for a head of ``cpus`` CPUs, beside this interpreter when installed there.
    ``lean``: without the log monitor (the sweep does not print its workers' output) and the
    autoscaler's monitor (the instance never grows; ``--no-monitor`` is a hidden flag of
    ``ray start``, so a Ray that refuses it gets the command without both)."""
    beside = Path(sys.executable).with_name("ray")
    start = [str(beside)] if beside.exists() else [sys.executable, "-m", "ray.scripts.scripts"]
    lean_flags = ["--include-log-monitor=false", "--no-monitor"] if lean else []
    return [*start, "start", "--head", "--block", f"--num-cpus={cpus}", "--port=0",
            "--include-dashboard=false", *lean_flags, "--disable-usage-stats",
            f"--temp-dir={temp_dir}"]


def supervise(cpus: int, parent: int) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    temp_dir = tempfile.mkdtemp(prefix="drevt-ray-")
    state: dict = {"child": None, "stopping": False}

    def stop(*_):
        state["stopping"] = True
        child = state["child"]
        if child is not None and child.poll() is None:
            child.terminate()

    signal.signal(signal.SIGTERM, stop)
    threading.Thread(target=_watch_parent, args=(parent, stop), daemon=True).start()
    try:
        for lean in (True, False):
            tail = _run_ray(ray_command(cpus, temp_dir, lean), temp_dir, state)
            if tail is None or state["stopping"] or "no such option" not in tail.lower():
                break
        if tail is not None and not state["stopping"]:
            print("FAILED " + tail, flush=True)
        return 0
    except OSError as exc:
        print(f"FAILED {exc}", flush=True)
        return 1
    finally:
        stop()
        if state["child"] is not None:
            state["child"].wait()
        shutil.rmtree(temp_dir, ignore_errors=True)


def _run_ray(command: list[str], temp_dir: str, state: dict) -> str | None:
    """Run ``ray start --block`` until it ends; None once it said its address (printed), or
    the end of its output when it ended before."""
    child = state["child"] = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        text=True, start_new_session=True, preexec_fn=_die_with_parent)
    if state["stopping"]:  # (SIGTERM while it was being started)
        child.terminate()
    told, tail = False, []
    for line in child.stdout:  # (read to the end: --block keeps writing until it stops)
        if not told:
            tail = (tail + [line.rstrip()])[-20:]
            found = ADDRESS.search(line)
            if found:
                print(found.group(1), temp_dir, flush=True)
                told = True
    child.wait()
    return None if told else " | ".join(t for t in tail if t)


if __name__ == "__main__":
    sys.exit(supervise(int(sys.argv[1]), int(sys.argv[2])))
