"""numba kernel for dynamic priorities and run-time estimates, bit for bit the reference engine.

``run_extended`` is the event loop of ``engine._run_events`` for ``none`` / ``easy`` /
``easy_drevt`` when the queue order changes while jobs wait (``multifactor``, ``wfp3``,
``unicef``: ``policies.dynamic``) or the scheduler plans with run-time estimates
(``sim.estimates``: ``actual``, ``user_history``, the overrun correction, SJBF). It keeps the
waiting queue as an array sorted by (key, FCFS rank) (a static priority's key is its rank),
and, for SJBF, a second array of the waiting jobs sorted by (planned duration, FCFS rank); a
pass scans them. Running jobs, completions, starts, the shadow time and EASY's rule are the
steps of ``_kernels`` that ``queue_policy_steps`` uses too; what is written here is what differs
(the sorted queue arrays, fair-share ticks, overruns of estimates, the per-user history).

Like ``_kernels.queue_policy_steps``, :func:`extended_steps` is resumable and allocation-free
(``_nrt=False``): every array, the fair-share state included, is allocated by
``drevt_sweep.sim.kernel.run_extended``, the scalars live in ``st``/``sf`` between calls, and a
call returns after ``budget`` events at an event boundary, so the caller reports progress and
Python acts on Ctrl-C between slices. The slice size cannot change the schedule: a slice ends
only where the next event would begin, with every variable the loop carries stored.

Exactness: every float the reference computes is computed here with the same operations in the
same order (fair-share: per tick, in association order, the scaled node-seconds ``acc * scale``
added to the association, its account and the root; ``2.0 ** (-UE / S)``; priorities ``(w_age * age + w_fs * F) + static``);
completions at one instant are processed in (end, row) order, as the reference's heap does, which
matters for the per-user history. ``tests/test_fast_kernel.py`` checks equality bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import (EV_NEXT, MODE_EASY, MODE_EASY_DREVT, MODE_NONE, ST_A, ST_DONE, ST_FREE, ST_H, ST_Q,
                       ST_R, _before_shadow, _finish_next, _heap_pop, _heap_push, _launch, _load_counts,
                       _run_insert, _run_remove, _shadow, _slice_event, _store_counts)

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


# --- sorted job arrays by (value, FCFS rank) -------------------------------------------------


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
def _compact(arr, count, begin):
    """Drop the started jobs (begin not NaN) from ``arr[:count]``; returns the new count."""
    w = 0
    for i in range(count):
        j = arr[i]
        if begin[j] != begin[j]:
            arr[w] = j
            w += 1
    return w


# --- the resumable driver -------------------------------------------------------------------
# State between slices: the scalars of ``_kernels``' layout (ST_FREE .. ST_DONE, SF_NOW) and
# these (the slots ST_HEAD on are the static queue's or conservative's there, unused here).
ST_O = 6  # overrun-heap size
ST_S = 7  # SJBF array length
ST_ACTIVE = 8  # associations with acc != 0 (multifactor)
ST_STAMP = 9  # fair-share generation: bumped at each tick, factors cached per association
ST_TICK = 10  # multifactor: number of the next tick (next_tick = t0 + ST_TICK * period)
ST_DUE = 11  # 1 when a tick passed and the queue must be re-keyed
SF_ROOT = 1  # fair-share: the root's scaled usage
SF_SCALE = 2  # fair-share: usage scale (1 / decay^ticks, rescaled by 2^-600 now and then)
SF_TICK_AT = 3  # multifactor: the next tick (inf without fair-share)


@njit(cache=True, _nrt=False, inline="always")
def _load_fairshare(st, sf, s0, f0):
    """Multifactor's fair-share scalars carried between slices, in ``st[s0:s0 + 4]`` (as
    ST_ACTIVE, ST_STAMP, ST_TICK, ST_DUE here) and ``sf[f0:f0 + 3]`` (as SF_ROOT, SF_SCALE,
    SF_TICK_AT; ``_slurm`` keeps them at other places): (active associations, generation,
    next tick's number, re-keying due, root's usage, usage scale, next tick).
    ``extended_steps`` reads them itself: with this helper too (inlined or called; once per
    slice) it ran 2.5-4 % slower, A/B on KTH-SP2 x1.4 and LANL-CM5 with multifactor, with the
    store helper alone 0-1.5 % (``benchmarks/RESULTS.md``, "Eighteenth session, helper
    kdedup"; the machine code of its loop must change: the loads are once per slice)."""
    return st[s0], st[s0 + 1], st[s0 + 2], st[s0 + 3] != 0, sf[f0], sf[f0 + 1], sf[f0 + 2]


@njit(cache=True, _nrt=False, inline="always")
def _store_fairshare(st, sf, s0, f0, n_active, stamp, tick_k, due, root, scale, next_tick):
    st[s0] = n_active
    st[s0 + 1] = stamp
    st[s0 + 2] = tick_k
    st[s0 + 3] = 1 if due else 0
    sf[f0] = root
    sf[f0 + 1] = scale
    sf[f0 + 2] = next_tick


def start_fairshare(st, sf, s0, f0, first_tick):
    """The fair-share scalars before the first event, at ``_load_fairshare``'s slots (``s0``,
    ``f0``; the rest stay 0): the next tick is number 1, at ``first_tick`` (inf for the
    priorities without ticks), the usage scale 1."""
    st[s0 + 2] = 1
    sf[f0 + 1] = 1.0
    sf[f0 + 2] = first_tick


@njit(cache=True, _nrt=False)
def extended_steps(submit, limit, nodes, dur, arrivals, rank, mode, estimate, sjbf, users,
                   dyn, a_arr, b_arr, leaf, acct, sib, snorm, n_acct, w_age, w_fs, max_age, period, decay, t0,
                   charge_ended, begin, end, est, plan, key, re, rj, rn, hk, hj, ok_, oj, q, tmp, sq, hist, hcount,
                   usage, acc, runn, raw_acct, fval, fstamp, active, is_active,
                   fair_tree, two_levels, acct_share, ftk, fti, fplan, fstack, st, sf, budget):
    """none / easy / easy_drevt with dynamic priorities and run-time estimates, from state
    ``st``/``sf`` for about ``budget`` events (``_kernels``' driver contract: 1 = more to do,
    0 = done with ``st[ST_Q]`` jobs left waiting, -2 = the machine was over-committed).

    ``plan`` starts as the limits and ``key`` as the ranks (a static priority's sort key);
    ``q`` holds the waiting jobs sorted by (key, rank), ``sq`` (SJBF) by (plan, rank); the
    fair-share arrays (``usage``, ``acc``, ``runn``, ``raw_acct``, ``fval``/``fstamp``,
    ``active``/``is_active``) and the per-user history live between slices in the caller's
    arrays, their scalars in ``st``/``sf``. ``fair_tree``: multifactor's fair-share factors are
    Fair Tree's (:func:`_fair_tree_update` over ``acct_share``, ``ftk``/``fti`` its keys, orders
    and state, ``fplan``/``fstack`` numpy's summation order), all of them at the first key of a
    tick, as ``slurm_steps`` computes them (usage changes only at ticks: the same values whenever).
    """
    use_extra = mode == MODE_EASY
    strict = mode == MODE_EASY_DREVT
    planning = estimate != EST_USER
    fairshare = dyn == DYN_MULTIFACTOR
    free, R, H, Q, a, done, now = _load_counts(st, sf)
    ft = (acct_share, two_levels, fplan, fstack, ftk, fti)  # Fair Tree's arrays (_arrive, _rekey)
    O = st[ST_O]
    S = st[ST_S]
    n_active = st[ST_ACTIVE]  # (not ``_load_fairshare``: see there)
    stamp = st[ST_STAMP]
    tick_k = st[ST_TICK]
    due = st[ST_DUE] != 0
    root = sf[SF_ROOT]
    scale = sf[SF_SCALE]
    next_tick = sf[SF_TICK_AT]
    n_arr = arrivals.shape[0]
    while True:
        status, now, budget = _slice_event(submit, arrivals, a, hk, H, now, budget)
        if status != EV_NEXT:
            break
        if O > 0 and ok_[0] < now:
            now = ok_[0]
        if fairshare:
            now, n_active, root, scale, tick_k, next_tick, stamp, due = _advance(
                now, Q, next_tick, tick_k, t0, period, decay, scale, root, n_active, active, is_active, acc, runn,
                usage, raw_acct, acct, n_acct, fair_tree, fti, two_levels, stamp, due)

        # 1. completions, in (end, job) order
        changed = (H > 0 and hk[0] <= now) or (O > 0 and ok_[0] <= now) or (a < n_arr and submit[arrivals[a]] <= now)
        while H > 0 and hk[0] <= now:
            j, H, R = _finish_next(hk, hj, H, re, rj, rn, R, est)
            free += nodes[j]
            done += 1
            if fairshare:
                _account_end(leaf[j], nodes[j], now, next_tick, runn, acc, charge_ended, begin[j], period)
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
            Q = _arrive(j, dyn, q, Q, key, rank, now, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage, raw_acct,
                        fval, fstamp, stamp, root, w_age, w_fs, max_age, fair_tree, ft, scale)
            if sjbf:
                _insert_sorted(sq, S, j, plan, rank)
                S += 1

        if Q == 0:
            continue

        # 2c. a dynamic priority re-orders the queue
        if dyn != DYN_NONE and (dyn != DYN_MULTIFACTOR or due):
            due = False
            moved = _rekey(dyn, q, Q, key, rank, tmp, now, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage,
                           raw_acct, fval, fstamp, stamp, root, w_age, w_fs, max_age, fair_tree, ft, scale)
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
                                        H, ok_, oj, O, planning, fairshare, leaf, runn, acc,
                                        next_tick, active, is_active, n_active)
            free -= nodes[j]
            k += 1
        started_any = k > 0
        if k < Q and mode != MODE_NONE and free > 0:
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
                if not _before_shadow(now + plan[j], shadow, strict):
                    if not (use_extra and nj <= extra):
                        continue
                    extra -= nj  # admitted by the extra-nodes rule
                R, H, O, n_active = _start(j, now, begin, end, est, plan, dur, limit, nodes, re, rj, rn, R, hk, hj,
                                            H, ok_, oj, O, planning, fairshare, leaf, runn, acc,
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
            status = -2
            break
    _store_counts(st, sf, free, R, H, Q, a, done, now)
    st[ST_O] = O
    st[ST_S] = S
    _store_fairshare(st, sf, ST_ACTIVE, SF_ROOT, n_active, stamp, tick_k, due, root, scale, next_tick)
    return status


@njit(cache=True, _nrt=False)
def _start(j, now, begin, end, est, plan, dur, limit, nodes, re, rj, rn, R, hk, hj, H, ok_, oj, O, planning,
           fairshare, leaf, runn, acc, next_tick, active, is_active, n_active):
    """Start job ``j`` at ``now``; returns the new counts of running jobs, completions, overruns
    and active associations (``Multifactor.start`` when ``fairshare``)."""
    R, H = _launch(j, now, now + plan[j], begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)
    if planning and est[j] < end[j] and plan[j] < limit[j]:
        O = _heap_push(ok_, oj, O, est[j], j)
    if fairshare:
        n_active = _account_start(leaf[j], nodes[j], now, next_tick, runn, acc, active, is_active, n_active)
    return R, H, O, n_active


# --- multifactor's fair-share state, shared with ``_slurm`` ------------------------------------


@njit(cache=True, _nrt=False, inline="always")
def _account_start(lf, nj, now, next_tick, runn, acc, active, is_active, n_active):
    """``Multifactor.start``: association ``lf`` runs ``nj`` more nodes from ``now``; its
    node-seconds up to the next tick are counted now. Returns the count of active associations."""
    runn[lf] += nj
    acc[lf] += nj * (next_tick - now)
    return _activate(active, is_active, n_active, lf)


@njit(cache=True, _nrt=False, inline="always")
def _account_end(lf, nj, now, next_tick, runn, acc, charge_ended, began, period):
    """``Multifactor.end``: the node-seconds from ``now`` to the next tick are taken back; without
    ``charge_ended`` (``charge_ended_jobs: false``) those since the last tick or the job's start too."""
    runn[lf] -= nj
    since = now if charge_ended else max(began, next_tick - period)
    acc[lf] -= nj * (next_tick - since)


@njit(cache=True, _nrt=False, inline="always")
def _advance(now, Q, next_tick, tick_k, t0, period, decay, scale, root, n_active, active, is_active, acc, runn, usage,
             raw_acct, acct, n_acct, fair_tree, fti, two_levels, stamp, due):
    """Multifactor at an event (``extended_steps``, ``shared.shared_queue_steps``): while jobs wait, a
    tick before ``now`` is an event of its own (``now`` becomes it); the ticks due are processed
    (``_ticks``; first, under Fair Tree, the units about to gain usage are marked: it moves only
    them), the fair-share factors change (``stamp``) and the keys are due. Returns (now, active
    count, root usage, scale, tick index and time, stamp, due)."""
    if Q > 0 and next_tick < now:
        now = next_tick
    if next_tick <= now:
        if fair_tree:
            _fair_tree_dirty(fti, active, n_active, acct, two_levels)
        n_active, root, scale, tick_k, next_tick, ticks = _ticks(now, next_tick, tick_k, t0, period, decay, scale, root,
                                                                 n_active, active, is_active, acc, runn, usage,
                                                                 raw_acct, acct, n_acct)
        return now, n_active, root, scale, tick_k, next_tick, stamp + ticks, True
    return now, n_active, root, scale, tick_k, next_tick, stamp, due


@njit(cache=True, _nrt=False)
def _ticks(now, next_tick, tick_k, t0, period, decay, scale, root, n_active, active, is_active, acc, runn, usage,
           raw_acct, acct, n_acct):
    """``Multifactor.advance``: every tick ``<= now`` (usage scaled by ``scale``; only the
    associations with ``acc != 0``, ``active``, in association order, gain usage). Returns
    (active count, root usage, scale, index and time of the next tick, ticks processed)."""
    ticks = 0
    while next_tick <= now:
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
            for l in range(usage.shape[0]):
                usage[l] *= RESCALE_BY
            for x in range(n_acct):
                raw_acct[x] *= RESCALE_BY
            root *= RESCALE_BY
            scale *= RESCALE_BY
        tick_k += 1
        next_tick = t0 + tick_k * period
        ticks += 1
    return n_active, root, scale, tick_k, next_tick, ticks


@njit(cache=True, _nrt=False)
def _rekey_multifactor(q, count, key, now, submit, a_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp,
                       stamp, root, w_age, w_fs, max_age):
    """Multifactor's keys of the waiting jobs ``q[:count]`` at ``now`` (a tick)."""
    for i in range(count):
        j = q[i]
        key[j] = _multifactor_key(now, j, submit, a_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp,
                                  stamp, root, w_age, w_fs, max_age)


@njit(cache=True, _nrt=False)
def _fairshare(usage, acct_usage, root, sib, snorm):
    """policies.multifactor.fairshare_factor"""
    if root == 0.0:
        return 1.0
    u = usage / root
    ue = u + (acct_usage / root - u) * sib
    return 2.0 ** (-ue / snorm)


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False, inline="always")
def _arrive(j, dyn, q, Q, key, rank, now, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp,
            stamp, root, w_age, w_fs, max_age, fair_tree, ft, scale):
    """Job j, arriving at ``now``, into the queue ``q[:Q]`` sorted by (key, rank); the new count.
    A dynamic priority ``dyn`` keys it first, Fair Tree's factors brought to this tick if its are
    not (all at once, once per tick, as ``slurm_steps``). ``extended_steps``' and
    ``shared.shared_queue_steps``' step 2. Inlined (called, shared wfp3 ran +12-15 %), so its arrays
    for Fair Tree come in one tuple ``ft``: numba inlines no call of more than 30 arguments
    (CPython passes them as *args)."""
    if dyn != DYN_NONE:
        acct_share, two_levels, fplan, fstack, ftk, fti = ft
        if fair_tree and fstamp[leaf[j]] != stamp:
            _fair_tree_update(usage, raw_acct, acct, sib, snorm, acct_share, two_levels, fplan, fstack, stamp, fval,
                              fstamp, ftk, fti, scale)
        key[j] = _key(dyn, now, j, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp, stamp,
                      root, w_age, w_fs, max_age)
    _insert_sorted(q, Q, j, key, rank)
    return Q + 1


@njit(cache=True, _nrt=False, inline="always")
def _rekey(dyn, q, Q, key, rank, tmp, now, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp,
           stamp, root, w_age, w_fs, max_age, fair_tree, ft, scale):
    """Step 2c of ``extended_steps`` and ``shared.shared_queue_steps``: the waiting jobs ``q[:Q]`` keyed
    again at ``now`` (multifactor at a tick, Fair Tree's factors first as in ``_arrive``; WFP3 and
    UNICEF at every pass) and sorted again; whether any moved. Inlined, as ``_arrive``."""
    if dyn == DYN_MULTIFACTOR:
        acct_share, two_levels, fplan, fstack, ftk, fti = ft
        if fair_tree and fstamp[leaf[q[0]]] != stamp:
            _fair_tree_update(usage, raw_acct, acct, sib, snorm, acct_share, two_levels, fplan, fstack, stamp, fval,
                              fstamp, ftk, fti, scale)
        _rekey_multifactor(q, Q, key, now, submit, a_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp, stamp,
                           root, w_age, w_fs, max_age)
    else:
        _rekey_every_pass(dyn, q, Q, key, now, submit, a_arr, b_arr)
    return _resort(q, Q, key, rank, tmp)


@njit(cache=True, _nrt=False)
def _key(dyn, now, j, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp, stamp, root,
         w_age, w_fs, max_age):
    """Job ``j``'s sort key at ``now`` under the dynamic priority ``dyn`` (smaller first)."""
    if dyn != DYN_MULTIFACTOR:
        return _literature_key(dyn, now, j, submit, a_arr, b_arr)
    return _multifactor_key(now, j, submit, a_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp, stamp,
                            root, w_age, w_fs, max_age)


@njit(cache=True, _nrt=False, inline="always")
def _literature_key(dyn, now, j, submit, a_arr, b_arr):
    """WFP3's or UNICEF's key of job ``j`` at ``now`` (``policies.literature``), recomputed
    before every pass."""
    if dyn == DYN_WFP3:
        x = (now - submit[j]) / a_arr[j]
        return -(x * x * x * b_arr[j])
    return -((now - submit[j]) / a_arr[j])


@njit(cache=True, _nrt=False)
def _rekey_every_pass(dyn, q, count, key, now, submit, a_arr, b_arr):
    """WFP3's or UNICEF's keys of the waiting jobs ``q[:count]`` at ``now``."""
    for i in range(count):
        j = q[i]
        key[j] = _literature_key(dyn, now, j, submit, a_arr, b_arr)


@njit(cache=True, _nrt=False, inline="always")
def _multifactor_key(now, j, submit, a_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp, stamp, root,
                     w_age, w_fs, max_age):
    """Multifactor's key: minus the Slurm integer of (age + fair-share factor + the static
    factors ``a_arr``); the fair-share factor is cached per association for the current
    ``stamp``. Inlined (the re-keying loop at each tick is hot)."""
    lf = leaf[j]
    if fstamp[lf] != stamp:
        fval[lf] = _fairshare(usage[lf], raw_acct[acct[lf]], root, sib[lf], snorm[lf])
        fstamp[lf] = stamp
    age = (now - submit[j]) / max_age
    if age > 1.0:
        age = 1.0
    return -_slurm_integer(w_age * age + w_fs * fval[lf] + a_arr[j])


@njit(cache=True, _nrt=False)
def _slurm_integer(p):
    """``multifactor.slurm_integer``: at least 1, truncated, at most 2^32 - 1."""
    if p < 1.0:
        return 1.0
    p = np.floor(p)
    return p if p < PRIORITY_MAX else PRIORITY_MAX


# --- Fair Tree (``policies.multifactor.fair_tree_factors``) -------------------------------------


def pairwise_plan(n: int) -> np.ndarray:
    """numpy's summation order for ``n`` float64s as a program for :func:`_np_sum` (rows
    ``(lo, count)``: sum a block; ``(-1, -1)``: add the last two sums), in postfix order.

    ``ndarray.sum`` of a contiguous float64 array is ``0.0 + pairwise_sum(a, n)`` (numpy's
    ``loops_utils.h``): blocks of fewer than 8 summed in order, blocks of up to 128 in eight
    lanes, longer ones split in halves at a multiple of 8. The tree depends on ``n`` alone, so
    it is built once here: numba's on-disk cache cannot load a recursive function reliably (it
    crashed), and the kernels allocate nothing."""
    plan: list[tuple[int, int]] = []

    def visit(lo: int, count: int) -> None:
        if count <= 128:
            plan.append((lo, count))
            return
        half = count // 2
        half -= half % 8
        visit(lo, half)
        visit(lo + half, count - half)
        plan.append((-1, -1))

    visit(0, n)
    return np.array(plan, dtype=np.int64).reshape(-1, 2)


@njit(cache=True, _nrt=False)
def _np_block(a, lo, n):
    """numpy's ``pairwise_sum`` of one block of at most 128 (eight lanes from 8 on)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    m = n - n % 8
    while i < m:
        k = lo + i
        r0 += a[k]
        r1 += a[k + 1]
        r2 += a[k + 2]
        r3 += a[k + 3]
        r4 += a[k + 4]
        r5 += a[k + 5]
        r6 += a[k + 6]
        r7 += a[k + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, _nrt=False)
def _np_sum(a, plan, stack):
    """``ndarray.sum`` of ``a`` bit for bit, by the program ``pairwise_plan(len(a))``
    (``stack``: room for its rows). Checked against numpy in ``tests/test_slurm_kernel.py``."""
    top = 0
    for i in range(plan.shape[0]):
        if plan[i, 1] < 0:
            top -= 1
            stack[top - 1] = stack[top - 1] + stack[top]
        else:
            stack[top] = _np_block(a, plan[i, 0], plan[i, 1])
            top += 1
    return 0.0 + stack[0]


@njit(cache=True, _nrt=False, inline="always")
def _level_lf(shares, usage, parent):
    """``multifactor._level_fs`` of one association: S / (usage / parent), inf when that is 0
    or the parent has no usage. Both divisions are done and the answer selected, so that
    ``_fair_tree``'s loop over the associations vectorises (it is compiled with numpy's error
    model: a division by 0 gives inf or NaN there, never selected, instead of raising)."""
    u = usage / parent
    lf = shares / u
    return lf if (parent > 0) & (u > 0) else np.inf


@njit(cache=True, _nrt=False)
def _resort_lex(by, n, ka, ku):
    """Insertion sort of the permutation ``by`` by (ka, ku, leaf), a total order, from the last
    tick's order (usage moves slowly, so few leaves move); gives up (False, ``by`` then some
    permutation) past a budget of moves, and the caller sorts from scratch."""
    budget = 8 * n + 64
    moves = 0
    for i in range(1, n):
        l = by[i]
        a = ka[l]
        u = ku[l]
        p = i
        while p > 0:
            k = by[p - 1]
            if ka[k] < a or (ka[k] == a and (ku[k] < u or (ku[k] == u and k < l))):
                break
            by[p] = k
            p -= 1
        by[p] = l
        moves += i - p
        if moves > budget:
            return False
    return True


@njit(cache=True, _nrt=False, error_model="numpy")
def _fair_tree(usage, raw_acct, acct, sib, snorm, acct_share, two_levels, plan, stack, stamp, fval, fstamp,
               key_acct, key_user, by, tmp, pos):
    """Every association's Fair Tree factor into ``fval`` (``fstamp`` = ``stamp``), as
    ``multifactor.fair_tree_factors``: the leaves ordered by (account group, decreasing LF), a
    group being the accounts of one LF (the reference's ``np.unique``), ties sharing the rank of
    the first; factor = (N - place of the tie's first) / N. The same floats: each LF with the
    same division, the parent sums with numpy's summation (``_np_sum`` by ``plan``: the
    accounts' usage with two levels, else the associations'). ``by`` holds a permutation of
    the leaves (the last call's order: it is re-sorted from there)."""
    n = usage.shape[0]
    if two_levels:
        total = _np_sum(raw_acct, plan, stack)
        for l in range(n):  # each leaf's account share and usage, gathered: the loop below vectorises
            x = acct[l]
            key_acct[l] = raw_acct[x]
            key_user[l] = acct_share[x]
        for l in range(n):
            parent = key_acct[l]
            key_acct[l] = -_level_lf(key_user[l], parent, total)
            key_user[l] = -_level_lf(sib[l], usage[l], parent)
    else:
        total = _np_sum(usage, plan, stack)
        for l in range(n):
            key_acct[l] = 0.0
            key_user[l] = -_level_lf(snorm[l], usage[l], total)
    if not _resort_lex(by, n, key_acct, key_user):  # np.lexsort((-user_lf, group)), leaf order on ties
        for l in range(n):  # (far from the last order: by (key_user, leaf), then stably by key_acct)
            by[l] = l
            pos[l] = l
        _sort_by(by, n, key_user, pos, tmp)
        for i in range(n):
            pos[by[i]] = i
        _sort_by(by, n, key_acct, pos, tmp)
    first = 0
    for i in range(n):
        l = by[i]
        if i > 0:
            p = by[i - 1]
            if key_acct[l] != key_acct[p] or key_user[l] != key_user[p]:
                first = i
        fval[l] = (n - first) / n
        fstamp[l] = stamp


# --- Fair Tree kept up to date from tick to tick -------------------------------------------------
# Between two computations only the associations that ran gain usage (``_ticks``' active ones:
# about 6 of KTH-SP2's 319 per tick), yet the parent's usage T changes every LF. The factors
# depend only on the order of the keys and their ties, and that order depends on T only through
# rounding: a unit's LF (an account under the root with two levels, else a leaf) is S / (r / T),
# exactly T S / r, so units whose S / r differ by more than the roundings can make up
# (``_FT_MARGIN``: four of 2^-53 in the LF, two in the ratios compared) are in the same order at
# every T, as long as every quotient stays in the normal range (the bounds checked at each call).
# Equal keys at every T: units without usage (LF inf), units of the same shares and usage; users
# of one account compare by their own LF within it, which changes only with the account's usage.
# So while no two neighbours in the order depend on T, the leaves of the units that gained usage
# since the last call (``_fair_tree_dirty``, called before each ``_ticks``) are moved to their new
# places among the others (still in order: the order is transitive), and the factors are
# rewritten where a leaf moved or a tie changed; most stay, and a run of them next to one another
# that provably keeps its places is settled at once (``_ft_run``: on KTH-SP2 with Slurm's defaults
# 18,300 leaves placed one by one instead of 127,500). Otherwise (two neighbours that compare only at
# this T, a rescaled usage, a negative one, the first call) the full ``_fair_tree`` runs and the
# state is rebuilt. The same floats either way: ``tests/test_fair_tree.py`` compares both with
# the reference on random histories.

FT_UNIT_PTR = 3  # rows of ``fti`` after ``_fair_tree``'s three (``by``, ``tmp``, ``pos``): the leaves
FT_UNIT_LEAF = 4  # of unit x are FT_UNIT_LEAF[FT_UNIT_PTR[x]:FT_UNIT_PTR[x + 1]]
FT_DIRTY = 5  # the units whose usage changed since the last computation
FT_MARK = 6  # 1: the unit is in FT_DIRTY
FT_MOVING = 7  # 1: a leaf of a dirty unit not yet at its new place
FT_LO = 8  # the ranges of places whose leaves or ties changed: first and last place
FT_HI = 9
FT_STATE = 10  # [FS_MODE, FS_DIRTY]
FT_ROWS = 11
FS_MODE = 0
FS_DIRTY = 1  # the count of units in FT_DIRTY
FT_FULL = 0  # FS_MODE: the next computation is a full one
FT_KEPT = 1  # the order is the last computation's, and no two neighbours depend on the parent's usage
FT_ALWAYS_FULL = 2  # shares outside [2^-500, 2^500] (the bounds below fail), or a small tree (``FT_UNITS_MIN``)
FT_UNITS_MIN = 16  # fewer units, or more than FT_LEAVES_MAX leaves a unit: ranking all costs less (~5 ns a leaf)
FT_LEAVES_MAX = 4  # than moving a dirty unit's leaves (20-90 ns each; e.g. 8 accounts of 8 users: 24 -> 28 ms)
FK_RATIO = 2  # rows of ``ftk`` after the keys: S / r of each leaf's unit (inf without usage);
FK_BOUNDS = 3  # [lowest positive r, highest r (bounds), lowest S, highest S, the usage scale then];
FK_FACTOR = 4  # the factor of each place, (n - place) / n (the same floats: no division per call)
FK_ROWS = 5
FT_SHARES_MIN = 2.0**-500
FT_SHARES_MAX = 2.0**500
_FT_MARGIN = 1.0 + 2.0**-40
_FT_SPREAD = 2.0**-480  # lowest r / highest r at least this times the units: every r / T >= 2^-500
_FT_TINY = 2.0**-1000
_FT_HUGE = 2.0**1000


@njit(cache=True, _nrt=False)
def _fair_tree_dirty(fti, active, n_active, acct, two_levels):
    """Mark the units of ``active[:n_active]``, the associations about to gain usage at a tick."""
    nd = fti[FT_STATE, FS_DIRTY]
    for i in range(n_active):
        l = active[i]
        x = acct[l] if two_levels else l
        if fti[FT_MARK, x] == 0:
            fti[FT_MARK, x] = 1
            fti[FT_DIRTY, nd] = x
            nd += 1
    fti[FT_STATE, FS_DIRTY] = nd


@njit(cache=True, _nrt=False, error_model="numpy")
def _leaf_order_near(p, q, acct, two_levels, us, ur, sib, usage, plan, stack):
    """:func:`_leaf_order` of two leaves whose units' S / r are too close to tell; their user
    keys (``_fair_tree``'s ``key_user``) computed here, from the usage as it is: the same floats,
    and nothing to keep up to date at each call."""
    c = 0
    exact = True
    x = acct[p] if two_levels else p
    y = acct[q] if two_levels else q
    if x != y:
        rx = ur[x]
        ry = ur[y]
        sx = us[x]
        sy = us[y]
        if not (rx > 0.0 or ry > 0.0) or (sx == sy and rx == ry):
            c = 0  # both LF inf, or the same LF whatever T
        else:
            a = sx * ry  # LF_x / LF_y = (S_x r_y) / (S_y r_x)
            b = sy * rx
            if _FT_TINY <= a <= _FT_HUGE and _FT_TINY <= b <= _FT_HUGE and (a > b * _FT_MARGIN or b > a * _FT_MARGIN):
                c = -1 if a > b else 1
            else:  # this T's keys (``_fair_tree``'s floats), which another T may order otherwise
                total = _np_sum(ur, plan, stack)
                lx = _level_lf(sx, rx, total)
                ly = _level_lf(sy, ry, total)
                c = -1 if lx > ly else (1 if lx < ly else 0)
                exact = False
    if c == 0 and two_levels:
        kp = -_level_lf(sib[p], usage[p], ur[acct[p]])
        kq = -_level_lf(sib[q], usage[q], ur[acct[q]])
        if kp < kq:
            c = -1
        elif kp > kq:
            c = 1
    return c, exact


@njit(cache=True, _nrt=False, inline="always")
def _leaf_order(p, q, kr, acct, two_levels, us, ur, sib, usage, plan, stack):
    """The order of leaves ``p`` and ``q`` by Fair Tree's (account key, user key), ``_fair_tree``'s
    ``key_acct``/``key_user`` (-1 p first, 1 q first, 0 tied: one rank), and whether it holds at
    every parent usage: by their units' S / r (``kr``) where these differ by more than the margin."""
    a = kr[p]
    b = kr[q]
    if a > b * _FT_MARGIN:
        return -1, True
    if b > a * _FT_MARGIN:
        return 1, True
    return _leaf_order_near(p, q, acct, two_levels, us, ur, sib, usage, plan, stack)


@njit(cache=True, _nrt=False)
def _ft_place(d, n, by, pos, moving, fval, fac, kr, acct, two_levels, us, ur, sib, usage, plan, stack):
    """Move leaf ``d`` to its place among the leaves not moving (in order; ties by leaf number);
    returns the first and last place of the leaves it passed, none (first > last) when it stays
    between two neighbours not moving that it does not tie with at any parent usage and its and
    its right neighbour's factors are already those of their places (the first of no tie)."""
    p = pos[d]
    t = p
    alone = True  # strictly between fixed neighbours, whatever T
    for s in (-1, 1):  # leftwards past the leaves it goes before; if none, rightwards past those before it
        j = p + s
        while 0 <= j < n:
            k = by[j]
            if moving[k] == 0:
                x, y = (d, k) if s < 0 else (k, d)  # (the left one first)
                c, exact = _leaf_order(x, y, kr, acct, two_levels, us, ur, sib, usage, plan, stack)
                if c < 0 or (c == 0 and x < y):
                    t = j
                else:
                    alone = alone and c > 0 and exact and j == p + s
                    break
            j += s
        if t != p:
            break
    s = -1 if t < p else 1
    for i in range(p, t, s):
        k = by[i + s]
        by[i] = k
        pos[k] = i
    by[t] = d
    pos[d] = t
    moving[d] = 0
    alone = alone and t == p and (p == 0 or moving[by[p - 1]] == 0) and (p == n - 1 or moving[by[p + 1]] == 0)
    if alone and fval[d] == fac[p] and (p == n - 1 or fval[by[p + 1]] == fac[p + 1]):
        return p + 1, p
    return min(p, t), max(p, t)


@njit(cache=True, _nrt=False)
def _ft_factors(lo, hi, n, by, fval, fac, kr, acct, two_levels, us, ur, sib, usage, plan, stack):
    """Fair Tree's factors of the places ``lo..hi`` and of the ties they are in (from the first
    place of the tie at ``lo`` to the end of the one at ``hi``); returns whether every two
    neighbours from ``lo - 1`` to ``hi + 1`` keep their order at every parent usage."""
    exact_all = True
    g = lo
    while g > 0:
        c, exact = _leaf_order(by[g - 1], by[g], kr, acct, two_levels, us, ur, sib, usage, plan, stack)
        exact_all = exact_all and exact
        if c != 0:
            break
        g -= 1
    first = g
    fval[by[g]] = fac[first]
    i = g + 1
    while i < n:
        c, exact = _leaf_order(by[i - 1], by[i], kr, acct, two_levels, us, ur, sib, usage, plan, stack)
        exact_all = exact_all and exact
        if c != 0:
            first = i
            if i > hi:
                fval[by[i]] = fac[first]
                break
        fval[by[i]] = fac[first]
        i += 1
    return exact_all


@njit(cache=True, _nrt=False, error_model="numpy", inline="always")
def _ft_run(p, n, by, pos, moving, fval, fac, kr, ku, acct, two_levels, sib, usage, ur):
    """Settle the run of moving leaves around place ``p`` (the places next to one another whose
    leaves belong to the dirty units) where it is, when every two neighbours from the leaf before
    it to the one after it are of two units whose S / r differ by more than the margin (so at
    every parent usage they are in this order, and so is the run among the leaves not moving),
    or of one unit, and the leaf after it starts a tie (its factor is its place's). Then only the
    order of one unit's leaves by their user keys (``ku``, computed here; ties by leaf) and the
    run's ties change: those are sorted and the run's factors rewritten. Returns whether it
    did so (else each of its leaves is placed as any other)."""
    a = p
    while a > 0 and moving[by[a - 1]] != 0:
        a -= 1
    b = p
    while b < n - 1 and moving[by[b + 1]] != 0:
        b += 1
    if a > 0 and not kr[by[a - 1]] > kr[by[a]] * _FT_MARGIN:
        return False
    if b < n - 1 and (not kr[by[b]] > kr[by[b + 1]] * _FT_MARGIN or fval[by[b + 1]] != fac[b + 1]):
        return False
    for i in range(a, b):
        l = by[i]
        m = by[i + 1]
        if not ((two_levels and acct[l] == acct[m]) or kr[l] > kr[m] * _FT_MARGIN):
            return False
    s = a
    while s <= b:  # each unit's leaves: sorted by (user key, leaf)
        x = acct[by[s]]
        t = s
        while two_levels and t < b and acct[by[t + 1]] == x:
            t += 1
        if t > s:
            r = ur[x]
            for i in range(s, t + 1):
                l = by[i]
                ku[l] = -_level_lf(sib[l], usage[l], r)
            for i in range(s + 1, t + 1):
                l = by[i]
                u = ku[l]
                q = i
                while q > s:
                    k = by[q - 1]
                    if ku[k] < u or (ku[k] == u and k < l):
                        break
                    by[q] = k
                    pos[k] = q
                    q -= 1
                by[q] = l
                pos[l] = q
        first = s
        for i in range(s, t + 1):
            l = by[i]
            if i > s and ku[l] != ku[by[i - 1]]:
                first = i
            fval[l] = fac[first]
            moving[l] = 0
        s = t + 1
    return True


@njit(cache=True, _nrt=False, error_model="numpy")
def _ft_kept(usage, raw_acct, acct, sib, two_levels, us, ur, plan, stack, fval, ftk, fti):
    """The update of ``_fair_tree_update`` while no two neighbours depend on the parent's usage:
    the leaves of the dirty units get their ratios, then their places; the changed ranges their
    factors. Returns whether still no two neighbours depend on it."""
    n = usage.shape[0]
    kr = ftk[FK_RATIO]
    fac = ftk[FK_FACTOR]
    by = fti[0]
    pos = fti[2]
    ptr = fti[FT_UNIT_PTR]
    leaves = fti[FT_UNIT_LEAF]
    dirty = fti[FT_DIRTY]
    moving = fti[FT_MOVING]
    lo_of = fti[FT_LO]
    hi_of = fti[FT_HI]
    nd = fti[FT_STATE, FS_DIRTY]
    for i in range(nd):
        x = dirty[i]
        r = ur[x]
        ratio = us[x] / r if r > 0.0 else np.inf
        for k in range(ptr[x], ptr[x + 1]):
            l = leaves[k]
            kr[l] = ratio
            moving[l] = 1
    wait = fti[1]  # (``_fair_tree``'s sort buffer) the leaves to place
    ku = ftk[1]  # (``_fair_tree``'s user keys) the user keys of a run's units
    nw = 0
    for i in range(nd):
        x = dirty[i]
        for k in range(ptr[x], ptr[x + 1]):
            d = leaves[k]
            if moving[d] == 0:
                continue
            p = pos[d]
            left = by[p - 1] if p > 0 else -1
            right = by[p + 1] if p < n - 1 else -1
            if (left < 0 or moving[left] == 0) and (right < 0 or moving[right] == 0):  # (a run of one: most often)
                kd = kr[d]
                if ((left < 0 or kr[left] > kd * _FT_MARGIN)
                        and (right < 0 or (kd > kr[right] * _FT_MARGIN and fval[right] == fac[p + 1]))):
                    fval[d] = fac[p]
                    moving[d] = 0
                    continue
            elif _ft_run(p, n, by, pos, moving, fval, fac, kr, ku, acct, two_levels, sib, usage, ur):
                continue
            wait[nw] = d
            nw += 1
    nr = 0
    for w in range(nw):
        d = wait[w]
        lo, hi = _ft_place(d, n, by, pos, moving, fval, fac, kr, acct, two_levels, us, ur, sib, usage, plan, stack)
        if lo > hi:
            continue
        r = nr  # the ranges by their first place
        while r > 0 and lo_of[r - 1] > lo:
            lo_of[r] = lo_of[r - 1]
            hi_of[r] = hi_of[r - 1]
            r -= 1
        lo_of[r] = lo
        hi_of[r] = hi
        nr += 1
    keep = True
    r = 0
    while r < nr:  # overlapping or touching ranges as one
        lo = lo_of[r]
        hi = hi_of[r]
        r += 1
        while r < nr and lo_of[r] <= hi + 1:
            if hi_of[r] > hi:
                hi = hi_of[r]
            r += 1
        if not _ft_factors(lo, hi, n, by, fval, fac, kr, acct, two_levels, us, ur, sib, usage, plan, stack):
            keep = False
    return keep


@njit(cache=True, _nrt=False)
def _ft_bounds_hold(bounds, n_unit):
    """Whether the units' usage and shares keep every quotient the order relies on in the normal
    range: each r / T in [2^-500, 1] (r >= 0, so T is at least the highest r and at most n_unit
    times it), S / r within [2^-1000, 2^1000]."""
    low = bounds[0]
    high = bounds[1]
    if low == np.inf:
        return True  # no usage (r >= 0): every LF is inf
    return low / high >= n_unit * _FT_SPREAD and bounds[2] / high >= _FT_TINY and bounds[3] / low <= _FT_HUGE


@njit(cache=True, _nrt=False, error_model="numpy")
def _fair_tree_update(usage, raw_acct, acct, sib, snorm, acct_share, two_levels, plan, stack, stamp, fval, fstamp,
                      ftk, fti, scale):
    """:func:`_fair_tree`'s factors (the same floats), updated from the last call's while its
    order is known to hold (see above), else computed in full; ``ftk``/``fti``: its keys,
    orders and state (rows ``FK_*``, ``FT_*``; ``FT_MARK``/``FT_DIRTY`` kept by
    ``_fair_tree_dirty``); ``scale``: the usage scale, which only grows unless ``_ticks``
    rescaled every usage (then in full)."""
    n = usage.shape[0]
    us = acct_share if two_levels else snorm
    ur = raw_acct if two_levels else usage
    state = fti[FT_STATE]
    nd = state[FS_DIRTY]
    bounds = ftk[FK_BOUNDS]
    if state[FS_MODE] == FT_KEPT and scale >= bounds[4]:
        bounds[4] = scale
        negative = False
        for i in range(nd):
            r = ur[fti[FT_DIRTY, i]]
            negative = negative or r < 0.0
            if r > 0.0 and r < bounds[0]:
                bounds[0] = r
            if r > bounds[1]:
                bounds[1] = r
        if not negative and _ft_bounds_hold(bounds, ur.shape[0]):
            if not _ft_kept(usage, raw_acct, acct, sib, two_levels, us, ur, plan, stack, fval, ftk, fti):
                state[FS_MODE] = FT_FULL
            for i in range(nd):
                fti[FT_MARK, fti[FT_DIRTY, i]] = 0
            state[FS_DIRTY] = 0
            for l in range(n):
                fstamp[l] = stamp
            return
    _fair_tree(usage, raw_acct, acct, sib, snorm, acct_share, two_levels, plan, stack, stamp, fval, fstamp,
               ftk[0], ftk[1], fti[0], fti[1], fti[2])
    for i in range(nd):
        fti[FT_MARK, fti[FT_DIRTY, i]] = 0
    state[FS_DIRTY] = 0
    by = fti[0]
    for i in range(n):
        fti[2, by[i]] = i
    kr = ftk[FK_RATIO]
    for l in range(n):
        x = acct[l] if two_levels else l
        r = ur[x]
        kr[l] = us[x] / r if r > 0.0 else np.inf
    low = np.inf
    high = 0.0
    negative = False
    for x in range(ur.shape[0]):
        r = ur[x]
        negative = negative or r < 0.0
        if r > 0.0 and r < low:
            low = r
        if r > high:
            high = r
    bounds[0] = low
    bounds[1] = high
    bounds[4] = scale
    if state[FS_MODE] != FT_ALWAYS_FULL:
        keep = not negative and _ft_bounds_hold(bounds, ur.shape[0])
        i = 1
        while keep and i < n:
            _, keep = _leaf_order(by[i - 1], by[i], kr, acct, two_levels, us, ur, sib, usage, plan, stack)
            i += 1
        state[FS_MODE] = FT_KEPT if keep else FT_FULL
