"""The compiled shared-node kernel: ``sim.shared``'s policies, bit for bit.

Imported only through ``sim.shared`` once numba is loaded (``kernel.load``). State per node:
free cores, GPUs and KiB of memory (int64 arrays); placement is first fit by node index.

* none / easy / easy_drevt (:func:`shared_queue_steps`, one loop for static and dynamic
  priorities). With a static priority the waiting queue is a segment tree over the ranks
  holding, per subtree, the minimum cores, GPUs, memory and time limit of the waiting jobs: a
  backfill candidate must ask for no more than the largest free amount on any node (and, for
  ``easy_drevt``, end before the shadow time), so whole ranges of jobs that cannot start are
  skipped; leaves are checked exactly by first fit. With a dynamic one (multifactor, classic or
  Fair Tree; wfp3; unicef) it is ``_extended``'s array sorted by (key, FCFS rank), re-keyed at
  multifactor's ticks (every pass for wfp3/unicef) with its fair-share steps, each job charged
  the CPUs it holds, and scanned linearly with the same tests (``_scan``: the order moves).
* Running jobs are kept sorted by (estimated end, job), completions in a binary heap (the
  helpers of ``_kernels``). EASY's shadow time releases running jobs in that order, group by
  group of equal times, onto a copy of the free resources, keeping a count of the nodes that
  can hold the head's per-node request; the extra-resources test takes a candidate's request
  from that copy and checks the count (and gives it back if the head no longer fits).

* ``conservative`` (:func:`shared_conservative_profile_steps`) keeps the plan between passes
  as per-node profiles of free cores, GPUs and memory, logs where free resources grew (early
  ends, vacated reservations) and places a waiting job again only when such a growth could
  move it; the argument that this is the reference's schedule is in the comment above
  ``_seg``. With limits not enforced every pass replans, a job running past its limit holds
  its nodes until just after now, and a reservation left in the past is placed anew: the
  same driver, the adjustments before a pass written in its docstring.

Integer resources and the reference's order of float operations (``now + limit``,
``now + dur``, ``nextafter``) make the schedules identical; ``tests/test_shared.py`` compares
them on random workloads.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._extended import (DYN_MULTIFACTOR, DYN_NONE, SF_ROOT, ST_ACTIVE, _account_end, _account_start, _advance,
                        _arrive, _compact, _load_fairshare, _rekey, _store_fairshare)
from ._kernels import (BIG, EV_NEXT, MODE_EASY, MODE_EASY_DREVT, MODE_NONE, _arrival, _before_shadow, _descend,
                       _enqueue_arrivals, _finish_next, _heap_pop, _heap_push, _launch, _load_counts, _load_queue,
                       _seg_clear, _seg_set, _slice_event, _store_counts, _store_queue)

MODES = {"none": 0, "easy": 1, "easy_drevt": 2}


@njit(cache=True, _nrt=False)
def _next(tc, size, p, maxc, maxg, maxm, tg, tm, tl, now, latest):
    """Smallest rank >= p whose waiting job asks for at most the largest free amounts and has
    ``now + limit < latest`` (+inf: no time bound; empty leaves never pass), or -1: the pool's
    ``_descend`` with the time test of a strict EASY rule whose shadow time is ``latest``."""
    return _descend(tc, tg, tm, tl, size, p, maxc, maxg, maxm, True, now, latest, 0, True, False)


@njit(cache=True, _nrt=False)
def _first_fit(fc, fg, fm, k, c, g, m, pick):
    """The k lowest-indexed nodes holding (c, g, m) into pick[:k]; whether they exist."""
    got = 0
    for i in range(fc.shape[0]):
        if fc[i] >= c and fg[i] >= g and fm[i] >= m:
            pick[got] = i
            got += 1
            if got == k:
                return True
    return False


@njit(cache=True, _nrt=False)
def _shift(Fc, Fg, Fm, i, c, g, m, sign, ch, gh, mh):
    """Add sign x (c, g, m) to node i; returns how the number of nodes that hold the head's
    request (ch, gh, mh) changes (-1, 0 or +1)."""
    was = Fc[i] >= ch and Fg[i] >= gh and Fm[i] >= mh
    Fc[i] += sign * c
    Fg[i] += sign * g
    Fm[i] += sign * m
    now = Fc[i] >= ch and Fg[i] >= gh and Fm[i] >= mh
    return int(now) - int(was)


@njit(cache=True, _nrt=False)
def _maxima(fc, fg, fm):
    a = fc[0]
    b = fg[0]
    d = fm[0]
    for i in range(1, fc.shape[0]):
        if fc[i] > a:
            a = fc[i]
        if fg[i] > b:
            b = fg[i]
        if fm[i] > d:
            d = fm[i]
    return a, b, d


# the same, inlined by numba: the form the queue driver uses with a dynamic priority (called
# there, shared multifactor EASY ran 15 % slower; inlined with a static one, 13 % slower: LLVM's
# choices in the two compiled loops differ)
_maxima_inlined = njit(cache=True, _nrt=False, inline="always")(_maxima.py_func)


@njit(cache=True, _nrt=False)
def _shadow_on_nodes(now, kh, ch, gh, mh, fc, fg, fm, Fc, Fg, Fm, re, rj, R, node_start, node_list, cores, gpus,
                     mem):
    """``sim.shared._shadow``: the shadow time of a head asking for ``kh`` nodes of (ch, gh, mh)
    (inf if it never fits) and the count of nodes that hold its request then. The running jobs
    ``re``/``rj[:R]`` (by estimated end; an overdue one right after ``now``) are released group
    by group of equal times onto ``Fc``/``Fg``/``Fm``, a copy of the free resources, which are
    left as they are at the shadow time (for EASY's extra-resources rule, ``_easy_admits``)."""
    fits = 0
    for i in range(fc.shape[0]):
        Fc[i] = fc[i]
        Fg[i] = fg[i]
        Fm[i] = fm[i]
        if Fc[i] >= ch and Fg[i] >= gh and Fm[i] >= mh:
            fits += 1
    soon = np.nextafter(now, np.inf)
    r = 0
    while r < R:
        e = re[r]
        t = e if e > now else soon
        while r < R:
            e = re[r]
            if (e if e > now else soon) != t:
                break
            j = rj[r]
            for x in range(node_start[j], node_start[j + 1]):
                fits += _shift(Fc, Fg, Fm, node_list[x], cores[j], gpus[j], mem[j], 1, ch, gh, mh)
            r += 1
        if fits >= kh:
            return t, fits
    return np.inf, fits


@njit(cache=True, _nrt=False, inline="always")
def _easy_admits(j, now, shadow, strict, use_extra, fits, kh, ch, gh, mh, pick, Fc, Fg, Fm, limit, nodes, cores, gpus,
                 mem):
    """EASY's backfill rule on shared nodes (``sim.shared._run_events``) for job ``j``, first-fitted
    on ``pick[:nodes[j]]``, while the head (``kh`` nodes of (ch, gh, mh)) waits for ``shadow``: it
    ends before the shadow time (or at it unless ``strict``), or (``use_extra``: easy) the head
    still fits on ``Fc``/``Fg``/``Fm`` (the nodes at the shadow time, ``fits`` of them holding its
    request) with ``j``'s request taken from the nodes it takes now, which it then keeps. Returns
    (admitted, fits). Inlined: called, shared EASY with a dynamic priority ran 6-9 % slower; the
    drivers read the head's request once per pass (read here: wfp3 +3.0-3.6 % against +1.5 %, A/B in
    ``benchmarks/RESULTS.md``, "Eighteenth session, helper kdedup")."""
    if _before_shadow(now + limit[j], shadow, strict):
        return True, fits
    if not use_extra:
        return False, fits
    for x in range(nodes[j]):
        fits += _shift(Fc, Fg, Fm, pick[x], cores[j], gpus[j], mem[j], -1, ch, gh, mh)
    if fits >= kh:
        return True, fits
    for x in range(nodes[j]):  # the head would no longer fit: give it back
        fits += _shift(Fc, Fg, Fm, pick[x], cores[j], gpus[j], mem[j], 1, ch, gh, mh)
    return False, fits


# The queue driver's state between slices: ``_kernels``' counts (``st``: running, heap, waiting,
# next arrival, jobs done; the free-node count is unused here), ``ST_HEAD`` (the smallest waiting
# rank: static priorities) and multifactor's scalars (``_extended.ST_ACTIVE``, ``SF_ROOT`` on: a
# dynamic one); ``sf[SF_NOW]`` the simulated time. Everything else lives in the caller's arrays.
@njit(cache=True, _nrt=False)
def shared_queue_steps(submit, limit, nodes, dur, arrivals, rank, cores, gpus, mem, mode,
                       begin, end, est, node_start, node_list, job_of_rank, tc, tg, tm, tl,
                       fc, fg, fm, Fc, Fg, Fm, pick, re, rj, rn, hk, hj,
                       charge, dyn, a_arr, b_arr, leaf, acct, sib, snorm, n_acct, w_age, w_fs, max_age, period, decay,
                       t0, charge_ended, key, q, tmp, usage, acc, runn, raw_acct, fval, fstamp, active, is_active,
                       fair_tree, two_levels, acct_share, ftk, fti, fplan, fstack, st, sf, budget):
    """none / easy / easy_drevt on shared nodes from state ``st``/``sf``, for at most ``budget``
    events. Status: 0 done, 1 budget used (call again), -3 the head job never fits.

    One loop for static and dynamic priorities, which differ only in how the queue is kept and
    scanned and in fair-share's accounting. Static: ``job_of_rank`` and the trees of cores,
    GPUs, memory and limits over the ranks (``_next``); the arguments from ``charge`` to
    ``fstack`` are None. Dynamic (``dyn``, ``_extended.DYN_*``): ``_extended``'s queue ``q``
    sorted by (key, FCFS rank), keys, ticks and accounting (each job charged ``charge[j]``, the
    CPUs it holds), scanned linearly (``_scan``: the order moves); the tree is one-element
    arrays, unused. numba compiles the two apart: with ``dyn`` None it drops the dynamic
    branches before typing; with an integer ``dyn is None`` is a constant False that LLVM
    drops (numba prunes a branch before typing only when the argument tested is None, so every
    test here is on ``dyn``). Measured, static EASY (``benchmarks/RESULTS.md``, "Twenty-fourth
    session, helper kdup24"): the tree's arrays placed after ``hj`` instead of before ``fc`` (or
    passed in a tuple there), the same body ran 10 % slower; the backfill loop stepping ``c``
    before its tests instead of after, 10 % too: LLVM's register choices in the hot loop."""
    strict = mode == MODE_EASY_DREVT
    use_extra = mode == MODE_EASY
    _, R, H, Q, a, done, head, now = _load_queue(st, sf)
    size = tc.shape[0] // 2
    if dyn is not None:
        fairshare = dyn == DYN_MULTIFACTOR
        ft = (acct_share, two_levels, fplan, fstack, ftk, fti)  # Fair Tree's arrays (_arrive, _rekey)
        n_active, stamp, tick_k, due, root, scale, next_tick = _load_fairshare(st, sf, ST_ACTIVE, SF_ROOT)
        n_arr = arrivals.shape[0]
    while True:
        status, now, budget = _slice_event(submit, arrivals, a, hk, H, now, budget)
        if status != EV_NEXT:
            break
        if dyn is not None and fairshare:  # Multifactor.advance
            now, n_active, root, scale, tick_k, next_tick, stamp, due = _advance(
                now, Q, next_tick, tick_k, t0, period, decay, scale, root, n_active, active, is_active, acc, runn,
                usage, raw_acct, acct, n_acct, fair_tree, fti, two_levels, stamp, due)

        # 1. completions, in (end, job) order
        while H > 0 and hk[0] <= now:
            j, H, R = _finish_next(hk, hj, H, re, rj, rn, R, est)
            _give_back(j, fc, fg, fm, node_start, node_list, cores, gpus, mem)
            done += 1
            if dyn is not None and fairshare:
                _account_end(leaf[j], charge[j], now, next_tick, runn, acc, charge_ended, begin[j], period)

        # 2. arrivals: a leaf of the tree each, or keyed now into the sorted queue
        if dyn is None:
            while True:
                j, a, Q, head = _arrival(submit, arrivals, a, now, rank, Q, head)
                if j < 0:
                    break
                _seg_set(tc, tg, tm, tl, rank[j] + size, cores[j], gpus[j], mem[j], limit[j])
        else:
            while a < n_arr and submit[arrivals[a]] <= now:
                j = arrivals[a]
                a += 1
                Q = _arrive(j, dyn, q, Q, key, rank, now, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage,
                            raw_acct, fval, fstamp, stamp, root, w_age, w_fs, max_age, fair_tree, ft, scale)
        if Q == 0:
            continue
        if dyn is not None and dyn != DYN_NONE and (dyn != DYN_MULTIFACTOR or due):  # the order moves
            due = False
            _rekey(dyn, q, Q, key, rank, tmp, now, submit, a_arr, b_arr, leaf, acct, sib, snorm, usage, raw_acct,
                   fval, fstamp, stamp, root, w_age, w_fs, max_age, fair_tree, ft, scale)

        # 3. start jobs in priority order while they fit; p: a rank (static) or a place in q,
        # -1 past the last (q keeps its started jobs until the end of the pass: R > R0 then)
        p = head if dyn is None else 0
        R0 = R
        while p >= 0:
            j = job_of_rank[p] if dyn is None else q[p]
            if not _first_fit(fc, fg, fm, nodes[j], cores[j], gpus[j], mem[j], pick):
                break
            R, H = _start_now(j, now, pick, nodes, cores, gpus, mem, fc, fg, fm, node_start, node_list, limit, dur,
                              begin, end, est, re, rj, rn, R, hk, hj, H)
            if dyn is None:
                Q -= 1
                _seg_clear(tc, tg, tm, tl, p + size)
                p = _next(tc, size, p + 1, BIG, BIG, BIG, tg, tm, tl, now, np.inf)
            else:
                if fairshare:
                    n_active = _account_start(leaf[j], charge[j], now, next_tick, runn, acc, active, is_active,
                                              n_active)
                p = p + 1 if p + 1 < Q else -1
        if dyn is None:
            head = p if p >= 0 else size
        if p >= 0 and mode != MODE_NONE:
            # 4. is there a later job that could start now (no larger than a node's free resources)?
            maxc, maxg, maxm = _maxima(fc, fg, fm) if dyn is None else _maxima_inlined(fc, fg, fm)
            if dyn is None:
                c = _next(tc, size, p + 1, maxc, maxg, maxm, tg, tm, tl, now, np.inf)
            else:
                c = _scan(q, Q, p + 1, maxc, maxg, maxm, now, np.inf, strict, limit, cores, gpus, mem)
            if c >= 0:
                # 5. then the head's shadow time and the free resources then
                h = job_of_rank[p] if dyn is None else q[p]
                kh, ch, gh, mh = nodes[h], cores[h], gpus[h], mem[h]
                shadow, fits = _shadow_on_nodes(now, kh, ch, gh, mh, fc, fg, fm, Fc, Fg, Fm, re, rj, R, node_start,
                                                node_list, cores, gpus, mem)
                if shadow == np.inf:
                    status = -3
                    break
                # 6. backfill later jobs (easy_drevt: only those ending before the shadow time)
                while True:
                    if dyn is None:
                        c = _next(tc, size, c, maxc, maxg, maxm, tg, tm, tl, now, shadow if strict else np.inf)
                    else:
                        c = _scan(q, Q, c, maxc, maxg, maxm, now, shadow, strict, limit, cores, gpus, mem)
                    if c < 0:
                        break
                    j = job_of_rank[c] if dyn is None else q[c]
                    if not _first_fit(fc, fg, fm, nodes[j], cores[j], gpus[j], mem[j], pick):
                        c += 1
                        continue
                    admitted, fits = _easy_admits(j, now, shadow, strict, use_extra, fits, kh, ch, gh, mh, pick, Fc,
                                                  Fg, Fm, limit, nodes, cores, gpus, mem)
                    if not admitted:
                        c += 1
                        continue
                    R, H = _start_now(j, now, pick, nodes, cores, gpus, mem, fc, fg, fm, node_start, node_list, limit,
                                      dur, begin, end, est, re, rj, rn, R, hk, hj, H)
                    if dyn is None:
                        Q -= 1
                        _seg_clear(tc, tg, tm, tl, c + size)
                    elif fairshare:
                        n_active = _account_start(leaf[j], charge[j], now, next_tick, runn, acc, active, is_active,
                                                  n_active)
                    maxc, maxg, maxm = _maxima(fc, fg, fm) if dyn is None else _maxima_inlined(fc, fg, fm)
                    c += 1
        if dyn is not None and R > R0:
            Q = _compact(q, Q, begin)
    _store_queue(st, sf, 0, R, H, Q, a, done, head, now)
    if dyn is not None:
        _store_fairshare(st, sf, ST_ACTIVE, SF_ROOT, n_active, stamp, tick_k, due, root, scale, next_tick)
    return status


DYNAMIC_ARGS = 34  # shared_queue_steps' arguments from charge to fstack (None with a static priority)


@njit(cache=True, _nrt=False, inline="always")
def _scan(q, Q, i, maxc, maxg, maxm, now, latest, strict, limit, cores, gpus, mem):
    """``_next`` over the sorted queue ``q[:Q]`` of a dynamic priority: the first place >= i whose
    job asks for at most the largest free amounts and, if ``strict``, has ``now + limit <
    latest``, or -1."""
    while i < Q:
        j = q[i]
        if cores[j] <= maxc and gpus[j] <= maxg and mem[j] <= maxm and not (strict and not now + limit[j] < latest):
            return i
        i += 1
    return -1



@njit(cache=True, _nrt=False, inline="always")
def _start_now(j, now, pick, nodes, cores, gpus, mem, fc, fg, fm, node_start, node_list, limit, dur, begin, end, est,
               re, rj, rn, R, hk, hj, H):
    """Job j starts now on the nodes ``pick[:nodes[j]]`` (``_take``), planned to end at its
    limit (``_launch``); (running, heap)."""
    _take(j, pick, nodes, cores, gpus, mem, fc, fg, fm, node_start, node_list)
    return _launch(j, now, now + limit[j], begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)


@njit(cache=True, _nrt=False)
def _give_back(j, fc, fg, fm, node_start, node_list, cores, gpus, mem):
    """A finished job's cores, GPUs and memory back to its nodes."""
    for x in range(node_start[j], node_start[j + 1]):
        i = node_list[x]
        fc[i] += cores[j]
        fg[i] += gpus[j]
        fm[i] += mem[j]


@njit(cache=True, _nrt=False)
def _take(j, pick, nodes, cores, gpus, mem, fc, fg, fm, node_start, node_list):
    """Job j's cores, GPUs and memory taken from the nodes pick[:nodes[j]], which become its node list."""
    s = node_start[j]
    for x in range(nodes[j]):
        i = pick[x]
        node_list[s + x] = i
        fc[i] -= cores[j]
        fg[i] -= gpus[j]
        fm[i] -= mem[j]


@njit(cache=True, _nrt=False)
def _begin(j, now, node_start, node_list, cores, gpus, mem, dur, limit, fc, fg, fm, begin, end, est):
    """Job j starts now on its reserved nodes; False if one of them lacks room (over-commit)."""
    for y in range(node_start[j], node_start[j + 1]):
        i = node_list[y]
        if fc[i] < cores[j] or fg[i] < gpus[j] or fm[i] < mem[j]:
            return False
        fc[i] -= cores[j]
        fg[i] -= gpus[j]
        fm[i] -= mem[j]
    begin[j] = now
    end[j] = now + dur[j]
    est[j] = now + limit[j]
    return True


@njit(cache=True, _nrt=False)
def _start_due(q, Q, res, now, n_res, node_start, node_list, cores, gpus, mem, dur, limit, fc, fg, fm, begin, end,
               est, hk, hj, H, xk, xj, XH):
    """The conservative driver's last step of a pass (``_Conservative.select``): every waiting
    job whose reservation is now starts on its nodes, in priority order, and leaves ``q[:Q]``
    (the others keep their order); one that will run past its limit (limits not enforced)
    joins the heap ``xk``/``xj`` by estimated end too. Returns (waiting, reservations,
    completion heap, that heap); waiting -1 if a node lacks room for one (over-commit)."""
    w = 0
    for x in range(Q):
        j = q[x]
        if res[j] == now:
            if not _begin(j, now, node_start, node_list, cores, gpus, mem, dur, limit, fc, fg, fm, begin, end, est):
                return -1, n_res, H, XH
            H = _heap_push(hk, hj, H, end[j], j)
            if end[j] > est[j]:
                XH = _heap_push(xk, xj, XH, est[j], j)
            res[j] = np.nan
            n_res -= 1
        else:
            q[w] = j
            w += 1
    return w, n_res, H, XH


def run_shared(submit, limit, nodes, dur, rank, request, machine, backfill, enforce_limits=True, progress=None,
               dynamic=None):
    """Begin, end, node_start, node_list as ``sim.shared._run_events``; ``machine`` is the
    partition's (node count, cores, GPUs, KiB of memory) per node (``sim.shared.node_resources``);
    ``dynamic``: a dynamic priority (the reference's policy object; none / easy / easy_drevt).

    The queue policies run in slices of ``kernel.STEP_BUDGET`` events (``kernel._run_slices``):
    ``progress(now, jobs_done)`` is called between them (if given), and a ``KeyboardInterrupt``
    stops the run there. Conservative runs in one call (no progress)."""
    cores, gpus, mem = (np.ascontiguousarray(r, dtype=np.int64) for r in request)
    n = int(submit.shape[0])
    if n == 0:
        return np.empty(0), np.empty(0), np.zeros(1, np.int64), np.empty(0, np.int64)
    submit = np.ascontiguousarray(submit, dtype=np.float64)
    order = np.argsort(submit, kind="stable")
    n_nodes, cap_c, cap_g, cap_m = machine
    args = (submit, np.ascontiguousarray(limit, dtype=np.float64), np.ascontiguousarray(nodes, dtype=np.int64),
            np.ascontiguousarray(dur, dtype=np.float64), np.ascontiguousarray(order, dtype=np.int64),
            np.ascontiguousarray(rank, dtype=np.int64), cores, gpus, mem)
    if backfill != "conservative":
        return _run_queue(args, machine, MODES[backfill], progress, dynamic)
    return _run_conservative_profile(args, machine, bool(enforce_limits), progress)


def _node_lists(nodes):
    """Where each job's nodes go in the flat node list (``node_start``, len n + 1), and that
    list (-1 until the job starts)."""
    node_start = np.zeros(nodes.shape[0] + 1, np.int64)
    np.cumsum(nodes, out=node_start[1:])
    return node_start, np.full(int(node_start[-1]), -1, np.int64)


_CONSERVATIVE_ERRORS = {-1: "conservative plan did not converge (shared-node kernel)",
                        -2: "conservative over-committed a node (shared-node kernel)",
                        -3: "the head job never fits its partition (shared-node kernel)",
                        -4: "conservative kept a reservation in the past (shared-node kernel)"}


def _run_conservative_profile(args, machine, enforce, progress, counters=None):
    """conservative (``enforce``: limits enforced): the arrays of
    ``shared_conservative_profile_steps`` allocated here, the driver called in slices; the
    profiles and the growth log are made longer whenever it asks (status ``GROW``) and it goes
    on. ``counters`` (a dict), if given, gets the number of those stops added to it."""
    submit, limit, nodes = args[:3]
    n = int(submit.shape[0])
    n_nodes, cap_c, cap_g, cap_m = (int(x) for x in machine)
    node_start, node_list = _node_lists(nodes)
    per_job = (np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan),  # begin, end, estimated end
               np.full(n, np.nan), np.zeros(n, np.int64))  # reserved start; growths known to its place
    free = (np.full(n_nodes, cap_c, np.int64), np.full(n_nodes, cap_g, np.int64), np.full(n_nodes, cap_m, np.int64))
    scratch = (np.empty(n_nodes, np.int64), np.empty(n_nodes, np.int64), np.empty(n_nodes),  # pick, old nodes, E,
               np.empty(n_nodes),  # _earliest_all's k smallest starts
               np.full(n_nodes, -1, np.int64), np.empty(n_nodes, np.int64), np.empty(n_nodes))  # mark, seen, reach
    failed = (np.full(n_nodes, -1, np.int64), *(np.zeros(n_nodes, np.int64) for _ in range(4)),  # pass, version, c, g, m
              np.zeros(n_nodes), np.zeros(n_nodes))  # limit, horizon: a request that found no start on node i
    nq = 0  # sizes 2**q of core runs tracked (the cores of a node)
    while nq < 62 and (1 << nq) <= cap_c:
        nq += 1
    growth = (np.zeros(n_nodes, np.int64), np.zeros(n, np.int64),  # growths per node; summed over j's nodes
              np.full(3, -1, np.int64), np.full(max(nq, 1), -1.0),  # largest free since the last quiet round
              np.full((n_nodes, 64), -1, np.int64), np.zeros((n_nodes, 64), np.int64),  # longest-run cache
              np.zeros((n_nodes, 64)), np.zeros((n_nodes, 64)), np.zeros(n_nodes, np.int64),  # ..., node versions
              np.full((64, n_nodes), -1, np.int64), np.zeros((64, n_nodes)),  # first times with 2**q free
              np.zeros((64, n_nodes), np.int64))  # cores (``_earliest_kept``): version, time, segment
    queues = (np.empty(n + 1), np.empty(n + 1, np.int64), np.empty(max(n, 1), np.int64))  # completion heap, waiting
    m = 1 if enforce else n + 1  # (with limits enforced no job runs past its limit)
    overruns = (np.empty(m), np.empty(m, np.int64), np.empty(m, np.int64))  # heap (estimated end, job) of the
    # started jobs that will run past their limits; those that do now
    w, length = PROFILE_WIDTH, LOG_LENGTH
    profile = [np.full((n_nodes, w), -np.inf), np.full((n_nodes, w), cap_c, np.int64),  # widened as the driver asks
               np.full((n_nodes, w), cap_g, np.int64), np.full((n_nodes, w), cap_m, np.int64)]
    log = [np.empty(length, np.int64), np.empty(length), np.empty(length),
           *(np.empty(length, np.int64) for _ in range(5))]
    breaks = np.ones(n_nodes, np.int64)  # breakpoints per node's profile
    fixed = (*args, bool(enforce), *per_job, node_start, node_list, *free, *scratch, *failed, *growth, *queues,
             *overruns, breaks)

    def longer(grown, st):
        """The profiles and the log as long as ``st`` says the stopped step needs."""
        return _longer(grown[:4], int(st[CP_NEED_W])) + _longer(grown[4:], int(st[CP_NEED_L]))

    st = _drive(_widening(shared_conservative_profile_steps, fixed, profile + log, longer), (), progress,
                _CONSERVATIVE_ERRORS, size=CP_SIZE, preset={CP_EVERY: int(STOP_EVERYWHERE)})
    if counters is not None:
        for slot, name in enumerate(("widened_at_completion", "widened_in_round", "widened_before_pass")):
            counters[name] = counters.get(name, 0) + int(st[CP_WIDENED + slot])
    return per_job[0], per_job[1], node_start, node_list


def _run_queue(args, machine, mode, progress, dynamic=None):
    """none / easy / easy_drevt: every array of ``shared_queue_steps`` allocated here (with a
    dynamic priority, ``dynamic`` the reference's policy object, its state as
    ``kernel.run_extended`` allocates it), the driver called in slices."""
    from . import _dynamic_state, _extended as ext, _first_tick, _running_arrays

    submit, limit, nodes, dur, arrivals, rank = args[:6]
    n = int(submit.shape[0])
    n_nodes, cap_c, cap_g, cap_m = (int(x) for x in machine)
    begin = np.full(n, np.nan)
    end = np.full(n, np.nan)
    est = np.full(n, np.nan)  # estimated end of each started job
    node_start, node_list = _node_lists(nodes)
    free = (np.full(n_nodes, cap_c, np.int64), np.full(n_nodes, cap_g, np.int64), np.full(n_nodes, cap_m, np.int64))
    at_shadow = tuple(np.empty(n_nodes, np.int64) for _ in range(3))  # free resources at the shadow time
    running = _running_arrays(n + 1)  # (a job may ask for no cores: no bound below n)
    def tree(leaves):  # per subtree: fewest cores, GPUs, KiB, shortest limit waiting
        return (*(np.full(2 * leaves, BIG, np.int64) for _ in range(3)), np.full(2 * leaves, np.inf))

    if dynamic is None:
        job_of_rank = np.empty(n, np.int64)
        job_of_rank[rank] = np.arange(n)
        head = size = 1 << max(n - 1, 0).bit_length()  # segment tree leaves (>= n, a power of two)
        seg, dp, start = (job_of_rank, *tree(size)), (None,) * DYNAMIC_ARGS, None
    else:
        # what fair-share charges a running job per second (multifactor; wfp3/unicef charge nothing)
        charge = np.ascontiguousarray(getattr(dynamic, "charge", nodes), dtype=np.int64)
        kind, dyn_args, fairshare, fair_tree_state = _dynamic_state(dynamic, n)
        head, seg = 0, (np.zeros(1, np.int64), *tree(1))  # (unused)
        dp = (charge, *dyn_args, rank.astype(np.float64),  # sort keys
              np.empty(n, np.int64), np.empty(n, np.int64),  # the queue, a sort buffer
              *fairshare, *fair_tree_state)

        def start(st, sf):  # multifactor's scalars at the driver's slots, its first tick
            ext.start_fairshare(st, sf, ext.ST_ACTIVE, ext.SF_ROOT, _first_tick(kind, dyn_args))
    state = (*args, np.int64(mode), begin, end, est, node_start, node_list, *seg, *free, *at_shadow,
             np.empty(n_nodes, np.int64), *running, *dp)
    _drive(shared_queue_steps, state, progress, {-3: "the head job never fits its partition (shared-node kernel)"},
           head=head, start=start)
    return begin, end, node_start, node_list


def _drive(step, state, progress, errors, head=0, size=0, preset=None, start=None):
    """``step(*state, st, sf, budget)`` from the initial state in slices (``kernel._run_slices``:
    ``progress`` and Ctrl-C between them, a failure status raised with its message in
    ``errors``); ``head``: the queue driver's ``st[ST_HEAD]`` (the conservative drivers' slot
    there starts at 0 too); ``size``: slots of ``st`` the driver needs, ``preset`` (slot:
    value) its settings; ``start(st, sf)``, if given, sets more. Returns ``st``."""
    from . import _kernels as kernels, _run_slices

    st = np.zeros(max(kernels.ST_SIZE, size), np.int64)
    sf = np.zeros(kernels.SF_SIZE)
    st[kernels.ST_HEAD] = head
    for slot, value in (preset or {}).items():
        st[slot] = value
    if start is not None:
        start(st, sf)
    _run_slices(kernels, step, state, st, sf, progress, errors,
                "shared-node kernel stalled with {left} job(s) waiting")
    return st


PROFILE_WIDTH = 32  # breakpoints per node the conservative profiles start with (made longer as needed)
LOG_LENGTH = 256  # entries the growth log starts with (the same)
STOP_EVERYWHERE = False  # tests: the drivers that stop for longer arrays stop wherever they may
GROW = 3  # a driver's status: it stopped before a step its arrays may be too short for


def _widening(driver, fixed, grown, longer):
    """A driver without numba's runtime as a step of :func:`_drive`: called with the ``fixed``
    arrays, then the arrays it may outgrow (the list ``grown``), then the state; whenever it
    returns ``GROW`` (it stopped before a step they might not hold, its place saved in ``st``)
    ``longer(grown, st)`` replaces them and it goes on. (Numba's runtime in the drivers cost
    ~25-45 % of their time in reference counting: ``docs/kernel.md``.)"""
    def step(st, sf, budget):
        while True:
            status = driver(*fixed, *grown, st, sf, budget)
            if status != GROW:
                return status
            grown[:] = longer(grown, st)

    return step


def _longer(arrays, need):
    """Copies of ``arrays`` with at least ``need`` entries along their last axis (a node's
    row of a profile, the growth log), the size doubled, contents kept; or the
    arrays themselves if they have them."""
    size = arrays[0].shape[-1]
    if size >= need:
        return list(arrays)
    while size < need:
        size *= 2
    out = []
    for old in arrays:
        new = np.empty(old.shape[:-1] + (size,), old.dtype)
        new[..., :old.shape[-1]] = old
        out.append(new)
    return out


# --- conservative: a persistent plan on per-node free profiles ---------------------------------
# Node i's free (cores, GPUs, KiB) is a step function: on [PT[i, b], PT[i, b + 1]) it is
# (PC, PG, PM)[i, b] for b < PB[i] (the last segment runs to +inf; PT[i, 0] = -inf). Every
# running job holds its nodes until its estimated end (one past it, limits not enforced, until
# nextafter(now) at a pass), every reserved job from its start to start + limit; adjacent
# segments with equal free amounts are merged, so the profile is the canonical form of the
# usage that ``_Timeline`` sums from its intervals.
#
# Why only a few reserved jobs are looked at (see ``shared_conservative_profile_steps``):
# ``_Timeline.earliest_fit`` is a function of the usage alone. Its candidates are now and the
# interval ends; a window [t, t + L) that fits on a node still fits slid left to the last end at
# or before t (usage never drops between two ends going left), so its result is the earliest
# *real* t >= now at which k nodes each fit throughout [t, t + L), on the k lowest-indexed such
# nodes. Hence a reserved job j placed at (s, nodes) on usage U keeps exactly that placement on
# any later usage U' >= U (more usage anywhere, j's own slot excepted): s stays feasible and
# nothing earlier or lower-indexed became feasible. Usage drops (a "growth" of free resources)
# happen only where a running job ends early ([now, estimated end) on its nodes) and where a
# re-placed job left its old slot (start or nodes changed); each is logged with a sequence
# number. For j to move, some node i must now fit j at a start t with now <= t <= s (t = s: a
# lower node than before) where it did not fit when j was last placed, so a growth (i, [g0, g1))
# logged since then meets [t, t + L): g1 > now, g0 < s + L, and j's request is at most the
# largest free amount of node i at some time in [now, g1). A job failing that for every
# growth since its stamp is exactly where the reference re-places it, so it is skipped.
# Cheaper still, in O(1): free resources only shrink between growths, so the largest free
# amounts and the longest runs of >= 2**q free cores measured on each grown node right after
# its growth bound every later fit that uses it (taking the latest growth the window meets);
# their maxima over all growths since the last quiet round (a round in which nothing changed:
# the plan is then consistent and the log is cleared) skip a job whose request or limit
# exceeds them (the run bound only if its own nodes did not grow: on them its own slot would
# count). Otherwise each grown node gets one bounded search, and a job that one of them (or
# its own node without itself) can start earlier, or at s on a lower node, is placed again
# exactly (one node: its own node and the grown ones; several nodes: all nodes, from the
# earliest start on a grown node up to s, its own slot read as given back and each other node
# from the first time it has enough free cores: ``_earliest_kept``; a job that stays where it
# is then costs no profile update).


@njit(cache=True, _nrt=False)
def _seg(PT, PB, i, t):
    """Node i's segment holding time t (the last breakpoint <= t; PT[i, 0] = -inf). Most
    searches start at now, which the drivers keep in the first segment or two: those first."""
    if PB[i] <= 1 or PT[i, 1] > t:
        return 0
    if PB[i] == 2 or PT[i, 2] > t:
        return 1
    a = 1
    b = PB[i]
    while b - a > 1:
        mid = (a + b) >> 1
        if PT[i, mid] <= t:
            a = mid
        else:
            b = mid
    return a


@njit(cache=True, _nrt=False)
def _split(PT, PC, PG, PM, PB, i, t):
    """A breakpoint at t on node i (room for one more is there); its segment index."""
    b = _seg(PT, PB, i, t)
    if PT[i, b] == t:
        return b
    B = PB[i]
    for x in range(B, b + 1, -1):
        PT[i, x] = PT[i, x - 1]
        PC[i, x] = PC[i, x - 1]
        PG[i, x] = PG[i, x - 1]
        PM[i, x] = PM[i, x - 1]
    PT[i, b + 1] = t
    PC[i, b + 1] = PC[i, b]
    PG[i, b + 1] = PG[i, b]
    PM[i, b + 1] = PM[i, b]
    PB[i] = B + 1
    return b + 1


@njit(cache=True, _nrt=False)
def _merge(PT, PC, PG, PM, PB, i, b):
    """Drop breakpoint b of node i if it separates equal free amounts."""
    B = PB[i]
    if b <= 0 or b >= B or PC[i, b] != PC[i, b - 1] or PG[i, b] != PG[i, b - 1] or PM[i, b] != PM[i, b - 1]:
        return
    for x in range(b, B - 1):
        PT[i, x] = PT[i, x + 1]
        PC[i, x] = PC[i, x + 1]
        PG[i, x] = PG[i, x + 1]
        PM[i, x] = PM[i, x + 1]
    PB[i] = B - 1


@njit(cache=True, _nrt=False)
def _prof_take(PT, PC, PG, PM, PB, i, s, e, c, g, m, sign):
    """sign = 1: (c, g, m) of node i taken on [s, e); -1: given back."""
    bs = _split(PT, PC, PG, PM, PB, i, s)
    be = _split(PT, PC, PG, PM, PB, i, e)
    for b in range(bs, be):
        PC[i, b] -= sign * c
        PG[i, b] -= sign * g
        PM[i, b] -= sign * m
    _merge(PT, PC, PG, PM, PB, i, be)
    _merge(PT, PC, PG, PM, PB, i, bs)


@njit(cache=True, inline="always")
def _room(PT, PC, PG, PM, PB, i, now):
    """Whether node i has room for two more breakpoints, after dropping its past segments.
    (Inlined: the shared conservative kernel's kept plan checks it before every change, and
    the call cost ~15% of issue 26's growth benchmark at 160k jobs when the Slurm kernel did.)"""
    cap = PT.shape[1]
    if PB[i] + 2 <= cap and not (PB[i] >= 16 and PT[i, 8] <= now):  # (or many past segments)
        return True
    _drop_past(PT, PC, PG, PM, PB, i, now)
    return PB[i] + 2 <= cap


@njit(cache=True, _nrt=False)
def _drop_past(PT, PC, PG, PM, PB, i, now):
    """Node i's segments before the one holding ``now`` dropped (its free amounts from -inf)."""
    b0 = _seg(PT, PB, i, now)
    if b0 > 0:
        B = PB[i]
        for x in range(b0, B):
            PT[i, x - b0] = PT[i, x]
            PC[i, x - b0] = PC[i, x]
            PG[i, x - b0] = PG[i, x]
            PM[i, x - b0] = PM[i, x]
        PT[i, 0] = -np.inf
        PB[i] = B - b0


@njit(cache=True, _nrt=False, inline="always")
def _widest(PB):
    """The most entries any node's row holds (breakpoints of its profile: ``PB``)."""
    top = 0
    for i in range(PB.shape[0]):
        if PB[i] > top:
            top = PB[i]
    return top


@njit(cache=True, _nrt=False)
def _node_earliest(PT, PC, PG, PM, PB, i, t, L, c, g, m, H):
    """The earliest start in [t, H] at which node i holds (c, g, m) throughout L, or +inf."""
    return _node_earliest_from(PT, PC, PG, PM, PB, i, _seg(PT, PB, i, t), t, L, c, g, m, H)


@njit(cache=True, inline="always")
def _node_earliest_from(PT, PC, PG, PM, PB, i, b, t, L, c, g, m, H):
    """``_node_earliest`` with b, the segment holding t, known (``_earliest_kept``; inlined: the
    shared Slurm kernel's searches call it tens of millions of times). Its segments are read with
    unsigned indices: numba turns a negative signed index into one from the end, a test and an
    addition at every read, which were ~10 % of issue 26's 4-partition shared Slurm row
    (``benchmarks/RESULTS.md``, "Twentieth session, helper ssl20")."""
    B = np.uint64(PB[i])
    f = np.uint64(b)
    one = np.uint64(1)
    while t <= H:
        t1 = t + L
        while f < B and PT[i, f] < t1:
            if PC[i, f] < c or PG[i, f] < g or PM[i, f] < m:
                break
            f += one
        if f == B or PT[i, f] >= t1:  # every segment in the window holds it
            return t
        if f + one >= B:
            return np.inf
        f += one
        t = PT[i, f]
    return np.inf


@njit(cache=True, _nrt=False)
def _node_earliest_without(PT, PC, PG, PM, PB, i, t, L, c, g, m, H, s0, s1):
    """``_node_earliest`` on node i's profile with (c, g, m) more free on [s0, s1): a job's own
    slot given back, without changing the profile (taking it out and putting it back were most
    of the kept plan's profile updates). The profile's segments are read as pieces cut at s0
    and s1 too; a candidate start is the end of a piece that lacks room, and one inside a
    segment that lacks room lacks it too, so the starts tried and the answer are those of the
    profile with the slot given back (merged where the amounts meet)."""
    B = PB[i]
    b = _seg(PT, PB, i, t)
    while t <= H:
        t1 = t + L
        x = t
        f = b
        while True:  # the pieces of the window [t, t1), from the one holding x
            nxt = PT[i, f + 1] if f + 1 < B else np.inf
            cut = s0 if x < s0 else (s1 if x < s1 else np.inf)
            end = nxt if nxt < cut else cut
            if s0 <= x < s1:
                short = PC[i, f] + c < c or PG[i, f] + g < g or PM[i, f] + m < m
            else:
                short = PC[i, f] < c or PG[i, f] < g or PM[i, f] < m
            if short:
                break
            if end >= t1:
                return t  # every piece in the window holds it
            x = end
            if x >= nxt:
                f += 1
        if end == np.inf:
            return np.inf  # it lacks room from x on, for good
        t = end  # the next candidate: where the piece that lacks room ends
        b = f + 1 if end >= nxt else f
    return np.inf


@njit(cache=True, _nrt=False)
def _node_fit_free(PT, PC, PG, PM, PB, MX, i, t, L, c, g, m, H):
    """``_node_fit`` given MX without reservations (only the tests ask so: a call, so that the
    kernels that inline ``_node_fit`` do not compile this branch too)."""
    if c > MX[0, i] or g > MX[1, i] or m > MX[2, i]:
        b = np.uint64(PB[i] - 1)  # (unsigned: see _node_earliest_from)
        if PC[i, b] < c or PG[i, b] < g or PM[i, b] < m:
            return np.inf
        e = max(t, PT[i, b])
        return e if e <= H else np.inf
    return _node_earliest_from(PT, PC, PG, PM, PB, i, _seg(PT, PB, i, t), t, L, c, g, m, H)


@njit(cache=True, inline="always")
def _node_fit(PT, PC, PG, PM, PB, MX, i, t, L, c, g, m, H, FB=None):
    """``_node_earliest``; given MX (None: the conservative drivers), the most free cores, GPUs and
    KiB of every segment but the last, which only the shared Slurm cycle keeps
    (``_shared_slurm._most_free``), without scanning the segments when the request exceeds them:
    it can start only in the last one, from its breakpoint on, if that holds it. (Half the node
    searches of issue 26's 4-partition row end here; ~2 % of its time, ``benchmarks/RESULTS.md``,
    "Twentieth session, helper ssl20".) Given FB too, the Slurm cycle's reservations kept apart
    from the profile (``_shared_slurm._reserve``): (bounds, lo, hi, count), each node's earliest
    reservation start and latest end, then its held spans [lo, hi), sorted, disjoint and not
    touching. The profile is then the running jobs' and the cycle's starts' alone, whose amounts
    from now on only step up: once a segment holds the request every later one does, so the
    answer is the first start from there whose window meets no held span."""
    if MX is None:
        return _node_earliest(PT, PC, PG, PM, PB, i, t, L, c, g, m, H)
    if FB is None:
        return _node_fit_free(PT, PC, PG, PM, PB, MX, i, t, L, c, g, m, H)
    RF, RL, RH, RB = FB
    if c > MX[0, i] or g > MX[1, i] or m > MX[2, i]:
        b = np.uint64(PB[i] - 1)
        if PC[i, b] < c or PG[i, b] < g or PM[i, b] < m:
            return np.inf
        s = max(t, PT[i, b])
    else:
        B = np.uint64(PB[i])
        f = np.uint64(_seg(PT, PB, i, t))
        one = np.uint64(1)
        while PC[i, f] < c or PG[i, f] < g or PM[i, f] < m:  # the first segment from t that holds it
            f += one
            if f == B or PT[i, f] > H:
                return np.inf
        s = max(t, PT[i, f])
    if s > H:
        return np.inf
    if s + L <= RF[0, i] or s >= RF[1, i]:  # no held span in [s, s + L)
        return s
    n = np.uint64(RB[i])
    x = np.uint64(0)
    while RH[i, x] <= s:  # (the last span ends at RF[1, i] > s)
        x += np.uint64(1)
    while x < n:
        if RL[i, x] >= s + L:
            return s
        s = RH[i, x]  # past the held span: the amounts only grew
        if s > H:
            return np.inf
        x += np.uint64(1)
    return s


@njit(cache=True, inline="always")
def _kth_smallest(values, k, low):
    """The k-th smallest of ``values`` (``low``: k scratch slots, kept sorted), with unsigned
    indices (see ``_node_earliest_from``; inlined: the several-node searches call it millions
    of times)."""
    zero = np.uint64(0)
    n = zero
    uk = np.uint64(k)
    one = np.uint64(1)
    last = uk - one
    for v in values:
        if n < uk:
            y = n
            n += one
        elif v < low[last]:
            y = last
        else:
            continue
        while y > zero and low[y - one] > v:
            low[y] = low[y - one]
            y -= one
        low[y] = v
    return low[last]


@njit(cache=True, inline="always")
def _earliest_all(PT, PC, PG, PM, PB, MX, now, k, L, c, g, m, H, pick, E, low, FB=None):
    """``_Timeline.earliest_fit`` on the profiles, searching starts up to H: the start (+inf if
    none) and its k lowest-indexed nodes in pick[:k], each node asked through ``_node_fit`` (MX:
    None, or the shared Slurm cycle's most free amounts). (Inlined: the shared Slurm kernel calls
    it tens of millions of times, and the call itself showed, ~3%.) ``low``: k slots of scratch."""
    n_nodes = PB.shape[0]
    if k == 1:
        best = np.inf
        for i in range(n_nodes):
            e = _node_fit(PT, PC, PG, PM, PB, MX, i, now, L, c, g, m, min(H, best), FB)
            if e < best:
                best = e
                pick[0] = i
                if e == now:
                    break
        return best
    t = now
    for i in range(n_nodes):
        E[i] = -np.inf
    while True:
        at = 0  # nodes holding it from t: k of them end the search without the k-th smallest
        for i in range(n_nodes):
            if E[i] < t:  # (an earliest start >= the last t is still the earliest >= t)
                E[i] = _node_fit(PT, PC, PG, PM, PB, MX, i, t, L, c, g, m, H, FB)
            at += E[i] == t
        if at >= k:
            got = 0
            for i in range(n_nodes):
                if E[i] == t:
                    pick[got] = i
                    got += 1
                    if got == k:
                        break
            return t
        t = _kth_smallest(E, k, low)  # no k nodes fit together before it (after t: fewer than k hold it at t)
        if t == np.inf:
            return np.inf


@njit(cache=True, _nrt=False)
def _earliest_plain(PT, PC, PG, PM, PB, now, k, L, c, g, m, H, pick, E, low):
    """``_earliest_all`` without MX (the conservative drivers), a call: inlined at their two sites
    it was copied with the Slurm cycle's node fits too (pruned only after the copy), 2.7 s of
    the shared conservative kernel's cold compile; each node it asks is a call anyway."""
    return _earliest_all(PT, PC, PG, PM, PB, None, now, k, L, c, g, m, H, pick, E, low)


@njit(cache=True, _nrt=False)
def _first_free(PT, PC, PB, i, now, c):
    """The first time >= now at which node i has at least c free cores (+inf if never), and
    the segment holding it."""
    B = PB[i]
    b = _seg(PT, PB, i, now)
    if PC[i, b] >= c:
        return now, b
    b += 1
    while b < B:
        if PC[i, b] >= c:
            return PT[i, b], b
        b += 1
    return np.inf, B


@njit(cache=True, _nrt=False)
def _earliest_kept(PT, PC, PG, PM, PB, now, t0, k, L, c, g, m, H, pick, E, low, ff_v, ff_t, ff_b, version, mark,
                   own):
    """``_earliest_all`` from t0 for a reserved job of k > 1 nodes and c >= 1 cores placed again
    on the kept plan (``shared_conservative_profile_steps``) with its own slot [H, H + L) still
    in the profiles: on its own nodes (``mark[i] == own``) the slot is read as given back
    (``_node_earliest_without``), so a job that stays where it is costs no profile update. Any
    other node's search starts at the first time >= now at which it has 2**q free cores
    (2**q <= c < 2**(q + 1): no start before it fits there; ``_first_free``, kept per size class
    and node in ``ff_t[q, i]`` while the node's ``version`` is ``ff_v[q, i]`` and it is not in
    the past), and a node that reaches it only after H is not searched. Same answer and nodes
    as ``_earliest_all`` on the profiles without the slot (``benchmarks/RESULTS.md``, "Twentieth
    session, helper shc20")."""
    n_nodes = PB.shape[0]
    qc = _size_class(c)
    t = t0
    for i in range(n_nodes):
        E[i] = -np.inf
    while True:
        got = 0  # nodes by index whose earliest start >= t is t: k of them end the search
        for i in range(n_nodes):
            if E[i] < t:  # (an earliest start >= the last t is still the earliest >= t)
                if mark[i] == own:
                    E[i] = _node_earliest_without(PT, PC, PG, PM, PB, i, t, L, c, g, m, H, H, H + L)
                else:
                    if ff_v[qc, i] != version[i] or ff_t[qc, i] < now:
                        ff_t[qc, i], ff_b[qc, i] = _first_free(PT, PC, PB, i, now, 1 << qc)
                        ff_v[qc, i] = version[i]
                    f = ff_t[qc, i]
                    if f > H:
                        E[i] = np.inf
                    elif f >= t:  # (its segment as kept, unless past segments were dropped since)
                        b = ff_b[qc, i]
                        if not (b < PB[i] and PT[i, b] <= f and (b + 1 == PB[i] or PT[i, b + 1] > f)):
                            b = _seg(PT, PB, i, f)
                            ff_b[qc, i] = b
                        E[i] = _node_earliest_from(PT, PC, PG, PM, PB, i, b, f, L, c, g, m, H)
                    else:
                        E[i] = _node_earliest(PT, PC, PG, PM, PB, i, t, L, c, g, m, H)
            if E[i] == t:
                pick[got] = i
                got += 1
                if got == k:
                    return t
        nxt = _kth_smallest(E, k, low)  # no k nodes fit together before it
        if nxt == np.inf:
            return np.inf
        t = nxt


@njit(cache=True, _nrt=False)
def _max_free(PT, PC, PG, PM, PB, i, now, g1):
    """The largest free cores, GPUs and KiB of node i at any time in [now, g1)."""
    b = _seg(PT, PB, i, now)
    B = PB[i]
    mc = PC[i, b]
    mg = PG[i, b]
    mm = PM[i, b]
    b += 1
    while b < B and PT[i, b] < g1:
        if PC[i, b] > mc:
            mc = PC[i, b]
        if PG[i, b] > mg:
            mg = PG[i, b]
        if PM[i, b] > mm:
            mm = PM[i, b]
        b += 1
    return mc, mg, mm


@njit(cache=True, _nrt=False)
def _longest_run(PT, PC, PB, i, now, reach, c):
    """The longest time over which node i keeps at least c free cores, from a start in
    [now, reach) (+inf: to the end of its profile), each run's length end - start made longer
    by 2**-49 of the larger of their magnitudes: a window [t, t + L) fits in a run when the
    float sum t + L does not pass its end, which holds for L a rounding longer than end - t
    too (t = nextafter(now) after a hold past a limit, or any time with a fraction), and the
    kept plan skips a job whose limit is longer than this bound. (Still no longer for a run
    inside another: the bounds of ``_note_growth`` rely on it.)"""
    B = PB[i]
    b = _seg(PT, PB, i, now)
    best = 0.0
    while b < B and PT[i, b] < reach:
        if PC[i, b] < c:
            b += 1
            continue
        t = PT[i, b] if PT[i, b] > now else now
        if t >= reach:
            break
        f = b + 1
        while f < B and PC[i, f] >= c:
            f += 1
        if f == B:
            return np.inf
        e = PT[i, f]
        run = (e - t) + max(abs(e), abs(t)) * 2.0 ** -49
        if run > best:
            best = run
        b = f + 1
    return best


@njit(cache=True, _nrt=False)
def _note_growth(PT, PC, PG, PM, PB, i, now, g1, AGG, AGR):
    """Fold node i's largest free amounts in [now, g1), and its longest runs of >= 2**q free
    cores from a start there, into the bounds AGG / AGR of every growth since the last quiet
    round (free resources only shrink between growths, so these stay upper bounds)."""
    mc, mg, mm = _max_free(PT, PC, PG, PM, PB, i, now, g1)
    if mc > AGG[0]:
        AGG[0] = mc
    if mg > AGG[1]:
        AGG[1] = mg
    if mm > AGG[2]:
        AGG[2] = mm
    bound = np.inf  # the run of 2**q cores is at most that of 2**(q - 1): none longer than AGR[q] is skipped
    for q in range(AGR.shape[0]):
        if (1 << q) > mc:
            break
        if AGR[q] >= bound:
            continue
        bound = _longest_run(PT, PC, PB, i, now, g1, 1 << q)
        if bound > AGR[q]:
            AGR[q] = bound


@njit(cache=True, _nrt=False)
def _log_add(LN, L0, L1, LP, Lcount, i, g0, g1):
    """Log a growth of node i's free resources on [g0, g1) (there is room); the new count."""
    LN[Lcount] = i
    L0[Lcount] = g0
    L1[Lcount] = g1
    LP[Lcount] = -1  # its largest free amounts not computed in this pass yet
    return Lcount + 1


@njit(cache=True, inline="always")
def _size_class(c):
    """q with 2**q <= c < 2**(q + 1) (c >= 1): the run bounds' size class of c cores."""
    q = 0
    while (2 << q) <= c:
        q += 1
    return q


@njit(cache=True, _nrt=False)
def _grown_sum(gcount, node_list, first, k):
    t = 0
    for y in range(k):
        t += gcount[node_list[first + y]]
    return t


# ``shared_conservative_profile_steps``' scalars between slices, in ``st`` beside the common
# counts (the running count is unused: this kernel keeps no sorted running jobs).
CP_NRES = 6  # waiting jobs with a reservation
CP_BASE = 7  # sequence number of the growth log's first entry
CP_LC = 8  # entries in the growth log
CP_VISIT = 9  # number of the last growth scan (``mark``)
CP_PASS = 10  # number of the last planning pass
CP_AT = 11  # an event stopped for longer arrays: AT_COMPLETE (its completions), AT_PREPARE (before a pass),
CP_X = 12  # AT_ROUND (a pass's round); ... the round's place in the queue, its number, and its flags
CP_ROUNDS = 13  # (moved 1, changed 2, replan 4)
CP_FLAGS = 14
CP_NEED_W = 15  # ... the breakpoints a node's profile must have room for, and the log's entries
CP_NEED_L = 16
CP_WIDENED = 17  # counters: events stopped at a completion, in a round, before a pass (17, 18, 19)
CP_EVERY = 20  # 1: stop at every place it may (tests of the resumption; the first after a resumption goes on)
CP_XH = 21  # started jobs that will run past their limits, in their heap (limits not enforced)
CP_OVER = 22  # ... and those running past them at the last pass
CP_HELD = 23  # ... how many of those hold their nodes on [t, nextafter(t)), t = sf[SF_HELD]
CP_SIZE = 24
SF_HELD = 1  # (``sf[SF_NOW]`` the simulated time)
AT_NONE = 0
AT_COMPLETE = 1
AT_PASS = 2  # (a new pass: never stopped at)
AT_ROUND = 3
AT_PREPARE = 4  # (limits not enforced: holds past the limits, reservations in the past dropped)


@njit(cache=True, _nrt=False, inline="always")
def _room_take(PT, PC, PG, PM, PB, i, now, s, e, c, g, m, sign):
    """Room made on node i (its past segments dropped if needed), then (c, g, m) taken on
    [s, e) (sign 1) or given back (-1): every change of a profile the kept plan makes after a
    pass's holds (``_prof_take``)."""
    _room(PT, PC, PG, PM, PB, i, now)
    _prof_take(PT, PC, PG, PM, PB, i, s, e, c, g, m, sign)


@njit(cache=True, _nrt=False, inline="always")
def _slot_on(PT, PC, PG, PM, PB, at, k, now, s, e, c, g, m, sign):
    """A slot of (c, g, m) on [s, e) taken (sign 1) or given back (-1) on nodes at[0..k)."""
    for y in range(k):
        _room_take(PT, PC, PG, PM, PB, at[y], now, s, e, c, g, m, sign)


@njit(cache=True, _nrt=False, inline="always")
def _grew(i, now, g0, g1, PT, PC, PG, PM, PB, version, gcount, AGG, AGR, LN, L0, L1, LP, Lc):
    """Node i's free resources grew on [g0, g1): its version and growth count, the bounds
    from now (``_note_growth``) and a log entry (there is room); the log's count."""
    version[i] += 1
    gcount[i] += 1
    _note_growth(PT, PC, PG, PM, PB, i, now, g1, AGG, AGR)
    return _log_add(LN, L0, L1, LP, Lc, i, g0, g1)


@njit(cache=True, _nrt=False, inline="always")
def _placed(j, base, Lc, stamp, own_g, gcount, node_list, node_start, nodes):
    """Where the growth log stood when job j was placed (or found to stay): its sequence
    number, and the growth counts of j's nodes then."""
    stamp[j] = base + Lc
    own_g[j] = _grown_sum(gcount, node_list, node_start[j], nodes[j])


@njit(cache=True, _nrt=False)
def _growth(j, e, now, node_start, node_list, cores, gpus, mem, PT, PC, PG, PM, PB, version, gcount, AGG, AGR,
            LN, L0, L1, LP, Lc):
    """Job j's slot given back on [now, e) on each of its nodes (there is room): a growth, with
    the nodes' versions and growth counts, the bounds and the log entries; the log's count."""
    for y in range(node_start[j], node_start[j + 1]):
        i = node_list[y]
        _room_take(PT, PC, PG, PM, PB, i, now, now, e, cores[j], gpus[j], mem[j], -1)
        Lc = _grew(i, now, now, e, PT, PC, PG, PM, PB, version, gcount, AGG, AGR, LN, L0, L1, LP, Lc)
    return Lc


@njit(cache=True, _nrt=False)
def shared_conservative_profile_steps(submit, limit, nodes, dur, arrivals, rank, cores, gpus, mem, enforce,
                                      begin, end, est, res, stamp, node_start, node_list, fc, fg, fm,
                                      pick, old_nodes, E, low, mark, seen, reach, fail_p, fail_v, fail_c, fail_g,
                                      fail_m, fail_l, fail_h, gcount, own_g, AGG, AGR, run_p, run_v, run_r,
                                      run_w, version, ff_v, ff_t, ff_b, hk, hj, q, xk, xj, over, PB, PT, PC, PG,
                                      PM, LN, L0, L1, LP, LV, LC, LG, LM, st, sf, budget):
    """``sim.shared._Conservative`` on a plan kept between passes (see the comment above
    ``_seg``): the reference's rounds, in which a reserved job is placed again only when a
    growth logged since it was last placed could move it.

    With limits not enforced (``enforce`` False; ``_run_events``' ``freed_early or not
    enforce``) every pass replans, and before it the profiles are made the usage the reference
    rebuilds (``AT_PREPARE``): a running job whose estimated end is not after now (it runs past
    its limit: ``over``, from the heap ``xk``/``xj`` of the started jobs that will) holds its
    nodes on [now, nextafter(now)) too (dropped with the past at the next event; taken once
    however many events fall at now: ``SF_HELD``, ``CP_HELD``), and a
    reservation that fell into the past is given back from now (a growth) and placed anew in
    its turn. A hold on [now, ...) can only take room from a reservation at now: in a pass with
    such holds those are placed again from scratch in their turn (their slot given back as a
    growth); every other kept placement still fits, so the argument above holds for it.

    Resumable: runs at most ``budget`` events from the state in ``st``/``sf`` and the arrays
    (``shared._run_conservative_profile`` allocates them); status 0 done, 1 budget used, 2
    (``GROW``) the profiles or the growth log must be longer, -1 a plan that did not converge,
    -2 an over-committed node, -3 a job that fits nowhere, -4 a reservation kept in the past.

    Without numba's runtime (reference counting around the helper calls was ~25 % of the
    run): nothing is allocated here. No bound known before an event holds for the growth log
    (it gains an entry per node of every job moved in every round of a pass), so the event
    stops, with its place saved (``CP_AT``...), before a step that could overflow the
    profiles or the log: an early completion (two breakpoints and one entry per node), a
    job's placement (four breakpoints: its old slot given back, its new one taken; one entry
    per node). The caller makes them longer and calls again."""
    n = submit.shape[0]
    max_rounds = 1000 + 100 * n
    _, _, H, Q, a, done, now = _load_counts(st, sf)
    n_res = st[CP_NRES]
    XH, O = st[CP_XH], st[CP_OVER]
    base = st[CP_BASE]
    Lc = st[CP_LC]
    visit = st[CP_VISIT]
    pass_no = st[CP_PASS]
    width = PT.shape[1]
    length = LN.shape[0]
    top = _widest(PB)  # at least the most breakpoints a node's profile holds
    at = st[CP_AT]  # an event stopped for longer arrays: go on there
    st[CP_AT] = AT_NONE
    flags = st[CP_FLAGS]
    freed_early = False  # (an event stops at its completions only before an early end, which sets it)
    replan = (flags & 4) != 0
    changed = (flags & 2) != 0
    moved = (flags & 1) != 0
    x = st[CP_X]
    rounds = st[CP_ROUNDS]
    status = 0
    stop = False  # a step could overflow the profiles or the log: stop before it
    every = st[CP_EVERY] == 1
    resumed = at != AT_NONE
    while True:
        if at == AT_NONE:
            status, now, budget = _slice_event(submit, arrivals, a, hk, H, now, budget)
            if status != EV_NEXT:
                break
            freed_early = False
            at = AT_COMPLETE
            for i in range(PB.shape[0]):  # now in every node's first segment: most searches start there
                if PB[i] > 1 and PT[i, 1] <= now:
                    _drop_past(PT, PC, PG, PM, PB, i, now)
        while at == AT_COMPLETE and H > 0 and hk[0] <= now:
            j = hj[0]
            if end[j] < est[j]:  # room for two breakpoints and a log entry on each of its nodes
                if top + 2 > width:
                    top = _widest(PB)
                if top + 2 > width or Lc + nodes[j] > length or (every and not resumed):
                    stop = True
                    break
                resumed = False
                top += 2
            H = _heap_pop(hk, hj, H)
            _give_back(j, fc, fg, fm, node_start, node_list, cores, gpus, mem)
            done += 1
            if end[j] < est[j]:  # its nodes are free on [now, estimated end) from now on
                freed_early = True
                Lc = _growth(j, est[j], now, node_start, node_list, cores, gpus, mem, PT, PC, PG, PM, PB, version,
                             gcount, AGG, AGR, LN, L0, L1, LP, Lc)
        if stop:
            break
        if at == AT_COMPLETE:
            at = AT_NONE
            Q, a = _enqueue_arrivals(q, Q, rank, submit, arrivals, a, now)
            if Q == 0:
                continue
            replan = freed_early or not enforce
            if not enforce:
                at = AT_PREPARE
            elif replan or n_res < Q:
                at = AT_PASS

        if at == AT_PREPARE:  # limits not enforced: the profiles made the reference's usage at now
            while XH > 0 and xk[0] <= now:  # (a job past its limit holds its nodes until just after now)
                j = xj[0]
                XH = _heap_pop(xk, xj, XH)
                if end[j] > now:
                    over[O] = j
                    O += 1
            w = 0
            for y in range(O):
                if end[over[y]] > now:
                    over[w] = over[y]
                    w += 1
            O = w
            # an earlier event at this same now put holds for over[:held] already (none of them
            # ended since: each ends after now, so the compaction above kept that prefix)
            held = st[CP_HELD] if sf[SF_HELD] == now else 0
            seen[:] = 0  # per node, two breakpoints for each hold and each reservation in the past there
            need_l = Lc  # (and the latter's log entries)
            for y in range(held, O + Q):
                j = over[y] if y < O else q[y - O]
                if y >= O:
                    if not res[j] < now:
                        continue
                    need_l += nodes[j]
                for z in range(node_start[j], node_start[j + 1]):
                    seen[node_list[z]] += 2
            need = 0
            for i in range(PB.shape[0]):
                need = max(need, PB[i] + seen[i])
            if need > width or need_l > length or (every and not resumed):
                stop = True
                st[CP_NEED_W] = need
                st[CP_NEED_L] = need_l
                break
            resumed = False
            top = max(top, need)
            soon = np.nextafter(now, np.inf)
            for y in range(held, O):
                j = over[y]
                for z in range(node_start[j], node_start[j + 1]):
                    i = node_list[z]
                    _prof_take(PT, PC, PG, PM, PB, i, now, soon, cores[j], gpus[j], mem[j], 1)
                    version[i] += 1
            st[CP_HELD] = O
            sf[SF_HELD] = now
            for y in range(Q):  # reservations in the past: given back, placed anew in their turn
                j = q[y]
                if res[j] < now:
                    if res[j] + limit[j] > now:
                        Lc = _growth(j, res[j] + limit[j], now, node_start, node_list, cores, gpus, mem, PT, PC,
                                     PG, PM, PB, version, gcount, AGG, AGR, LN, L0, L1, LP, Lc)
                    res[j] = np.nan
                    n_res -= 1
            at = AT_PASS

        if at == AT_PASS:  # a new pass
            pass_no += 1
            if replan:  # forget the growths every waiting job has already been placed after
                oldest = base + Lc
                for x in range(Q):
                    j = q[x]
                    if res[j] == res[j] and stamp[j] < oldest:
                        oldest = stamp[j]
                drop = oldest - base
                if drop > 0:
                    for x in range(drop, Lc):
                        LN[x - drop] = LN[x]
                        L0[x - drop] = L0[x]
                        L1[x - drop] = L1[x]
                        LP[x - drop] = LP[x]
                        LV[x - drop] = LV[x]
                        LC[x - drop] = LC[x]
                        LG[x - drop] = LG[x]
                        LM[x - drop] = LM[x]
                    Lc -= drop
                    base = oldest
            rounds = 1
            moved = False
            changed = False
            x = 0
            at = AT_ROUND
        if at == AT_ROUND:  # the pass's rounds, from place x of round ``rounds``
            at = AT_NONE
            while True:
                while x < Q:
                    j = q[x]
                    k = nodes[j]
                    if top + 4 > width:  # room for four breakpoints and k log entries
                        top = _widest(PB)
                    if top + 4 > width or Lc + k > length or (every and not resumed):
                        stop = True
                        break
                    resumed = False
                    top += 4
                    x += 1
                    c, g, m, lim = cores[j], gpus[j], mem[j], limit[j]
                    old = res[j]
                    if O > 0 and old == now:  # a job past its limit may hold a node of its slot now
                        Lc = _growth(j, now + lim, now, node_start, node_list, cores, gpus, mem, PT, PC, PG, PM,
                                     PB, version, gcount, AGG, AGR, LN, L0, L1, LP, Lc)
                        res[j] = np.nan
                        n_res -= 1
                        changed = True
                    if res[j] != res[j]:  # a new job (or one placed anew): its earliest fit on the plan
                        start = _earliest_plain(PT, PC, PG, PM, PB, now, k, lim, c, g, m, np.inf, pick, E, low)
                        if start == np.inf:
                            return -3
                        for y in range(k):
                            node_list[node_start[j] + y] = pick[y]
                            version[pick[y]] += 1
                        _slot_on(PT, PC, PG, PM, PB, pick, k, now, start, start + lim, c, g, m, 1)
                        res[j] = start
                        n_res += 1
                        _placed(j, base, Lc, stamp, own_g, gcount, node_list, node_start, nodes)
                        if start != old and old == old:
                            moved = True
                        continue
                    if not replan:
                        continue
                    if old < now:
                        return -4
                    first = node_start[j]
                    if c > AGG[0] or g > AGG[1] or m > AGG[2]:
                        _placed(j, base, Lc, stamp, own_g, gcount, node_list, node_start, nodes)
                        continue  # no growth since the last quiet round has room for it
                    if c >= 1:
                        qc = _size_class(c)
                        if AGR[qc] < lim and own_g[j] == _grown_sum(gcount, node_list, first, k):
                            _placed(j, base, Lc, stamp, own_g, gcount, node_list, node_start, nodes)
                            continue  # ... nor a long enough run of free cores (its own nodes
                            # did not grow: their runs would not count the job itself)
                    # which nodes grew, since j was placed, where j might fit now
                    visit += 1
                    first = node_start[j]
                    n_seen = 0
                    for y in range(np.uint64(max(stamp[j] - base, 0)), np.uint64(Lc)):  # (unsigned indices:
                        g1 = L1[y]  # numba tests every signed one for a wrap from the end)
                        if g1 <= now or L0[y] >= old + lim:
                            continue
                        i = np.uint64(LN[y])
                        if mark[i] == visit and g1 <= reach[i]:
                            continue
                        if LP[y] != pass_no or LV[y] != version[i]:
                            LC[y], LG[y], LM[y] = _max_free(PT, PC, PG, PM, PB, i, now, g1)
                            LP[y] = pass_no
                            LV[y] = version[i]
                        if LC[y] < c or LG[y] < g or LM[y] < m:
                            continue
                        if mark[i] != visit:
                            mark[i] = visit
                            seen[n_seen] = i
                            n_seen += 1
                            reach[i] = g1
                        else:
                            reach[i] = g1
                    own = False  # one of its own nodes grew (then it is placed again exactly)
                    grown = False  # another grown node holds it from some start <= old
                    best = np.inf  # (one node: the best such start and node)
                    best_i = -1
                    lo = np.inf  # no new start before the earliest on a grown node
                    for y in range(n_seen):
                        i = seen[y]
                        for z in range(k):
                            if node_list[first + z] == i:
                                # its own node: can it start there before old without itself?
                                h = min(np.nextafter(old, -np.inf), np.nextafter(reach[i], -np.inf))
                                e = _node_earliest_without(PT, PC, PG, PM, PB, i, now, lim, c, g, m, h, old, old + lim)
                                if e < np.inf:
                                    own = True
                                    if e < lo:
                                        lo = e
                                break
                        else:
                            if c >= 1:  # a window of lim with c free cores must exist (cores by powers of 2)
                                qc = _size_class(c)
                                if run_p[i, qc] != pass_no or run_v[i, qc] != version[i] or run_r[i, qc] < reach[i]:
                                    run_r[i, qc] = reach[i]
                                    run_w[i, qc] = _longest_run(PT, PC, PB, i, now, run_r[i, qc], 1 << qc)
                                    run_p[i, qc] = pass_no
                                    run_v[i, qc] = version[i]
                                if run_w[i, qc] < lim:
                                    continue
                            # a new start must be before the end of a growth it meets
                            h = min(old, np.nextafter(reach[i], -np.inf))
                            if (fail_p[i] == pass_no and fail_v[i] == version[i] and c >= fail_c[i]
                                    and g >= fail_g[i] and m >= fail_m[i] and lim >= fail_l[i]
                                    and h <= fail_h[i]):
                                continue  # a smaller request found no start by a later time
                            e = _node_earliest(PT, PC, PG, PM, PB, i, now, lim, c, g, m, h)
                            # (useful only before old, or at old below one of its nodes)
                            if e < old or (e == old and i < node_list[first + k - 1]):
                                grown = True
                                if e < lo:
                                    lo = e
                                if e < best or (e == best and i < best_i):
                                    best = e
                                    best_i = i
                            elif e == np.inf:
                                fail_p[i] = pass_no
                                fail_v[i] = version[i]
                                fail_c[i] = c
                                fail_g[i] = g
                                fail_m[i] = m
                                fail_l[i] = lim
                                fail_h[i] = h
                    _placed(j, base, Lc, stamp, own_g, gcount, node_list, node_start, nodes)
                    i0 = node_list[first]
                    if k == 1 and not own and not (best < old or (best == old and best_i < i0)):
                        continue  # the reference places it again exactly where it is
                    if k > 1 and not (own or grown):
                        continue
                    taken = k == 1 or c < 1  # its old slot given back before the search (else by it)
                    for y in range(k):
                        old_nodes[y] = node_list[first + y]
                        if not taken:
                            mark[old_nodes[y]] = -visit - 1  # (its own nodes for _earliest_kept; seen ones: visit)
                    if taken:
                        _slot_on(PT, PC, PG, PM, PB, old_nodes, k, now, old, old + lim, c, g, m, -1)
                    if k == 1:  # its own node (if it did not grow, it still fits from old)
                        start = old
                        pick[0] = i0
                        if own:
                            start = _node_earliest(PT, PC, PG, PM, PB, i0, now, lim, c, g, m, old)
                        if best < start or (best == start and best_i < i0):
                            start = best
                            pick[0] = best_i
                    elif taken:
                        start = _earliest_plain(PT, PC, PG, PM, PB, lo, k, lim, c, g, m, old, pick, E, low)
                    else:
                        start = _earliest_kept(PT, PC, PG, PM, PB, now, lo, k, lim, c, g, m, old, pick, E, low, ff_v,
                                               ff_t, ff_b, version, mark, -visit - 1)
                    same = start == old
                    for y in range(k):
                        same = same and pick[y] == old_nodes[y]
                    if not (taken or same):
                        _slot_on(PT, PC, PG, PM, PB, old_nodes, k, now, old, old + lim, c, g, m, -1)
                    if taken or not same:
                        for y in range(k):
                            node_list[first + y] = pick[y]
                        _slot_on(PT, PC, PG, PM, PB, pick, k, now, start, start + lim, c, g, m, 1)
                    if not same:  # its old slot is free for the others
                        changed = True
                        for y in range(k):
                            version[pick[y]] += 1
                            Lc = _grew(old_nodes[y], now, old, old + lim, PT, PC, PG, PM, PB, version, gcount, AGG,
                                       AGR, LN, L0, L1, LP, Lc)
                        res[j] = start
                        _placed(j, base, Lc, stamp, own_g, gcount, node_list, node_start, nodes)
                        if start != old:
                            moved = True
                if stop:
                    at = AT_ROUND
                    break
                if replan and not changed:  # a quiet round: every placement holds on this plan
                    base += Lc
                    Lc = 0
                    AGG[:] = -1
                    AGR[:] = -1.0
                if not (replan and moved):
                    break
                rounds += 1
                if rounds > max_rounds:
                    return -1
                moved = False
                changed = False
                x = 0
            if stop:
                break

        Q, n_res, H, XH = _start_due(q, Q, res, now, n_res, node_start, node_list, cores, gpus, mem, dur, limit,
                                     fc, fg, fm, begin, end, est, hk, hj, H, xk, xj, XH)
        if Q < 0:
            return -2
    if stop:  # where the event goes on, and how long the arrays must be
        status = GROW
        st[CP_AT] = at
        st[CP_WIDENED + (1 if at == AT_ROUND else (2 if at == AT_PREPARE else 0))] += 1
        st[CP_FLAGS] = (4 if replan else 0) | (2 if changed else 0) | (1 if moved else 0)
        st[CP_X] = x
        st[CP_ROUNDS] = rounds
        if at != AT_PREPARE:  # (which set its own)
            st[CP_NEED_W] = _widest(PB) + 4
            st[CP_NEED_L] = Lc + nodes[j]  # (j: the job whose step could overflow them)
    _store_counts(st, sf, 0, 0, H, Q, a, done, now)
    st[CP_NRES] = n_res
    st[CP_XH], st[CP_OVER] = XH, O
    st[CP_BASE] = base
    st[CP_LC] = Lc
    st[CP_VISIT] = visit
    st[CP_PASS] = pass_no
    return status
