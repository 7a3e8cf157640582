"""A single run (no ``-m``) checks its tracking store up front, as a multirun does (issue 29
item 7): a dead server, a ``foo://`` URI or a corrupt store exits 2 with one line before any
folder is made or any seed simulated (the read-only store: test_tracking_service.py)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from sweep_helpers import TINY


def _dead_port() -> int:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("case", ["dead server", "foo scheme", "corrupt store"])
def test_a_store_that_cannot_be_used_stops_a_single_run_up_front(tmp_path, case):
    out = tmp_path / "out"
    out.mkdir()
    uri, why = {
        "dead server": (f"http://127.0.0.1:{_dead_port()}", "does not answer"),
        "foo scheme": ("foo://somewhere", "foo://somewhere"),
        "corrupt store": (None, "is corrupt"),
    }[case]
    if uri is None:
        (out / "mlflow.db").write_bytes(b"not a database, only bytes\n" * 200)
    proc = subprocess.run([
        sys.executable, "-m", "drevt_sweep", "trace=custom", f"trace.path={TINY}",
        "format=simple", "format.queues=[all]", "system=custom", "system.total_nodes=10",
        "run_time=actual", "progress=false", f"paths.output_root={out}",
        f"hydra.run.dir={tmp_path / 'run'}", *([f"tracking.uri={uri}"] if uri else []),
    ], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("drevt-sweep: error:")]
    assert len(errors) == 1 and why in errors[0], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists()  # no folder, no result.json, no seed simulated
