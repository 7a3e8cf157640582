"""Signals that end a sweep, and the processes a sweep must not leave behind.

SIGINT (Ctrl-C), SIGTERM (``timeout``, ``kill``, SLURM at the end of an allocation) and SIGHUP
(a closed terminal or ssh session) all end ``drevt-sweep`` the same way: the signal becomes an
:class:`Interrupted` exception in the main thread, so that the code in flight unwinds as for
Ctrl-C (runs in flight are marked KILLED in the store), the worker processes are ended, and the
program exits with 128 + the signal's number, as a shell reports a process killed by it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A handled signal arrived (a KeyboardInterrupt, so everything that cleans up after
    Ctrl-C also cleans up after SIGTERM and SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The interrupt that ``exc`` is, or that it replaced (``__context__``, ``__cause__``).
    OmegaConf restores a config's flags in ``finally`` blocks (``open_dict``, ``read_write``):
    a signal in the middle of an assignment inside one leaves a half-built node on which the
    restore fails, and that error (``'NoneType' object has no attribute
    '_invalidate_flags_cache'``) replaces the interrupt, which it carries as its context."""
    todo, seen = [exc], set()
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        todo += [current.__context__, current.__cause__]
    return None


def signal_name(exc: BaseException) -> str:
    """``SIGTERM``, ``SIGHUP``; a plain KeyboardInterrupt is Ctrl-C's ``SIGINT``."""
    return signal.Signals(getattr(exc, "signum", signal.SIGINT)).name


def exit_code(exc: BaseException) -> int:
    return 128 + getattr(exc, "signum", signal.SIGINT)


def _on_signal(signum: int, frame) -> None:
    # The first signal interrupts; those that follow (SLURM repeats SIGTERM, a second Ctrl-C,
    # SIGHUP after SIGTERM) must not interrupt the cleanup that marks the runs KILLED.
    for other in HANDLED_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    raise Interrupted(signum)


def install_handlers() -> None:
    """Turn SIGINT, SIGTERM and SIGHUP into :class:`Interrupted` (main thread only)."""
    for signum in HANDLED_SIGNALS:
        signal.signal(signum, _on_signal)


def ignore_late_signals() -> None:
    """Once the sweep has finished (every result written, the store up to date), a signal that
    lands while the interpreter exits has nothing left to interrupt: raising then would only
    print "Exception ignored" from an exit hook, so it is ignored and the exit code stays the
    sweep's."""
    for signum in HANDLED_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def end_idle_workers() -> None:
    """Kill joblib's reusable loky workers once the sweep is done with them, instead of
    letting the interpreter's exit wait for each to shut itself down (tearing down numba,
    numpy, pandas: about a second of a 100-seed sweep's wall time on 2 cores, measured)."""
    try:
        from joblib.externals.loky import reusable_executor

        executor = reusable_executor._executor  # no public accessor that does not create one
        if executor is not None:
            executor.shutdown(wait=True, kill_workers=True)
    except Exception:  # noqa: BLE001 - only quicker: the exit ends them anyway
        pass


def end_workers(grace: float = 2.0) -> None:
    """End every process this sweep started that is still running: joblib's reusable loky
    workers first (killed, as joblib itself does on an error), then whatever else descends
    from this process (a dask LocalCluster's nannies, a local Ray instance's daemons, the
    tracking helper): SIGTERM, then SIGKILL after ``grace`` seconds. Resource trackers are
    left alone: they still clean up after the killed workers, and leave when this process
    exits (a tracker killed first is restarted by loky, with a traceback per leaked lock)."""
    end_idle_workers()
    for signum, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 0.0)):
        left = [pid for pid in descendants(os.getpid()) if not _is_resource_tracker(pid)]
        for pid in left:
            try:
                os.kill(pid, signum)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [pid for pid in left if _alive(pid)]
        if not left:
            return


def _is_resource_tracker(pid: int) -> bool:
    try:
        return b"resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid`` (Linux /proc; elsewhere none are found)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc/self").exists() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, ()))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
