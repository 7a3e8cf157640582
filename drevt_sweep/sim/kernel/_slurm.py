"""numba kernel of ``backfill: slurm`` (``policies.slurm_backfill``): Slurm's main scheduler on
events and a backfill cycle every ``bf_interval``, bit for bit the reference's schedule.

Scope: one whole-node pool of constant size, static priorities (a rank per job), no
association limits and no ``PriorityTier`` (``engine._use_fast_kernel`` sends every other case
to the reference). The event loop is ``_kernels``' (its steps ``_next_event``,
``_finish_next``, ``_launch``, the segment tree over ranks of ``queue_policy_steps``); what is
Slurm's here is when a pass runs and what it does:

* the main scheduler (``job_scheduler.c`` ``_schedule``) at an event with an arrival or a
  completion, to ``default_queue_depth`` + 1 jobs, and over the whole queue at the periodic
  full pass (every ``sched_interval``): the queue's prefix that fits starts;
* the backfill cycle (``backfill.c`` ``_attempt_backfill``) at ``t0 + k * bf_interval``: the
  free-node profile of the running jobs cut at the window end is ``_kernels``' chunked profile
  (``_prof_rebuild``, ``_prof_fit``, ``_prof_occupy``: the same step function as the reference's
  ``Profile``, so the same earliest fits); per-user counts of the cycle are stamped with the
  cycle's number instead of cleared (``_check_bf_usage`` does the same with ``last_sched``).

The clocks of both periodic passes follow ``SlurmBackfill._due``: they start at the first pass
and the ones that fall while no job waits are skipped.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import (BIG, ST_HEAD, SF_NOW, _finish_next,
                       _first_waiting, _launch, _load_counts, _next_event, _prof_fit, _prof_occupy,
                       _prof_rebuild, _seg_clear, _seg_set, _store_counts)

# scalars carried between slices (st: int64, sf: float64), after _kernels' shared ones
ST_KBF = 7  # index of the next backfill cycle (t0 + k * bf_interval)
ST_KFULL = 8  # index of the next periodic full pass (t0 + k * sched_interval)
ST_CYCLE = 9  # number of the current backfill cycle (stamps the per-user counts)
ST_SKIP = 10  # 1 while the clocks jump over passes that start nothing (SF_WAKE: where to)
ST_SIZE = 11
SF_T0 = 1  # time of the first pass (NaN before it)
SF_WAKE = 2  # the next cycle or full pass while jobs wait (SlurmBackfill.wake_at)
SF_NEXT_BF = 3
SF_NEXT_FULL = 4
SF_SIZE = 5
# the settings (policies.slurm_backfill.check_backfill_params), as two arrays
P_INTERVAL = 0  # bf_interval, s (0: at every pass)
P_SCHED = 1  # sched_interval, s (0: none)
P_WINDOW = 2  # bf_window, s (inf: none)
P_RES = 3  # bf_resolution, s (0: exact)
P_F_SIZE = 4
P_MAX_TEST = 0  # min(bf_max_job_test, bf_max_job_part): jobs tested per cycle (BIG: no limit)
P_MAX_USER = 1  # bf_max_job_user (0: none)
P_RESERVE = 2  # bf_job_part_count_reserve (0: none)
P_DEPTH = 3  # default_queue_depth (BIG: whole queue)
P_I_SIZE = 4


@njit(cache=True, _nrt=False, inline="always")
def _due(now, t0, step, k):
    """``SlurmBackfill._due``: whether the k-th tick ``t0 + k * step`` (or the first one not
    before ``now``, the ones passed while no job waited being skipped) falls at ``now``.
    Returns (due, index of the next tick, its time)."""
    t = t0 + k * step
    if t < now:
        c = np.int64(np.ceil((now - t0) / step))
        if c > k:
            k = c
        while t0 + k * step < now:
            k += 1
        t = t0 + k * step
    due = t == now
    if due:
        k += 1
    return due, k, t0 + k * step


@njit(cache=True, _nrt=False, inline="always")
def _first_tick(t0, step, k, t):
    """Index of the first tick ``t0 + i * step`` at or after ``t`` from ``k`` on: where the
    reference's clock stands after visiting every tick before ``t`` one by one (ticks rise
    with i; the estimate from ``ceil`` is corrected both ways)."""
    if t0 + k * step >= t:
        return k
    c = np.int64(np.ceil((t - t0) / step))
    if c < k:
        c = k
    while c > k and t0 + (c - 1) * step >= t:
        c -= 1
    while t0 + c * step < t:
        c += 1
    return c


@njit(cache=True, _nrt=False, inline="always")
def _window_end(now, window, res):
    """``floor((now + bf_window) / bf_resolution) * bf_resolution`` (exact without a resolution)."""
    w = now + window
    if res > 0 and w != np.inf:
        w = np.floor(w / res) * res
    return w


@njit(cache=True, _nrt=False)
def _cycle(now, free, total, limit, nodes, users, pf_, pi, begin, end, est, dur, job_of_rank,
           tn, tl, re, rj, rn, R, hk, hj, H, Q, pt, pf, pb, ps, ucount, ustamp, cycle):
    """One backfill cycle (``_attempt_backfill``; see ``policies.slurm_backfill``) after the
    main scheduler's starts. Returns (free, running, heap, waiting, quiet, window_ok): when it
    started nothing, ``quiet`` is the time before which a cycle in the same state starts nothing
    either (``slurm_steps`` says why), else ``now``; ``window_ok`` whether that holds across
    window ends later than this one's."""
    size = tn.shape[0] // 2
    window = pf_[P_WINDOW]
    res = pf_[P_RES]
    window_end = _window_end(now, window, res)
    if window_end <= now:
        return free, R, H, Q, now, False  # "Now after current backfill window": no cycle
    # the profile: releases before the window end (overdue jobs right after now), all nodes
    # free from the window end on
    soon = np.nextafter(now, np.inf)
    r_in = 0
    level = free
    while r_in < R and (re[r_in] if re[r_in] > now else soon) < window_end:
        level += rn[r_in]
        r_in += 1
    _prof_rebuild(pt, pf, pb, ps, now, free, re, rn, r_in, rj, 0, est, limit, nodes)  # (no reservations)
    if window_end != np.inf:
        _prof_occupy(pt, pf, pb, ps, window_end, np.inf, level - total)
    max_test = pi[P_MAX_TEST]
    max_user = pi[P_MAX_USER]
    cap = pi[P_RESERVE]
    tested = 0
    reserved = 0
    quiet = np.inf
    if R > 0:
        quiet = re[0] if re[0] > now else now  # (an overdue job's release moves with now)
    window_ok = True
    beyond = False  # a job found no start in the window and could have been reserved
    beyond_of = 0  # nodes that reservations may take after the window end in a later window
    h = _first_waiting(tn, tl, size, 0)
    while h >= 0 and tested < max_test:
        j = job_of_rank[h]
        if max_user > 0:
            u = users[j]
            if ustamp[u] != cycle:
                ustamp[u] = cycle
                ucount[u] = 0
            if ucount[u] >= max_user:
                h = _first_waiting(tn, tl, size, h + 1)
                continue
            ucount[u] += 1
        tested += 1
        nj = nodes[j]
        d = limit[j]
        s = _prof_fit(pt, pf, pb, ps, now, nj, d, np.inf, np.inf)
        if s < quiet:
            quiet = s
        leaf = h + size
        h = _first_waiting(tn, tl, size, h + 1)
        if s == now:
            R, H = _launch(j, now, now + d, begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)
            free -= nj
            _seg_clear(tn, tl, leaf)
            Q -= 1
            _prof_occupy(pt, pf, pb, ps, now, now + d, nj)
            continue
        if cap > 0 and reserved >= cap:
            continue
        a = s
        if res > 0:
            a = np.floor(a / res) * res
        if s >= window_end:  # no reservation (starts after the window)
            beyond = True
            beyond_of += nj
            window_ok = window_ok and a >= window_end  # a later window's reservation starts at or after this end
            continue
        if s > now + window:
            quiet = now  # (a window end rounded up past now + bf_window: never skipped)
            continue
        b = s + d
        if res > 0:
            b = np.floor((b + res - 1) / res) * res  # _set_slot_time
        if a < now:
            a = now
        if b > window_end:
            b = window_end
        if b > a:  # (a resolution under 1 s can round a tiny job's end before its start: no change)
            _prof_occupy(pt, pf, pb, ps, a, b, nj)
        reserved += 1
        if s + d > window_end:  # cut by the window end: in a later window it still fits if
            window_ok = window_ok and level - beyond_of >= nj  # the jobs before it leave room
            beyond_of += nj
        window_ok = window_ok and not (cap > 0 and beyond)  # (counted after one a later window may add)
    return free, R, H, Q, quiet, window_ok


@njit(cache=True, _nrt=False)
def slurm_steps(submit, limit, nodes, dur, arrivals, rank, users, total, pf_, pi,
                begin, end, est, job_of_rank, tn, tl, re, rj, rn, hk, hj, pt, pf, pb, ps,
                ucount, ustamp, st, sf, budget):
    """``SlurmBackfill`` in ``engine._run_events``' loop from state ``st``/``sf``, for about
    ``budget`` events (1: more to do, 0: done).

    Jumping over passes that start nothing. The reference visits every cycle and periodic pass
    while jobs wait (~1 M events on KTH-SP2 with Slurm's defaults); most change nothing. After
    a cycle at t1 that started no job, with no arrival, completion or start since (so the
    queue, the running jobs and the free nodes are those of t1), a cycle at t2 > t1 starts no
    job either if t2 < ``quiet`` = the earliest start s_k any tested job k found at t1 (and the
    earliest estimated end of a running job, which must not become overdue: an overdue job's
    release moves with ``now``), and the window end is unchanged or ``window_ok``. Why, by
    induction over the tested jobs (the same jobs in the same order: nothing they depend on
    changed), with P_k the profile job k is placed in:

    * same window end: P_k(t2) is P_k(t1) from t2 on. A start at t2 would fit in P_k(t1) at t2,
      hence at the last breakpoint p <= t2 (the level is constant on [p, t2]), so s_k <= t2:
      excluded by t2 < quiet. Starts after t2 are the same, so s_k is the same, and so is its
      reservation from t2 on (``max(floor(s/r)*r, now)`` only cuts what lies before now).
    * a later window end we2 > we1 (``window_ok``): P_k(t2) equals P_k(t1) on [t2, we1), and
      after we1 it is at most ``total``, which is P_k(t1) there (no start, reservations cut at
      we1, releases after we1 left out), so P_k(t2) <= P_k(t1) everywhere and s_k cannot get
      earlier. A job with s_k + d_k <= we1 keeps s_k and its reservation before we1. A job with
      s_k >= we1 had none and may get one, starting at or after ``floor(s_k/r)*r``, checked to
      be >= we1. A job cut by we1 keeps its place if the nodes free after we1 (``level``: the
      running jobs' releases before we1 counted) minus all that the jobs before it may take
      there (earlier cut jobs and jobs past the window) leave it room. With
      ``bf_job_part_count_reserve``, a job past the window may take a reservation a later job
      held, so no reservation may follow one.

    The periodic full passes in between start nothing (the head was tested and could not start
    now, so it does not fit in the free nodes). So the clocks jump to the first cycle at or after
    ``quiet`` (or at the first later window end), unless an event comes first, and then stand
    where the reference's tick-by-tick visits leave them (``_first_tick``). Checked bit for bit
    against the reference (which visits every tick) in ``tests/test_slurm_kernel.py``.
    """
    size = tn.shape[0] // 2
    interval = pf_[P_INTERVAL]
    sched = pf_[P_SCHED]
    depth = pi[P_DEPTH]
    window = pf_[P_WINDOW]
    res = pf_[P_RES]
    skipping = st[ST_SKIP] == 1
    free, R, H, Q, a, done = _load_counts(st)
    head = st[ST_HEAD]
    kbf = st[ST_KBF]
    kfull = st[ST_KFULL]
    now = sf[SF_NOW]
    t0 = sf[SF_T0]
    wake = sf[SF_WAKE]
    next_bf = sf[SF_NEXT_BF]
    next_full = sf[SF_NEXT_FULL]
    n_arr = arrivals.shape[0]
    status = 0
    events = 0
    while a < n_arr or H > 0 or (Q > 0 and wake < np.inf):
        if events >= budget:
            status = 1
            break
        events += 1
        now = _next_event(submit, arrivals, a, hk, H)
        if wake < now:
            now = wake
        if skipping:  # both clocks pass the ticks jumped over, as the reference's visits did
            skipping = False
            if interval > 0:
                kbf = _first_tick(t0, interval, kbf, now)
            if sched > 0:
                kfull = _first_tick(t0, sched, kfull, now)

        # 1. completions
        completed = False
        while H > 0 and hk[0] <= now:
            j, H, R = _finish_next(hk, hj, H, re, rj, rn, R, est)
            free += nodes[j]
            done += 1
            completed = True

        # 2. arrivals
        arrived = False
        while a < n_arr and submit[arrivals[a]] <= now:
            j = arrivals[a]
            a += 1
            r = rank[j]
            _seg_set(tn, tl, r + size, nodes[j], limit[j])
            Q += 1
            arrived = True
            if r < head:
                head = r

        if Q == 0:
            wake = np.inf
            continue

        # 3. one pass (SlurmBackfill.select)
        if t0 != t0:  # the first pass starts both clocks
            t0 = now
        bf_due = interval == 0
        if not bf_due:
            bf_due, kbf, next_bf = _due(now, t0, interval, kbf)
        full = False
        if sched > 0:
            full, kfull, next_full = _due(now, t0, sched, kfull)
        if arrived or completed or full:  # the main scheduler: the prefix that fits starts
            limit_jobs = BIG if full else depth
            looked = 0
            h = head
            while h >= 0 and looked <= limit_jobs:  # job_depth++ > def_job_limit
                looked += 1
                j = job_of_rank[h]
                nj = nodes[j]
                if nj > free:
                    break  # the partition failed
                R, H = _launch(j, now, now + limit[j], begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)
                free -= nj
                _seg_clear(tn, tl, h + size)
                Q -= 1
                h = _first_waiting(tn, tl, size, h + 1)
            head = h if h >= 0 else size
        quiet = now
        window_ok = False
        if bf_due and Q > 0:
            st[ST_CYCLE] += 1
            waiting = Q
            free, R, H, Q, quiet, window_ok = _cycle(
                now, free, total, limit, nodes, users, pf_, pi, begin, end, est, dur, job_of_rank, tn, tl,
                re, rj, rn, R, hk, hj, H, Q, pt, pf, pb, ps, ucount, ustamp, st[ST_CYCLE])
            if Q != waiting:
                quiet = now  # it started jobs: the next cycle has another state
            h = _first_waiting(tn, tl, size, head)
            head = h if h >= 0 else size
        wake = np.inf
        if Q > 0:
            if interval > 0:
                wake = next_bf
            if sched > 0 and next_full < wake:
                wake = next_full
            step = interval if interval > 0 else sched  # the clock of the passes that run a cycle
            if quiet > now and step > 0:  # jump to the first cycle that may start a job
                k = kbf if interval > 0 else kfull
                last = _first_tick(t0, step, k, quiet)
                if not window_ok:  # ... or has a later window end
                    we = _window_end(now, window, res)
                    while k < last:
                        mid = (k + last) >> 1
                        if _window_end(t0 + mid * step, window, res) > we:
                            last = mid
                        else:
                            k = mid + 1
                t = t0 + last * step
                if t > wake:
                    wake = t
                    skipping = True
    _store_counts(st, free, R, H, Q, a, done)
    st[ST_HEAD] = head
    st[ST_KBF] = kbf
    st[ST_KFULL] = kfull
    st[ST_SKIP] = 1 if skipping else 0
    sf[SF_NOW] = now
    sf[SF_T0] = t0
    sf[SF_WAKE] = wake
    sf[SF_NEXT_BF] = next_bf
    sf[SF_NEXT_FULL] = next_full
    return status
