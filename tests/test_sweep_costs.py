"""What a configuration costs in a big sweep (issue 23 item 2): the shortcuts the engine takes
give what the slow path gave, byte for byte -- ``config.yaml`` from the config resolved once,
the Hydra ``overrides.yaml`` from the plain list -- and waves in flight together (one running
while the next is prepared) give each configuration its own results."""

from __future__ import annotations

import copy
import csv

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import yaml
from hydra import initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf

from drevt_sweep.sweep import app, batch, grid
from drevt_sweep.sweep.config import register_configs

from sweep_helpers import TINY, run_sweep

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


@pytest.mark.slow
@pytest.mark.parametrize("total", [1, 31, 32, 33, 40, 200, 1000, 10_000])
@pytest.mark.parametrize("largest", [256, 1024])
def test_waves_cover_the_sweep_start_small_and_end_small(total, largest):
    """Contiguous, every configuration once; the first wave FIRST_WAVE (or all), none over
    ``largest``; near the end each wave at most half of what is left (or FIRST_WAVE)."""
    from drevt_sweep.sweep.batch import FIRST_WAVE, waves

    spans = list(waves(total, largest))
    assert spans[0][0] == 0 and spans[-1][1] == total
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    sizes = [stop - start for start, stop in spans]
    assert sizes[0] == min(FIRST_WAVE, total) and max(sizes) <= largest
    for (start, stop), size in zip(spans, sizes):
        assert size <= max(FIRST_WAVE, -(-(total - start) // 2))
    assert sizes[-1] <= FIRST_WAVE


@pytest.mark.slow
def test_waves_in_flight_give_each_configuration_its_own_results(tmp_path):
    """40 configurations: two waves (32, then 8), the first running while the second is
    prepared; each configuration's metrics are the Python API's for its policy and size."""
    from drevt_sweep.api import simulate_trace

    run_sweep(tmp_path, "policy=fcfs,easy", "system.total_nodes=range(6,26)",
              "tracking.enabled=false", "figures=none")
    backfill = {"fcfs": "none", "easy": "easy"}
    folders = [p for p in (tmp_path / "sweep").iterdir() if p.name.isdigit()]
    assert len(folders) == 40
    for folder in folders:
        overrides = dict(line.split("=", 1) for line in
                         yaml.safe_load((folder / ".hydra" / "overrides.yaml").read_text()))
        sim = simulate_trace(TINY, trace_format="simple", priority="fcfs",
                             backfill=backfill[overrides["policy"]],
                             total_nodes=int(overrides["system.total_nodes"]), cache=False)
        with open(folder / "seed_metrics.csv", newline="") as handle:
            row = next(csv.DictReader(handle))
        for metric in ("wait_mean", "bsld_mean", "utilization", "jobs_rejected", "makespan"):
            assert float(row[metric]) == float(sim.metrics[metric]), (folder.name, metric)


@pytest.mark.slow
def test_the_sweeps_own_report_reads_from_its_folder_what_mlflow_holds(tmp_path):
    """The report built at the end of a sweep (``from_folder``) has the records the MLflow
    store gives: labels, status, metrics, seeds and their metrics, params, run ids, version."""
    from pathlib import Path

    from drevt_sweep.report import html

    run_sweep(tmp_path, "policy=fcfs,easy", "run_time=actual,lognormal", "replicates=3",
              "tracking.enabled=true", "figures=none")
    sweep = tmp_path / "sweep"
    folder, _ = html.load_folder(sweep)
    uri = f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}"
    stored = html.load_mlflow(sweep, uri, folder, Path(tmp_path / "scratch"))
    assert len(folder) == len(stored) == 4
    for ours, theirs in zip(folder, stored):
        assert (ours.label, ours.status, ours.run_id, ours.version) == (
            theirs.label, theirs.status, theirs.run_id, theirs.version)
        assert ours.metrics == pytest.approx(theirs.metrics, rel=0, abs=0)
        assert ours.seeds == theirs.seeds and ours.params == theirs.params
        assert ours.seed_metrics.equals(theirs.seed_metrics)
    page = html.build_report(sweep, uri, from_folder=True).read_text()
    assert "the sweep folder" in page and uri in page


OVERRIDE = st.one_of(
    st.sampled_from(["policy=fcfs", "system.total_nodes=60", "seed=${oc.env:S,0}", "+a='x: y'",
                     "b=true", "c=1.0", "d=null", "e=", "~f", "g=[1,2]", "h={a: 1}", "i=#x"]),
    st.text(max_size=120),  # anything: quotes, colons, newlines, long lines that wrap
)


@settings(max_examples=300, deadline=None)
@given(st.lists(OVERRIDE, max_size=6))
def test_overrides_yaml_line_by_line_is_the_whole_lists_dump(overrides):
    """``_overrides_yaml`` joins one dump per override; it is the whole list's dump."""
    import yaml
    from omegaconf._utils import get_omega_conf_dumper

    whole = yaml.dump(list(overrides), default_flow_style=False, allow_unicode=True,
                      sort_keys=False, Dumper=get_omega_conf_dumper())
    assert batch._overrides_yaml(overrides) == whole
    assert batch._overrides_yaml(overrides) == whole  # the second time from the cache


def test_cached_interpolation_parses_resolve_as_omegaconf_does(monkeypatch):
    """``interpolations.cache_parses``: the same values, nested and repeated, and a string that
    does not parse fails the same way every time (its error is not cached away)."""
    import omegaconf.base
    from omegaconf import grammar_parser
    from omegaconf.errors import GrammarParseError, InterpolationKeyError

    from drevt_sweep.sweep.interpolations import cache_parses

    monkeypatch.setenv("DREVT_PARSE_CACHE_TEST", "/env")
    cfg = OmegaConf.create({"root": "${oc.env:DREVT_PARSE_CACHE_TEST,${oc.env:HOME}}",
                            "out": "${root}/outputs", "cache": "${out}/cache", "n": 3,
                            "twice": "${n}-${n}", "list": ["${n}", "${out}"], "gone": "${nokey}"})
    good = {k: cfg[k] for k in ("root", "out", "cache", "twice")}
    good["list"] = OmegaConf.to_container(cfg.list, resolve=True)
    monkeypatch.setattr(omegaconf.base, "parse", grammar_parser.parse)
    cache_parses()
    assert omegaconf.base.parse is not grammar_parser.parse
    for _ in range(2):  # the second time from the cache
        assert {k: cfg[k] for k in ("root", "out", "cache", "twice")} == {
            k: v for k, v in good.items() if k != "list"}
        assert OmegaConf.to_container(cfg.list, resolve=True) == good["list"] == [3, "/env/outputs"]
        with pytest.raises(GrammarParseError):
            omegaconf.base.parse("${oops")
        with pytest.raises(InterpolationKeyError):
            cfg.gone
    monkeypatch.setenv("DREVT_PARSE_CACHE_TEST", "/other")  # a tree, not a value, is kept
    assert cfg.cache == "/other/outputs/cache"


@pytest.mark.parametrize("overrides", SWEEPS)
def test_a_released_configuration_reads_what_its_completion_reads_and_holds_no_tree(loader, overrides):
    """``app.release_config``: after preparation the engine's configuration keeps no OmegaConf
    node (its trees die young instead of waiting for a full collection, ``plain_view.py``),
    and what completion reads of them reads the same from the plain view."""
    import gc

    from omegaconf import Container

    from drevt_sweep.sweep.plain_view import PlainView

    config = loader.load_configuration("config", [*BASE, *overrides], RunMode.MULTIRUN)
    composer = grid.Composer(loader, config)
    for num, job in enumerate(grid.expand(grid.sweep_arguments(config), loader)):
        task, hydra_cfg = composer.run_job(num, job)
        run = app.Configuration(task, hydra_cfg, None, "label", "name", {}, {}, 0.0, 0.0,
                                figures=False, plain=composer.resolved(job, task))
        before = {"seed": int(task.seed), "trace": app._trace_name(task, "x.csv"),
                  "overrides": list(hydra_cfg.overrides.task), "choices": dict(hydra_cfg.runtime.choices),
                  "tags": app._run_tags(task, hydra_cfg, "label", "text")}
        app.release_config(run)
        assert isinstance(run.cfg, PlainView) and isinstance(run.hydra_cfg, PlainView)
        after = {"seed": int(run.cfg.seed), "trace": app._trace_name(run.cfg, "x.csv"),
                 "overrides": list(run.hydra_cfg.overrides.task),
                 "choices": dict(run.hydra_cfg.runtime.choices),
                 "tags": app._run_tags(run.cfg, run.hydra_cfg, "label", "text")}
        assert after == before
        assert not any(isinstance(o, Container) for o in gc.get_referents(*vars(run).values())), num
        with pytest.raises(AttributeError):
            run.cfg.no_such_key
        with pytest.raises(AttributeError):
            run.cfg.seed = 3  # read-only


def test_configurations_with_their_own_figures_keep_their_config(loader):
    """Per-configuration figures read the whole config at completion: not released."""
    config = loader.load_configuration("config", [*BASE, "policy=fcfs"], RunMode.MULTIRUN)
    composer = grid.Composer(loader, config)
    (job,) = grid.expand(grid.sweep_arguments(config), loader)
    task, hydra_cfg = composer.run_job(0, job)
    run = app.Configuration(task, hydra_cfg, None, "label", "name", {}, {}, 0.0, 0.0,
                            figures=True, plain=composer.resolved(job, task))
    app.release_config(run)
    assert run.cfg is task and run.hydra_cfg is hydra_cfg


# Jobs as no grid makes them: keys that change from one job to the next in the same groups, a
# key set by one job only, a dict value (which would merge), an added key.
MIXED_JOBS = [["system.total_nodes=8"], ["seed=3"], ["system.total_nodes=9"], ["seed=4"],
              ["format.queues=[a,b]"], ["format.queues=[c]"], ["format.queues=[]"],
              ["seed=4", "system.total_nodes=12"], ["system.total_nodes=12", "seed=4"],
              ["policy=easy", "seed=5"], ["seed=5"], ["+tracking.note=x"], ["seed=6"],
              ["run_time.scale=0.5"], ["run_time.scale=1"], ["run_time.scale=0.7"], ["system.partitions=null"], ["seed=7"], ["run_time={scale: 0.5}"], ["run_time={stddev: 0.5}"]]


@pytest.mark.parametrize("overrides", [*SWEEPS, "mixed"])
def test_a_shared_hydra_node_gives_each_job_what_its_own_copy_gives(loader, overrides):
    """``Composer.run_job(share_hydra=True)`` (the sweep engine, configurations released once
    prepared): one ``hydra`` node per choice of groups, its job keys set anew, and each task
    given back once read (``recycle``, as the engine does) for the next job to reuse, against a
    whole copy per job. Each job's task, its resolved config and its ``hydra`` node, as read
    before the next job is made, are the same."""
    config = loader.load_configuration("config", [*BASE, *([] if overrides == "mixed" else overrides)],
                                       RunMode.MULTIRUN)
    jobs = MIXED_JOBS if overrides == "mixed" else grid.expand(grid.sweep_arguments(config), loader)
    shared, own = grid.Composer(loader, config), grid.Composer(loader, config)
    reused, kept = 0, []  # (kept: each job's resolved config, compared again at the end)
    for num, job in enumerate(jobs):
        seen = []
        for composer, share in ((shared, True), (own, False)):
            copies = composer.copied
            task, hydra_cfg = composer.run_job(num, job, share_hydra=share)
            seen.append((OmegaConf.to_yaml(task), composer.resolved(job, task),
                         OmegaConf.to_container(hydra_cfg, resolve=False),
                         str(hydra_cfg.runtime.output_dir), str(hydra_cfg.job.override_dirname),
                         OmegaConf.to_yaml(task, resolve=True)))
            if share:
                reused += copies == composer.copied  # no copy made: a task given back
                composer.recycle(task)
        assert seen[0] == seen[1], (num, job)
        kept.append((seen[0][1], copy.deepcopy(seen[1][1])))
    assert all(a == b for a, b in kept)  # (a reused task changed no earlier job's plain config)
    assert shared._hydra_nodes and not own._hydra_nodes  # (the shared path was taken)
    # (and tasks were reused, unless every job adds a key)
    assert reused >= (0 if any(line.startswith("+") for line in jobs[0]) else len(jobs) // 5)
