"""The sweep engine's task chunks on every back-end give loky's results, byte for byte.

Real components: a dask LocalCluster, a local Ray instance (in a network namespace of its own,
loopback only), submitit's local executor under a real ``drevt-sweep`` subprocess, and real
signals. Each case runs a small task list (mixed stochastic and deterministic configurations,
two traces) at several chunk sizes.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.sim.runtime import RunTimeModel
from drevt_sweep.sim.workload import WorkloadSpec
from drevt_sweep.sweep.batch import FIRST_WAVE
from drevt_sweep.sweep.seeds import RunSpec, SeedTask, run_tasks
from drevt_sweep.trace import ReadOptions, read_trace

from sweep_helpers import (TINY, assert_no_process_left, cpu_seconds, run_sweep, start, sweep_cmd,
                           tagged_processes)

pytestmark = pytest.mark.slow

CHUNK_SIZES = (1, 3, 7, None)


def tiny_traces():
    options = ReadOptions(trace_format="simple", queues="all", force_simulation=True)
    whole = read_trace(TINY, options)
    return [whole, read_trace(TINY, options)]  # two tables: chunks never mix traces


def mixed_tasks() -> list[SeedTask]:
    """Deterministic and stochastic configurations on two traces, one seed's schedule kept."""
    specs = [RunSpec(total_nodes=10, priority="fcfs", backfill="easy"),
             RunSpec(total_nodes=12, priority="sjf", backfill="none"),
             RunSpec(total_nodes=10, backfill="conservative",
                     run_time=RunTimeModel(mode="distribution", distribution="lognormal",
                                           scale=0.5, stddev=0.5)),
             RunSpec(total_nodes=10, workload=WorkloadSpec(shake=30.0))]
    tasks = []
    for key, spec in enumerate(specs):
        seeds = [0, 1, 2] if spec.stochastic else [0]
        for seed in seeds:
            tasks.append(SeedTask(key, key % 2, spec, seed, keep_schedule=seed == 1))
    return tasks


def assert_identical(expected: dict, actual: dict) -> None:
    assert sorted(actual) == sorted(expected)
    for key in expected:
        want, got = expected[key], actual[key]
        assert [r.seed for r in got] == [r.seed for r in want]
        for a, b in zip(want, got):
            assert b.error is None, b.error
            assert json.dumps(b.metrics, sort_keys=True) == json.dumps(a.metrics, sort_keys=True)
            assert (a.schedule is None) == (b.schedule is None)
            if a.schedule is not None:
                for name, value in vars(a.schedule).items():
                    if isinstance(value, np.ndarray):
                        other = getattr(b.schedule, name)
                        assert value.dtype == other.dtype and value.tobytes() == other.tobytes(), name


@pytest.fixture(scope="module")
def reference():
    return run_tasks(tiny_traces(), mixed_tasks(), n_jobs=2, backend="loky")


# ---------------------------------------------------------------- dask (dask_cluster: conftest.py)

@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_chunks_on_a_dask_cluster_equal_loky_byte_for_byte(dask_cluster, reference, chunk_size):
    address = dask_cluster.scheduler_address
    got = run_tasks(tiny_traces(), mixed_tasks(), backend="dask", chunk_size=chunk_size,
                    backend_options={"address": address})
    assert_identical(reference, got)
    # Nothing of the sweep is left on the cluster: no task, no copy of a trace.
    deadline = time.time() + 10
    while dask_cluster.scheduler.tasks and time.time() < deadline:
        time.sleep(0.1)
    assert not dask_cluster.scheduler.tasks


def test_dask_chunks_are_cut_for_the_clusters_size_not_this_machines(dask_cluster):
    from drevt_sweep.sweep.backends import cluster_workers

    assert cluster_workers("dask", dask_cluster.scheduler_address, 1) == 2


# ---------------------------------------------------------------- Ray
ISOLATED = "DREVT_TEST_NETNS"


def _in_own_network_namespace(request) -> bool:
    """Ray binds to the machine's address whatever it is told: run the test again in a network
    namespace with loopback only (as root), so that none of its traffic leaves; skip elsewhere."""
    if os.environ.get(ISOLATED):
        return True
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "--net", "true"], capture_output=True).returncode:
        pytest.skip("Ray is tested only inside a loopback-only network namespace (needs unshare --net)")
    test_id = f"{request.node.path}::{request.node.name}"
    inner = (f"ip link set lo up && exec {shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider "
             f"-p no:randomly {shlex.quote(test_id)}")
    done = subprocess.run([unshare, "--net", "sh", "-c", inner], env={**os.environ, ISOLATED: "1"},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return False


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="Ray has no wheel for this Python yet")
def test_chunks_on_ray_equal_loky_byte_for_byte_for_every_chunk_size(request):
    if not _in_own_network_namespace(request):
        return
    import ray

    from drevt_sweep.sweep.backends import close_ray

    reference = run_tasks(tiny_traces(), mixed_tasks(), n_jobs=2, backend="loky")
    real_put, puts = ray.put, []
    ray.put = lambda value, **kw: puts.append(type(value).__name__) or real_put(value, **kw)
    try:
        for chunk_size in CHUNK_SIZES:
            got = run_tasks(tiny_traces(), mixed_tasks(), n_jobs=2, backend="ray",
                            chunk_size=chunk_size)
            assert_identical(reference, got)
        # Each call put each of its two traces into the object store once, not once per chunk.
        assert puts == ["JobTable", "JobTable"] * len(CHUNK_SIZES)
        # Plain tasks on Ray's reused workers: no actor pool (joblib's Ray back-end made one
        # of new processes for every call).
        assert not ray._private.state.actors()
    finally:
        ray.put = real_put
        close_ray()


# ---------------------------------------------------------------- submitit: job arrays
MIXED = ("policy=fcfs,easy", "run_time=actual,lognormal", "system.total_nodes=8,10", "replicates=3")


def _files(root: Path, name: str) -> list[bytes]:
    return [(root / "sweep" / str(job) / name).read_bytes() for job in range(8)]


def _tracked(root: Path) -> dict:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'out' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("drevt-sweep")
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    by_id = {r.info.run_id: r for r in runs}
    out = {}
    for run in runs:
        kind = run.data.tags.get("drevt_kind")
        if kind == "seed":
            parent = by_id[run.data.tags["mlflow.parentRunId"]]
            out[(parent.data.tags["drevt_label"], run.data.params["seed"])] = (
                run.data.metrics, run.info.status)
        elif kind == "configuration":
            out[run.data.tags["drevt_label"]] = (run.data.metrics, run.info.status)
    return out


def test_a_sweep_on_submitit_local_runs_chunks_of_tasks_and_equals_loky(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    run_sweep(tmp_path / "loky", *MIXED, "parallel.n_jobs=2")
    reference = _tracked(tmp_path / "loky")
    assert len(reference) == 8 + 4 + 4 * 3  # 8 configurations, 4 deterministic, 4 x 3 seeds
    for chunk_size, jobs in ((5, 4),):  # 16 tasks in chunks of 5 (the default: the other test)
        name = f"chunk{chunk_size}"
        proc = run_sweep(tmp_path / name, *MIXED, "hydra/launcher=submitit_local",
                         "parallel.n_jobs=2", f"parallel.chunk_size={chunk_size}")
        assert "Traceback" not in proc.stderr
        logs = list((tmp_path / name / "sweep" / ".submitit").glob("*/*_log.out"))
        assert len(logs) == jobs, logs  # one process per chunk, many configurations each
        assert _files(tmp_path / name, "seed_metrics.csv") == _files(tmp_path / "loky", "seed_metrics.csv")
        assert ((tmp_path / name / "sweep" / "summary.csv").read_bytes()
                == (tmp_path / "loky" / "sweep" / "summary.csv").read_bytes())
        assert _tracked(tmp_path / name) == reference
        assert not (tmp_path / name / "sweep" / ".submitit" / "traces").exists()  # removed at the end


def _running_runs(root: Path) -> list:
    import sqlite3

    with sqlite3.connect(root / "out" / "mlflow.db") as db:
        return db.execute("select run_uuid from runs where status = 'RUNNING'").fetchall()


def test_sigterm_ends_the_array_tasks_and_resume_reuses_every_finished_seed(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    # 300 configurations: waves of 32, 64, 128 and 76 (two local jobs each); SIGTERM once the
    # first wave's seeds are in the store and the second wave's jobs are starting.
    grid = ("trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
            "system=custom", "system.total_nodes=range(10,160)", "policy=fcfs,easy",
            "hydra/launcher=submitit_local", "parallel.n_jobs=2", "figures=none")
    tag = f"arrays-{os.getpid()}"
    proc = start(sweep_cmd(tmp_path, "sweep", *grid), tag)
    submitit = tmp_path / "sweep" / ".submitit"
    deadline = time.time() + 300
    while time.time() < deadline and (len([p for p in submitit.glob("[0-9]*")]) < 3
                                      or _finished_seeds(tmp_path) < FIRST_WAVE):
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    time.sleep(0.5)
    assert tagged_processes(tag) == []  # no array task, no controller left
    assert _running_runs(tmp_path) == []
    finished = _finished_seeds(tmp_path)
    assert FIRST_WAVE <= finished < 300, finished  # the first wave's at least, not all
    done = subprocess.run(sweep_cmd(tmp_path, "sweep", *grid, "resume=true"), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"reused {finished} seeds, ran {300 - finished}" in done.stdout
    results = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("*/result.json")]
    assert len(results) == 300 and all(r["status"] == "FINISHED" for r in results)
    assert _running_runs(tmp_path) == []


def _finished_seeds(root: Path) -> int:
    import sqlite3

    store = root / "out" / "mlflow.db"
    if not store.exists():  # (connecting would create it before MLflow does)
        return 0
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return db.execute("select count(*) from runs join tags on runs.run_uuid = tags.run_uuid "
                          "where tags.key = 'drevt_kind' and tags.value = 'seed' "
                          "and runs.status = 'FINISHED'").fetchone()[0]


def test_an_array_task_killed_fails_its_configurations_only_and_leaves_nothing_running(tmp_path):
    """A cancelled or dead array task (here: SIGKILL, as ``scancel`` or a lost node ends it)
    fails the configurations of its chunk, each with one line naming it; the other chunk's
    finish; no run stays RUNNING and the sweep exits 1."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    grid = ("trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
            "system=custom", "system.total_nodes=range(10,26)", "policy=fcfs,easy",
            "run_time=lognormal", "replicates=50", "hydra/launcher=submitit_local",
            "parallel.n_jobs=2", "figures=none")  # one wave, 1,600 tasks: two chunks of 16 configurations
    tag = f"array-kill-{os.getpid()}"
    proc = start(sweep_cmd(tmp_path, "sweep", *grid), tag)

    def array_tasks() -> list[int]:
        found = []
        for pid in tagged_processes(tag):
            try:
                if b"submitit.core._submit" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(pid)
            except OSError:
                pass
        return sorted(found)

    deadline = time.time() + 300
    while time.time() < deadline and len(array_tasks()) < 2:
        time.sleep(0.05)
    victim = array_tasks()[0]
    os.kill(victim, signal.SIGKILL)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err[-3000:]
    results = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("*/result.json")]
    failed = [r for r in results if r["status"] == "FAILED"]
    assert len(results) == 32 and len(failed) == 16, [r["status"] for r in results]
    assert all("array task" in r["error"] and "did not finish" in r["error"] for r in failed)
    assert _running_runs(tmp_path) == []
    time.sleep(0.5)
    assert tagged_processes(tag) == []


def test_a_ray_sweep_of_several_waves_gives_lokys_results(tmp_path):
    """Ray starts from the sweep's main thread. Started from the first wave's thread, the
    driver lost its connection to Ray's object store once that thread had ended, and the
    sweep exited 1 without a word in its second wave (Ray 2.60; 200 configurations of
    ``benchmarks/bench_backends.py``)."""
    pytest.importorskip("ray")
    sizes = f"system.total_nodes=range(8,{8 + FIRST_WAVE // 2 + 2})"  # 36 configurations: two waves
    common = ("policy=fcfs,easy", sizes, "tracking.enabled=false", "parallel.n_jobs=2")
    run_sweep(tmp_path / "ray", *common, "parallel.backend=ray")
    run_sweep(tmp_path / "loky", *common)
    ray_files = sorted((tmp_path / "ray" / "sweep").glob("*/seed_metrics.csv"))
    assert len(ray_files) == 2 * (FIRST_WAVE // 2 + 2)
    for path in ray_files:
        twin = tmp_path / "loky" / "sweep" / path.parent.name / path.name
        assert path.read_bytes() == twin.read_bytes(), path.parent.name


def _ray_session_folders(tag: str) -> set[str]:
    """The ``--temp-dir`` of every ``ray start`` the tagged sweep runs (``ray_head.py``)."""
    found = set()
    for pid in tagged_processes(tag):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        found |= {a.decode().split("=", 1)[1] for a in args if a.startswith(b"--temp-dir=")}
    return found


def _ray_workers_busy(tag: str) -> bool:
    """A Ray worker of the tagged sweep has run seeds (used more CPU than its start takes)."""
    for pid in tagged_processes(tag):
        try:
            if b"ray::" in Path(f"/proc/{pid}/cmdline").read_bytes() and cpu_seconds(pid) > 2.0:
                return True
        except OSError:
            continue
    return False


def test_the_sweeps_ray_instance_ends_with_it_even_when_the_sweep_is_killed(tmp_path):
    """A sweep on local Ray starts the instance as a process of its own (``ray_head.py``), in
    the background while it composes. Once the sweep has ended -- done, or SIGKILLed with
    its seeds running -- no process of that instance is left, nor its session folder (with
    the address file that would send every later ``ray.init()`` on this machine to a dead
    instance)."""
    pytest.importorskip("ray")
    from sweep_helpers import cleanup, long_kth_sweep

    tag = f"ray-done-{os.getpid()}"
    cmd = sweep_cmd(tmp_path, "done", "trace=custom", f"trace.path={TINY}", "format=simple",
                    "format.queues=[all]", "system=custom", "system.total_nodes=10",
                    "figures=none", "tracking.enabled=false", "parallel.backend=ray",
                    "parallel.n_jobs=2", "policy=fcfs,easy")
    proc = start(cmd, tag)
    folders: set[str] = set()
    try:
        while proc.poll() is None:
            folders |= _ray_session_folders(tag)
            time.sleep(0.1)
        assert proc.returncode == 0, proc.stderr.read()[-3000:]
        assert len(folders) == 1
        assert_no_process_left(tag, timeout=60)
        assert not any(Path(f).exists() for f in folders)
    finally:
        cleanup(proc, tag)

    tag = f"ray-killed-{os.getpid()}"
    proc = start([*long_kth_sweep(tmp_path, "killed"), "parallel.backend=ray"], tag)
    try:
        deadline = time.time() + 180
        while time.time() < deadline and not _ray_workers_busy(tag):
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            time.sleep(0.2)  # (until Ray's workers are running seeds)
        folders = _ray_session_folders(tag)
        assert len(folders) == 1
        proc.kill()
        proc.wait()
        assert_no_process_left(tag, timeout=60)
        assert not any(Path(f).exists() for f in folders)
    finally:
        cleanup(proc, tag)
