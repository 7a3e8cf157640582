"""Scaling out: seeds on a real dask.distributed cluster, configurations through Hydra's
submitit and joblib launchers, and a real MLflow tracking server on a real PostgreSQL.

Every cluster and server started here is stopped here (fixtures with finalizers).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.errors import ConfigError
from drevt_sweep.sweep.seeds import RunSpec, run_seed, run_seeds
from drevt_sweep.sim.runtime import RunTimeModel
from drevt_sweep.trace import ReadOptions, read_trace

from sweep_helpers import TINY, run_sweep

pytestmark = pytest.mark.slow


def results(tmp_path: Path) -> list[dict]:
    paths = sorted((tmp_path / "sweep").glob("*/result.json"), key=lambda p: int(p.parent.name))
    return [json.loads(p.read_text()) for p in paths]


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tiny_jobs():
    return read_trace(TINY, ReadOptions(trace_format="simple", queues="all", force_simulation=True))


NORMAL = RunSpec(total_nodes=10, priority="fcfs", backfill="easy",
                 run_time=RunTimeModel(mode="distribution", distribution="normal", stddev=0.3))


def assert_same_results(expected, actual) -> None:
    """Bit for bit: every metric ==, every schedule column equal (NaN where NaN)."""
    assert [r.seed for r in actual] == [r.seed for r in expected]
    for want, got in zip(expected, actual):
        assert got.error is None, got.error
        assert got.metrics == want.metrics
        assert (got.schedule is None) == (want.schedule is None)
        if want.schedule is not None:
            for name in vars(want.schedule):
                a, b = getattr(want.schedule, name), getattr(got.schedule, name)
                if isinstance(a, np.ndarray):
                    np.testing.assert_array_equal(a, b, err_msg=name)
                    assert a.dtype == b.dtype
                else:
                    assert a == b, name


# ---------------------------------------------------------------- dask.distributed (dask_cluster: conftest.py)

class TaskRecorder:
    """A scheduler plugin: for each task that starts, which keys it depends on, and on how
    many workers each of those is held at that moment."""

    name = "drevt-task-recorder"

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.started: list[tuple[str, dict[str, int]]] = []

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "processing":
            ts = self.scheduler.tasks.get(key)
            if ts is not None:
                deps = {str(d.key): len(d.who_has or ()) for d in ts.dependencies}
                self.started.append((str(key), deps))


@pytest.fixture
def recorder(dask_cluster):
    from distributed.diagnostics.plugin import SchedulerPlugin

    scheduler = dask_cluster.scheduler
    plugin = type("Recorder", (TaskRecorder, SchedulerPlugin), {})(scheduler)
    scheduler.add_plugin(plugin)
    try:
        yield plugin
    finally:
        scheduler.remove_plugin(name=plugin.name)


def test_seeds_on_a_dask_cluster_equal_loky_bit_for_bit_and_the_trace_travels_once(
        dask_cluster, recorder):
    jobs, seeds = tiny_jobs(), list(range(6))
    on_loky = run_seeds(jobs, NORMAL, seeds, n_jobs=2, backend="loky", keep_schedule_of=0)
    on_dask = run_seeds(jobs, NORMAL, seeds, backend="dask", keep_schedule_of=0,
                        backend_options={"address": dask_cluster.scheduler_address})
    assert_same_results(on_loky, on_dask)

    # The trace went to the cluster once, as one scattered key broadcast to both workers;
    # every seed's task refers to that key instead of carrying the data.
    assert recorder.started, "no task ran on the dask cluster"
    trace_keys = {dep for _, deps in recorder.started for dep in deps if dep.startswith("JobTable-")}
    assert len(trace_keys) == 1, trace_keys
    (trace_key,) = trace_keys
    for task, deps in recorder.started:
        assert deps.get(trace_key) == 2, (task, deps)  # on both workers before any seed ran
    # ... and it leaves the workers' memory when the configuration is done.
    deadline = time.time() + 10
    while trace_key in dask_cluster.scheduler.tasks and time.time() < deadline:
        time.sleep(0.1)
    assert trace_key not in dask_cluster.scheduler.tasks


def test_dask_without_an_address_starts_a_local_cluster_with_the_same_results():
    pytest.importorskip("dask.distributed")
    from drevt_sweep.sweep.backends import _DASK, close_dask

    jobs, seeds = tiny_jobs(), [3, 4, 5]
    try:
        on_dask = run_seeds(jobs, NORMAL, seeds, n_jobs=2, backend="dask", keep_schedule_of=4)
        assert "local:2" in _DASK  # a LocalCluster of n_jobs workers, kept for reuse
        client, cluster = _DASK["local:2"]
        assert len(client.scheduler_info()["workers"]) == 2
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
    finally:
        close_dask()
    assert not _DASK
    assert cluster.status.name == "closed"
    assert_same_results(run_seeds(jobs, NORMAL, seeds, n_jobs=1, keep_schedule_of=4), on_dask)


def test_a_dask_scheduler_that_does_not_answer_is_a_clear_error():
    dask = pytest.importorskip("dask")
    pytest.importorskip("dask.distributed")
    address = f"tcp://127.0.0.1:{free_port()}"
    started = time.time()
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        with pytest.raises(ConfigError, match="does not answer"):
            run_seeds(tiny_jobs(), NORMAL, [0, 1], backend="dask",
                      backend_options={"address": address})
    assert time.time() - started < 30


def test_a_sweep_through_a_dask_scheduler_matches_the_loky_sweep(tmp_path, dask_cluster, recorder):
    common = ("policy=fcfs,easy", "run_time=normal", "replicates=3", "figures=auto")  # schedules kept
    run_sweep(tmp_path / "loky", *common, "parallel.n_jobs=2")
    proc = run_sweep(tmp_path / "dask", *common, "parallel.backend=dask",
                     f"parallel.dask_address={dask_cluster.scheduler_address}")
    assert "Traceback" not in proc.stderr
    assert len(recorder.started) >= 2  # the seeds really ran on the cluster
    on_loky, on_dask = results(tmp_path / "loky"), results(tmp_path / "dask")
    assert len(on_dask) == 2
    for a, b in zip(on_loky, on_dask):
        assert b["status"] == "FINISHED"
        assert (a["label"], a["seeds"], a["metrics"]) == (b["label"], b["seeds"], b["metrics"])
        for name in ("seed_metrics.csv", "schedule_seed0.csv.gz"):  # gzip with mtime 0: same bytes
            job = str(on_dask.index(b))
            assert ((tmp_path / "dask" / "sweep" / job / name).read_bytes()
                    == (tmp_path / "loky" / "sweep" / job / name).read_bytes())


ISOLATED = "DREVT_TEST_NETNS"  # set inside the network namespace the Ray test makes itself


def _rerun_in_own_network_namespace(test_id: str) -> None:
    """Ray binds its local instance to the machine's network address whatever it is told; run
    the test again in a network namespace of its own, with loopback only, so that none of its
    traffic can reach another address. Skips where namespaces cannot be made (not root)."""
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "--net", "true"], capture_output=True).returncode:
        pytest.skip("Ray is tested only inside a loopback-only network namespace (needs unshare --net)")
    inner = (f"ip link set lo up && exec {shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider "
             f"{shlex.quote(test_id)}")
    done = subprocess.run([unshare, "--net", "sh", "-c", inner], env={**os.environ, ISOLATED: "1"},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="Ray has no wheel for this Python yet")
def test_seeds_on_ray_equal_loky_bit_for_bit(monkeypatch, request):
    """A real local Ray instance started by the backend (Ray is in the test extra), in a
    network namespace with loopback only."""
    if not os.environ.get(ISOLATED):
        _rerun_in_own_network_namespace(f"{request.node.path}::{request.node.name}")
        return
    import ray

    from drevt_sweep.sweep.backends import close_ray

    puts = []
    real_put = ray.put
    monkeypatch.setattr(ray, "put", lambda value, **kw: puts.append(type(value).__name__) or real_put(value, **kw))
    jobs, seeds = tiny_jobs(), [0, 1, 2, 3]
    try:
        on_ray = run_seeds(jobs, NORMAL, seeds, n_jobs=2, backend="ray", keep_schedule_of=1)
    finally:
        close_ray()
    assert puts == ["JobTable"]  # the trace went into the object store once, for all seeds
    assert_same_results(run_seeds(jobs, NORMAL, seeds, n_jobs=1, keep_schedule_of=1), on_ray)


# ---------------------------------------------------------------- Hydra launchers
@pytest.mark.parametrize("launcher", ["submitit_local", "joblib"])
def test_a_multirun_through_a_hydra_launcher_runs_each_configuration_in_another_process(
        tmp_path, launcher):
    pytest.importorskip(f"hydra_plugins.hydra_{launcher.split('_')[0]}_launcher")
    proc = run_sweep(tmp_path, f"hydra/launcher={launcher}", "policy=fcfs,easy",
                     "run_time=normal", "replicates=2", "parallel.n_jobs=2")
    assert "Traceback" not in proc.stderr
    done = results(tmp_path)
    assert [r["status"] for r in done] == ["FINISHED", "FINISHED"]
    if launcher == "submitit_local":  # one submitit job (its own process) per configuration
        logs = list((tmp_path / "sweep" / ".submitit").glob("*/*_log.out"))
        assert len(logs) == 2

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    experiments = [e for e in client.search_experiments() if e.name == "drevt-sweep"]
    assert len(experiments) == 1  # created once, before the jobs started
    runs = client.search_runs([experiments[0].experiment_id], max_results=100)
    parents = {r.info.run_id: r for r in runs if r.data.tags.get("drevt_kind") == "configuration"}
    assert sorted(parents) == sorted(r["parent_run_id"] for r in done)
    jobs = tiny_jobs()
    for result in done:
        parent = parents[result["parent_run_id"]]
        assert parent.info.status == "FINISHED"
        assert parent.data.metrics["wait_mean"] == result["metrics"]["wait_mean"]
        kids = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
        assert sorted(int(k.data.params["seed"]) for k in kids) == [0, 1]
        params = parent.data.params
        spec = RunSpec(total_nodes=10, priority=params["policy.priority"],
                       backfill=params["policy.backfill"],
                       run_time=RunTimeModel(mode=params["run_time.mode"],
                                             distribution=params["run_time.distribution"],
                                             scale=float(params["run_time.scale"]),
                                             stddev=float(params["run_time.stddev"]),
                                             min_run_time=float(params["run_time.min_run_time"])))
        for kid in kids:
            expected = run_seed(jobs, spec, int(kid.data.params["seed"])).metrics
            assert kid.data.metrics["wait_mean"] == expected["wait_mean"]
    summary = (tmp_path / "sweep" / "summary.csv").read_text().splitlines()
    assert len(summary) == 3


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """sbatch/srun/sacct/scancel stand-ins on PATH (tests/fake_slurm.py): each task of a job
    array runs as a local process, with SLURM's environment variables."""
    import fake_slurm as fake

    bin_dir, state = tmp_path / "fake-slurm-bin", tmp_path / "fake-slurm"
    bin_dir.mkdir()
    for name in ("sbatch", "srun", "sacct", "scancel"):
        path = bin_dir / name
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake.__file__}" {name} "$@"\n')
        path.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_DIR", str(state))
    monkeypatch.setattr(fake, "STATE", state)
    try:
        yield state
    finally:
        fake.stop_all()


def test_our_slurm_launcher_submits_a_job_array_and_gathers_its_results(tmp_path, fake_slurm):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    proc = run_sweep(tmp_path, "hydra/launcher=slurm", "hydra.launcher.partition=debug",
                     "hydra.launcher.cpus_per_task=2", "hydra.launcher.timeout_min=30",
                     "hydra.launcher.setup=['export DREVT_ON_SLURM=1']",
                     "policy=fcfs,easy", "run_time=normal", "replicates=2", "parallel.n_jobs=1",
                     "parallel.chunk_size=2")
    assert "Traceback" not in proc.stderr
    assert "sqlite locks and corrupts" in proc.stdout + proc.stderr  # warned: use a server
    # One sbatch call: the sweep engine's 4 (configuration, seed) tasks in chunks of 2, one
    # chunk per array task (by default: at least 4 tasks per core, so one task for all 4).
    (script,) = fake_slurm.glob("*.sbatch")
    text = script.read_text()
    for line in ("#SBATCH --array=0-1%2", "#SBATCH --partition=debug", "#SBATCH --cpus-per-task=2",
                 "#SBATCH --time=30", "#SBATCH --mem=16GB", "#SBATCH --job-name=drevt-sweep",
                 "export DREVT_ON_SLURM=1"):
        assert line in text, (line, text)
    done = results(tmp_path)
    assert [r["status"] for r in done] == ["FINISHED", "FINISHED"]
    jobs = tiny_jobs()
    for result in done:
        assert result["seeds"] == [0, 1]
    expected = run_seeds(jobs, RunSpec(total_nodes=10, priority="fcfs", backfill="none",
                                       run_time=RunTimeModel(mode="distribution", scale=0.8,
                                                             stddev=0.2)), [0, 1], n_jobs=1)
    fcfs = next(r for r in done if "policy=fcfs" in r["label"])
    assert fcfs["metrics"]["wait_mean"] == sum(r.metrics["wait_mean"] for r in expected) / 2
    assert len((tmp_path / "sweep" / "summary.csv").read_text().splitlines()) == 3


# ---------------------------------------------------------------- tracking server
def _postgres_or_skip():
    from drevt_sweep.tracking.server import ServerError, find_pg_bin

    pytest.importorskip("psycopg2", reason="psycopg2-binary is in the test extra")
    try:
        return find_pg_bin()
    except ServerError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have PostgreSQL (.ci/run installs it): {exc}")
        pytest.skip(f"no PostgreSQL here ({exc}); .ci/run installs it with apt-get")


@pytest.fixture(scope="module")
def tracking_server():
    """A real PostgreSQL cluster and a real `mlflow server` on it, both on 127.0.0.1."""
    _postgres_or_skip()
    from drevt_sweep.tracking import server

    # Not under pytest's tmp dir: that is private to root, and PostgreSQL runs as 'postgres'.
    root = Path(tempfile.mkdtemp(prefix="drevt-server-test-"))
    root.chmod(0o755)
    state = None
    try:
        state = server.start(root, port=free_port())
        yield state
    finally:
        server.stop(root)
        if state is not None:
            assert server.postgres_port(Path(state.pgdata)) is None, "PostgreSQL still runs"
        shutil.rmtree(root, ignore_errors=True)


def rest(url: str, path: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_a_sweep_against_a_tracking_server_on_postgresql(tmp_path, tracking_server):
    url = tracking_server.url
    proc = run_sweep(tmp_path, f"tracking.uri={url}", "policy=fcfs,easy", "run_time=normal",
                     "replicates=2", "parallel.n_jobs=2")
    assert "Traceback" not in proc.stderr
    done = results(tmp_path)
    assert [r["status"] for r in done] == ["FINISHED", "FINISHED"]
    assert not (tmp_path / "out" / "mlflow.db").exists()  # nothing went to the embedded store

    experiment = rest(url, "/api/2.0/mlflow/experiments/get-by-name?experiment_name=drevt-sweep")
    experiment_id = experiment["experiment"]["experiment_id"]
    runs = rest(url, "/api/2.0/mlflow/runs/search",
                {"experiment_ids": [experiment_id], "max_results": 100})["runs"]

    def tags(run):
        return {t["key"]: t["value"] for t in run["data"].get("tags", [])}

    def metrics(run):
        return {m["key"]: m["value"] for m in run["data"].get("metrics", [])}

    parents = {r["info"]["run_id"]: r for r in runs if tags(r).get("drevt_kind") == "configuration"}
    children = [r for r in runs if tags(r).get("drevt_kind") == "seed"]
    assert sorted(parents) == sorted(r["parent_run_id"] for r in done)
    assert len(children) == 4
    assert all(r["info"]["status"] == "FINISHED" for r in runs)
    for result in done:
        parent = parents[result["parent_run_id"]]
        assert metrics(parent)["wait_mean"] == result["metrics"]["wait_mean"]
        assert metrics(parent)["utilization"] == result["metrics"]["utilization"]
        # Artifacts went through the server into its artifact store.
        listed = rest(url, f"/api/2.0/mlflow/artifacts/list?run_id={result['parent_run_id']}")
        names = {f["path"] for f in listed.get("files", [])}
        assert {"config.yaml", "seed_metrics.csv"} <= names
    stored = list(Path(tracking_server.artifacts).rglob("seed_metrics.csv"))
    assert len(stored) == 2

    # The runs live in PostgreSQL, and both servers listen on the loopback interface only.
    from drevt_sweep.tracking.server import DB_NAME, DB_USER

    count = subprocess.run(
        [str(Path(tracking_server.pg_bin) / "psql"), "-h", "127.0.0.1", "-p", str(tracking_server.pg_port),
         "-U", DB_USER, "-d", DB_NAME, "-tAc", "SELECT count(*) FROM runs"],
        capture_output=True, text=True, env={**os.environ, "PGPASSFILE": str(Path(tracking_server.root) / "pgpass")},
    )
    assert count.returncode == 0, count.stderr
    sweep_runs = [r for r in runs if tags(r).get("drevt_kind") == "sweep"]  # holds report.html
    assert len(sweep_runs) == 1
    assert int(count.stdout) == len(runs) == 2 + 4 + 1
    if shutil.which("ss"):
        listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
        for port in (tracking_server.port, tracking_server.pg_port):
            bound = [line for line in listening.splitlines() if f":{port} " in line]
            assert bound and all("127.0.0.1:" in line for line in bound), bound
