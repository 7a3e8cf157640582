"""Running pandas' C CSV parser over a trace's text.

pandas does the heavy lifting (about 5M values/s); this wrapper turns its exceptions into
``TraceError``s and checks that it saw exactly the rows the record scan found, so that every
array entry lines up with its source line.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd

from ..errors import TraceError
from ..files import csv_uncell
from .records import Records


def read_frame(data: bytes, records: Records, text_columns=(), exact_columns=(), **options) -> pd.DataFrame:
    """Parse ``data`` with ``pd.read_csv`` (plus ``options``); one frame row per data record.

    ``records`` are the data records (header excluded) the frame must line up with.
    ``text_columns`` must keep their exact text (queue names like ``01``); they are re-read as
    text only when pandas inferred numbers for them, because forcing ``dtype=str`` up front
    costs more than the rest of a column's parsing. ``exact_columns`` (job ids) must keep
    every digit: they are re-read as text unless pandas read them as int64 (a float64 column
    -- any empty cell makes one -- holds integers exactly only up to 2**53).
    """
    settings = dict(
        engine="c",
        index_col=False,
        keep_default_na=False,
        na_values=[""],
        skip_blank_lines=True,
    )
    settings.update(options)
    frame = _read_csv(data, settings)
    numeric = [name for name in text_columns if not _is_text(frame[name])]
    numeric += [name for name in exact_columns
                if not _is_text(frame[name]) and frame[name].dtype != np.int64 and name not in numeric]
    if numeric:
        again = dict(settings, usecols=numeric, dtype={name: str for name in numeric})
        as_text = _read_csv(data, again)
        for name in numeric:
            frame[name] = as_text[name]
    if len(frame) != len(records):
        line = int(records.lines[min(len(frame), len(records) - 1)]) if len(records) else None
        raise TraceError(
            f"the file could not be split into rows consistently ({len(frame)} parsed, "
            f"{len(records)} found); check the quoting near this line",
            line=line,
        )
    return frame


def _read_csv(data: bytes, settings: dict) -> pd.DataFrame:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ragged rows are reported by the record scan
            return pd.read_csv(io.BytesIO(data), **settings)
    except pd.errors.EmptyDataError:
        raise TraceError("no rows to read") from None
    except Exception as exc:  # a third-party parser on untrusted input: report, never crash
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TraceError(f"cannot parse the file: {first_line}") from None


def _is_text(column: pd.Series) -> bool:
    return pd.api.types.is_string_dtype(column.dtype) or column.isna().all()


def factorize_names(values: pd.Series, unescape: bool = False) -> tuple[np.ndarray, list[str]]:
    """Queue-like text to (int64 codes, names); surrounding spaces are dropped and a missing
    value becomes the name ''. ``unescape``: undo ``files.csv_cell`` (a ``'`` put in front of a
    formula-like name by our own CSV writers), so that a schedule CSV reads back exactly."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    names = [str(name).strip() for name in uniques] + [""]
    if unescape:
        names = [csv_uncell(name) for name in names]
    distinct = list(dict.fromkeys(names))
    remap = np.array([distinct.index(name) for name in names], dtype=np.int64)
    codes = remap[np.where(codes < 0, len(names) - 1, codes)]
    return codes, distinct
