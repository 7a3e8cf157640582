"""Interrupting and resuming a sweep of a few hundred configurations (issue 23 item 5).

A real ``drevt-sweep`` subprocess of 300 configurations (a first wave of 256, then 44) on the
real MLflow sqlite store gets a real SIGINT once its first wave is done: nothing may be left
RUNNING (runs or processes), and ``resume=true`` must reuse every FINISHED seed (counted in the
store) and look them up in one query for the whole sweep, not one per configuration: every SQL
statement the sweep's processes send is logged (a SQLAlchemy listener installed through
``sitecustomize``) and the FINISHED-seed searches are counted.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from drevt_sweep.sweep.batch import FIRST_WAVE

from sweep_helpers import TINY, start, sweep_cmd, tagged_processes

pytestmark = pytest.mark.slow

CONFIGURATIONS = 300
GRID = ("trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
        "system=custom", "system.total_nodes=range(10,160)", "policy=fcfs,easy",
        "parallel.n_jobs=2", "figures=none")

SQL_LOGGER = '''
import os
if os.environ.get("DREVT_SQL_LOG"):
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    def _log(conn, cursor, statement, parameters, context, executemany):
        line = " ".join(statement.split()) + " || " + repr(parameters)
        with open(os.environ["DREVT_SQL_LOG"], "a") as handle:
            handle.write(line.replace("\\n", " ") + "\\n")

    event.listen(Engine, "before_cursor_execute", _log)
'''


def _store(root: Path) -> sqlite3.Connection:
    return sqlite3.connect(root / "out" / "mlflow.db")


def _count(root: Path, status: str, kind: str = "seed") -> int:
    with _store(root) as db:
        return db.execute("select count(*) from runs join tags on runs.run_uuid = tags.run_uuid "
                          "where tags.key = 'drevt_kind' and tags.value = ? and runs.status = ?",
                          (kind, status)).fetchone()[0]


def _finished_seed_searches(log: Path) -> int:
    """Searches of FINISHED seed runs: SELECTs on the runs table bound to 'FINISHED' and
    'seed' (MLflow's search_runs with the resume filter; one per page of 1,000 runs)."""
    count = 0
    for line in log.read_text().splitlines():
        statement, _, parameters = line.partition(" || ")
        if (statement.startswith("SELECT") and "FROM runs" in statement
                and "'FINISHED'" in parameters and "'seed'" in parameters):
            count += 1
    return count


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_sweep_of_300_configurations_resumes_with_one_lookup(tmp_path, signum):
    tag = f"resume-scale-{os.getpid()}"
    proc = start(sweep_cmd(tmp_path, "sweep", *GRID), tag)
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        if len(list((tmp_path / "sweep").glob("*/result.json"))) >= FIRST_WAVE:
            break  # the first wave is done; the next are being prepared or run
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, err[-3000:]
    assert "Traceback" not in err
    time.sleep(0.5)
    assert tagged_processes(tag) == []  # the sweep, its tracking helper and its workers are gone
    for kind in ("sweep", "configuration", "seed"):
        assert _count(tmp_path, "RUNNING", kind) == 0, kind
    finished = _count(tmp_path, "FINISHED")
    assert FIRST_WAVE <= finished < CONFIGURATIONS
    killed = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("*/result.json")]
    assert sum(r["status"] == "FINISHED" for r in killed) == finished

    # resume=true, every SQL statement logged
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SQL_LOGGER)
    log = tmp_path / "sql.log"
    env = {**os.environ, "DREVT_SQL_LOG": str(log),
           "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(sweep_cmd(tmp_path, "sweep", *GRID, "resume=true"), capture_output=True,
                          text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"reused {finished} seeds, ran {CONFIGURATIONS - finished}" in done.stdout
    results = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("*/result.json")]
    assert len(results) == CONFIGURATIONS and all(r["status"] == "FINISHED" for r in results)
    assert sum(len(r["reused_seeds"]) for r in results) == finished
    # One search for the whole sweep (fewer than 1,000 runs: one page), not one per configuration.
    assert log.is_file() and _finished_seed_searches(log) == 1
    assert _count(tmp_path, "RUNNING", "seed") == 0 and _count(tmp_path, "FINISHED") == CONFIGURATIONS
