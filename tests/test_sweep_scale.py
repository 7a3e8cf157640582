"""Sweeps at scale (issue 23): the grid composed once per choice of groups gives Hydra's own
configs; the task-list engine gives the per-configuration (Hydra job) path's results byte for
byte, whatever the chunk size or back-end; malformed sweeps and odd n_jobs say one line."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict

from drevt_sweep.errors import ConfigError
from drevt_sweep.sweep import grid
from drevt_sweep.sweep.figure_choice import FIGURES_AUTO_MAX, figures_wanted
from drevt_sweep.sweep.config import register_configs
from drevt_sweep.sweep.sweep_checks import check_sweep, check_sweep_job_by_job
from drevt_sweep.tracking.store import shortened

from sweep_helpers import TINY, run_sweep

BASE = ["trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
        "system=custom", "system.total_nodes=10", "tracking.enabled=false"]


@pytest.fixture(scope="module")
def loader():
    register_configs()
    with initialize_config_module(version_base="1.3", config_module="drevt_sweep.conf"):
        yield GlobalHydra.instance().config_loader()


def master(loader, *overrides):
    return loader.load_configuration("config", [*BASE, *overrides], RunMode.MULTIRUN)


@pytest.mark.parametrize("overrides", [
    ("policy=fcfs,easy", "run_time=actual,lognormal", "run_time.scale=0.5,0.8",
     "system.total_nodes=8,10"),
    ("experiment=machine_size",),  # a preset's hydra.sweeper.params
    ("policy=glob(f*)", "seed=range(0,2)", "workload=load", "workload.load_factor=0.5,2"),
])
def test_each_job_is_the_config_hydra_composes(loader, overrides):
    config = master(loader, *overrides)
    jobs = grid.expand(grid.sweep_arguments(config), loader)
    assert len(jobs) > 1
    composer = grid.Composer(loader, config)
    for num, job in enumerate(jobs):
        ours = composer.job(num, job).config
        theirs = loader.load_sweep_config(config, list(job))
        with open_dict(theirs):
            theirs.hydra.job.id = theirs.hydra.job.num = num
        assert OmegaConf.to_container(ours) == OmegaConf.to_container(theirs), job
        assert (OmegaConf.to_yaml(grid.task_config(ours), resolve=True)
                == OmegaConf.to_yaml(grid.task_config(theirs), resolve=True))
    # Hydra composed once per distinct choice of config groups, not once per job.
    groups = {tuple(o for o in job if o.split("=")[0] in ("policy", "run_time", "workload",
                                                        "system", "trace", "format", "experiment"))
              for job in jobs}
    assert composer.composed == len(groups) <= len(jobs)


def test_the_engine_gets_what_hydras_run_job_gives_a_task(loader):
    """``Composer.run_job`` (the task config and HydraConfig, two copies fewer) against
    Hydra's own: its composition, ``HydraConfig.set_config`` and the task's deep copy."""
    import os

    from hydra.core.hydra_config import HydraConfig

    config = master(loader, "policy=fcfs,easy", "run_time=actual,lognormal", "+foo=1,2",
                    "workload.load_factor=0.5,2")
    str(config.hydra.sweep.dir), str(config.hydra.run.dir)  # (timestamps: named once)
    jobs = grid.expand(grid.sweep_arguments(config), loader)
    composer = grid.Composer(loader, config)
    for num, job in enumerate(jobs):
        task, hydra_cfg = composer.run_job(num, job)
        assert hydra_cfg is HydraConfig.get()
        ours = (OmegaConf.to_yaml(task, resolve=True), OmegaConf.to_yaml(hydra_cfg, resolve=True),
                OmegaConf.get_type(task), task._metadata.flags)
        theirs = loader.load_sweep_config(config, list(job))
        with open_dict(theirs):
            theirs.hydra.job.id = theirs.hydra.job.num = num
            theirs.hydra.runtime.output_dir = os.path.abspath(
                os.path.join(theirs.hydra.sweep.dir, theirs.hydra.sweep.subdir))
        HydraConfig.instance().set_config(theirs)
        their_task = grid.task_config(theirs)
        assert ours == (OmegaConf.to_yaml(their_task, resolve=True),
                        OmegaConf.to_yaml(HydraConfig.get(), resolve=True),
                        OmegaConf.get_type(their_task), their_task._metadata.flags), job


def test_a_swept_key_the_sweep_folder_reads_names_each_jobs_folder(loader):
    """The sweep folder is resolved once for the jobs that cannot change it
    (``Composer._job_folder``); here each job's ``paths.output_root`` names it."""
    config = master(loader, "paths.output_root=/tmp/drevt-a,/tmp/drevt-b", "policy=fcfs,easy")
    jobs = grid.expand(grid.sweep_arguments(config), loader)
    composer = grid.Composer(loader, config)
    folders = [composer.run_job(num, job)[1].runtime.output_dir for num, job in enumerate(jobs)]
    roots = [next(o for o in job if o.startswith("paths.output_root=")).split("=")[1] for job in jobs]
    assert len(set(roots)) == 2
    assert all(folder.startswith(root + "/multirun/") and folder.endswith(f"/{num}")
               for num, (folder, root) in enumerate(zip(folders, roots)))


@pytest.mark.parametrize("overrides", [
    ("policy=fcfs,easy", "run_time=actual,lognormal", "run_time.scale=0.5,0.8", "+foo=1,2"),
    # an interpolation reading a swept key (paths.cache_dir: ${paths.output_root}/cache), a
    # dict merged into a node, a value that is itself an interpolation
    ("paths.output_root=/tmp/a,/tmp/b", "policy.weights={age:5},{age:7}",
     "workload.load_factor=0.5,${system.total_nodes}"),
    ("+extra.deep=1,2", "system.total_nodes=8,9"),  # (a new key under a new one: falls back)
    ("replicates=${oc.env:DREVT_TEST_UNSET_VARIABLE},1",),  # does not resolve: None
])
def test_the_resolved_config_is_the_whole_config_resolved(loader, overrides):
    """``Composer.resolved`` (the groups' template and what differs) against
    ``grid.resolve_config`` (the whole tree resolved), key order included: ``config.yaml`` and the
    configuration's settings are written from it."""
    from drevt_sweep.sweep.app import resolved

    config = master(loader, "policy=multifactor_easy", *overrides) if "policy.weights" in str(overrides) \
        else master(loader, *overrides)
    str(config.hydra.sweep.dir), str(config.hydra.run.dir)  # (timestamps: named once)
    jobs = grid.expand(grid.sweep_arguments(config), loader)
    composer = grid.Composer(loader, config)
    for num, job in enumerate(jobs):
        task, _ = composer.run_job(num, job)
        ours, theirs = composer.resolved(job, task), resolved(task)
        assert repr(ours) == repr(theirs), job
    assert ("None" in repr(ours)) if "UNSET" in str(overrides) else ours is not None


@pytest.mark.slow
def test_a_few_hundred_jobs_are_the_configs_hydra_composes(loader):
    config = master(loader, "policy=fcfs,easy", "run_time=actual,lognormal",
                    "system.total_nodes=range(1,51)", "workload.load_factor=0.5,1")
    jobs = grid.expand(grid.sweep_arguments(config), loader)
    assert len(jobs) == 400
    composer = grid.Composer(loader, config)
    ours = {num: composer.job(num, job).config for num, job in enumerate(jobs)}  # every job, in order
    # Hydra's own composition (~0.3 s a job) for every 7th job and the last: each choice of
    # groups, node counts across the range, both load factors, the last job's integer template.
    for num in [*range(0, len(jobs), 7), len(jobs) - 1]:
        job = jobs[num]
        theirs = loader.load_sweep_config(config, list(job))
        with open_dict(theirs):
            theirs.hydra.job.id = theirs.hydra.job.num = num
        assert OmegaConf.to_container(ours[num]) == OmegaConf.to_container(theirs), job
    assert composer.composed == 4


@pytest.mark.parametrize("override, named", [
    ("seed=range(1,3),0", "a range() cannot be one item of a list"),
    ("seed=range(0,3),range(5,6)", "a range() cannot be one item of a list"),
    ("workload.load_factor=interval(0,1)", "interval() is for search sweepers"),
    ("seed=range(0)", "the sweep has no configuration"),
])
def test_a_malformed_sweep_is_one_line_naming_it(loader, override, named):
    with pytest.raises(ConfigError) as caught:
        grid.expand(grid.sweep_arguments(master(loader, override)), loader)
    message = str(caught.value)
    assert message.startswith(override + ":") and named in message and "\n" not in message


@pytest.mark.parametrize("override, key", [
    ("replicates=${oc.env:DREVT_TEST_UNSET_VARIABLE}", "replicates"),
    ("seed=${now:}", "seed"),  # Hydra's resolver wants a format
])
def test_a_value_that_cannot_be_resolved_is_one_problem(loader, override, key):
    problems = check_sweep(master(loader, override, "policy=fcfs,easy"))
    assert len(problems) == 1 and problems[0].startswith(key + ":") and "\n" not in problems[0]


def test_a_sweep_of_hundreds_of_configurations_is_checked_in_one_pass(loader):
    config = master(loader, "policy=fcfs,easy", "system.total_nodes=range(1,101)")
    assert check_sweep(config) == []
    bad = master(loader, "policy=fcfs,easy", "system.total_nodes=range(0,100)")
    assert check_sweep(bad) == ["system.total_nodes=0: must be >= 1"]


ODD_SWEEPS = [
    ("policy=fcfs,easy", "run_time=actual,lognormal", "run_time.scale=0,0.5", "system.total_nodes=0,8"),
    ("+polcy=sjf,fcfs", "seed=range(0,3)"),  # a misspelt +key, swept: named with each value
    ("+foo=1,2", "+bar.baz=x", "policy=easy,fcfs"),  # unknown keys in the order Hydra adds them
    ("workload=load", "workload.load_factor=0,2", "workload.window_start=10,2000",
     "workload.window_end=1000"),  # gated rules: the window's only when the values are sound
    ("system.total_nodes=5,abc,7", "seed=0,1"),  # Hydra refuses a value: its first job's line
    ("policy=fcfs,nope", "seed=1,2"),  # a group option that does not exist
    ("seed=-1,0,1", "replicates=0,1", "figures=auto,bad", "tracking.experiment=x,' '"),
    ("trace.path=tests/data/traces/sweep_tiny.csv", "paths.root=.,/tmp"),  # through interpolations
    ("resume=true,false", "tracking.enabled=true,false"),
    ("timezone.name=UTC,Mars/Base", "policy=glob(s*)"),  # (six of the policies: ~70 ms a job here)
    ("format.queues=[all],[]", "++system.total_nodes=3,0"),
    ("replicates=${oc.env:DREVT_TEST_UNSET_VARIABLE}", "policy=fcfs,easy"),  # unresolvable
    ("system.total_nodes=${seed},4", "seed=0,1"),  # a swept interpolation: job by job
    ("workload={load_factor:2},{load_factor:0}", "seed=0,1"),  # a swept dict: job by job
    ("policy=fcfs,easy", "+policy.foo=1,2", "policy.weights.age=1,-1"),
    ("trace=kth_sp2,lanl_cm5", "system.total_nodes=0,5"),
    ("experiment=machine_size",),
]


@pytest.mark.parametrize("overrides", ODD_SWEEPS)
def test_the_one_pass_check_says_what_checking_every_job_says(loader, overrides):
    config = master(loader, *overrides)
    assert check_sweep(config) == check_sweep_job_by_job(config)


@pytest.mark.slow  # (the reference composes and checks every job: ~15 ms each)
@pytest.mark.parametrize("overrides", [
    ("policy=fcfs,easy,conservative", "system.total_nodes=range(-20,80)"),  # 300 configurations
    ("policy=fcfs,easy", "run_time=actual,lognormal", "run_time.scale=0,0.5,1",
     "workload=load", "workload.load_factor=0,0.5,1,2", "system.total_nodes=range(0,6)"),  # 288
    ("+polcy=sjf", "system.total_nodes=range(1,301)"),  # a misspelt +key: one line
])
def test_the_one_pass_check_of_hundreds_of_configurations_is_the_job_by_job_one(loader, overrides):
    config = master(loader, *overrides)
    problems = check_sweep(config)
    assert problems == check_sweep_job_by_job(config)
    assert problems and all("\n" not in p for p in problems)


def test_figures_are_drawn_for_small_sweeps_only_unless_asked():
    assert figures_wanted("auto", FIGURES_AUTO_MAX) and not figures_wanted("auto", FIGURES_AUTO_MAX + 1)
    assert figures_wanted("per_configuration", 10_000) and not figures_wanted("none", 1)


def test_values_over_mlflows_limits_are_cut_with_a_marker():
    queues = ",".join(f"queue{i}" for i in range(1200))  # issue 29's 1,200-queue list
    cut = shortened(queues, 6000)
    assert len(cut) == 6000 and cut.startswith(queues[:5000]) and "cut: " in cut
    assert shortened("fcfs", 6000) == "fcfs"


def test_a_trace_name_mlflow_refuses_stops_the_sweep_before_it_runs(loader):
    problems = check_sweep(master(loader, "tracking.enabled=true", "trace.name=" + "x" * 501))
    assert any(p.startswith("trace.name=") and "500" in p for p in problems)


def test_n_jobs_that_leaves_no_core_runs_one_worker_and_says_so(caplog):
    from drevt_sweep.sweep.backends import local_workers

    with caplog.at_level(logging.WARNING, logger="drevt_sweep"):
        assert local_workers(-100) == 1
    assert "parallel.n_jobs=-100 leaves no core" in caplog.text
    assert local_workers(-1) >= 1 and local_workers(3) == 3


# ---------------------------------------------------------------- real multiruns
def _store(root: Path):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'out' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("drevt-sweep")
    runs = client.search_runs([experiment.experiment_id], max_results=5000)
    return {r.info.run_id: r for r in runs}


def _tracked(root: Path) -> dict:
    """Every configuration and seed run's metrics, params and status, by label (and seed)."""
    runs = _store(root)
    out = {}
    for run in runs.values():
        kind = run.data.tags.get("drevt_kind")
        params = {k: v for k, v in run.data.params.items() if k != "paths.root"}
        if kind == "seed":
            parent = runs[run.data.tags["mlflow.parentRunId"]]
            out[(parent.data.tags["drevt_label"], run.data.params["seed"])] = (
                run.data.metrics, params, run.info.status)
        elif kind == "configuration":
            out[run.data.tags["drevt_label"]] = (run.data.metrics, params, run.info.status)
    return out


MIXED = ("policy=fcfs,easy", "run_time=actual,lognormal", "system.total_nodes=8,10",
         "replicates=3", "tracking.enabled=true")


@pytest.mark.slow
def test_the_engine_gives_the_hydra_job_paths_results_byte_for_byte(tmp_path):
    # The reference: Hydra's own sweeper and launcher, one Hydra job per configuration.
    run_sweep(tmp_path / "jobs", *MIXED, "hydra/sweeper=basic")
    # Each setting that could change a result, on a back-end that runs chunks in parallel (with
    # n_jobs=1 the seeds run in this process, unchunked); one sweep fewer than one per setting.
    variants = {"chunk1_threads": ("parallel.chunk_size=1", "parallel.backend=threading"),
                "chunk5": ("parallel.chunk_size=5",), "serial": ("parallel.n_jobs=1",)}
    reference = _tracked(tmp_path / "jobs")
    assert len(reference) == 8 + 8 * 2  # 8 configurations; the 4 stochastic ones x 3 seeds
    for name, extra in variants.items():
        run_sweep(tmp_path / name, *MIXED, *extra)
        for job in range(8):
            for file in ("seed_metrics.csv",):
                assert ((tmp_path / name / "sweep" / str(job) / file).read_bytes()
                        == (tmp_path / "jobs" / "sweep" / str(job) / file).read_bytes()), (name, job)
        assert ((tmp_path / name / "sweep" / "summary.csv").read_bytes()
                == (tmp_path / "jobs" / "sweep" / "summary.csv").read_bytes()), name
        assert _tracked(tmp_path / name) == reference, name


@pytest.mark.slow
def test_runs_nest_sweep_configuration_seed_and_the_sweep_run_names_the_best(tmp_path):
    run_sweep(tmp_path, "policy=fcfs,easy", "run_time=actual", "tracking.enabled=true")
    runs = _store(tmp_path)
    sweeps = [r for r in runs.values() if r.data.tags.get("drevt_kind") == "sweep"]
    assert len(sweeps) == 1 and sweeps[0].info.status == "FINISHED"
    sweep = sweeps[0]
    assert sweep.info.run_name == f"sweep {(tmp_path / 'sweep').name}"
    configurations = [r for r in runs.values() if r.data.tags.get("drevt_kind") == "configuration"]
    assert {r.data.tags["mlflow.parentRunId"] for r in configurations} == {sweep.info.run_id}
    for seed in (r for r in runs.values() if r.data.tags.get("drevt_kind") == "seed"):
        assert runs[seed.data.tags["mlflow.parentRunId"]].data.tags["drevt_kind"] == "configuration"
    best = min(configurations, key=lambda r: r.data.metrics["wait_mean"])
    assert sweep.data.metrics["best_wait_mean"] == best.data.metrics["wait_mean"]
    assert sweep.data.tags["drevt_best_wait_mean"] == best.info.run_name
    assert best.info.run_id in sweep.data.tags["mlflow.note.content"]
    assert sweep.data.metrics["configurations"] == 2
    # Each configuration's files are its artifacts, copied beside the bulk-written run.
    client_root = Path(best.info.artifact_uri.replace("file://", ""))
    assert (client_root / "config.yaml").is_file() and (client_root / "seed_metrics.csv").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("override", ["seed=range(1,3),0", "workload.load_factor=interval(0,1)",
                                      "seed=${now:}", "replicates=${oc.env:UNSET}", "seed=range(0)"])
def test_a_malformed_sweep_exits_2_with_one_line_and_no_traceback(tmp_path, override):
    proc = run_sweep(tmp_path, override, "tracking.enabled=false", check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("drevt-sweep: error: "), proc.stderr
    assert not (tmp_path / "sweep").exists() or not list((tmp_path / "sweep").glob("*/result.json"))


@pytest.mark.slow
@pytest.mark.parametrize("overrides, fragments", [
    (("+polcy=sjf", "system.total_nodes=range(1,301)"),
     ("drevt-sweep: error: +polcy=sjf: unknown key 'polcy' (the schema has no such setting; "
      "did you mean policy?)",)),
    (("policy=fcfs,easy", "system.total_nodes=range(0,150)"),
     ("drevt-sweep: error: system.total_nodes=0: must be >= 1",)),
    # Hydra refuses a value of the 301st job: that job's overrides, Hydra's words, one line.
    (("system.total_nodes=4,x", "policy=fcfs,easy", "seed=range(0,150)"),
     ("drevt-sweep: error: ", " system.total_nodes=x ", " policy=fcfs seed=0 ",
      ": Error merging override system.total_nodes=x")),
])
def test_a_bad_value_among_hundreds_of_configurations_exits_2_with_one_line(tmp_path, overrides,
                                                                           fragments):
    proc = run_sweep(tmp_path, *overrides, "tracking.enabled=false", check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [text for text in proc.stderr.splitlines() if text.strip()]
    assert len(lines) == 1 and lines[0].startswith(fragments[0]), proc.stderr
    assert all(fragment in lines[0] for fragment in fragments), proc.stderr
    assert not (tmp_path / "sweep").exists() or not list((tmp_path / "sweep").glob("*/result.json"))


@pytest.mark.slow
def test_n_jobs_of_one_worker_ends_the_sweep_cleanly(tmp_path):
    proc = run_sweep(tmp_path, "run_time=lognormal", "replicates=3", "parallel.n_jobs=-100",
                     "tracking.enabled=false")
    assert "Exception ignored" not in proc.stderr and "AttributeError" not in proc.stderr
    assert "parallel.n_jobs=-100 leaves no core" in proc.stderr + proc.stdout


@pytest.mark.parametrize("extra, shared", [
    # the hydra node reads task keys (hydra.sweep.dir: ${paths.output_root}) through the
    # job's root: the task's own sections
    (("system.total_nodes=8,10", "paths.output_root=/tmp/a"), True),
    # a Hydra override's value reads the job's swept keys (each job its own folder; the engine
    # once resolved it against the multirun's config: every job in one folder)
    (("hydra.sweep.subdir=${policy.name}_${system.total_nodes}", "system.total_nodes=8,10"), True),
    # a task value reads the hydra node: the task is a copy of its own, as Hydra's is
    (("+note=${hydra:job.num}_${hydra:runtime.output_dir}", "system.total_nodes=8,10"), False),
])
def test_the_task_and_hydra_config_are_hydras_when_they_read_each_other(loader, extra, shared):
    """``Composer.run_job`` takes the task out of the job's one copy unless a task value names
    ``hydra``; either way the task and ``HydraConfig`` resolve as Hydra's own do."""
    import os

    from hydra.core.hydra_config import HydraConfig

    config = master(loader, "policy=fcfs,easy", *extra)
    str(config.hydra.sweep.dir), str(config.hydra.run.dir)  # (timestamps: named once)
    jobs = grid.expand(grid.sweep_arguments(config), loader)
    composer = grid.Composer(loader, config)
    for num, job in enumerate(jobs):
        task, hydra_cfg = composer.run_job(num, job)
        ours = (OmegaConf.to_yaml(task, resolve=True), OmegaConf.to_yaml(hydra_cfg, resolve=True))
        assert (hydra_cfg._get_parent()._get_node("policy") is task._get_node("policy")) is shared
        theirs = loader.load_sweep_config(config, list(job))
        with open_dict(theirs):
            theirs.hydra.job.id = theirs.hydra.job.num = num
            theirs.hydra.runtime.output_dir = os.path.abspath(
                os.path.join(theirs.hydra.sweep.dir, theirs.hydra.sweep.subdir))
        HydraConfig.instance().set_config(theirs)
        their_task = grid.task_config(theirs)
        assert ours == (OmegaConf.to_yaml(their_task, resolve=True),
                        OmegaConf.to_yaml(HydraConfig.get(), resolve=True)), job
        folder = (f"{task.policy.name}_{task.system.total_nodes}" if "subdir" in extra[0]
                  else str(num))
        assert hydra_cfg.runtime.output_dir.endswith("/" + folder)
