"""What a configuration costs in a big sweep (issue 23 item 2): the shortcuts the engine takes
give what the slow path gave, byte for byte -- the task config and Hydra node moved out of the
job's config rather than copied, ``config.yaml`` from the config resolved once, the Hydra
``overrides.yaml`` from the plain list."""

from __future__ import annotations

import copy

import pytest
from hydra import initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import OmegaConf

from drevt_sweep.sweep import app, batch, grid
from drevt_sweep.sweep.config import register_configs

from sweep_helpers import TINY

BASE = ["trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
        "system=custom", "system.total_nodes=10", "tracking.enabled=false",
        "hydra.sweep.dir=/tmp/drevt-sweep-costs"]  # not the time-stamped default: jobs compared
SWEEPS = [
    ("policy=fcfs,easy", "run_time=actual,lognormal", "run_time.scale=0.5,0.8",
     "system.total_nodes=8,10"),
    ("experiment=machine_size",),
    ("policy=glob(f*)", "seed=range(0,2)", "workload=load", "workload.load_factor=0.5,2",
     "+tracking.note='a: \"quoted\", 1e3, yes'"),
]


@pytest.fixture(scope="module")
def loader():
    register_configs()
    with initialize_config_module(version_base="1.3", config_module="drevt_sweep.conf"):
        yield GlobalHydra.instance().config_loader()


def _jobs(loader, overrides):
    config = loader.load_configuration("config", [*BASE, *overrides], RunMode.MULTIRUN)
    jobs = grid.expand(grid.sweep_arguments(config), loader)
    composer = grid.Composer(loader, config)
    return [composer.job(num, job).config for num, job in enumerate(jobs)]


@pytest.mark.parametrize("overrides", SWEEPS)
def test_the_task_config_and_hydra_node_are_hydras_without_the_copies(loader, overrides):
    for job in _jobs(loader, overrides):
        reference = batch._job_config(copy.deepcopy(job))
        HydraConfig.instance().set_config(reference)
        hydra_theirs = OmegaConf.to_container(HydraConfig.get(), resolve=False)
        task_theirs = grid.task_config(reference)
        task, hydra_ours = batch._task_and_hydra(batch._job_config(job))
        assert OmegaConf.to_container(hydra_ours, resolve=False) == hydra_theirs
        assert HydraConfig.get() is hydra_ours
        assert "hydra" not in task
        assert (OmegaConf.to_yaml(task, resolve=True)
                == OmegaConf.to_yaml(task_theirs, resolve=True))
        assert str(hydra_ours.sweep.dir) == str(HydraConfig.get().sweep.dir)


@pytest.mark.parametrize("overrides", SWEEPS)
def test_config_yaml_from_the_resolved_config_is_omegaconfs_byte_for_byte(loader, overrides):
    app._YAML_PIECES.clear()
    for _ in range(2):  # the second time every section comes from the cache
        for job in _jobs(loader, overrides):
            task = grid.task_config(job)
            plain = app.resolved(task)
            assert app.config_yaml(plain) == OmegaConf.to_yaml(task, resolve=True)
            assert app.result_config(task, plain) == app.result_config(task)


def test_an_unresolvable_config_is_left_to_the_step_that_reads_it():
    cfg = OmegaConf.create({"a": "${oc.env:DREVT_SURELY_UNSET_VARIABLE}"})
    assert app.resolved(cfg) is None


@pytest.mark.parametrize("overrides", [["policy=fcfs", "system.total_nodes=60"], [],
                                       ["+tracking.note='x: y'", "seed=${oc.env:S,0}", "a=é"]])
def test_overrides_yaml_is_what_omegaconf_saves(tmp_path, overrides):
    OmegaConf.save(OmegaConf.create(list(overrides)), tmp_path / "theirs.yaml")
    assert batch._overrides_yaml(overrides) == (tmp_path / "theirs.yaml").read_text(encoding="utf-8")


def test_waves_are_an_eighth_of_the_sweep_within_bounds():
    assert batch.wave_size(1) == batch.WAVE_MIN
    assert batch.wave_size(8) == batch.WAVE_MIN  # the byte-for-byte test's sweep: 2 waves
    assert batch.wave_size(200) == 25
    assert batch.wave_size(10_000) == batch.WAVE
