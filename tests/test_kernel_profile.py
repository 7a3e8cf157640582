"""The compiled kernels' chunked availability profile (``sim.kernel._kernels``: ``_prof_fit_at``,
``_prof_occupy_at``, ``_prof_back``, ``_prof_ahead``, ``_rc_recall``) against the reference's ``Profile`` and a plain earliest
fit: hand-computed cases for the fit's run scan (a run too short, ``own``, ``before``, the
last step lasting for ever) and the occupation's one search, then random profiles of several
chunks (more than ``CH_CAP`` breakpoints) built by occupations and releases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drevt_sweep.sim import kernel as fast
from drevt_sweep.sim.policies.base import Profile

pytestmark = pytest.mark.skipif(fast.load(warn=False) is None, reason="numba is not importable")
INF = math.inf


def kernels():
    from drevt_sweep.sim.kernel import _kernels

    return _kernels


def chunked(times, free):
    """The kernels' profile holding the step function ``times``/``free`` (``times[0]`` = now)."""
    k = kernels()
    arrays = k.profile_arrays(4096, int(free[0]))  # (room for every breakpoint the tests add)
    # rebuilt as the Slurm cycle does: "now" with free[0], then each later level as a release
    re = np.array(times[1:], dtype=np.float64)
    rn = np.diff(np.asarray(free, dtype=np.int64))
    none = np.zeros(1, np.int64)
    k._prof_rebuild(*arrays, float(times[0]), int(free[0]), re, rn, len(re), none, 0, np.zeros(1), np.zeros(1), none)
    return arrays


def function_of(arrays):
    """The step function the chunked profile holds, as (times, free) lists."""
    pt, pf, pb, ps = arrays
    k = kernels()
    times, free = [], []
    for m in range(ps[k.PS_M0], ps[k.PS_M1]):
        c = ps[k.PS_CO + m]
        for i in range(pb[c, k.PB_N]):
            v = int(pf[c, i] + pb[c, k.PB_ADD])
            if free and v == free[-1]:
                continue
            times.append(float(pt[c, i]))
            free.append(v)
    return times, free


def plain_fit(times, free, lo, need, duration, own=INF, before=INF):
    """The first breakpoint ``s >= lo``, ``s < before``, with ``need`` free until ``min(s + duration,
    own)`` (breakpoints before ``own`` only can stop it), straight from the definition."""
    for i, s in enumerate(times):
        if s < lo or free[i] < need:
            continue
        if s >= before:
            return INF
        stop = min(s + duration, own)
        if all(free[x] >= need for x in range(i + 1, len(times)) if times[x] < stop):
            return s
    return INF


def fit(arrays, lo, need, duration, own=INF, before=INF):
    pt, pf, pb, ps = arrays
    k = kernels()
    t, m, i = k._prof_fit_at(pt, pf, pb, ps, float(lo), int(need), float(duration), float(own), float(before))
    if t != INF:
        assert pt[ps[k.PS_CO + m], i] == t  # the position is the fit's breakpoint
    return t


# free: 2 on [0, 10), 5 on [10, 20), 1 on [20, 30), 5 from 30 on
STEPS = ([0.0, 10.0, 20.0, 30.0], [2, 5, 1, 5])


@pytest.mark.parametrize(("need", "duration", "own", "before", "expected"), [
    (4, 10.0, INF, INF, 10.0),  # the run [10, 20) lasts exactly the duration (the drop at 20 is its end)
    (4, 11.0, INF, INF, 30.0),  # one second too long: the next run, which lasts for ever
    (4, 11.0, 15.0, INF, 10.0),  # its own reservation from 15 on counts as free: only [10, 15) must hold
    (4, 11.0, INF, 25.0, INF),  # the only fit starts at 30, not before 25
    (4, 11.0, INF, 30.0, INF),  # ... nor before 30 (``before`` is exclusive)
    (4, 11.0, INF, 30.5, 30.0),
    (2, 25.0, INF, INF, 30.0),  # 2 nodes are free up to 20, then 1: the runs from 0 and 10 fail at 20 ...
    (2, 20.0, INF, INF, 0.0),  # ... [0, 20) holds
    (1, 100.0, INF, INF, 0.0),  # ... one node is free everywhere
    (6, 1.0, INF, INF, INF),  # never 6 free
])
def test_fit_hand_computed(need, duration, own, before, expected):
    assert fit(chunked(*STEPS), 0.0, need, duration, own, before) == expected


def test_fit_from_a_later_start_ignores_earlier_breakpoints():
    arrays = chunked(*STEPS)
    assert fit(arrays, 5.0, 2, 5.0) == 10.0  # 0 is before lo; the run [10, 20) starts the search
    assert fit(arrays, 10.0, 2, 5.0) == 10.0
    assert fit(arrays, 10.5, 2, 5.0) == 30.0  # lo inside a run: only breakpoints at or after it count


def test_occupy_hand_computed():
    k = kernels()
    arrays = chunked(*STEPS)
    pt, pf, pb, ps = arrays
    t, m, i = k._prof_fit_at(pt, pf, pb, ps, 0.0, 4, 10.0, INF, INF)
    assert t == 10.0
    m, i = k._prof_back(pt, pb, ps, m, i, 5.0)  # 5 lies between the breakpoints 0 and 10
    k._prof_occupy_at(pt, pf, pb, ps, m, i, 5.0, 25.0, 1)
    assert function_of(arrays) == ([0.0, 5.0, 10.0, 20.0, 25.0, 30.0], [2, 1, 4, 0, 1, 5])
    k._prof_occupy(pt, pf, pb, ps, 5.0, 25.0, -1)  # given back: the redundant breakpoints stay, the function is the same
    assert function_of(arrays) == (STEPS[0], STEPS[1])
    k._prof_occupy(pt, pf, pb, ps, 20.0, INF, 1)  # to the end: no breakpoint for the end
    assert function_of(arrays) == ([0.0, 10.0, 20.0, 30.0], [2, 5, 0, 4])


def test_a_recalled_position_is_checked():
    """``_rc_recall`` (where the run cache found a run's end): a place that still holds the time is
    its position; one an insertion before it moved, one past its chunk's breakpoints (stale after
    a trim) and one past the chunk order are located anew."""
    k = kernels()
    arrays = chunked([0.0, 10.0, 20.0, 30.0], [4, 3, 2, 1])
    pt, pf, pb, ps = arrays
    m0 = int(ps[k.PS_M0])
    at = lambda m, i: float(m * k.CH_CAP + i)  # noqa: E731
    assert k._rc_recall(pt, pb, ps, at(m0, 2), 20.0) == (m0, 2)
    k._prof_occupy(pt, pf, pb, ps, 5.0, 7.0, 1)  # breakpoints 0, 5, 7, 10, 20, 30: 20 moved to place 4
    assert k._rc_recall(pt, pb, ps, at(m0, 2), 20.0) == (m0, 4)
    assert k._rc_recall(pt, pb, ps, at(m0, 4), 20.0) == (m0, 4)
    k._prof_trim(pt, pf, pb, ps, 10.0)  # 10, 20, 30 in places 0-2; places 3-5 still hold 10, 20, 30
    assert int(pb[ps[k.PS_CO + m0], k.PB_N]) == 3 and pt[ps[k.PS_CO + m0], 4] == 20.0
    assert k._rc_recall(pt, pb, ps, at(m0, 4), 20.0) == (m0, 1)
    assert k._rc_recall(pt, pb, ps, at(int(ps[k.PS_M1]), 1), 20.0) == (m0, 1)
    assert k._rc_recall(pt, pb, ps, at(m0, 1), 25.0) == (m0, 2)  # not a breakpoint: the first after it


def test_a_move_walks_on_from_where_its_take_ended():
    """``_cons_move``'s second walk: ``_prof_occupy_at`` returns the position of the breakpoint at
    its ``stop`` (inserted or found), and ``_prof_ahead`` locates a later time from a position at
    or before it, stepping over whole chunks (here three of 48 breakpoints)."""
    k = kernels()
    arrays = chunked([0.0, 10.0, 20.0, 30.0], [4, 3, 2, 1])
    pt, pf, pb, ps = arrays
    m0 = int(ps[k.PS_M0])
    assert k._prof_occupy_at(pt, pf, pb, ps, m0, 1, 5.0, 15.0, 1) == (m0, 3)  # 0, 5, 10, 15, 20, 30
    assert k._prof_occupy_at(pt, pf, pb, ps, m0, 2, 10.0, 20.0, 1) == (m0, 4)  # 20 was there already
    assert function_of(arrays) == ([0.0, 5.0, 10.0, 15.0, 30.0], [4, 3, 1, 2, 1])  # (20 now redundant)
    assert k._prof_ahead(pt, pb, ps, m0, 3, 25.0) == (m0, 5)
    assert k._prof_ahead(pt, pb, ps, m0, 3, 15.0) == (m0, 3)
    assert k._prof_ahead(pt, pb, ps, m0, 0, 40.0) == (int(ps[k.PS_M1]), 0)
    times = [float(t) for t in range(0, 1400, 10)]
    arrays = chunked(times, [200 - i for i in range(len(times))])
    pt, pf, pb, ps = arrays
    assert int(ps[k.PS_M1]) - int(ps[k.PS_M0]) == 3
    for lo, t in [(0.0, 5.0), (0.0, 480.0), (0.0, 485.0), (100.0, 1000.0), (470.0, 1395.0), (700.0, 2000.0)]:
        m, i = k._prof_find(pt, pb, ps, lo)
        assert k._prof_ahead(pt, pb, ps, m, i, t) == k._prof_find(pt, pb, ps, t)


def test_the_run_cache_keeps_each_slots_last_run_end():
    """The run cache (``_rc_fit``, ``_rc_changed``) keeps the end of each slot's last cached run in
    a dense row (``RC_LAST``), which a change of the profile reads first: set where runs are
    found, lowered or emptied by a cut, untouched where the last run ended before the change."""
    k = kernels()
    pt, pf, pb, ps = chunked([0.0, 10.0, 20.0, 30.0, 40.0], [4, 1, 3, 1, 2])  # 2 free: [0, 10), [20, 30), [40, inf)
    rc_i = np.full((k.RC_SLOTS, 4), -1, np.int64)
    rc_a = np.empty((k.RC_SLOTS, 3 * k.RC_RUNS))
    rc_b = np.empty((k.RC_SLOTS, 2 * k.RC_RUNS))
    rc_next = np.empty(2 * k.RC_SLOTS)
    height_slot = np.full(5, -1, np.int64)
    active = np.empty(k.RC_SLOTS, np.int64)
    st = np.zeros(k.ST_SIZE, np.int64)
    cache = (st, rc_i, rc_a, rc_b, rc_next, height_slot, active)
    assert k._rc_fit(pt, pf, pb, ps, *cache, 0.0, 2, 5.0, INF, INF)[0] == 0.0  # run [0, 10) found
    s = int(height_slot[2])
    assert rc_i[s, k.RC_COUNT] == 1 and rc_next[k.RC_LAST + s] == 10.0
    assert k._rc_fit(pt, pf, pb, ps, *cache, 0.0, 2, 15.0, INF, INF)[0] == 40.0  # [20, 30) too short
    assert rc_i[s, k.RC_COUNT] == 3 and rc_next[k.RC_LAST + s] == INF  # [40, inf) complete
    k._rc_fit(pt, pf, pb, ps, *cache, 0.0, 4, 5.0, INF, INF)  # a second slot: 4 free on [0, 10) only
    s4 = int(height_slot[4])
    assert rc_i[s4, k.RC_COUNT] == 1 and rc_next[k.RC_LAST + s4] == 10.0
    k._rc_changed(rc_i, rc_b, rc_next, active, st, 25.0, 0.0)
    assert rc_i[s, k.RC_COUNT] == 1 and rc_next[s] == 10.0 and rc_next[k.RC_LAST + s] == 10.0
    assert rc_i[s4, k.RC_COUNT] == 1 and rc_next[k.RC_LAST + s4] == 10.0  # ended before 25: kept
    k._rc_changed(rc_i, rc_b, rc_next, active, st, 10.0, 0.0)
    assert rc_i[s, k.RC_COUNT] == 0 and rc_next[s] == 0.0 and rc_next[k.RC_LAST + s] == -INF
    assert rc_i[s4, k.RC_COUNT] == 0 and rc_next[k.RC_LAST + s4] == -INF


@pytest.mark.parametrize("seed", range(12))
def test_random_profiles_match_the_reference(seed):
    """Several hundred breakpoints (several chunks, split as they fill, compacted when chunks run
    short) after occupations and releases; each fit from several starts and with ``own`` and
    ``before`` as the plain definition has it, each occupation as ``Profile.add`` (keeping the
    breakpoints it levels out, as the kernel does until it compacts)."""
    k = kernels()
    rng = np.random.default_rng(seed)
    total = 64
    times = np.cumsum(rng.uniform(1.0, 50.0, 40)).round(1)
    times = [0.0] + times.tolist()
    free = rng.integers(0, total + 1, len(times)).tolist()
    arrays = chunked(times, free)
    pt, pf, pb, ps = arrays
    ref = Profile(list(times), list(free))
    horizon = times[-1] + 100.0
    for step in range(300):
        need = int(rng.integers(1, total + 1))
        duration = float(rng.choice([0.5, 3.0, 20.0, 120.0, 900.0]))
        lo = float(rng.choice([0.0, rng.uniform(0.0, horizon)]))
        own = float(rng.choice([INF, rng.uniform(0.0, horizon)]))
        before = float(rng.choice([INF, rng.uniform(0.0, horizon)]))
        got = fit(arrays, lo, need, duration, own, before)
        assert got == plain_fit(ref.times, ref.free, lo, need, duration, own, before), step
        if own == INF and before == INF and lo == 0.0:
            assert got == ref.earliest_fit(need, duration)
        # an occupation or a release; from the fit's position when there is one
        start = round(float(rng.uniform(0.0, horizon)), 1)
        stop = INF if rng.random() < 0.1 else start + round(float(rng.uniform(0.1, 300.0)), 1)
        n = int(rng.integers(-8, 24))
        if got != INF and got >= start and rng.random() < 0.5:
            t, m, i = k._prof_fit_at(pt, pf, pb, ps, lo, need, duration, own, before)
            m, i = k._prof_back(pt, pb, ps, m, i, start)
            k._prof_occupy_at(pt, pf, pb, ps, m, i, start, stop, n)
        else:
            k._prof_occupy(pt, pf, pb, ps, start, stop, n)
        add_keeping_breakpoints(ref, start, stop, -n)
        assert function_of(arrays) == function_of_ref(ref), step
        assert_extremes(arrays)
    assert ps[k.PS_M1] - ps[k.PS_M0] > 1  # the profile went beyond one chunk


def add_keeping_breakpoints(profile, start, end, delta):
    """``Profile.add`` without dropping the breakpoints it levels out: the kernel's profile keeps
    them until its next compaction, and a fit from ``lo`` may start at one of them."""
    i = profile._split(start)
    j = profile._split(end) if end != INF else len(profile.times)
    for k in range(i, j):
        profile.free[k] += delta


def assert_extremes(arrays):
    """Each chunk's most and fewest free nodes (kept without rescanning where exact) are its
    breakpoints' own: the searches skip chunks by them."""
    pt, pf, pb, ps = arrays
    k = kernels()
    for m in range(ps[k.PS_M0], ps[k.PS_M1]):
        c = ps[k.PS_CO + m]
        values = pf[c, :pb[c, k.PB_N]] + pb[c, k.PB_ADD]
        assert (pb[c, k.PB_MAX], pb[c, k.PB_MIN]) == (values.max(), values.min()), m


def function_of_ref(ref):
    times, free = [], []
    for t, v in zip(ref.times, ref.free):
        if free and v == free[-1]:
            continue
        times.append(t)
        free.append(v)
    return times, free
