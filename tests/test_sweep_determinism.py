"""The same sweep gives byte-identical seed results and figures whatever runs the seeds (issue
19 item 4; figures: issue 16 item 4).

A BLAS ``np.dot`` in the metrics used several threads in the sweep's own process and one in
joblib's workers, so ``utilization`` differed in the last bit between ``n_jobs=1`` and
``n_jobs=2`` for some seeds of the bundled KTH-SP2 trace (28k jobs: long enough for BLAS to
split the sum)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

RUNNERS = {
    "n_jobs=1": ["parallel.n_jobs=1"],
    "n_jobs=2": ["parallel.n_jobs=2"],
    "threading": ["parallel.backend=threading", "parallel.n_jobs=2"],
    "dask": ["parallel.backend=dask", "parallel.n_jobs=2"],
    "joblib launcher": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
}


def seed_metrics(tmp_path: Path, name: str, overrides: list[str]) -> bytes:
    folder = tmp_path / name.replace(" ", "_").replace("=", "")
    cmd = [sys.executable, "-m", "drevt_sweep", "-m", "policy=easy", "run_time=lognormal",
           "replicates=8", "tracking.enabled=false", "progress=false",
           f"paths.output_root={tmp_path / 'out'}", f"hydra.sweep.dir={folder}", *overrides]
    # BLAS may use both cores in the sweep's process, as it does by default on a workstation.
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = sorted((folder / "0" / "figures").glob("*.png"))
    assert [p.name for p in figures] == ["slowdown_by_class.png", "utilization_queue.png",
                                         "wait_cdf.png"]
    return b"".join([(folder / "0" / "seed_metrics.csv").read_bytes()]
                    + [p.read_bytes() for p in figures])


def test_seed_metrics_are_byte_identical_for_any_worker_count_backend_and_launcher(tmp_path):
    if "dask" in RUNNERS:
        pytest.importorskip("dask.distributed")
    files = {name: seed_metrics(tmp_path, name, overrides) for name, overrides in RUNNERS.items()}
    reference = files["n_jobs=1"]
    assert reference.split(b"\x89PNG")[0].count(b"\n") == 9  # a header and 8 seeds
    for name, content in files.items():
        assert content == reference, f"{name} differs from n_jobs=1"
