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
ST_ROOT = 7  # profile treap: root node
ST_FREELIST = 8  # profile treap: first recycled node (0: none)
ST_USED = 9  # profile treap: nodes ever allocated (node 0 is the null sentinel)
ST_RNG = 10  # profile treap: xorshift state for node priorities
ST_FIXPOINT = 11  # 1 when the plan is a fixpoint (every reservation at its earliest fit)
ST_STAMP = 12  # run cache: number of the current planning pass
ST_ACTIVE = 13  # run cache: slots in use in this pass
ST_VICTIM = 14  # run cache: next slot to reuse
ST_SIZE = 15
SF_NOW = 0  # simulated time reached
SF_EARLIEST = 1  # earliest reservation
SF_GROWN = 2  # end of the region where the profile grew since the last fixpoint
SF_WAKE = 3  # conservative one_pass: an event at the earliest reservation (ConservativeBackfill.wake_at)
SF_SIZE = 4


@njit(cache=True)
def queue_policy_steps(submit, limit, nodes, dur, arrivals, rank, total, mode,
                       begin, end, est, job_of_rank, tn, tl, re, rj, rn, hk, hj, st, sf, budget):
    """none / easy / easy_drevt from state ``st``/``sf``, for about ``budget`` events."""
    size = tn.shape[0] // 2
    use_extra = mode == MODE_EASY
    strict = mode == MODE_EASY_DREVT
    free = st[ST_FREE]
    R = st[ST_R]
    H = st[ST_H]
    Q = st[ST_Q]
    a = st[ST_A]
    done = st[ST_DONE]
    head = st[ST_HEAD]  # smallest waiting rank (size: nobody waits)
    now = sf[SF_NOW]
    n_arr = arrivals.shape[0]
    status = 0
    events = 0
    while a < n_arr or H > 0:
        if events >= budget:
            status = 1
            break
        events += 1
        t_arr = submit[arrivals[a]] if a < n_arr else np.inf
        t_end = hk[0] if H > 0 else np.inf
        now = t_arr if t_arr < t_end else t_end

        # 1. completions
        while H > 0 and hk[0] <= now:
            j = hj[0]
            H = _heap_pop(hk, hj, H)
            R = _run_remove(re, rj, rn, R, est[j], j)
            free += nodes[j]
            done += 1

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
    st[ST_FREE] = free
    st[ST_R] = R
    st[ST_H] = H
    st[ST_Q] = Q
    st[ST_A] = a
    st[ST_DONE] = done
    st[ST_HEAD] = head
    sf[SF_NOW] = now
    return status


# --- conservative: availability profile as a treap of breakpoint deltas ----------------------
# The profile (free nodes as a step function of time) is stored as its *changes*: one node per
# breakpoint time ``K[x]`` holding ``T[x, D]``, the change in free nodes there, so the free
# nodes on [K[x], next key) are the prefix sum of the deltas up to x. Occupying [a, b) is two
# point updates (-n at a, +n at b); a delta that drops to 0 removes its node, so every node
# is a real breakpoint (no compaction). The nodes form a treap (binary search tree on the key,
# heap on a random priority, expected depth O(log P) for P breakpoints); each node also keeps,
# for its subtree, the sum of deltas and the largest and smallest prefix sum, which turns the
# questions conservative backfilling asks into O(log P) descents:
#   "first breakpoint >= t with at least n free" (_tp_first_at_least),
#   "first breakpoint > t with fewer than n free" (_tp_first_below),
#   "most free nodes at any breakpoint before t" (_tp_max_before).
# Node 0 is the null sentinel (sum 0, max prefix -BIG, min prefix +BIG). The profile only ever
# holds breakpoints >= now after _tp_trim (the past is folded into the breakpoint at now).
T_D = 0  # delta at this breakpoint
T_SUM = 1  # subtree: sum of deltas
T_MAX = 2  # subtree: largest prefix sum (free nodes) at its breakpoints
T_MIN = 3  # subtree: smallest prefix sum
T_LEFT = 4
T_RIGHT = 5
T_PRI = 6  # heap priority
T_FIELDS = 7
PATH = 256  # deepest treap path handled (expected depth ~ 2 ln P; P <= 2 * jobs + running)


@njit(cache=True)
def _tp_pull(T, x):
    l = T[x, T_LEFT]
    r = T[x, T_RIGHT]
    base = T[l, T_SUM] + T[x, T_D]
    mx = base
    if T[l, T_MAX] > mx:
        mx = T[l, T_MAX]
    if base + T[r, T_MAX] > mx:
        mx = base + T[r, T_MAX]
    mn = base
    if T[l, T_MIN] < mn:
        mn = T[l, T_MIN]
    if base + T[r, T_MIN] < mn:
        mn = base + T[r, T_MIN]
    T[x, T_SUM] = base + T[r, T_SUM]
    T[x, T_MAX] = mx
    T[x, T_MIN] = mn


@njit(cache=True)
def _tp_reset(T, st):
    """An empty profile (no node: no free node anywhere)."""
    T[0, T_D] = 0
    T[0, T_SUM] = 0
    T[0, T_MAX] = -BIG
    T[0, T_MIN] = BIG
    T[0, T_LEFT] = 0
    T[0, T_RIGHT] = 0
    st[ST_ROOT] = 0
    st[ST_FREELIST] = 0
    st[ST_USED] = 1


@njit(cache=True)
def _tp_link(T, st, parent, old, new):
    """Make ``new`` the child of ``parent`` where ``old`` was (parent 0: the root)."""
    if parent == 0:
        st[ST_ROOT] = new
    elif T[parent, T_LEFT] == old:
        T[parent, T_LEFT] = new
    else:
        T[parent, T_RIGHT] = new


@njit(cache=True)
def _tp_add(K, T, st, path, t, delta):
    """Add ``delta`` to the change in free nodes at time ``t`` (from ``t`` on)."""
    if delta == 0:
        return
    depth = 0
    x = st[ST_ROOT]
    while x != 0:
        path[depth] = x
        depth += 1
        k = K[x]
        if t == k:
            break
        x = T[x, T_LEFT] if t < k else T[x, T_RIGHT]
    if x != 0:
        T[x, T_D] += delta
        depth -= 1  # path[:depth] are x's ancestors
        if T[x, T_D] == 0:  # no change here any more: remove the breakpoint
            while True:
                l = T[x, T_LEFT]
                r = T[x, T_RIGHT]
                parent = path[depth - 1] if depth > 0 else 0
                if l == 0 or r == 0:
                    _tp_link(T, st, parent, x, l if l != 0 else r)
                    break
                if T[l, T_PRI] > T[r, T_PRI]:  # rotate x down to the right
                    T[x, T_LEFT] = T[l, T_RIGHT]
                    T[l, T_RIGHT] = x
                    top = l
                else:
                    T[x, T_RIGHT] = T[r, T_LEFT]
                    T[r, T_LEFT] = x
                    top = r
                _tp_link(T, st, parent, x, top)
                path[depth] = top
                depth += 1
            T[x, T_LEFT] = st[ST_FREELIST]
            st[ST_FREELIST] = x
        else:
            _tp_pull(T, x)
    else:  # a new breakpoint: a leaf, then rotated up to its heap place
        y = st[ST_FREELIST]
        if y != 0:
            st[ST_FREELIST] = T[y, T_LEFT]
        else:
            y = st[ST_USED]
            st[ST_USED] = y + 1
        r = st[ST_RNG]  # xorshift64
        r ^= (r << 13) & 0x7FFFFFFFFFFFFFFF
        r ^= r >> 7
        r ^= (r << 17) & 0x7FFFFFFFFFFFFFFF
        r &= 0x7FFFFFFFFFFFFFFF
        st[ST_RNG] = r
        K[y] = t
        T[y, T_D] = delta
        T[y, T_LEFT] = 0
        T[y, T_RIGHT] = 0
        T[y, T_PRI] = r
        _tp_pull(T, y)
        if depth == 0:
            st[ST_ROOT] = y
        elif t < K[path[depth - 1]]:
            T[path[depth - 1], T_LEFT] = y
        else:
            T[path[depth - 1], T_RIGHT] = y
        while depth > 0 and T[y, T_PRI] > T[path[depth - 1], T_PRI]:
            p = path[depth - 1]
            if T[p, T_LEFT] == y:
                T[p, T_LEFT] = T[y, T_RIGHT]
                T[y, T_RIGHT] = p
            else:
                T[p, T_RIGHT] = T[y, T_LEFT]
                T[y, T_LEFT] = p
            _tp_pull(T, p)
            _tp_pull(T, y)
            depth -= 1
            _tp_link(T, st, path[depth - 1] if depth > 0 else 0, p, y)
    for i in range(depth - 1, -1, -1):
        _tp_pull(T, path[i])


@njit(cache=True)
def _tp_occupy(K, T, st, path, start, stop, n):
    """``n`` nodes fewer free on [start, stop) (negative ``n``: more)."""
    _tp_add(K, T, st, path, start, -n)
    if stop != np.inf:
        _tp_add(K, T, st, path, stop, n)


@njit(cache=True)
def _tp_trim(K, T, st, path, now):
    """Fold every breakpoint before ``now`` into one at ``now`` (the past is never asked about)."""
    acc = 0
    while True:
        x = st[ST_ROOT]
        if x == 0:
            break
        while T[x, T_LEFT] != 0:
            x = T[x, T_LEFT]
        if K[x] >= now:
            break
        d = T[x, T_D]
        acc += d
        _tp_add(K, T, st, path, K[x], -d)  # drops to 0: removed
    _tp_add(K, T, st, path, now, acc)


@njit(cache=True)
def _tp_first_at_least(K, T, st, nodes_stack, off_stack, lo, need, before):
    """Key of the first breakpoint with key >= ``lo`` and >= ``need`` free nodes, if it is
    before ``before``; else +inf. The nodes with key >= lo are, in order, each node where the
    search for ``lo`` turns left followed by its right subtree, deepest first."""
    x = st[ST_ROOT]
    off = 0
    sp = 0
    while x != 0:
        if K[x] < lo:
            off += T[T[x, T_LEFT], T_SUM] + T[x, T_D]
            x = T[x, T_RIGHT]
        else:
            nodes_stack[sp] = x
            off_stack[sp] = off
            sp += 1
            x = T[x, T_LEFT]
    for i in range(sp - 1, -1, -1):
        x = nodes_stack[i]
        if K[x] >= before:
            return np.inf
        p = off_stack[i] + T[T[x, T_LEFT], T_SUM] + T[x, T_D]
        if p >= need:
            return K[x]
        y = T[x, T_RIGHT]
        if p + T[y, T_MAX] >= need:  # the answer is in y's subtree: descend to the first
            while True:
                l = T[y, T_LEFT]
                if p + T[l, T_MAX] >= need:
                    y = l
                    continue
                p += T[l, T_SUM] + T[y, T_D]
                if p >= need:
                    return K[y] if K[y] < before else np.inf
                y = T[y, T_RIGHT]
    return np.inf


@njit(cache=True)
def _tp_first_below(K, T, st, nodes_stack, off_stack, lo, need):
    """Key of the first breakpoint with key > ``lo`` and fewer than ``need`` free nodes, or +inf."""
    x = st[ST_ROOT]
    off = 0
    sp = 0
    while x != 0:
        if K[x] <= lo:
            off += T[T[x, T_LEFT], T_SUM] + T[x, T_D]
            x = T[x, T_RIGHT]
        else:
            nodes_stack[sp] = x
            off_stack[sp] = off
            sp += 1
            x = T[x, T_LEFT]
    for i in range(sp - 1, -1, -1):
        x = nodes_stack[i]
        p = off_stack[i] + T[T[x, T_LEFT], T_SUM] + T[x, T_D]
        if p < need:
            return K[x]
        y = T[x, T_RIGHT]
        if p + T[y, T_MIN] < need:
            while True:
                l = T[y, T_LEFT]
                if p + T[l, T_MIN] < need:
                    y = l
                    continue
                p += T[l, T_SUM] + T[y, T_D]
                if p < need:
                    return K[y]
                y = T[y, T_RIGHT]
    return np.inf


@njit(cache=True)
def _tp_max_before(K, T, st, t):
    """Most free nodes at any breakpoint before ``t`` (-BIG if there is none)."""
    x = st[ST_ROOT]
    off = 0
    best = -BIG
    while x != 0:
        if K[x] < t:
            l = T[x, T_LEFT]
            if off + T[l, T_MAX] > best:
                best = off + T[l, T_MAX]
            off += T[l, T_SUM] + T[x, T_D]
            if off > best:
                best = off
            x = T[x, T_RIGHT]
        else:
            x = T[x, T_LEFT]
    return best


@njit(cache=True)
def _tp_fit(K, T, st, ns, os, now, need, duration, own, before):
    """``Profile.earliest_fit`` from ``now``, among the starts before ``before``; +inf if none.

    ``own`` (+inf for none): the job's own reservation [own, own + duration), counted as free
    (limits enforced: the profile never goes below 0, so with its own nodes back the job fits
    everywhere in it; only breakpoints before ``own`` can stop it). Each candidate start is the
    first breakpoint with ``need`` free nodes; it fits unless a breakpoint with fewer comes
    before its end, which is where the next candidate is looked for: one pair of descents per
    hole in the profile that is too short for the job.
    """
    t = _tp_first_at_least(K, T, st, ns, os, now, need, before)
    while t != np.inf:
        stop = t + duration
        if own < stop:
            stop = own
        k = _tp_first_below(K, T, st, ns, os, t, need)
        if k >= stop:
            return t
        t = _tp_first_at_least(K, T, st, ns, os, k, need, before)
    return np.inf


@njit(cache=True)
def _tp_rebuild(K, T, st, path, now, free, re, rn, R, q, Q, res, limit, nodes):
    """``Cluster.profile``: running jobs' releases (overdue ones right after ``now``) + reservations."""
    _tp_reset(T, st)
    soon = np.nextafter(now, np.inf)
    _tp_add(K, T, st, path, now, free)
    for r in range(R):
        e = re[r]
        _tp_add(K, T, st, path, e if e > now else soon, rn[r])
    for i in range(Q):
        j = q[i]
        s = res[j]
        if s == s:  # reserved
            _tp_occupy(K, T, st, path, s, s + limit[j], nodes[j])


# --- run cache: the profile's runs per job size, shared by the jobs looked at in one pass ------
# For a size h, a *run* is a maximal interval [a, b) with at least h nodes free (a >= now). A
# job of h nodes and limit l fits at a run's start iff b >= a + l (with its own reservation
# counted as free: or b >= own), and never inside a run if not at its start, so its earliest
# fit is the start of the first such run. Runs are found with two treap descents each, and
# kept per size (slot) for the rest of the pass: every later job of that size reads them from a
# flat array. A change of the profile from x on (a move, a placement) drops the runs that end
# at or after x (the others are unchanged); a new pass starts with no runs.
RC_SLOTS = 64  # sizes cached at once (round robin)
RC_RUNS = 256  # runs cached per size; a search that needs more continues on the treap
RC_HEIGHT = 0
RC_STAMP = 1
RC_COUNT = 2


@njit(cache=True)
def _rc_slot(rc_i, rc_next, height_slot, active, st, h, now):
    """The cache slot of size ``h`` for this pass (emptied if it is from an earlier one)."""
    stamp = st[ST_STAMP]
    s = height_slot[h]
    if s < 0:
        s = st[ST_VICTIM]
        st[ST_VICTIM] = (s + 1) % RC_SLOTS
        if rc_i[s, RC_HEIGHT] >= 0:
            height_slot[rc_i[s, RC_HEIGHT]] = -1
        rc_i[s, RC_HEIGHT] = h
        height_slot[h] = s
        if rc_i[s, RC_STAMP] == stamp:  # reused within the pass: already listed as active
            rc_i[s, RC_COUNT] = 0
            rc_next[s] = now
    if rc_i[s, RC_STAMP] != stamp:
        rc_i[s, RC_STAMP] = stamp
        rc_i[s, RC_COUNT] = 0
        rc_next[s] = now
        active[st[ST_ACTIVE]] = s
        st[ST_ACTIVE] += 1
    return s


@njit(cache=True)
def _rc_changed(rc_i, rc_b, rc_next, active, st, x, now):
    """The profile changed from ``x`` on: drop the cached runs that end at or after ``x``."""
    for k in range(st[ST_ACTIVE]):
        s = active[k]
        c = rc_i[s, RC_COUNT]
        while c > 0 and rc_b[s, c - 1] >= x:
            c -= 1
        if c < rc_i[s, RC_COUNT]:
            rc_i[s, RC_COUNT] = c
            rc_next[s] = rc_b[s, c - 1] if c > 0 else now


@njit(cache=True)
def _rc_new_pass(rc_i, st):
    st[ST_STAMP] += 1
    st[ST_ACTIVE] = 0


@njit(cache=True)
def _rc_fit(K, T, st, ns, os, rc_i, rc_a, rc_b, rc_next, height_slot, active, now, need, duration, own, before):
    """``_tp_fit`` from ``now`` through the run cache of size ``need`` (same answer)."""
    s = _rc_slot(rc_i, rc_next, height_slot, active, st, need, now)
    i = 0
    while True:
        if i == rc_i[s, RC_COUNT]:
            if i == RC_RUNS:  # cache full: go on searching the treap after the last cached run
                return _tp_fit(K, T, st, ns, os, rc_b[s, i - 1], need, duration, own, before)
            a = _tp_first_at_least(K, T, st, ns, os, rc_next[s], need, np.inf)
            if a == np.inf:
                return np.inf  # (cannot happen: the last run lasts forever)
            b = _tp_first_below(K, T, st, ns, os, a, need)
            rc_a[s, i] = a
            rc_b[s, i] = b
            rc_i[s, RC_COUNT] = i + 1
            rc_next[s] = b
        a = rc_a[s, i]
        if a >= before:
            return np.inf
        b = rc_b[s, i]
        if b >= a + duration or b >= own:
            return a
        i += 1


ORDER_COMPRESS_FIRST = 0
ORDER_INTERLEAVED = 1
ORDER_ONE_PASS = 2


@njit(cache=True)
def _cons_visit(K, T, st, sf, path, ns, os, rc_i, rc_a, rc_b, rc_next, height_slot, active,
                j, now, nodes, limit, res, enforce, exact, F):
    """Re-place (or place) waiting job ``j`` as ``place`` in ``ConservativeBackfill.select``
    does; returns whether its reservation changed. ``F``: the most free nodes at any breakpoint
    in [now, grown) (limits enforced; see :func:`conservative_steps`)."""
    nj = nodes[j]
    lj = limit[j]
    old = res[j]
    if old != old:  # no reservation: placed at its earliest fit
        if enforce:
            start = _rc_fit(K, T, st, ns, os, rc_i, rc_a, rc_b, rc_next, height_slot, active,
                            now, nj, lj, np.inf, np.inf)
        else:
            start = _tp_fit(K, T, st, ns, os, now, nj, lj, np.inf, np.inf)
        if start != np.inf:
            _tp_occupy(K, T, st, path, start, start + lj, nj)
            if enforce:
                _rc_changed(rc_i, rc_b, rc_next, active, st, start, now)
        res[j] = start
        st[ST_NRES] += 1
        return True
    if not enforce:  # profile rebuilt this pass: take it out, put it back (as the reference)
        _tp_occupy(K, T, st, path, old, old + lj, -nj)
        start = _tp_fit(K, T, st, ns, os, now, nj, lj, np.inf, np.inf)
        _tp_occupy(K, T, st, path, start, start + lj, nj)
        res[j] = start
        return start != old
    grown = sf[SF_GROWN]
    before = old if old < grown else grown
    if before <= now or (not exact and nj > F):
        return False  # provably cannot move (the argument is in conservative_steps)
    start = _rc_fit(K, T, st, ns, os, rc_i, rc_a, rc_b, rc_next, height_slot, active,
                    now, nj, lj, old, before)
    if start == np.inf:
        return False  # stays at old; the profile's function is unchanged
    _tp_occupy(K, T, st, path, old, old + lj, -nj)
    _tp_occupy(K, T, st, path, start, start + lj, nj)
    _rc_changed(rc_i, rc_b, rc_next, active, st, start, now)
    res[j] = start
    if old + lj > grown:
        sf[SF_GROWN] = old + lj
    return True


@njit(cache=True)
def conservative_steps(submit, limit, nodes, dur, arrivals, rank, total, enforce, order,
                       begin, end, est, res, placed, re, rj, rn, hk, hj, q, K, T, path, ns, os,
                       rc_i, rc_a, rc_b, rc_next, height_slot, active, st, sf, budget):
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
    for them before min(s, grown). Skipped jobs are exactly those the reference re-places at
    their old start, so the schedule and the reference's round structure are unchanged.
    With limits not enforced the profile is rebuilt and every job re-placed at every pass, as
    the reference does (overdue jobs release "right after now", which moves with ``now``).
    """
    max_rounds = 1000 + 100 * submit.shape[0]
    if st[ST_USED] == 0:  # a new run: the whole machine free from -inf on
        _tp_reset(T, st)
        _tp_add(K, T, st, path, -np.inf, total)
    free = st[ST_FREE]
    R = st[ST_R]
    H = st[ST_H]
    Q = st[ST_Q]
    a = st[ST_A]
    done = st[ST_DONE]
    now = sf[SF_NOW]
    earliest = sf[SF_EARLIEST]
    wake = sf[SF_WAKE]
    n_arr = arrivals.shape[0]
    status = 0
    work = 0
    while a < n_arr or H > 0 or (Q > 0 and wake < np.inf):
        if work >= budget:
            status = 1
            break
        work += 1
        t_arr = submit[arrivals[a]] if a < n_arr else np.inf
        t_end = hk[0] if H > 0 else np.inf
        now = t_arr if t_arr < t_end else t_end
        if wake < now:
            now = wake
        if enforce:
            _tp_trim(K, T, st, path, now)
        if st[ST_FIXPOINT] == 1:
            sf[SF_GROWN] = -np.inf

        # 1. completions
        freed_early = False
        while H > 0 and hk[0] <= now:
            j = hj[0]
            H = _heap_pop(hk, hj, H)
            e = est[j]
            R = _run_remove(re, rj, rn, R, e, j)
            free += nodes[j]
            done += 1
            if end[j] < e:
                freed_early = True
                if enforce:
                    _tp_occupy(K, T, st, path, now, e, -nodes[j])
                    if e > sf[SF_GROWN]:
                        sf[SF_GROWN] = e

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
        if not replan and st[ST_NRES] == Q and earliest != now:
            continue  # the plan stands and nothing is due
        work += Q
        if not replan and st[ST_NRES] == Q:
            pass  # the plan stands; only start what is due
        else:
            exact = False
            _rc_new_pass(rc_i, st)
            if (not enforce) or earliest < now:
                for i in range(Q):
                    j = q[i]
                    if res[j] < now:
                        res[j] = np.nan
                        st[ST_NRES] -= 1
                _tp_rebuild(K, T, st, path, now, free, re, rn, R, q, Q, res, limit, nodes)
                sf[SF_GROWN] = np.inf  # no fixpoint to build on
                exact = True
            grown_seen = np.nan
            F = np.int64(0)
            if replan:  # compression rounds over the queue (interleaved) or the placed jobs
                scan_to = Q
                rounds = 0
                while True:
                    rounds += 1
                    if rounds > max_rounds:
                        return -1
                    last_move = -1
                    for i in range(Q):
                        if i >= scan_to and last_move < 0:
                            break  # nothing before the last mover moved: the rest cannot move
                        j = q[i]
                        if order != ORDER_INTERLEAVED and placed[j] == 0:
                            continue
                        if enforce and sf[SF_GROWN] != grown_seen:  # F after every change
                            grown_seen = sf[SF_GROWN]
                            F = _tp_max_before(K, T, st, grown_seen)
                        work += 1
                        if _cons_visit(K, T, st, sf, path, ns, os, rc_i, rc_a, rc_b, rc_next, height_slot, active,
                                       j, now, nodes, limit, res, enforce, exact, F):
                            last_move = i
                            grown_seen = np.nan
                    if last_move < 0 or (order == ORDER_ONE_PASS):
                        break
                    scan_to = last_move
                if order == ORDER_ONE_PASS:
                    st[ST_FIXPOINT] = 1 if last_move < 0 else 0
            # arrivals (every new job, in priority order)
            for i in range(Q):
                j = q[i]
                if placed[j] == 0 and res[j] != res[j]:
                    _cons_visit(K, T, st, sf, path, ns, os, rc_i, rc_a, rc_b, rc_next, height_slot, active,
                                       j, now, nodes, limit, res, enforce, exact, F)
            for i in range(Q):
                placed[q[i]] = 1

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
    st[ST_FREE] = free
    st[ST_R] = R
    st[ST_H] = H
    st[ST_Q] = Q
    st[ST_A] = a
    st[ST_DONE] = done
    sf[SF_NOW] = now
    sf[SF_EARLIEST] = earliest
    sf[SF_WAKE] = wake
    return status
