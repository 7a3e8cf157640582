"""One drevt-sweep per sweep folder: a lock held for the sweep's whole life.

Two ``resume=true`` of one folder at once (the up arrow in two terminals, a SLURM array
requeued twice) both ran what was missing: duplicated seed runs, two parents for one
configuration, two sweep runs, two writers of each job folder. The sweep (or the single run)
takes an exclusive ``flock`` on ``.drevt-sweep.lock`` in its folder before any job starts and
keeps it until the process ends; the kernel releases it however the process ends (SIGKILL
included), so a stale lock never blocks a resume. A second command on the folder stops with
one line and exit code 2, or, with ``wait_for_folder=true``, waits for the first to end (and
then reuses what it finished). Two fresh sweeps started in the same second (one folder name)
are told apart the same way.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
from pathlib import Path

LOCK_NAME = ".drevt-sweep.lock"
_held: dict[str, int] = {}  # folder -> the descriptor holding its lock, for the process's life


def lock_folder(folder: str | os.PathLike, wait: bool = False) -> None:
    """Hold ``folder``'s lock until the process ends; ``SystemExit`` (exit code 2) naming the
    holder when another drevt-sweep has it, unless ``wait``."""
    folder = Path(folder).absolute()
    if str(folder) in _held:
        return
    path = folder / LOCK_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise SystemExit(f"drevt-sweep: error: cannot lock the sweep folder {folder}: "
                         f"{exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(fd)
        if not wait:
            os.close(fd)
            raise SystemExit(
                f"drevt-sweep: error: the sweep folder {folder} is in use by another "
                f"drevt-sweep ({holder}); wait for it to end, add wait_for_folder=true to "
                "wait for it, or give this command a folder of its own (hydra.sweep.dir=… or "
                "hydra.run.dir=…)") from None
        print(f"drevt-sweep: waiting for the other drevt-sweep ({holder}) using {folder}",
              file=sys.stderr, flush=True)
        fcntl.flock(fd, fcntl.LOCK_EX)  # Ctrl-C still interrupts the wait
    try:  # who holds it, for the refusal message (a full disk only loses the name)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{socket.gethostname()} pid {os.getpid()}\n".encode(), 0)
    except OSError:
        pass
    _held[str(folder)] = fd


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder wrote it (host and pid)."""
    try:
        text = os.pread(fd, 200, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    return text or "unknown process"
