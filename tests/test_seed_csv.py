"""seed_metrics.csv without pandas: byte for byte ``pd.DataFrame(rows).to_csv(index=False)``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drevt_sweep.sweep.seed_csv import seed_metrics_csv

KEYS = st.sampled_from(["seed", "wait_mean", "utilization", "a,b", 'q"x', "queue_wait_mean.long", " s"])
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
NUMBERS = st.one_of(
    FLOATS,
    st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
    st.integers(min_value=-1000, max_value=1000),
    FLOATS.map(np.float64),
)
ANY = st.one_of(NUMBERS, st.booleans(), st.none(), st.text(max_size=5), st.integers(min_value=-5, max_value=5).map(np.int64))


def _same_keys_rows(draw_keys, values):
    return st.lists(st.fixed_dictionaries({k: values for k in draw_keys}), min_size=1, max_size=4)


@st.composite
def metric_rows(draw, values=NUMBERS):
    """Rows of one set of keys (the usual case), or each row its own keys (the pandas path)."""
    keys = draw(st.lists(KEYS, min_size=1, max_size=5, unique=True))
    if draw(st.booleans()):
        return draw(_same_keys_rows(keys, values))
    return draw(st.lists(st.dictionaries(KEYS, values, max_size=4), max_size=4))


@settings(max_examples=400, deadline=None)
@given(metric_rows())
def test_numbers_are_written_as_pandas_writes_them(rows):
    assert seed_metrics_csv(rows) == pd.DataFrame(rows).to_csv(index=False)


@settings(max_examples=200, deadline=None)
@given(metric_rows(values=ANY))
def test_any_value_is_written_as_pandas_writes_it(rows):
    assert seed_metrics_csv(rows) == pd.DataFrame(rows).to_csv(index=False)


@pytest.mark.parametrize("row", [
    {"seed": 0, "wait_mean": 32139.25820568928, "users": 41.0, "bsld_p95": float("nan")},
    {"seed": 3, "makespan": float("inf"), "utilization": np.float64(0.56), "jobs": 7},
])
def test_a_seed_row_of_numbers_does_not_go_through_pandas(row, monkeypatch):
    """The point of the module: the usual rows never build a DataFrame."""
    expected = pd.DataFrame([row, row]).to_csv(index=False)

    def refuse(*args, **kwargs):
        raise AssertionError("pandas was used")

    monkeypatch.setattr(pd, "DataFrame", refuse)
    assert seed_metrics_csv([row, row]) == expected
