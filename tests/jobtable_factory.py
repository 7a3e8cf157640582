"""Build small JobTables directly in tests (shared helper; import as ``from jobtable_factory import make_jobs``)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from drevt_sweep.jobs import JobTable, TraceMeta


def make_jobs(
    submit: Sequence[float],
    nodes: Sequence[int],
    limit: Sequence[float],
    run: Sequence[float] | None = None,
    *,
    begin: Sequence[float] | None = None,
    end: Sequence[float] | None = None,
    queue: Sequence[str] | None = None,
    exit_status: Sequence[int] | None = None,
    job_id: Sequence[int] | None = None,
    machine_nodes: int | None = None,
    path: str = "<test>",
    sort: bool = False,
    user: Sequence[str | None] | None = None,
    group: Sequence[str | None] | None = None,
) -> JobTable:
    """A JobTable from plain lists, one entry per job, in the given (file) order.

    ``run`` fills ``actual_run_time`` (NaN when omitted). Giving ``begin`` and ``end`` makes a
    replay-mode table. The rows are expected in submit order, as every reader produces them;
    pass ``sort=True`` to stably sort them by submit (file order breaking ties).
    ``user``/``group``: names per job (None = unknown); omitted = every job unknown.
    """
    n = len(submit)
    for name, col in (("nodes", nodes), ("limit", limit), ("run", run), ("begin", begin), ("end", end), ("queue", queue)):
        if col is not None and len(col) != n:
            raise ValueError(f"{name} has {len(col)} entries, submit has {n}")
    if (begin is None) != (end is None):
        raise ValueError("give both begin and end (replay) or neither (simulation)")
    replay = begin is not None
    nan = np.full(n, np.nan)
    queue = list(queue) if queue is not None else ["pbatch"] * n
    names = tuple(dict.fromkeys(queue))
    code = {q: i for i, q in enumerate(names)}
    meta = TraceMeta(
        path=path,
        trace_format="simple",
        mode="replay" if replay else "simulation",
        checksum="0" * 64,
        timezone="UTC",
        timestamp_format="epoch",
        machine_nodes=machine_nodes,
        has_actual_run_time=run is not None,
        rows_read=n,
        rows_kept=n,
    )
    table = JobTable(
        job_id=np.asarray(job_id if job_id is not None else range(n), dtype=np.int64),
        source_line=np.arange(2, n + 2, dtype=np.int64),  # line 1 is the header
        submit=np.asarray(submit, dtype=np.float64),
        begin=np.asarray(begin, dtype=np.float64) if replay else nan.copy(),
        end=np.asarray(end, dtype=np.float64) if replay else nan.copy(),
        num_nodes=np.asarray(nodes, dtype=np.int64),
        time_limit=np.asarray(limit, dtype=np.float64),
        actual_run_time=np.asarray(run, dtype=np.float64) if run is not None else nan.copy(),
        queue_code=np.asarray([code[q] for q in queue], dtype=np.int32),
        queue_names=names,
        exit_status=np.asarray(exit_status if exit_status is not None else [0 if replay else -1] * n, dtype=np.int64),
        meta=meta,
        **_who("user", user, n),
        **_who("group", group, n),
    )
    if sort:
        table = table.take(np.argsort(table.submit, kind="stable"))
    return table


def _who(what: str, values, n: int) -> dict:
    if values is None:
        return {}
    if len(values) != n:
        raise ValueError(f"{what} has {len(values)} entries, submit has {n}")
    names = tuple(sorted({v for v in values if v is not None}))
    code = {name: i for i, name in enumerate(names)}
    codes = np.asarray([code[v] if v is not None else -1 for v in values], dtype=np.int32)
    return {f"{what}_code": codes, f"{what}_names": names}
