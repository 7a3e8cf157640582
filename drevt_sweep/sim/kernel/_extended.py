"""numba kernel for dynamic priorities and run-time estimates, bit for bit the reference engine.

``run_extended`` is the event loop of ``engine._run_events`` for ``none`` / ``easy`` /
``easy_drevt`` when the queue order changes while jobs wait (``multifactor``, ``wfp3``,
``unicef``: ``policies.dynamic``) or the scheduler plans with run-time estimates
(``sim.estimates``: ``actual``, ``user_history``, the overrun correction, SJBF). It keeps the
waiting queue as an array sorted by (key, FCFS rank) (a static priority's key is its rank),
and, for SJBF, a second array of the waiting jobs sorted by (planned duration, FCFS rank); a
pass scans them. Running jobs and the shadow time reuse the helpers of ``_kernels``.

Exactness: every float the reference computes is computed here with the same operations in the
same order (fair-share: per tick, in association order, the scaled node-seconds ``acc * scale``
added to the association, its account and the root; ``2.0 ** (-UE / S)``; priorities ``(w_age * age + w_fs * F) + static``);
completions at one instant are processed in (end, row) order, as the reference's heap does, which
matters for the per-user history. ``tests/test_fast_kernel.py`` checks equality bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import _heap_pop, _heap_push, _run_insert, _run_remove, _shadow

DYN_NONE = 0
DYN_MULTIFACTOR = 1
DYN_WFP3 = 2
DYN_UNICEF = 3
EST_USER = 0
EST_ACTUAL = 1
EST_HISTORY = 2
MIN_PLAN = 1.0  # sim.estimates.MIN_PLAN
RESCALE_ABOVE = 2.0**600  # policies.multifactor
PRIORITY_MAX = 4294967295.0  # policies.multifactor.PRIORITY_MAX
RESCALE_BY = 2.0**-600


# --- a binary min-heap over (time, job), ties by job as the reference's tuples ---------------


# --- sorted job arrays by (value, FCFS rank) -------------------------------------------------


@njit(cache=True)
def _insert_sorted(arr, count, j, val, seq):
    """Insert job ``j`` into ``arr[:count]``, kept sorted by (val[job], seq[job]) (the slot
    ``arr[count]`` is free); returns the position it took."""
    p = count
    vj = val[j]
    sj = seq[j]
    while p > 0:
        k = arr[p - 1]
        if val[k] < vj or (val[k] == vj and seq[k] < sj):
            break
        arr[p] = k
        p -= 1
    arr[p] = j
    return p


@njit(cache=True)
def _resort(arr, count, val, seq, tmp):
    """Sort ``arr[:count]`` by (val[job], seq[job]) (a total order: seq is unique). The queue is
    nearly sorted after a recomputation (priorities move slowly), so insertion sort, which costs
    O(count + inversions), is used unless it would pass a budget; then merge sort. Returns
    whether the order changed."""
    budget = 8 * count + 64
    moves = 0
    for i in range(1, count):
        moves += i - _insert_sorted(arr, i, arr[i], val, seq)
        if moves > budget:
            _sort_by(arr, count, val, seq, tmp)
            return True
    return moves > 0


@njit(cache=True)
def _sort_by(arr, count, val, seq, tmp):
    """Stable merge sort of ``arr[:count]`` by (val[job], seq[job])."""
    width = 1
    src = arr
    dst = tmp
    while width < count:
        lo = 0
        while lo < count:
            mid = min(lo + width, count)
            hi = min(lo + 2 * width, count)
            i = lo
            k = mid
            w = lo
            while i < mid and k < hi:
                a = src[i]
                b = src[k]
                if val[b] < val[a] or (val[b] == val[a] and seq[b] < seq[a]):
                    dst[w] = b
                    k += 1
                else:
                    dst[w] = a
                    i += 1
                w += 1
            while i < mid:
                dst[w] = src[i]
                i += 1
                w += 1
            while k < hi:
                dst[w] = src[k]
                k += 1
                w += 1
            lo = hi
        src, dst = dst, src
        width *= 2
    if src is not arr:
        for i in range(count):
            arr[i] = src[i]


@njit(cache=True)
def _compact(arr, count, begin):
    """Drop the started jobs (begin not NaN) from ``arr[:count]``; returns the new count."""
    w = 0
    for i in range(count):
        j = arr[i]
        if begin[j] != begin[j]:
            arr[w] = j
            w += 1
    return w


@njit(cache=True)
def run_extended(submit, limit, nodes, dur, arrivals, rank, total, mode, estimate, sjbf, users, n_users,
                 dyn, a_arr, b_arr, leaf, acct, sib, snorm, n_acct, w_age, w_fs, max_age, period, decay, t0):
    """none / easy / easy_drevt with dynamic priorities and run-time estimates.
    Returns (begin, end, jobs left waiting), -2 as the last if the machine was over-committed."""
    n = submit.shape[0]
    begin = np.full(n, np.nan)
    end = np.full(n, np.nan)
    est = np.full(n, np.nan)
    plan = limit.copy()
    key = rank.astype(np.float64)  # the queue's sort key (a static priority: its rank)
    rmax = min(total, n) + 1
    re = np.empty(rmax, np.float64)
    rj = np.empty(rmax, np.int64)
    rn = np.empty(rmax, np.int64)
    hk = np.empty(rmax, np.float64)
    hj = np.empty(rmax, np.int64)
    ok_ = np.empty(rmax, np.float64)  # overruns: (planned end, job) the job outlives
    oj = np.empty(rmax, np.int64)
    q = np.empty(max(n, 1), np.int64)
    tmp = np.empty(max(n, 1), np.int64)
    sq = np.empty(max(n, 1), np.int64)  # SJBF: waiting jobs by (plan, FCFS rank)
    hist = np.zeros((max(n_users, 1), 2))
    hcount = np.zeros(max(n_users, 1), np.int64)
    # fair-share state (multifactor)
    n_leaf = sib.shape[0]
    usage = np.zeros(n_leaf)
    acc = np.zeros(n_leaf)
    runn = np.zeros(n_leaf)
    raw_acct = np.zeros(max(n_acct, 1))
    fval = np.zeros(n_leaf)
    fstamp = np.full(n_leaf, -1, np.int64)
    stamp = 0
    active = np.empty(max(n_leaf, 1), np.int64)  # associations with acc != 0, sorted
    is_active = np.zeros(n_leaf, np.bool_)
    n_active = 0
    root = 0.0
    scale = 1.0
    tick_k = 1
    next_tick = t0 + period if dyn == DYN_MULTIFACTOR else np.inf
    due = False

    use_extra = mode == 1
    strict = mode == 2
    planning = estimate != EST_USER
    free = total
    R = 0
    H = 0
    O = 0
    Q = 0
    S = 0
    a = 0
    n_arr = arrivals.shape[0]
    while a < n_arr or H > 0:
        t_arr = submit[arrivals[a]] if a < n_arr else np.inf
        t_end = hk[0] if H > 0 else np.inf
        now = t_arr if t_arr < t_end else t_end
        if O > 0 and ok_[0] < now:
            now = ok_[0]
        if dyn == DYN_MULTIFACTOR:
            if Q > 0 and next_tick < now:
                now = next_tick
            while next_tick <= now:  # Multifactor.advance (usage scaled by ``scale``)
                scale = scale / decay
                w = 0
                for i in range(n_active):  # the associations with acc != 0, in order
                    l = active[i]
                    add = acc[l] * scale
                    usage[l] += add
                    raw_acct[acct[l]] += add
                    root += add
                    acc[l] = runn[l] * period
                    if acc[l] != 0.0:
                        active[w] = l
                        w += 1
                    else:
                        is_active[l] = False
                n_active = w
                if scale > RESCALE_ABOVE:
                    for l in range(n_leaf):
                        usage[l] *= RESCALE_BY
                    for x in range(n_acct):
                        raw_acct[x] *= RESCALE_BY
                    root *= RESCALE_BY
                    scale *= RESCALE_BY
                tick_k += 1
                next_tick = t0 + tick_k * period
                due = True
                stamp += 1  # the fair-share factors change

        # 1. completions, in (end, job) order
        changed = (H > 0 and hk[0] <= now) or (O > 0 and ok_[0] <= now) or (a < n_arr and submit[arrivals[a]] <= now)
        while H > 0 and hk[0] <= now:
            j = hj[0]
            H = _heap_pop(hk, hj, H)
            R = _run_remove(re, rj, rn, R, est[j], j)
            free += nodes[j]
            if dyn == DYN_MULTIFACTOR:
                lf = leaf[j]
                runn[lf] -= nodes[j]
                acc[lf] -= nodes[j] * (next_tick - now)
            if estimate == EST_HISTORY and users[j] >= 0:
                u = users[j]
                hist[u, 0] = hist[u, 1]
                hist[u, 1] = dur[j]
                if hcount[u] < 2:
                    hcount[u] += 1

        # 1b. overruns: the estimate becomes the limit
        while O > 0 and ok_[0] <= now:
            j = oj[0]
            e = ok_[0]
            O = _heap_pop(ok_, oj, O)
            R = _run_remove(re, rj, rn, R, e, j)
            plan[j] = limit[j]
            est[j] = begin[j] + limit[j]
            R = _run_insert(re, rj, rn, R, est[j], j, nodes[j])

        # 2. arrivals
        while a < n_arr and submit[arrivals[a]] <= now:
            j = arrivals[a]
            a += 1
            if estimate == EST_HISTORY:
                u = users[j]
                if u >= 0 and hcount[u] == 2:
                    p = (hist[u, 0] + hist[u, 1]) / 2.0
                    p = p if p > MIN_PLAN else MIN_PLAN
                    plan[j] = p if p < limit[j] else limit[j]
            elif estimate == EST_ACTUAL:
                p = dur[j]
                if p < MIN_PLAN:
                    p = MIN_PLAN if MIN_PLAN < limit[j] else limit[j]
                plan[j] = p
            if dyn != DYN_NONE:
                key[j] = _key(dyn, now, j, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage, raw_acct,
                              fval, fstamp, stamp, root, w_age, w_fs, max_age)
            _insert_sorted(q, Q, j, key, rank)
            Q += 1
            if sjbf:
                _insert_sorted(sq, S, j, plan, rank)
                S += 1

        if Q == 0:
            continue

        # 2c. a dynamic priority re-orders the queue
        if dyn != DYN_NONE and (dyn != DYN_MULTIFACTOR or due):
            due = False
            if dyn == DYN_MULTIFACTOR:
                for i in range(Q):  # _key, inlined for speed
                    j = q[i]
                    lf = leaf[j]
                    if fstamp[lf] != stamp:
                        fval[lf] = _fairshare(usage[lf], raw_acct[acct[lf]], root, sib[lf], snorm[lf])
                        fstamp[lf] = stamp
                    age = (now - submit[j]) / max_age
                    if age > 1.0:
                        age = 1.0
                    key[j] = -_slurm_integer(w_age * age + w_fs * fval[lf] + a_arr[j])
            else:
                for i in range(Q):
                    j = q[i]
                    key[j] = _key(dyn, now, j, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage, raw_acct,
                                  fval, fstamp, stamp, root, w_age, w_fs, max_age)
            moved = _resort(q, Q, key, rank, tmp)
            if not (moved or changed) and R > 0 and re[0] > now:
                # A tick that changed nothing: same queue, same order, same free nodes, no
                # overdue job. The reference's pass starts nothing then (every job it tries
                # failed the same or a weaker test at the previous pass); skip it.
                continue

        # 3. one pass: start jobs in priority order while they fit
        k = 0
        while k < Q:
            j = q[k]
            if nodes[j] > free:
                break
            R, H, O, n_active = _start(j, now, begin, end, est, plan, dur, limit, nodes, re, rj, rn, R, hk, hj,
                                        H, ok_, oj, O, planning, dyn == DYN_MULTIFACTOR, leaf, runn, acc,
                                        next_tick, active, is_active, n_active)
            free -= nodes[j]
            k += 1
        started_any = k > 0
        if k < Q and mode != 0 and free > 0:
            head = q[k]
            shadow, extra = _shadow(re, rn, R, now, nodes[head], free)
            count = S if sjbf else Q
            i = 0 if sjbf else k + 1
            while i < count:
                j = sq[i] if sjbf else q[i]
                i += 1
                if j == head or begin[j] == begin[j]:
                    continue
                nj = nodes[j]
                if nj > free:
                    continue
                e = now + plan[j]
                if e < shadow or (e == shadow and not strict):
                    pass
                elif use_extra and nj <= extra:
                    extra -= nj
                else:
                    continue
                R, H, O, n_active = _start(j, now, begin, end, est, plan, dur, limit, nodes, re, rj, rn, R, hk, hj,
                                            H, ok_, oj, O, planning, dyn == DYN_MULTIFACTOR, leaf, runn, acc,
                                            next_tick, active, is_active, n_active)
                free -= nodes[j]
                started_any = True
                if free == 0:
                    break
        if started_any:
            Q = _compact(q, Q, begin)
            if sjbf:
                S = _compact(sq, S, begin)
        if free < 0:
            return begin, end, -2
    return begin, end, Q


@njit(cache=True)
def _start(j, now, begin, end, est, plan, dur, limit, nodes, re, rj, rn, R, hk, hj, H, ok_, oj, O, planning,
           fairshare, leaf, runn, acc, next_tick, active, is_active, n_active):
    """Start job ``j`` at ``now``; returns the new counts of running jobs, completions, overruns
    and active associations (``Multifactor.start`` when ``fairshare``)."""
    begin[j] = now
    end[j] = now + dur[j]
    est[j] = now + plan[j]
    R = _run_insert(re, rj, rn, R, est[j], j, nodes[j])
    H = _heap_push(hk, hj, H, end[j], j)
    if planning and est[j] < end[j] and plan[j] < limit[j]:
        O = _heap_push(ok_, oj, O, est[j], j)
    if fairshare:
        lf = leaf[j]
        runn[lf] += nodes[j]
        acc[lf] += nodes[j] * (next_tick - now)
        n_active = _activate(active, is_active, n_active, lf)
    return R, H, O, n_active


@njit(cache=True)
def _fairshare(usage, acct_usage, root, sib, snorm):
    """policies.multifactor.fairshare_factor"""
    if root == 0.0:
        return 1.0
    u = usage / root
    ue = u + (acct_usage / root - u) * sib
    return 2.0 ** (-ue / snorm)


@njit(cache=True)
def _activate(active, is_active, count, lf):
    """Add association ``lf`` to the sorted list of active ones (if not there yet)."""
    if is_active[lf]:
        return count
    is_active[lf] = True
    p = count
    while p > 0 and active[p - 1] > lf:
        active[p] = active[p - 1]
        p -= 1
    active[p] = lf
    return count + 1


@njit(cache=True)
def _key(dyn, now, j, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp, stamp, root,
         w_age, w_fs, max_age):
    if dyn == DYN_WFP3:
        x = (now - submit[j]) / a_arr[j]
        return -(x * x * x * b_arr[j])
    if dyn == DYN_UNICEF:
        return -((now - submit[j]) / a_arr[j])
    lf = leaf[j]
    if fstamp[lf] != stamp:
        fval[lf] = _fairshare(usage[lf], raw_acct[acct[lf]], root, sib[lf], snorm[lf])
        fstamp[lf] = stamp
    age = (now - submit[j]) / max_age
    if age > 1.0:
        age = 1.0
    return -_slurm_integer(w_age * age + w_fs * fval[lf] + a_arr[j])


@njit(cache=True)
def _slurm_integer(p):
    """``multifactor.slurm_integer``: at least 1, truncated, at most 2^32 - 1."""
    if p < 1.0:
        return 1.0
    p = np.floor(p)
    return p if p < PRIORITY_MAX else PRIORITY_MAX
