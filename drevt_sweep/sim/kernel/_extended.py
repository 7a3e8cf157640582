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
    Fair Tree's (:func:`_fair_tree` over ``acct_share``, ``ftk``/``fti`` its keys and orders,
    ``fplan``/``fstack`` numpy's summation order), all of them at the first key of a tick, as
    ``slurm_steps`` computes them (usage changes only at ticks: the same values whenever).
    """
    use_extra = mode == MODE_EASY
    strict = mode == MODE_EASY_DREVT
    planning = estimate != EST_USER
    fairshare = dyn == DYN_MULTIFACTOR
    free, R, H, Q, a, done, now = _load_counts(st, sf)
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
            if Q > 0 and next_tick < now:
                now = next_tick
            if next_tick <= now:
                n_active, root, scale, tick_k, next_tick, ticks = _ticks(
                    now, next_tick, tick_k, t0, period, decay, scale, root, n_active, active, is_active, acc, runn,
                    usage, raw_acct, acct, n_acct)
                due = True
                stamp += ticks  # the fair-share factors change

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
            if dyn != DYN_NONE:
                if fair_tree and fstamp[leaf[j]] != stamp:  # (all factors at once, once per tick)
                    _fair_tree(usage, raw_acct, acct, sib, snorm, acct_share, two_levels, fplan, fstack, stamp,
                               fval, fstamp, ftk[0], ftk[1], fti[0], fti[1], fti[2])
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
                if fair_tree and fstamp[leaf[q[0]]] != stamp:
                    _fair_tree(usage, raw_acct, acct, sib, snorm, acct_share, two_levels, fplan, fstack, stamp,
                               fval, fstamp, ftk[0], ftk[1], fti[0], fti[1], fti[2])
                _rekey_multifactor(q, Q, key, now, submit, a_arr, leaf, acct, sib, snorm, usage, raw_acct,
                                   fval, fstamp, stamp, root, w_age, w_fs, max_age)
            else:
                _rekey_every_pass(dyn, q, Q, key, now, submit, a_arr, b_arr)
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
