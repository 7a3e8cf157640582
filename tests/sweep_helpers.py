"""Running a real drevt-sweep multirun in a subprocess on the tiny test trace."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

TINY = Path(__file__).parent / "data" / "traces" / "sweep_tiny.csv"


def run_sweep(tmp_path: Path, *overrides: str, check: bool = True) -> subprocess.CompletedProcess:
    """A multirun over ``overrides`` on a 10-node machine, with outputs under ``tmp_path``.

    Without per-configuration figures unless ``overrides`` ask for them (``figures=...``):
    drawing them is ~45% of a small sweep's CPU (4.6 of 10-12 s for 4 configurations), and
    the tests that look at figures ask for them. (``figures=none`` keeps no schedule file
    either: a test that reads ``schedule_seed*.csv.gz`` passes ``figures=auto``.)"""
    if not any(o.startswith("figures=") for o in overrides):
        overrides = ("figures=none", *overrides)
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


# ---------------------------------------------------------------- sweeps under faults
def sweep_cmd(tmp_path: Path, name: str, *overrides: str) -> list[str]:
    return [
        sys.executable, "-m", "drevt_sweep", "-m",
        f"paths.output_root={tmp_path / 'out'}", f"hydra.sweep.dir={tmp_path / name}",
        "progress=false", *overrides,
    ]


def long_kth_sweep(tmp_path: Path, name: str = "sweep") -> list[str]:
    # Many stochastic seeds of the bundled trace: long enough to be interrupted, bounded in time.
    return sweep_cmd(tmp_path, name, "policy=easy", "run_time=lognormal", "replicates=2000",
                     "parallel.n_jobs=2")


def tagged_processes(tag: str) -> list[int]:
    """Processes carrying our tag in their environment: the sweep and its joblib workers
    (loky re-parents its workers, so a process tree would miss them)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"DREVT_TEST_TAG={tag}".encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def is_worker(pid: int) -> bool:
    try:
        return b"popen_loky_posix" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def start(cmd: list[str], tag: str, new_session: bool = False) -> subprocess.Popen:
    """``new_session``: in a process group of its own, to be signalled as a terminal does."""
    env = {**os.environ, "DREVT_TEST_TAG": tag}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=new_session)


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for_workers(proc: subprocess.Popen, tag: str, timeout: float = 180) -> list[int]:
    """The sweep's two workers, once they are running seeds: each has used more CPU time
    than starting up and loading the kernel take (about 1 s here), on any machine speed."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        workers = [p for p in tagged_processes(tag) if is_worker(p)]
        if len(workers) >= 2 and all(cpu_seconds(p) >= 3.0 for p in workers):
            return workers
        time.sleep(0.2)
    raise AssertionError("no joblib workers running seeds appeared")


def cleanup(proc: subprocess.Popen, tag: str) -> None:
    if proc.poll() is None:
        proc.kill()
    for pid in tagged_processes(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def wait_for_running_runs(tmp_path: Path, timeout: float = 180) -> None:
    """Until the sweep's runs are in its store, RUNNING: the store is created and written
    while the first wave's seeds run, so workers running seeds do not mean runs yet."""
    import sqlite3

    db = tmp_path / "out" / "mlflow.db"
    deadline = time.time() + timeout
    while time.time() < deadline:
        if db.exists():
            try:
                with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as con:
                    if con.execute("SELECT count(*) FROM runs WHERE status = 'RUNNING'").fetchone()[0]:
                        return
            except sqlite3.OperationalError:  # the schema is being written
                pass
        time.sleep(0.2)
    raise AssertionError(f"no RUNNING run appeared in {db}")


def runs(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("drevt-sweep")
    return client.search_runs([experiment.experiment_id], max_results=5000)


def assert_no_process_left(tag: str, timeout: float = 15.0) -> None:
    """Nothing the sweep started outlives it: workers, resource trackers, the helper."""
    deadline = time.time() + timeout
    while tagged_processes(tag) and time.time() < deadline:
        time.sleep(0.2)
    left = {pid: Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:200]
            for pid in tagged_processes(tag) if Path(f"/proc/{pid}").exists()}
    assert not left, f"still running after the sweep ended: {left}"
