"""Ending a command's process with its own exit code, once everything is written.

The interpreter's own exit is not used, for two reasons:

- **Its teardown**: it unloads its thousand-odd modules and collects its heap one object at a
  time: 0.3-0.6 s of a 100-seed ``drevt-sweep`` run between its last line and its exit, on 2
  cores (strace, measured).
- **``python -m``**: CPython's ``Py_RunMain`` ends a ``-m`` program by SIGINT instead of its
  exit code when a ``KeyboardInterrupt`` ever left code run by ``exec`` of a *string*
  (``run_eval_code_obj`` sets ``unhandled_keyboard_interrupt``), even one the program then
  caught. numba compiles through such ``exec`` calls, so Ctrl-C while a kernel compiled made
  ``python -m drevt_sweep.cli.sim`` die of SIGINT (exit status -2) after printing
  "interrupted", instead of exiting 130 (reproduced: SIGINT 2 s into a run with an empty numba
  cache). The console scripts (``drevt-sim``, ``drevt-sweep``) run as script files and were
  not affected.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def leave(code: int) -> NoReturn:
    """Exit with ``code`` as the interpreter would -- the non-daemon threads joined, the atexit
    handlers run (logs flushed, helpers and workers let go), stdout and stderr flushed -- and
    then at once (``os._exit``)."""
    import atexit
    import threading

    threading._shutdown()  # what the interpreter's exit does first (joins, executors' hooks)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code)
