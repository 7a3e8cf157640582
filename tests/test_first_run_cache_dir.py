"""The first-run notice follows numba's cache: with ``$NUMBA_CACHE_DIR`` set, numba compiles into
that folder, so a stamp left in the kernel's ``__pycache__`` (or in another cache folder) must not
make a fresh cache look warm. It did: a `make run` with a new NUMBA_CACHE_DIR compiled for a
minute in its workers without a word."""

from __future__ import annotations

import shutil
from pathlib import Path

from drevt_sweep.sweep import first_run

KERNEL = Path(first_run.__file__).resolve().parents[1] / "sim" / "kernel"


def _kernel_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "kernel"
    folder.mkdir(parents=True)
    for source in KERNEL.glob("*.py"):
        shutil.copy2(source, folder / source.name)
    return folder


def test_a_new_numba_cache_dir_is_cold_whatever_pycache_says(tmp_path, monkeypatch):
    folder = _kernel_copy(tmp_path)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    first_run._stamp(folder)  # compiled once into __pycache__
    assert first_run.cold_sources(folder) == []
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache-a"))
    assert first_run.cold_sources(folder)  # numba's cache is elsewhere now, and empty
    first_run._stamp(folder)
    assert first_run.cold_sources(folder) == []
    assert list((tmp_path / "cache-a").glob(f"*.{first_run.STAMP}"))  # beside numba's own files
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache-b"))
    assert first_run.cold_sources(folder)


def test_two_checkouts_sharing_a_cache_dir_have_a_stamp_each(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    one, other = _kernel_copy(tmp_path / "one"), _kernel_copy(tmp_path / "other")
    first_run._stamp(one)
    assert first_run.cold_sources(one) == [] and first_run.cold_sources(other)
