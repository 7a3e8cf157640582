"""The compiled shared-node kernel: ``sim.shared``'s none / easy / easy_drevt, bit for bit.

Imported only through ``sim.shared`` once numba is loaded (``kernel.load``). State per node:
free cores, GPUs and KiB of memory (int64 arrays); placement is first fit by node index.

* The waiting queue is a segment tree over the static priority ranks holding, per subtree,
  the minimum cores, GPUs, memory and time limit of the waiting jobs: a backfill candidate must
  ask for no more than the largest free amount on any node (and, for ``easy_drevt``, end before
  the shadow time), so whole ranges of jobs that cannot start are skipped; leaves are checked
  exactly by first fit.
* Running jobs are kept sorted by (estimated end, job), completions in a binary heap (the
  helpers of ``_kernels``). EASY's shadow time releases running jobs in that order, group by
  group of equal times, onto a copy of the free resources, keeping a count of the nodes that
  can hold the head's per-node request; the extra-resources test takes a candidate's request
  from that copy and checks the count (and gives it back if the head no longer fits).

Integer resources and the reference's order of float operations (``now + limit``,
``now + dur``, ``nextafter``) make the schedules identical; ``tests/test_shared.py`` compares
them on random workloads.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import BIG, _heap_pop, _heap_push, _run_insert, _run_remove

MODES = {"none": 0, "easy": 1, "easy_drevt": 2}


@njit(cache=True)
def _update(tc, tg, tm, tl, i):
    i >>= 1
    while i >= 1:
        a, b = 2 * i, 2 * i + 1
        c = min(tc[a], tc[b])
        g = min(tg[a], tg[b])
        m = min(tm[a], tm[b])
        lv = min(tl[a], tl[b])
        if c == tc[i] and g == tg[i] and m == tm[i] and lv == tl[i]:
            break
        tc[i], tg[i], tm[i], tl[i] = c, g, m, lv
        i >>= 1


@njit(cache=True)
def _next(tc, size, p, maxc, maxg, maxm, tg, tm, tl, now, latest):
    """Smallest rank >= p whose waiting job asks for at most the largest free amounts and has
    ``now + limit < latest`` (+inf: no time bound; empty leaves never pass), or -1."""
    if p >= size:
        return -1
    i = p + size
    while True:
        if tc[i] <= maxc and tg[i] <= maxg and tm[i] <= maxm and now + tl[i] < latest:
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


@njit(cache=True)
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


@njit(cache=True)
def run_shared_queue(submit, limit, nodes, dur, arrivals, rank, cores, gpus, mem,
                     n_nodes, cap_c, cap_g, cap_m, mode):
    """Returns (begin, end, node_start, node_list, jobs left waiting or -1 on a stall)."""
    n = submit.shape[0]
    begin = np.full(n, np.nan)
    end = np.full(n, np.nan)
    est = np.full(n, np.nan)
    node_start = np.zeros(n + 1, np.int64)
    for j in range(n):
        node_start[j + 1] = node_start[j] + nodes[j]
    node_list = np.full(node_start[n], -1, np.int64)
    job_of_rank = np.empty(n, np.int64)
    for j in range(n):
        job_of_rank[rank[j]] = j
    size = 1
    while size < n:
        size <<= 1
    tc = np.full(2 * size, BIG, np.int64)
    tg = np.full(2 * size, BIG, np.int64)
    tm = np.full(2 * size, BIG, np.int64)
    tl = np.full(2 * size, np.inf)
    fc = np.full(n_nodes, cap_c, np.int64)
    fg = np.full(n_nodes, cap_g, np.int64)
    fm = np.full(n_nodes, cap_m, np.int64)
    Fc = np.empty(n_nodes, np.int64)
    Fg = np.empty(n_nodes, np.int64)
    Fm = np.empty(n_nodes, np.int64)
    pick = np.empty(n_nodes, np.int64)
    rmax = min(n, n_nodes * cap_c) + 1
    re = np.empty(rmax, np.float64)
    rj = np.empty(rmax, np.int64)
    rn = np.empty(rmax, np.int64)
    hk = np.empty(rmax, np.float64)
    hj = np.empty(rmax, np.int64)
    strict = mode == 2
    use_extra = mode == 1
    head = size
    R = 0
    H = 0
    Q = 0
    a = 0
    n_arr = arrivals.shape[0]
    while a < n_arr or H > 0:
        t_arr = submit[arrivals[a]] if a < n_arr else np.inf
        t_end = hk[0] if H > 0 else np.inf
        now = t_arr if t_arr < t_end else t_end
        while H > 0 and hk[0] <= now:
            j = hj[0]
            H = _heap_pop(hk, hj, H)
            R = _run_remove(re, rj, rn, R, est[j], j)
            for x in range(node_start[j], node_start[j + 1]):
                i = node_list[x]
                fc[i] += cores[j]
                fg[i] += gpus[j]
                fm[i] += mem[j]
        while a < n_arr and submit[arrivals[a]] <= now:
            j = arrivals[a]
            a += 1
            r = rank[j]
            leaf = r + size
            tc[leaf] = cores[j]
            tg[leaf] = gpus[j]
            tm[leaf] = mem[j]
            tl[leaf] = limit[j]
            _update(tc, tg, tm, tl, leaf)
            Q += 1
            if r < head:
                head = r
        if Q == 0:
            continue

        # 1. start jobs in priority order while they fit
        h = head
        while h >= 0:
            j = job_of_rank[h]
            if not _first_fit(fc, fg, fm, nodes[j], cores[j], gpus[j], mem[j], pick):
                break
            _start(j, now, pick, nodes, cores, gpus, mem, dur, limit, fc, fg, fm, begin, end, est,
                   node_start, node_list)
            R = _run_insert(re, rj, rn, R, est[j], j, 0)
            H = _heap_push(hk, hj, H, end[j], j)
            Q -= 1
            _clear(tc, tg, tm, tl, h + size)
            h = _next(tc, size, h + 1, BIG, BIG, BIG, tg, tm, tl, now, np.inf)
        head = h if h >= 0 else size
        if h < 0 or mode == 0:
            continue
        maxc, maxg, maxm = _maxima(fc, fg, fm)
        c = _next(tc, size, h + 1, maxc, maxg, maxm, tg, tm, tl, now, np.inf)
        if c < 0:
            continue  # no later job could start now: no reservation needed

        # 2. the head's shadow time and the free resources then
        hj_ = job_of_rank[h]
        kh, ch, gh, mh = nodes[hj_], cores[hj_], gpus[hj_], mem[hj_]
        fits = 0
        for i in range(n_nodes):
            Fc[i] = fc[i]
            Fg[i] = fg[i]
            Fm[i] = fm[i]
            if Fc[i] >= ch and Fg[i] >= gh and Fm[i] >= mh:
                fits += 1
        soon = np.nextafter(now, np.inf)
        shadow = np.inf
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
                    i = node_list[x]
                    was = Fc[i] >= ch and Fg[i] >= gh and Fm[i] >= mh
                    Fc[i] += cores[j]
                    Fg[i] += gpus[j]
                    Fm[i] += mem[j]
                    if not was and Fc[i] >= ch and Fg[i] >= gh and Fm[i] >= mh:
                        fits += 1
                r += 1
            if fits >= kh:
                shadow = t
                break
        if shadow == np.inf:
            return begin, end, node_start, node_list, -1

        # 3. backfill later jobs
        while True:
            # easy_drevt backfills only jobs ending before the shadow time (strict)
            c = _next(tc, size, c, maxc, maxg, maxm, tg, tm, tl, now, shadow if strict else np.inf)
            if c < 0:
                break
            j = job_of_rank[c]
            if not _first_fit(fc, fg, fm, nodes[j], cores[j], gpus[j], mem[j], pick):
                c += 1
                continue
            e = now + limit[j]
            if e < shadow or (e == shadow and not strict):
                pass
            elif use_extra:
                for x in range(nodes[j]):
                    i = pick[x]
                    was = Fc[i] >= ch and Fg[i] >= gh and Fm[i] >= mh
                    Fc[i] -= cores[j]
                    Fg[i] -= gpus[j]
                    Fm[i] -= mem[j]
                    if was and not (Fc[i] >= ch and Fg[i] >= gh and Fm[i] >= mh):
                        fits -= 1
                if fits < kh:
                    for x in range(nodes[j]):
                        i = pick[x]
                        was = Fc[i] >= ch and Fg[i] >= gh and Fm[i] >= mh
                        Fc[i] += cores[j]
                        Fg[i] += gpus[j]
                        Fm[i] += mem[j]
                        if not was and Fc[i] >= ch and Fg[i] >= gh and Fm[i] >= mh:
                            fits += 1
                    c += 1
                    continue
            else:
                c += 1
                continue
            _start(j, now, pick, nodes, cores, gpus, mem, dur, limit, fc, fg, fm, begin, end, est,
                   node_start, node_list)
            R = _run_insert(re, rj, rn, R, est[j], j, 0)
            H = _heap_push(hk, hj, H, end[j], j)
            Q -= 1
            _clear(tc, tg, tm, tl, c + size)
            maxc, maxg, maxm = _maxima(fc, fg, fm)
            c += 1
    return begin, end, node_start, node_list, Q


@njit(cache=True)
def _clear(tc, tg, tm, tl, leaf):
    tc[leaf] = BIG
    tg[leaf] = BIG
    tm[leaf] = BIG
    tl[leaf] = np.inf
    _update(tc, tg, tm, tl, leaf)


@njit(cache=True)
def _start(j, now, pick, nodes, cores, gpus, mem, dur, limit, fc, fg, fm, begin, end, est,
           node_start, node_list):
    begin[j] = now
    end[j] = now + dur[j]
    est[j] = now + limit[j]
    s = node_start[j]
    for x in range(nodes[j]):
        i = pick[x]
        node_list[s + x] = i
        fc[i] -= cores[j]
        fg[i] -= gpus[j]
        fm[i] -= mem[j]


def run_shared(submit, limit, nodes, dur, rank, request, partition, backfill):
    """Begin, end, node_start, node_list as ``sim.shared._run_events`` (none/easy/easy_drevt)."""
    from ..shared import node_resources

    cores, gpus, mem = (np.ascontiguousarray(r, dtype=np.int64) for r in request)
    n = int(submit.shape[0])
    if n == 0:
        return np.empty(0), np.empty(0), np.zeros(1, np.int64), np.empty(0, np.int64)
    submit = np.ascontiguousarray(submit, dtype=np.float64)
    order = np.argsort(submit, kind="stable")
    cap_c, cap_g, cap_m = node_resources(partition)
    begin, end, node_start, node_list, left = run_shared_queue(
        submit, np.ascontiguousarray(limit, dtype=np.float64), np.ascontiguousarray(nodes, dtype=np.int64),
        np.ascontiguousarray(dur, dtype=np.float64), np.ascontiguousarray(order, dtype=np.int64),
        np.ascontiguousarray(rank, dtype=np.int64), cores, gpus, mem, np.int64(partition.nodes),
        np.int64(cap_c), np.int64(cap_g), np.int64(cap_m), np.int64(MODES[backfill]))
    if left == -1:
        raise RuntimeError("the head job never fits its partition (shared-node kernel)")
    if left:
        raise RuntimeError(f"shared-node kernel stalled with {left} job(s) waiting")
    return begin, end, node_start, node_list
