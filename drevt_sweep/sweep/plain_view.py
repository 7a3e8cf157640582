"""Read-only attribute access to a configuration's resolved, plain config.

The sweep engine holds each configuration of a wave from its preparation to its completion, a
wave later. Holding its OmegaConf tree (~1,300 nodes, each pointing at its parent: cycles)
for that long moved every tree into the garbage collector's oldest generation, which only a
full collection frees: the engine ran one per wave (0.3-0.6 s each at 1,000 configurations).
What completion still reads of the config (``seed``, ``trace.name``; of Hydra's node the task
overrides and the group choices) is read from plain data instead, through this view, and the
tree dies young, freed by the cheap young collections (``batch.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator


class PlainView(Mapping):
    """``cfg.trace.name`` and ``cfg["trace"]["name"]`` over nested dicts, as a DictConfig reads
    (a missing key: ``AttributeError`` / ``KeyError``); lists and values as they are."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping) -> None:
        object.__setattr__(self, "_data", data)

    def __getattr__(self, key: str) -> Any:
        try:
            return _view(self._data[key])
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key: str, value) -> None:
        raise AttributeError(f"a released configuration is read-only ({key})")

    def __getitem__(self, key) -> Any:
        return _view(self._data[key])

    def __iter__(self) -> Iterator:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"PlainView({self._data!r})"


def _view(value) -> Any:
    return PlainView(value) if isinstance(value, Mapping) else value
