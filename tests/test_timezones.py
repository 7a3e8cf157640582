"""The zone used is the zone logged: an SWF header's zone unless the user gives one, and then
the user's, with a note in the trace's metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from drevt_sweep.trace import DEFAULT_TIMEZONE, ReadOptions, read_trace

DATA = Path(__file__).parent / "data" / "traces"
SWF = DATA / "swf_replay.swf"  # ; TimeZoneString: Europe/Stockholm


def test_an_swf_header_zone_is_used_when_none_is_given():
    meta = read_trace(SWF, ReadOptions(trace_format="swf")).meta
    assert (meta.timezone, meta.header_timezone) == ("Europe/Stockholm", "Europe/Stockholm")
    assert "timezone_overrides_header" not in meta.notes


def test_a_zone_the_user_gives_wins_over_the_header_and_is_noted():
    meta = read_trace(SWF, ReadOptions(trace_format="swf", timezone="UTC")).meta
    assert (meta.timezone, meta.header_timezone) == ("UTC", "Europe/Stockholm")
    assert meta.notes["timezone_overrides_header"] == meta.rows_kept
    same = read_trace(SWF, ReadOptions(trace_format="swf", timezone="Europe/Stockholm")).meta
    assert "timezone_overrides_header" not in same.notes


def test_traces_without_a_zone_use_the_default_or_the_given_one():
    csv = DATA / "sweep_tiny.csv"
    assert read_trace(csv, ReadOptions(queues="all")).meta.timezone == DEFAULT_TIMEZONE
    assert read_trace(csv, ReadOptions(queues="all", timezone="UTC")).meta.timezone == "UTC"


def test_a_window_in_wall_clock_time_follows_the_zone_used():
    from drevt_sweep.sim.workload import WorkloadSpec, apply_workload

    # 1000000000 = 2001-09-09 01:46:40 UTC = 03:46:40 in Stockholm (CEST)
    spec = WorkloadSpec(window_start="2001-09-09T03:46:45")
    header = read_trace(SWF, ReadOptions(trace_format="swf", force_simulation=True))
    utc = read_trace(SWF, ReadOptions(trace_format="swf", timezone="UTC", force_simulation=True))
    kept_header = len(apply_workload(header, spec, 0)[0])
    kept_utc = len(apply_workload(utc, spec, 0)[0])
    assert kept_header == 3  # jobs submitted at +5 s and later
    assert kept_utc == 0  # 03:46:45 UTC is two hours after the last submit


def test_the_sweep_default_is_the_traces_own_zone():
    from hydra import compose, initialize_config_module

    from drevt_sweep.sweep.config import register_configs
    from drevt_sweep.trace.options import read_options

    register_configs()
    with initialize_config_module(version_base="1.3", config_module="drevt_sweep.conf"):
        assert read_options(compose("config")).timezone is None
        assert read_options(compose("config", ["timezone=utc"])).timezone == "UTC"
        assert read_options(compose("config", ["trace=kabre"])).timezone == "America/Costa_Rica"


def test_drevt_sim_reads_the_header_zone_unless_told(tmp_path):
    import json

    from drevt_sweep.cli.sim import main

    for extra, zone in (([], "Europe/Stockholm"), (["--timezone", "UTC"], "UTC")):
        stats = tmp_path / "stats.json"
        assert main([str(SWF), "--trace_format", "swf", "--stats", str(stats), *extra]) == 0
        assert json.loads(stats.read_text())["trace"]["timezone"] == zone
