"""On-disk cache of parsed traces, so that every seed and configuration of a sweep does not
re-parse the same file.

An entry is keyed by the sha256 of the file's bytes, the ``ReadOptions`` that shape the table
(all of them but ``rejects_path``, which only says where to copy the skipped rows) and a
fingerprint of the reader code, so a changed reader never serves a stale table. Each entry is
one ``.npz`` file holding the columns and the metadata as JSON. It is written to a temporary
file in the cache directory and moved into place with ``os.replace``: concurrent processes see
a complete entry or none, and two writers of one key write the same content. A cache that
cannot be written (read-only directory, full disk) only costs time: the table is returned all
the same, with a warning. A corrupt entry is treated as missing and rewritten.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np

from ..jobs import JobTable, Reject, TraceMeta
from . import ReadOptions, read_trace
from .source import checksum_of, read_bytes
from .table import write_rejects

CACHE_ENV = "DREVT_TRACE_CACHE"
FORMAT_VERSION = 2  # 2: per-node requests and partitions (issue 14)


def default_cache_dir() -> Path:
    """``$DREVT_TRACE_CACHE``, else ``~/.cache/drevt_sweep/traces``."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "drevt_sweep" / "traces"


def load_trace(path, options: ReadOptions | None = None, cache_dir=None) -> JobTable:
    """``read_trace`` through the cache in ``cache_dir`` (default: ``default_cache_dir()``)."""
    options = options or ReadOptions()
    path = str(path)
    checksum = checksum_of(read_bytes(path))
    key = cache_key(checksum, options)
    directory = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    entry = directory / f"{key}.npz"
    table = _load(entry, key, path)
    if table is None:
        table = read_trace(path, options)
        if table.meta.checksum == checksum:  # the file did not change while we read it
            _store(entry, key, table)
    elif options.on_bad_row == "skip" and options.rejects_path:
        write_rejects(options.rejects_path, table.meta.rejects)
    return table


def cache_key(checksum: str, options: ReadOptions) -> str:
    settings = dataclasses.asdict(options)
    settings.pop("rejects_path", None)
    if not isinstance(settings.get("queues"), str):
        settings["queues"] = list(settings["queues"])
    text = json.dumps(
        {"file": checksum, "options": settings, "code": _code_fingerprint(), "v": FORMAT_VERSION},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:40]


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for source in sorted(here.glob("*.py")) + [here.parent / "jobs.py"]:
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()


def _store(entry: Path, key: str, table: JobTable) -> None:
    arrays = {name: column for name, column in table.columns().items()}
    arrays["queue_names"] = np.array(table.queue_names, dtype=str)
    arrays["partition_names"] = np.array(table.partition_names, dtype=str)
    arrays["meta_json"] = np.array(json.dumps(_meta_to_json(table.meta, key)))
    tmp = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            dir=entry.parent, prefix=f".{entry.stem}.", suffix=".tmp", delete=False
        ) as handle:
            tmp = handle.name
            np.savez(handle, **arrays)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, entry)
        tmp = None
    except OSError as exc:
        warnings.warn(
            f"trace cache not written ({entry.parent}): {exc}", RuntimeWarning, stacklevel=3
        )
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _load(entry: Path, key: str, path: str) -> JobTable | None:
    if not entry.is_file():
        return None
    try:
        with np.load(entry, allow_pickle=False) as stored:
            meta = json.loads(str(stored["meta_json"]))
            if meta.pop("cache_key") != key:
                return None
            columns = {name: stored[name] for name in JobTable.COLUMNS}
            queue_names = tuple(str(name) for name in stored["queue_names"])
            partition_names = tuple(str(name) for name in stored["partition_names"])
    except Exception:  # a truncated or foreign file: read the trace again
        return None
    meta["rejects"] = tuple(Reject(**reject) for reject in meta["rejects"])
    meta["path"] = path
    return JobTable(**columns, queue_names=queue_names, partition_names=partition_names,
                    meta=TraceMeta(**meta))


def _meta_to_json(meta: TraceMeta, key: str) -> dict:
    data = dataclasses.asdict(meta)
    data["rejects"] = [dataclasses.asdict(reject) for reject in meta.rejects]
    data["cache_key"] = key
    return data
