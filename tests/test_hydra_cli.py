"""drevt-sweep as a Hydra app: its help, its version, values checked before anything runs
(exit 2 naming the key and the value, no store opened), and resume=true."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_module

from drevt_sweep import __version__
from drevt_sweep.sweep.config import register_configs
from drevt_sweep.sweep.validate import check_config

from sweep_helpers import TINY

# (override, what the message must name)
BAD_VALUES = [
    ("system.total_nodes=0", "system.total_nodes=0"),
    ("run_time.scale=-1", "run_time.scale=-1"),
    ("parallel.n_jobs=0", "parallel.n_jobs=0"),
    ("workload.load_factor=0", "workload.load_factor=0"),
    ("workload.rescale_nodes=-2", "workload.rescale_nodes=-2"),
    ("workload.shake=-1", "workload.shake=-1"),
    ("workload.max_jobs=0", "workload.max_jobs=0"),
    ("format.queues=[]", "format.queues=[]"),
    ("replicates=-3", "replicates=-3"),
    ("replicates=0", "replicates=0"),
    ("seed=-1", "seed=-1"),
    ("timezone.name=Mars/Olympus", "timezone.name=Mars/Olympus"),
    ("figures=some", "figures=some: must be auto, per_configuration, none"),
    ("+polcy=sjf", "did you mean policy?"),
    ("+foo=1", "unknown key 'foo'"),
    ("+policy.colour=blue", "unknown key 'policy.colour'"),
]


@pytest.fixture(scope="module")
def composed():
    register_configs()
    with initialize_config_module(version_base="1.3", config_module="drevt_sweep.conf"):
        yield lambda *o: compose("config", overrides=["trace=custom", f"trace.path={TINY}", *o],
                                 return_hydra_config=True)


@pytest.mark.parametrize("override,named", BAD_VALUES)
def test_every_bad_value_is_found_and_named(composed, override, named):
    problems = check_config(composed(override))
    assert len(problems) == 1 and named in problems[0], problems


@pytest.mark.parametrize("overrides,named", [
    (["workload=window", "workload.window_end=1997-02-01"], "the window is empty"),
    (["workload.window_start=2024-01-02", "workload.window_end=2024-01-02"], "the window is empty"),
    (["workload.window_start=yesterday"], "workload.window_start=yesterday"),
    (["run_time=uniform", "run_time.scale=0.9", "run_time.stddev=0.5"], "low < high"),
    (["resume=true", "tracking.enabled=false"], "needs the tracking store"),
    (["trace.path=/no/such/jobs.csv"], "trace.path=/no/such/jobs.csv: no such file"),
])
def test_settings_that_only_fail_together(composed, overrides, named):
    problems = check_config(composed(*overrides))
    assert len(problems) == 1 and named in problems[0], problems


def sweep_cmd(tmp_path, *args, multirun=True):
    return [sys.executable, "-m", "drevt_sweep", *(["-m"] if multirun else []), "trace=custom",
            f"trace.path={TINY}", "format=simple", "format.queues=[all]", "system=custom",
            "system.total_nodes=10", f"paths.output_root={tmp_path / 'out'}", "progress=false",
            *(() if any(a.startswith("figures=") for a in args) else ("figures=none",)),  # CPU
            *args]


@pytest.mark.slow
@pytest.mark.parametrize("multirun", [True, False])
def test_bad_values_exit_2_before_the_store_opens(tmp_path, multirun):
    # In a multirun every job's values are checked first: the bad one is the second job's.
    bad = ["policy=fcfs,easy", "system.total_nodes=10,0", "run_time.scale=-1", "+polcy=sjf"]
    if not multirun:
        bad = ["system.total_nodes=0", "run_time.scale=-1", "+polcy=sjf"]
    proc = subprocess.run(sweep_cmd(tmp_path, *bad, multirun=multirun), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    for named in ("system.total_nodes=0", "run_time.scale=-1.0", "+polcy=sjf"):
        assert named in proc.stderr
    assert not (tmp_path / "out" / "mlflow.db").exists()  # nothing opened, nothing FAILED
    assert not list((tmp_path / "out").glob("*/*/result.json"))


@pytest.mark.slow
def test_help_and_version_are_drevt_sweeps(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "drevt_sweep", "--help"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0
    assert f"drevt-sweep {__version__}" in proc.stdout and "powered by Hydra" not in proc.stdout
    for word in ("policy: conservative", "run_time: actual", "experiment:", "replicates",
                 "resume=true", "drevt-sweep-fetch"):
        assert word in proc.stdout
    for args in (["--version"], ["version=true"]):
        proc = subprocess.run([sys.executable, "-m", "drevt_sweep", *args], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
        assert (proc.returncode, proc.stdout.strip()) == (0, f"drevt-sweep {__version__}")


@pytest.mark.slow
def test_resume_continues_the_latest_sweep_folder_and_reuses_finished_seeds_bit_for_bit(tmp_path):
    # One test for what two did with five sweeps (this file and test_sweep_e2e): the folder,
    # the message, the reused seeds, the seed runs, and the results of a sweep run in one go.
    from mlflow.tracking import MlflowClient

    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    args = ["run_time=normal", "policy=fcfs,easy"]
    first = subprocess.run(sweep_cmd(tmp_path, *args, "replicates=2"), capture_output=True,
                           text=True, timeout=600, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    (folder,) = (tmp_path / "out" / "multirun").iterdir()
    again = subprocess.run(sweep_cmd(tmp_path, *args, "replicates=3", "resume=true"),
                           capture_output=True, text=True, timeout=600, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert list((tmp_path / "out" / "multirun").iterdir()) == [folder]  # no new folder
    assert f"resume: {folder}: reused 4 seeds, ran 2" in again.stdout
    results = {p.parent.name: json.loads(p.read_text()) for p in folder.glob("*/result.json")}
    assert sorted(r["reused_seeds"] for r in results.values()) == [[0, 1], [0, 1]]
    assert {r["status"] for r in results.values()} == {"FINISHED"}
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("drevt-sweep").experiment_id], max_results=1000)
    seeds: dict[str, list[int]] = {}  # each configuration: one seed run per seed, none twice
    for run in runs:
        if run.data.tags.get("drevt_kind") == "seed":
            seeds.setdefault(run.data.params["policy.name"], []).append(int(run.data.params["seed"]))
    assert {name: sorted(found) for name, found in seeds.items()} == {"fcfs": [0, 1, 2], "easy": [0, 1, 2]}
    # Across a resume the results are bit-identical to a sweep run in one go.
    fresh = subprocess.run(sweep_cmd(tmp_path / "fresh", *args, "replicates=3"), capture_output=True,
                           text=True, timeout=600, env=env)
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    (in_one_go,) = (tmp_path / "fresh" / "out" / "multirun").iterdir()
    for name, resumed in results.items():
        assert resumed["metrics"] == json.loads((in_one_go / name / "result.json").read_text())["metrics"]
    refused = subprocess.run(sweep_cmd(tmp_path, *args, "resume=true", "tracking.enabled=false"),
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "resume=True: needs the tracking store" in refused.stderr
