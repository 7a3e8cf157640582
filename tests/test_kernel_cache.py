"""Cached machine code of the compiled kernel is dropped when any kernel source changes
(``sim.kernel.cache_guard``): numba keys it on each file's own stamp, while ``shared.py`` and
``_extended.py`` inline helpers of ``_kernels.py``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from drevt_sweep.sim.kernel import cache_guard

KERNEL_DIR = Path(cache_guard.__file__).parent


def _sources(tmp_path: Path) -> Path:
    folder = tmp_path / "src"
    folder.mkdir()
    for name in cache_guard.SOURCES:
        shutil.copy(KERNEL_DIR / name, folder / name)
    return folder


def _cache(tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in ("_kernels.queue_policy_steps-289.py311.nbi", "_kernels.queue_policy_steps-289.py311.1.nbc",
                 "shared.run_shared_queue-115.py311.nbi", "_extended.extended_steps-130.py311.2.nbc",
                 "mymodule.f-3.py311.nbi", "_kernels.notes.txt"):
        (cache / name).write_bytes(b"x")
    return cache


def test_code_compiled_from_other_sources_is_dropped_once(tmp_path):
    folder, cache = _sources(tmp_path), _cache(tmp_path)
    assert cache_guard.drop_stale_machine_code(cache, folder) == 4  # no digest yet: unknown sources
    assert sorted(p.name for p in cache.iterdir()) == [
        "_kernels.notes.txt", cache_guard.DIGEST_FILE, "mymodule.f-3.py311.nbi"]  # others' files kept
    (cache / "shared.run_shared_queue-115.py311.nbi").write_bytes(b"compiled from these sources")
    assert cache_guard.drop_stale_machine_code(cache, folder) == 0
    assert (cache / "shared.run_shared_queue-115.py311.nbi").is_file()


@pytest.mark.parametrize("changed", cache_guard.SOURCES)
def test_a_change_to_any_kernel_source_drops_every_kernels_code(tmp_path, changed):
    folder, cache = _sources(tmp_path), _cache(tmp_path)
    cache_guard.drop_stale_machine_code(cache, folder)
    for name in ("shared.run_shared_queue-115.py311.nbi", "_extended.extended_steps-130.py311.2.nbc"):
        (cache / name).write_bytes(b"compiled before the change")
    with open(folder / changed, "a") as handle:
        handle.write("\n# a helper changed\n")
    assert cache_guard.drop_stale_machine_code(cache, folder) == 2
    assert not list(cache.glob("shared.*")) and not list(cache.glob("_extended.*"))


def test_a_cache_that_cannot_be_written_is_left_to_numba(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert cache_guard.drop_stale_machine_code(blocked / "cache", _sources(tmp_path)) == 0


def test_loading_the_kernel_stamps_its_cache_with_todays_sources():
    kernels = pytest.importorskip("drevt_sweep.sim.kernel._kernels")
    stamp = Path(kernels.queue_policy_steps._cache.cache_path) / cache_guard.DIGEST_FILE
    assert stamp.read_text().strip() == cache_guard.sources_digest()
