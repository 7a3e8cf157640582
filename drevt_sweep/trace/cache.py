"""On-disk cache of parsed traces, so that every seed and configuration of a sweep does not
re-parse the same file.

An entry is keyed by the sha256 of the file's bytes, the ``ReadOptions`` that shape the table
(all of them but ``rejects_path``, which only says where to copy the skipped rows) and a
fingerprint of the reader code, so a changed reader never serves a stale table. Each entry is
one ``.npz`` file holding the columns and the metadata as JSON. It is written to a temporary
file in the cache directory and moved into place with ``os.replace``: concurrent processes see
a complete entry or none, and two writers of one key write the same content. A cache that
cannot be written (read-only directory, full disk) only costs time: the table is returned all
the same, with a warning.

An entry is verified, never trusted: it carries the sha256 of its own content (every column's
dtype, shape and bytes, the queue names and the metadata), and a loaded entry must match it and
pass the same checks a reader's table passes (one row per job in every column, the dtypes of
``JobTable``, finite submit times in order, num_nodes >= 1, finite time limits > 0, queue codes
that name a queue, ``rows_kept`` rows, the file's own checksum, metadata that makes a
``TraceMeta``). An entry that fails -- truncated, foreign, edited, from a reader bug -- is
rebuilt from the trace with a ``RuntimeWarning`` naming the reason; it is never served and
never fatal.

In one process, the last tables verified are served again from memory (``load_trace``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from ..jobs import JobTable, Reject, TraceMeta
from . import ReadOptions, read_trace
from .source import checksum_of, read_bytes
from .table import write_rejects

CACHE_ENV = "DREVT_TRACE_CACHE"
FORMAT_VERSION = 5  # 5: time_limit_unstated, qos; 2: entries carry the sha256 of their content; 3: per-node requests, partitions; 4: exact (int64 or text) job ids


def default_cache_dir() -> Path:
    """``$DREVT_TRACE_CACHE``, else ``~/.cache/drevt_sweep/traces``."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "drevt_sweep" / "traces"


def load_trace(path, options: ReadOptions | None = None, cache_dir=None) -> JobTable:
    """``read_trace`` through the cache in ``cache_dir`` (default: ``default_cache_dir()``).

    A table this process has already verified or read for the same file content, options and
    cache directory is served again from memory (``_RECENT``): a loop over ``api.simulate_trace``
    paid ~10 ms a call to open and verify the same entry (KTH-SP2, 28k jobs), as much as a week
    of it takes to simulate. The file's checksum is still computed at every call (~0.3 ms), so
    an edited trace is read again, and the entry must be the file verified then (same inode,
    size and modification time), so a damaged or replaced entry is verified again. Each call
    gets its own copy of the columns (~0.1 ms for KTH-SP2): a caller that wrote into them would
    otherwise change what the next call gets, and read-only arrays are another type to numba
    (a second compile of every kernel they reach)."""
    options = options or ReadOptions()
    path = str(path)
    checksum = checksum_of(read_bytes(path))
    key = cache_key(checksum, options)
    directory = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    entry = directory / f"{key}.npz"
    recent = (key, path, str(entry))
    with _RECENT_LOCK:
        stamp, table = _RECENT.pop(recent, (None, None))
    if table is None or stamp != _stamp(entry):
        table = _load(entry, key, path, checksum)
        if table is None:
            table = read_trace(path, options)
            if table.meta.checksum != checksum:  # the file changed while we read it
                return table
            _store(entry, key, table)
            _remember(recent, entry, table)
            return _copy(table)
    _remember(recent, entry, table)
    if options.on_bad_row == "skip" and options.rejects_path:
        write_rejects(options.rejects_path, table.meta.rejects)
    return _copy(table)


RECENT_TABLES = 2  # a sweep or a loop works on one or two traces; a 1M-job table is ~150 MB
_RECENT: dict[tuple[str, str, str], tuple[tuple | None, JobTable]] = {}  # oldest first
_RECENT_LOCK = threading.Lock()  # (a report or a threaded loop may load from several threads)


def _copy(table: JobTable) -> JobTable:
    """The table with columns of its own (the kept one is never handed out)."""
    return table.replace(**{name: column.copy() for name, column in table.columns().items()})


def _stamp(entry: Path) -> tuple | None:
    """The entry file as it is now (None: there is none, e.g. the cache could not be written)."""
    try:
        info = entry.stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def _remember(recent: tuple[str, str, str], entry: Path, table: JobTable) -> None:
    stamp = _stamp(entry)
    with _RECENT_LOCK:
        _RECENT[recent] = (stamp, table)
        while len(_RECENT) > RECENT_TABLES:
            del _RECENT[next(iter(_RECENT))]


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


_NAMES = ("queue_names", "user_names", "group_names", "partition_names", "qos_names")  # the code columns' names, stored as text
_DTYPES = {  # the dtype kind of every JobTable column: i(nt), f(loat) or b(ool); job_id may also be U (text ids)
    "job_id": "i", "source_line": "i", "submit": "f", "begin": "f", "end": "f",
    "num_nodes": "i", "time_limit": "f", "actual_run_time": "f", "queue_code": "i",
    "exit_status": "i", "user_code": "i", "group_code": "i",
    "cores_per_node": "i", "gpus_per_node": "i", "memory_per_node": "f", "partition_code": "i",
    "time_limit_unstated": "b", "qos_code": "i",
}


def _content_digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over every stored array's name, dtype, shape and bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        if name == "content_sha256":
            continue
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _store(entry: Path, key: str, table: JobTable) -> None:
    arrays = {name: column for name, column in table.columns().items()}
    for names in _NAMES:
        arrays[names] = np.array(getattr(table, names), dtype=str)
    arrays["meta_json"] = np.array(json.dumps(_meta_to_json(table.meta, key)))
    arrays["content_sha256"] = np.array(_content_digest(arrays))
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


class _Invalid(Exception):
    """Why a cache entry cannot be served."""


def _load(entry: Path, key: str, path: str, checksum: str) -> JobTable | None:
    """The entry's table, or None when there is none; an invalid entry warns and gives None."""
    if not entry.is_file():
        return None
    try:
        return _verified(entry, key, path, checksum)
    except _Invalid as exc:
        reason = str(exc)
    except Exception as exc:  # noqa: BLE001 - a truncated or foreign file, bad metadata ...
        reason = f"unreadable ({type(exc).__name__}: {exc})"
    warnings.warn(
        f"trace cache entry {entry} is invalid ({reason[:300]}): rebuilt from {path}",
        RuntimeWarning,
        stacklevel=3,
    )
    return None


def _verified(entry: Path, key: str, path: str, checksum: str) -> JobTable:
    with np.load(entry, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    missing = [n for n in (*JobTable.COLUMNS, *_NAMES, "meta_json", "content_sha256")
               if n not in arrays]
    if missing:
        raise _Invalid(f"missing arrays: {', '.join(missing)}")
    if str(arrays["content_sha256"]) != _content_digest(arrays):
        raise _Invalid("its content does not match its sha256: the file was changed")
    meta = json.loads(str(arrays["meta_json"]))
    if not isinstance(meta, dict) or meta.pop("cache_key", None) != key:
        raise _Invalid("its metadata belongs to another key")
    if meta.get("checksum") != checksum:
        raise _Invalid("it was made from another file")
    meta["rejects"] = tuple(Reject(**reject) for reject in meta["rejects"])
    meta["path"] = path
    columns = {name: arrays[name] for name in JobTable.COLUMNS}
    names = {key: tuple(str(name) for name in arrays[key]) for key in _NAMES}
    _check_columns(columns, names, meta)
    return JobTable(**columns, **names, meta=TraceMeta(**meta))


def _check_columns(columns: dict[str, np.ndarray], names: dict[str, tuple], meta: dict) -> None:
    """The invariants every reader's table satisfies."""
    n = columns["submit"].shape
    for name, kind in _DTYPES.items():
        column = columns[name]
        if column.ndim != 1 or column.shape != n:
            raise _Invalid(f"column {name} has shape {column.shape}, not {n}")
        if column.dtype.kind != kind and not (name == "job_id" and column.dtype.kind == "U"):
            raise _Invalid(f"column {name} has dtype {column.dtype}")
    if meta.get("rows_kept") != n[0]:
        raise _Invalid(f"{n[0]} rows, but its metadata says {meta.get('rows_kept')}")
    submit = columns["submit"]
    if not np.isfinite(submit).all() or (n[0] > 1 and (np.diff(submit) < 0).any()):
        raise _Invalid("submit times are not finite and in order")
    if (columns["num_nodes"] < 1).any():
        raise _Invalid("a job asks for fewer than 1 node")
    limit = columns["time_limit"]
    if not (np.isfinite(limit) & (limit > 0)).all():
        raise _Invalid("a time limit is not finite and > 0")
    for what in ("queue", "partition"):
        codes = columns[f"{what}_code"]
        if n[0] and (codes.min() < 0 or codes.max() >= len(names[f"{what}_names"])):
            raise _Invalid(f"a {what} code names no {what}")
    for who in ("user", "group"):  # -1: unknown
        codes = columns[f"{who}_code"]
        if n[0] and (codes.min() < -1 or codes.max() >= len(names[f"{who}_names"])):
            raise _Invalid(f"a {who} code names no {who}")
    run_time = columns["actual_run_time"]
    if (run_time[~np.isnan(run_time)] < 0).any():
        raise _Invalid("a negative run time")


def _meta_to_json(meta: TraceMeta, key: str) -> dict:
    data = dataclasses.asdict(meta)
    data["rejects"] = [dataclasses.asdict(reject) for reject in meta.rejects]
    data["cache_key"] = key
    return data
