"""The start-up baseline of issue 16: a naive single-file, pure-Python FCFS + EASY simulator.

What a researcher would write in an afternoon: read the gzipped SWF line by line (submit,
run time, requested or allocated processors, requested time; jobs with unknown size or run
time skipped, unknown limits taken as the run time), then an event loop with a completion heap
and EASY backfilling (Lifka; Mu'alem & Feitelson 2001: the head's shadow time and extra nodes).
Only the standard library, so it starts in tens of milliseconds. ``drevt-sim`` on the same
trace must take no longer end to end (``bench_conservative.py`` times both).

    python benchmarks/naive_easy.py TRACE.swf.gz [NODES]
"""

from __future__ import annotations

import gzip
import heapq
import sys


def read_swf(path: str):
    jobs = []
    nodes = None
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith(";"):
                if "MaxNodes:" in line or (nodes is None and "MaxProcs:" in line):
                    nodes = int(line.split(":", 1)[1])
                continue
            v = line.split()
            if len(v) < 18:
                continue
            submit, run, alloc, req, limit = float(v[1]), float(v[3]), int(v[4]), int(v[7]), float(v[8])
            size = req if req > 0 else alloc
            if size <= 0 or run <= 0 or submit < 0:
                continue
            if limit <= 0:
                limit = run
            jobs.append((submit, size, min(run, limit), limit))
    jobs.sort(key=lambda j: j[0])
    return jobs, nodes


def easy(jobs, total):
    """Begin time of every job under FCFS + EASY backfilling."""
    begin = [None] * len(jobs)
    running = []  # heap of (end, estimated end, size)
    queue = []  # waiting job indices in FCFS order
    free = total
    a = 0
    while a < len(jobs) or running:
        now = min(jobs[a][0] if a < len(jobs) else float("inf"), running[0][0] if running else float("inf"))
        while running and running[0][0] <= now:
            free += heapq.heappop(running)[2]
        while a < len(jobs) and jobs[a][0] <= now:
            if jobs[a][1] <= total:
                queue.append(a)
            a += 1
        while queue and jobs[queue[0]][1] <= free:  # start in order while they fit
            j = queue.pop(0)
            begin[j] = now
            free -= jobs[j][1]
            heapq.heappush(running, (now + jobs[j][2], now + jobs[j][3], jobs[j][1]))
        if not queue:
            continue
        need = jobs[queue[0]][1]  # the head's reservation: shadow time and extra nodes
        avail, shadow = free, None
        for _, est, size in sorted(running, key=lambda r: r[1]):
            avail += size
            if avail >= need:
                shadow = est
                break
        extra = avail - need
        for j in list(queue[1:]):
            size, limit = jobs[j][1], jobs[j][3]
            if size <= free and (now + limit <= shadow or size <= extra):
                if now + limit > shadow:
                    extra -= size
                queue.remove(j)
                begin[j] = now
                free -= size
                heapq.heappush(running, (now + jobs[j][2], now + limit, size))
    return begin


if __name__ == "__main__":
    table, machine = read_swf(sys.argv[1])
    total = int(sys.argv[2]) if len(sys.argv) > 2 else machine
    starts = easy(table, total)
    waits = [b - j[0] for b, j in zip(starts, table) if b is not None]
    print(f"{len(waits)} jobs on {total} nodes, mean wait {sum(waits) / len(waits):.1f} s")
