"""The on-disk trace cache: hits, keys, corrupt entries, concurrent writers."""

from __future__ import annotations

import csv
import multiprocessing
import shutil
from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.trace import ReadOptions, read_trace
from drevt_sweep.trace import cache as trace_cache
from drevt_sweep.trace.cache import cache_key, load_trace

HERE = Path(__file__).resolve().parent
TRACES = HERE / "data" / "traces"
BUNDLED_KTH = HERE.parent / "drevt_sweep" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"


def assert_same(a, b) -> None:
    for name in a.COLUMNS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.queue_names == b.queue_names
    assert a.meta == b.meta


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.npz"))


def test_a_second_load_is_served_from_the_cache(tmp_path, monkeypatch):
    options = ReadOptions(trace_format="swf")
    first = load_trace(BUNDLED_KTH, options, cache_dir=tmp_path)
    assert len(entries(tmp_path)) == 1

    def no_parsing(*args, **kwargs):
        raise AssertionError("parsed again instead of using the cache")

    monkeypatch.setattr(trace_cache, "read_trace", no_parsing)
    second = load_trace(BUNDLED_KTH, options, cache_dir=tmp_path)
    assert_same(first, second)
    assert_same(first, read_trace(BUNDLED_KTH, options))


def test_the_path_in_the_metadata_is_the_one_asked_for(tmp_path):
    copy = tmp_path / "copy.swf.gz"
    shutil.copy(BUNDLED_KTH, copy)
    load_trace(BUNDLED_KTH, ReadOptions(trace_format="swf"), cache_dir=tmp_path / "c")
    again = load_trace(copy, ReadOptions(trace_format="swf"), cache_dir=tmp_path / "c")
    assert again.meta.path == str(copy)
    assert len(entries(tmp_path / "c")) == 1  # same bytes, same entry


def test_options_that_shape_the_table_are_part_of_the_key(tmp_path):
    path = TRACES / "simple_aliases_extra.csv"
    default = load_trace(path, ReadOptions(), cache_dir=tmp_path)
    everything = load_trace(path, ReadOptions(queues="all"), cache_dir=tmp_path)
    assert (len(default), len(everything)) == (3, 4)
    assert len(entries(tmp_path)) == 2
    checksum = default.meta.checksum
    assert cache_key(checksum, ReadOptions(rejects_path="a.csv")) == cache_key(
        checksum, ReadOptions()
    )
    assert cache_key(checksum, ReadOptions(timezone="UTC")) != cache_key(checksum, ReadOptions())


def test_a_changed_file_is_read_again(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit\n0,1,pbatch,10\n")
    assert load_trace(path, cache_dir=tmp_path / "c").num_nodes.tolist() == [1]
    path.write_text("job_submit_time,num_nodes,queue,time_limit\n0,7,pbatch,10\n")
    assert load_trace(path, cache_dir=tmp_path / "c").num_nodes.tolist() == [7]


def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path):
    options = ReadOptions(trace_format="swf")
    good = load_trace(TRACES / "swf_replay.swf", options, cache_dir=tmp_path)
    (entry,) = entries(tmp_path)
    entry.write_bytes(b"not a zip file")
    again = load_trace(TRACES / "swf_replay.swf", options, cache_dir=tmp_path)
    assert_same(good, again)
    assert entry.read_bytes()[:2] == b"PK"  # rewritten as a valid .npz


def test_skipped_rows_are_written_again_on_a_cache_hit(tmp_path):
    bad = HERE / "data" / "bad" / "several_bad_rows.csv"
    first_rejects, second_rejects = tmp_path / "r1.csv", tmp_path / "r2.csv"
    first = load_trace(
        bad,
        ReadOptions(on_bad_row="skip", rejects_path=str(first_rejects)),
        cache_dir=tmp_path / "c",
    )
    second = load_trace(
        bad,
        ReadOptions(on_bad_row="skip", rejects_path=str(second_rejects)),
        cache_dir=tmp_path / "c",
    )
    assert len(entries(tmp_path / "c")) == 1
    assert second.meta.rejects == first.meta.rejects and len(first.meta.rejects) == 4
    with open(second_rejects, newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 4


def test_an_unwritable_cache_only_warns(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.warns(RuntimeWarning, match="trace cache not written"):
        jobs = load_trace(TRACES / "simple_simulation.csv", cache_dir=blocker / "cache")
    assert len(jobs) == 3


def test_errors_are_not_cached(tmp_path):
    from drevt_sweep.errors import TraceError

    with pytest.raises(TraceError):
        load_trace(HERE / "data" / "bad" / "zero_nodes.csv", cache_dir=tmp_path)
    assert entries(tmp_path) == []


def test_default_directory_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(trace_cache.CACHE_ENV, str(tmp_path / "env-cache"))
    load_trace(TRACES / "simple_simulation.csv")
    assert len(entries(tmp_path / "env-cache")) == 1


def _load_in_process(args) -> tuple[int, float, str]:
    path, cache_dir = args
    jobs = load_trace(path, ReadOptions(trace_format="swf"), cache_dir=cache_dir)
    return len(jobs), float(jobs.actual_run_time.sum()), jobs.meta.checksum


def test_concurrent_processes_share_one_cache_safely(tmp_path):
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        results = pool.map(_load_in_process, [(str(BUNDLED_KTH), str(tmp_path))] * 8)
    assert len(set(results)) == 1 and results[0][0] == 28_467
    assert len(entries(tmp_path)) == 1
    assert not list(tmp_path.glob("*.tmp"))  # no temporary file left behind
    assert _load_in_process((str(BUNDLED_KTH), str(tmp_path))) == results[0]
