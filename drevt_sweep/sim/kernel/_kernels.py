"""numba kernels: the event loop of ``drevt_sweep.engine`` compiled, bit for bit the same.

Importing this module imports numba; ``drevt_sweep.fast`` does so only when a simulation first
asks for the fast kernel. Every function is ``@njit(cache=True)``: the first process compiles
(10-30 s on the 2-core development machine) and stores the machine code in ``__pycache__``;
later processes load it (well under a second, most of it numba's own start-up).

Two drivers share the engine's event loop (completions, then arrivals, then one pass):

* :func:`run_queue_policy` for ``none`` / ``easy`` / ``easy_drevt``. The waiting queue is a
  segment tree over the static priority ranks (leaf ``r`` = the job of rank ``r`` while it
  waits), holding per subtree the minimum requested nodes and the minimum time limit; the head
  (smallest waiting rank) is tracked. "Next waiting job", "first waiting job that fits in
  ``free`` nodes" (no such job: no shadow time is computed at all) and "first backfill
  candidate" (fits now and passes EASY's time test or fits in the extra nodes) are descents
  that skip whole ranges of jobs that cannot qualify, so a pass costs about O((started + 1)
  log n) instead of O(queue length). Running jobs are kept sorted by estimated end (the shadow
  time walks them from the earliest), completions come from a binary heap over real ends.
  Limitation: the candidate descent prunes with the two minima separately, so a long queue of
  jobs that are each either too big or too long (typical of ``easy_drevt``, which has no
  extra-nodes rule, at sustained overload) makes it backtrack through much of the queue.
* :func:`run_conservative` for ``conservative``. The waiting queue is an array in priority
  order; the availability profile is kept *between* passes (sorted breakpoint arrays, updated
  when a job ends early) instead of rebuilt at every pass. Re-planning replays the reference's
  rounds exactly, but uses that the plan after a pass is a fixpoint: a reserved job can only
  move to a start before the end of the region where the profile has since grown, and whether
  it can is checked without taking it out of the profile (the common "it stays" case then
  costs one scan and no update). With limits not enforced the profile is rebuilt at every pass
  and every job re-placed, as the reference does (overdue jobs release "right after now",
  which moves with ``now``).

Exactness. Times are float64 and every sum the reference computes (``now + time_limit``,
``begin + run_time``, ``start + time_limit``, ``nextafter(now, inf)``) is computed here the same
way. Only the *function* of an availability profile matters to ``earliest_fit`` (redundant
breakpoints never change its answer), so the persistent profile gives the same reservations as
the reference's rebuilt one. ``tests/test_fast_kernel.py`` checks equality bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

BIG = np.int64(1) << np.int64(62)  # "no waiting job here" in the segment tree's node minima

MODE_NONE = 0
MODE_EASY = 1
MODE_EASY_DREVT = 2


# --- completions: binary min-heap over (real end, job) ---------------------------------------


@njit(cache=True)
def _heap_push(hk, hj, size, t, j):
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if hk[p] <= t:
            break
        hk[i] = hk[p]
        hj[i] = hj[p]
        i = p
    hk[i] = t
    hj[i] = j
    return size + 1


@njit(cache=True)
def _heap_pop(hk, hj, size):
    """Remove the top; returns the new size."""
    size -= 1
    if size == 0:
        return 0
    t = hk[size]
    j = hj[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and hk[c + 1] < hk[c]:
            c += 1
        if hk[c] >= t:
            break
        hk[i] = hk[c]
        hj[i] = hj[c]
        i = c
    hk[i] = t
    hj[i] = j
    return size


# --- running jobs: arrays sorted by (estimated end, job) -------------------------------------


@njit(cache=True)
def _run_pos(re, rj, count, e, j):
    """First index whose (est_end, job) is >= (e, j)."""
    a = 0
    b = count
    while a < b:
        m = (a + b) >> 1
        if re[m] < e or (re[m] == e and rj[m] < j):
            a = m + 1
        else:
            b = m
    return a


@njit(cache=True)
def _run_insert(re, rj, rn, count, e, j, nj):
    p = _run_pos(re, rj, count, e, j)
    for k in range(count, p, -1):
        re[k] = re[k - 1]
        rj[k] = rj[k - 1]
        rn[k] = rn[k - 1]
    re[p] = e
    rj[p] = j
    rn[p] = nj
    return count + 1


@njit(cache=True)
def _run_remove(re, rj, rn, count, e, j):
    p = _run_pos(re, rj, count, e, j)
    for k in range(p, count - 1):
        re[k] = re[k + 1]
        rj[k] = rj[k + 1]
        rn[k] = rn[k + 1]
    return count - 1


@njit(cache=True)
def _shadow(re, rn, count, now, need, free):
    """EASY's (shadow time, extra nodes); ``Cluster.shadow`` over the sorted running jobs."""
    soon = np.nextafter(now, np.inf)
    avail = free
    shadow = np.inf
    for r in range(count):
        e = re[r]
        t = e if e > now else soon
        if shadow != np.inf and t != shadow:
            break
        avail += rn[r]
        if shadow == np.inf and avail >= need:
            shadow = t
    if shadow == np.inf:
        return np.inf, 0
    return shadow, avail - need


# --- waiting queue (none / EASY): segment tree over priority ranks ---------------------------


@njit(cache=True)
def _seg_update(tn, tl, i):
    """Recompute the minima above leaf index ``i`` (stops as soon as nothing changes)."""
    i >>= 1
    while i >= 1:
        a = tn[2 * i]
        b = tn[2 * i + 1]
        nv = a if a < b else b
        x = tl[2 * i]
        y = tl[2 * i + 1]
        lv = x if x < y else y
        if nv == tn[i] and lv == tl[i]:
            break
        tn[i] = nv
        tl[i] = lv
        i >>= 1


@njit(cache=True)
def _first_waiting(tn, size, p):
    """Smallest rank >= p whose job waits, or -1 (a waiting job's leaf holds its node count,
    an empty leaf BIG)."""
    return _first_fit(tn, size, p, BIG - 1)


@njit(cache=True)
def _first_fit(tn, size, p, free):
    """Smallest rank >= p whose waiting job asks for at most ``free`` nodes, or -1."""
    if p >= size:
        return -1
    i = p + size
    while True:
        if tn[i] <= free:
            if i >= size:
                return i - size
            i = 2 * i
        else:
            while i & 1:
                i >>= 1
            if i == 0:
                return -1
            i += 1


@njit(cache=True)
def _first_candidate(tn, tl, size, p, free, now, shadow, extra, strict, use_extra):
    """Smallest rank >= p whose waiting job EASY would backfill now, or -1.

    A job qualifies if it fits in ``free`` and either ends (``now + limit``) before the shadow
    time (or at it, unless ``strict``) or fits in the ``extra`` nodes (``use_extra``). A subtree
    is entered only if its minimum nodes and minimum limit could qualify (a necessary
    condition; leaves are tested exactly), so the descent backtracks where they come from
    different jobs.
    """
    if p >= size:
        return -1
    i = p + size
    while True:
        mn = tn[i]
        ok = False
        if mn <= free:
            e = now + tl[i]
            if e < shadow or (e == shadow and not strict):
                ok = True
            elif use_extra and mn <= extra:
                ok = True
        if ok:
            if i >= size:
                return i - size
            i = 2 * i
        else:
            while i & 1:
                i >>= 1
            if i == 0:
                return -1
            i += 1


@njit(cache=True)
def run_queue_policy(submit, limit, nodes, dur, arrivals, rank, total, mode):
    """none / easy / easy_drevt. Returns (begin, end, jobs left waiting)."""
    n = submit.shape[0]
    begin = np.full(n, np.nan)
    end = np.full(n, np.nan)
    est = np.full(n, np.nan)
    job_of_rank = np.empty(n, np.int64)
    for j in range(n):
        job_of_rank[rank[j]] = j
    size = 1
    while size < n:
        size <<= 1
    tn = np.full(2 * size, BIG, np.int64)
    tl = np.full(2 * size, np.inf)
    rmax = min(total, n) + 1
    re = np.empty(rmax, np.float64)
    rj = np.empty(rmax, np.int64)
    rn = np.empty(rmax, np.int64)
    hk = np.empty(rmax, np.float64)
    hj = np.empty(rmax, np.int64)
    use_extra = mode == MODE_EASY
    strict = mode == MODE_EASY_DREVT
    head = size  # smallest waiting rank (size: nobody waits)

    free = total
    R = 0
    H = 0
    Q = 0
    a = 0
    n_arr = arrivals.shape[0]
    while a < n_arr or H > 0:
        t_arr = submit[arrivals[a]] if a < n_arr else np.inf
        t_end = hk[0] if H > 0 else np.inf
        now = t_arr if t_arr < t_end else t_end

        # 1. completions
        while H > 0 and hk[0] <= now:
            j = hj[0]
            H = _heap_pop(hk, hj, H)
            R = _run_remove(re, rj, rn, R, est[j], j)
            free += nodes[j]

        # 2. arrivals
        while a < n_arr and submit[arrivals[a]] <= now:
            j = arrivals[a]
            a += 1
            r = rank[j]
            leaf = r + size
            tn[leaf] = nodes[j]
            tl[leaf] = limit[j]
            _seg_update(tn, tl, leaf)
            Q += 1
            if r < head:
                head = r

        if Q == 0:
            continue

        # 3. one pass: start jobs in priority order while they fit
        h = head
        while h >= 0:
            j = job_of_rank[h]
            nj = nodes[j]
            if nj > free:
                break
            begin[j] = now
            end[j] = now + dur[j]
            est[j] = now + limit[j]
            R = _run_insert(re, rj, rn, R, est[j], j, nj)
            H = _heap_push(hk, hj, H, end[j], j)
            free -= nj
            leaf = h + size
            tn[leaf] = BIG
            tl[leaf] = np.inf
            _seg_update(tn, tl, leaf)
            Q -= 1
            h = _first_waiting(tn, size, h + 1)
        head = h if h >= 0 else size
        if h < 0 or mode == MODE_NONE or free == 0:
            continue
        # EASY: skip the reservation when no later job fits in the free nodes at all
        c = _first_fit(tn, size, h + 1, free)
        if c < 0:
            continue
        shadow, extra = _shadow(re, rn, R, now, nodes[job_of_rank[h]], free)
        while True:
            c = _first_candidate(tn, tl, size, c, free, now, shadow, extra, strict, use_extra)
            if c < 0:
                break
            j = job_of_rank[c]
            nj = nodes[j]
            e = now + limit[j]
            if not (e < shadow or (e == shadow and not strict)):
                extra -= nj  # admitted by the extra-nodes rule
            begin[j] = now
            end[j] = now + dur[j]
            est[j] = e
            R = _run_insert(re, rj, rn, R, e, j, nj)
            H = _heap_push(hk, hj, H, end[j], j)
            free -= nj
            leaf = c + size
            tn[leaf] = BIG
            tl[leaf] = np.inf
            _seg_update(tn, tl, leaf)
            Q -= 1
            if free == 0:
                break
            c += 1
    return begin, end, Q


# --- conservative: availability profile as sorted breakpoint arrays --------------------------
# pt[lo:hi] breakpoint times (strictly increasing), pf[lo:hi] free nodes from each breakpoint
# to the next (the last step lasts forever); ps = [lo, hi].


@njit(cache=True)
def _prof_compact(pt, pf, ps):
    """Drop redundant breakpoints (same free nodes as the previous one) and move to index 0."""
    lo = ps[0]
    hi = ps[1]
    pt[0] = pt[lo]
    pf[0] = pf[lo]
    w = 0
    for k in range(lo + 1, hi):
        if pf[k] != pf[w]:
            w += 1
            pt[w] = pt[k]
            pf[w] = pf[k]
    ps[0] = 0
    ps[1] = w + 1


@njit(cache=True)
def _prof_split(pt, pf, ps, t):
    """Index of the breakpoint at ``t`` (``t >= pt[lo]``), inserting one if needed."""
    hi = ps[1]
    a = ps[0]
    b = hi
    while a < b:
        m = (a + b) >> 1
        if pt[m] < t:
            a = m + 1
        else:
            b = m
    if a == hi or pt[a] != t:
        for k in range(hi, a, -1):
            pt[k] = pt[k - 1]
            pf[k] = pf[k - 1]
        pt[a] = t
        pf[a] = pf[a - 1]
        ps[1] = hi + 1
    return a


@njit(cache=True)
def _prof_add(pt, pf, ps, start, stop, delta):
    """Add ``delta`` free nodes over [start, stop) (``Profile.add``)."""
    if ps[1] + 2 > pt.shape[0]:
        _prof_compact(pt, pf, ps)
    i = _prof_split(pt, pf, ps, start)
    if stop != np.inf:
        k = _prof_split(pt, pf, ps, stop)
    else:
        k = ps[1]
    for x in range(i, k):
        pf[x] += delta


@njit(cache=True)
def _prof_earliest_fit(pt, pf, ps, need, duration):
    """``Profile.earliest_fit``: the earliest breakpoint with ``need`` nodes free for ``duration``."""
    hi = ps[1]
    i = ps[0]
    while i < hi:
        if pf[i] < need:
            i += 1
            continue
        start = pt[i]
        stop = start + duration
        k = i + 1
        ok = True
        while k < hi and pt[k] < stop:
            if pf[k] < need:
                ok = False
                break
            k += 1
        if ok:
            return start
        i = k + 1
    return np.inf


@njit(cache=True)
def _prof_earlier_fit(pt, pf, ps, need, duration, old, before):
    """Where a reserved job moves when re-placed (limits enforced): ``earliest_fit`` on the
    profile with its own reservation ``[old, old + duration)`` taken out, among the breakpoints
    before ``before`` (<= ``old``) only.

    Returns +inf if there is none: the job then stays at ``old``, which is feasible (the profile
    never goes below zero while limits are enforced), and the reference's remove/re-add leaves
    the profile's function unchanged. Needs breakpoints at both ends of the reservation (the
    driver keeps them); the job's own nodes count as free between them.
    """
    old_end = old + duration
    hi = ps[1]
    i = ps[0]
    a = i  # candidates: the breakpoints before ``before`` (found once, so the scan reads pf only)
    b = hi
    while a < b:
        m = (a + b) >> 1
        if pt[m] < before:
            a = m + 1
        else:
            b = m
    last = a
    while i < last:
        if pf[i] < need:
            i += 1
            continue
        start = pt[i]
        stop = start + duration
        k = i + 1
        ok = True
        while k < hi and pt[k] < stop:
            v = pf[k]
            if old <= pt[k] < old_end:
                v += need
            if v < need:
                ok = False
                break
            k += 1
        if ok:
            return start
        i = k + 1
    return np.inf


@njit(cache=True)
def _prof_room(pt, pf, ps, slots, q, Q, res, limit):
    """Make room for ``slots`` more breakpoints (limits enforced): when the arrays are full,
    drop redundant breakpoints, then restore a breakpoint at both ends of every reservation
    (``_prof_earlier_fit`` relies on them)."""
    if ps[1] + slots <= pt.shape[0]:
        return
    _prof_compact(pt, pf, ps)
    for i in range(Q):
        j = q[i]
        s = res[j]
        if s == s:
            _prof_split(pt, pf, ps, s)
            _prof_split(pt, pf, ps, s + limit[j])


@njit(cache=True)
def _prof_trim(pt, pf, ps, now):
    """Make ``now`` the profile's first breakpoint (drop the past)."""
    lo = ps[0]
    hi = ps[1]
    while lo + 1 < hi and pt[lo + 1] <= now:
        lo += 1
    pt[lo] = now
    ps[0] = lo


@njit(cache=True)
def _prof_rebuild(pt, pf, ps, now, free, re, rn, R, q, Q, res, limit, nodes):
    """``Cluster.profile``: running jobs' releases (overdue ones right after ``now``) + reservations."""
    soon = np.nextafter(now, np.inf)
    pt[0] = now
    pf[0] = free
    m = 1
    level = free
    for r in range(R):
        e = re[r]
        t = e if e > now else soon
        level += rn[r]
        if t == pt[m - 1]:
            pf[m - 1] = level
        else:
            pt[m] = t
            pf[m] = level
            m += 1
    ps[0] = 0
    ps[1] = m
    for i in range(Q):
        j = q[i]
        s = res[j]
        if s == s:  # reserved
            _prof_add(pt, pf, ps, s, s + limit[j], -nodes[j])


@njit(cache=True)
def run_conservative(submit, limit, nodes, dur, arrivals, rank, total, enforce):
    """Conservative backfilling. Returns (begin, end, jobs left waiting), or -1 as the last
    if a plan did not converge, -2 if it over-committed the machine (the reference raises)."""
    n = submit.shape[0]
    begin = np.full(n, np.nan)
    end = np.full(n, np.nan)
    est = np.full(n, np.nan)
    res = np.full(n, np.nan)  # reserved start of each waiting job (NaN = none yet)
    rmax = min(total, n) + 1
    re = np.empty(rmax, np.float64)
    rj = np.empty(rmax, np.int64)
    rn = np.empty(rmax, np.int64)
    hk = np.empty(rmax, np.float64)
    hj = np.empty(rmax, np.int64)
    q = np.empty(max(n, 1), np.int64)  # waiting jobs in priority order
    cap = 2 * (rmax + 2 * n) + 16
    pt = np.empty(cap, np.float64)
    pf = np.empty(cap, np.int64)
    ps = np.zeros(2, np.int64)
    pt[0] = -np.inf
    pf[0] = total
    ps[1] = 1
    max_rounds = 1000 + 100 * n
    room4 = np.int64(4)  # (typed variables, not literals: one compiled helper per signature)
    room8 = np.int64(8)

    free = total
    R = 0
    H = 0
    Q = 0
    n_res = 0
    earliest = np.inf
    a = 0
    n_arr = arrivals.shape[0]
    while a < n_arr or H > 0:
        t_arr = submit[arrivals[a]] if a < n_arr else np.inf
        t_end = hk[0] if H > 0 else np.inf
        now = t_arr if t_arr < t_end else t_end
        if enforce:
            _prof_trim(pt, pf, ps, now)
        # Right after a planning pass the plan is a fixpoint: no job can move earlier on its
        # own. Until the next one, the profile grows only where jobs end early (here) or move
        # (below), all before ``grown``; a job can only move to a start before that.
        grown = -np.inf

        # 1. completions
        freed_early = False
        while H > 0 and hk[0] <= now:
            j = hj[0]
            H = _heap_pop(hk, hj, H)
            e = est[j]
            R = _run_remove(re, rj, rn, R, e, j)
            free += nodes[j]
            if end[j] < e:
                freed_early = True
                if enforce:
                    _prof_room(pt, pf, ps, room4, q, Q, res, limit)
                    _prof_add(pt, pf, ps, now, e, nodes[j])
                    if e > grown:
                        grown = e

        # 2. arrivals, inserted in priority order
        while a < n_arr and submit[arrivals[a]] <= now:
            j = arrivals[a]
            a += 1
            r = rank[j]
            p = Q
            while p > 0 and rank[q[p - 1]] > r:
                q[p] = q[p - 1]
                p -= 1
            q[p] = j
            Q += 1

        if Q == 0:
            continue

        # 3. one pass (ConservativeBackfill.select)
        replan = freed_early or (not enforce) or earliest < now
        plan = True
        if not replan and n_res == Q:
            plan = False  # the plan stands; only start what is due
            if earliest != now:
                continue
        if plan:
            if (not enforce) or earliest < now:
                for i in range(Q):
                    j = q[i]
                    if res[j] < now:
                        res[j] = np.nan
                        n_res -= 1
                _prof_rebuild(pt, pf, ps, now, free, re, rn, R, q, Q, res, limit, nodes)
                grown = np.inf  # no fixpoint to build on
            elif ps[1] - ps[0] > 2 * (1 + R + 2 * Q) + 64:  # keep the scans short
                _prof_room(pt, pf, ps, pt.shape[0], q, Q, res, limit)
            scan_to = Q
            rounds = 0
            while True:
                rounds += 1
                if rounds > max_rounds:
                    return begin, end, -1
                last_move = -1
                for i in range(Q):
                    if i >= scan_to and last_move < 0:
                        break
                    j = q[i]
                    nj = nodes[j]
                    lj = limit[j]
                    old = res[j]
                    had = old == old
                    if not had:
                        start = _prof_earliest_fit(pt, pf, ps, nj, lj)
                        n_res += 1
                    elif not replan:
                        continue
                    elif enforce:
                        start = _prof_earlier_fit(pt, pf, ps, nj, lj, old, min(old, grown))
                        if start == np.inf:
                            continue  # stays at old: nothing changes
                        _prof_room(pt, pf, ps, room8, q, Q, res, limit)
                        _prof_add(pt, pf, ps, old, old + lj, nj)
                        if old + lj > grown:
                            grown = old + lj
                    else:
                        _prof_add(pt, pf, ps, old, old + lj, nj)
                        start = _prof_earliest_fit(pt, pf, ps, nj, lj)
                    if enforce:
                        _prof_room(pt, pf, ps, room4, q, Q, res, limit)
                    _prof_add(pt, pf, ps, start, start + lj, -nj)
                    if start != old:  # (always true for a new job: old is NaN)
                        res[j] = start
                        last_move = i
                if last_move < 0 or not replan:
                    break
                scan_to = last_move

        # start every job whose reservation is now, in priority order
        w = 0
        earliest = np.inf
        for i in range(Q):
            j = q[i]
            s = res[j]
            if s == now:
                nj = nodes[j]
                begin[j] = now
                end[j] = now + dur[j]
                est[j] = now + limit[j]
                R = _run_insert(re, rj, rn, R, est[j], j, nj)
                H = _heap_push(hk, hj, H, end[j], j)
                free -= nj
                res[j] = np.nan
                n_res -= 1
            else:
                q[w] = j
                w += 1
                if s < earliest:
                    earliest = s
        Q = w
        if free < 0:  # as the reference: a plan that over-commits the machine is a bug
            return begin, end, -2
    return begin, end, Q
