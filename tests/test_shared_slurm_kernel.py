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


def plain_earliest(PT, PC, PG, PM, PB, i, t, L, c, g, m, H):
    """One node's earliest fit from its definition: the first candidate start (t, then each
    breakpoint after it) up to H at which every segment meeting [start, start + L) holds the
    request."""
    B = int(PB[i])
    for s in [t] + [float(x) for x in PT[i, 1:B] if x > t]:
        if s > H:
            break
        ok = True
        for b in range(B):
            lo, hi = PT[i, b], (PT[i, b + 1] if b + 1 < B else np.inf)
            if hi > s and lo < s + L and (PC[i, b] < c or PG[i, b] < g or PM[i, b] < m):
                ok = False
        if ok:
            return s
    return np.inf


def hold_whole(PT, PC, PG, PM, PB, i, lo, hi):
    """Node i held whole on [lo, hi) (now <= lo < hi; room for two more breakpoints): one
    segment of free amounts -1 there, in place of every breakpoint inside it, merged with a
    held segment on either side. Within a cycle nothing is given back and no start overlaps a
    held point (it would not fit), so a held point's amounts only have to stay below every
    request: the same fits as holding one core more than the node has (``_prof_take``). This is
    what the Slurm cycle's held spans (``_shared_slurm._reserve``) stand for: the driver held
    its reservations so until the twenty-eighth session; the tests build profiles held whole
    with it, by definition."""
    from drevt_sweep.sim.kernel.shared import _seg

    B = PB[i]
    bs = _seg(PT, PB, i, lo)
    be = bs  # hi's segment, walking on from lo's
    while be + 1 < B and PT[i, be + 1] <= hi:
        be += 1
    a = bs if PT[i, bs] == lo else bs + 1  # the held segment's place
    if a > 0 and PC[i, a - 1] < 0:  # it extends a held one
        a -= 1
        lo = PT[i, a]
    hc, hg, hm = PC[i, be], PG[i, be], PM[i, be]  # the amounts at hi
    extra = 0  # a breakpoint at hi with them
    if hc < 0:  # held at hi already: that segment joins this one
        tail = be + 1
    elif PT[i, be] == hi:
        tail = be
    else:
        tail = be + 1
        extra = 1
    dst = a + 1 + extra  # the kept tail [tail, B) moves there
    if dst < tail:
        for x in range(tail, B):
            PT[i, x - tail + dst] = PT[i, x]
            PC[i, x - tail + dst] = PC[i, x]
            PG[i, x - tail + dst] = PG[i, x]
            PM[i, x - tail + dst] = PM[i, x]
    elif dst > tail:
        for x in range(B - 1, tail - 1, -1):
            PT[i, x - tail + dst] = PT[i, x]
            PC[i, x - tail + dst] = PC[i, x]
            PG[i, x - tail + dst] = PG[i, x]
            PM[i, x - tail + dst] = PM[i, x]
    PT[i, a] = lo
    PC[i, a] = -1
    PG[i, a] = -1
    PM[i, a] = -1
    if extra:
        PT[i, a + 1] = hi
        PC[i, a + 1] = hc
        PG[i, a + 1] = hg
        PM[i, a + 1] = hm
    PB[i] = dst + B - tail


def plain_earliest_all(PT, PC, PG, PM, PB, now, k, L, c, g, m):
    """The earliest start of a job of k nodes from its definition (``_Timeline.earliest_fit``): the
    first candidate (now, then each breakpoint after it) at which k nodes each hold the request
    throughout L, and the k lowest-indexed of them."""
    n = PB.shape[0]
    candidates = sorted({now} | {float(x) for i in range(n) for x in PT[i, 1:PB[i]] if x > now})
    for t in candidates:
        fit = [i for i in range(n) if plain_earliest(PT, PC, PG, PM, PB, i, t, L, c, g, m, t) == t]
        if len(fit) >= k:
            return t, fit[:k]
    return np.inf, []


def test_the_slurm_drivers_earliest_fit_is_the_shared_kernels():
    """One node's earliest fit (unsigned indices) against its definition, and the Slurm cycle's
    searches (an O(1) answer for a node whose profile has room for the request only in its last
    segment, ``shared._node_fit`` after ``_shared_slurm._most_free``; ``shared._earliest_all``
    given those amounts): on random profiles of 4 nodes (jobs held on random windows, some
    reservations held whole), for requests small and large (the O(1) answer both ways), several
    starts and bounds, they give ``shared._node_earliest`` and ``_earliest_all`` without them (as
    the conservative drivers call it; start and nodes) exactly."""
    from drevt_sweep.sim.kernel import _shared_slurm as ss, shared

    rng = np.random.default_rng(20)
    cap_c, cap_g, cap_m, n, width = 16, 2, 64, 4, 128
    shortcut = scanned = 0
    for case in range(200):
        PT = np.full((n, width), -np.inf)
        PC = np.full((n, width), cap_c, np.int64)
        PG = np.full((n, width), cap_g, np.int64)
        PM = np.full((n, width), cap_m, np.int64)
        PB = np.ones(n, np.int64)
        for _ in range(rng.integers(0, 14)):
            i = int(rng.integers(0, n))
            s = float(rng.integers(0, 8)) * 5
            e = s + float(rng.choice([5, 10, 20, 35]))
            if rng.random() < 0.2:
                hold_whole(PT, PC, PG, PM, PB, i, s, e)
                continue
            c = int(rng.integers(0, 13))
            g, m = int(rng.integers(0, 2)), 4 * c
            if shared._node_earliest(PT, PC, PG, PM, PB, i, s, e - s, c, g, m, s) == s:
                shared._prof_take(PT, PC, PG, PM, PB, i, s, e, c, g, m, 1)
        MX = np.empty((3, n), np.int64)
        for i in range(n):
            ss._most_free(PT, PC, PG, PM, PB, i, MX)
        for _ in range(20):
            c = int(rng.choice([0, 1, 4, 8, 12, 16]))
            g, m = int(rng.integers(0, 3)), int(rng.choice([0, 4 * c, 64]))
            L = float(rng.choice([1, 5, 15, 40]))
            for t in (0.0, 12.0):
                for H in (t, 20.0, np.inf):
                    for i in range(n):
                        want = shared._node_earliest(PT, PC, PG, PM, PB, i, t, L, c, g, m, H)
                        assert want == plain_earliest(PT, PC, PG, PM, PB, i, t, L, c, g, m, H)
                        assert shared._node_fit(PT, PC, PG, PM, PB, MX, i, t, L, c, g, m, H) == want
                        if c > MX[0, i] or g > MX[1, i] or m > MX[2, i]:
                            shortcut += 1
                        else:
                            scanned += 1
                for k in range(1, n + 1):
                    pick, want_pick = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
                    want = shared._earliest_all(PT, PC, PG, PM, PB, None, t, k, L, c, g, m, np.inf, want_pick,
                                                np.empty(n), np.empty(n))
                    got = shared._earliest_all(PT, PC, PG, PM, PB, MX, t, k, L, c, g, m, np.inf, pick, np.empty(n),
                                               np.empty(n))
                    plain, nodes = plain_earliest_all(PT, PC, PG, PM, PB, t, k, L, c, g, m)
                    assert want == plain and (want == np.inf or want_pick[:k].tolist() == nodes), (case, k)
                    assert got == want and (got == np.inf or np.array_equal(pick[:k], want_pick[:k])), (case, k)
    assert shortcut > 1000 and scanned > 1000


def test_held_spans_beside_the_profile_give_the_fits_of_the_profile_held_whole():
    """The Slurm cycle keeps its reservations as sorted, merged spans per node beside the running
    jobs' profile (``_shared_slurm._reserve``; the searches read them in ``shared._node_fit``)
    instead of holding each one whole in the profile (``hold_whole``). On random cycles of 4 nodes
    (running jobs ending after now, so the amounts only step up from now; a start held from now;
    reservations overlapping, touching and nested), every node fit and several-node search from
    now or later gives exactly what the profile held whole gives by definition, and the spans
    are the union of the reservations."""
    from drevt_sweep.sim.kernel import _shared_slurm as ss, shared

    rng = np.random.default_rng(28)
    cap_c, cap_g, cap_m, n, width = 16, 2, 64, 4, 128
    now = 0.0
    held_checked = 0
    for case in range(150):  # every node wholly free, then the running jobs taken
        PT = np.full((n, width), -np.inf)
        PC, PG, PM = (np.full((n, width), v, np.int64) for v in (cap_c, cap_g, cap_m))
        PB = np.ones(n, np.int64)
        for _ in range(rng.integers(0, 10)):  # running jobs, from the past to an end after now
            i = int(rng.integers(0, n))
            e = float(rng.integers(1, 12)) * 5
            c = int(rng.integers(0, 9))
            if shared._node_earliest(PT, PC, PG, PM, PB, i, -1e9, 1e9 + e, c, 0, 4 * c, -1e9) == -1e9:
                shared._prof_take(PT, PC, PG, PM, PB, i, -1e9, e, c, 0, 4 * c, 1)
        if rng.random() < 0.5:  # a start of the cycle, held from now
            i, c = int(rng.integers(0, n)), int(rng.integers(1, 5))
            if shared._node_earliest(PT, PC, PG, PM, PB, i, now, 15.0, c, 0, 0, now) == now:
                shared._prof_take(PT, PC, PG, PM, PB, i, now, 15.0, c, 0, 0, 1)
        MX = np.empty((3, n), np.int64)
        for i in range(n):
            ss._most_free(PT, PC, PG, PM, PB, i, MX, now)
        QT, QC, QG, QM, QB = PT.copy(), PC.copy(), PG.copy(), PM.copy(), PB.copy()  # held whole
        FB = np.empty((2, n))
        FB[0], FB[1] = np.inf, -np.inf
        RL, RH, RB = np.empty((n, width)), np.empty((n, width)), np.zeros(n, np.int64)
        spans = [[] for _ in range(n)]
        for _ in range(rng.integers(0, 12)):
            i = int(rng.integers(0, n))
            lo = float(rng.integers(0, 14)) * 5
            hi = lo + float(rng.choice([5, 10, 20, 35]))
            hold_whole(QT, QC, QG, QM, QB, i, lo, hi)
            ss._reserve(RL, RH, RB, i, lo, hi)
            FB[0, i], FB[1, i] = min(FB[0, i], lo), max(FB[1, i], hi)
            spans[i].append((lo, hi))
        for i in range(n):  # the spans: sorted, apart, and covering the same times
            got = list(zip(RL[i, :RB[i]], RH[i, :RB[i]]))
            assert all(a[1] < b[0] for a, b in zip(got, got[1:])), got
            for t in np.arange(0, 110, 2.5):
                assert any(lo <= t < hi for lo, hi in got) == any(lo <= t < hi for lo, hi in spans[i])
        held = (FB, RL, RH, RB)
        for _ in range(20):
            c = int(rng.choice([0, 1, 4, 8, 12, 16]))
            g, m = int(rng.integers(0, 3)), int(rng.choice([0, 4 * c, 64]))
            L = float(rng.choice([1, 5, 15, 40]))
            for t in (now, 12.0):
                for H in (t, 20.0, np.inf):
                    for i in range(n):
                        want = plain_earliest(QT, QC, QG, QM, QB, i, t, L, c, g, m, H)
                        assert shared._node_fit(PT, PC, PG, PM, PB, MX, i, t, L, c, g, m, H, held) == want
                        held_checked += RB[i] > 0
            for k in range(1, n + 1):
                pick, want_pick = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
                want = shared._earliest_all(QT, QC, QG, QM, QB, None, now, k, L, c, g, m, np.inf, want_pick,
                                            np.empty(n), np.empty(n))
                got = shared._earliest_all(PT, PC, PG, PM, PB, MX, now, k, L, c, g, m, np.inf, pick, np.empty(n),
                                           np.empty(n), held)
                assert got == want and (got == np.inf or np.array_equal(pick[:k], want_pick[:k])), (case, k)
    assert held_checked > 1000


# (Widths that stop at both places on this workload: 1, 2, 4 and 8. Since a cycle's reservations
# are held spans beside the profile rather than breakpoints in it, 3, 5 and 6 are widened at the
# rebuild to enough for the whole cycle, and never at a test.)
@pytest.mark.parametrize("width,everywhere", [(1, False), (2, False), (4, False), (16, True)])
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


@pytest.mark.parametrize("n_nodes,seed", [(4, 7), pytest.param(4, 11, marks=pytest.mark.slow), (8, 3), (8, 19)])
def test_fits_recalled_from_earlier_cycles_give_the_reference_schedule(monkeypatch, n_nodes, seed):
    """A tested job's earliest fit is taken from an earlier cycle (``_shared_slurm._recalled``)
    where the nodes changed since (completions, reservations lost or moved, jobs the main
    scheduler started) cannot have made it earlier: on busy queues most fits are recalled, and
    the schedule is the reference's."""
    from drevt_sweep.sim.kernel import _shared_slurm

    jobs, part = _busy_shared_jobs(n=900, n_nodes=n_nodes, seed=seed)
    machine = Machine("m", (part,))
    ref = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel="reference")
    counters: dict = {}
    run = _shared_slurm.run_shared_slurm
    monkeypatch.setattr(_shared_slurm, "run_shared_slurm", lambda *a, **kw: run(*a, counters=counters, **kw))
    got = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel="fast")
    assert np.array_equal(ref.begin, got.begin) and np.array_equal(ref.end, got.end)
    assert counters["fits_recalled"] > counters["earliest_fits"] > 0


@pytest.mark.parametrize("n_nodes,seed,window", [(4, 7, 60), (8, 3, 30), (8, 3, 120)])
def test_fits_past_a_short_window_give_the_reference_schedule(monkeypatch, n_nodes, seed, window):
    """With a backfill window of minutes on busy queues many tested jobs fit only at the window
    end: a job asking at least as much as such an earlier job of the cycle is answered there
    without a search (``_shared_slurm._beyond``), and a record past the window held no nodes,
    so a later change of it stamps none; the schedule is the reference's."""
    from drevt_sweep.sim.kernel import _shared_slurm

    jobs, part = _busy_shared_jobs(n=900, n_nodes=n_nodes, seed=seed)
    machine = Machine("m", (part,))
    params = {"bf_window": window}
    ref = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel="reference",
                           backfill_params=params)
    counters: dict = {}
    run = _shared_slurm.run_shared_slurm
    monkeypatch.setattr(_shared_slurm, "run_shared_slurm", lambda *a, **kw: run(*a, counters=counters, **kw))
    got = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel="fast",
                           backfill_params=params)
    assert np.array_equal(ref.begin, got.begin) and np.array_equal(ref.end, got.end)
    assert counters["fits_beyond_window"] > 0 and counters["fits_recalled"] > 0


@pytest.mark.parametrize("r", [3, 4])
def test_a_recalled_fit_on_a_changed_node_yields_to_a_lower_unchanged_one(r):
    """A one-node job's fit was (10, node 0); node 0 changed since and no longer holds it by
    then, node 2 (changed too) holds it at 10, and so does node 1, which did not change and is
    lower: the recall must not answer node 2 (it leaves the fit to the search). The changed
    nodes read from every node's stamp (a record of cycle 3, two before the latest stamp 5) or
    from the list of the nodes with the latest stamp (a record of cycle 4)."""
    from drevt_sweep.sim.kernel._shared_slurm import _most_free, _recalled

    n = 5
    free_from = [100.0, 10.0, 10.0, 100.0, 100.0]  # nothing free before, 8 cores from then
    PT = np.zeros((n, 4))
    PC = np.zeros((n, 4), np.int64)
    PG = np.zeros((n, 4), np.int64)
    PM = np.zeros((n, 4), np.int64)
    PB = np.full(n, 2, np.int64)
    MX = np.zeros((3, n), np.int64)
    for i, t in enumerate(free_from):
        PT[i, :2] = (-np.inf, t)
        PC[i, 1] = 8
        _most_free(PT, PC, PG, PM, PB, i, MX)
    zstamp = np.array([5, 0, 5, 0, 0], np.int64)  # nodes 0 and 2 changed in cycle 5
    zs = np.array([5, 2, 0, 2, 0, 0, 0], np.int64)  # the latest stamp, its count, its nodes
    pick = np.zeros(1, np.int64)
    s = _recalled.py_func(PT, PC, PG, PM, PB, MX, 0.0, 1, 5.0, 4, 0, 0, 10.0, r, np.zeros(1, np.int64), 0,
                             zstamp, zs, pick, np.empty(n, np.int64))
    assert s < 0
    zstamp[0] = 0  # node 0 unchanged and still free at 10: its fit stands
    zs[1:4] = (1, 2, 0)
    PT[0, 1] = 10.0
    _most_free(PT, PC, PG, PM, PB, 0, MX)
    s = _recalled.py_func(PT, PC, PG, PM, PB, MX, 0.0, 1, 5.0, 4, 0, 0, 10.0, r, np.zeros(1, np.int64), 0,
                             zstamp, zs, pick, np.empty(n, np.int64))
    assert s == 10.0 and pick[0] == 0


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
