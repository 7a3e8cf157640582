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


# SIGTERM (what a batch system sends); Ctrl-C takes the same path (``sweep.interrupts``), and
# test_sweep_signals sends SIGTERM and SIGHUP to a sweep in flight and Ctrl-C to its group.
@pytest.mark.parametrize("signum", [signal.SIGTERM])
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


# ---------------------------------------------------------------- what a resume skips
POLICY = {"easy": "name: easy\npriority: fcfs\nbackfill: easy\nreplay: false\n",
          "sjf": "name: sjf\npriority: sjf\nbackfill: none\nreplay: false\n"}


def _resume_line(text: str) -> tuple[int, int]:
    """``(prepared, skipped)`` from the engine's ``resume: P of N configurations prepared,
    S skipped`` line."""
    (line,) = [line for line in text.splitlines() if "configurations prepared," in line]
    words = line.split("resume: ", 1)[1].split()
    return int(words[0]), int(words[5])


def _completed(text: str) -> int:
    """Configurations completed by this command (each logs ``<name>: N seeds in S s``)."""
    return sum(" seeds in " in line and "[INFO]" in line for line in text.splitlines())


def test_a_resume_skips_the_configurations_done_and_runs_those_whose_inputs_changed(tmp_path):
    """A real sweep of 12 configurations (``policy=fcfs,mine``, ``mine`` a config file of the
    user's, on a copy of the tiny trace), resumed four times on the real store: a configuration
    whose every seed is FINISHED with the same inputs is not composed, prepared or completed
    again (its results read back, bit for bit); one whose seed run was deleted from the store,
    whose config file was edited, or whose trace changed is run again."""
    from mlflow.tracking import MlflowClient

    from drevt_sweep.tracking.store import TAG_KIND, TAG_RUN_KEY, run_key

    trace = tmp_path / "trace.csv"
    trace.write_bytes(TINY.read_bytes())
    conf = tmp_path / "conf" / "policy"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text(POLICY["easy"])
    grid = ("trace=custom", f"trace.path={trace}", "format=simple", "format.queues=[all]",
            "system=custom", "policy=fcfs,mine", "system.total_nodes=range(10,16)",
            "parallel.n_jobs=2", f"hydra.searchpath=[file://{tmp_path / 'conf'}]")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    sweep = tmp_path / "sweep"

    def run(*extra: str) -> str:
        done = subprocess.run(sweep_cmd(tmp_path, "sweep", *grid, *extra), capture_output=True,
                              text=True, timeout=900, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Traceback" not in done.stderr
        return done.stdout + done.stderr

    def results() -> dict[int, dict]:
        return {int(p.parent.name): json.loads(p.read_text()) for p in sweep.glob("*/result.json")}

    first_out = run()
    assert _completed(first_out) == 12
    first = results()
    assert sorted(first) == list(range(12)) and all(r["status"] == "FINISHED" for r in first.values())
    # (Hydra's order: fcfs on 10..15 nodes are jobs 0-5, mine's 6-11.)
    assert {first[n]["choices"]["policy"] for n in range(6, 12)} == {"mine"}

    # Nothing changed, a bookkeeping override added: every configuration skipped.
    out = run("resume=true", "parallel.n_jobs=1")
    assert _resume_line(out) == (0, 12) and _completed(out) == 0
    assert "resume: " + str(sweep) + ": reused 12 seeds, ran 0" in out
    again = results()
    for num, result in again.items():
        assert result["reused_seeds"] == result["seeds"] == first[num]["seeds"]
        assert (result["metrics"], result["parent_run_id"]) == (first[num]["metrics"],
                                                                first[num]["parent_run_id"])
    summary = (sweep / "summary.csv").read_text().splitlines()
    assert len(summary) == 13 and all(",FINISHED," in line for line in summary[1:])
    assert (sweep / "report.html").is_file()

    # Job 0's seed run deleted from the store; mine.yaml edited (EASY -> SJF): job 0 and
    # mine's six are run again, the five others skipped.
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("drevt-sweep").experiment_id
    key = run_key(first[0]["config_hash"], first[0]["trace_checksum"], first[0]["seeds"][0])
    (seed_run,) = client.search_runs(
        [experiment], f"tags.{TAG_RUN_KEY} = '{key}' and tags.{TAG_KIND} = 'seed'")
    client.delete_run(seed_run.info.run_id)
    (conf / "mine.yaml").write_text(POLICY["sjf"])
    out = run("resume=true")
    assert _resume_line(out) == (7, 5) and _completed(out) == 7
    assert "reused 5 seeds, ran 7" in out
    edited = results()
    assert [n for n in range(12) if edited[n]["reused_seeds"]] == [1, 2, 3, 4, 5]
    for num in range(6, 12):  # mine is SJF now: a new configuration
        assert edited[num]["config_hash"] != first[num]["config_hash"]
    assert edited[0]["metrics"] == first[0]["metrics"] and edited[0]["reused_seeds"] == []

    # The trace changed (its last job dropped): every configuration runs again.
    lines = trace.read_text().splitlines(keepends=True)
    trace.write_text("".join(lines[:-1]))
    out = run("resume=true")
    assert _resume_line(out) == (12, 0) and _completed(out) == 12
    assert "reused 0 seeds, ran 12" in out
    assert all(r["trace_checksum"] != first[n]["trace_checksum"] for n, r in results().items())
