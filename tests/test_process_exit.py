"""``process_exit.leave``: a ``python -m`` program exits with its own code after a caught
Ctrl-C, its output flushed and its atexit handlers run. Real subprocesses.

CPython ends a ``-m`` program by SIGINT (status -2) instead of its exit code once a
``KeyboardInterrupt`` has left code run by ``exec`` of a string, even a caught one (numba
compiles through such ``exec`` calls: an interrupted ``python -m drevt_sweep.cli.sim`` died of
SIGINT while it compiled). The program below reproduces that without numba."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAM = """
import atexit, sys
from drevt_sweep.process_exit import leave
atexit.register(lambda: print("atexit ran", end=""))
try:
    exec("raise KeyboardInterrupt")  # (a string: CPython's run_eval_code_obj)
except KeyboardInterrupt:
    print("interrupted; ", end="")  # (buffered: leave must flush it)
if sys.argv[1] == "leave":
    leave(130)
sys.exit(130)
"""


@pytest.fixture()
def program(tmp_path):
    (tmp_path / "interrupted_program.py").write_text(PROGRAM)
    return tmp_path


def test_leave_exits_with_its_code_under_python_m(program):
    done = subprocess.run([sys.executable, "-m", "interrupted_program", "leave"], cwd=program,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done
    assert done.stdout == "interrupted; atexit ran"


def test_the_interpreters_own_exit_is_what_leave_avoids(program):
    """What went wrong before (CPython 3.11 here; 3.12's source has the same rule): the same program ending with ``sys.exit``
    dies of SIGINT. Should a CPython no longer do so, this test says ``leave`` is no longer
    needed for that reason (its teardown saving remains)."""
    done = subprocess.run([sys.executable, "-m", "interrupted_program", "exit"], cwd=program,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -2, done
