"""A config may not make Hydra run code (issue 19 item 11): only drevt-sweep's own callbacks
are instantiated; any other ``_target_`` under ``hydra`` is refused with exit code 2 unless the
environment (which a config cannot set) allows it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from drevt_sweep.sweep.callback_policy import ALLOW_ENV, CallbackRefused, check_hydra_targets

from sweep_helpers import TINY


def preset(tmp_path: Path, marker: Path, section: str = "callbacks", key: str = "_target_",
           target: str = "os.makedirs") -> Path:
    """A user's experiment preset whose callback (or logging factory) would create ``marker``
    when instantiated."""
    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    node = {"evil": {key: target, "name": str(marker)}}
    for name in reversed(section.split(".")):
        node = {name: node}
    (conf / "evil.yaml").write_text("# @package _global_\n" + OmegaConf.to_yaml({"hydra": node}))
    return tmp_path / "conf"


def sweep(tmp_path: Path, conf: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "drevt_sweep", "-m", f"--config-dir={conf}", "experiment=evil",
           "trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
           "system=custom", "system.total_nodes=10", "tracking.enabled=false", "progress=false",
           "figures=none", f"paths.output_root={tmp_path / 'out'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_a_callback_from_a_preset_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "ran"
    done = sweep(tmp_path, preset(tmp_path, marker), env={ALLOW_ENV: ""})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "hydra.callbacks.evil._target_ is 'os.makedirs'" in done.stderr
    assert f"{ALLOW_ENV}=os.makedirs" in done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists()  # never instantiated
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize("section, key, target", [
    # issue 27 item 4: names under an allowed prefix that resolve, by attribute, to os.makedirs
    ("callbacks", "_target_", "drevt_sweep.sweep.app.os.makedirs"),
    ("job_logging.formatters", "()", "logging.os.makedirs"),
    ("job_logging.handlers", "class", "logging.os.makedirs"),
    ("hydra_logging.formatters", "()", "logging.os.makedirs"),  # applied while Hydra composes
])
def test_a_name_that_only_looks_allowed_is_refused_before_it_runs(tmp_path, section, key, target):
    marker = tmp_path / "ran"
    done = sweep(tmp_path, preset(tmp_path, marker, section, key, target), env={ALLOW_ENV: ""})
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"hydra.{section}.evil.{key} is '{target}': a config may only name" in done.stderr
    assert f"{ALLOW_ENV}={target}" in done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists()
    assert not (tmp_path / "sweep").exists()


@pytest.mark.slow
def test_a_callback_allowed_in_the_environment_runs(tmp_path):
    marker = tmp_path / "ran"
    done = sweep(tmp_path, preset(tmp_path, marker), env={ALLOW_ENV: "os.makedirs"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert marker.is_dir()
    assert (tmp_path / "sweep" / "summary.csv").exists()  # our own callback still ran


def hydra_node(text: str):
    return OmegaConf.create(textwrap.dedent(text))


def test_own_callbacks_plugins_and_standard_logging_are_allowed(monkeypatch):
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    check_hydra_targets(hydra_node("""
        launcher: {_target_: hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher}
        sweeper: {_target_: hydra._internal.core_plugins.basic_sweeper.BasicSweeper}
        callbacks: {summary: {_target_: drevt_sweep.sweep.app.SweepSummaryCallback}}
        job_logging: {handlers: {file: {class: logging.FileHandler, filename: x.log},
                                 out: {class: logging.StreamHandler, stream: 'ext://sys.stdout'},
                                 mail: {class: logging.handlers.RotatingFileHandler, filename: y}},
                      formatters: {f: {'()': logging.Formatter}}, filters: {g: {'()': logging.Filter}}}
        """))


def test_hydras_own_logging_configs_are_allowed(monkeypatch):
    """Every job_logging/hydra_logging preset that Hydra ships passes the check."""
    import hydra

    monkeypatch.delenv(ALLOW_ENV, raising=False)
    shipped = Path(hydra.__file__).parent / "conf" / "hydra"
    files = sorted(shipped.glob("*_logging/*.yaml"))
    assert len(files) >= 4
    for path in files:
        node = path.parent.name
        check_hydra_targets(OmegaConf.create({node: OmegaConf.load(path)}))


@pytest.mark.parametrize("text, where", [
    ("callbacks: {x: {_target_: drevt_sweep.sweep.app.SweepSummaryCallback, arg: {_target_: os.system}}}",
     "hydra.callbacks.x.arg._target_ is 'os.system'"),
    ("launcher: {_target_: a.Launcher, additional_parameters: {p: {_target_: os.system}}}",
     "hydra.launcher.additional_parameters.p._target_"),
    ("job_logging: {formatters: {f: {'()': os.system}}}", "hydra.job_logging.formatters.f.() is"),
    ("hydra_logging: {handlers: {h: {class: subprocess.Popen}}}", "hydra.hydra_logging.handlers.h.class"),
    ("callbacks: {x: {_target_: drevt_sweep.sweep.app.shutil.copyfile}}", "hydra.callbacks.x._target_"),
    ("callbacks: {x: {_target_: drevt_sweep.sweep.app.SweepSummaryCallback.__init__}}", "callbacks.x._target_"),
    ("callbacks: {x: {_target_: drevt_sweep.jobs.JobTable}}", "hydra.callbacks.x._target_"),  # not a Callback
    ("callbacks: {x: {_target_: drevt_sweep.__main__.main}}", "hydra.callbacks.x._target_"),  # never imported
    ("callbacks: {x: {_target_: drevt_sweep.no.such.Thing}}", "hydra.callbacks.x._target_"),
    ("job_logging: {formatters: {f: {'()': logging.handlers.os.system}}}", "formatters.f.() is"),
    ("job_logging: {formatters: {f: {'()': logging.StreamHandler}}}", "formatters.f.() is"),  # wrong kind
    ("job_logging: {handlers: {h: {class: logging.config.dictConfig}}}", "handlers.h.class is"),
    ("job_logging: {handlers: {h: {class: logging.StreamHandler, stream: 'ext://os.system'}}}",
     "handlers.h.stream is 'ext://os.system'"),
    ("job_logging: {filters: {f: {'()': logging.makeLogRecord}}}", "filters.f.() is"),
])
def test_code_nested_anywhere_under_hydra_is_refused(monkeypatch, text, where):
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    with pytest.raises(CallbackRefused, match=__import__("re").escape(where)):
        check_hydra_targets(hydra_node(text))
    monkeypatch.setenv(ALLOW_ENV, "*")
    check_hydra_targets(hydra_node(text))
