"""Timestamp columns to float64 seconds since the Unix epoch (UTC), vectorised.

Encodings (``--timestamp_format``):

* ``epoch``: integer or fractional seconds since 1970-01-01 UTC (``1700000000``, ``12.5``).
* ``iso``: ``2024-01-15T10:30:00`` or ``2024-01-15 10:30:00``, optional fractional seconds,
  optional ``Z`` / ``±HH:MM`` / ``±HHMM`` offset. A value with an offset is converted with that
  offset, exactly once. A value without one is wall-clock time in ``--timezone`` (IANA name).
  ISO values must spell the date with dashes (``YYYY-MM-DD``); a bare number is always epoch.
* ``auto``: each column's first value decides; every other value must use the same encoding.

Daylight-saving rule (deterministic, the ``fold=0`` rule of PEP 495 / ``zoneinfo``):

* a wall time that happens twice (the autumn *fold*, e.g. 2020-11-01 01:30 in Los Angeles) is
  the **first** occurrence, still in daylight time (01:30 PDT = 08:30 UTC) -- except where
  that would put a job's begin before its submit, or its end before its begin, and the second
  occurrence would not: then it is the second (01:30 PST = 09:30 UTC). A job that starts in
  the first pass through the hour and ends in the second is read correctly this way;
* a wall time that never happens (the spring *gap*, e.g. 2020-03-08 02:30 in Los Angeles) is
  read with the offset in force **before** the jump, i.e. shifted forward by the gap
  (02:30 PST = 10:30 UTC = 03:30 PDT).

All three are counted per job in ``TraceMeta.notes`` (``dst_fold_first_occurrence``,
``dst_fold_second_occurrence``, ``dst_gap_shifted_forward``) so that nothing is resolved
silently.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass, field
from datetime import datetime, timezone

from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError

if TYPE_CHECKING:  # pandas is imported where a column is parsed: resolve_zone stays cheap
    import pandas as pd

ISO_EXAMPLE = "2024-01-15T10:30:00"
# Written without \d and \s so that pandas can hand them to pyarrow's fast RE2 engine.
_ISO_PREFIX = r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
_OFFSET_SUFFIX = (
    r"[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)? ?(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)$"
)
_FIRST_LOCAL = np.datetime64("0001-01-02T00:00:00", "us")
_LAST_LOCAL = np.datetime64("9999-12-30T23:59:59", "us")
_UTC_NAMES = {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Zulu", "Etc/Zulu", "GMT", "Etc/GMT"}


def resolve_zone(name: str) -> zoneinfo.ZoneInfo:
    """The IANA time zone called ``name``, or a ``ConfigError`` saying it is unknown."""
    try:
        if not isinstance(name, str) or not name.strip():
            raise ValueError
        return zoneinfo.ZoneInfo(name.strip())
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ConfigError(
            f"unknown time zone '{name}'; use an IANA name such as UTC, America/Los_Angeles "
            "or Europe/Stockholm"
        ) from None


@dataclass
class TimeProblem:
    mask: np.ndarray
    code: str  # short suffix: "not_a_timestamp", "wrong_encoding", "mixed_encoding"
    message: str


@dataclass
class TimeColumn:
    """One parsed timestamp column."""

    seconds: np.ndarray  # float64 UTC epoch seconds; NaN where missing or unparseable
    missing: np.ndarray  # bool: the value was empty
    encoding: str | None  # "epoch" | "iso" | None (no values at all)
    problems: list[TimeProblem] = field(default_factory=list)
    dst_fold: np.ndarray | None = None  # bool: resolved to the first of two occurrences
    dst_gap: np.ndarray | None = None  # bool: shifted forward over a spring gap
    second_occurrence: np.ndarray | None = None  # float64: the later reading of fold rows, else NaN


def parse_times(values: pd.Series, expected: str, zone: zoneinfo.ZoneInfo) -> TimeColumn:
    """Parse one column. ``expected`` is ``auto``, ``epoch`` or ``iso``."""
    import pandas as pd

    n = len(values)
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values):
        seconds = values.to_numpy(dtype=np.float64, na_value=np.nan)
        missing = np.isnan(seconds) & values.isna().to_numpy()
        column = TimeColumn(seconds, missing, "epoch" if (~missing).any() else None)
        if expected == "iso" and (~missing).any():
            column.problems.append(
                TimeProblem(
                    ~missing,
                    "wrong_encoding",
                    f"epoch seconds, but --timestamp_format iso expects a date-time like "
                    f"{ISO_EXAMPLE}",
                )
            )
        return column

    fast = _arrow_times(values)
    if fast is not None:
        times, with_offsets = fast
        present = ~np.isnat(times)
        column = TimeColumn(np.full(n, np.nan), ~present, "iso" if present.any() else None)
        if expected == "epoch" and present.any():
            column.problems.append(TimeProblem(present, *_encoding_problem(expected, "iso")))
        elif with_offsets:
            column.seconds[present] = _to_seconds(times[present])
        elif present.any():
            _localize(times[present], np.flatnonzero(present), zone, column)
        return column

    text = values.astype("str").str.strip()
    missing = (values.isna() | (text == "")).to_numpy()
    present = ~missing
    iso_like = text.str.match(_ISO_PREFIX).fillna(False).to_numpy(dtype=bool) & present
    epoch_like = present & ~iso_like
    seconds = np.full(n, np.nan)
    problems: list[TimeProblem] = []

    numbers = np.full(n, np.nan)
    if epoch_like.any():
        numbers[epoch_like] = pd.to_numeric(text[epoch_like], errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
        # "inf" parses as a number and is caught later as not finite; "nan" is no timestamp.
        unparseable = epoch_like & np.isnan(numbers)
        epoch_like &= ~unparseable
        if unparseable.any():
            problems.append(
                TimeProblem(
                    unparseable,
                    "not_a_timestamp",
                    f"not a timestamp: expected epoch seconds or a date-time like {ISO_EXAMPLE}",
                )
            )

    first = np.flatnonzero(iso_like | epoch_like)
    encoding = None
    if first.size:
        encoding = "iso" if iso_like[first[0]] else "epoch"
    wanted = encoding if expected == "auto" else expected
    if wanted == "epoch" and iso_like.any():
        problems.append(TimeProblem(iso_like, *_encoding_problem(expected, "iso")))
        iso_like = np.zeros(n, dtype=bool)
    if wanted == "iso" and epoch_like.any():
        problems.append(TimeProblem(epoch_like, *_encoding_problem(expected, "epoch")))
        epoch_like = np.zeros(n, dtype=bool)

    seconds[epoch_like] = numbers[epoch_like]
    column = TimeColumn(seconds, missing, encoding, problems)
    if iso_like.any():
        _parse_iso(text, iso_like, zone, column)
    return column


def _encoding_problem(expected: str, found: str) -> tuple[str, str]:
    found_text = "an ISO date-time" if found == "iso" else "epoch seconds"
    if expected == "auto":
        other = "epoch seconds" if found == "iso" else "ISO date-times"
        return (
            "mixed_encoding",
            f"{found_text}, but this column's first value is in {other}; "
            "use one encoding per column",
        )
    wanted = "epoch seconds" if expected == "epoch" else f"a date-time like {ISO_EXAMPLE}"
    return "wrong_encoding", f"{found_text}, but --timestamp_format {expected} expects {wanted}"


def _arrow_times(values: pd.Series) -> tuple[np.ndarray, bool] | None:
    """Fast path: pyarrow's strict ISO-8601 casts, for a column whose values are all plain
    ``YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]`` (wall-clock times) or all carry an offset (then they
    are returned in UTC). Returns (datetime64[us] values, with offsets?), or None when pyarrow
    is not behind the column or the values mix or do not fit: the general path then finds out
    which and why."""
    to_arrow = getattr(values.array, "__arrow_array__", None)
    if to_arrow is None:
        return None
    try:
        import pyarrow as pa

        array = to_arrow()
    except Exception:
        return None
    targets = [(pa.timestamp("us"), False), (pa.timestamp("us", tz="UTC"), True)]
    first = values.first_valid_index()
    if first is not None and re.search(_OFFSET_SUFFIX, str(values[first]).strip()):
        targets.reverse()  # a failing cast costs as much as ten good ones: try the likely one
    for target, with_offsets in targets:
        try:
            times = array.cast(target)
        except Exception:  # some value is not of this form
            continue
        if with_offsets:
            times = times.cast(pa.timestamp("us"))  # the same instants, as naive UTC
        return times.to_numpy(zero_copy_only=False).astype("datetime64[us]"), with_offsets
    return None


def _parse_iso(text: pd.Series, rows: np.ndarray, zone: zoneinfo.ZoneInfo, out: TimeColumn) -> None:
    """Fill ``out.seconds`` for the ISO rows, honouring explicit offsets once and resolving
    wall-clock times in ``zone`` with the module's DST rule."""
    import pandas as pd

    subset = text if rows.all() else text[rows]
    parsed = pd.to_datetime(subset, format="ISO8601", utc=True, errors="coerce")
    bad = parsed.isna().to_numpy()
    row_index = np.flatnonzero(rows)
    if bad.any():
        mask = np.zeros(rows.shape, dtype=bool)
        mask[row_index[bad]] = True
        out.problems.append(
            TimeProblem(
                mask, "not_a_timestamp", f"not a valid date-time (expected e.g. {ISO_EXAMPLE})"
            )
        )
    as_utc = parsed.dt.tz_localize(None).to_numpy()
    out.seconds[rows] = _to_seconds(as_utc)
    with_offset = subset.str.contains(_OFFSET_SUFFIX, regex=True).fillna(False).to_numpy(dtype=bool)
    naive = ~with_offset & ~bad
    if naive.any():
        _localize(as_utc[naive], row_index[naive], zone, out)


def _localize(
    wall: np.ndarray, where: np.ndarray, zone: zoneinfo.ZoneInfo, out: TimeColumn
) -> None:
    """Wall-clock datetime64 values (none NaT) at rows ``where`` to UTC seconds in ``out``."""
    import pandas as pd

    if zone.key in _UTC_NAMES:
        out.seconds[where] = _to_seconds(wall)
        return
    # Zone rules need a day of margin inside Python's datetime range (years 1 to 9999).
    outside = (wall < _FIRST_LOCAL) | (wall > _LAST_LOCAL)
    if outside.any():
        mask = np.zeros(out.seconds.shape, dtype=bool)
        mask[where[outside]] = True
        out.problems.append(
            TimeProblem(
                mask, "out_of_range", "time out of range (must fall in the years 1 to 9999)"
            )
        )
        wall, where = wall[~outside], where[~outside]
    local = pd.Series(wall).dt.tz_localize(zone, ambiguous="NaT", nonexistent="NaT")
    seconds = _to_seconds(local.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy())
    n = out.seconds.shape[0]
    out.dst_fold = np.zeros(n, dtype=bool)
    out.dst_gap = np.zeros(n, dtype=bool)
    out.second_occurrence = np.full(n, np.nan)
    for i in np.flatnonzero(np.isnan(seconds)):  # only wall times in a DST gap or fold
        seconds[i], later = _resolve_dst(wall[i], zone)
        if np.isnan(later):
            out.dst_gap[where[i]] = True
        else:
            out.dst_fold[where[i]] = True
            out.second_occurrence[where[i]] = later
    out.seconds[where] = seconds


def _resolve_dst(wall: np.datetime64, zone: zoneinfo.ZoneInfo) -> tuple[float, float]:
    """PEP 495 ``fold=0`` for one wall time in a gap or fold.

    Returns (seconds, second occurrence): the second value is the ``fold=1`` reading for a
    wall time that happens twice, NaN for one in a gap."""
    import pandas as pd

    naive = pd.Timestamp(wall).to_pydatetime()
    seconds = naive.replace(tzinfo=zone, fold=0).timestamp()
    round_trip = datetime.fromtimestamp(seconds, tz=timezone.utc).astimezone(zone)
    if round_trip.replace(tzinfo=None) != naive:
        return seconds, float("nan")
    return seconds, naive.replace(tzinfo=zone, fold=1).timestamp()


def _to_seconds(values: np.ndarray) -> np.ndarray:
    """datetime64 of any unit to float64 seconds; NaT becomes NaN."""
    unit, _ = np.datetime_data(values.dtype)
    per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    ints = values.view(np.int64)
    seconds = ints.astype(np.float64) / per_second
    seconds[np.isnat(values)] = np.nan
    return seconds
