"""numba kernels: the event loop of ``drevt_sweep.engine`` compiled, bit for bit the same.

Importing this module imports numba; ``drevt_sweep.fast`` does so only when a simulation first
asks for the fast kernel. Every function is ``@njit(cache=True, _nrt=False)``: the first process compiles
(10-30 s on the 2-core development machine) and stores the machine code in ``__pycache__``;
later processes load it (well under a second, most of it numba's own start-up).

Two drivers here run the engine's event loop (completions, then arrivals, then one pass); a
third, ``_extended.extended_steps`` (dynamic priorities, run-time estimates), is built the same
way and shares with :func:`queue_policy_steps` the loop's steps defined here once ("the steps
every queue driver shares": next event, completion, start, EASY's rule, slice state):

* :func:`queue_policy_steps` for ``none`` / ``easy`` / ``easy_drevt``. The waiting queue is a
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
* :func:`conservative_steps` for ``conservative`` (every compression order). The waiting queue
  is an array in priority order; the availability profile is kept *between* passes (sorted
  breakpoints in chunks of at most 64, updated when a job ends early or a reservation moves)
  instead of rebuilt at every pass, with the most / fewest free nodes and a lazy offset per
  chunk so that its scans step over whole chunks and an update shifts one chunk only. Re-planning replays the reference's rounds exactly, but a
  reserved job that provably cannot move (the argument is in the docstring of
  :func:`conservative_steps`) is passed over in O(1), and the others search the profile
  through a cache of its runs per job size shared by the whole pass. With limits not enforced the profile is rebuilt at every pass
  and every job re-placed, as the reference does (overdue jobs release "right after now",
  which moves with ``now``).

Both drivers are resumable: they run from state arrays for a budget of work and return at an
event boundary, and ``drevt_sweep.sim.kernel.run_events`` calls them in a loop (progress,
Ctrl-C). All arrays are allocated by the caller, so every function is compiled without numba's
reference-counting runtime (``_nrt=False``; no function here may allocate): with it, each call
passing arrays did an atomic increment and decrement per array, which dominated the
conservative profile (light-load KTH-SP2: 94 -> 65 ms). Only the small helpers and the
run-cache search of the compression loop's hot path are ``inline="always"`` (one copy each):
inlining the whole profile helper tree at every call site made ``conservative_steps`` cost
70-120 s of CPU to compile cold; called, the rest compiles in ~10 s and runs as fast.

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
# Ties in time are popped in job order: the pool kernels do not depend on the order of jobs
# ending at one instant, but fair-share accounting (``_extended``) adds their usage in it.


@njit(cache=True, _nrt=False, inline="always")
def _before(t, j, u, k):
    return t < u or (t == u and j < k)


@njit(cache=True, _nrt=False, inline="always")
def _heap_put(hk, hj, i, t, j):
    hk[i] = t
    hj[i] = j


@njit(cache=True, _nrt=False)
def _heap_push(hk, hj, size, t, j):
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if not _before(t, j, hk[p], hj[p]):
            break
        _heap_put(hk, hj, i, hk[p], hj[p])
        i = p
    _heap_put(hk, hj, i, t, j)
    return size + 1


@njit(cache=True, _nrt=False)
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
        if c + 1 < size and _before(hk[c + 1], hj[c + 1], hk[c], hj[c]):
            c += 1
        if not _before(hk[c], hj[c], t, j):
            break
        _heap_put(hk, hj, i, hk[c], hj[c])
        i = c
    _heap_put(hk, hj, i, t, j)
    return size


# --- running jobs: arrays sorted by (estimated end, job) -------------------------------------


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
def _run_remove(re, rj, rn, count, e, j):
    p = _run_pos(re, rj, count, e, j)
    for k in range(p, count - 1):
        re[k] = re[k + 1]
        rj[k] = rj[k + 1]
        rn[k] = rn[k + 1]
    return count - 1


@njit(cache=True, _nrt=False)
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


# --- the steps every queue driver shares -----------------------------------------------------
# ``queue_policy_steps`` (static ranks) and ``_extended.extended_steps`` (dynamic priorities,
# estimates) differ only in how the waiting queue is ordered and searched; the event loop's
# steps are these, inlined (each is a few lines: a call per event would cost about as much as
# the step itself).


@njit(cache=True, _nrt=False, inline="always")
def _next_event(submit, arrivals, a, hk, H):
    """The time of the next event: the earlier of the next arrival and the next real end."""
    t_arr = submit[arrivals[a]] if a < arrivals.shape[0] else np.inf
    t_end = hk[0] if H > 0 else np.inf
    return t_arr if t_arr < t_end else t_end


@njit(cache=True, _nrt=False, inline="always")
def _slice_event(submit, arrivals, a, hk, H, now, budget):
    """The head of the event loop of the drivers that stop only between events: (status, time,
    events left in the slice). ``EV_NEXT``: the next event is at ``time`` and takes one of the
    ``budget`` events left; else the driver stores its state (``now`` unchanged) and returns
    ``status``: 0, no arrival or completion is left; 1, the slice's budget is used."""
    if a >= arrivals.shape[0] and H == 0:
        return 0, now, budget
    if budget <= 0:
        return 1, now, budget
    return EV_NEXT, _next_event(submit, arrivals, a, hk, H), budget - 1


@njit(cache=True, _nrt=False, inline="always")
def _next_wake(submit, arrivals, a, hk, H, now, wake, work, budget):
    """The head of the event loop of the drivers that also wake at times of their own
    (conservative's reservations, Slurm's periodic passes): (go, time, work done). ``go`` False:
    the slice's ``budget`` of work is used (``now`` unchanged); else the next event is at the
    earlier of ``_next_event`` and ``wake`` and takes one unit of work."""
    if work >= budget:
        return False, now, work
    t = _next_event(submit, arrivals, a, hk, H)
    return True, (wake if wake < t else t), work + 1


@njit(cache=True, _nrt=False, inline="always")
def _arrival(submit, arrivals, a, now, rank, Q, head):
    """The next job that arrives by ``now`` into a queue ordered by static ranks (a segment
    tree's leaves): (job, next arrival, waiting, smallest waiting rank); job -1 when no other
    job arrives by ``now``."""
    if a >= arrivals.shape[0] or not submit[arrivals[a]] <= now:
        return -1, a, Q, head
    j = arrivals[a]
    r = rank[j]
    return j, a + 1, Q + 1, r if r < head else head


@njit(cache=True, _nrt=False, inline="always")
def _enqueue_arrivals(q, Q, rank, submit, arrivals, a, now):
    """The jobs that arrive by ``now`` into the waiting jobs ``q[:Q]``, kept in priority order
    (static ranks; insertion from the back). Returns (waiting, next arrival)."""
    while a < arrivals.shape[0] and submit[arrivals[a]] <= now:
        j = arrivals[a]
        a += 1
        r = rank[j]
        p = Q
        while p > 0 and rank[q[p - 1]] > r:
            q[p] = q[p - 1]
            p -= 1
        q[p] = j
        Q += 1
    return Q, a


@njit(cache=True, _nrt=False, inline="always")
def _finish_next(hk, hj, H, re, rj, rn, R, est):
    """The earliest completion: its job comes off the heap and off the running jobs (found by
    its estimated end). Returns (job, heap size, running count)."""
    j = hj[0]
    H = _heap_pop(hk, hj, H)
    R = _run_remove(re, rj, rn, R, est[j], j)
    return j, H, R


@njit(cache=True, _nrt=False, inline="always")
def _launch(j, now, e, begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H):
    """Start job ``j`` at ``now``, planned to end at ``e``: it joins the running jobs (by
    planned end) and the completions (by real end, ``now + dur``). Returns (running, heap)."""
    begin[j] = now
    end[j] = now + dur[j]
    est[j] = e
    R = _run_insert(re, rj, rn, R, e, j, nodes[j])
    H = _heap_push(hk, hj, H, end[j], j)
    return R, H


@njit(cache=True, _nrt=False, inline="always")
def _before_shadow(e, shadow, strict):
    """EASY's time test: a job ending at ``e`` ends before the shadow time, or at it unless
    ``strict`` (easy_drevt)."""
    return e < shadow or (e == shadow and not strict)


@njit(cache=True, _nrt=False, inline="always")
def _may_backfill(e, nj, shadow, extra, strict, use_extra):
    """EASY's backfill rule for a job of ``nj`` nodes that fits the free nodes and would end at
    ``e``: it passes the time test, or (``use_extra``: easy) fits in the ``extra`` nodes the
    head job leaves (which it then takes)."""
    return _before_shadow(e, shadow, strict) or (use_extra and nj <= extra)


@njit(cache=True, _nrt=False, inline="always")
def _load_counts(st, sf):
    """The scalars every driver carries between slices: (free, running, heap, waiting, next
    arrival, jobs done, simulated time)."""
    return st[ST_FREE], st[ST_R], st[ST_H], st[ST_Q], st[ST_A], st[ST_DONE], sf[SF_NOW]


@njit(cache=True, _nrt=False, inline="always")
def _store_counts(st, sf, free, R, H, Q, a, done, now):
    st[ST_FREE] = free
    st[ST_R] = R
    st[ST_H] = H
    st[ST_Q] = Q
    st[ST_A] = a
    st[ST_DONE] = done
    sf[SF_NOW] = now


@njit(cache=True, _nrt=False, inline="always")
def _load_queue(st, sf):
    """The state of a driver over a queue of static ranks (``queue_policy_steps``,
    ``shared.shared_queue_steps``, ``_slurm.slurm_steps``): ``_load_counts``' scalars with the
    smallest waiting rank before the simulated time."""
    free, R, H, Q, a, done, now = _load_counts(st, sf)
    return free, R, H, Q, a, done, st[ST_HEAD], now


@njit(cache=True, _nrt=False, inline="always")
def _store_queue(st, sf, free, R, H, Q, a, done, head, now):
    _store_counts(st, sf, free, R, H, Q, a, done, now)
    st[ST_HEAD] = head


# --- waiting queue (none / EASY): segment tree over priority ranks ---------------------------


@njit(cache=True, _nrt=False)
def _seg_update(tn, tg, tm, tl, i):
    """Recompute the minima above leaf index ``i`` (stops as soon as nothing changes); ``tg``,
    ``tm``: on shared nodes the trees of GPUs and memory beside ``tn``'s cores (None in a pool)."""
    i >>= 1
    while i >= 1:
        a = tn[2 * i]
        b = tn[2 * i + 1]
        nv = a if a < b else b
        x = tl[2 * i]
        y = tl[2 * i + 1]
        lv = x if x < y else y
        if tg is None:
            if nv == tn[i] and lv == tl[i]:
                break
        else:
            g = min(tg[2 * i], tg[2 * i + 1])
            m = min(tm[2 * i], tm[2 * i + 1])
            if nv == tn[i] and g == tg[i] and m == tm[i] and lv == tl[i]:
                break
            tg[i] = g
            tm[i] = m
        tn[i] = nv
        tl[i] = lv
        i >>= 1


@njit(cache=True, _nrt=False, inline="always")
def _seg_set(tn, tg, tm, tl, leaf, n, g, m, lim):
    """A job with time limit ``lim`` waits at ``leaf``, asking for ``n`` nodes (a pool) or for
    (n, g, m) cores, GPUs and KiB per node (shared nodes)."""
    tn[leaf] = n
    if tg is not None:
        tg[leaf] = g
        tm[leaf] = m
    tl[leaf] = lim
    _seg_update(tn, tg, tm, tl, leaf)


@njit(cache=True, _nrt=False, inline="always")
def _seg_clear(tn, tg, tm, tl, leaf):
    """Nobody waits at ``leaf`` any more (its job started)."""
    _seg_set(tn, tg, tm, tl, leaf, BIG, BIG, BIG, np.inf)


@njit(cache=True, _nrt=False, inline="always")
def _descend(tn, tg, tm, tl, size, p, free, maxg, maxm, timed, now, shadow, extra, strict, use_extra):
    """Smallest rank >= p whose waiting job asks for at most ``free`` nodes (on shared nodes,
    ``kernel.shared._next``: cores, and at most ``maxg`` GPUs and ``maxm`` KiB in the trees ``tg``,
    ``tm``; None in a pool) and, if ``timed``, passes EASY's backfill rule (:func:`_may_backfill`,
    ending at ``now + limit``), or -1.

    From leaf ``p`` it climbs right and descends, entering a subtree only if its minimum nodes
    and (``timed``) minimum limit could pass (a necessary condition; leaves are tested
    exactly), so it skips whole ranges that cannot; with ``timed`` it backtracks where the two
    minima come from different jobs. Inlined into the two searches below, each passing
    ``timed`` as a constant, so the optimiser can drop the test a search does not use (measured
    no slower than the two descents written out, ``benchmarks/RESULTS.md``)."""
    if p >= size:
        return -1
    i = p + size
    while True:
        mn = tn[i]
        if (mn <= free and (tg is None or (tg[i] <= maxg and tm[i] <= maxm))
                and (not timed or _may_backfill(now + tl[i], mn, shadow, extra, strict, use_extra))):
            if i >= size:
                return i - size
            i = 2 * i
        else:
            i = _right_of(i)
            if i == 0:
                return -1


@njit(cache=True, _nrt=False, inline="always")
def _right_of(i):
    """The subtree right after node ``i`` of a tree in heap order (root 1): climb while ``i`` is
    a right child, then step right; 0 when ``i`` lies on the right edge (nothing is right of it)."""
    while i & 1:
        i >>= 1
    return i + 1 if i != 0 else 0


@njit(cache=True, _nrt=False)
def _first_waiting(tn, tl, size, p):
    """Smallest rank >= p whose job waits, or -1 (a waiting job's leaf holds its node count,
    an empty leaf BIG)."""
    return _first_fit(tn, tl, size, p, BIG - 1)


@njit(cache=True, _nrt=False)
def _first_fit(tn, tl, size, p, free):
    """Smallest rank >= p whose waiting job asks for at most ``free`` nodes, or -1."""
    return _descend(tn, None, None, tl, size, p, free, 0, 0, False, 0.0, 0.0, 0, False, False)


@njit(cache=True, _nrt=False)
def _first_candidate(tn, tl, size, p, free, now, shadow, extra, strict, use_extra):
    """Smallest rank >= p whose waiting job EASY would backfill now, or -1."""
    return _descend(tn, None, None, tl, size, p, free, 0, 0, True, now, shadow, extra, strict, use_extra)


# --- resumable drivers --------------------------------------------------------------------
# Each driver runs the event loop from the state it is given (arrays allocated by
# ``drevt_sweep.sim.kernel``; scalars in ``st``, int64) and returns after ``budget`` units of
# work (events, plus queue entries visited for conservative) at an event boundary, so the
# caller can report progress and Python can act on Ctrl-C between calls. Return value: 1 =
# more to do, 0 = done (``st[ST_Q]`` jobs left waiting, always 0), -1 = a conservative plan did
# not converge, -2 = a plan over-committed the machine (the reference raises for both).
ST_FREE = 0  # free nodes now
ST_R = 1  # running jobs
ST_H = 2  # completion-heap size
ST_Q = 3  # waiting jobs
ST_A = 4  # next arrival
ST_DONE = 5  # jobs finished
ST_HEAD = 6  # queue policy: smallest waiting rank
# conservative only
ST_NRES = 6  # waiting jobs with a reservation
ST_FIXPOINT = 7  # 1 when the plan is a fixpoint (every reservation at its earliest fit)
ST_STAMP = 8  # run cache: number of the current planning pass
ST_ACTIVE = 9  # run cache: slots in use in this pass
ST_VICTIM = 10  # run cache: next slot to reuse
ST_PASS_AT = 11  # a pass cut short by the budget: next queue index (-1: none)
ST_SCAN_TO = 12  # ... and its round's scan_to, last_move, round count and exact flag
ST_LAST_MOVE = 13
ST_ROUNDS = 14
ST_EXACT = 15
ST_PHASE = 16  # ... and where: PHASE_COMPRESS (a compression round) or PHASE_PLACE (placing arrivals)
ST_VERSION = 17  # the versions test (``_vt_*``): moves logged so far, over all passes
ST_VBASE = 18  # ... the version at the start of the pass (the log's place 0)
ST_VLO = 19  # ... blocks whose version is >= this one are tested (BIG: none)
ST_VHI = 20  # ... the version at the start of this round
ST_VBLOCK = 21  # ... the version at the start of the current block
ST_LOG = 22  # ... 1 while the pass's moves are logged (0 once the log is full)
ST_TRACK = 23  # ... 1 while this round logs its moves and its blocks' versions
ST_SIZE = 24
PHASE_COMPRESS = 0
PHASE_PLACE = 1
EV_NEXT = 2  # ``_slice_event``: an event to process (0 and 1 are the driver's statuses)
SF_NOW = 0  # simulated time reached
SF_EARLIEST = 1  # earliest reservation
SF_GROWN = 2  # end of the region where the profile grew since the last fixpoint
SF_WAKE = 3  # conservative one_pass: an event at the earliest reservation (ConservativeBackfill.wake_at)
SF_GMIN = 4  # the versions test: the earliest growth start of this round's moves so far
SF_GMAX = 5  # ... and the latest growth end
SF_S1 = 6  # ... the latest growth end in the log's suffix from the current block's version (inf: no test)
SF_FH = 7  # the last failed search since the profile last changed: its nodes, limit, reservation, bound
SF_FL = 8
SF_FO = 9
SF_FB = 10  # (-inf: none)
SF_SIZE = 11


@njit(cache=True, _nrt=False)
def queue_policy_steps(submit, limit, nodes, dur, arrivals, rank, total, mode,
                       begin, end, est, job_of_rank, tn, tl, re, rj, rn, hk, hj, st, sf, budget):
    """none / easy / easy_drevt from state ``st``/``sf``, for about ``budget`` events."""
    size = tn.shape[0] // 2
    use_extra = mode == MODE_EASY
    strict = mode == MODE_EASY_DREVT
    free, R, H, Q, a, done, head, now = _load_queue(st, sf)  # head: size when nobody waits
    while True:
        status, now, budget = _slice_event(submit, arrivals, a, hk, H, now, budget)
        if status != EV_NEXT:
            break

        # 1. completions
        while H > 0 and hk[0] <= now:
            j, H, R = _finish_next(hk, hj, H, re, rj, rn, R, est)
            free += nodes[j]
            done += 1

        # 2. arrivals
        while True:
            j, a, Q, head = _arrival(submit, arrivals, a, now, rank, Q, head)
            if j < 0:
                break
            _seg_set(tn, None, None, tl, rank[j] + size, nodes[j], 0, 0, limit[j])

        if Q == 0:
            continue

        # 3. one pass: start jobs in priority order while they fit
        h = head
        while h >= 0:
            j = job_of_rank[h]
            nj = nodes[j]
            if nj > free:
                break
            R, H = _launch(j, now, now + limit[j], begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)
            free -= nj
            _seg_clear(tn, None, None, tl, h + size)
            Q -= 1
            h = _first_waiting(tn, tl, size, h + 1)
        head = h if h >= 0 else size
        if h < 0 or mode == MODE_NONE or free == 0:
            continue
        # EASY: skip the reservation when no later job fits in the free nodes at all
        c = _first_fit(tn, tl, size, h + 1, free)
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
            if not _before_shadow(e, shadow, strict):
                extra -= nj  # admitted by the extra-nodes rule
            R, H = _launch(j, now, e, begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)
            free -= nj
            _seg_clear(tn, None, None, tl, c + size)
            Q -= 1
            if free == 0:
                break
            c += 1
    _store_queue(st, sf, free, R, H, Q, a, done, head, now)
    return status


# --- conservative: availability profile as a list of chunks of breakpoints --------------------
# The profile is a step function: breakpoint times (strictly increasing) and the free nodes
# from each breakpoint to the next (the last step lasts forever). Redundant breakpoints (the
# same free nodes as the previous one) are allowed; they are dropped now and then
# (``_prof_compact``). The breakpoints are kept in order in *chunks* of at most ``CH_CAP``:
# pt[c, :n] the times, pf[c, :n] the free nodes minus the chunk's offset, pb[c] = (n, offset,
# most free, fewest free) (the last two with the offset); ps[PS_CO + m0 : PS_CO + m1] lists the
# chunks in time order, ps[PS_CO + NC:] holds the free ones, ps[PS_P] counts the breakpoints.
# Why chunks: a reservation that moves adds up to two breakpoints near its new start. In one
# flat sorted array (before 2026-12-02) that shifted the whole tail, O(P), and made every block
# summary after it stale, which the next scan recomputed, O(P) again: a third of a heavy-load
# run. In a chunk an insertion shifts at most CH_CAP entries and touches one summary; a change
# over a whole chunk is one offset. Scans step over whole chunks that cannot stop them, so a
# profile of P breakpoints is searched in O(P / CH_FILL + CH_CAP) and updated in O(P / CH_FILL
# + CH_CAP). (A balanced tree of breakpoint deltas with prefix-sum aggregates, O(log P) per
# query and update, was measured slower than flat scans at the profile sizes simulations reach
# -- hundreds to a few thousand breakpoints; see RESULTS.md.)
CH_BITS = 6
CH_CAP = 1 << CH_BITS  # 64 breakpoints a chunk holds; a full chunk that needs one more is split in two
CH_HALF = CH_CAP // 2
CH_FILL = 48  # compaction merges neighbouring chunks up to this many
PB_N = 0
PB_ADD = 1
PB_MAX = 2
PB_MIN = 3
PS_M0 = 0  # the chunk order is ps[PS_CO + m] for m in [m0, m1)
PS_M1 = 1
PS_NFREE = 2  # free chunks: ps[PS_CO + NC + i] for i < nfree
PS_P = 3  # breakpoints in the profile
PS_NC = 4  # chunks allocated
PS_CO = 8


def profile_arrays(max_breakpoints: int, total: int):
    """The profile's arrays for up to ``max_breakpoints`` breakpoints, holding "all ``total``
    nodes free from -inf on" (allocated here, in Python: the kernel never allocates)."""
    nc = max_breakpoints // CH_HALF + 4  # split chunks are at least half full
    pt = np.full((nc, CH_CAP), np.inf)
    pf = np.zeros((nc, CH_CAP), np.int64)
    pb = np.zeros((nc, 4), np.int64)
    ps = np.zeros(PS_CO + 2 * nc, np.int64)
    pt[0, 0] = -np.inf
    pf[0, 0] = total
    pb[0] = (1, 0, total, total)
    ps[PS_M0], ps[PS_M1], ps[PS_NFREE], ps[PS_P], ps[PS_NC] = 0, 1, nc - 1, 1, nc
    ps[PS_CO] = 0
    ps[PS_CO + nc: PS_CO + 2 * nc - 1] = np.arange(nc - 1, 0, -1)
    return pt, pf, pb, ps


@njit(cache=True, _nrt=False)
def _ch_stats(pf, pb, c):
    """Recompute chunk ``c``'s most and fewest free nodes (over all CH_CAP places, the ones past its
    breakpoints replaced by the first: a fixed count the compiler unrolls into vector min/max,
    with no loop exit to mispredict)."""
    n = pb[c, PB_N]
    first = pf[c, 0]
    mx = first
    mn = first
    for k in range(CH_CAP):
        v = pf[c, k] if k < n else first
        mx = max(mx, v)
        mn = min(mn, v)
    pb[c, PB_MAX] = mx + pb[c, PB_ADD]
    pb[c, PB_MIN] = mn + pb[c, PB_ADD]


@njit(cache=True, _nrt=False)
def _ch_alloc(ps):
    nf = ps[PS_NFREE] - 1
    ps[PS_NFREE] = nf
    return ps[PS_CO + ps[PS_NC] + nf]


@njit(cache=True, _nrt=False)
def _ch_release(ps, c):
    nf = ps[PS_NFREE]
    ps[PS_CO + ps[PS_NC] + nf] = c
    ps[PS_NFREE] = nf + 1


@njit(cache=True, _nrt=False)
def _co_insert(ps, m, c):
    """Put chunk ``c`` at order position ``m``; returns its position (the order may have moved
    to the front of its array)."""
    m0 = ps[PS_M0]
    m1 = ps[PS_M1]
    if m1 == ps[PS_NC]:  # no room after the last: move the order to the front
        for x in range(m0, m1):
            ps[PS_CO + x - m0] = ps[PS_CO + x]
        m -= m0
        m1 -= m0
        m0 = 0
        ps[PS_M0] = 0
    for x in range(m1, m, -1):
        ps[PS_CO + x] = ps[PS_CO + x - 1]
    ps[PS_CO + m] = c
    ps[PS_M1] = m1 + 1
    return m


@njit(cache=True, _nrt=False, inline="always")
def _prof_locate(pt, pb, ps, t):
    """Position (order index, index in the chunk) of the first breakpoint whose time is >= ``t``;
    (m1, 0) if there is none."""
    m0 = ps[PS_M0]
    one = np.uint64(1)
    co = np.uint64(PS_CO)
    a = np.uint64(m0)  # (unsigned indices: numba tests every signed one for a wrap from the end)
    b = np.uint64(ps[PS_M1])
    while a < b:  # the first chunk starting at or after t
        mid = (a + b) >> one
        if pt[np.uint64(ps[co + mid]), 0] < t:
            a = mid + one
        else:
            b = mid
    if a == np.uint64(m0):
        return m0, 0
    c = np.uint64(ps[co + a - one])
    n = pb[c, PB_N]
    lo = _ch_count_before(pt, c, n, t)
    if lo < n:
        return np.int64(a) - 1, lo
    return np.int64(a), 0


@njit(cache=True, _nrt=False, inline="always")
def _ch_count_before(pt, c, n, t):
    """Chunk ``c``'s breakpoints (``n`` of them) before ``t``, counted over all CH_CAP places with
    vector compares, not a binary search's mispredicted branches."""
    lo = 0
    for u in range(CH_CAP):
        lo += (pt[c, u] < t) & (u < n)
    return lo


@njit(cache=True, _nrt=False, inline="always")
def _prof_ahead(pt, pb, ps, m, k, t):
    """``_prof_locate`` from (m, k), a position at or before the answer: whole chunks are stepped
    over forwards, no binary search over the chunk order (a move's second walk begins where its
    first ended, or a few chunks on)."""
    m1 = ps[PS_M1]
    while m < m1:
        c = np.uint64(ps[PS_CO + m])
        n = pb[c, PB_N]
        if pt[c, n - 1] >= t:
            return m, _ch_count_before(pt, c, n, t)
        m += 1
    return m1, 0


@njit(cache=True, _nrt=False)
def _prof_find(pt, pb, ps, t):
    """``_prof_locate`` as a call: one compiled copy for the places where locating is not hot.
    ``_prof_locate`` is inlined where it is (the run-cache search, the earliest fit, a move's
    two occupations): its unrolled vector count, inlined at every use, made the conservative
    kernel's cold compile ~1.3 s (13 %) longer."""
    return _prof_locate(pt, pb, ps, t)


@njit(cache=True, _nrt=False, inline="always")
def _prof_insert(pt, pf, pb, ps, m, k, t):
    """Position of the breakpoint at ``t`` (``t`` >= the first breakpoint), inserting one (with
    the free nodes of the one before) if needed; (m, k) is the position of the first breakpoint
    at or after ``t`` (``_prof_locate``'s). Inlined into its one caller, ``_prof_occupy_at``
    (twice): a call passes the profile's four arrays field by field, about 35 words, which cost
    KTH-SP2's Slurm cycles ~8 % (inlining ``_prof_occupy_at`` itself too, or ``_prof_fit_at``,
    gains a few % more but compiles the conservative kernel in 15-21 s instead of 9)."""
    if m < ps[PS_M1] and pt[ps[PS_CO + m], k] == t:
        return m, k
    if k == 0:  # append to the previous chunk (m > m0: t is after the first breakpoint)
        m -= 1
        c = ps[PS_CO + m]
        k = pb[c, PB_N]
    else:
        c = ps[PS_CO + m]
    if pb[c, PB_N] == CH_CAP:  # full: move its second half to a new chunk
        d = _ch_alloc(ps)
        for x in range(CH_HALF, CH_CAP):
            pt[d, x - CH_HALF] = pt[c, x]
            pf[d, x - CH_HALF] = pf[c, x]
        pb[d, PB_N] = CH_CAP - CH_HALF
        pb[c, PB_N] = CH_HALF
        pb[d, PB_ADD] = pb[c, PB_ADD]
        _ch_stats(pf, pb, c)
        _ch_stats(pf, pb, d)
        m = _co_insert(ps, m + 1, d) - 1
        if k > CH_HALF:
            c = d
            k -= CH_HALF
            m += 1
    n = pb[c, PB_N]
    for x in range(n, k, -1):
        pt[c, x] = pt[c, x - 1]
        pf[c, x] = pf[c, x - 1]
    pt[c, k] = t
    pf[c, k] = pf[c, k - 1]  # same free nodes as the breakpoint before: the chunk's extremes hold
    pb[c, PB_N] = n + 1
    ps[PS_P] += 1
    return m, k


@njit(cache=True, _nrt=False)
def _prof_compact(pt, pf, pb, ps):
    """Drop redundant breakpoints (same free nodes as the previous one), then merge neighbouring
    chunks that fit in CH_FILL together."""
    m0 = ps[PS_M0]
    m1 = ps[PS_M1]
    w = m0  # order positions kept
    last = np.int64(-1)
    first = True
    total = 0
    for m in range(m0, m1):
        c = ps[PS_CO + m]
        add = pb[c, PB_ADD]
        n = pb[c, PB_N]
        kept = 0
        for k in range(n):
            v = pf[c, k] + add
            if first or v != last:
                first = False
                last = v
                pt[c, kept] = pt[c, k]
                pf[c, kept] = pf[c, k]
                kept += 1
        pb[c, PB_N] = kept
        if kept == 0:
            _ch_release(ps, c)
            continue
        if w > m0:  # merge into the previous kept chunk if both fit
            p = ps[PS_CO + w - 1]
            np_ = pb[p, PB_N]
            if np_ + kept <= CH_FILL:
                shift = add - pb[p, PB_ADD]
                for k in range(kept):
                    pt[p, np_ + k] = pt[c, k]
                    pf[p, np_ + k] = pf[c, k] + shift
                pb[p, PB_N] = np_ + kept
                _ch_stats(pf, pb, p)
                _ch_release(ps, c)
                total += kept
                continue
        _ch_stats(pf, pb, c)
        ps[PS_CO + w] = c
        w += 1
        total += kept
    ps[PS_M1] = w
    ps[PS_P] = total


@njit(cache=True, _nrt=False)
def _prof_occupy_at(pt, pf, pb, ps, m, k, start, stop, n):
    """``_prof_occupy`` with (m, k) the position of the first breakpoint at or after ``start``.
    One search: the breakpoint at ``start`` is inserted there, then the walk that takes ``n``
    from each breakpoint before ``stop`` (whole chunks by their offset) ends where ``stop`` goes;
    a breakpoint inserted there copies the one before it, so it gets its ``n`` back. Returns the
    position of the first breakpoint at or after ``stop`` (a move's second walk starts there)."""
    if ps[PS_NFREE] < 2:  # two insertions may each need a chunk
        _prof_compact(pt, pf, pb, ps)
        m, k = _prof_find(pt, pb, ps, start)
    m, k = _prof_insert(pt, pf, pb, ps, m, k, start)
    one = np.uint64(1)
    zero = np.uint64(0)
    um = np.uint64(m)  # (unsigned indices: numba tests every signed one for a wrap from the end)
    uk = np.uint64(k)
    top = np.uint64(ps[PS_M1])
    co = np.uint64(PS_CO)
    touched = False  # the chunk where the walk stopped lost nodes (its extremes after the insertion)
    while um < top:
        c = np.uint64(ps[co + um])
        nn = np.uint64(pb[c, PB_N])
        if uk == zero and pt[c, nn - one] < stop:  # the whole chunk
            pb[c, PB_ADD] -= n
            pb[c, PB_MAX] -= n
            pb[c, PB_MIN] -= n
            um += one
            continue
        kw = uk
        while uk < nn and pt[c, uk] < stop:
            pf[c, uk] -= n
            uk += one
        touched = uk > kw
        if uk < nn:
            break
        if touched:
            _ch_stats(pf, pb, c)
        um += one
        uk = zero
    m1 = ps[PS_M1]
    m = np.int64(um)
    k = np.int64(uk)
    if stop != np.inf and (m == m1 or pt[ps[PS_CO + m], k] != stop):
        m, k = _prof_insert(pt, pf, pb, ps, m, k, stop)  # (into the chunk where the walk stopped, or the one before)
        c = ps[PS_CO + m]
        pf[c, k] += n
        _ch_stats(pf, pb, c)
    elif touched and m < m1:
        _ch_stats(pf, pb, ps[PS_CO + m])
    return m, k


@njit(cache=True, _nrt=False, inline="always")
def _prof_occupy(pt, pf, pb, ps, start, stop, n):
    """``n`` nodes fewer free on [start, stop) (negative ``n``: more; ``Profile.add``)."""
    m, k = _prof_find(pt, pb, ps, start)
    _prof_occupy_at(pt, pf, pb, ps, m, k, start, stop, n)


@njit(cache=True, _nrt=False)
def _prof_trim(pt, pf, pb, ps, now):
    """Make ``now`` the profile's first breakpoint (drop the past)."""
    m, k = _prof_find(pt, pb, ps, now)
    if not (m < ps[PS_M1] and pt[ps[PS_CO + m], k] == now):  # keep the last one before now
        if k > 0:
            k -= 1
        else:
            m -= 1
            k = pb[ps[PS_CO + m], PB_N] - 1
    for x in range(ps[PS_M0], m):
        c = ps[PS_CO + x]
        ps[PS_P] -= pb[c, PB_N]
        _ch_release(ps, c)
    ps[PS_M0] = m
    c = ps[PS_CO + m]
    if k > 0:
        n = pb[c, PB_N]
        for x in range(k, n):
            pt[c, x - k] = pt[c, x]
            pf[c, x - k] = pf[c, x]
        pb[c, PB_N] = n - k
        ps[PS_P] -= k
        _ch_stats(pf, pb, c)
    pt[c, 0] = now


# The scans below run from a position (order index, index in the chunk) and return where they
# stopped, so that a search alternating between them (an earliest fit; a run's start, then its
# end) locates its starting time once: a binary search over the chunks and one inside a chunk
# cost as much as a short scan.


@njit(cache=True, _nrt=False, inline="always")
def _prof_step(pb, ps, m, k):
    """The position after (m, k)."""
    k += 1
    if k == pb[ps[PS_CO + m], PB_N]:
        return m + 1, 0
    return m, k


@njit(cache=True, _nrt=False, inline="always")
def _prof_upos(ps, m, k):
    """A scan's position (m, k), the chunk order's end and its offset in ``ps`` as unsigned
    indices: numba tests every signed index for a wrap from the end (``sar``, ``and``, ``add``
    before each load)."""
    return np.uint64(m), np.uint64(k), np.uint64(ps[PS_M1]), np.uint64(PS_CO)


@njit(cache=True, _nrt=False, inline="always")
def _prof_at_least_from(pt, pf, pb, ps, m, k, need):
    """``(time, m, k)`` of the first breakpoint at or after position (m, k) with ``need`` nodes
    free; ``(+inf, m1, 0)`` if none. (Unsigned indices: ``_prof_upos``.)"""
    um, uk, top, co = _prof_upos(ps, m, k)
    one = np.uint64(1)
    zero = np.uint64(0)
    while um < top:
        c = np.uint64(ps[co + um])
        if uk == zero and pb[c, PB_MAX] < need:  # no breakpoint in this chunk has enough
            um += one
            continue
        th = need - pb[c, PB_ADD]
        n = np.uint64(pb[c, PB_N])
        while uk < n:
            if pf[c, uk] >= th:
                return pt[c, uk], np.int64(um), np.int64(uk)
            uk += one
        um += one
        uk = zero
    return np.inf, np.int64(um), np.int64(uk)


@njit(cache=True, _nrt=False, inline="always")
def _prof_below_from(pt, pf, pb, ps, m, k, need, until):
    """``(time, complete, m, k)``: the first breakpoint at or after position (m, k) with fewer
    than ``need`` nodes free (+inf if none), looking no further than the first breakpoint at or
    after ``until`` (``complete`` False if the search stopped there). (Unsigned indices.)"""
    um, uk, top, co = _prof_upos(ps, m, k)
    one = np.uint64(1)
    zero = np.uint64(0)
    while um < top:
        c = np.uint64(ps[co + um])
        n = np.uint64(pb[c, PB_N])
        if uk == zero and pb[c, PB_MIN] >= need and pt[c, n - one] < until:  # nothing here stops it
            um += one
            continue
        th = need - pb[c, PB_ADD]
        while uk < n:
            if pf[c, uk] < th:
                return pt[c, uk], True, np.int64(um), np.int64(uk)
            if pt[c, uk] >= until:
                return pt[c, uk], False, np.int64(um), np.int64(uk)
            uk += one
        um += one
        uk = zero
    return np.inf, True, np.int64(um), np.int64(uk)


@njit(cache=True, _nrt=False)
def _prof_max_before(pt, pf, pb, ps, t):
    """Most free nodes at any breakpoint before ``t`` (-BIG if there is none)."""
    best = -BIG
    for m in range(ps[PS_M0], ps[PS_M1]):
        c = ps[PS_CO + m]
        n = pb[c, PB_N]
        if pt[c, n - 1] < t:
            if pb[c, PB_MAX] > best:
                best = pb[c, PB_MAX]
            continue
        add = pb[c, PB_ADD]
        for k in range(n):
            if pt[c, k] >= t:
                return best
            v = pf[c, k] + add
            if v > best:
                best = v
        return best
    return best


@njit(cache=True, _nrt=False)
def _prof_fit_at(pt, pf, pb, ps, lo, need, duration, own, before):
    """``Profile.earliest_fit`` from ``lo``, among the starts before ``before``, and its position
    (``(+inf, m1, 0)`` if none).

    ``own`` (+inf for none): the job's own reservation [own, own + duration), counted as free
    (limits enforced: the profile never goes below 0, so with its own nodes back the job fits
    everywhere in it; only breakpoints before ``own`` can stop it). The earliest fit is the first
    breakpoint ``r`` (at or after ``lo``) of a run of breakpoints with ``need`` free nodes that
    lasts until ``r + duration``: one scan follows the run it is in (``r``, +inf outside one)
    and stops at the first breakpoint at or after the run's ``stop`` (a fit) or at a start not
    before ``before`` (none). The run is followed with selects, not branches: the only branches
    taken on the data leave the scan (or skip a chunk), so a fit costs no mispredicted branch
    per candidate (the fits of a Slurm cycle: KTH-SP2 FCFS ~30 % less time in them).
    """
    m0, k0 = _prof_locate(pt, pb, ps, lo)
    m1 = ps[PS_M1]
    r = np.inf
    stop = np.inf
    mr = m1
    kr = 0
    one = np.uint64(1)
    m = np.uint64(m0)  # (unsigned indices: numba tests every signed one for a wrap from the end)
    k = np.uint64(k0)
    top = np.uint64(m1)
    co = np.uint64(PS_CO)
    while m < top:
        c = np.uint64(ps[co + m])
        n = np.uint64(pb[c, PB_N])
        if pb[c, PB_MAX] < need:  # no breakpoint here has enough: the run ends at the first one
            t = pt[c, k]
            if t >= stop:
                return r, mr, kr
            if t >= before:
                return np.inf, m1, 0
            r = np.inf
            stop = np.inf
        elif not (r != np.inf and pb[c, PB_MIN] >= need and pt[c, n - one] < stop):  # (else the run goes on through it)
            th = need - pb[c, PB_ADD]
            while k < n:
                t = pt[c, k]
                if t >= stop:
                    return r, mr, kr
                ok = pf[c, k] >= th
                fresh = ok & (r == np.inf)
                end = t + duration
                if own < end:
                    end = own
                r = t if fresh else (r if ok else np.inf)
                stop = end if fresh else (stop if ok else np.inf)
                mr = np.int64(m) if fresh else mr
                kr = np.int64(k) if fresh else kr
                if (t >= before) & (r >= t):  # no run started before ``before``
                    return np.inf, m1, 0
                k += one
        m += one
        k = np.uint64(0)
    if r != np.inf:  # the last breakpoint's free nodes last for ever
        return r, mr, kr
    return np.inf, m1, 0


@njit(cache=True, _nrt=False, inline="always")
def _prof_fit(pt, pf, pb, ps, lo, need, duration, own, before):
    """``Profile.earliest_fit`` from ``lo``, among the starts before ``before``; +inf if none
    (``_prof_fit_at`` without the position)."""
    return _prof_fit_at(pt, pf, pb, ps, lo, need, duration, own, before)[0]


@njit(cache=True, _nrt=False, inline="always")
def _prof_back(pt, pb, ps, m, k, t):
    """The position of the first breakpoint at or after ``t``, stepping back from (m, k), a
    position at or after it (a short walk where ``t`` lies a few breakpoints before)."""
    m0 = ps[PS_M0]
    while True:
        if k > 0:
            if pt[ps[PS_CO + m], k - 1] < t:
                return m, k
            k -= 1
        else:
            if m == m0:
                return m, k
            c = ps[PS_CO + m - 1]
            n = pb[c, PB_N]
            if pt[c, n - 1] < t:
                return m, k
            m -= 1
            k = n - 1


@njit(cache=True, _nrt=False)
def _prof_rebuild(pt, pf, pb, ps, now, free, re, rn, R, q, Q, res, limit, nodes):
    """``Cluster.profile``: running jobs' releases (overdue ones right after ``now``) + reservations."""
    for m in range(ps[PS_M0], ps[PS_M1]):
        _ch_release(ps, ps[PS_CO + m])
    ps[PS_M0] = 0
    ps[PS_M1] = 0
    c = _ch_alloc(ps)
    _co_insert(ps, 0, c)
    pb[c, PB_ADD] = 0
    pt[c, 0] = now
    pf[c, 0] = free
    k = 1
    total = 1
    soon = np.nextafter(now, np.inf)
    level = free
    for r in range(R):
        e = re[r]
        t = e if e > now else soon
        level += rn[r]
        if t == pt[c, k - 1]:
            pf[c, k - 1] = level
            continue
        if k == CH_FILL:
            pb[c, PB_N] = k
            _ch_stats(pf, pb, c)
            c = _ch_alloc(ps)
            _co_insert(ps, ps[PS_M1], c)
            pb[c, PB_ADD] = 0
            k = 0
        pt[c, k] = t
        pf[c, k] = level
        k += 1
        total += 1
    pb[c, PB_N] = k
    _ch_stats(pf, pb, c)
    ps[PS_P] = total
    for i in range(Q):
        j = q[i]
        s = res[j]
        if s == s:  # reserved
            _prof_occupy(pt, pf, pb, ps, s, s + limit[j], nodes[j])


# --- run cache: the profile's runs per job size, shared by the jobs looked at in one pass ------
# For a size h, a *run* is a maximal interval [a, b) with at least h nodes free (a >= now). A
# job of h nodes and limit l fits at a run's start iff b >= a + l (with its own reservation
# counted as free: or b >= own), and never inside a run if not at its start, so its earliest
# fit is the start of the first such run. Runs are found by scanning the profile, and
# kept per size (slot) for the rest of the pass: every later job of that size reads them from a
# flat array. A run's end is only looked for as far as the job at hand needs (a *partial* run:
# at least h nodes free until b); a later, longer job scans on from b. A change of the profile
# from x on (a move, a placement) drops the runs that end at or after x (the others are
# unchanged); a new pass starts with no runs.
RC_SLOTS = 64  # sizes cached at once (round robin)
RC_RUNS = 256  # runs cached per size; a search that needs more goes on in the profile
RC_HEIGHT = 0
RC_STAMP = 1
RC_COUNT = 2
RC_PARTIAL = 3  # 1 when the last cached run's end is not known yet
RC_LONGEST = RC_RUNS  # rc_a[s, RC_LONGEST + u]: the longest of runs 0..u, rounded up (``_rc_fit``)
RC_LAST = RC_SLOTS  # rc_next[RC_LAST + s]: the end of slot s's last run (-inf: none), dense for ``_rc_changed``
RC_APOS = 2 * RC_RUNS  # rc_a[s, RC_APOS + u]: where run u's start was found (a move recalls it)
RC_POS = RC_RUNS  # rc_b[s, RC_POS + u]: where run u's end (rc_b[s, u]) was found, m * CH_CAP + k (``_rc_recall``)
EPS = 2.0 ** -40  # ... by EPS times the times' sizes: far more than any rounding of them


@njit(cache=True, _nrt=False, inline="always")
def _rc_slot(rc_i, rc_next, height_slot, active, st, h, now):
    """The cache slot of size ``h`` for this pass (emptied if it is from an earlier one)."""
    stamp = st[ST_STAMP]
    s = height_slot[np.uint64(h)]  # (unsigned indices where hot: numba tests every signed one for a wrap)
    if s < 0:
        s = st[ST_VICTIM]
        st[ST_VICTIM] = (s + 1) % RC_SLOTS
        if rc_i[s, RC_HEIGHT] >= 0:
            height_slot[rc_i[s, RC_HEIGHT]] = -1
        rc_i[s, RC_HEIGHT] = h
        height_slot[h] = s
        if rc_i[s, RC_STAMP] == stamp:  # reused within the pass: already listed as active
            rc_i[s, RC_COUNT] = 0
            rc_i[s, RC_PARTIAL] = 0
            rc_next[s] = now
            rc_next[RC_LAST + s] = -np.inf
    if rc_i[np.uint64(s), RC_STAMP] != stamp:
        rc_i[s, RC_STAMP] = stamp
        rc_i[s, RC_COUNT] = 0
        rc_i[s, RC_PARTIAL] = 0
        rc_next[s] = now
        rc_next[RC_LAST + s] = -np.inf
        active[st[ST_ACTIVE]] = s
        st[ST_ACTIVE] += 1
    return s


@njit(cache=True, _nrt=False)
def _rc_changed(rc_i, rc_b, rc_next, active, st, x, now):
    """The profile changed from ``x`` on: drop the cached runs that end at or after ``x``. A slot
    whose last run ends before ``x`` is told apart by one load from a dense array (``RC_LAST``).
    (Unsigned indices: numba tests every signed one for a wrap from the end.)"""
    zero = np.uint64(0)
    one = np.uint64(1)
    last = np.uint64(RC_LAST)
    for k in range(st[ST_ACTIVE]):
        s = np.uint64(active[k])
        if rc_next[last + s] >= x:
            c = np.uint64(rc_i[s, RC_COUNT]) - one
            while c > zero and rc_b[s, c - one] >= x:
                c -= one
            rc_i[s, RC_COUNT] = c
            rc_i[s, RC_PARTIAL] = 0  # the runs left all ended before x
            e = rc_b[s, c - one] if c > zero else -np.inf
            rc_next[s] = e if c > zero else now
            rc_next[last + s] = e


@njit(cache=True, _nrt=False, inline="always")
def _rc_new_pass(rc_i, st):
    st[ST_STAMP] += 1
    st[ST_ACTIVE] = 0


@njit(cache=True, _nrt=False, inline="always")
def _rc_recall(pt, pb, ps, p, t):
    """The position of the first breakpoint at or after ``t``, a breakpoint's time that a scan
    found at position ``p`` (m * CH_CAP + k) earlier in the pass. Breakpoint times are unique,
    so if a live place at ``p`` still holds ``t`` that is its position (three loads); if the
    layout moved it since (an insertion before it in its chunk, a split, a compaction), or ``t``
    is no longer a breakpoint, it is located anew."""
    m = np.int64(p) >> CH_BITS
    k = np.int64(p) & (CH_CAP - 1)
    if ps[PS_M0] <= m and m < ps[PS_M1]:
        c = ps[PS_CO + m]
        if k < pb[c, PB_N] and pt[c, k] == t:
            return m, k
    return _prof_locate(pt, pb, ps, t)


@njit(cache=True, _nrt=False, inline="always")
def _rc_fit(pt, pf, pb, ps, st, rc_i, rc_a, rc_b, rc_next, height_slot, active, now, need, duration, own, before):
    """``_prof_fit`` from ``now`` through the run cache of size ``need`` (same answer), and where the
    fit's breakpoint was found (``_rc_recall``; -1 if not known)."""
    s = np.uint64(_rc_slot(rc_i, rc_next, height_slot, active, st, need, now))  # (unsigned indices)
    one = np.uint64(1)
    two = np.uint64(2)
    n = np.uint64(rc_i[s, RC_COUNT])  # the runs cached reach ``before``, all those before it shorter than the
    if (n >= two and rc_a[s, n - one] >= before and rc_b[s, n - two] < own  # limit and ending before
            and rc_a[s, np.uint64(RC_LONGEST) + n - two] < duration - EPS * duration):  # ``own``: no fit, no walk
        return np.inf, -1.0
    known = n - np.uint64(rc_i[s, RC_PARTIAL])  # cached runs whose end is known: a tight loop (no
    u = np.uint64(0)  # stores, so the bounds stay in registers; ~8 runs a search)
    while u < known:
        a = rc_a[s, u]
        if a >= before:
            return np.inf, -1.0
        stop = a + duration
        if own < stop:
            stop = own
        if rc_b[s, u] >= stop:
            return a, rc_a[s, np.uint64(RC_APOS) + u]
        u += one
    i = u  # (unsigned, as above)
    m = np.int64(-1)  # (m, k): the position of the breakpoint at ``at`` (m < 0: none yet), where
    k = np.int64(0)  # the scan that found a run's start or end stopped, so that the next scan
    at = np.inf  # (its end; the next run's start) goes on from there without locating it
    longest_at = np.uint64(RC_LONGEST)
    while True:
        if i == np.uint64(rc_i[s, RC_COUNT]):
            if i == np.uint64(RC_RUNS):  # cache full: go on searching the profile after the last cached run
                return _prof_fit(pt, pf, pb, ps, rc_b[s, i - one], need, duration, own, before), -1.0
            if m < 0 or rc_next[s] != at:  # (rc_next: the end of run i - 1, or now)
                p = rc_b[s, np.uint64(RC_POS) + i - one] if i > np.uint64(0) else ps[PS_M0] * CH_CAP
                m, k = _rc_recall(pt, pb, ps, p, rc_next[s])
            a, m, k = _prof_at_least_from(pt, pf, pb, ps, m, k, need)
            at = a
            if a == np.inf:
                return np.inf, -1.0  # (cannot happen: the last run lasts forever)
            rc_a[s, i] = a
            rc_b[s, i] = a
            rc_next[np.uint64(RC_LAST) + s] = a
            rc_b[s, np.uint64(RC_POS) + i] = m * CH_CAP + k
            rc_a[s, np.uint64(RC_APOS) + i] = m * CH_CAP + k
            rc_i[s, RC_COUNT] = np.int64(i + one)
            rc_i[s, RC_PARTIAL] = 1
        a = rc_a[s, i]
        if a >= before:
            return np.inf, -1.0
        b = rc_b[s, i]
        stop = a + duration
        if own < stop:
            stop = own
        if b < stop and i + one == np.uint64(rc_i[s, RC_COUNT]) and rc_i[s, RC_PARTIAL] == 1:
            if m < 0 or b != at:
                m, k = _rc_recall(pt, pb, ps, rc_b[s, np.uint64(RC_POS) + i], b)
            if m < ps[PS_M1] and pt[ps[PS_CO + m], k] == b:  # the end is after b
                m, k = _prof_step(pb, ps, m, k)
            b, complete, m, k = _prof_below_from(pt, pf, pb, ps, m, k, need, stop)
            at = b
            rc_b[s, i] = b
            rc_next[np.uint64(RC_LAST) + s] = b
            rc_b[s, np.uint64(RC_POS) + i] = m * CH_CAP + k
            if complete:
                rc_i[s, RC_PARTIAL] = 0
                rc_next[s] = b
                longest = b - a + EPS * (abs(a) + abs(b))  # (b - a < the limit then means b < a + limit)
                if i > np.uint64(0):
                    longest = max(longest, rc_a[s, longest_at + i - one])
                rc_a[s, longest_at + i] = longest
        if b >= stop:
            return a, rc_a[s, np.uint64(RC_APOS) + i]
        i += one


# The versions test of the compression rounds (``conservative_steps``). A job that a round looks at
# and does not move has no fit before its reservation at that moment (its search failed or a
# test proved it); if it moved, none before its new one. Within a pass the profile grows only on
# the moved jobs' old slots minus their new ones. So a job can move later only if a move since
# grew the profile at an instant before its reservation (where it lacked nodes then): it is
# passed over if every growth since starts at or after its reservation, and otherwise searched
# only before the latest growth end. Per block of BLOCK queue places: the version (moves logged
# in the pass so far) when a round began to look at it whole, and the latest reservation in it
# (reservations only move earlier within a pass); a block whose latest reservation is at or
# before every growth since its version is passed over whole, without a look at its jobs. A
# round logs each move's growth; when it ends, the suffix minima of the growth starts and maxima
# of the ends over its moves answer "since a version of that round" in O(1) in the next round
# (with that round's own running minimum and maximum). Every round of a pass logs, the first
# too: with the state in st/sf it costs KTH x1.4 nothing measurable (RESULTS.md, cons26).
BLOCK_BITS = 4  # blocks of 16 places
BLOCK = 1 << BLOCK_BITS
GL_MOVES = 1 << 15  # moves logged per pass; past them the test is off for the rest of the pass
GL_START = 0  # rows of the log: each move's growth start and end, per round suffix min and max
GL_END = 1
GL_MIN = 2
GL_MAX = 3


def versions_arrays(n: int):
    """The versions test's arrays for a queue of at most ``n`` jobs: each block's version and
    latest reservation, the pass's growth log."""
    blocks = (n >> BLOCK_BITS) + 1
    return np.full(blocks, -1, np.int64), np.empty(blocks), np.empty((4, GL_MOVES))


@njit(cache=True, _nrt=False)
def _vt_pass(st, sf):
    """A pass starts: an empty log; no block's version (all from earlier passes) is tested."""
    st[ST_VERSION] += 1
    st[ST_VBASE] = st[ST_VERSION]
    st[ST_VLO] = BIG
    st[ST_VHI] = st[ST_VERSION]
    st[ST_LOG] = 1
    sf[SF_GMIN] = np.inf
    sf[SF_GMAX] = -np.inf
    sf[SF_S1] = np.inf
    sf[SF_FB] = -np.inf


@njit(cache=True, _nrt=False)
def _vt_round_end(st, sf, gl):
    """A round ends: the suffix minima and maxima of its moves' growths (if it logged them),
    so that the next round tests the blocks whose version is in it."""
    base = st[ST_VBASE]
    st[ST_VLO] = BIG
    if st[ST_TRACK] == 1:
        lo = np.inf
        hi = -np.inf
        for k in range(st[ST_VERSION] - base - 1, st[ST_VHI] - base - 1, -1):
            lo = min(lo, gl[GL_START, k])
            hi = max(hi, gl[GL_END, k])
            gl[GL_MIN, k] = lo
            gl[GL_MAX, k] = hi
        st[ST_VLO] = st[ST_VHI]
    st[ST_VHI] = st[ST_VERSION]
    sf[SF_GMIN] = np.inf
    sf[SF_GMAX] = -np.inf
    sf[SF_S1] = np.inf


@njit(cache=True, _nrt=False)
def _vt_move(st, sf, gl, gs, ge):
    """Log a move's growth [gs, ge); False when the log is full (no test for the rest of the pass)."""
    k = st[ST_VERSION] - st[ST_VBASE]
    if k >= GL_MOVES:
        st[ST_LOG] = 0
        st[ST_TRACK] = 0
        st[ST_VLO] = BIG
        sf[SF_S1] = np.inf
        return False
    gl[GL_START, k] = gs
    gl[GL_END, k] = ge
    sf[SF_GMIN] = min(sf[SF_GMIN], gs)
    sf[SF_GMAX] = max(sf[SF_GMAX], ge)
    st[ST_VERSION] += 1
    return True


@njit(cache=True, _nrt=False)
def _vt_block(st, sf, gl, bv, bmax, i, bm):
    """Block ``i >> BLOCK_BITS`` starts (the one before it was looked at whole in this round,
    its latest reservation ``bm``): the earliest growth start since its version (-inf: not
    known), and whether no job of the block can move. The block's own moves need not lower it:
    a job moves only through a growth since its last look that starts before its reservation,
    and its own growth starts at or after that reservation; so a growth of the block's moves
    starting before a later job's reservation implies one from before the block that does."""
    b = i >> BLOCK_BITS
    if i > 0:
        bv[b - 1] = st[ST_VBLOCK]
        bmax[b - 1] = bm
    st[ST_VBLOCK] = st[ST_VERSION]
    sf[SF_S1] = np.inf
    v = bv[b]
    if v < st[ST_VLO]:
        return -np.inf, False
    s0 = np.inf
    s1 = -np.inf
    if v < st[ST_VHI]:
        s0 = gl[GL_MIN, v - st[ST_VBASE]]
        s1 = gl[GL_MAX, v - st[ST_VBASE]]
    sf[SF_S1] = s1
    g0 = min(s0, sf[SF_GMIN])
    return g0, g0 >= bmax[b]


@njit(cache=True, _nrt=False)
def _note_failure(sf, h, lim, own, before):
    """Keep a failed search (``h`` nodes, limit ``lim``, reserved at ``own``, starts before
    ``before``): until the profile changes, a job B that needs at least as many nodes for at
    least as long, is reserved no earlier and is searched before no later fails too. Proof: a
    search fits at the start ``a'`` of a run of breakpoints with B's nodes free that lasts until
    min(a' + B's limit, B's reservation) (its own slot counts as free after that), with
    ``a'`` < B's bound <= ``before``. Every instant with B's nodes free has ``h`` free, so
    ``a'`` lies in a run [a, b) with ``h`` free, a <= a' < ``before``, and b >= min(a' + B's
    limit, B's reservation) >= min(a + ``lim``, ``own``): the failed search would have taken
    ``a``. A move (the only change of the profile inside a compression loop) forgets it: one
    the kept failure could survive (its new start at or after min(``before`` + ``lim``,
    ``own``), past every run end it read) saved 0.2 % of the searches (RESULTS.md, cons27)."""
    sf[SF_FH] = h
    sf[SF_FL] = lim
    sf[SF_FO] = own
    sf[SF_FB] = before


ORDER_COMPRESS_FIRST = 0
ORDER_INTERLEAVED = 1
ORDER_ONE_PASS = 2


@njit(cache=True, _nrt=False)
def _cons_visit(pt, pf, pb, ps, st, sf, rc_i, rc_a, rc_b, rc_next, height_slot, active,
                j, now, nodes, limit, res, enforce):
    """Place waiting job ``j`` (no reservation yet), or re-place it with limits not enforced,
    as ``place`` in ``ConservativeBackfill.select`` does; returns whether its reservation
    changed. (A reserved job with limits enforced is re-placed inline in the compression loop
    of :func:`conservative_steps`, the hot path.)"""
    nj = nodes[j]
    lj = limit[j]
    old = res[j]
    if old != old:  # no reservation: placed at its earliest fit
        if enforce:
            start = _rc_fit(pt, pf, pb, ps, st, rc_i, rc_a, rc_b, rc_next, height_slot, active,
                            now, nj, lj, np.inf, np.inf)[0]
        else:
            start = _prof_fit(pt, pf, pb, ps, now, nj, lj, np.inf, np.inf)
        if start != np.inf:
            _prof_occupy(pt, pf, pb, ps, start, start + lj, nj)
            if enforce:
                _rc_changed(rc_i, rc_b, rc_next, active, st, start, now)
        res[j] = start
        st[ST_NRES] += 1
        return True
    if not enforce:  # profile rebuilt this pass: take it out, put it back (as the reference)
        _prof_occupy(pt, pf, pb, ps, old, old + lj, -nj)
        start = _prof_fit(pt, pf, pb, ps, now, nj, lj, np.inf, np.inf)
        _prof_occupy(pt, pf, pb, ps, start, start + lj, nj)
        res[j] = start
        return start != old
    # a reserved job with limits enforced: re-placed in conservative_steps' compression loop
    return False


@njit(cache=True, _nrt=False)
def _cons_move(pt, pf, pb, ps, st, sf, rc_b, rc_i, rc_next, active, j, start, at, now, nodes, limit, res):
    """Move reserved job ``j`` to ``start`` (earlier than its reservation; ``at``: where the run
    cache found that breakpoint, ``_rc_recall``): the profile, the run cache and the grown
    region follow."""
    nj = nodes[j]
    lj = limit[j]
    old = res[j]
    mid = min(start + lj, old)  # the new slot less the old one, then the old less the new: where the
    back = max(start + lj, old)  # two overlap nothing changes, and the walks do not go there
    m, k = _rc_recall(pt, pb, ps, at, start)  # (no binary search over the chunk order: the moves are hot)
    m, k = _prof_occupy_at(pt, pf, pb, ps, m, k, start, mid, nj)
    m, k = _prof_ahead(pt, pb, ps, m, k, back)  # from where the take ended (mid <= back)
    _prof_occupy_at(pt, pf, pb, ps, m, k, back, old + lj, -nj)
    _rc_changed(rc_i, rc_b, rc_next, active, st, start, now)
    res[j] = start
    if old + lj > sf[SF_GROWN]:
        sf[SF_GROWN] = old + lj


@njit(cache=True, _nrt=False)
def conservative_steps(submit, limit, nodes, dur, arrivals, rank, total, enforce, order,
                       begin, end, est, res, placed, re, rj, rn, hk, hj, q, pt, pf, pb, ps,
                       rc_i, rc_a, rc_b, rc_next, height_slot, active, bv, bmax, gl, st, sf, budget):
    """Conservative backfilling (``ConservativeBackfill``) from state ``st``/``sf``, for about
    ``budget`` units of work (an event, or a waiting job looked at).

    Which reserved jobs can move (limits enforced). Right after a plan that is a fixpoint
    (``compress_first`` and ``interleaved`` end every pass in one; ``one_pass`` only when its
    round moved nothing), no reserved job fits at any start before its reservation. Afterwards
    the profile grows only on [now, e) when a job ends early at ``now`` (estimated end e) and
    on a moved job's old slot; it never grows anywhere else (placing jobs only shrinks it).
    ``grown`` (``sf[SF_GROWN]``) is the largest end of these regions since that fixpoint. A job
    reserved at s that now fits at some start t < s did not fit there before, so [t, t + limit)
    meets a grown region: t < grown. And t is a breakpoint with at least its nodes free before
    its own slot begins, so it needs ``nodes <= F``, the most free nodes at a breakpoint in
    [now, grown). A job failing either test keeps its reservation without a look at the
    profile (O(1)); the others get one bounded earliest-fit search, O(log P) per hole too short
    for them before min(s, grown). F is found again when ``grown`` changes, but after a move
    only when a job asks for more nodes than the stale F (which may be too low or too high: a
    job it would pass over is tested against F found again, one it lets through is searched,
    exactly); a scan after every move was 6 % of the LANL-resampled row's time. The versions
    test (``_vt_*``, above) passes over a job, or a whole block of the queue, that no move since
    it was last looked at can help, and bounds the other searches by the latest growth end since.
    A search that the last failed one since the profile changed dominates (``_note_failure``:
    as many nodes or more, as long or longer, reserved no earlier, bounded no later) is not
    made: half of the LANL-resampled row's searches. Skipped jobs are exactly those the
    reference re-places at their old start, so the schedule and the reference's round structure
    are unchanged.
    With limits not enforced the profile is rebuilt and every job re-placed at every pass, as
    the reference does (overdue jobs release "right after now", which moves with ``now``).

    Slices. A compression round and the placement of a pass's arrivals both stop when the work
    done in this call reaches 4 x ``budget`` and go on at the next call from the saved queue
    index (``ST_PASS_AT``, ``ST_PHASE``, the round's state; the run cache stays valid, as it
    belongs to the pass); the remaining loops of a pass are O(queue) with O(1) bodies.
    """
    max_rounds = 1000 + 100 * submit.shape[0]
    free, R, H, Q, a, done, now = _load_counts(st, sf)
    earliest = sf[SF_EARLIEST]
    wake = sf[SF_WAKE]
    n_arr = arrivals.shape[0]
    status = 0
    work = 0
    resume = st[ST_PASS_AT] >= 0  # a pass was cut short by the budget
    place_from = 0  # where this pass's arrival placement starts
    while a < n_arr or H > 0 or (Q > 0 and wake < np.inf) or resume:
        if resume:  # go on where the budget stopped the last call, in the same pass
            resume = False
            plan = True
            compress = st[ST_PHASE] == PHASE_COMPRESS
            exact = st[ST_EXACT] == 1
            i = st[ST_PASS_AT]
            place_from = 0 if compress else i
            scan_to = st[ST_SCAN_TO]
            last_move = st[ST_LAST_MOVE]
            rounds = st[ST_ROUNDS]
            st[ST_PASS_AT] = -1
            nb = BIG  # (no block of this round is looked at whole: none gets a version)
            sf[SF_S1] = np.inf
        else:
            go, now, work = _next_wake(submit, arrivals, a, hk, H, now, wake, work, budget)
            if not go:
                status = 1
                break
            if enforce:
                _prof_trim(pt, pf, pb, ps, now)
            if st[ST_FIXPOINT] == 1:
                sf[SF_GROWN] = -np.inf

            # 1. completions
            freed_early = False
            completed = False
            while H > 0 and hk[0] <= now:
                j, H, R = _finish_next(hk, hj, H, re, rj, rn, R, est)
                e = est[j]
                free += nodes[j]
                done += 1
                completed = True
                if end[j] < e:
                    freed_early = True
                    if enforce:
                        _prof_occupy(pt, pf, pb, ps, now, e, -nodes[j])
                        if e > sf[SF_GROWN]:
                            sf[SF_GROWN] = e

            # 2. arrivals, inserted in priority order
            Q, a = _enqueue_arrivals(q, Q, rank, submit, arrivals, a, now)

            if Q == 0:
                continue

            # 3. one pass (ConservativeBackfill.select)
            replan = (freed_early or (completed and order == ORDER_ONE_PASS)  # one_pass: at every end
                      or (not enforce) or earliest < now)
            if not replan and st[ST_NRES] == Q and earliest != now:
                continue  # the plan stands and nothing is due
            work += Q
            plan = replan or st[ST_NRES] != Q  # else the plan stands; only start what is due
            compress = replan
            exact = False
            if plan:
                _rc_new_pass(rc_i, st)
                _vt_pass(st, sf)
                if (not enforce) or earliest < now:
                    for i in range(Q):
                        j = q[i]
                        if res[j] < now:
                            res[j] = np.nan
                            st[ST_NRES] -= 1
                    _prof_rebuild(pt, pf, pb, ps, now, free, re, rn, R, q, Q, res, limit, nodes)
                    sf[SF_GROWN] = np.inf  # no fixpoint to build on
                    exact = True
                else:  # every scan of the pass is shorter without redundant breakpoints: one
                    _prof_compact(pt, pf, pb, ps)  # O(P) pass pays (KTH x1.4 -15 %, RESULTS.md)
            i = 0
            scan_to = Q
            last_move = -1
            rounds = 1
            place_from = 0
            st[ST_TRACK] = 1 if enforce else 0
            nb = 0 if st[ST_TRACK] == 1 else BIG  # the next block start (BIG: no block test)
        if plan:
            g0 = -np.inf  # the earliest growth start since the current block's version (-inf: unknown)
            bm = -np.inf  # the latest reservation in the current block
            grown_seen = np.nan
            F = np.int64(0)
            stale = False  # a job moved since F was found (F may be too low; too high is safe)
            if compress:  # compression rounds over the queue (interleaved) or the placed jobs
                while True:
                    while i < Q:
                        if i >= scan_to and last_move < 0:
                            break  # nothing before the last mover moved: the rest cannot move
                        if work >= 4 * budget:  # a long pass: let the caller act (Ctrl-C) meanwhile
                            st[ST_PASS_AT] = i
                            st[ST_SCAN_TO] = scan_to
                            st[ST_LAST_MOVE] = last_move
                            st[ST_ROUNDS] = rounds
                            st[ST_EXACT] = 1 if exact else 0
                            st[ST_PHASE] = PHASE_COMPRESS
                            break
                        if i >= nb:  # a block starts (the versions test)
                            g0, skip = _vt_block(st, sf, gl, bv, bmax, i, bm)
                            nb = i + BLOCK
                            bm = -np.inf
                            if skip:  # no job of the block can move: pass it over whole
                                bm = bmax[i >> BLOCK_BITS]
                                i = min(nb, Q)
                                work += 1
                                continue
                        j = q[np.uint64(i)]
                        ju = np.uint64(j)  # (unsigned: numba tests every signed index for a wrap from the end)
                        i += 1
                        if order != ORDER_INTERLEAVED and placed[ju] == 0:
                            continue
                        if enforce and sf[SF_GROWN] != grown_seen:  # F after every change of grown
                            grown_seen = sf[SF_GROWN]
                            F = _prof_max_before(pt, pf, pb, ps, grown_seen)
                            stale = False
                            work += ps[PS_P] >> 4  # a scan of the profile
                        work += 1
                        old = res[ju]
                        if enforce and old == old:  # a reserved job: the hot path, inline
                            bm = max(bm, old)
                            grown = sf[SF_GROWN]
                            if not exact and (old <= now or grown <= now):
                                continue  # provably cannot move (the O(1) test; see above)
                            if g0 >= old:
                                continue  # nothing grew before its reservation since its block's version
                            if not exact and nodes[ju] > F:
                                if stale:  # found again only when it would pass the job over
                                    F = _prof_max_before(pt, pf, pb, ps, grown_seen)
                                    stale = False
                                    work += ps[PS_P] >> 4
                                if nodes[ju] > F:
                                    continue
                            before = old if old < grown else grown
                            before = min(before, max(sf[SF_S1], sf[SF_GMAX]))  # a fit starts before the
                            if before <= now:  # latest growth end since its block's version
                                continue
                            if (before <= sf[SF_FB] and old >= sf[SF_FO] and limit[ju] >= sf[SF_FL]
                                    and nodes[ju] >= sf[SF_FH]):
                                continue  # the last failed search's job needed less: this one fails too
                            start, at = _rc_fit(pt, pf, pb, ps, st, rc_i, rc_a, rc_b, rc_next, height_slot, active,
                                                now, nodes[ju], limit[ju], old, before)
                            if start == np.inf:
                                _note_failure(sf, nodes[ju], limit[ju], old, before)
                            else:
                                sf[SF_FB] = -np.inf
                                _cons_move(pt, pf, pb, ps, st, sf, rc_b, rc_i, rc_next, active, j, start, at, now,
                                           nodes, limit, res)
                                last_move = i - 1
                                stale = True
                                if st[ST_TRACK] == 1:  # log the growth: the old slot minus the new one
                                    if not _vt_move(st, sf, gl, max(old, start + limit[j]), old + limit[j]):
                                        g0 = -np.inf  # the log is full
                                        nb = BIG
                            continue
                        if _cons_visit(pt, pf, pb, ps, st, sf, rc_i, rc_a, rc_b, rc_next, height_slot, active,
                                       j, now, nodes, limit, res, enforce):
                            last_move = i - 1
                            grown_seen = np.nan
                            sf[SF_FB] = -np.inf
                        bm = max(bm, res[j])
                    if st[ST_PASS_AT] >= 0:
                        break
                    if nb != BIG and i >= Q:  # the last block was looked at whole too
                        bv[(Q - 1) >> BLOCK_BITS] = st[ST_VBLOCK]
                        bmax[(Q - 1) >> BLOCK_BITS] = bm
                    if last_move < 0 or (order == ORDER_ONE_PASS):
                        break
                    scan_to = last_move
                    last_move = -1
                    i = 0
                    rounds += 1
                    _vt_round_end(st, sf, gl)
                    st[ST_TRACK] = 1 if enforce and st[ST_LOG] == 1 else 0
                    nb = 0 if st[ST_TRACK] == 1 else BIG
                    g0 = -np.inf
                    if rounds > max_rounds:
                        return -1
                if st[ST_PASS_AT] >= 0:
                    status = 1
                    break
                if order == ORDER_ONE_PASS:
                    st[ST_FIXPOINT] = 1 if last_move < 0 else 0
            # arrivals (every new job, in priority order)
            for i in range(place_from, Q):
                j = q[i]
                if placed[j] == 0 and res[j] != res[j]:
                    if work >= 4 * budget:  # many arrivals at once: let the caller act meanwhile
                        st[ST_PASS_AT] = i
                        st[ST_EXACT] = 1 if exact else 0
                        st[ST_PHASE] = PHASE_PLACE
                        break
                    work += 1 + (ps[PS_P] >> 6)  # a placement scans part of the profile
                    _cons_visit(pt, pf, pb, ps, st, sf, rc_i, rc_a, rc_b, rc_next, height_slot, active,
                                j, now, nodes, limit, res, enforce)
            if st[ST_PASS_AT] >= 0:
                status = 1
                break
            for i in range(Q):
                placed[q[i]] = 1

        # start every job whose reservation is now, in priority order
        w = 0
        earliest = np.inf
        for i in range(Q):
            j = q[i]
            s = res[j]
            if s == now:
                R, H = _launch(j, now, now + limit[j], begin, end, est, dur, nodes, re, rj, rn, R, hk, hj, H)
                free -= nodes[j]
                res[j] = np.nan
                placed[j] = 0
                st[ST_NRES] -= 1
            else:
                q[w] = j
                w += 1
                if s < earliest:
                    earliest = s
        Q = w
        if free < 0:  # as the reference: a plan that over-commits the machine is a bug
            return -2
        wake = np.inf
        if order == ORDER_ONE_PASS and Q > 0 and (enforce or earliest > np.nextafter(now, np.inf)):
            wake = earliest
    _store_counts(st, sf, free, R, H, Q, a, done, now)
    sf[SF_EARLIEST] = earliest
    sf[SF_WAKE] = wake
    return status


# Before any kernel of this package runs (``_extended`` and ``shared`` import this module
# first): drop cached machine code that was compiled from other sources (``cache_guard``).
_cache = getattr(queue_policy_steps, "_cache", None)  # numba's per-function cache (None: caching off)
if _cache is not None and getattr(_cache, "cache_path", None):
    from .cache_guard import drop_stale_machine_code

    drop_stale_machine_code(_cache.cache_path)
