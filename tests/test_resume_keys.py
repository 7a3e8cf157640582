"""The resume key (``drevt_sweep/sweep/resume.py``): what decides that a configuration of a
resumed sweep is the one that ran, without composing it. Real Hydra composition of the shipped
configs; the real sweep, resumed, is in ``test_sweep_resume_scale.py``."""

from __future__ import annotations

import pytest
from hydra import initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode

from drevt_sweep.sweep import grid
from drevt_sweep.sweep.batch import FIRST_WAVE, prepared_waves, waves
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
    for total, largest in ((1, 256), (100, 256), (200, 256), (1000, 256), (5000, 64)):
        assert [(w[0], w[-1] + 1) for w in prepared_waves(total, largest)] == list(
            waves(total, largest))  # nothing done: the engine's waves
    done = set(range(0, 100, 2)) | set(range(100, 150))
    cut = list(prepared_waves(200, 256, lambda n: n in done))
    assert cut[0] == list(range(1, 2 * FIRST_WAVE, 2))  # the first 32 odd ones
    assert sorted(n for w in cut for n in w) == sorted(set(range(200)) - done)
    assert all(len(w) <= 2 * FIRST_WAVE for w in cut)
    assert list(prepared_waves(10, 256, lambda n: True)) == []


def test_a_configuration_is_skipped_only_when_everything_it_records_still_holds(loader, tmp_path):
    """A hand-made job folder, as the engine leaves a FINISHED configuration, and each thing
    that makes it doubtful (``FinishedConfigurations.result`` answers None: prepared as before)."""
    import hashlib
    import json

    from drevt_sweep.sweep.resume import FinishedConfigurations, record
    from drevt_sweep.tracking.store import run_key

    master = loader.load_configuration(
        "config", [*BASE, "resume=true", f"hydra.sweep.dir={tmp_path}"], RunMode.MULTIRUN)
    keys = ResumeKeys(grid.Composer(loader, master))
    job = [*BASE, "policy=fcfs", "system.total_nodes=12", "resume=true"]
    checksum = hashlib.sha256(TINY.read_bytes()).hexdigest()
    folder = tmp_path / "0"
    folder.mkdir()

    def write(**changes) -> None:
        result = {"status": "FINISHED", "seeds": [0], "reused_seeds": [], "failed_seeds": [],
                  "config_hash": "c" * 32, "trace_checksum": checksum, "metrics": {"wait_mean": 1.0}}
        record(result, keys.key([*BASE, "policy=fcfs", "system.total_nodes=12"]), TINY, {})
        result.update(changes)
        (folder / "result.json").write_text(json.dumps(result))

    for name in ("config.yaml", "seed_metrics.csv"):
        (folder / name).write_text("x\n")
    finished = {run_key("c" * 32, checksum, 0): {"wait_mean": 1.0}}
    done = FinishedConfigurations(master, keys, finished)
    write()
    kept = done.result(0, job)
    assert kept is not None and kept["reused_seeds"] == [0] and kept["metrics"] == {"wait_mean": 1.0}

    assert done.result(0, [*BASE, "policy=fcfs", "system.total_nodes=13", "resume=true"]) is None
    assert done.result(0, [*BASE, "policy=fcfs", "system.total_nodes=12", "resume=false"]) is None
    assert done.result(1, job) is None  # no folder
    assert FinishedConfigurations(master, keys, {}).result(0, job) is None  # seed run not in the store
    for changes in ({"status": "FAILED"}, {"status": "KILLED"}, {"trace_checksum": "0" * 64},
                    {"seeds": [0, 1]}, {"seeds": [True]}, {"failed_seeds": [{"seed": 0}]},
                    {"resume": None}, {"resume": {"key": "k", "trace": str(TINY), "files": {}}},
                    {"resume": {"key": keys.key(job), "trace": str(TINY),
                                "files": {str(TINY): "0" * 64}}}):  # a slurm.conf changed since
        write(**changes)
        assert done.result(0, job) is None, changes
    write()
    (folder / "seed_metrics.csv").unlink()  # the report reads it
    assert done.result(0, job) is None
    (folder / "seed_metrics.csv").write_text("x\n")
    (folder / "result.json").write_text("{not json")
    assert done.result(0, job) is None
    (folder / "result.json").write_text("[]")
    assert done.result(0, job) is None
    write()
    assert done.result(0, job) is not None


def test_every_file_a_system_names_is_recorded_for_the_resume_check(tmp_path):
    """slurm.conf, the associations and the QOS export: a changed one must not resume old
    results, and the resumed configuration's hash is the old one, so the file's own sha256 is
    what tells (``FinishedConfigurations.result`` compares it)."""
    from drevt_sweep.sweep.resume import record
    from drevt_sweep.sweep.slurm_system import SYSTEM_FILES

    system = {}
    for name in SYSTEM_FILES:
        system[name] = str(tmp_path / f"{name}.txt")
        system[f"{name}_sha256"] = name * 2
    result = {}
    record(result, "key", TINY, {"system": system})
    assert result["resume"]["files"] == {system[n]: n * 2 for n in SYSTEM_FILES}
    record(result, "key", TINY, {"system": {"slurm_conf": None, "associations": None}})
    assert result["resume"]["files"] == {}
