"""Numeric columns to float64 arrays, vectorised, remembering which values were not numbers.

Readers keep every number as float64 until validation (so that NaN can mark a missing value);
the table builder checks ranges and whole numbers and only then casts counts to int64. Ids and
statuses never go through float64 (``convert.exact_whole``): 2**53 + 1 would become 2**53.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class NumberColumn:
    values: np.ndarray  # float64; NaN where missing or not a number
    missing: np.ndarray  # bool: the value was empty
    not_a_number: np.ndarray  # bool: non-empty text that is not a number ("NaN" included)


def parse_numbers(values: pd.Series) -> NumberColumn:
    n = len(values)
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values):
        floats = values.to_numpy(dtype=np.float64, na_value=np.nan)
        return NumberColumn(floats, np.isnan(floats), np.zeros(n, dtype=bool))
    text = values.astype("str").str.strip()
    missing = (values.isna() | (text == "")).to_numpy()
    floats = pd.to_numeric(text.where(~missing, None), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan
    )
    return NumberColumn(floats, missing, np.isnan(floats) & ~missing)
