"""The local tracking server's messages name commands that exist: `start` printed
`python -m drevt_sweep.server stop`, a module that is not there, and a root folder PostgreSQL
cannot reach pointed `make server` users at a flag the target does not pass."""

from __future__ import annotations

import importlib.util
import shlex

import pytest

from drevt_sweep.tracking import server


def test_the_stop_hint_names_a_module_that_exists(tmp_path, monkeypatch):
    monkeypatch.delenv("DREVT_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    words = shlex.split(server.stop_hint(tmp_path / "outputs"))
    assert words[:3] == ["python", "-m", "drevt_sweep.tracking.server"] and words[3:] == ["stop"]
    assert importlib.util.find_spec(words[2]) is not None
    assert server.PROG == " ".join(words[:3])


def test_the_stop_hint_keeps_a_root_that_is_not_the_default(tmp_path, monkeypatch):
    monkeypatch.delenv("DREVT_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "srv"
    assert shlex.split(server.stop_hint(elsewhere))[3:] == ["stop", "--root", str(elsewhere)]
    monkeypatch.setenv("DREVT_ROOT", str(tmp_path / "proj"))
    assert shlex.split(server.stop_hint(tmp_path / "proj" / "outputs"))[3:] == ["stop"]


def test_an_unreachable_root_says_how_make_server_moves_it(tmp_path):
    closed = tmp_path / "closed"
    (closed / "outputs").mkdir(parents=True)
    closed.chmod(0o700)
    try:
        with pytest.raises(server.ServerError) as err:
            server._check_reachable_by("postgres", closed / "outputs" / "pg")
    finally:
        closed.chmod(0o755)
    assert "is not searchable by the 'postgres' user" in str(err.value)  # closed, or a parent
    assert "--pgdata" in str(err.value) and "SERVER_ROOT=DIR" in str(err.value)
