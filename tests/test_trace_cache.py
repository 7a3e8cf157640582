"""The on-disk trace cache: hits, keys, corrupt entries, concurrent writers."""

from __future__ import annotations

import csv
import json
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


def test_a_table_verified_in_this_process_is_served_again_until_its_entry_changes(tmp_path, monkeypatch):
    """A loop over the API loads the same trace at every call: the verified table is kept in
    memory, handed out as a copy, and verified again from disk only once its entry file is
    another."""
    options = ReadOptions(trace_format="swf")
    first = load_trace(TRACES / "swf_replay.swf", options, cache_dir=tmp_path)
    verified = []
    real = trace_cache._verified
    monkeypatch.setattr(trace_cache, "_verified", lambda *a: verified.append(1) or real(*a))
    again = load_trace(TRACES / "swf_replay.swf", options, cache_dir=tmp_path)
    assert verified == []
    assert_same(first, again)
    first.num_nodes[0] += 99  # a caller's change to its table is its own
    assert load_trace(TRACES / "swf_replay.swf", options, cache_dir=tmp_path).num_nodes[0] == again.num_nodes[0]
    assert all(column.flags.writeable for column in again.columns().values())  # (numba: one signature)
    first.num_nodes[0] -= 99
    (entry,) = entries(tmp_path)
    copy = tmp_path / "copy.tmp"  # the same bytes, put in place as another process does it
    shutil.copyfile(entry, copy)
    copy.replace(entry)
    third = load_trace(TRACES / "swf_replay.swf", options, cache_dir=tmp_path)
    assert verified == [1]
    assert_same(first, third)
    # another cache directory is another entry: read (or verified) there, not served from memory
    other = load_trace(TRACES / "swf_replay.swf", options, cache_dir=tmp_path / "other")
    assert len(entries(tmp_path / "other")) == 1


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
    with pytest.warns(RuntimeWarning, match="is invalid .*unreadable.*rebuilt from"):
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


# ----------------------------------------------------------------- verified, not trusted (issue 19)


def _cached(tmp_path):
    options = ReadOptions(trace_format="swf")
    good = load_trace(BUNDLED_KTH, options, cache_dir=tmp_path)
    (entry,) = entries(tmp_path)
    with np.load(entry, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    return options, good, entry, arrays


def _rewrite(entry, arrays, rehash: bool) -> None:
    """Save edited arrays; ``rehash`` also forges the content hash, as a careful editor would."""
    if rehash:
        arrays["content_sha256"] = np.array(trace_cache._content_digest(arrays))
    with open(entry, "wb") as handle:
        np.savez(handle, **arrays)


def _edit(arrays, what):
    if what == "zero wait":  # the tampered entry: begin = submit
        arrays["begin"] = arrays["submit"].copy()
    elif what == "negative nodes":
        arrays["num_nodes"] = arrays["num_nodes"].copy()
        arrays["num_nodes"][5] = -4
    elif what == "nan submit":
        arrays["submit"] = arrays["submit"].copy()
        arrays["submit"][0] = np.nan
    elif what == "ragged":
        arrays["time_limit"] = arrays["time_limit"][:-1]
    elif what == "float nodes":
        arrays["num_nodes"] = arrays["num_nodes"].astype(np.float64)
    elif what == "bad queue code":
        arrays["queue_code"] = arrays["queue_code"] + 7
    elif what == "metadata not json":
        arrays["meta_json"] = np.array("{not json")
    elif what == "metadata missing a field":
        meta = json.loads(str(arrays["meta_json"]))
        del meta["mode"]
        arrays["meta_json"] = np.array(json.dumps(meta))
    elif what == "metadata of another file":
        meta = json.loads(str(arrays["meta_json"]))
        meta["checksum"] = "0" * 64
        arrays["meta_json"] = np.array(json.dumps(meta))
    elif what == "rows_kept":
        meta = json.loads(str(arrays["meta_json"]))
        meta["rows_kept"] += 1
        arrays["meta_json"] = np.array(json.dumps(meta))
    elif what == "no hash":
        del arrays["content_sha256"]


EDITS = ["zero wait", "negative nodes", "nan submit", "ragged", "float nodes", "bad queue code",
         "metadata not json", "metadata missing a field", "metadata of another file",
         "rows_kept", "no hash"]


# With a forged hash, the schema checks must catch it (a consistent, valid table with a forged
# hash, like "zero wait", is indistinguishable from a real one).
CASES = [(what, False) for what in EDITS] + [
    (what, True) for what in EDITS if what not in ("zero wait", "no hash")]


@pytest.mark.parametrize("what,rehash", CASES)
def test_a_tampered_or_malformed_entry_is_rebuilt_never_served(tmp_path, what, rehash):
    options, good, entry, arrays = _cached(tmp_path)
    _edit(arrays, what)
    _rewrite(entry, arrays, rehash=rehash)
    with pytest.warns(RuntimeWarning, match=f"trace cache entry {entry} is invalid"):
        again = load_trace(BUNDLED_KTH, options, cache_dir=tmp_path)
    assert_same(good, again)
    # ... and the entry was rewritten: the next load is a clean hit
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same(good, load_trace(BUNDLED_KTH, options, cache_dir=tmp_path))


@pytest.mark.slow
def test_a_sweep_with_a_tampered_cache_entry_gives_the_true_results(tmp_path):
    """The issue's case: an edited entry was served (mean wait 0), FINISHED."""
    from sweep_helpers import run_sweep

    first = run_sweep(tmp_path / "a", "policy=fcfs", f"paths.cache_dir={tmp_path / 'cache'}")
    truth = json.loads((tmp_path / "a" / "sweep" / "0" / "result.json").read_text())["metrics"]
    (entry,) = entries(tmp_path / "cache")
    with np.load(entry, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    arrays["num_nodes"] = np.ones_like(arrays["num_nodes"])
    _rewrite(entry, arrays, rehash=False)
    second = run_sweep(tmp_path / "b", "policy=fcfs", f"paths.cache_dir={tmp_path / 'cache'}")
    result = json.loads((tmp_path / "b" / "sweep" / "0" / "result.json").read_text())
    assert result["status"] == "FINISHED"
    assert result["metrics"] == truth
    assert first.returncode == second.returncode == 0
    with np.load(entry, allow_pickle=False) as stored:  # rebuilt in place
        assert not (stored["num_nodes"] == 1).all()
