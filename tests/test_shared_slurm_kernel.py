"""The compiled ``backfill: slurm`` on shared-node pools (``kernel._shared_slurm``) against the
reference (``sim.shared._SlurmShared``), bit for bit: start and end times and the nodes of every
job, on small random shared workloads (several nodes with cores, GPUs and memory, ties in submit
times, users) under random ``bf_*`` settings, both ways of enforcing limits and every static
priority. ``test_shared_slurm.py``'s hand-computed cases run on both engines too (its ``run``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from jobtable_factory import make_jobs
from slices import check_progress_then_interrupt
from test_shared import _busy_shared_jobs
from test_shared_slurm import TWO, _same, four_jobs
from test_slurm_kernel import knobs

from drevt_sweep.errors import ConfigError
from drevt_sweep.sim import kernel as fast
from drevt_sweep.sim.machine import Machine, Partition
from drevt_sweep.sim.partitioned import simulate_machine
from drevt_sweep.sim.policies import STATIC_PRIORITY_POLICIES
from drevt_sweep.sim.shared import simulate_shared

pytestmark = pytest.mark.skipif(fast.load(warn=False) is None, reason="numba is not importable")


@st.composite
def shared_workloads(draw):
    """Up to 30 jobs on 1-4 nodes of 1-8 cores, 0-2 GPUs and 500 MiB: submit times in bursts
    (ties), run times around the limits (early ends, exact ends, overruns), three users."""
    n_nodes = draw(st.integers(1, 4))
    n = draw(st.integers(1, 30))
    cap, gcap = draw(st.integers(1, 8)), draw(st.integers(0, 2))
    pick = lambda values: draw(st.lists(st.sampled_from(values), min_size=n, max_size=n))  # noqa: E731
    submit = np.cumsum(pick([0, 0, 1, 2, 5, 10, 30])).astype(float)
    limit = pick([5.0, 10.0, 20.0, 30.0, 60.0, 90.0, 200.0])
    run = [lim * f for lim, f in zip(limit, pick([0.0, 0.1, 0.5, 1.0, 1.0, 1.2]))]
    jobs = make_jobs(submit, draw(st.lists(st.integers(1, n_nodes), min_size=n, max_size=n)), limit, run,
                     user=[f"u{u}" for u in pick([0, 1, 2])])
    part = Partition("p", n_nodes, cores=cap, gpus=gcap, memory=500.0, sharing="shared")
    request = (np.asarray(draw(st.lists(st.integers(0, cap), min_size=n, max_size=n))),
               np.asarray(draw(st.lists(st.integers(0, gcap), min_size=n, max_size=n)), dtype=np.int64),
               np.asarray(pick([0.0, 100.0, 250.5, 500.0])))
    return part, jobs, request


def both(jobs, part, request, **kw):
    return [simulate_shared(jobs, jobs.actual_run_time, part, *request, backfill="slurm", kernel=kernel, **kw)
            for kernel in ("reference", "fast")]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=shared_workloads(), params=knobs(), priority=st.sampled_from(STATIC_PRIORITY_POLICIES),
       enforce=st.booleans(), tiered=st.booleans(), data=st.data())
def test_shared_slurm_kernel_matches_reference(case, params, priority, enforce, tiered, data):
    """(``tiered``: the jobs come from partitions of two ``PriorityTier``s sharing the pool.)"""
    part, jobs, request = case
    if tiered:
        n = len(jobs)
        params = {**params, "tier": data.draw(st.lists(st.sampled_from([1, 2]), min_size=n, max_size=n))}
    ref, compiled = both(jobs, part, request, priority=priority, enforce_limits=enforce, backfill_params=params)
    assert _same(ref, compiled)


def test_the_kernel_runs_through_simulate_machine_and_reports_progress(monkeypatch):
    """``simulate_machine`` takes the compiled kernel (``kernel='fast'`` is no longer refused),
    which reports progress between slices and stops at a KeyboardInterrupt."""
    from drevt_sweep.sim import kernel

    monkeypatch.setattr(kernel, "STEP_BUDGET", 64)
    jobs, part = _busy_shared_jobs(n=600)
    machine = Machine("m", (part,))
    check_progress_then_interrupt(
        lambda progress: simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel="fast",
                                          progress=progress), len(jobs))
    ref = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel="reference")
    got = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel="fast")
    assert np.array_equal(ref.begin, got.begin) and np.isfinite(ref.begin).all()


@pytest.mark.parametrize("width,everywhere", [(1, False), (2, False), (3, False), (16, True)])
def test_profiles_too_narrow_are_widened_where_the_cycle_stopped(monkeypatch, width, everywhere):
    """The driver runs without numba's runtime, so it cannot widen its per-node profiles itself:
    a cycle stops before its rebuild, or before a tested job that could need two more
    breakpoints than a node has room for, and goes on after the caller widened them. Profiles
    started far too narrow, or a cycle stopped at every such place (``STOP_EVERYWHERE``),
    give the reference's schedule, and both places were stopped at."""
    from drevt_sweep.sim.kernel import _shared_slurm, shared

    monkeypatch.setattr(shared, "STOP_EVERYWHERE", everywhere)
    jobs, part = _busy_shared_jobs(n=600)
    machine = Machine("m", (part,))
    ref = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel="reference")
    counters: dict = {}
    run = _shared_slurm.run_shared_slurm
    monkeypatch.setattr(_shared_slurm, "PROFILE_WIDTH", width)
    monkeypatch.setattr(_shared_slurm, "run_shared_slurm", lambda *a, **kw: run(*a, counters=counters, **kw))
    got = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel="fast")
    assert np.array_equal(ref.begin, got.begin) and np.array_equal(ref.end, got.end)
    assert counters["widened_at_rebuild"] > 0 and counters["widened_at_test"] > 0


def test_what_the_kernel_does_not_cover_is_refused_by_fast_and_runs_on_the_reference():
    """A dynamic priority: ``kernel='fast'`` refuses it with one clear error; ``auto`` runs it
    on the reference. (Association limits: ``test_slurm_limits``.)"""
    jobs, cores = four_jobs()
    request = (np.asarray(cores), np.zeros(4, np.int64), np.zeros(4))
    for kw in (dict(priority="wfp3"),):
        with pytest.raises(ConfigError, match="no compiled shared-node version"):
            simulate_shared(jobs, jobs.actual_run_time, TWO, *request, backfill="slurm", kernel="fast", **kw)
        auto = simulate_shared(jobs, jobs.actual_run_time, TWO, *request, backfill="slurm", kernel="auto", **kw)
        ref = simulate_shared(jobs, jobs.actual_run_time, TWO, *request, backfill="slurm", kernel="reference", **kw)
        assert _same(auto, ref)
