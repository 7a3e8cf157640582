"""MLflow's work in a helper process, so that it overlaps the sweep's own work.

Importing mlflow and opening a store cost about 2.5 s of CPU, and each seed's child run
25-35 ms of SQLAlchemy time; done in the sweep's own process they were 40-45% of a 100-seed
sweep's wall time (issue 5). One helper process does all of it instead. It starts with the
sweep; an existing sqlite store with its experiment is written without mlflow
(:mod:`.sqlite_tracker`), any other store imports mlflow when it opens; the
sweep sends it commands and goes on (a configuration's child runs, one command written in one
transaction by :mod:`.bulk`, while the outputs and figures are made),
looks between seed results whether the store failed to open (then it stops at once), and waits
for the helper only when a configuration's result is final.

Commands run one at a time, in order, on a :class:`~drevt_sweep.tracking.Tracker` in the
helper. Runs are named by handles that the sweep chooses, so no command waits for MLflow's run
id. The helper is a forked process only when the console script starts it, first thing (fork is
safe then: one thread, nothing open); elsewhere (not Linux, a joblib launcher's worker, a
library caller) it is a thread of this process: same commands, same order, less overlap.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import contextlib
import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
import uuid
from dataclasses import replace
from typing import Mapping

from ..errors import DrevtError
from .store import TAG_HANDLE, Tracker, check_reachable


class TrackingError(Exception):
    """A tracking command failed in the helper; ``details`` holds the helper's traceback."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details

    def __reduce__(self):
        return type(self), (str(self), self.details)


# ---------------------------------------------------------------- in the helper
_trackers: dict[tuple, Tracker] = {}
_run_ids: dict[str, str] = {}  # handle -> MLflow run id
_open_failures: dict[tuple, str] = {}
_in_helper_process = False


def _helper_started(parent_pid: int, own_pid) -> None:
    """Ctrl-C, SIGTERM and SIGHUP are the sweep's to handle (it then asks the helper to mark
    runs KILLED, so the helper must outlive them: SLURM signals every process of a job), and a
    helper whose sweep has died leaves at once."""
    global _in_helper_process
    _in_helper_process = True
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    own_pid.value = os.getpid()

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="drevt-tracking-watch", daemon=True).start()


def _command(fn, *args):
    """Run one command; its error comes back as a plain exception that always pickles
    (MLflow's and SQLAlchemy's do not all), the user-facing ones keeping their type."""
    try:
        return fn(*args)
    except DrevtError as exc:
        kind = type(exc) if type(exc).__init__ is Exception.__init__ else DrevtError
        raise kind(str(exc)) from None
    except TrackingError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported by TrackingService.wait
        raise TrackingError(_store_of(args) + _summary(exc), traceback.format_exc()) from None


def _store_of(args: tuple) -> str:
    """``tracking store PATH: `` when the command names a store (its key comes first)."""
    key = args[0] if args and isinstance(args[0], tuple) and args[0] else None
    if key is None or not isinstance(key[0], str):
        return ""
    uri = key[0]
    return f"tracking store {uri[len('sqlite:///'):] if uri.startswith('sqlite:///') else uri}: "


def _summary(exc: BaseException) -> str:
    """One line: the database's own error where there is one (SQLAlchemy's message adds the
    statement and its parameters), else the first line of the exception's."""
    import sqlite3

    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, sqlite3.Error):
            return f"{type(cause).__name__}: {cause}"
        cause = cause.__cause__ or cause.__context__
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


@contextlib.contextmanager
def _no_collection():
    """Python's cyclic garbage collector off while a helper process imports mlflow and opens
    a store (a third of their CPU time, measured), then the survivors frozen so that later
    collections skip them. Only in the helper process: a thread must not switch it off for
    the sweep it shares a process with."""
    if not _in_helper_process:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _warm_up() -> None:
    """The helper's first job: the stdlib tracker's module, not mlflow. An existing sqlite
    store with its experiment (every run but a store's first) is written without mlflow
    (:mod:`.sqlite_tracker`: 3.0-3.6 s of the helper's CPU in a 100-seed run was mlflow's
    import and store); another store imports it when it opens (``_open``)."""
    from . import sqlite_tracker  # noqa: F401


def _open(key: tuple) -> None:
    from .sqlite_tracker import SqliteTracker

    uri, experiment, artifact_root = key
    if key not in _trackers:
        _open_failures.pop(key, None)
        try:
            opened = SqliteTracker.open(uri, experiment, artifact_root)
            if opened is None:
                with _no_collection():  # imports mlflow (~1.3 s) and its SQL store (~1.7 s)
                    opened = Tracker.open(uri, experiment, artifact_root)
            _trackers[key] = opened
        except Exception as exc:
            _open_failures[key] = f"{type(exc).__name__}: {exc}"
            raise


def _tracker(key: tuple) -> Tracker:
    if key in _open_failures:  # reported once, by the open itself: not retried per command
        raise TrackingError(f"the tracking store did not open ({_open_failures[key]})")
    if key not in _trackers:  # a helper started again after the first one died
        _open(key)
    return _trackers[key]


def _run(key: tuple, handle: str) -> str:
    if handle not in _run_ids and _restarts:  # a helper started after one died: ask the store
        found = _tracker(key).run_with_handle(handle)
        if found is not None:
            _run_ids[handle] = found
    if handle not in _run_ids:
        raise TrackingError("this run is unknown to the tracking helper: it was never created "
                            "(see the first error)")
    return _run_ids[handle]


def _start_run(key: tuple, handle: str, name: str, tags: dict, parent: str | None) -> None:
    parent_id = _run(key, parent) if parent else None
    if _restarts and handle not in _run_ids:  # sent again after a helper died: not twice
        found = _tracker(key).run_with_handle(handle)
        if found is not None:
            _run_ids[handle] = found
            return
    _run_ids[handle] = _tracker(key).start_run(name, {**tags, TAG_HANDLE: handle}, parent_id)


def _log_runs(key: tuple, handles: list[str], records: list) -> None:
    """Finished runs, all at once (``records``: :class:`~.bulk.RunRecord` whose ``parent_id``
    is a handle). A helper started after one died completes those the dead one created."""
    from dataclasses import replace

    existing = {}
    if _restarts:
        for index, handle in enumerate(handles):
            found = _run_ids.get(handle) or _tracker(key).run_with_handle(handle)
            if found is not None:
                existing[index] = found
    records = [replace(r, tags=_with_run_ids({**r.tags, TAG_HANDLE: handle}),
                       parent_id=_run(key, r.parent_id) if r.parent_id else None,
                       artifacts=tuple((str(p), f) for p, f in r.artifacts))
               for r, handle in zip(records, handles)]
    run_ids = _tracker(key).log_runs(records, existing)
    _run_ids.update(zip(handles, run_ids))


def _with_run_ids(tags: dict) -> dict:
    """A ``drevt_sweep_run_id`` tag given as the sweep run's handle carries its MLflow id (the
    engine tags each configuration run as it is written, not all of them at the end: one
    client call per configuration, seconds per thousand)."""
    from .store import TAG_SWEEP_RUN

    value = tags.get(TAG_SWEEP_RUN)
    if value in _run_ids:
        return {**tags, TAG_SWEEP_RUN: _run_ids[value]}
    return tags


def _log(key: tuple, handle: str, metrics, params, tags) -> None:
    _tracker(key).log(_run(key, handle), metrics=metrics, params=params, tags=tags)


def _log_trace_input(key: tuple, handle: str, *dataset) -> None:
    _tracker(key).log_trace_input(_run(key, handle), *dataset)


def _log_artifact(key: tuple, handle: str, path: str, folder: str | None) -> None:
    _tracker(key).log_artifact(_run(key, handle), path, folder)


def _tag_runs(key: tuple, run_ids: list[str], tags: dict) -> None:
    for run_id in run_ids:
        _tracker(key).log(run_id, tags=tags)


def _finish(key: tuple, handle: str, status: str) -> None:
    _tracker(key).finish(_run(key, handle), status)


def _run_id(key: tuple, handle: str) -> str | None:
    try:
        return _run(key, handle)
    except Exception:  # noqa: BLE001 - never created, or the store did not open
        return None


def _run_ids_of(key: tuple, handles: list[str]) -> list[str | None]:
    return [_run_id(key, handle) for handle in handles]


def _kill_running(key: tuple, sweep_id: str) -> int:
    return _tracker(key).kill_running(sweep_id)


def _prepare_ui(key: tuple) -> str:
    tracker = _tracker(key)
    tracker.prepare_ui()
    return tracker.experiment_id


def _finished_seed_runs(key: tuple, config_hash_value: str) -> dict[str, dict[str, float]]:
    runs = _tracker(key).finished_seed_runs(config_hash_value)
    return {run_key: dict(run.data.metrics) for run_key, run in runs.items()}


# ---------------------------------------------------------------- in the sweep
_helper: cf.Executor | None = None
_helper_pid = None  # the helper process's pid, once it has started (shared memory)
_restarts = 0  # helpers started because the one before died (it lost its run ids)


def start_helper(fork: bool = False) -> None:
    """Start the helper now (it imports mlflow only for a store that needs it, ``_open``). ``fork``: a helper process (the
    console script asks for one first thing, while it is the only thread); otherwise, and
    when :class:`TrackingService` starts the helper on first use, a thread."""
    global _helper, _helper_pid
    if _helper is not None:
        return
    if fork and sys.platform == "linux" and threading.active_count() == 1:
        # fork: no re-import of this program in the helper, and its exit skips the
        # interpreter's slow teardown of mlflow's thousands of modules.
        context = multiprocessing.get_context("fork")
        _helper_pid = context.Value("i", 0, lock=False)
        _helper = cf.ProcessPoolExecutor(
            max_workers=1, mp_context=context,
            initializer=_helper_started, initargs=(os.getpid(), _helper_pid),
        )
        atexit.register(_let_go_of_helper)
    else:
        _helper = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="drevt-tracking")
    _helper.submit(_warm_up)


def _let_go_of_helper() -> None:
    """At exit (after ``concurrent.futures`` has stopped its executors, before the interpreter
    tears its modules down): drop the helper's executor now. Dropped during the teardown
    instead, its weakref callback found ``multiprocessing`` already gone and printed a
    traceback (``'NoneType' object has no attribute 'util'``) after a sweep that had ended
    cleanly (seen once in tests/test_sweep_faults.py)."""
    global _helper
    helper, _helper = _helper, None
    if helper is not None:
        helper.shutdown(wait=False)


def stop_helper() -> None:
    """Stop the helper at once (tracking turned out to be off): a helper process is killed
    rather than left to finish importing mlflow on a core the sweep needs."""
    global _helper
    if _helper is None:
        return
    helper, _helper = _helper, None
    if isinstance(helper, cf.ProcessPoolExecutor):
        # Python >= 3.14 has ProcessPoolExecutor.kill_workers(); before, its process table.
        kill = getattr(helper, "kill_workers", None)
        if kill is not None:
            kill()
        else:
            for process in list((getattr(helper, "_processes", None) or {}).values()):
                process.kill()
    helper.shutdown(wait=False, cancel_futures=True)


def _submit_to_helper(fn, *args) -> cf.Future:
    start_helper()
    try:
        return _helper.submit(_command, fn, *args)
    except cf.BrokenExecutor:  # the helper died (killed, out of memory): start a new one
        _restart_helper()
        return _helper.submit(_command, fn, *args)


def _helper_died() -> bool:
    return bool(getattr(_helper, "_broken", False))  # ProcessPoolExecutor's own flag


def _restart_helper() -> None:
    """A new helper (a thread: this process has threads by now) in place of a dead one; it
    finds the runs the dead one created by their handle tags."""
    global _helper, _restarts
    _helper = None
    _restarts += 1
    start_helper()


BATCH_RECORDS = 2048  # runs queued with log_runs(batch=True) before they are sent anyway


class TrackingService:
    """The sweep's handle on one store and experiment; MLflow calls run in the helper.

    Every method but :meth:`wait`, :meth:`run_id` and :meth:`finished_seed_runs` returns at
    once; :meth:`wait` raises the first error of the commands sent since the last wait."""

    def __init__(self, uri: str, experiment: str, artifact_root: str | None = None) -> None:
        check_reachable(uri)  # a tracking server that does not answer fails here, at once
        self.uri = uri
        self._key = (uri, experiment, artifact_root)
        # Commands sent since the last wait, kept to be sent again if the helper dies.
        self._pending: list[tuple[cf.Future, object, tuple]] = []
        self._restarts_seen = _restarts
        self._open_runs: list[str] = []  # handles of runs started and not yet finished
        # Finished runs queued by ``log_runs(..., batch=True)``, sent as one command before
        # any other command, at ``wait`` or once ``BATCH_RECORDS`` are queued.
        self._queued: list = []
        self._queued_handles: list[str] = []
        self.flushes = 0  # queued runs sent so far (times): a caller can tell its runs went
        self._send(_open, self._key)

    @classmethod
    def open(cls, uri: str, experiment: str, artifact_root: str | None = None) -> TrackingService:
        """Open the store and the experiment, and wait until they exist."""
        service = cls(uri, experiment, artifact_root)
        service.wait()
        return service

    def _send(self, fn, *args) -> cf.Future:
        self._flush()  # (queued runs first: commands keep their order)
        if _helper_died():
            _restart_helper()
        if self._restarts_seen != _restarts:
            self._send_lost_again()
        future = _submit_to_helper(fn, *args)
        self._pending.append((future, fn, args))
        return future

    def _send_lost_again(self) -> None:
        """After the helper died: its unfinished commands go to the new one, in their order,
        before anything else (the configuration goes on; no run is lost or left RUNNING)."""
        self._restarts_seen = _restarts
        cf.wait([future for future, _, _ in self._pending])  # a dead helper's fail at once
        pending, self._pending = self._pending, []
        for future, fn, args in pending:
            if isinstance(future.exception(), cf.BrokenExecutor):
                future = _submit_to_helper(fn, *args)
            self._pending.append((future, fn, args))

    def start_run(self, name: str, tags: Mapping[str, str], parent_id: str | None = None) -> str:
        """A new run's handle (``parent_id``: the parent's handle)."""
        handle = uuid.uuid4().hex
        self._send(_start_run, self._key, handle, name, dict(tags), parent_id)
        self._open_runs.append(handle)
        return handle

    def log(self, run_id: str, metrics=None, params=None, tags=None) -> None:
        self._send(_log, self._key, run_id, metrics, params, tags)

    def log_runs(self, records: list, batch: bool = False) -> list[str]:
        """Handles of finished runs written at once (``records``: :class:`~.bulk.RunRecord`,
        ``parent_id`` a handle): never left RUNNING, whatever happens to the helper.

        ``batch``: queued with the runs of other calls and written with them in one command
        (one transaction in an SQL store) at the next :meth:`wait`, before any other command,
        or once ``BATCH_RECORDS`` are queued. The sweep engine queues a wave's configurations
        this way: one transaction per configuration cost the helper ~20 ms of CPU each (its
        commit, two experiment lookups), more than the sweep process spends on it."""
        handles = [uuid.uuid4().hex for _ in records]
        if not records:
            return handles
        if not batch:
            self._send(_log_runs, self._key, handles, list(records))
            return handles
        base = len(self._queued)  # a record's parent_index points into the one list sent
        self._queued += [r if r.parent_index is None else replace(r, parent_index=base + r.parent_index)
                         for r in records]
        self._queued_handles += handles
        if len(self._queued) >= BATCH_RECORDS:
            self._flush()
        return handles

    def flush(self) -> None:
        """Send the queued runs now: the helper writes them while the caller goes on
        (:meth:`wait` waits for them)."""
        self._flush()

    def discard_queued(self) -> int:
        """Drop the queued runs not sent yet (an interrupt kills their configurations); how many."""
        count = len(self._queued)
        self._queued, self._queued_handles = [], []
        return count

    def _flush(self) -> None:
        """Send the queued runs, if any, as one command."""
        if not self._queued:
            return
        self.flushes += 1
        records, self._queued = self._queued, []
        handles, self._queued_handles = self._queued_handles, []
        self._send(_log_runs, self._key, handles, records)

    def log_trace_input(self, run_id: str, name: str, checksum: str, path: str, jobs: int) -> None:
        self._send(_log_trace_input, self._key, run_id, name, checksum, str(path), jobs)

    def log_artifact(self, run_id: str, path: str | os.PathLike, folder: str | None = None) -> None:
        self._send(_log_artifact, self._key, run_id, str(path), folder)

    def tag_runs(self, run_ids: list[str], tags: Mapping[str, str]) -> None:
        """Tag runs by their MLflow ids (runs of earlier jobs, e.g. a sweep's parents)."""
        self._send(_tag_runs, self._key, list(run_ids), dict(tags))

    def finish(self, run_id: str, status: str = "FINISHED") -> None:
        self._send(_finish, self._key, run_id, status)
        if run_id in self._open_runs:
            self._open_runs.remove(run_id)

    def finish_open_runs(self, status: str) -> None:
        """Close every run started and not yet finished (children before their parent), so
        that an interrupted or failed configuration leaves none RUNNING."""
        for handle in reversed(list(self._open_runs)):
            self.finish(handle, status)

    def _ask(self, fn, *args, timeout: float | None = None):
        """``fn``'s answer from the helper, after the commands sent before it. A helper that
        dies while it is asked is replaced, the commands it took are sent again, and so is
        the question (an answer never fails because of a helper's death alone)."""
        for attempt in range(3):
            self._flush()
            if _helper_died():
                _restart_helper()
            if self._restarts_seen != _restarts:
                self._send_lost_again()
            try:
                return _submit_to_helper(fn, *args).result(timeout)
            except cf.BrokenExecutor:
                if attempt == 2:
                    raise

    def run_id(self, handle: str) -> str | None:
        """MLflow's id of a run (``None`` if it was never created); waits for the helper."""
        return self._ask(_run_id, self._key, handle)

    def run_ids(self, handles: list[str]) -> list[str | None]:
        """:meth:`run_id` of many runs, in one round trip to the helper."""
        return self._ask(_run_ids_of, self._key, list(handles))

    def finished_seed_runs(self, config_hash_value: str) -> dict[str, dict[str, float]]:
        """The metrics of FINISHED seed runs of a configuration, by run key (for ``resume``)."""
        self.wait()
        return self._ask(_finished_seed_runs, self._key, config_hash_value)

    def prepare_ui(self) -> str:
        """Tag the experiment for the UI's view (``ui.prepare``) in the helper, where MLflow
        is imported and the store open already; returns the experiment's id (waits)."""
        return self._ask(_prepare_ui, self._key)

    def kill_running(self, sweep_id: str, timeout: float | None = None) -> int:
        """Mark KILLED every run of sweep ``sweep_id`` still RUNNING; waits (``timeout``)."""
        return self._ask(_kill_running, self._key, sweep_id, timeout=timeout)

    def raise_if_failed(self) -> None:
        """Raise the error of a command that has already failed, without waiting."""
        for future, _, _ in self._pending:
            if (future.done() and future.exception() is not None
                    and not isinstance(future.exception(), cf.BrokenExecutor)):  # sent again
                self.wait()  # the others first, then the first error

    def wait(self, timeout: float | None = None) -> None:
        """Wait for every command sent so far; raise the first one's error, if any. Commands
        that a helper took with it when it died are sent again to a new one first."""
        self._flush()
        for _ in range(3):
            if _helper_died():
                _restart_helper()
            if self._restarts_seen != _restarts:
                self._send_lost_again()
            futures = [future for future, _, _ in self._pending]
            _, not_done = cf.wait(futures, timeout=timeout)
            if not_done:
                self._pending = []
                raise TimeoutError(f"the tracking store did not finish writing in {timeout} s")
            if not any(isinstance(f.exception(), cf.BrokenExecutor) for f in futures):
                break
        pending, self._pending = self._pending, []
        for future, _, _ in pending:
            error = future.exception()
            if error is not None:
                raise error
