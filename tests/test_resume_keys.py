"""The resume key (``drevt_sweep/sweep/resume.py``): what decides that a configuration of a
resumed sweep is the one that ran, without composing it. Real Hydra composition of the shipped
configs; the real sweep, resumed, is in ``test_sweep_resume_scale.py``."""

from __future__ import annotations

import pytest
from hydra import initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode

from drevt_sweep.sweep import grid
from drevt_sweep.sweep.batch import FIRST_WAVE, prepared_waves
from drevt_sweep.sweep.config import register_configs
from drevt_sweep.sweep.resume import ResumeKeys

from sweep_helpers import TINY

BASE = ["trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
        "system=custom"]


@pytest.fixture(scope="module")
def loader():
    register_configs()
    with initialize_config_module(version_base="1.3", config_module="drevt_sweep.conf"):
        yield GlobalHydra.instance().config_loader()


def keys_of(loader, *overrides: str) -> ResumeKeys:
    master = loader.load_configuration("config", [*BASE, *overrides], RunMode.MULTIRUN)
    return ResumeKeys(grid.Composer(loader, master))


def test_the_key_is_the_inputs_less_what_only_decides_how_they_run(loader):
    keys = keys_of(loader)
    job = [*BASE, "policy=fcfs", "system.total_nodes=12"]
    key = keys.key(job)
    assert key is not None and len(key) == 64
    assert keys.key(job + ["resume=true", "parallel.n_jobs=1", "progress=false", "figures=none"]) == key
    for changed in (["system.total_nodes=13"], ["seed=1"], ["replicates=2"], ["policy=easy"],
                    ["tracking.log_schedule=false"], ["+policy.foo=1"]):
        assert keys.key([*BASE, "policy=fcfs", "system.total_nodes=12", *changed]) != key, changed
    assert keys.key([*BASE, "policy=fcfs", "system.total_nodes=12", "seed=${oc.env:SEED,0}"]) is None


def test_the_key_follows_the_environment_the_config_resolves(loader, monkeypatch):
    job = [*BASE, "policy=fcfs", "system.total_nodes=12"]
    monkeypatch.setenv("DREVT_ROOT", "/one")  # paths.root: ${oc.env:DREVT_ROOT,...}
    one = keys_of(loader).key(job)
    monkeypatch.setenv("DREVT_ROOT", "/two")
    assert keys_of(loader).key(job) != one
    monkeypatch.setenv("DREVT_ROOT", "/one")
    assert keys_of(loader).key(job) == one


def test_only_a_job_that_resumes_itself_is_skipped(loader):
    keys = keys_of(loader, "resume=true")
    job = [*BASE, "policy=fcfs"]
    assert keys.resume_wanted(job + ["resume=true"])
    assert not keys.resume_wanted(job + ["resume=false"])
    assert not keys.resume_wanted(job + ["resume=true", "resume=false"])
    assert not keys.resume_wanted(job)  # the config's own: resume: false


def test_waves_leave_out_the_configurations_done_and_do_not_count_them():
    assert [len(w) for w in prepared_waves(100, 256)] == [FIRST_WAVE, 2 * FIRST_WAVE, 4]
    done = set(range(0, 100, 2)) | set(range(100, 150))
    waves = list(prepared_waves(200, 256, lambda n: n in done))
    assert [len(w) for w in waves] == [FIRST_WAVE, 2 * FIRST_WAVE, 4]  # 100 left: 32, 64, 4
    assert waves[0] == list(range(1, 2 * FIRST_WAVE, 2))  # the first 32 odd ones
    assert sorted(n for w in waves for n in w) == sorted(set(range(200)) - done)
    assert list(prepared_waves(10, 256, lambda n: True)) == []
