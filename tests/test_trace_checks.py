"""The sweep checks its trace file as drevt-sim does (issue 29 item 9), and a catalogue trace's
file against the catalogue's sha256 (item 10)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module

from drevt_sweep.errors import TraceError
from drevt_sweep.files import check_input
from drevt_sweep.sweep.config import register_configs
from drevt_sweep.sweep.validate import check_config
from drevt_sweep.trace.catalogue import CATALOGUE, VERIFIED_FILE, file_sha256, verify

ROOT = Path(__file__).resolve().parents[1]
BUNDLED_KTH = ROOT / "drevt_sweep" / "data" / "traces" / CATALOGUE["kth_sp2"].file
LANL = CATALOGUE["lanl_cm5"]


@pytest.fixture(scope="module")
def composed():
    register_configs()
    with initialize_config_module(version_base="1.3", config_module="drevt_sweep.conf"):
        yield lambda *o: compose("config", overrides=list(o), return_hydra_config=True)


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """A user data folder and a trace cache of the test's own."""
    if sys.platform != "linux":
        pytest.skip("XDG_DATA_HOME moves the user data folder on Linux only")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("DREVT_TRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DREVT_TRACE_DIR", raising=False)
    monkeypatch.delenv("DREVT_TRACE_VERIFY", raising=False)
    data = tmp_path / "xdg" / "drevt-sweep" / "traces"
    data.mkdir(parents=True)
    return data, tmp_path / "cache"


def _special(tmp_path, kind) -> Path:
    if kind == "directory":
        path = tmp_path / "a_folder"
        path.mkdir()
    elif kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/zero")
    else:
        path = tmp_path / "link"
        path.symlink_to(tmp_path / "gone")
    return path


@pytest.mark.parametrize("kind", ["directory", "fifo", "device", "broken_link"])
def test_the_sweep_says_what_drevt_sim_says_about_a_trace_path(composed, tmp_path, kind):
    path = _special(tmp_path, kind)
    with pytest.raises(TraceError) as sim_says:
        check_input(str(path))
    problems = check_config(composed("trace=custom", f"trace.path={path}"))
    assert problems == [f"trace.path={path}: {sim_says.value.reason}"]


def test_a_wrong_file_under_a_catalogue_name_is_refused_with_a_way_out(composed, folders, monkeypatch):
    data, _ = folders
    shutil.copy(BUNDLED_KTH, data / LANL.file)  # KTH copied as the LANL-CM5 file
    (problem,) = check_config(composed("trace=lanl_cm5"))
    assert problem.startswith(f"trace=lanl_cm5: {data / LANL.file} is not the catalogue's {LANL.file}")
    assert f"expected {LANL.sha256[:16]}" in problem and "411,455 bytes" in problem
    assert "drevt-sweep-fetch lanl_cm5" in problem and "DREVT_TRACE_VERIFY=0" in problem
    monkeypatch.setenv("DREVT_TRACE_VERIFY", "0")
    assert check_config(composed("trace=lanl_cm5")) == []


def test_the_catalogues_own_file_passes(composed, folders):
    assert check_config(composed("trace=kth_sp2")) == []  # the bundled copy, verified


def test_the_verification_is_hashed_once_per_file_version(folders, tmp_path):
    _, cache = folders
    copy = tmp_path / LANL.file
    shutil.copy(BUNDLED_KTH, copy)
    assert verify("lanl_cm5", copy) is not None
    stored = json.loads((cache / VERIFIED_FILE).read_text())
    assert stored[os.path.realpath(copy)]["sha256"] == CATALOGUE["kth_sp2"].sha256
    # The remembered result is used while the file's identity is unchanged ...
    stored[os.path.realpath(copy)]["sha256"] = LANL.sha256
    (cache / VERIFIED_FILE).write_text(json.dumps(stored))
    assert verify("lanl_cm5", copy) is None
    # ... and a changed file (new mtime and size) is hashed again.
    with open(copy, "ab") as handle:
        handle.write(b"\n")
    assert file_sha256(copy) != LANL.sha256 and verify("lanl_cm5", copy) is not None


def test_a_sweep_on_a_wrong_catalogue_file_stops_before_running(folders, tmp_path):
    data, _ = folders
    shutil.copy(BUNDLED_KTH, data / LANL.file)
    proc = subprocess.run([sys.executable, "-m", "drevt_sweep", "trace=lanl_cm5", "tracking.enabled=false",
                           "progress=false", f"paths.output_root={tmp_path / 'out'}"],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "is not the catalogue's" in proc.stderr and "Traceback" not in proc.stderr
