"""Column conversions shared by the readers: text columns into a ``ParsedTrace``'s arrays,
with every value that does not convert recorded as a row problem (never dropped silently)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import TraceError
from .numeric import parse_numbers
from .table import ParsedTrace
from .timestamps import parse_times


def numbers(parsed: ParsedTrace, column: pd.Series, canon: str) -> np.ndarray:
    """float64 values; text that is not a number is a problem on ``canon``."""
    parsed_column = parse_numbers(column)
    parsed.problem(parsed_column.not_a_number, canon, "not_a_number", "not a number")
    return parsed_column.values


INT64_MAX = 2**63 - 1
_INTEGER = r"[+-]?\d+"
# Ids that are not integers but name one job: Slurm array tasks (123_4) and heterogeneous-job
# components (123+1).
_TEXT_ID = r"\d+(?:_\d+|\+\d+)"


def exact_whole(parsed: ParsedTrace, column: pd.Series, canon: str, missing_as: int = -1) -> np.ndarray:
    """int64 values of an id/status column, every digit kept (no float64 on the way, which
    would make 2**53 + 1 into 2**53); empty -> ``missing_as``. A value above the int64 range is
    a problem naming it; a whole number written with a decimal point or exponent (``5.0``) is
    accepted when float64 holds it exactly (below 2**53)."""
    values, _ = _exact(parsed, column, canon, missing_as, text_ids=False)
    return values


def job_ids(parsed: ParsedTrace, column: pd.Series, canon: str) -> tuple[np.ndarray, np.ndarray]:
    """A job-id column: (ids, missing mask). The ids are int64 when every id is an integer;
    when some are array tasks or job components (``123_4``, ``123+1``) all of them are kept
    as their text (a numpy str array), so every id stays exact and distinct."""
    return _exact(parsed, column, canon, -1, text_ids=True)


def ids_or_rows(ids: np.ndarray, missing: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Job ids with the row numbers ``rows`` where an id is missing (or, as integers, -1)."""
    if ids.dtype == np.int64:
        return np.where(missing | (ids < 0), rows, ids)
    return np.where(missing, rows.astype(str), ids)


def _exact(parsed, column, canon, missing_as, text_ids):
    n = len(column)
    if column.dtype == np.int64:
        return column.to_numpy(dtype=np.int64), np.zeros(n, dtype=bool)
    text = column.astype("str").str.strip().where(column.notna(), "")
    missing = (text == "").to_numpy(dtype=bool)
    integer = text.str.fullmatch(_INTEGER).to_numpy(dtype=bool)
    digits = text.str.lstrip("+-").str.lstrip("0")
    length = digits.str.len().to_numpy()
    too_large = integer & ((length > 19) | ((length == 19) & (digits > str(INT64_MAX)).to_numpy(dtype=bool)))
    label = parsed.labels.get(canon, canon)
    parsed.problem(too_large, canon, "too_large",
                   f"{label} is larger than the largest 64-bit integer ({INT64_MAX})")
    values = np.full(n, missing_as, dtype=np.int64)
    fits = integer & ~too_large
    if fits.any():
        values[fits] = text[fits].to_numpy(dtype=str).astype(np.int64)
    rest = ~integer & ~missing
    if text_ids and rest.any():
        is_text_id = text.str.fullmatch(_TEXT_ID).to_numpy(dtype=bool)
        if is_text_id.any():
            parsed.problem(rest & ~is_text_id, canon, "not_an_id",
                           "not a job id (an integer, or an array task such as 123_4)")
            return text.to_numpy(dtype=str), missing
    if rest.any():
        floats = pd.to_numeric(text.where(rest, None), errors="coerce").to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            parsed.problem(rest & np.isnan(floats), canon, "not_a_number", "not a number")
            parsed.problem(np.isinf(floats), canon, "not_finite", "not a finite number")
            whole = np.isfinite(floats) & (floats == np.floor(floats))
            parsed.problem(np.isfinite(floats) & ~whole, canon, "not_whole",
                           f"{label} must be a whole number")
            inexact = whole & (np.abs(floats) >= 2**53)
            parsed.problem(inexact, canon, "not_exact",
                           f"{label} is too large to be written with a decimal point or exponent "
                           "(above 2**53 only integer digits are exact)")
        ok = whole & ~inexact
        values[ok] = floats[ok].astype(np.int64)
    return values, missing


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
