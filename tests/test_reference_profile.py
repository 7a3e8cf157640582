"""The reference engine's availability profile (``sim.policies.base.Profile``): ``add`` drops the
breakpoints it levels out, which changes no answer: an earliest fit never starts at a breakpoint
with as many free nodes as the step before it (the job would fit from that step's start too)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from drevt_sweep.sim.policies.base import INF, Profile


def test_a_reservation_taken_out_again_leaves_the_profile_it_found():
    # 4 free on [0, 10), 2 from 10 on; a job of 2 nodes placed on [3, 7) and taken out again
    p = Profile([0.0, 10.0], [4, 2])
    p.add(3.0, 7.0, -2)
    assert (p.times, p.free) == ([0.0, 3.0, 7.0, 10.0], [4, 2, 4, 2])
    p.add(3.0, 7.0, +2)
    assert (p.times, p.free) == ([0.0, 10.0], [4, 2])
    # a change that levels the step at its end with the one before: [7, 10) at 2 like 10 on
    p.add(7.0, 10.0, -2)
    assert (p.times, p.free) == ([0.0, 7.0], [4, 2])
    # ... and one that levels its start: [0, 7) down to 2, one step from 0 on; now stays
    p.add(0.0, 7.0, -2)
    assert (p.times, p.free) == ([0.0], [2])
    p.add(5.0, INF, 1)
    assert (p.times, p.free) == ([0.0, 5.0], [2, 3])
    # an empty interval changes nothing, not even at now (a job with a time limit of 0), where
    # the step before is none (the last step is as high as now's here)
    p = Profile([0.0, 5.0, 8.0], [2, 3, 2])
    p.add(0.0, 0.0, -3)
    p.add(5.0, 5.0, -3)
    assert (p.times, p.free) == ([0.0, 5.0, 8.0], [2, 3, 2])


def plain_earliest_fit(times, free, nodes, duration):
    """Straight from the definition, over every breakpoint kept."""
    for i, s in enumerate(times):
        if free[i] >= nodes and all(free[k] >= nodes for k in range(i + 1, len(times))
                                    if times[k] < s + duration):
            return s
    return INF


def value_at(times, free, t):
    return free[max(i for i, s in enumerate(times) if s <= t)]


changes = st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30) | st.just(None),
                             st.integers(-3, 3)), max_size=25)


@settings(max_examples=300, deadline=None)
@given(changes, st.integers(1, 6), st.integers(1, 25))
def test_dropping_levelled_breakpoints_changes_no_step_and_no_fit(ops, nodes, duration):
    p = Profile([0.0], [6])
    kept_times, kept_free = [0.0], [6]  # the same changes, every breakpoint kept
    for start, length, delta in ops:
        end = INF if length is None else float(start + length)
        p.add(float(start), end, delta)
        for t in (float(start), end):
            if t != INF and t not in kept_times:
                i = sum(1 for s in kept_times if s < t)
                kept_times.insert(i, t)
                kept_free.insert(i, kept_free[i - 1])
        for k, s in enumerate(kept_times):
            if start <= s < end:
                kept_free[k] += delta
        assert p.times == sorted(set(p.times)) and p.times[0] == 0.0
        for t in kept_times:
            assert value_at(p.times, p.free, t) == value_at(kept_times, kept_free, t)
        assert p.earliest_fit(nodes, duration) == plain_earliest_fit(kept_times, kept_free, nodes, duration)
    # what it keeps is what it needs: no breakpoint it touched is level with the one before
    touched = {float(s) for s, _, _ in ops} | {float(s + n) for s, n, _ in ops if n is not None}
    assert all(p.free[k] != p.free[k - 1] for k in range(1, len(p.times)) if p.times[k] in touched)
