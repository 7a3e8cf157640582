"""The Standard Workload Format: header, field mapping, -1 handling; the bundled KTH-SP2 trace
and the public traces (checked against an independent pandas read)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from drevt_sweep.errors import ConfigError, TraceError
from drevt_sweep.trace import ReadOptions, read_trace

HERE = Path(__file__).resolve().parent
TRACES = HERE / "data" / "traces"
BUNDLED_KTH = HERE.parent / "drevt_sweep" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"


def read(path, **options):
    return read_trace(path, ReadOptions(trace_format="swf", **options))


def test_fields_header_and_replay():
    jobs = read(TRACES / "swf_replay.swf")
    meta = jobs.meta
    assert meta.mode == "replay" and meta.timestamp_format == "epoch"
    assert meta.machine_nodes == 64  # MaxNodes wins over MaxProcs
    assert meta.timezone == "Europe/Stockholm"
    assert jobs.job_id.tolist() == [1, 2, 3, 4]
    assert (jobs.submit - 1_000_000_000).tolist() == [0, 5, 5, 30]
    assert (jobs.begin - jobs.submit).tolist() == [10, 0, 20, 1]  # wait times
    assert jobs.actual_run_time.tolist() == [100, 50, 300, 10]
    assert (jobs.end - jobs.begin).tolist() == [100, 50, 300, 10]
    # MaxProcs 128 on MaxNodes 64: two processors per node (job 3: requested unknown -> allocated)
    assert jobs.num_nodes.tolist() == [2, 1, 4, 8]
    assert jobs.cores_per_node.tolist() == [2, 2, 2, 2]
    assert jobs.partition.tolist() == ["-1"] * 4  # field 16 unknown
    assert jobs.time_limit.tolist() == [200, 60, 400, 10]  # job 4: -1 -> its run time
    assert jobs.queue.tolist() == ["1", "2", "1", "1"]
    assert jobs.exit_status.tolist() == [-1] * 4
    assert jobs.source_line.tolist() == [8, 9, 10, 11]
    assert meta.notes == {"num_nodes_from_allocated": 1, "time_limit_from_run_time": 1}


def test_unknown_values_are_excluded_or_filled_and_always_counted():
    jobs = read(TRACES / "swf_unknowns.swf")
    meta = jobs.meta
    assert meta.mode == "simulation"  # no wait time is known
    assert meta.timestamp_format == "relative" and meta.machine_nodes == 32
    assert meta.excluded == {
        "unknown_num_nodes": 1,
        "unknown_run_time": 1,
        "unknown_submit": 1,
        "zero_run_time": 1,
    }
    assert jobs.job_id.tolist() == [1, 6, 7]
    assert jobs.source_line.tolist() == [4, 9, 12]  # comment and blank lines are counted
    assert np.isnan(jobs.begin).all()
    assert meta.notes == {"time_limit_from_run_time": 1, "wait_time_unknown": 3}
    assert meta.rows_read == meta.rows_kept + sum(meta.excluded.values())


def test_missing_time_limit_drop_and_fail():
    dropped = read(TRACES / "swf_unknowns.swf", swf_missing_time_limit="drop")
    assert dropped.meta.excluded["unknown_time_limit"] == 1
    assert 6 not in dropped.job_id
    with pytest.raises(
        TraceError, match=r"swf_unknowns.swf:9: column 'requested time \(field 9\)'"
    ):
        read(TRACES / "swf_unknowns.swf", swf_missing_time_limit="fail")
    # fail wins even when bad rows are skipped
    with pytest.raises(TraceError, match="swf_missing_time_limit=fail"):
        read(TRACES / "swf_unknowns.swf", swf_missing_time_limit="fail", on_bad_row="skip")
    with pytest.raises(ConfigError, match="swf_missing_time_limit"):
        read(TRACES / "swf_unknowns.swf", swf_missing_time_limit="guess")


def test_force_simulation_keeps_the_recorded_waits_as_history():
    jobs = read(TRACES / "swf_replay.swf", force_simulation=True)
    assert jobs.meta.mode == "simulation"
    assert np.isfinite(jobs.begin).all()


def test_values_below_minus_one_are_bad_rows(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text("1 0 -5 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    with pytest.raises(TraceError, match=r"t.swf:1: column 'wait time \(field 3\)': value '-5'"):
        read(path)


def test_a_bad_header_number_names_its_line(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text(
        "; Version: 2\n; MaxNodes: many\n1 0 0 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    with pytest.raises(TraceError, match="t.swf:2: column 'MaxNodes': value 'many'"):
        read(path)


def independent(path: Path) -> pd.DataFrame:
    """The jobs the reader should keep, by a plain pandas read of the same file."""
    frame = pd.read_csv(path, sep=r"\s+", comment=";", header=None)
    keep = (frame[3] > 0) & (frame[1] >= 0) & ~((frame[7] <= 0) & (frame[4] <= 0))
    return frame[keep]


def check_against_independent_read(jobs, path: Path, start: int) -> None:
    expected = independent(path)
    assert len(jobs) == len(expected)
    assert jobs.job_id.tolist() == expected[0].astype(int).tolist()  # already in submit order
    assert jobs.actual_run_time.sum() == expected[3].sum()
    nodes = np.where(expected[7] > 0, expected[7], expected[4])
    assert jobs.num_nodes.sum() == nodes.sum()
    np.testing.assert_array_equal(jobs.submit, start + expected[1].to_numpy(dtype=float))


def test_bundled_kth_sp2():
    jobs = read(BUNDLED_KTH)
    meta = jobs.meta
    assert meta.rows_read == 28_476
    assert meta.excluded == {"unknown_num_nodes": 1, "zero_run_time": 8}
    assert len(jobs) == 28_467 and meta.mode == "replay" and meta.machine_nodes == 100
    assert meta.notes == {"run_time_exceeds_time_limit": 475}  # as the traces README says
    assert (jobs.job_id[0], jobs.submit[0]) == (15, 843_480_031 + 599_850)
    assert (jobs.job_id[-1], jobs.submit[-1]) == (28_490, 843_480_031 + 29_363_618)
    assert jobs.source_line[0] == 25  # after 24 header lines
    assert jobs.actual_run_time.sum() == 252_634_874
    assert jobs.num_nodes.sum() == 217_802
    check_against_independent_read(jobs, BUNDLED_KTH, 843_480_031)


@pytest.fixture(scope="module")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"public traces not found at {SHARED}")
    return SHARED


def test_shared_kth_is_the_bundled_file(shared):
    assert (shared / "KTH-SP2-1996-2.1-cln.swf.gz").read_bytes() == BUNDLED_KTH.read_bytes()


def test_lanl_cm5(shared):
    path = shared / "LANL-CM5-1994-4.1-cln.swf.gz"
    jobs = read(path)
    meta = jobs.meta
    assert meta.rows_read == 122_060 and len(jobs) == 122_055
    assert meta.excluded == {"unknown_num_nodes": 3, "zero_run_time": 2}
    assert meta.machine_nodes == 1024 and meta.mode == "replay"
    assert meta.notes["time_limit_from_run_time"] == 11_286
    assert meta.notes["num_nodes_from_allocated"] == 11_325
    assert (jobs.job_id[0], jobs.job_id[-1]) == (1, 201_387)
    assert jobs.actual_run_time.sum() == 315_102_736
    check_against_independent_read(jobs, path, 781_275_672)
    dropped = read(path, swf_missing_time_limit="drop")
    assert dropped.meta.excluded["unknown_time_limit"] == 11_286


def test_nasa_ipsc_has_no_waits_and_no_limits(shared):
    path = shared / "NASA-iPSC-1993-3.1-cln.swf.gz"
    jobs = read(path)
    assert jobs.meta.mode == "simulation" and len(jobs) == 18_066
    assert jobs.meta.excluded == {"zero_run_time": 173}
    assert jobs.meta.notes["wait_time_unknown"] == 18_066
    assert (jobs.time_limit == jobs.actual_run_time).all()
    assert jobs.actual_run_time.sum() == 13_950_781
    check_against_independent_read(jobs, path, 749_458_803)


def test_lublin_model_has_relative_times(shared):
    path = shared / "lublin_256.swf.gz"
    jobs = read(path)
    assert jobs.meta.timestamp_format == "relative" and jobs.meta.timezone == "UTC"
    assert len(jobs) == 10_000 and jobs.meta.machine_nodes == 256
    assert (jobs.submit[0], jobs.submit[-1]) == (5094, 7_711_701)
    assert jobs.actual_run_time.sum() == 48_627_667
    check_against_independent_read(jobs, path, 0)
