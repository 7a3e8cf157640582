"""From a composed configuration (any mapping with ``trace``, ``format``, ``timezone`` and
``policy`` sections: a Hydra ``DictConfig`` or a stored ``config.yaml``) to how its trace is read.

Shared by the sweep app and the report, which re-reads a finished sweep's trace; it lives here,
below both, so that neither imports the other.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from . import ReadOptions


def _value(node):
    """Enum members come back from structured configs as Enums; we want their names."""
    return getattr(node, "value", node)


def resolve_trace_path(path: str, root: str) -> Path:
    """``pkg://drevt_sweep/...`` names a bundled file; relative paths start at the project root."""
    if path.startswith("pkg://"):
        package, _, inner = path[len("pkg://") :].partition("/")
        return Path(str(resources.files(package).joinpath(inner)))
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else Path(root) / candidate


def read_options(cfg) -> ReadOptions:
    queues = cfg.format.queues
    if queues is None:
        queue_filter: tuple[str, ...] | str = "default"
    elif list(queues) == ["all"]:
        queue_filter = "all"
    else:
        queue_filter = tuple(str(q) for q in queues)
    return ReadOptions(
        trace_format=_value(cfg.format.name),
        timestamp_format=_value(cfg.format.timestamp_format),
        timezone=None if cfg.timezone.name is None else str(cfg.timezone.name),
        queues=queue_filter,
        on_bad_row=_value(cfg.format.on_bad_row),
        # A simulated policy re-schedules a replay trace with its historical run times.
        force_simulation=not cfg.policy.replay,
        swf_missing_time_limit=_value(cfg.format.swf_missing_time_limit),
    )


def trace_file_problems(cfg) -> list[str]:
    """What is wrong with a configuration's trace file, before anything runs: the checks
    ``drevt-sim`` makes (``files.check_input``: a directory, a FIFO, a device, a broken link
    ... each with its own message), a catalogue trace that is missing (how to fetch it) or is
    not the catalogue's file (``catalogue.verify``)."""
    from ..errors import TraceError
    from ..files import check_input
    from .catalogue import CATALOGUE, missing_hint, verify

    try:
        raw = cfg.trace.path
    except Exception:  # noqa: BLE001 - ??? is Hydra's own, clearer message
        return []
    if str(raw).startswith(("http://", "https://")):
        return []
    path = resolve_trace_path(str(raw), str(cfg.paths.root))
    name = str(cfg.trace.name)
    try:
        check_input(str(path))
    except TraceError as exc:
        if name in CATALOGUE and not os.path.lexists(path):
            return [f"trace={name}: {missing_hint(name)}"]
        where = "" if Path(str(raw)).is_absolute() else f" (relative to paths.root={cfg.paths.root})"
        return [f"trace.path={raw}: {exc.reason}{where}"]
    wrong = verify(name, path)
    return [f"trace={name}: {wrong}"] if wrong else []
