"""The check every compiled kernel's slices must pass (issue 25: progress and Ctrl-C on long
runs of every variant), shared by the pool and the shared-node kernel tests."""

from __future__ import annotations

import pytest


def check_progress_then_interrupt(run, n_jobs: int) -> None:
    """``run(progress)`` simulates ``n_jobs`` jobs with a small ``STEP_BUDGET``: ``progress`` is
    called between slices with rising time and job counts, and a KeyboardInterrupt raised by it
    at its third call stops the run there, not at the end."""
    seen = []
    run(lambda now, done: seen.append((now, done)))
    times = [t for t, _ in seen]
    done = [d for _, d in seen]
    assert len(seen) > 10 and times == sorted(times) and done == sorted(done)
    assert 0 < done[-1] < n_jobs

    calls = []

    def interrupt(now, jobs_done):
        calls.append(jobs_done)
        if len(calls) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(interrupt)
    assert len(calls) == 3 and calls[-1] < done[-1]  # it stopped at the third slice, not at the end
