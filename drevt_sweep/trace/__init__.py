"""Trace readers: every format becomes the same validated ``JobTable``.

A format is one module in this package exposing ``read(path, options) -> JobTable`` and is
registered in ``READERS``; ``read_trace`` is the single entry point the rest of the code uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..jobs import JobTable

TIMESTAMP_FORMATS = ("auto", "epoch", "iso")
BAD_ROW_ACTIONS = ("error", "skip")
# The seeds' default queue filter (DR_EVT's SHOW_ALL_QUEUE off).
DEFAULT_QUEUES = ("pbatch", "pall", "pbatch0", "pbatch1", "pbatch2", "pbatch3")
# The zone of wall-clock times when neither the user nor the file gives one (DR_EVT's default).
DEFAULT_TIMEZONE = "America/Los_Angeles"


@dataclass(frozen=True)
class ReadOptions:
    """How to read a trace. Field names follow the seeds' command-line flags."""

    trace_format: str = "simple"
    timestamp_format: str = "auto"
    # None: the file's own zone (an SWF header's TimeZoneString), else DEFAULT_TIMEZONE. A zone
    # given here wins over the file's, and the table's meta notes that it did.
    timezone: str | None = None
    # "default" = the format's own default (simple/lassen: DEFAULT_QUEUES; swf/slurm: all),
    # "all" = keep every queue, or an explicit tuple of queue names.
    queues: tuple[str, ...] | str = "default"
    on_bad_row: str = "error"
    rejects_path: str | None = None  # where skipped rows are written (CSV) when skipping
    force_simulation: bool = False
    # SWF: what to do with a job whose requested time (field 9) is unknown (-1).
    swf_missing_time_limit: str = "run_time"  # "run_time" | "drop" | "fail"


# format -> the module that reads it; a reader is imported only when its format is read (the
# CSV readers import pandas, which the SWF fast path does without).
READERS = {"simple": "simple", "lassen": "lassen", "swf": "swf", "slurm": "slurm"}


def _reader(trace_format: str):
    from importlib import import_module

    return import_module(f".{READERS[trace_format]}", __name__).read


def read_trace(path, options: ReadOptions | None = None) -> JobTable:
    """Read, validate and sort one trace file; raise ``TraceError``/``ConfigError`` on bad input."""
    options = options or ReadOptions()
    if options.trace_format not in READERS:
        raise ConfigError(
            f"unknown trace format '{options.trace_format}'; choose one of {', '.join(READERS)}"
        )
    if options.timestamp_format not in TIMESTAMP_FORMATS:
        raise ConfigError(
            f"unknown timestamp format '{options.timestamp_format}'; "
            f"choose one of {', '.join(TIMESTAMP_FORMATS)}"
        )
    if options.on_bad_row not in BAD_ROW_ACTIONS:
        raise ConfigError(f"on_bad_row must be one of {', '.join(BAD_ROW_ACTIONS)}")
    return _reader(options.trace_format)(str(path), options)
