"""Ctrl-C in a terminal signals the whole process group, the joblib workers too: a worker's
KeyboardInterrupt came back through joblib into the sweep's wave thread, which printed a
60-line traceback before the sweep's one line. The sweep still exits 130 with that one line,
and now without any traceback."""

from __future__ import annotations

import os
import signal
import time

import pytest

from sweep_helpers import assert_no_process_left, cleanup, long_kth_sweep, runs, start, wait_for_workers

pytestmark = pytest.mark.slow


def test_ctrl_c_to_the_process_group_ends_the_sweep_with_one_line(tmp_path):
    tag = f"ctrl-c-group-{os.getpid()}-{time.time()}"
    proc = start(long_kth_sweep(tmp_path), tag, new_session=True)
    try:
        wait_for_workers(proc, tag)
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the sweep and its workers
        err = proc.communicate(timeout=120)[1]
        code = proc.returncode
        assert_no_process_left(tag)
    finally:
        cleanup(proc, tag)
    assert code == 130, err[-3000:]
    assert "interrupted by SIGINT" in err
    assert "Traceback" not in err and "Exception in thread" not in err, err[-3000:]
    assert "RUNNING" not in {r.info.status for r in runs(tmp_path)}
