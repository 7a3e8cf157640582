"""The shared-node reference's planner timeline (``sim.shared._Timeline``): its per-node usage,
updated in place as intervals come and go, is the one a rebuild gives; a node's fit window claims
no more than the intervals allow; and its earliest fit is the one its definition gives (every
candidate start in order, each node checked from the intervals themselves at the start and at
every interval end inside the window)."""

from __future__ import annotations

import math
import random

import pytest

from drevt_sweep.sim.machine import Partition
from drevt_sweep.sim.shared import _Timeline

INF = math.inf
CAP = (8, 2, 16)


def _holds(timeline, i, at):
    """Cores, GPUs and memory the intervals of node ``i`` hold at instant ``at``."""
    c = g = m = 0
    for s, e, j in timeline.per_node[i]:
        if s <= at < e:
            held = timeline._held(j)
            c, g, m = c + held[0], g + held[1], m + held[2]
    return c, g, m


def _fits(timeline, i, t, duration, need):
    stop = t + duration
    points = [t] + [p for s, e, _ in timeline.per_node[i] for p in (s, e) if t < p < stop]
    for p in points:
        used = _holds(timeline, i, p)
        if any(cap - u < r for cap, u, r in zip(CAP, used, need)):
            return False
    return True


def _earliest_by_definition(timeline, j, now, k, duration):
    need = tuple(r[j] for r in timeline.request)
    for t in sorted({now, *(e for e in timeline.ends if now < e < INF)}):
        got = [i for i in range(timeline.partition.nodes) if _fits(timeline, i, t, duration, need)]
        if len(got) >= k:
            return t, got[:k]
    raise AssertionError("never fits")


@pytest.mark.parametrize("seed", range(12))
def test_usage_kept_in_place_is_the_rebuilt_one_and_fits_are_the_definitions(seed):
    rng = random.Random(seed)
    nodes = rng.choice([1, 2, 3, 6])
    n_jobs = 60
    request = ([rng.choice([0, 1, 2, 4, 8]) for _ in range(n_jobs)], [rng.choice([0, 0, 1, 2]) for _ in range(n_jobs)],
               [rng.choice([0, 4, 8, 16]) for _ in range(n_jobs)])
    part = Partition("p", nodes, cores=CAP[0], gpus=CAP[1], memory=CAP[2] / 1024.0, sharing="shared")
    timeline = _Timeline(part, request)
    assert timeline.capacity == CAP
    times = [-INF, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 3.0, 4.0, 5.0, 6.5, 8.0]
    present: list[int] = []
    checked = 0
    for step in range(200):
        j = rng.randrange(n_jobs)
        if j in timeline.where:
            timeline.remove(j)
            present.remove(j)
        else:
            start = rng.choice(times)
            stop = rng.choice([t for t in times if t > -INF] + [start])  # empty and reversed too
            where = sorted(rng.sample(range(nodes), rng.randint(1, nodes)))
            timeline.add(j, start, stop, where, whole=rng.random() < 0.15)
            present.append(j)
        for i in range(nodes):
            if timeline.steps[i] is not None:  # in place: as a rebuild
                kept = timeline.steps[i]
                timeline.steps[i] = None
                assert [list(x) for x in kept] == [list(x) for x in timeline._steps(i)], (seed, step, i)
                timeline.steps[i] = kept
        if step % 2 == 0:
            probe = rng.randrange(n_jobs)
            if all(r[probe] <= cap for r, cap in zip(request, CAP)):
                k = rng.randint(1, nodes)
                now, duration = rng.choice([0.0, 0.5, 2.0]), rng.choice([0.5, 1.0, 1.5, 2.5, 6.0])
                assert timeline.earliest_fit(probe, now, k, duration) == \
                    _earliest_by_definition(timeline, probe, now, k, duration), (seed, step)
                checked += 1
                for i in range(nodes):  # no fit before start, a fit from it while the window ends by bound
                    start, bound = timeline._fit_window(i, now, duration, *(r[probe] for r in request))
                    need = tuple(r[probe] for r in request)
                    points = {now, start, *(p for s, e, _ in timeline.per_node[i] for p in (s, e))}
                    for u in sorted(p for p in points if now <= p < INF):
                        if u < start:
                            assert not _fits(timeline, i, u, duration, need), (seed, step, i, u)
                        elif u + duration <= bound:
                            assert _fits(timeline, i, u, duration, need), (seed, step, i, u)
    assert checked > 60
