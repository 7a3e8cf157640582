"""The sweep's own files never replace its trace (issue 27 item 5): a trace where the sweep,
Hydra or the report writes -- summary.csv, report.html, multirun.yaml, result.json, the job log,
Hydra's .hydra/ files -- is refused with one line and exit code 2 before anything is written,
and so is a trace that such a file reaches through a hard or a symbolic link. Real commands."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sweep_helpers import TINY

COMMON = ["trace=custom", "format=simple", "format.queues=[all]", "system=custom",
          "system.total_nodes=10", "run_time=actual", "progress=false",
          "figures=none"]  # (not what these tests are about; ~45% of a small sweep's CPU)


def drevt_sweep(tmp_path, *args) -> subprocess.CompletedProcess:
    flags = [a for a in args if a == "-m"]  # Hydra's flags go before the overrides
    overrides = [a for a in args if a != "-m"]
    return subprocess.run([sys.executable, "-m", "drevt_sweep", *flags, *COMMON,
                           f"paths.output_root={tmp_path / 'out'}", *overrides],
                          capture_output=True, text=True, timeout=300)


def placed(path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(TINY.read_bytes())
    return path.read_bytes()


def assert_refused(proc, trace, before: bytes, why: str) -> None:
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("drevt-sweep: error:")]
    assert len(errors) == 1 and why in errors[0], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert trace.read_bytes() == before


SWEEP_FILES = ["summary.csv", "report.html", "multirun.yaml", "0/result.json",
               "0/drevt-sweep.log", "0/.hydra/config.yaml"]


@pytest.mark.parametrize("name", SWEEP_FILES[:1] + [pytest.param(n, marks=pytest.mark.slow)
                                                    for n in SWEEP_FILES[1:]])
def test_a_trace_where_a_multirun_writes_is_refused(tmp_path, name):
    trace = tmp_path / "sweep" / name
    before = placed(trace)
    proc = drevt_sweep(tmp_path, "-m", f"trace.path={trace}", f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert_refused(proc, trace, before, "is inside the output folder")
    assert not (tmp_path / "sweep" / "0" / ".hydra").exists() or name.startswith("0/.hydra")
    assert not (tmp_path / "out" / "mlflow.db").exists()  # checked before the store opened


@pytest.mark.parametrize("name", ["result.json", pytest.param("summary.csv", marks=pytest.mark.slow),
                                  pytest.param("drevt-sweep.log", marks=pytest.mark.slow)])
def test_a_trace_where_a_single_run_writes_is_refused(tmp_path, name):
    trace = tmp_path / "run" / name
    before = placed(trace)
    proc = drevt_sweep(tmp_path, f"trace.path={trace}", f"hydra.run.dir={tmp_path / 'run'}")
    assert_refused(proc, trace, before, "is inside the output folder")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [name]


@pytest.mark.parametrize("link", ["hard", pytest.param("symbolic", marks=pytest.mark.slow)])
def test_a_link_from_the_sweep_folder_to_the_trace_is_refused(tmp_path, link):
    """The trace lives elsewhere; the sweep folder's summary.csv is a link to it."""
    trace = tmp_path / "traces" / "jobs.csv"
    before = placed(trace)
    (tmp_path / "sweep").mkdir()
    make = os.link if link == "hard" else os.symlink
    make(trace, tmp_path / "sweep" / "summary.csv")
    proc = drevt_sweep(tmp_path, "-m", f"trace.path={trace}", f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert_refused(proc, trace, before, "is the same file as")


@pytest.mark.slow
def test_a_log_file_named_elsewhere_that_is_the_trace_is_refused(tmp_path):
    trace = tmp_path / "jobs.csv"
    before = placed(trace)
    proc = drevt_sweep(tmp_path, f"trace.path={trace}", f"hydra.run.dir={tmp_path / 'run'}",
                       f"hydra.job_logging.handlers.file.filename={trace}")
    assert_refused(proc, trace, before, "is the same file as")


@pytest.mark.slow
def test_a_trace_beside_the_sweep_folder_still_runs(tmp_path):
    """Only the output folder is the sweep's: a trace next to it is an ordinary input."""
    trace = tmp_path / "jobs.csv"
    before = placed(trace)
    proc = drevt_sweep(tmp_path, "-m", f"trace.path={trace}", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                       "tracking.enabled=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert trace.read_bytes() == before and (tmp_path / "sweep" / "summary.csv").is_file()
