"""Whether the ``drevt-sweep`` command that left a run RUNNING is still alive.

A live sweep holds a shared ``flock`` on a file named by its sweep id in a folder beside the
store (``mlflow.db.live/<sweep id>.lock``); a sweep that wonders whether another one is gone
tries to take that lock exclusively. The kernel releases a lock when its holder ends, however it
ends (SIGKILL, a crash, the out-of-memory killer), and a lock is a property of the file, so the
answer is the same from any process, any PID namespace (two containers of one pod) and any host
name, wherever the folder is one file system. Host name + pid + start time, read in the
asker's own ``/proc``, was fooled by PID namespaces: a live sweep in another container was
declared dead and its runs marked KILLED.

Every process that creates runs under a sweep id (the sweep itself, a joblib launcher's workers)
holds the lock, so a sweep is "gone" only when none of them is left. No lock file means there is
no way to tell (a sweep of an older drevt-sweep, or one that kept its locks elsewhere): its runs
are left alone. A store that is not an sqlite file (a tracking server, PostgreSQL) keeps the
lock files in this machine's temporary folder, so only sweeps that share it (this machine, or
containers sharing its ``/tmp``) can be told dead; the runs of others stay RUNNING.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import tempfile
import uuid
from pathlib import Path

SUFFIX = ".lock"
_held: dict[tuple[str, str], int] = {}  # (folder, sweep id) -> the descriptor holding its lock


def new_sweep_id() -> str:
    """``host:pid:random``: readable (which machine, which process) and unique whatever the
    PID namespace (two containers may both run a pid 7)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def lock_folder(uri: str) -> Path:
    """Where the sweeps writing to the store ``uri`` keep their liveness locks."""
    if uri.startswith("sqlite:///"):
        db = Path(uri[len("sqlite:///"):])
        return db.with_name(db.name + ".live")
    digest = hashlib.sha256(uri.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"drevt-sweep-live-{digest}"


def _lock_path(folder: Path, sweep_id: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_.:" else "_" for ch in sweep_id)
    return folder / (safe + SUFFIX)


def hold(uri: str, sweep_id: str) -> None:
    """Hold this sweep's liveness lock for the store ``uri`` until the process ends (once per
    store; a folder that cannot be written only means the sweep cannot be told alive, so the
    lock is then skipped: its runs are left alone, never wrongly closed)."""
    if not sweep_id:
        return
    folder = lock_folder(uri)
    key = (str(folder), sweep_id)
    if key in _held:
        return
    path = _lock_path(folder, sweep_id)
    for _ in range(10):  # a pruning sweep may unlink the file between the open and the lock
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            return
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except OSError:
            same = False
        if same:
            _held[key] = fd
            return
        os.close(fd)


def claim_gone(uri: str) -> dict[str, int]:
    """The sweeps whose lock file for ``uri`` no process holds, by sweep id, each lock now held
    exclusively by the caller (so that none of them can come back while their runs are closed);
    hand the result to :func:`release` afterwards. A sweep that ends after this call is not in
    it, so its runs -- all created before it ended -- are seen by a search made after it."""
    folder = lock_folder(uri)
    claimed: dict[str, int] = {}
    try:
        entries = sorted(folder.glob("*" + SUFFIX))
    except OSError:
        return claimed
    for path in entries:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: that sweep is alive
            os.close(fd)
            continue
        claimed[path.name[: -len(SUFFIX)]] = fd
    return claimed


def release(uri: str, claimed: dict[str, int]) -> None:
    """Remove the lock files of the sweeps :func:`claim_gone` found gone (their runs closed)."""
    folder = lock_folder(uri)
    for name, fd in claimed.items():
        try:
            (folder / (name + SUFFIX)).unlink()
        except OSError:
            pass
        finally:
            os.close(fd)


def lock_name(sweep_id: str) -> str:
    """The name :func:`claim_gone` gives the sweep ``sweep_id``."""
    return _lock_path(Path("."), sweep_id).name[: -len(SUFFIX)]


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (another user's counts: not ours to judge)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: another user's process
        return True
    return True
