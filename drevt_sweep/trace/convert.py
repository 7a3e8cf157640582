"""Column conversions shared by the readers: text columns into a ``ParsedTrace``'s arrays,
with every value that does not convert recorded as a row problem (never dropped silently)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import TraceError
from .numeric import parse_numbers, whole_numbers
from .table import ParsedTrace
from .timestamps import parse_times


def numbers(parsed: ParsedTrace, column: pd.Series, canon: str) -> np.ndarray:
    """float64 values; text that is not a number is a problem on ``canon``."""
    parsed_column = parse_numbers(column)
    parsed.problem(parsed_column.not_a_number, canon, "not_a_number", "not a number")
    return parsed_column.values


def whole(parsed: ParsedTrace, column: pd.Series, canon: str, missing_as: int = -1) -> np.ndarray:
    """int64 values for an id/status column; empty -> ``missing_as``."""
    values = numbers(parsed, column, canon)
    with np.errstate(invalid="ignore"):
        parsed.problem(np.isinf(values), canon, "not_finite", "not a finite number")
        parsed.problem(
            np.isfinite(values) & (values != np.floor(values)),
            canon,
            "not_whole",
            f"{parsed.labels.get(canon, canon)} must be a whole number",
        )
        parsed.problem(np.abs(values) > 2**62, canon, "too_large", "number is too large")
    safe = np.where(np.isfinite(values) & (np.abs(values) <= 2**62), np.floor(values), np.nan)
    return whole_numbers(safe, missing_as)


def times(parsed: ParsedTrace, columns: dict[str, pd.Series], timestamp_format: str, zone) -> None:
    """Parse the time columns present (submit, begin, end) into ``parsed``; all of them must
    use one encoding. Sets ``parsed.timestamp_format`` to the encoding found."""
    found = {}
    earlier = None  # the job's previous time (submit, then begin), for the fold rule
    for canon in ("submit", "begin", "end"):
        if canon not in columns:
            continue
        column = parse_times(columns[canon], timestamp_format, zone)
        for problem in column.problems:
            parsed.problem(problem.mask, canon, problem.code, problem.message)
        if column.dst_fold is not None:
            second = _second_occurrence_needed(column, earlier)
            column.seconds[second] = column.second_occurrence[second]
            parsed.note("dst_fold_first_occurrence", column.dst_fold & ~second)
            parsed.note("dst_fold_second_occurrence", second)
            parsed.note("dst_gap_shifted_forward", column.dst_gap)
        setattr(parsed, canon, column.seconds)
        earlier = column.seconds
        if column.encoding is not None:
            found[canon] = column
    _check_same_encoding(parsed, found)
    encoding = next((column.encoding for column in found.values()), None)
    parsed.timestamp_format = encoding or (
        "epoch" if timestamp_format == "auto" else timestamp_format
    )


def _second_occurrence_needed(column, earlier) -> np.ndarray:
    """Fold rows whose first reading precedes the job's previous time but whose second does
    not (see the DST rule in ``timestamps``)."""
    if earlier is None:
        return np.zeros(column.seconds.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        return column.dst_fold & (column.seconds < earlier) & (column.second_occurrence >= earlier)


def _check_same_encoding(parsed: ParsedTrace, found) -> None:
    if len({column.encoding for column in found.values()}) <= 1:
        return
    first_canon = next(iter(found))
    first = found[first_canon]
    for canon, column in found.items():
        if column.encoding != first.encoding:
            row = int(np.flatnonzero(~column.missing)[0])
            raise TraceError(
                f"this column holds {_describe(column.encoding)} but "
                f"{parsed.labels.get(first_canon, first_canon)} holds {_describe(first.encoding)}; "
                "use one timestamp encoding in the whole file",
                line=int(parsed.rows.lines[row]),
                column=parsed.labels.get(canon, canon),
                value=parsed.rows.field(row, parsed.fields[canon])
                if canon in parsed.fields
                else None,
            )


def _describe(encoding: str) -> str:
    return "ISO date-times" if encoding == "iso" else "epoch seconds"


def flagged(parsed: ParsedTrace, canon: str) -> np.ndarray:
    """Rows that already have a problem on ``canon``."""
    mask = np.zeros(len(parsed), dtype=bool)
    for problem in parsed.problems:
        if problem.column == canon:
            mask |= problem.mask
    return mask
