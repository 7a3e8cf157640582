"""The compiled ``backfill: slurm`` on shared-node pools: ``sim.shared._SlurmShared``, bit for bit.

Scope: one shared-node pool, static priorities (a rank per job; with partition ``PriorityTier``s
``sim.shared`` ranks by tier first, a static order too), no association limits and no
``on_reservation`` hook (``sim.shared._use_kernel`` sends every other case to the reference).
What is reused rather than rewritten:

* the settings and the clocks of the periodic passes (``_slurm._settings``, ``_load_clocks``/
  ``_store_clocks``): ``_slurm._pass_clocks`` over ``_due`` (``SlurmBackfill._due``: ticks at
  ``t0 + k * step`` from the first pass, the ones passed while no job waits skipped) and the
  window end ``_slurm._window_end`` (``cycle_window_end``);
* the per-node free profiles of the shared conservative kernel with limits enforced
  (``kernel.shared``: ``_prof_take``, ``_seg``, the earliest fit ``_earliest_all``,
  given the most free amounts that only the cycle keeps, ``_most_free``, for ``_node_fit``'s
  shortcut; the comment above ``shared._seg`` says why it is ``_Timeline.earliest_fit``'s). ``_SlurmShared``
  plans on a ``_Timeline`` of intervals, whose usage (``_Timeline._steps``) is that step
  function: a cycle holds each interval on its nodes as it goes (``_hold``), so a check reads a
  node's sorted segments in its window instead of re-gathering and summing every interval of
  the node (``_blocked_until``), which is what the cycles' earliest fits spent their time on
  (``benchmarks/RESULTS.md``, "Fifteenth session, helper sslurmspeed"). A backfill
  reservation holds its nodes **whole** (Slurm's ``node_space_map_t`` keeps node bitmaps per
  time slot; ``_add_reservation`` takes the reserved job's nodes out of every slot it
  overlaps): ``_Timeline`` holds one core more than the node has there, so nothing fits beside
  it; here the cycle keeps each node's held spans apart from its profile, sorted and merged
  (``_reserve``), and a fit must also keep clear of them: the same fits as a profile with
  each span one segment of free amounts -1 (the tests' ``hold_whole``), which the profile then
  stays free of;
* free resources and starts from ``kernel.shared`` (``_take``; an event's completions are
  the queue driver's loop over ``_kernels._finish_next`` and ``shared._give_back``, here
  stamping the freed nodes), the event loop's steps from ``_kernels``
  (``_next_wake``, ``_launch``, ``_enqueue_arrivals``) and ``_extended._compact`` (the started
  jobs leave the queue).

A job starting now goes where Slurm's cons_tres puts it (``_cons_tres_nodes``, step for step
``sim.shared.cons_tres_nodes``: best fit over runs of consecutive usable nodes, then the node
with the fewest free cores); in a backfill cycle only nodes that hold it on the cycle's
profiles until its limit are usable. A reservation's nodes are the earliest fit's, lowest
indices first, as in the reference.

A pass is ``_SlurmShared.select``: the main scheduler (``job_scheduler.c: _schedule``) on an
arrival or completion to ``default_queue_depth`` + 1 jobs, over the whole queue at a
``sched_interval`` tick, starting the queue's prefix that fits now; then, at a
``bf_interval`` tick (every pass with ``bf_interval=0``), one backfill cycle
(``backfill.c: _attempt_backfill``) on profiles rebuilt from the running jobs (until their
estimated ends, cut at the window end; ``_rebuild`` appends each node's ends in order) and
the jobs the main scheduler just started; the cycle ends at the last tested job that can still
start now, and is skipped when none does (``_tested`` says why no schedule changes): first the
last one that fits the free resources, then, as starts and reservations take nodes, the last
one that still fits on the profiles now (``_cycle_end``). Jobs started in the pass are launched
after it, in start order, as the reference's ``due`` list.
Per-user counts of a cycle are stamped with the cycle's number instead of cleared
(``_check_bf_usage`` does the same with ``last_sched``); with one partition
``bf_max_job_part`` and ``bf_max_job_test`` count the same jobs (the smaller one ends the
cycle). A tested job's earliest fit is taken from the last cycle that searched it when the
nodes changed since (stamped per node: completions, reservations lost or moved) cannot have
moved it (``_recalled``; docs/kernel.md, "Slurm's cycles on shared nodes", has the argument):
60 % of the fits of issue 26's growth benchmark. A job asking at least as much as one the
cycle already found no room for before the window end fits at the window end (``_beyond``).
``tests/test_shared_slurm_kernel.py`` compares the schedules with the reference.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._extended import _compact
from ._kernels import BIG, _enqueue_arrivals, _finish_next, _launch, _load_counts, _next_wake, _store_counts
from ._slurm import (P_DEPTH, P_F_SIZE, P_I_SIZE, P_INTERVAL, P_MAX_TEST, P_MAX_USER, P_RES, P_RESERVE, P_SCHED,
                     P_WINDOW, ST_CYCLE, _load_clocks, _pass_clocks, _settings, _store_clocks, _window_end,
                     start_clocks)
from .shared import (GROW, _earliest_all, _first_fit, _give_back, _maxima, _node_fit, _node_lists, _prof_take,
                     _seg, _take, _widest)

# counters of the work done, for benchmarks (``run_shared_slurm``'s ``counters``)
ST_PASSES = 10  # scheduling passes
ST_PLANNED = 11  # backfill cycles that planned (a tested job fit now): profiles rebuilt
ST_RUNNING = 12  # running jobs put on those profiles, summed
ST_FITS = 13  # earliest fits searched
ST_AT = 14  # a cycle stopped for wider profiles: AT_CYCLE (before its rebuild) or AT_TEST (a tested job)
ST_Y = 15  # ... that job's place in the tested list
ST_LAST = 16  # ... the cycle's last place, the jobs it started (due[:ST_D]) and its reservations
ST_D = 17
ST_RESERVED = 18
ST_NEED = 19  # ... and the breakpoints a node's profile must have room for
ST_WIDENED = 20  # counters: cycles stopped for wider profiles before the rebuild, and at a tested job
ST_EVERY = 22  # 1: stop at every place it may (tests of the resumption; the first after a resumption goes on)
ST_RECALLED = 23  # counter: earliest fits recalled from an earlier planned cycle instead of searched
ST_BEYOND = 24  # counter: fits known to be at the window end from an earlier job of the cycle (``_beyond``)
ST_SIZE = 25  # _kernels' counts, then _slurm's ST_KBF, ST_KFULL, ST_CYCLE (cycles run), the counters, ST_AT...
AT_NONE = 0  # (where a cycle stopped)
AT_CYCLE = 1
AT_TEST = 2
PROFILE_WIDTH = 16  # breakpoints per node the profiles start with (widened as needed)
COUNTERS = {"passes": ST_PASSES, "cycles": ST_CYCLE, "cycles_planned": ST_PLANNED, "running_planned": ST_RUNNING,
            "earliest_fits": ST_FITS, "fits_recalled": ST_RECALLED, "fits_beyond_window": ST_BEYOND,
            "widened_at_rebuild": ST_WIDENED, "widened_at_test": ST_WIDENED + 1}
SF_SIZE = 5  # SF_NOW, then _slurm's SF_T0, (SF_WAKE: unused), SF_NEXT_BF, SF_NEXT_FULL


@njit(cache=True, inline="always")
def _wake_at(interval, sched, next_bf, next_full):
    """``SlurmBackfill.wake_at``: the next cycle or periodic main pass (an event while jobs wait)."""
    t = next_bf if interval > 0 else np.inf
    if sched > 0 and next_full < t:
        t = next_full
    return t


@njit(cache=True, _nrt=False)
def _cons_tres_nodes(usable, fc, k, c, chosen, rf, rl, rc, rn):
    """``sim.shared.cons_tres_nodes``, step for step: the ``k`` nodes Slurm's cons_tres gives a
    job of ``c`` cores per node among the ``usable`` ones (``_eval_nodes``: the runs of
    consecutive usable nodes, the first sufficient one with the fewest free cores, else the
    largest, then more runs for the rest; one node left: the one with the fewest free cores that
    holds it) into chosen[:k], sorted; whether there are k. ``rf``, ``rl``, ``rc``, ``rn``:
    scratch (each run's first and last node, free cores, nodes not yet used)."""
    n = usable.shape[0]
    R = 0
    i = 0
    while i < n:
        if not usable[i]:
            i += 1
            continue
        first = i
        cpus = 0
        while i < n and usable[i]:
            cpus += fc[i]
            i += 1
        rf[R] = first
        rl[R] = i - 1
        rc[R] = cpus
        rn[R] = i - first
        R += 1
    need = k * c  # Slurm's rem_cpus and rem_nodes
    left = k
    got = 0
    while left > 0:
        best = -1
        best_enough = False
        for r in range(R):
            if rn[r] == 0:
                continue
            enough = rc[r] >= need and rn[r] >= left
            if (best < 0 or (enough and not best_enough) or (enough and rc[r] < rc[best])
                    or (not enough and rc[r] > rc[best])):
                best = r
                best_enough = enough
        if best < 0:
            return False
        lo = rf[best]
        hi = rl[best]
        if left == 1:  # "try best fit single node"
            single = -1
            for x in range(lo, hi + 1):
                if fc[x] >= need and (single < 0 or fc[x] < fc[single]):
                    single = x
                    if fc[x] == need:
                        break
            if single >= 0:
                lo = single
                hi = single
        for x in range(lo, hi + 1):
            if left == 0:
                break
            if left == 1 and fc[x] < need:
                continue
            use = need - (left - 1)
            if use < c:
                use = c
            need -= fc[x] if fc[x] < use else use  # _cpus_to_use
            chosen[got] = x
            got += 1
            left -= 1
        rn[best] = 0
    for x in range(1, k):  # sorted, as the reference returns them
        v = chosen[x]
        y = x - 1
        while y >= 0 and chosen[y] > v:
            chosen[y + 1] = chosen[y]
            y -= 1
        chosen[y + 1] = v
    return True


@njit(cache=True, _nrt=False)
def _slurm_fit(fc, fg, fm, k, c, g, m, pick, usable, rf, rl, rc, rn):
    """``_Nodes.slurm_fit``: the nodes a job starting now gets, into pick[:k], among those
    marked in ``usable`` that hold (c, g, m) now (first fit for a job of no cores); whether
    there are k. Fewer than k such nodes fail before cons_tres' runs are built (the main
    scheduler's head often does: -1 to -2 % of issue 26's growth benchmark)."""
    got = 0
    for i in range(fc.shape[0]):
        u = usable[i] and fc[i] >= c and fg[i] >= g and fm[i] >= m
        usable[i] = u
        got += u
    if got < k:
        return False
    if c < 1:
        got = 0
        for i in range(fc.shape[0]):
            if usable[i]:
                pick[got] = i
                got += 1
                if got == k:
                    return True
        return False
    return _cons_tres_nodes(usable, fc, k, c, pick, rf, rl, rc, rn)


@njit(cache=True, _nrt=False)
def _hold(PT, PC, PG, PM, PB, where, first, k, s, e, c, g, m):
    """(c, g, m) of each node ``where[first:first + k]`` held on [s, e) in the cycle's free
    profiles (the driver made room for two more breakpoints on every node; rebuilt at now, they
    have no past segments to drop)."""
    for y in range(k):
        i = where[first + y]
        _prof_take(PT, PC, PG, PM, PB, i, s, e, c, g, m, 1)


@njit(cache=True, inline="always")
def _reserve(RL, RH, RB, i, lo, hi):
    """Node i held whole on [lo, hi) in the cycle's list of held spans (sorted, disjoint, not
    touching; room for one more), merged with the spans it meets. The profile itself is not
    changed: a reservation held in it (the tail of four rows shifted, then
    ``_most_free`` again) was most of a reservation's cost, and the searches read the held spans
    only past the first segment that holds a request (``shared._node_fit``)."""
    n = RB[i]
    x = n
    while x > 0 and RH[i, x - 1] >= lo:  # the spans from x on end at or after lo
        x -= 1
    y = x
    while y < n and RL[i, y] <= hi:  # ... and x to y - 1 meet [lo, hi)
        y += 1
    if y > x:
        lo = min(lo, RL[i, x])
        hi = max(hi, RH[i, y - 1])
    d = x + 1 - y  # the kept tail [y, n) moves by d
    if d > 0:
        for z in range(n - 1, y - 1, -1):
            RL[i, z + d] = RL[i, z]
            RH[i, z + d] = RH[i, z]
    elif d < 0:
        for z in range(y, n):
            RL[i, z + d] = RL[i, z]
            RH[i, z + d] = RH[i, z]
    RL[i, x] = lo
    RH[i, x] = hi
    RB[i] = n + d


@njit(cache=True, _nrt=False)
def _rebuild(PT, PC, PG, PM, PB, now, window_end, re, rj, R, node_list, node_start, nodes, cores, gpus, mem, fc, fg,
             fm, due, D, MX, extra):
    """The profiles of the running jobs alone, each holding its nodes until its estimated end
    (right after now if it is overdue), cut at ``window_end``, and their most free amounts
    before the last segment (``MX``); returns the most breakpoints a node has (or needs).
    The running jobs come by estimated end, so a node's breakpoints are appended in order, no
    shifting (``_hold`` would shift them): its free amounts before the first end (the free
    resources now with the main scheduler's starts ``due[:D]``, not running yet, given back),
    then one step up per end. A job asking for nothing leaves no breakpoint, and equal ends
    share one: the same canonical profile as ``_prof_take`` builds. The amounts only grow
    along a profile, so the most free before the last segment are the next to last one's (no
    pass over the segments: ``_most_free``). One pass; a node that would not keep ``extra``
    breakpoints of room stops it, and the most any node could need is returned (the driver
    widens the profiles and calls again). (A first pass counting them cost ~40 % of this.)"""
    n_nodes = PB.shape[0]
    for i in range(n_nodes):
        PB[i] = 1
        PT[i, 0] = -np.inf
        PC[i, 0] = fc[i]
        PG[i, 0] = fg[i]
        PM[i, 0] = fm[i]
    for y in range(D):
        j = due[y]
        for x in range(node_start[j], node_start[j] + nodes[j]):
            i = node_list[x]
            PC[i, 0] += cores[j]
            PG[i, 0] += gpus[j]
            PM[i, 0] += mem[j]
    room = np.int64(PT.shape[1] - extra)  # breakpoints a node may have
    soon = np.nextafter(now, np.inf)
    one = np.uint64(1)
    for r in range(R):  # (unsigned job and node indices: see shared._node_earliest_from)
        j = np.uint64(rj[r])
        c, g, m = cores[j], gpus[j], mem[j]
        if c == 0 and g == 0 and m == 0:
            continue
        stop = min(re[r] if re[r] > now else soon, window_end)
        for y in range(node_start[j], node_start[j] + nodes[j]):
            i = np.uint64(node_list[y])
            b = np.uint64(PB[i] - 1)
            if PT[i, b] == stop:
                PC[i, b] += c
                PG[i, b] += g
                PM[i, b] += m
            elif PB[i] < room:
                PT[i, b + one] = stop
                PC[i, b + one] = PC[i, b] + c
                PG[i, b + one] = PG[i, b] + g
                PM[i, b + one] = PM[i, b] + m
                PB[i] += 1
            else:  # too narrow: a node needs at most one breakpoint per running job on it, plus one
                PB[:] = 1
                for r2 in range(R):
                    j2 = rj[r2]
                    for y2 in range(node_start[j2], node_start[j2] + nodes[j2]):
                        PB[node_list[y2]] += 1
                return _widest(PB)
    most = 1
    for i in range(n_nodes):
        B = PB[i]
        most = max(most, B)
        if B >= 2:
            MX[0, i] = PC[i, B - 2]
            MX[1, i] = PG[i, B - 2]
            MX[2, i] = PM[i, B - 2]
        else:
            MX[0, i] = MX[1, i] = MX[2, i] = -1
    return most


@njit(cache=True, _nrt=False)
def _most_free(PT, PC, PG, PM, PB, i, MX, now=np.inf):
    """The most free cores, GPUs and KiB of node i in any segment but its last, into MX[:, i]
    (-1: it has one segment); called whenever a start of the cycle changes the node's profile.
    Within a cycle the amounts from now on only grow, except where a profile holds the node
    whole (-1: the tests' profiles; not the driver's, whose reservations are kept apart), so the most
    among the segments from now's on are the last one's not held whole: only the segments up
    to now's and that one are read (without ``now``: all)."""
    mc = mg = mm = -1
    last = PB[i] - 2  # the next to last segment
    b = 0
    while b <= last:  # the segments up to now's (those before now may hold more)
        mc = max(mc, PC[i, b])
        mg = max(mg, PG[i, b])
        mm = max(mm, PM[i, b])
        if PT[i, b + 1] > now:
            break
        b += 1
    while last > b and PC[i, last] < 0:
        last -= 1
    if last > b:
        mc = max(mc, PC[i, last])
        mg = max(mg, PG[i, last])
        mm = max(mm, PM[i, last])
    MX[0, i] = mc
    MX[1, i] = mg
    MX[2, i] = mm


@njit(cache=True, inline="always")
def _holds_now(fc, fg, fm, FB, i, t1, c, g, m):
    """Whether node i holds (c, g, m) on the cycle's profile throughout [now, t1): without
    reading the profile. Within a cycle a node's profile from now on is its free resources
    now (``fc``...: the rebuild gives the main scheduler's starts back and holds them again
    from now, and each start of the cycle takes from both), then only steps up (running jobs
    end, held starts end, all cut at the window end), and a reservation holds it whole (its held
    spans, ``_reserve``, from ``FB[0, i]``, the earliest such start in the cycle, to ``FB[1, i]``
    at the latest). So it holds the job from now for a limit > 0 (the inputs' check) iff the
    free resources do and no reservation starts before t1: ``_node_fit(..., now, L, ...) ==
    now`` with t1 = now + L. (``shared._node_fit`` reads the held spans only past the first
    segment that holds a request, on the same argument.)"""
    return fc[i] >= c and fg[i] >= g and fm[i] >= m and FB[0, i] >= t1


@njit(cache=True, inline="always")
def _fits_now(fc, fg, fm, FB, now, k, d, c, g, m, wit):
    """Whether k nodes hold (c, g, m) throughout [now, now + d) on the profiles (the job can
    start now); the k highest-indexed into wit[:k] (the ones reservations, lowest indices
    first, take last). (``_holds_now`` per node; ``_cycle_end``'s walk asks it about 1.2 M
    jobs at 125k jobs of issue 26's growth benchmark, nearly one per search, 97 % of which do
    not fit: reading each node's profile segments for it was ~4 % of the run.)"""
    t1 = now + d
    got = 0
    for i in range(fc.shape[0]):  # (counted first, without a branch: most do not fit)
        got += (fc[i] >= c) & (fg[i] >= g) & (fm[i] >= m) & (FB[0, i] >= t1)
    if got < k:
        return False
    got = 0
    for i in range(fc.shape[0] - 1, -1, -1):
        if _holds_now(fc, fg, fm, FB, i, t1, c, g, m):
            wit[got] = i
            got += 1
            if got == k:
                return True
    return False


@njit(cache=True, inline="always")
def _cycle_end(fc, fg, fm, FB, now, tests, y, last, nodes, limit, cores, gpus, mem, wit, wmark, where, first, k, maxc,
               maxg, maxm):
    """Where a cycle ends after the job at its place ``y`` held the nodes where[first:first + k]:
    the last place (``last`` or before it, after y; y: none) whose job can still start now.
    The profiles only lose free resources within a cycle, so a job that cannot start now at
    some point of it never can later in it, and a cycle after its last possible start only
    adds reservations, which change no schedule (``_tested``). ``last``'s job is known to fit
    now on the nodes marked in ``wmark`` (``wit``); a hold that misses them keeps it. A hold
    on some of them rechecks those, and a node it no longer holds is replaced by the next one
    below the lowest: every node above it that is not marked was found not to hold the job
    (``_fits_now`` scans from the top), which no later hold in the cycle can change. (So a
    job's witnesses cost at most one check per node in a cycle; rescanning from the top at
    every hit on them did 47 M node checks at 125k jobs of issue 26's growth benchmark.) The
    walk down skips, without a node check, a job asking more cores, GPUs or KiB than any node
    has free (``maxc``...: the free resources when the cycle's tests began, which only shrink
    in it, and the profiles now are at most them): half of the walk's steps at 125k jobs."""
    hit = False
    for x in range(k):
        i = where[first + x]
        if wmark[i]:
            hit = True
    if not hit:
        return last
    j = tests[last]
    kl = nodes[j]
    t1, c, g, m = now + limit[j], cores[j], gpus[j], mem[j]
    for x in range(k):
        i = where[first + x]
        if wmark[i] and not _holds_now(fc, fg, fm, FB, np.uint64(i), t1, c, g, m):
            wmark[i] = False
    got = 0
    low = fc.shape[0]
    for x in range(kl):
        i = wit[x]
        low = min(low, i)
        if wmark[i]:
            wit[got] = i
            got += 1
    if got == kl:
        return last
    for i in range(low - 1, -1, -1):
        if _holds_now(fc, fg, fm, FB, i, t1, c, g, m):
            wit[got] = i
            wmark[i] = True
            got += 1
            if got == kl:
                return last
    for x in range(got):
        wmark[wit[x]] = False
    last -= 1
    while last > y:
        j = tests[last]
        if (cores[j] <= maxc and gpus[j] <= maxg and mem[j] <= maxm
                and _fits_now(fc, fg, fm, FB, now, nodes[j], limit[j], cores[j], gpus[j], mem[j], wit)):
            for x in range(nodes[j]):
                wmark[wit[x]] = True
            return last
        last -= 1
    return y


@njit(cache=True, _nrt=False)
def _tested(q, x, Q, users, max_test, max_user, ucount, ustamp, cycle, tests, fc, fg, fm, nodes, cores, gpus, mem,
            pick):
    """The jobs a backfill cycle tests, from place ``x`` of the queue on, into ``tests`` in
    priority order (``bf_max_job_test`` ends the list, ``bf_max_job_user`` passes a job over:
    ``CycleLimits``), and the place in that list of the last one that fits now beside the
    running jobs (-1: none). The cycle can start no job after that one (free resources only
    shrink in it) and its reservations only keep jobs from starting, so it ends there: what
    it would reserve later changes no schedule. Returns (count, last)."""
    T = 0
    for y in range(x, Q):
        if T >= max_test:
            break
        j = q[y]
        if max_user:
            u = users[j]
            if ustamp[u] != cycle:
                ustamp[u] = cycle
                ucount[u] = 0
            if ucount[u] >= max_user:
                continue
            ucount[u] += 1
        tests[T] = j
        T += 1
    maxc, maxg, maxm = _maxima(fc, fg, fm)
    for y in range(T - 1, -1, -1):
        j = tests[y]
        if (cores[j] <= maxc and gpus[j] <= maxg and mem[j] <= maxm
                and _first_fit(fc, fg, fm, nodes[j], cores[j], gpus[j], mem[j], pick)):
            return T, y
    return T, -1


@njit(cache=True, inline="always")
def _stamp(zstamp, zs, where, first, k, when):
    """Nodes where[first:first + k] changed (in a way a recorded fit must be checked against)
    in planned cycle ``when``; ``zs``: the latest stamp, then how many nodes have it and those
    nodes. Stamps come in planned-cycle order (completions and the main scheduler's starts stamp
    the next planned cycle, a cycle's tested jobs the cycle itself), so the nodes with the latest
    stamp are the ones changed since the planned cycle before it: ``_recalled``'s Z for a record
    of that cycle, most records. (A stamp is never earlier than the latest; it would take the
    latest, which only puts the node in more Zs.)"""
    if when > zs[0]:
        zs[0] = when
        zs[1] = 0
    for x in range(k):
        i = where[first + x]
        if zstamp[i] != zs[0]:
            zstamp[i] = zs[0]
            zs[2 + zs[1]] = i
            zs[1] += 1


@njit(cache=True, inline="always")
def _beyond(front, nf, nodes, limit, cores, gpus, mem, k, L, c, g, m, n_nodes, cap_c, cap_g, cap_m):
    """Whether a job of k nodes of (c, g, m) for L, tested in a cycle after the jobs
    front[:nf], whose earliest fits were at the cycle's window end or later, asks at least as
    much as one of them in every respect (and fits an empty node): its earliest fit is then the
    window end too, on nodes 0..k-1.

    Within a cycle the profiles only lose free resources (starts and reservations are held,
    nothing is given back), so the profile a later job sees is at most the one an earlier job
    saw, everywhere. If the later job held k nodes at some t before the window end, the first
    k' <= k of those nodes would have held the earlier job's smaller request throughout its
    shorter limit at t, earlier than its fit. At the window end every node is wholly free (the
    running jobs, starts and reservations are cut there), so the search would answer that time
    and its lowest-indexed k nodes. Such a fit makes no reservation (it is past the window) and
    records the same fit as the search would: nothing else changes. In issue 26's 4-partition
    row at 125k jobs this answers 0.51 M of 4.75 M fits, 0.39 M of them searches, all in the
    small partitions (``benchmarks/RESULTS.md``, "Twenty-third session, helper ssl23").
    ``front`` is kept an antichain: a job joining it drops the ones that ask at least as much as
    it does."""
    if k > n_nodes or c > cap_c or g > cap_g or m > cap_m:
        return False
    for x in range(nf):
        o = np.uint64(front[x])  # (unsigned: no test for a negative index at each read)
        if nodes[o] <= k and cores[o] <= c and gpus[o] <= g and mem[o] <= m and limit[o] <= L:
            return True
    return False


@njit(cache=True, inline="always")
def _recalled(PT, PC, PG, PM, PB, MX, now, k, L, c, g, m, s1, r, rnl, first, zstamp, zs, pick, Z, FB=None):
    """The earliest fit (start, nodes into pick[:k]) of a job whose fit in planned cycle r was
    s1 on the nodes rnl[first:first + k], when it can be known without the search; -1 when
    not (the driver searches).

    Z, the nodes changed since (``zstamp`` > r), are searched; on the others the cycle's
    profile before the job is at most cycle r's before it from ``now`` on (the argument is in
    docs/kernel.md, "Slurm's cycles on shared nodes"), so no k of them held the job at any time in [now, s1), and those
    that hold it at s1 held it then. So if no node of Z holds it at or before s1 and its k
    nodes still hold it at s1, (s1, its nodes) is the fit; a one-node job also takes a node of
    Z that holds it earlier (or at s1 with a lower index: no node outside Z below its old node
    held it at s1). A Z of more than half the nodes is not tried. For a record of the planned
    cycle before the latest stamp Z is the list of the nodes with that stamp (``_stamp`` keeps
    it in ``zs``), for a record of that stamp's cycle or later it is empty: 91 % of the recalls
    tried in issue 26's 64-node partition at 250k jobs (``benchmarks/RESULTS.md``,
    "Twenty-third session, helper ssl23"). Older records list Z in the scratch ``Z`` (by index)
    in the pass that counts it, a store at every node and no branch (reading every node's stamp
    again, with a mostly-not-taken branch per node, cost ~5 % of the growth benchmark:
    "Twenty-second session, helper ssl22"). ``FB``: the cycle's reservations per node (their
    bounds and held spans, ``_reserve``), for ``shared._node_fit``."""
    n_nodes = PB.shape[0]
    if s1 < now:
        return -1.0
    zn = 0
    if r == zs[0] - 1:  # the nodes with the latest stamp
        zn = zs[1]
        for y in range(zn):
            Z[y] = zs[2 + y]
    elif r < zs[0]:
        for i in range(n_nodes):  # Z listed in Z[:zn], without a branch
            Z[zn] = i
            zn += zstamp[i] > r
    if 2 * zn > n_nodes:
        return -1.0
    if k == 1:
        p1 = rnl[first]
        u = np.uint64(p1)  # (unsigned node indices here: see _beyond)
        best = np.inf
        bi = -1
        moved = zstamp[u] > r
        if not moved:
            if _node_fit(PT, PC, PG, PM, PB, MX, u, s1, L, c, g, m, s1, FB) != s1:
                return -1.0
            best = s1
            bi = p1
        for y in range(zn):
            i = Z[y]
            e = _node_fit(PT, PC, PG, PM, PB, MX, np.uint64(i), now, L, c, g, m, min(s1, best), FB)
            if e < best or (e == best and i < bi):
                best = e
                bi = i
        if bi < 0 or (best == s1 and moved and bi > p1):  # (a node outside Z above p1 may hold it at s1)
            return -1.0
        pick[0] = bi
        return best
    for x in range(k):
        u = np.uint64(rnl[first + x])
        if zstamp[u] > r or _node_fit(PT, PC, PG, PM, PB, MX, u, s1, L, c, g, m, s1, FB) != s1:
            return -1.0
    for y in range(zn):
        if _node_fit(PT, PC, PG, PM, PB, MX, np.uint64(Z[y]), now, L, c, g, m, s1, FB) <= s1:
            return -1.0
    for x in range(k):
        pick[x] = rnl[first + x]
    return s1


@njit(cache=True, _nrt=False)
def shared_slurm_steps(submit, limit, nodes, dur, arrivals, rank, cores, gpus, mem, users, cap_c, cap_g, cap_m,
                       pf_, pi, begin, end, est, node_start, node_list, fc, fg, fm, pick, re, rj, rn, hk, hj,
                       q, due, tests, ucount, ustamp, PB, E, wit, wmark, usable, runs, low, MX, rs, rcy, rnl, zstamp,
                       rheld, front, zs, FB, RB, PT, PC, PG, PM, RL, RH, st, sf, budget):
    """``sim.shared._run_events`` with ``_SlurmShared`` from the state in ``st``/``sf``, for at
    most ``budget`` events; status 0 done, 1 budget used, ``GROW`` the profiles need to be
    wider (``st[ST_NEED]`` breakpoints; the cycle goes on where it stopped), -3 a job that fits
    nowhere.

    Without numba's runtime: reference counting around every helper call cost ~40 % of issue
    26's growth benchmark (``benchmarks/RESULTS.md``, nineteenth session). So nothing is
    allocated here: the scratch arrays come from the caller, and a cycle that could need more
    breakpoints than the profiles hold stops before the step that could (the rebuild, or the
    next tested job: one job adds at most two breakpoints to a node) and returns ``GROW`` with
    its place saved (``ST_AT``...); the caller widens the profiles and calls again."""
    interval, sched, window, res, max_test, max_user, reserve_cap, depth = _settings(pf_, pi)
    _, R, H, Q, a, done, now = _load_counts(st, sf)
    kbf, kfull, t0, next_bf, next_full = _load_clocks(st, sf)
    cycle = st[ST_CYCLE]
    n_arr = arrivals.shape[0]
    n_nodes = fc.shape[0]
    cap = PT.shape[1]
    status = 0
    events = 0
    at = st[ST_AT]  # a cycle stopped for wider profiles: go on there
    every = st[ST_EVERY] == 1
    resumed = at != AT_NONE
    recall = max_user == 0 and reserve_cap == 0  # (else a job of the last cycle may not be tested again)
    planned = st[ST_PLANNED]
    nf = 0  # the cycle's jobs in front[:nf] (none after a resumption: fewer answers, the same ones)
    while a < n_arr or H > 0 or (Q > 0 and _wake_at(interval, sched, next_bf, next_full) < np.inf) or at != AT_NONE:
        if at != AT_NONE:
            D = st[ST_D]
            last = st[ST_LAST]
            y = st[ST_Y] - 1
            reserved = st[ST_RESERVED]
            st[ST_AT] = AT_NONE
            window_end = _window_end(now, window, res)
        else:
            wake = _wake_at(interval, sched, next_bf, next_full) if Q > 0 else np.inf
            go, now, events = _next_wake(submit, arrivals, a, hk, H, now, wake, events, budget)
            if not go:
                status = 1
                break
            completed = False  # (as shared_queue_steps, the freed nodes stamped)
            while H > 0 and hk[0] <= now:
                j, H, R = _finish_next(hk, hj, H, re, rj, rn, R, est)
                _give_back(j, fc, fg, fm, node_start, node_list, cores, gpus, mem)
                done += 1
                completed = True
                if recall:
                    _stamp(zstamp, zs, node_list, node_start[j], nodes[j], planned + 1)
            a0 = a
            Q, a = _enqueue_arrivals(q, Q, rank, submit, arrivals, a, now)
            if Q == 0:
                continue

            # one pass (_SlurmShared.select)
            st[ST_PASSES] += 1
            t0, bf_due, full, kbf, kfull, next_bf, next_full = _pass_clocks(now, t0, interval, sched, kbf, kfull,
                                                                            next_bf, next_full)
            D = 0  # jobs started in this pass, in start order (launched after it)
            x = 0  # the first place of the queue the main scheduler did not start
            if a != a0 or completed or full:  # the main scheduler (_SlurmShared._main)
                most = BIG if full else depth
                while x < Q and x <= most:  # job_depth++ > def_job_limit
                    j = q[x]
                    usable[:] = True
                    if not _slurm_fit(fc, fg, fm, nodes[j], cores[j], gpus[j], mem[j], pick, usable, runs[0],
                                      runs[1], runs[2], runs[3]):
                        break  # the partition failed
                    _take(j, pick, nodes, cores, gpus, mem, fc, fg, fm, node_start, node_list)
                    due[D] = j
                    D += 1
                    x += 1
                    if rcy[j] >= 0 and rheld[j]:  # its reservation in the cycle of its record is gone
                        _stamp(zstamp, zs, rnl, node_start[j], nodes[j], planned + 1)
            window_end = _window_end(now, window, res)
            last = -1
            if bf_due and window_end > now:  # the backfill cycle (_SlurmShared._backfill)
                cycle += 1
                _, last = _tested(q, x, Q, users, max_test, max_user, ucount, ustamp, cycle, tests, fc, fg, fm,
                                  nodes, cores, gpus, mem, pick)
            y = -2  # (the cycle starts with its profiles)
            at = AT_CYCLE if last >= 0 else AT_NONE
        if at == AT_CYCLE:  # profiles of the running jobs and the main scheduler's starts
            need = _rebuild(PT, PC, PG, PM, PB, now, window_end, re, rj, R, node_list, node_start, nodes, cores,
                            gpus, mem, fc, fg, fm, due, D, MX, 2 + 2 * D)
            if need + 2 + 2 * D > cap or (every and not resumed):
                status = _widen(st, AT_CYCLE, need + 2 + 2 * D, D, last, 0, 0)
                break
            resumed = False
            st[ST_PLANNED] += 1
            planned = st[ST_PLANNED]
            st[ST_RUNNING] += R
            for y in range(D):
                j = due[y]
                _hold(PT, PC, PG, PM, PB, node_list, node_start[j], nodes[j], now, min(now + limit[j], window_end),
                      cores[j], gpus[j], mem[j])
                for x in range(nodes[j]):
                    _most_free(PT, PC, PG, PM, PB, node_list[node_start[j] + x], MX, now)
            FB[0, :] = np.inf  # no reservation yet
            FB[1, :] = -np.inf  # (and none ends)
            RB[:] = 0
            wmark[:] = False  # the nodes on which the cycle's last possible start fits now
            j = tests[last]
            _fits_now(fc, fg, fm, FB, now, nodes[j], limit[j], cores[j], gpus[j], mem[j], wit)  # (it does)
            for x in range(nodes[j]):
                wmark[wit[x]] = True
            reserved = 0
            nf = 0
            y = -1
        at = AT_NONE
        if y >= -1:  # the cycle's tested jobs (from y + 1)
            top = max(_widest(PB), _widest(RB))  # (at least the most breakpoints or held spans a node holds)
            held = (FB, RL, RH, RB)
            maxc, maxg, maxm = _maxima(fc, fg, fm)  # (no job the free resources cannot hold fits the profiles now)
            while y < last:
                y += 1
                if top + 2 > cap or (every and not resumed):  # this job may add two breakpoints to a node
                    status = _widen(st, AT_TEST, top + 2, D, last, y, reserved)
                    break
                resumed = False
                j = tests[y]
                ju = np.uint64(j)  # (unsigned: no test for a negative index at each read)
                d = limit[ju]
                c, g, m = cores[ju], gpus[ju], mem[ju]
                k = nodes[ju]
                f = node_start[ju]
                had = rcy[ju] >= 0
                s = -1.0
                if nf and _beyond(front, nf, nodes, limit, cores, gpus, mem, k, d, c, g, m, n_nodes, cap_c, cap_g,
                                  cap_m):
                    s = window_end  # on the lowest-indexed nodes, all wholly free from then on
                    for x in range(k):
                        pick[x] = x
                    st[ST_BEYOND] += 1
                else:
                    if had:
                        s = _recalled(PT, PC, PG, PM, PB, MX, now, k, d, c, g, m, rs[ju], rcy[ju], rnl, f, zstamp, zs,
                                      pick, runs[0], held)  # (cons_tres' scratch: free here)
                    if s < 0:
                        st[ST_FITS] += 1
                        s = _earliest_all(PT, PC, PG, PM, PB, MX, now, k, d, c, g, m, np.inf, pick, E, low, held)
                        if s == np.inf:
                            return -3
                    else:
                        st[ST_RECALLED] += 1
                    if s >= window_end:  # j joins the front; the ones asking at least as much as j leave it
                        w = 0
                        for x in range(nf):
                            o = front[x]
                            if not (nodes[o] >= k and cores[o] >= c and gpus[o] >= g and mem[o] >= m
                                    and limit[o] >= d):
                                front[w] = o
                                w += 1
                        front[w] = j
                        nf = w + 1
                if recall:
                    if had and rheld[ju]:  # the last cycle's reservation of it, if not made again, is gone: Z
                        same = s == rs[ju] and s > now
                        for x in range(k):
                            same = same and pick[x] == rnl[f + x]
                        if not same:
                            _stamp(zstamp, zs, rnl, f, k, planned)
                    rs[ju] = s
                    rcy[ju] = planned
                    rheld[ju] = now < s < window_end  # (a fit at or past the window end reserves nothing)
                    for x in range(k):
                        rnl[f + x] = pick[x]
                if s == now:  # on the nodes cons_tres picks among those free of reservations then
                    t1 = now + d
                    for i in range(n_nodes):
                        usable[i] = _holds_now(fc, fg, fm, FB, i, t1, c, g, m)
                    if not _slurm_fit(fc, fg, fm, nodes[j], c, g, m, pick, usable, runs[0], runs[1], runs[2],
                                      runs[3]):
                        return -3  # (cannot be: k nodes hold it on the profiles now)
                    _take(j, pick, nodes, cores, gpus, mem, fc, fg, fm, node_start, node_list)
                    due[D] = j
                    D += 1
                    _hold(PT, PC, PG, PM, PB, node_list, node_start[j], nodes[j], now, min(now + d, window_end),
                          c, g, m)
                    for x in range(nodes[j]):
                        ni = node_list[node_start[j] + x]
                        _most_free(PT, PC, PG, PM, PB, ni, MX, now)
                        top = max(top, PB[ni])
                    if y < last:
                        last = _cycle_end(fc, fg, fm, FB, now, tests, y, last, nodes, limit, cores, gpus, mem,
                                          wit, wmark, node_list, node_start[j], nodes[j], maxc, maxg, maxm)
                    continue
                if reserve_cap and reserved >= reserve_cap:
                    continue
                if s > now + window or s >= window_end:
                    continue
                lo, hi = s, s + d  # reservation_span: on the bf_resolution grid, cut to [now, window_end)
                if res > 0:
                    lo = np.floor(lo / res) * res
                    hi = np.floor((hi + res - 1) / res) * res
                lo = max(lo, now)
                hi = min(hi, window_end)
                if hi > lo:  # held whole
                    for x in range(nodes[j]):
                        i = np.uint64(pick[x])  # (unsigned: see _beyond)
                        _reserve(RL, RH, RB, i, lo, hi)
                        FB[0, i] = min(FB[0, i], lo)
                        FB[1, i] = max(FB[1, i], hi)
                        top = max(top, RB[i])
                    if y < last:
                        last = _cycle_end(fc, fg, fm, FB, now, tests, y, last, nodes, limit, cores, gpus, mem,
                                          wit, wmark, pick, 0, nodes[j], maxc, maxg, maxm)
                reserved += 1
            if status == GROW:
                break
        for y in range(D):
            j = due[y]
            R, H = _launch(j, now, now + limit[j], begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)
        if D:
            Q = _compact(q, Q, begin)
    _store_counts(st, sf, 0, R, H, Q, a, done, now)
    _store_clocks(st, sf, kbf, kfull, t0, next_bf, next_full)
    st[ST_CYCLE] = cycle
    return status


@njit(cache=True, _nrt=False)
def _widen(st, at, need, D, last, y, reserved):
    """Save where a cycle stopped for wider profiles (``shared_slurm_steps``); the status."""
    st[ST_AT] = at
    st[ST_WIDENED + at - AT_CYCLE] += 1
    st[ST_NEED] = need
    st[ST_D] = D
    st[ST_LAST] = last
    st[ST_Y] = y
    st[ST_RESERVED] = reserved
    return GROW


def settings_arrays(params, big):
    """``check_backfill_params``' settings as ``_slurm``'s two arrays (seconds; counts, ``big``
    for no limit); ``bf_max_job_part`` folded into ``bf_max_job_test`` (one partition)."""
    from ..policies.slurm_backfill import check_backfill_params

    p = check_backfill_params(params)
    count = lambda v: big if v == np.inf else int(v)  # noqa: E731
    max_test = count(p["bf_max_job_test"])
    if p["bf_max_job_part"]:  # one partition: its cap and bf_max_job_test count the same jobs
        max_test = min(max_test, p["bf_max_job_part"])
    pf_ = np.zeros(P_F_SIZE)
    pf_[[P_INTERVAL, P_SCHED, P_WINDOW, P_RES]] = (
        p["bf_interval"], p["sched_interval"], p["bf_window"] * 60.0, p["bf_resolution"])
    pi = np.zeros(P_I_SIZE, np.int64)
    pi[[P_MAX_TEST, P_MAX_USER, P_RESERVE, P_DEPTH]] = (
        max_test, p["bf_max_job_user"], p["bf_job_part_count_reserve"], count(p["default_queue_depth"]))
    return pf_, pi


def run_shared_slurm(submit, limit, nodes, dur, rank, request, machine, users, backfill_params, progress=None,
                     counters=None):
    """Begin, end, node_start, node_list as ``sim.shared._run_events`` with ``_SlurmShared``;
    ``machine`` is the partition's (node count, cores, GPUs, KiB of memory) per node. Every
    array of :func:`shared_slurm_steps` allocated here, the driver called in slices of
    ``kernel.STEP_BUDGET`` events (``progress`` and Ctrl-C between them); the profiles are
    widened whenever it asks (status ``GROW``) and it goes on. ``counters`` (a dict), if given,
    gets the work done added to it (``COUNTERS``)."""
    from . import _kernels as kernels, _run_slices, _running_arrays
    from .shared import STOP_EVERYWHERE, _longer, _widening

    cores, gpus, mem = (np.ascontiguousarray(r, dtype=np.int64) for r in request)
    n = int(submit.shape[0])
    if n == 0:
        return np.empty(0), np.empty(0), np.zeros(1, np.int64), np.empty(0, np.int64)
    pf_, pi = settings_arrays(backfill_params, int(BIG))
    submit = np.ascontiguousarray(submit, dtype=np.float64)
    nodes = np.ascontiguousarray(nodes, dtype=np.int64)
    arrivals = np.ascontiguousarray(np.argsort(submit, kind="stable"), dtype=np.int64)
    _, user_index = np.unique(np.asarray(users, dtype=np.int64), return_inverse=True)
    n_users = int(user_index.max()) + 1
    n_nodes, cap_c, cap_g, cap_m = (int(x) for x in machine)
    node_start, node_list = _node_lists(nodes)
    fixed = (submit, np.ascontiguousarray(limit, dtype=np.float64), nodes, np.ascontiguousarray(dur, dtype=np.float64),
             arrivals, np.ascontiguousarray(rank, dtype=np.int64), cores, gpus, mem,
             np.ascontiguousarray(user_index, dtype=np.int64), np.int64(cap_c), np.int64(cap_g), np.int64(cap_m),
             pf_, pi, np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan),  # begin, end, estimated end
             node_start, node_list, np.full(n_nodes, cap_c, np.int64), np.full(n_nodes, cap_g, np.int64),
             np.full(n_nodes, cap_m, np.int64), np.empty(n_nodes, np.int64),  # free resources, picked nodes
             *_running_arrays(n + 1),  # running, completion heap (a job may ask for no cores: no bound below n)
             np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),  # queue, started, tested
             np.zeros(n_users, np.int64), np.zeros(n_users, np.int64),  # per-user tested count, its cycle
             np.zeros(n_nodes, np.int64), np.empty(n_nodes),  # segments per node; earliest start per node
             np.empty(n_nodes, np.int64), np.zeros(n_nodes, np.bool_),  # where the cycle's last start fits now
             np.empty(n_nodes, np.bool_), np.empty((4, n_nodes), np.int64),  # cons_tres: usable nodes, runs of them
             np.empty(n_nodes),  # _earliest_all's k smallest starts
             np.empty((3, n_nodes), np.int64),  # most free cores, GPUs, KiB of each node before its last segment
             np.empty(n), np.full(n, -1, np.int64), np.empty(node_list.shape[0], np.int64),  # each job's last fit
             np.zeros(n_nodes, np.int64),  # the planned cycle in which each node last changed
             np.zeros(n, np.bool_),  # whether each job's last fit held its nodes (inside the window)
             np.empty(n, np.int64),  # the cycle's jobs whose fit is at the window end (``_beyond``)
             np.zeros(n_nodes + 2, np.int64),  # the latest stamp, how many nodes have it, those nodes
             np.full((2, n_nodes), np.inf),  # each node's reservations in the cycle: earliest start, latest end
             np.zeros(n_nodes, np.int64))  # ... and how many held spans
    w = PROFILE_WIDTH
    profiles = [np.empty((n_nodes, w)), np.empty((n_nodes, w), np.int64), np.empty((n_nodes, w), np.int64),
                np.empty((n_nodes, w), np.int64),  # breakpoints; free cores, GPUs, KiB from each (widened)
                np.empty((n_nodes, w)), np.empty((n_nodes, w))]  # the held spans' starts and ends (the same)
    st = np.zeros(max(kernels.ST_SIZE, ST_SIZE), np.int64)
    sf = np.zeros(max(kernels.SF_SIZE, SF_SIZE))
    start_clocks(st, sf)
    st[ST_EVERY] = int(STOP_EVERYWHERE)
    _run_slices(kernels, _widening(shared_slurm_steps, fixed, profiles, lambda grown, st: _longer(grown, int(st[ST_NEED]))),
                (), st, sf, progress,
                {-3: "a job never fits its partition (shared-node Slurm kernel)"},
                "shared-node Slurm kernel stalled with {left} job(s) waiting")
    if counters is not None:
        for name, slot in COUNTERS.items():
            counters[name] = counters.get(name, 0) + int(st[slot])
    return fixed[15], fixed[16], node_start, node_list
