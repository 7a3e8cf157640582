"""The first run after installing: numba compiles the simulation kernels once (1-3 min of CPU on
two cores, longer on a busy machine), and until this module a fresh ``make run`` sat silent for
that long. Here the sweep's process notices a cold numba cache, says what is happening, compiles
the kernels itself with a line at least every ``interval`` seconds, and leaves the compiled code
in numba's cache, from which the seed workers then load it in about a second.

The cache counts as cold until this module has compiled the kernels once since their sources
last changed (a stamp file in numba's cache folder, the kernel package's ``__pycache__`` or
``$NUMBA_CACHE_DIR`` when set, newer than every kernel module with ``cache=True`` functions): an
edited kernel, a removed cache, or a new ``$NUMBA_CACHE_DIR`` is cold again, whatever the kernel
modules are called. Compiling goes through the kernel's own entry
point (``kernel.prepare``), so what is compiled is what the seeds will run; code numba already
cached (by an earlier test or worker) only makes that a fast load, and nothing is printed unless
it takes longer than ``quiet_for`` seconds.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from pathlib import Path

NOTICE = "compiling the simulation kernels once, about 1-3 min; later runs skip this"
# The backfill policies whose compiled code a sweep of pool machines uses: the queue policies
# (none, EASY and DR_EVT's EASY share one loop) and conservative backfilling.
POOL_BACKFILLS = ("easy", "conservative")


def _kernel_dir() -> Path:
    from ..sim import kernel

    return Path(kernel.__file__).parent


STAMP = "drevt_kernels_compiled.stamp"


def _stamp_path(folder: Path) -> Path:
    """Beside numba's cache of ``folder``: with ``$NUMBA_CACHE_DIR`` set, numba caches there, and
    a stamp left in ``__pycache__`` said warm while the workers compiled for a minute in silence."""
    cache_dir = os.environ.get("NUMBA_CACHE_DIR")
    if not cache_dir:
        return folder / "__pycache__" / STAMP
    which = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]  # one per checkout
    return Path(cache_dir) / f"{which}.{STAMP}"


def cold_sources(kernel_dir: Path | None = None) -> list[str]:
    """The kernel modules changed since the kernels were last compiled here (empty: warm)."""
    folder = kernel_dir or _kernel_dir()
    stamp = _stamp_path(folder)
    compiled = stamp.stat().st_mtime if stamp.exists() else float("-inf")
    return [source.name for source in sorted(folder.glob("*.py"))
            if "cache=True" in source.read_text(encoding="utf-8") and source.stat().st_mtime > compiled]


def _stamp(kernel_dir: Path) -> None:
    stamp = _stamp_path(kernel_dir)
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text("the kernels' first compile is done\n")
    except OSError:  # a read-only install: numba caches elsewhere, and we check again next time
        pass


class _Ticker:
    """A line after ``quiet_for`` seconds, then one every ``interval`` seconds, until stopped."""

    def __init__(self, stream, interval: float, quiet_for: float) -> None:
        self.stream, self.interval, self.quiet_for = stream, interval, quiet_for
        self.started = time.monotonic()
        self.spoke = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drevt-compile-notice", daemon=True)

    def _say(self, text: str) -> None:
        print(f"drevt-sweep: {text}", file=self.stream, flush=True)
        self.spoke = True

    def _run(self) -> None:
        if self._stop.wait(self.quiet_for):
            return
        self._say(NOTICE)
        while not self._stop.wait(self.interval):
            self._say(f"still compiling the simulation kernels ({time.monotonic() - self.started:.0f} s)")

    def __enter__(self) -> _Ticker:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if self.spoke and exc[0] is None:
            self._say(f"kernels compiled in {time.monotonic() - self.started:.0f} s; cached for later runs")


def compile_if_cold(backfills=POOL_BACKFILLS, stream=None, interval: float = 10.0,
                    quiet_for: float = 2.0, kernel_dir: Path | None = None) -> bool:
    """Compile the kernels for ``backfills`` here, with progress lines, if numba's cache is cold.
    Returns whether it compiled (or loaded) anything. Never fails: a kernel that cannot load
    leaves the choice to the engine (which warns once and uses the reference)."""
    if os.environ.get("DREVT_KERNEL", "").strip().lower() == "reference":
        return False  # the seeds will not use the kernel
    folder = kernel_dir or _kernel_dir()
    if not cold_sources(folder):
        return False
    from ..sim import kernel

    with _Ticker(stream or sys.stderr, interval, quiet_for):
        try:
            ready = all([kernel.prepare(backfill) for backfill in backfills])
        except Exception:  # noqa: BLE001 - only a head start; the seeds report real failures
            ready = False
    if ready:
        _stamp(folder)
    return True


def main() -> None:
    """``python -m drevt_sweep.sweep.first_run``: compile now (e.g. at the end of an install)."""
    if not compile_if_cold(quiet_for=0.0):
        print("drevt-sweep: the simulation kernels are already compiled")


if __name__ == "__main__":
    main()
