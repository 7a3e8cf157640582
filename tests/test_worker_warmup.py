"""The seeds' workers load the compiled kernel ahead of the seeds only when the seeds pay for
it (``seeds.start_workers``'s ``work``): a sweep of a few dozen jobs runs on the reference
engine, and loading numba in each worker was 1.4 of its 4.8 s of CPU. Real loky workers."""

from __future__ import annotations

import time
from concurrent.futures import Future

import pytest
from joblib import Parallel, delayed
from joblib.externals.loky import get_reusable_executor

from drevt_sweep.sweep.seeds import start_workers


def _probe() -> tuple[int, bool]:
    from drevt_sweep.sim import kernel

    time.sleep(0.2)  # (so that each worker takes one)
    return __import__("os").getpid(), kernel._loaded is not None


def _workers_state() -> dict[int, bool]:
    seen: dict[int, bool] = {}
    for _ in range(5):
        seen.update(Parallel(n_jobs=2, backend="loky")(delayed(_probe)() for _ in range(2)))
        if len(seen) >= 2:
            break
    return seen


@pytest.fixture
def fresh_pool():
    get_reusable_executor().shutdown(wait=True, kill_workers=True)  # workers of no earlier test
    yield
    get_reusable_executor().shutdown(wait=True, kill_workers=True)


@pytest.mark.parametrize("told, loaded", [((12, 2), False), (None, False), ((28_000, 100), True)])
def test_workers_load_the_kernel_only_when_the_runs_pay_for_it(fresh_pool, told, loaded):
    work = Future()
    thread = start_workers(2, "loky", "easy", work=work)
    time.sleep(0.5)  # the processes start meanwhile, as while a sweep reads its trace
    assert thread.is_alive()  # ... and the start waits to be told what they will run
    work.set_result(told)
    thread.join(timeout=120)
    assert not thread.is_alive()
    state = _workers_state()
    assert len(state) == 2 and set(state.values()) == {loaded}, state


def test_without_work_the_kernel_is_loaded_and_with_false_it_is_not(fresh_pool):
    start_workers(2, "loky", "easy", work=False).join(timeout=120)
    assert set(_workers_state().values()) == {False}
    start_workers(2, "loky", "easy").join(timeout=120)  # (the same workers, now told)
    assert set(_workers_state().values()) == {True}
