"""Every config group option composes, and schema errors fail at compose time."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf.errors import MissingMandatoryValue

from drevt_sweep.sweep.config import Backfill, Priority, RunTimeMode, TraceFormat, register_configs
from drevt_sweep.sweep.app import run_spec
from drevt_sweep.sweep.validate import check_config
from drevt_sweep.trace.options import read_options, resolve_trace_path

CONF = Path(__file__).resolve().parents[1] / "conf"


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.fixture(scope="module")
def hydra_compose():
    register_configs()
    with initialize_config_module(version_base="1.3", config_module="drevt_sweep.conf"):
        yield lambda *overrides: compose("config", overrides=list(overrides), return_hydra_config=True)


# What an option needs beside it to compose (a custom machine's size, a custom trace's path).
NEEDS = {("system", "custom"): ["system.total_nodes=64"], ("trace", "custom"): ["trace.path=/tmp/jobs.csv"]}


@pytest.fixture(scope="module")
def shipped(hydra_compose):
    """Each shipped option composed once for the tests below (a composition costs ~70 ms, and
    three tests read the ~60 options)."""
    cache = {}

    def get(group, name):
        if (group, name) not in cache:
            cache[group, name] = hydra_compose(f"{group}={name}", *NEEDS.get((group, name), []))
        return cache[group, name]
    return get


def test_default_config_is_the_bundled_kth_trace_under_easy(hydra_compose):
    cfg = hydra_compose()
    assert cfg.trace.name == "kth_sp2"
    assert cfg.format.name is TraceFormat.swf
    assert cfg.policy.priority is Priority.fcfs and cfg.policy.backfill is Backfill.easy
    path = resolve_trace_path(cfg.trace.path, "/nowhere")
    assert path.is_file() and path.name == "KTH-SP2-1996-2.1-cln.swf.gz"


@pytest.mark.parametrize(
    "group", ["format", "timezone", "run_time", "policy", "system", "trace", "workload", "experiment"]
)
def test_every_option_of_every_group_composes_and_passes_the_checks(shipped, group):
    names = options(group)
    assert names, f"conf/{group} is empty"
    for name in names:
        cfg = shipped(group, name)
        if group != "experiment":
            assert cfg.hydra.runtime.choices[group] == name
            section = cfg[group]
            # timezone=trace leaves the zone to the trace (null)
            assert section.name is not None or (group, name) == ("timezone", "trace")
        if group not in ("trace", "experiment"):  # (a custom trace's path is /tmp/jobs.csv: no file)
            assert check_config(cfg) == [], (group, name)


def test_policy_files_map_to_engine_names(shipped):
    from drevt_sweep.sim import engine

    for name in options("policy"):
        cfg = shipped("policy", name)
        assert cfg.policy.priority.value in engine.PRIORITY_POLICIES
        assert cfg.policy.backfill.value in engine.BACKFILL_POLICIES


def test_run_time_files_build_valid_models(shipped):
    for name in options("run_time"):
        cfg = shipped("run_time", name)
        spec = run_spec(cfg, machine_nodes=100)
        assert spec.run_time.mode == cfg.run_time.mode.value
        assert spec.stochastic == (cfg.run_time.mode is RunTimeMode.distribution)


def test_trace_chooses_its_format_and_the_command_line_still_wins(hydra_compose):
    assert hydra_compose("trace=kabre").format.name is TraceFormat.slurm
    assert hydra_compose("trace=kabre").timezone.name == "America/Costa_Rica"
    assert hydra_compose("trace=kabre", "format=simple").format.name is TraceFormat.simple
    assert hydra_compose("trace=custom", "trace.path=x.csv").format.name is TraceFormat.simple


def test_read_options_follow_the_config(hydra_compose):
    opts = read_options(hydra_compose("format=simple", "timezone=utc", "format.queues=[all]"))
    assert (opts.trace_format, opts.timezone, opts.queues) == ("simple", "UTC", "all")
    assert opts.force_simulation  # a simulated policy re-schedules a replay trace
    assert read_options(hydra_compose("format=lassen")).queues == "default"
    assert not read_options(hydra_compose("policy=replay")).force_simulation
    assert read_options(hydra_compose("format.queues=[pbatch,pdebug]")).queues == ("pbatch", "pdebug")


def test_total_nodes_default_to_the_trace_then_lassen(hydra_compose):
    assert run_spec(hydra_compose(), machine_nodes=100).total_nodes == 100
    assert run_spec(hydra_compose(), machine_nodes=None).total_nodes == 795
    assert run_spec(hydra_compose("system=custom", "system.total_nodes=64"), 100).total_nodes == 64


@pytest.mark.parametrize(
    "override",
    [
        "policy.backfill=sometimes",  # not an option of the Enum
        "policy.estimate_refresh=sometimes",
        "run_time.mode=guess",
        "format.timestamp_format=julian",
        "replicates=many",  # wrong type
        "run_time.scale=fast",
        "system.total_nodes=lots",
        "nonexistent_key=1",  # unknown key
        "policy.color=blue",
    ],
)
def test_schema_errors_fail_at_compose_time(hydra_compose, override):
    with pytest.raises(ConfigCompositionException):
        hydra_compose(override)


@pytest.mark.parametrize("override", ["policy=lottery", "run_time=oracle", "format=excel", "timezone=mars"])
def test_unknown_group_options_fail_at_compose_time(hydra_compose, override):
    with pytest.raises(MissingConfigException):
        hydra_compose(override)


def test_mandatory_values_are_reported(hydra_compose):
    cfg = hydra_compose("trace=custom")
    with pytest.raises(MissingMandatoryValue):
        _ = cfg.trace.path


def test_experiments_sweep_what_they_say(hydra_compose):
    params = hydra_compose("experiment=policy_comparison").hydra.sweeper.params
    assert set(params["policy"].split(",")) == {"fcfs", "easy", "conservative"}
    params = hydra_compose("experiment=estimate_accuracy").hydra.sweeper.params
    assert len(params["run_time.scale"].split(",")) >= 3
    params = hydra_compose("experiment=machine_size").hydra.sweeper.params
    assert len(params["system.total_nodes"].split(",")) >= 3


def test_workload_settings_reach_the_run_spec(hydra_compose):
    from drevt_sweep.sweep.workload_config import workload_spec

    cfg = hydra_compose("workload=load", "workload.load_factor=1.2")
    spec = run_spec(cfg, 100, workload_spec(cfg.workload, cfg.system.total_nodes))
    assert spec.workload.load_factor == 1.2 and not spec.stochastic
    cfg = hydra_compose("workload=shaking", "run_time=actual")
    spec = run_spec(cfg, 100, workload_spec(cfg.workload, cfg.system.total_nodes))
    assert spec.stochastic  # shaking makes seeds differ even with deterministic run times
    with pytest.raises(ConfigCompositionException):
        hydra_compose("workload.load_fctor=1.2")


def test_every_preset_has_its_own_mlflow_experiment(hydra_compose):
    for name in options("experiment"):
        assert hydra_compose(f"experiment={name}").tracking.experiment == f"drevt-sweep/{name}"
    assert hydra_compose("experiment=machine_size", "tracking.experiment=mine").tracking.experiment == "mine"


def test_estimate_refresh_reaches_the_run_spec(hydra_compose):
    # EASY++ predicts at submission unless told to refresh before every pass (as pyss).
    assert run_spec(hydra_compose("policy=easyplusplus"), 100).estimate_refresh == "submit"
    spec = run_spec(hydra_compose("policy=easyplusplus", "policy.estimate_refresh=every_pass"), 100)
    assert (spec.estimate, spec.backfill_order, spec.estimate_refresh) == ("user_history", "sjbf", "every_pass")
