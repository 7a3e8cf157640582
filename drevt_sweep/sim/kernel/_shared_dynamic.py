"""The compiled shared-node kernel with a dynamic priority: ``sim.shared._run_events`` with
``dyn`` (multifactor, classic or Fair Tree; wfp3; unicef) under none / easy / easy_drevt, bit
for bit.

The queue is an array sorted by (key, FCFS rank), re-keyed and re-sorted at multifactor's
ticks (every pass for wfp3/unicef), as ``_extended.extended_steps`` keeps it on whole-node
pools; its fair-share steps (``_ticks``, ``_account_start``/``_account_end``, the keys, Fair
Tree) are used as they are, with each job charged ``charge[j]`` (the CPUs it holds) instead of
its nodes. A pass scans the queue in order: jobs start by first fit while they fit; the first
that does not is the head, whose shadow time and free resources then are found by
``kernel.shared._shadow_on_nodes``, as ``shared_queue_steps`` finds them; later jobs are
backfilled by EASY's rules on per-node resources. The scan is linear (no segment tree over
ranks: the order moves). ``tests/test_shared_multifactor.py`` compares it with the reference.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._extended import (DYN_MULTIFACTOR, DYN_NONE, SF_ROOT, ST_ACTIVE, _account_end, _account_start, _advance,
                        _arrive, _compact, _load_fairshare, _rekey, _store_fairshare)
from ._kernels import (EV_NEXT, MODE_EASY, MODE_EASY_DREVT, MODE_NONE, _finish_next, _launch, _load_counts,
                       _slice_event, _store_counts)
from .shared import MODES, _easy_admits, _first_fit, _give_back, _maxima, _node_lists, _shadow_on_nodes, _take


@njit(cache=True, _nrt=False)
def shared_dynamic_steps(submit, limit, nodes, dur, arrivals, rank, cores, gpus, mem, charge, mode,
                         dyn, a_arr, b_arr, leaf, acct, sib, snorm, n_acct, w_age, w_fs, max_age, period, decay, t0,
                         charge_ended, begin, end, est, key, node_start, node_list, fc, fg, fm, Fc, Fg, Fm, pick,
                         re, rj, rn, hk, hj, q, tmp,
                         usage, acc, runn, raw_acct, fval, fstamp, active, is_active,
                         fair_tree, two_levels, acct_share, ftk, fti, fplan, fstack, st, sf, budget):
    """none / easy / easy_drevt on shared nodes with a dynamic priority, from state
    ``st``/``sf`` for at most ``budget`` events. Status: 0 done, 1 budget used (call again),
    -3 the head job never fits its partition. ``key`` starts as the FCFS ranks."""
    strict = mode == MODE_EASY_DREVT
    use_extra = mode == MODE_EASY
    fairshare = dyn == DYN_MULTIFACTOR
    _, R, H, Q, a, done, now = _load_counts(st, sf)
    ft = (acct_share, two_levels, fplan, fstack, ftk, fti)  # Fair Tree's arrays (_arrive, _rekey)
    n_active, stamp, tick_k, due, root, scale, next_tick = _load_fairshare(st, sf, ST_ACTIVE, SF_ROOT)
    n_arr = arrivals.shape[0]
    status = 0
    while True:
        status, now, budget = _slice_event(submit, arrivals, a, hk, H, now, budget)
        if status != EV_NEXT:
            break
        if fairshare:  # Multifactor.advance
            now, n_active, root, scale, tick_k, next_tick, stamp, due = _advance(
                now, Q, next_tick, tick_k, t0, period, decay, scale, root, n_active, active, is_active, acc, runn,
                usage, raw_acct, acct, n_acct, fair_tree, fti, two_levels, stamp, due)

        # 1. completions, in (end, job) order
        while H > 0 and hk[0] <= now:
            j, H, R = _finish_next(hk, hj, H, re, rj, rn, R, est)
            _give_back(j, fc, fg, fm, node_start, node_list, cores, gpus, mem)
            done += 1
            if fairshare:
                _account_end(leaf[j], charge[j], now, next_tick, runn, acc, charge_ended, begin[j], period)

        # 2. arrivals, keyed now
        while a < n_arr and submit[arrivals[a]] <= now:
            j = arrivals[a]
            a += 1
            Q = _arrive(j, dyn, q, Q, key, rank, now, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage, raw_acct,
                        fval, fstamp, stamp, root, w_age, w_fs, max_age, fair_tree, ft, scale)
        if Q == 0:
            continue

        # 2c. the dynamic priority re-orders the queue
        if dyn != DYN_NONE and (dyn != DYN_MULTIFACTOR or due):
            due = False
            _rekey(dyn, q, Q, key, rank, tmp, now, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage, raw_acct,
                   fval, fstamp, stamp, root, w_age, w_fs, max_age, fair_tree, ft, scale)

        # 3. start jobs in priority order while they fit
        k = 0
        while k < Q:
            j = q[k]
            if not _first_fit(fc, fg, fm, nodes[j], cores[j], gpus[j], mem[j], pick):
                break
            _take(j, pick, nodes, cores, gpus, mem, fc, fg, fm, node_start, node_list)
            R, H = _launch(j, now, now + limit[j], begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)
            if fairshare:
                n_active = _account_start(leaf[j], charge[j], now, next_tick, runn, acc, active, is_active, n_active)
            k += 1
        started_any = k > 0
        if k < Q and mode != MODE_NONE:
            # 4. the head's shadow time and the free resources then
            h = q[k]
            kh, ch, gh, mh = nodes[h], cores[h], gpus[h], mem[h]
            shadow, fits = _shadow_on_nodes(now, kh, ch, gh, mh, fc, fg, fm, Fc, Fg, Fm, re, rj, R, node_start,
                                            node_list, cores, gpus, mem)
            if shadow == np.inf:
                status = -3
                break

            # 5. backfill later jobs (a job asking for more than any node has free, or, under
            # easy_drevt, not ending before the shadow time, is passed over without a first fit)
            maxc, maxg, maxm = _maxima(fc, fg, fm)
            for i in range(k + 1, Q):
                j = q[i]
                if cores[j] > maxc or gpus[j] > maxg or mem[j] > maxm:
                    continue
                if strict and not now + limit[j] < shadow:
                    continue
                if not _first_fit(fc, fg, fm, nodes[j], cores[j], gpus[j], mem[j], pick):
                    continue
                admitted, fits = _easy_admits(j, now, shadow, strict, use_extra, fits, kh, ch, gh, mh, pick, Fc, Fg,
                                              Fm, limit, nodes, cores, gpus, mem)
                if not admitted:
                    continue
                _take(j, pick, nodes, cores, gpus, mem, fc, fg, fm, node_start, node_list)
                R, H = _launch(j, now, now + limit[j], begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)
                if fairshare:
                    n_active = _account_start(leaf[j], charge[j], now, next_tick, runn, acc, active, is_active,
                                              n_active)
                started_any = True
                maxc, maxg, maxm = _maxima(fc, fg, fm)
        if started_any:
            Q = _compact(q, Q, begin)
    _store_counts(st, sf, 0, R, H, Q, a, done, now)
    _store_fairshare(st, sf, ST_ACTIVE, SF_ROOT, n_active, stamp, tick_k, due, root, scale, next_tick)
    return status


def run_shared_dynamic(submit, limit, nodes, dur, rank, request, machine, backfill, dynamic, progress=None):
    """``kernel.shared.run_shared`` with a dynamic priority (``dynamic``: the reference's policy
    object; none / easy / easy_drevt): every array of :func:`shared_dynamic_steps` allocated
    here (the fair-share state as ``kernel.run_extended`` allocates it), the driver called in
    slices of ``kernel.STEP_BUDGET`` events (``progress`` and Ctrl-C between them)."""
    from . import _dynamic_state, _first_tick
    from . import _extended as ext

    cores, gpus, mem = (np.ascontiguousarray(r, dtype=np.int64) for r in request)
    n = int(submit.shape[0])
    if n == 0:
        return np.empty(0), np.empty(0), np.zeros(1, np.int64), np.empty(0, np.int64)
    submit = np.ascontiguousarray(submit, dtype=np.float64)
    limit = np.ascontiguousarray(limit, dtype=np.float64)
    nodes = np.ascontiguousarray(nodes, dtype=np.int64)
    rank = np.ascontiguousarray(rank, dtype=np.int64)
    arrivals = np.ascontiguousarray(np.argsort(submit, kind="stable"), dtype=np.int64)
    args = (submit, limit, nodes, np.ascontiguousarray(dur, dtype=np.float64), arrivals, rank, cores, gpus, mem)
    mode = MODES[backfill]
    n_nodes, cap_c, cap_g, cap_m = (int(x) for x in machine)
    # what fair-share charges a running job per second (multifactor; wfp3/unicef charge nothing)
    charge = np.ascontiguousarray(getattr(dynamic, "charge", nodes), dtype=np.int64)
    kind, dyn_args, fairshare, fair_tree_state = _dynamic_state(dynamic, n)
    begin = np.full(n, np.nan)
    end = np.full(n, np.nan)
    est = np.full(n, np.nan)  # estimated end of each started job
    node_start, node_list = _node_lists(nodes)
    free = (np.full(n_nodes, cap_c, np.int64), np.full(n_nodes, cap_g, np.int64), np.full(n_nodes, cap_m, np.int64))
    at_shadow = tuple(np.empty(n_nodes, np.int64) for _ in range(3))  # free resources at the shadow time
    rmax = n + 1  # running jobs
    running = (np.empty(rmax), np.empty(rmax, np.int64), np.empty(rmax, np.int64),  # by (estimated end, job)
               np.empty(rmax), np.empty(rmax, np.int64))  # completion heap (real end, job)
    state = (*args, charge, np.int64(mode), *dyn_args, begin, end, est, rank.astype(np.float64),  # sort keys
             node_start, node_list, *free, *at_shadow, np.empty(n_nodes, np.int64), *running,
             np.empty(n, np.int64), np.empty(n, np.int64),  # the queue, a sort buffer
             *fairshare, *fair_tree_state)
    from . import _kernels as kernels, _run_slices

    st = np.zeros(kernels.ST_SIZE, np.int64)
    sf = np.zeros(kernels.SF_SIZE)
    ext.start_fairshare(st, sf, ext.ST_ACTIVE, ext.SF_ROOT, _first_tick(kind, dyn_args))
    _run_slices(kernels, shared_dynamic_steps, state, st, sf, progress,
                {-3: "the head job never fits its partition (shared-node kernel)"},
                "shared-node kernel stalled with {left} job(s) waiting")
    return begin, end, node_start, node_list
