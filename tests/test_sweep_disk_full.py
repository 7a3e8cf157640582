"""Outputs on a full file system (issue 19 item 8): each configuration that cannot write its
files FAILS with one line naming the file, no traceback, no run left RUNNING, and the multirun
still prints its summary. A real 256 KiB tmpfs (needs root: mount); the store is elsewhere."""

from __future__ import annotations

import subprocess

import pytest

from sweep_helpers import runs, sweep_cmd

pytestmark = pytest.mark.slow


@pytest.fixture
def full_disk(tmp_path):
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def test_outputs_on_a_full_disk_fail_cleanly_and_the_multirun_summarises(tmp_path, full_disk):
    cmd = sweep_cmd(tmp_path, "unused", "policy=fcfs,easy", "run_time=lognormal", "replicates=2",
                    "parallel.n_jobs=1", f"hydra.sweep.dir={full_disk / 'sweep'}")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    assert "Traceback" not in out and "Logging error" not in out, out[-4000:]
    errors = [line for line in out.splitlines() if "No space left on device" in line]
    assert errors and all(f"{full_disk / 'sweep'}/" in line for line in errors), errors  # names the file
    assert "2 configuration(s) failed" in out  # the summary, for both configurations
    assert "policy=fcfs" in out and "policy=easy" in out
    found = runs(tmp_path)
    parents = [r for r in found if r.data.tags.get("drevt_kind") == "configuration"]
    assert len(parents) == 2 and {r.info.status for r in parents} == {"FAILED"}
    assert "RUNNING" not in {r.info.status for r in found}
