"""numba kernel of ``backfill: slurm`` (``policies.slurm_backfill``): Slurm's main scheduler on
events and a backfill cycle every ``bf_interval``, bit for bit the reference's schedule.

Scope: one whole-node pool of constant size, static priorities (a rank per job), Slurm's
multifactor with classic fair-share or Fair Tree (``policies.multifactor``) or WFP3/UNICEF
(``policies.literature``), no association limits and no
``PriorityTier`` (``engine._use_fast_kernel`` sends every other case to the reference). The
event loop is ``_kernels``' (its steps ``_next_wake``, ``_finish_next``, ``_launch``, the state
``_load_queue``/``_store_queue``, the segment tree over ranks of ``queue_policy_steps``); with a dynamic priority the queue is
``_extended``'s instead (an array sorted by (key, FCFS rank), re-keyed and re-sorted at each
``calc_period`` tick, or before every pass for WFP3/UNICEF, ``_literature_key``) and so are the
fair-share ticks, the usage accounting at starts and ends
and the priorities (``_ticks``, ``_account_start``/``_account_end``, ``_multifactor_key``; Fair
Tree's factors, all at once at the first key of a tick, ``_fair_tree_update``): written once, in
``_extended`` (with the scalars they carry between slices, ``_load_fairshare``/
``_store_fairshare``). What is Slurm's here is when a pass runs and what it does:

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

from ._extended import (DYN_MULTIFACTOR, _account_end, _account_start, _compact, _fair_tree_dirty,
                        _fair_tree_update, _insert_sorted, _literature_key, _load_fairshare, _multifactor_key,
                        _rekey_every_pass, _rekey_multifactor, _resort, _store_fairshare, _ticks)
from ._kernels import (BIG, _finish_next, _first_fit, _first_waiting, _launch, _load_queue, _next_wake, _prof_back,
                       _prof_fit, _prof_fit_at, _prof_occupy, _prof_occupy_at, _prof_rebuild, _seg_clear, _seg_set,
                       _store_queue)

# scalars carried between slices (st: int64, sf: float64), after _kernels' shared ones
ST_KBF = 7  # index of the next backfill cycle (t0 + k * bf_interval)
ST_KFULL = 8  # index of the next periodic full pass (t0 + k * sched_interval)
ST_CYCLE = 9  # number of the current backfill cycle (stamps the per-user counts)
ST_SKIP = 10  # 1 while the clocks jump over passes that start nothing (SF_WAKE: where to)
ST_ACTIVE = 11  # multifactor: associations with node-seconds since the last tick (``_extended``'s)
ST_STAMP = 12  # multifactor: fair-share generation (bumped at each tick)
ST_TICK = 13  # multifactor: number of the next tick (t0 + ST_TICK * calc_period)
ST_DUE = 14  # multifactor: 1 when a tick passed and the queue must be re-keyed
ST_LEAST = 15  # sorted queue: no waiting job asks for fewer nodes (``_least_waiting``)
ST_STOP = 16  # while the clocks jump: the last place the last pass's cycle may have tested (-1: none)
ST_BOUND = 17  # 1 while the profile is the last cycle's, which started nothing (an arrival is fitted there)
ST_SIZE = 18
SF_T0 = 1  # time of the first pass (NaN before it)
SF_WAKE = 2  # the next cycle or full pass while jobs wait (SlurmBackfill.wake_at)
SF_NEXT_BF = 3
SF_NEXT_FULL = 4
SF_ROOT = 5  # multifactor: the root's scaled usage
SF_SCALE = 6  # multifactor: usage scale
SF_TICK_AT = 7  # multifactor: the next tick (inf without multifactor)
SF_HOLD = 8  # wfp3/unicef: passes before this time start nothing while the order stays (-inf: none)
SF_DUE_AT = 9  # multifactor: the time of the tick whose re-keying is pending (ST_DUE)
SF_SIZE = 10
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
# multifactor's scalars (``Multifactor.kernel_args``), as one array
M_W_AGE = 0
M_W_FS = 1
M_MAX_AGE = 2
M_PERIOD = 3  # calc_period
M_DECAY = 4  # per tick
M_T0 = 5  # first submission (ticks count from it)
M_FAIR_TREE = 6  # 1: Fair Tree's fair-share factor (``_extended._fair_tree``), 0: classic
M_TWO_LEVELS = 7  # 1: the association tree is root -> account -> user (``fairshare_by: account/user``)
M_DYN = 8  # the dynamic priority (``_extended.DYN_*``): multifactor, or wfp3/unicef (re-keyed at every pass)
M_CHARGE_ENDED = 9  # 1: a job ending between ticks is charged up to its end (``charge_ended_jobs``)
M_SIZE = 10


@njit(cache=True, _nrt=False, inline="always")
def _settings(pf_, pi):
    """The settings from their two arrays: (bf_interval, sched_interval, bf_window,
    bf_resolution, jobs tested per cycle, per user, bf_job_part_count_reserve,
    default_queue_depth)."""
    return (pf_[P_INTERVAL], pf_[P_SCHED], pf_[P_WINDOW], pf_[P_RES], pi[P_MAX_TEST], pi[P_MAX_USER], pi[P_RESERVE],
            pi[P_DEPTH])


@njit(cache=True, _nrt=False, inline="always")
def _multifactor(mf):
    """Multifactor's settings from their array: (age weight, fair-share weight, max age, tick
    period, decay per tick, first submission, Fair Tree?, two-level tree?, the dynamic priority
    ``DYN_*``, ending jobs charged up to their end?)."""
    return (mf[M_W_AGE], mf[M_W_FS], mf[M_MAX_AGE], mf[M_PERIOD], mf[M_DECAY], mf[M_T0], mf[M_FAIR_TREE] != 0.0,
            mf[M_TWO_LEVELS] != 0.0, np.int64(mf[M_DYN]), mf[M_CHARGE_ENDED] != 0.0)


@njit(cache=True, _nrt=False, inline="always")
def _load_clocks(st, sf):
    """The clocks of the periodic passes carried between slices: (number of the next backfill
    cycle, of the next periodic full pass, the first pass's time, the next cycle, the next full
    pass)."""
    return st[ST_KBF], st[ST_KFULL], sf[SF_T0], sf[SF_NEXT_BF], sf[SF_NEXT_FULL]


@njit(cache=True, _nrt=False, inline="always")
def _store_clocks(st, sf, kbf, kfull, t0, next_bf, next_full):
    """Keep the clocks for the next slice (``_load_clocks``' slots)."""
    st[ST_KBF] = kbf
    st[ST_KFULL] = kfull
    sf[SF_T0] = t0
    sf[SF_NEXT_BF] = next_bf
    sf[SF_NEXT_FULL] = next_full


def start_clocks(st, sf):
    """The clocks of the periodic passes before the first pass (``_load_clocks``' slots): the
    first pass's time not known yet (NaN), no cycle or full pass due, the first full pass number
    1 (``SlurmBackfill.k``: one interval after that time)."""
    st[ST_KFULL] = 1
    sf[SF_T0] = np.nan
    sf[SF_NEXT_BF] = sf[SF_NEXT_FULL] = np.inf


@njit(cache=True, _nrt=False, inline="always")
def _next_waiting(sorted_q, tn, tl, size, qn, h):
    """The first waiting job's place at or after ``h`` in priority order, or -1: a position in
    the sorted queue array (its first ``qn`` entries; started jobs are dropped between passes
    and never visited twice within one), else a rank in the segment tree."""
    if sorted_q:
        return h if h < qn else -1
    return _first_waiting(tn, tl, size, h)


@njit(cache=True, _nrt=False, inline="always")
def _least_waiting(sorted_q, tn, wcount, least):
    """The fewest nodes a waiting job asks for (BIG: none waits), and the sorted queue's bound
    to keep: the root of the segment tree's node minima, or with ``sorted_q`` the first count
    from ``least`` on with a waiting job (``wcount``: waiting jobs per node count; ``least``
    is lowered at arrivals, raised here)."""
    if not sorted_q:
        return tn[1], least
    while least < wcount.shape[0] and wcount[least] == 0:
        least += 1
    return (least if least < wcount.shape[0] else BIG), least


@njit(cache=True, _nrt=False)
def _last_fitting(sorted_q, tn, size, q, qn, nodes, begin, free):
    """The last place in priority order whose waiting job asks for at most ``free`` nodes, or
    -1: a rank (the segment tree, descended from the root towards the right) or a position in
    ``q[:qn]`` (scanned back from the end, the jobs started in this pass left out)."""
    if not sorted_q:
        if tn[1] > free:
            return -1
        i = 1
        while i < size:
            i = 2 * i + 1 if tn[2 * i + 1] <= free else 2 * i
        return i - size
    p = qn - 1
    while p >= 0 and (nodes[q[p]] > free or begin[q[p]] == begin[q[p]]):
        p -= 1
    return p


@njit(cache=True, _nrt=False)
def _firm_bound(pt, pf, pb, ps, now, sorted_q, tn, tl, size, order, qn, nodes, limit, begin, h, last, free):
    """The earliest start in the profile as it stands (the cycle's profile before the first job
    whose start or reservation reaches the window end is placed) of any waiting job from place
    ``h`` to ``last`` that asks for at most ``free`` nodes (+inf if none): a bound on the
    starts of those jobs at any later cycle with the same state, whatever its window end
    (``slurm_steps`` says why)."""
    firm = np.inf
    while h >= 0 and h <= last:
        if sorted_q:
            j = order[h]
            if nodes[j] > free or begin[j] == begin[j]:
                h += 1
                continue
        else:
            h = _first_fit(tn, tl, size, h, free)
            if h < 0 or h > last:
                break
            j = order[h]
        s = _prof_fit(pt, pf, pb, ps, now, nodes[j], limit[j], np.inf, firm)
        if s < firm:
            firm = s
            if firm <= now:
                break
        h += 1
    return firm


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
def _pass_clocks(now, t0, interval, sched, kbf, kfull, next_bf, next_full):
    """A pass's clocks (``SlurmBackfill.select``): the first pass starts both at ``now``; a
    backfill cycle is due at every pass with ``bf_interval=0``, else at its ticks, and a full
    main pass at the ``sched_interval`` ticks (none without one). Returns (t0, bf_due, full,
    kbf, kfull, next_bf, next_full)."""
    if t0 != t0:
        t0 = now
    bf_due = interval == 0
    if not bf_due:
        bf_due, kbf, next_bf = _due(now, t0, interval, kbf)
    full = False
    if sched > 0:
        full, kfull, next_full = _due(now, t0, sched, kfull)
    return t0, bf_due, full, kbf, kfull, next_bf, next_full


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
def _pending_key(pend, at, begin, key, submit, a_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp, stamp,
                 root, w_age, w_fs, max_age, acct_share, two_levels, fplan, fstack, ftk, fti, scale):
    """Fair Tree: the key of job ``pend``, which arrived at ``at`` into an empty queue with the
    factors not yet computed for this tick, if it still waits; its key was left until another is
    compared with it (an arrival), the usage changes (a tick) or the slice ends, none of which
    came between (so the factors are those it would have had). Most such jobs start at once
    (4,906 of the 48,144 computations of the factors on KTH-SP2 with Slurm's defaults were for
    them). Returns -1 (no key pending)."""
    if begin[pend] != begin[pend]:
        if fstamp[leaf[pend]] != stamp:
            _fair_tree_update(usage, raw_acct, acct, sib, snorm, acct_share, two_levels, fplan, fstack, stamp, fval,
                              fstamp, ftk, fti, scale)
        key[pend] = _multifactor_key(at, pend, submit, a_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp,
                                     stamp, root, w_age, w_fs, max_age)
    return -1


@njit(cache=True, _nrt=False)
def _cycle(now, free, total, limit, nodes, users, pf_, pi, begin, end, est, dur, order,
           tn, tl, re, rj, rn, R, hk, hj, H, Q, pt, pf, pb, ps, ucount, ustamp, cycle,
           sorted_q, start, qn, fs, leaf, runn, acc, active, is_active, n_active, next_tick):
    """One backfill cycle (``_attempt_backfill``; see ``policies.slurm_backfill``) after the
    main scheduler's starts, over the waiting jobs from ``start`` on in priority order
    (``order``: the job of each rank, or with ``sorted_q`` the sorted queue array, its first
    ``qn`` places; with ``fs`` (multifactor) a start is accounted to its fair-share
    association). Returns (free, running, heap, waiting,
    quiet, window_ok, firm, active associations, the last place it may have tested): when it
    started nothing, ``quiet`` is the time before which a cycle in the same state starts nothing
    either (``slurm_steps`` says why), else ``now``; ``window_ok`` whether that holds across
    window ends later than this one's; ``firm`` (<= ``quiet``) a time before which it holds
    whatever the window end. It stops at the first job to reach the window end if ``firm`` is
    later than now (``quiet`` is then ``firm``)."""
    size = tn.shape[0] // 2
    window = pf_[P_WINDOW]
    res = pf_[P_RES]
    window_end = _window_end(now, window, res)
    if window_end <= now:
        return free, R, H, Q, now, False, now, n_active, -1  # "Now after current backfill window": no cycle
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
    firm = np.inf  # the earliest start of a fitting job after the first one to reach the window end
    reach = False  # a tested job's start or reservation reached the window end
    k0 = -1  # the first one's place (+ size)
    last = _last_fitting(sorted_q, tn, size, order, qn, nodes, begin, free)
    h = _next_waiting(sorted_q, tn, tl, size, qn, start)
    while h >= 0 and tested < max_test and h <= last:  # (after ``last`` none fits now: slurm_steps)
        j = order[h]
        if max_user > 0:
            u = users[j]
            if ustamp[u] != cycle:
                ustamp[u] = cycle
                ucount[u] = 0
            if ucount[u] >= max_user:
                h = _next_waiting(sorted_q, tn, tl, size, qn, h + 1)
                continue
            ucount[u] += 1
        tested += 1
        nj = nodes[j]
        d = limit[j]
        s, sm, sk = _prof_fit_at(pt, pf, pb, ps, now, nj, d, np.inf, np.inf)  # (its position: for its reservation)
        if s < quiet:
            quiet = s
        at = h + size
        h = _next_waiting(sorted_q, tn, tl, size, qn, h + 1)
        if s == now:
            R, H = _launch(j, now, now + d, begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)
            if fs:
                n_active = _account_start(leaf[j], nj, now, next_tick, runn, acc, active, is_active, n_active)
            free -= nj
            if not sorted_q:
                _seg_clear(tn, None, None, tl, at)
            Q -= 1
            _prof_occupy_at(pt, pf, pb, ps, sm, sk, now, now + d, nj)
            last = _last_fitting(sorted_q, tn, size, order, qn, nodes, begin, free)
            continue
        if not reach and s + d > window_end:  # the profile is P_stable: bound the jobs after it
            reach = True
            k0 = at
            firm = _firm_bound(pt, pf, pb, ps, now, sorted_q, tn, tl, size, order, qn, nodes, limit, begin, h,
                               last, free)
            if firm > now:  # no job after it starts now, nor before ``firm`` in any later cycle: done
                if firm < quiet:
                    quiet = firm
                break
        if cap > 0 and reserved >= cap:
            continue
        a = s
        if res > 0:
            a = np.floor(a / res) * res
        past = s >= window_end  # no reservation (starts after the window)
        if not past and s > now + window:
            quiet = now  # (a window end rounded up past now + bf_window: never skipped)
            continue
        # ``window_ok``'s checks: a later window's reservation would start before this end; a cut job
        # finds no room after it; a reservation follows a job past the window, under a cap
        if window_ok and (a < window_end if past else (
                (s + d > window_end and level - beyond_of < nj) or (cap > 0 and beyond))):
            window_ok = False  # k*: the jobs before it keep their places in any later window
            if firm <= now and at != k0:  # bound the jobs after it in P* (at k0: done, the same profile)
                firm = _firm_bound(pt, pf, pb, ps, now, sorted_q, tn, tl, size, order, qn, nodes, limit, begin,
                                   h, last, free)
                if firm > now:
                    if firm < quiet:
                        quiet = firm
                    break
        if past:
            beyond = True
            beyond_of += nj
            continue
        b = s + d
        if res > 0:
            b = np.floor((b + res - 1) / res) * res  # _set_slot_time
        if a < now:
            a = now
        if b > window_end:
            b = window_end
        if b > a:  # (a resolution under 1 s can round a tiny job's end before its start: no change)
            sm, sk = _prof_back(pt, pb, ps, sm, sk, a)  # (a <= s: its place is at or before the fit's)
            _prof_occupy_at(pt, pf, pb, ps, sm, sk, a, b, nj)
        reserved += 1
        if s + d > window_end:  # cut by the window end: in a later window it still fits if the jobs
            beyond_of += nj  # before it leave room (``level - beyond_of >= nj`` above)
    if firm > quiet:
        firm = quiet
    return free, R, H, Q, quiet, window_ok, firm, n_active, last


@njit(cache=True, _nrt=False)
def slurm_steps(submit, limit, nodes, dur, arrivals, rank, users, total, pf_, pi,
                begin, end, est, job_of_rank, tn, tl, re, rj, rn, hk, hj, pt, pf, pb, ps,
                ucount, ustamp, wcount, fs, mf, a_arr, b_arr, leaf, acct, sib, snorm, key, q, tmp,
                usage, acc, runn, raw_acct, fval, fstamp, active, is_active, acct_share, ftk, fti, fplan, fstack,
                st, sf, budget):
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

    A finer bound across any later window end (``firm``, ``_firm_bound``). Let k0 be the first
    tested job (in the cycle's order, not started) whose start or reservation reaches the window
    end (s + d > we1), and P_stable the profile just before k0 is placed: the running jobs cut at
    we1 minus the reservations of the jobs before k0, all of which end by we1. At t2 < ``quiet``
    with the same state and any window end we2 >= we1, the jobs before k0 keep their starts and
    reservations (the induction above: their profiles are unchanged on [t2, we1), lower or equal
    after, and their fits end by we1). So every later job k's profile at t2 is at most P_stable:
    the same running jobs (equal on [t2, we1), at most ``total`` = P_stable after we1), the same
    reservations of the jobs before k0 and more (nodes taken, never given). A start of k at t2
    fits P_stable at t2, so t2 >= k's earliest start in P_stable from t1. Only jobs that ask for
    at most ``free`` nodes can start before the first release (the running jobs' profile is
    ``free`` until then, and ``quiet`` is at most that release); the jobs after ``last`` ask
    for more. So no cycle before ``firm`` = the least of ``quiet`` and those jobs'
    earliest starts in P_stable starts a job, whatever its window end: the clocks jump at least
    to the first cycle at or after ``firm`` (to the later of that and the window rule's target;
    each bounds a prefix of cycles that start nothing). The jobs counted are every waiting job
    from k0 on to ``last`` that fits the free nodes, tested or not (per-user caps and
    ``bf_max_job_test`` skip some: more jobs only lower the bound); a reservation cap changes
    nothing (P_stable holds only reservations that every later window makes too). On KTH-SP2
    with the defaults the computed cycles fall from 57,118 to 39,081 (FCFS), 54,453 to 34,164
    (multifactor), 50,836 to 34,060 (Fair Tree). And when ``firm`` > now the cycle stops at k0:
    no later job starts at this cycle either (its profile is at most P_stable, where none fits
    before ``firm``), and ``quiet`` is lowered to ``firm``, so the clocks jump to the first cycle
    at or after ``firm`` (the window rule's target is then no later). The jobs from k0 on are
    not fitted a second time nor reserved: fits 748,048 -> 655,120 and reservations 621,371 ->
    534,338 on KTH-SP2 (FCFS; multifactor 526,012 -> 397,601 and 453,666 -> 338,085), with the
    same cycles computed.

    The same bound from further down the queue. If ``firm`` <= now at k0, the scan is done again
    at k*, the first tested job for which a ``window_ok`` check fails (a job cut by we1 with no
    room after we1, a reservation after a job past the window under a reservation cap, a job
    past the window whose start rounded to the resolution falls before we1), in P*, the profile
    just before k* is placed. The jobs before k* keep their starts and their reservations on
    [t2, we1) at any later window end (the ``window_ok`` argument above, over them only), and
    what a later window adds to their reservations lies after we1, where P* is ``total``; so
    every later job's profile at t2 is at most P*, and ``firm`` from P* (and the stop when it is
    later than now) holds as from P_stable. On KTH-SP2 with the defaults: 35,087 -> 27,813
    cycles computed (FCFS), 33,240 -> 27,120 (multifactor), 33,195 -> 28,608 (Fair Tree).

    The periodic full passes in between start nothing (the head was tested and could not start
    now, so it does not fit in the free nodes). So the clocks jump to the first cycle at or after
    ``quiet`` (or at the first later window end), unless an event comes first, and then stand
    where the reference's tick-by-tick visits leave them (``_first_tick``). Checked bit for bit
    against the reference (which visits every tick) in ``tests/test_slurm_kernel.py``.

    No waiting job fits (``idle``). A pass starts a job only if it fits in the free nodes now:
    the main scheduler's head must, and in a cycle a job's profile is the running jobs' (free
    nodes now, more at each release: never fewer later) minus reservations, so a start now needs
    ``nodes <= free``. When the fewest nodes any waiting job asks for (the segment tree's root,
    or ``wcount``'s first non-empty count for the sorted queue) exceed the free nodes, the pass
    starts nothing, and so does every pass until an arrival (a smaller job) or a completion (more
    free nodes): neither scheduler runs, and the clocks jump to the next event with no bound
    (``quiet`` = inf, window ends irrelevant), across fair-share ticks too, re-ordering or not
    (order decides who starts, not whether one fits), with any ``bf_interval``; a cycle leaves
    nothing behind but its starts (reservations are replanned at each cycle). On KTH-SP2 with
    Slurm's defaults 19,021 of the 80,452 computed cycles were such passes. For the same reason
    a cycle stops after the last waiting job that fits in the free nodes (``_last_fitting``,
    found again after each start): the jobs after it start nothing before an event, and the
    jobs before it do not depend on them, so ``quiet`` and ``window_ok`` over the jobs it
    tested are what the argument above needs. And an arrival need not end a jump: a job that
    asks for more nodes than are free and waits after the last place the last cycle may have
    tested (``stop_at``: its last fitting job; -1 after an idle pass) starts nothing before an
    event and changes no tested job's profile; the main scheduler at its arrival starts nothing
    either (the head was tested and did not start, so it does not fit). So the jump goes on
    (with ``bf_interval > 0``, or when idle: with ``bf_interval=0`` a cycle runs at the arrival,
    at a window end the jump's target was not chosen for). Places in the sorted queue shift when
    the pass's starts are dropped: ``stop_at`` moves with them. Such a job that fits the free
    nodes does not end a jump either if, fitted from its first breakpoint, it fits no earlier
    than the jump's target ``wake`` in the profile the last cycle left (``bound``; nothing
    else writes the profile until the next cycle): at any cycle t2 of the jump, its own profile
    is at most that one, so a start at t2 would fit there at or before t2. Why: if the cycle
    stopped at k0 or k* (``firm`` > now), the profile is P_stable or P*, and the argument for
    ``firm`` covers every job after it. Else the jump is the window rule's (``firm`` <= now adds
    nothing): each cycle of it has the last one's window end, or ``window_ok`` holds; either
    way every tested job keeps its start and its reservation before the window end we1, and a
    later window only adds reservations after we1, where the profile left is ``total``. The
    jobs after ``stop_at`` that the arrival now lets a cycle test only take nodes too. Once
    more with any later arrival. On KTH-SP2 with the defaults (FCFS) this leaves 35,087 of
    39,081 cycles to compute.

    Multifactor (``multifactor``). A fair-share tick is an event while jobs wait (the reference's
    ``dyn.next_tick``): usage is decayed and added, every waiting job's priority recomputed and
    the queue re-sorted. Priorities enter the argument above only through the queue's order (the
    cycle tests jobs in it; the main scheduler starts its prefix), and between ticks the order
    changes only with an arrival, which is an event that ends the jump anyway. So at a tick:

    * if the order changed (``_resort`` moved a job), the state of t1 is gone: the jump ends
      there, as at an arrival or completion; the clocks catch up and the pass at the tick (a
      cycle or full pass when one falls on it) and the next cycle are computed afresh;
    * if the order is the same and nothing else happened at that instant (no arrival or
      completion), the queue, running jobs and free nodes are still those of t1, so the
      argument holds unchanged and the jump goes on (``continue``: the tick's own pass is one of
      the jumped-over ones). Only with ``bf_interval > 0``: then the only cycles between t1 and
      the jump's target are the clock's, all before ``quiet`` and at an allowed window end;
      with ``bf_interval=0`` the reference runs a cycle at the tick itself, at a time and window
      end the jump's target was not chosen for, so there the jump ends too.

    Re-keying deferred while no waiting job fits. During a jump with no bound (``idle``: the
    pass before it found no waiting job fitting the free nodes), the order does not matter: the
    jump goes on at a tick, re-ordering or not, and ends only at a completion or an arrival that
    fits or waits ahead (as before). So a tick there only decays and adds usage (``_ticks``) and
    leaves the re-keying pending (``due``, with the tick's time ``due_at``); at the event that
    ends the jump the waiting jobs are re-keyed as they would have been at that last tick: the
    keys are the same function of that time, the usage and the fair-share generation (neither
    changes between ticks), for the jobs submitted by then (each waited at that tick, since a tick
    is an event while jobs wait); a job that arrived after it keeps its arrival's key, as it
    would have until the next tick. The queue is then sorted by (key, rank), a total order, so it
    is the array the tick-by-tick re-keying and the sorted insertions leave. Earlier ticks of the
    jump need no re-keying of their own: each re-keying recomputes every key from scratch, and
    Fair Tree's factors are recomputed for the current generation when first needed. On KTH-SP2
    with the defaults: 62,632 -> 47,894 re-keyings (multifactor), 61,138 -> 46,416 (Fair Tree).

    WFP3 and UNICEF (``every_pass``) re-key every waiting job before every pass, as the
    reference's ``EveryPass`` does, so the order may change at any cycle: the clocks never jump.
    Every cycle and full pass is visited (an event, as in the reference) and the queue re-sorted;
    one that the jump would have passed over (before ``hold``, the jump's target, with the same
    order and no arrival or completion since the last computed cycle, ``bf_interval > 0``)
    only moves the clocks (``_due``): by the argument above it starts nothing.

    Multifactor's keys change at every tick (age grows), but only a change of order matters:
    on KTH-SP2 with Slurm's and multifactor's defaults 3,142 of the 62,632 re-keyings moved a
    job (73,031 cycles computed, against 80,452 with FCFS). Starts are accounted to fair-share
    in the order the reference's ``started`` list has them (main scheduler, then the cycle,
    each in priority order), completions in (end, job) order, so the usage sums are the same
    floats.
    """
    size = tn.shape[0] // 2
    interval, sched, window, res, _, _, _, depth = _settings(pf_, pi)
    sorted_q = fs  # a dynamic priority: the queue is ``q`` sorted by (key, rank); else the tree over ranks
    order = q if sorted_q else job_of_rank  # the job at each place of the priority order
    w_age, w_fs, max_age, period, decay, fs_t0, fair_tree, two_levels, dyn, charge_ended = _multifactor(mf)
    every_pass = fs and dyn != DYN_MULTIFACTOR  # wfp3/unicef: every waiting job re-keyed before every pass
    multifactor = fs and not every_pass
    n_acct = raw_acct.shape[0]
    skipping = st[ST_SKIP] == 1
    free, R, H, Q, a, done, head, now = _load_queue(st, sf)
    kbf, kfull, t0, next_bf, next_full = _load_clocks(st, sf)
    n_active, stamp, tick_k, due, root, scale, next_tick = _load_fairshare(st, sf, ST_ACTIVE, SF_ROOT)
    wleast = st[ST_LEAST]
    stop_at = st[ST_STOP]
    bound = st[ST_BOUND] == 1
    wake = sf[SF_WAKE]
    hold = sf[SF_HOLD]
    due_at = sf[SF_DUE_AT]
    pend = -1  # Fair Tree: a job whose key is not computed yet (``_pending_key``), arrived at ``pend_at``
    pend_at = 0.0
    n_arr = arrivals.shape[0]
    status = 0
    events = 0
    while a < n_arr or H > 0 or (Q > 0 and wake < np.inf):
        go, now, events = _next_wake(submit, arrivals, a, hk, H, now, wake, events, budget)
        if not go:
            status = 1
            break
        if multifactor:  # fair-share ticks: events while jobs wait (Multifactor.advance)
            if Q > 0 and next_tick < now:
                now = next_tick
            if next_tick <= now:
                if fair_tree:  # (the units about to gain usage: Fair Tree moves only them)
                    if pend >= 0 and a < n_arr and submit[arrivals[a]] <= now:  # (compared with an arrival's below)
                        pend = _pending_key(pend, pend_at, begin, key, submit, a_arr, leaf, acct, sib, snorm, usage,
                                            raw_acct, fval, fstamp, stamp, root, w_age, w_fs, max_age, acct_share,
                                            two_levels, fplan, fstack, ftk, fti, scale)
                    pend = -1  # (else re-keyed from this tick's factors before any other use: see above)
                    _fair_tree_dirty(fti, active, n_active, acct, two_levels)
                n_active, root, scale, tick_k, next_tick, ticks = _ticks(
                    now, next_tick, tick_k, fs_t0, period, decay, scale, root, n_active, active, is_active, acc,
                    runn, usage, raw_acct, acct, n_acct)
                due = True
                due_at = now
                stamp += ticks

        # 1. completions (in (end, job) order: the fair-share accounting's)
        completed = False
        while H > 0 and hk[0] <= now:
            j, H, R = _finish_next(hk, hj, H, re, rj, rn, R, est)
            free += nodes[j]
            done += 1
            completed = True
            if multifactor:
                _account_end(leaf[j], nodes[j], now, next_tick, runn, acc, charge_ended, begin[j], period)

        # 2. arrivals
        arrived = False
        behind = True  # every arrival needs more nodes than are free and waits after ``stop_at``
        while a < n_arr and submit[arrivals[a]] <= now:
            j = arrivals[a]
            a += 1
            if every_pass:
                key[j] = _literature_key(dyn, now, j, submit, a_arr, b_arr)
                _insert_sorted(q, Q, j, key, rank)
            elif sorted_q:
                if pend >= 0:  # (its key is compared with this one's)
                    pend = _pending_key(pend, pend_at, begin, key, submit, a_arr, leaf, acct, sib, snorm, usage,
                                        raw_acct, fval, fstamp, stamp, root, w_age, w_fs, max_age, acct_share,
                                        two_levels, fplan, fstack, ftk, fti, scale)
                if fair_tree and fstamp[leaf[j]] != stamp:  # (all factors at once, once per tick)
                    if Q == 0:  # (its place is the first whatever its key: computed when needed, if ever)
                        pend = j
                        pend_at = now
                    else:
                        _fair_tree_update(usage, raw_acct, acct, sib, snorm, acct_share, two_levels, fplan, fstack,
                                          stamp, fval, fstamp, ftk, fti, scale)
                if pend != j:
                    key[j] = _multifactor_key(now, j, submit, a_arr, leaf, acct, sib, snorm, usage, raw_acct, fval,
                                              fstamp, stamp, root, w_age, w_fs, max_age)
                if _insert_sorted(q, Q, j, key, rank) <= stop_at:
                    behind = False
            else:
                r = rank[j]
                behind = behind and r > stop_at
                _seg_set(tn, None, None, tl, r + size, nodes[j], 0, 0, limit[j])
                if r < head:
                    head = r
            Q += 1
            arrived = True
            if behind and nodes[j] <= free:  # it fits the free nodes: may it start before the jump's end?
                behind = skipping and bound and not completed and _prof_fit(
                    pt, pf, pb, ps, -np.inf, nodes[j], limit[j], np.inf, wake) == np.inf
            if sorted_q:
                wcount[nodes[j]] += 1
                if nodes[j] < wleast:
                    wleast = nodes[j]

        if Q == 0:
            wake = np.inf
            continue

        # 2c. wfp3/unicef: every pass re-keys the queue; a pass the jump below would have
        # passed over (same order, nothing arrived or ended, before ``hold``) only moves the clocks
        if every_pass:
            _rekey_every_pass(dyn, q, Q, key, now, submit, a_arr, b_arr)
            moved = _resort(q, Q, key, rank, tmp)
            if now < hold and not (moved or arrived or completed):
                if interval > 0:
                    _, kbf, next_bf = _due(now, t0, interval, kbf)
                if sched > 0:
                    _, kfull, next_full = _due(now, t0, sched, kfull)
                wake = next_bf if interval > 0 else np.inf
                if sched > 0 and next_full < wake:
                    wake = next_full
                continue
            hold = -np.inf

        # 2c. a tick re-keys the queue (every waiting job's priority recomputed)
        if multifactor and due:
            if skipping and wake == np.inf and stop_at < 0 and not completed and (behind or not arrived):
                continue  # no waiting job fits: the order matters at the jump's end only (re-keyed there)
            due = False
            moved = False
            if fair_tree and Q == 1 and fstamp[leaf[q[0]]] != stamp:  # one job: its key waits until compared
                if due_at == now or submit[q[0]] <= due_at:  # (else its arrival's key, computed or pending)
                    pend = q[0]
                    pend_at = now if due_at == now else due_at
            else:
                if pend >= 0:  # (it arrived after the tick: it keeps its arrival's key)
                    pend = _pending_key(pend, pend_at, begin, key, submit, a_arr, leaf, acct, sib, snorm, usage,
                                        raw_acct, fval, fstamp, stamp, root, w_age, w_fs, max_age, acct_share,
                                        two_levels, fplan, fstack, ftk, fti, scale)
                if fair_tree and fstamp[leaf[q[0]]] != stamp:
                    _fair_tree_update(usage, raw_acct, acct, sib, snorm, acct_share, two_levels, fplan, fstack, stamp,
                                      fval, fstamp, ftk, fti, scale)
                if due_at == now:
                    _rekey_multifactor(q, Q, key, now, submit, a_arr, leaf, acct, sib, snorm, usage, raw_acct, fval,
                                       fstamp, stamp, root, w_age, w_fs, max_age)
                else:  # as at the last tick: the jobs that waited then (the later ones keep their arrival's key)
                    for i in range(Q):
                        j = q[i]
                        if submit[j] <= due_at:
                            key[j] = _multifactor_key(due_at, j, submit, a_arr, leaf, acct, sib, snorm, usage,
                                                      raw_acct, fval, fstamp, stamp, root, w_age, w_fs, max_age)
                moved = _resort(q, Q, key, rank, tmp)
            if skipping and now < wake and not completed and (behind or not arrived) and (wake == np.inf or (
                    interval > 0 and not moved)):
                continue  # same jobs and nodes (and order, or none fits): the jump over idle cycles holds
        elif skipping and arrived and behind and now < wake and not (completed or every_pass) and (
                wake == np.inf or interval > 0):
            continue  # the jobs that arrived start nothing and change no tested job's place: it holds

        if skipping:  # both clocks pass the ticks jumped over, as the reference's visits did
            skipping = False
            if interval > 0:
                kbf = _first_tick(t0, interval, kbf, now)
            if sched > 0:
                kfull = _first_tick(t0, sched, kfull, now)

        # 3. one pass (SlurmBackfill.select)
        t0, bf_due, full, kbf, kfull, next_bf, next_full = _pass_clocks(now, t0, interval, sched, kbf, kfull,
                                                                        next_bf, next_full)
        qn = Q  # places in the sorted queue (its started jobs are dropped after the pass)
        none_left = qn if sorted_q else size
        least, wleast = _least_waiting(sorted_q, tn, wcount, wleast)
        idle = least > free  # no waiting job fits in the free nodes: no pass starts one before an event
        if (arrived or completed or full) and not idle:  # the main scheduler: the prefix that fits starts
            limit_jobs = BIG if full else depth
            looked = 0
            h = head
            while h >= 0 and looked <= limit_jobs:  # job_depth++ > def_job_limit
                looked += 1
                j = order[h]
                nj = nodes[j]
                if nj > free:
                    break  # the partition failed
                R, H = _launch(j, now, now + limit[j], begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)
                if multifactor:
                    n_active = _account_start(leaf[j], nj, now, next_tick, runn, acc, active, is_active, n_active)
                free -= nj
                if not sorted_q:
                    _seg_clear(tn, None, None, tl, h + size)
                Q -= 1
                h = _next_waiting(sorted_q, tn, tl, size, qn, h + 1)
            head = h if h >= 0 else none_left
        quiet = np.inf if idle else now
        window_ok = idle
        firm = quiet
        stop_at = -1
        bound = False
        if bf_due and Q > 0 and not idle:
            st[ST_CYCLE] += 1
            waiting = Q
            free, R, H, Q, quiet, window_ok, firm, n_active, stop_at = _cycle(
                now, free, total, limit, nodes, users, pf_, pi, begin, end, est, dur, order, tn, tl,
                re, rj, rn, R, hk, hj, H, Q, pt, pf, pb, ps, ucount, ustamp, st[ST_CYCLE],
                sorted_q, head, qn, multifactor, leaf, runn, acc, active, is_active, n_active, next_tick)
            if Q != waiting:
                quiet = firm = now  # it started jobs: the next cycle has another state
            else:
                bound = True  # (the profile it leaves bounds an arrival's during the jump)
            if not sorted_q:
                h = _first_waiting(tn, tl, size, head)
                head = h if h >= 0 else size
        if sorted_q and Q != qn:
            shift = 0
            for i in range(qn):
                if begin[q[i]] == begin[q[i]]:  # started in this pass
                    wcount[nodes[q[i]]] -= 1
                    if i <= stop_at:
                        shift += 1
            stop_at -= shift  # (a place in the queue without them)
            _compact(q, qn, begin)
            head = 0
        wake = np.inf
        if Q > 0:
            if interval > 0:
                wake = next_bf
            if sched > 0 and next_full < wake:
                wake = next_full
            step = interval if interval > 0 else sched  # the clock of the passes that run a cycle
            if quiet == np.inf and (every_pass or step > 0):  # none fits: jump to the next event
                if every_pass:
                    hold = np.inf
                else:
                    wake = np.inf
                    skipping = True
            elif quiet > now and step > 0:  # jump to the first cycle that may start a job
                k = kbf if interval > 0 else kfull
                last = _first_tick(t0, step, k, quiet)
                if not window_ok:  # ... or has a later window end, or reaches ``firm``
                    k0 = k
                    we = _window_end(now, window, res)
                    while k < last:
                        mid = (k + last) >> 1
                        if _window_end(t0 + mid * step, window, res) > we:
                            last = mid
                        else:
                            k = mid + 1
                    if firm > now:
                        k = _first_tick(t0, step, k0, firm)
                        if k > last:
                            last = k
                t = t0 + last * step
                if every_pass:  # the order may change at any pass: visit each, computing none before t
                    if interval > 0:
                        hold = t
                elif t > wake:
                    wake = t
                    skipping = True
    if pend >= 0:
        _pending_key(pend, pend_at, begin, key, submit, a_arr, leaf, acct, sib, snorm, usage, raw_acct, fval, fstamp,
                     stamp, root, w_age, w_fs, max_age, acct_share, two_levels, fplan, fstack, ftk, fti, scale)
    _store_queue(st, sf, free, R, H, Q, a, done, head, now)
    _store_clocks(st, sf, kbf, kfull, t0, next_bf, next_full)
    _store_fairshare(st, sf, ST_ACTIVE, SF_ROOT, n_active, stamp, tick_k, due, root, scale, next_tick)
    st[ST_SKIP] = 1 if skipping else 0
    st[ST_LEAST] = wleast
    st[ST_STOP] = stop_at
    st[ST_BOUND] = 1 if bound else 0
    sf[SF_WAKE] = wake
    sf[SF_HOLD] = hold
    sf[SF_DUE_AT] = due_at
    return status
