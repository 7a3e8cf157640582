"""``seed_metrics.csv``'s text without pandas, byte for byte what ``to_csv`` writes.

A configuration's ``seed_metrics.csv`` is a header and one row per seed, written by
``pd.DataFrame(rows).to_csv(index=False)``: 3-4 ms of pandas for a one-row file, per
configuration of a sweep (issue 23 item 2). The rows are nearly always the simple case, which is
written here by the rules pandas follows for it:

* the columns are the rows' keys, when every row has the same keys in the same order (pandas
  takes their union in first-seen order; a key some row lacks would be a NaN cell and change
  the column's dtype);
* a column of Python ints is int64, each written with ``str``; a column of floats (with maybe
  some ints) is float64: each value as ``float`` written as numpy writes a float64 as text
  (``ndarray.astype(str)``, the shortest repr that reads back; ``inf``, ``-inf``), a NaN as the
  empty cell (``na_rep=""``);
* cells and names go through the ``csv`` module with pandas' own settings (``QUOTE_MINIMAL``,
  ``"`` doubled, lines ended by ``os.linesep``).

Anything else (strings, bools, None, numpy scalars other than float64, ints beyond float64's
exact range mixed with floats, rows with differing keys, no rows) is handed to pandas itself.
``tests/test_seed_csv.py`` holds this to pandas on generated rows.
"""

from __future__ import annotations

import csv
import io
import math
import os

import numpy as np

_EXACT = 2 ** 53  # every int of at most this size is one float64 exactly
_INT64 = (-2 ** 63, 2 ** 63 - 1)


def seed_metrics_csv(rows: list[dict]) -> str:
    """``pd.DataFrame(rows).to_csv(index=False)``, from the rows themselves when they are the
    simple case (see the module), else by pandas."""
    columns = _columns(rows)
    cells = None if columns is None else [_column_cells([row[k] for row in rows]) for k in columns]
    if cells is None or any(c is None for c in cells):
        import pandas as pd

        return pd.DataFrame(rows).to_csv(index=False)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=os.linesep, quoting=csv.QUOTE_MINIMAL)
    writer.writerow(columns)
    writer.writerows(zip(*cells))
    return out.getvalue()


def _columns(rows: list[dict]) -> list[str] | None:
    """The rows' keys when every row has the same string keys in the same order, else None."""
    if not rows:
        return None
    keys = list(rows[0])
    if not keys or not all(type(k) is str for k in keys):
        return None
    if any(list(row) != keys for row in rows[1:]):
        return None
    return keys


def _column_cells(values: list) -> list[str] | None:
    """One column's cells as pandas writes an int64 or float64 column; None for any other."""
    kinds = {type(v) for v in values}
    if kinds == {int}:
        if all(_INT64[0] <= v <= _INT64[1] for v in values):
            return [str(v) for v in values]
        return None
    if not kinds <= {int, float, np.float64}:
        return None
    if any(type(v) is int and abs(v) > _EXACT for v in values):
        return None
    return [_float_cell(float(v)) for v in values]


def _float_cell(value: float) -> str:
    """A float64 cell: empty for NaN, else numpy's text of it (the shortest round-trip repr)."""
    if math.isnan(value):
        return ""
    return str(np.float64(value))
