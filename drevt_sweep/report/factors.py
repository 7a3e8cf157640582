"""What a sweep varied: its swept keys, which of them are numeric, and the configurations that
share everything but one of them.

A key is *swept* when its value differs between configurations and that is not only because a
config group chose another option: ``run_time.stddev`` differs between ``run_time=actual`` and
``run_time=lognormal`` but follows the option's name, so it is not swept; ``system.total_nodes``
differing within ``system=custom`` is. A swept key is *numeric* when every configuration's value
reads as a number (booleans excepted); the report plots each metric against it. Works on the
``params`` dict of the report's records (flattened config values as strings); linear in the
number of configurations.
"""

from __future__ import annotations

from typing import Sequence

MISSING = "—"


def _group(key: str) -> str:
    return key.split(".", 1)[0]


def swept_keys(records: Sequence) -> list[str]:
    """The keys the sweep varied (see the module docstring), in the configs' key order."""
    keys = list(dict.fromkeys(k for r in records for k in r.params))
    swept = []
    for key in keys:
        values = {r.params.get(key, MISSING) for r in records}
        if len(values) < 2:
            continue
        name_key = f"{_group(key)}.name"
        if key == name_key or name_key not in keys:
            swept.append(key)
            continue
        by_name: dict[str, set] = {}
        for r in records:
            by_name.setdefault(r.params.get(name_key, MISSING), set()).add(r.params.get(key, MISSING))
        if any(len(v) > 1 for v in by_name.values()):  # varies within one option: swept itself
            swept.append(key)
    return swept


def as_number(text) -> float | None:
    """A param's value as a float, or None (booleans and words are not numbers)."""
    if text is None or str(text) in ("True", "False", "None", "null", MISSING):
        return None
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value == value else None


def numeric_keys(records: Sequence, swept: Sequence[str] | None = None) -> list[str]:
    """The swept keys whose every value (among records that have the key) is a number, with at
    least two distinct values; a group's ``name`` never counts."""
    out = []
    for key in swept_keys(records) if swept is None else swept:
        if key.endswith(".name"):
            continue
        values = [r.params.get(key) for r in records if key in r.params]
        numbers = [as_number(v) for v in values]
        if values and all(n is not None for n in numbers) and len(set(numbers)) >= 2:
            out.append(key)
    return out


def short_key(key: str) -> str:
    """``system.total_nodes`` -> ``total_nodes`` (the group is implied in a column header)."""
    return key.split(".", 1)[1] if "." in key else key


def others_label(record, keys: Sequence[str]) -> str:
    """The values of ``keys`` for one record, as a line's legend text (``policy=easy · ...``)."""
    parts = []
    for key in keys:
        value = record.params.get(key, MISSING)
        parts.append(value if key.endswith(".name") else f"{short_key(key)}={value}")
    return " · ".join(parts) or "all configurations"
