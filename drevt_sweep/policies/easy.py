"""EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001) and DR_EVT's variant of it.

At each pass:

1. Start jobs in priority order while they fit.
2. The first job that does not fit (the *head*) gets a reservation at the *shadow time*: the
   earliest time at which, by the running jobs' estimated ends (begin + time_limit, including
   the jobs started in step 1), enough nodes are free for it. The *extra nodes* are the nodes
   free at the shadow time beyond what the head needs.
3. Every later job, in priority order, starts now if it fits in the free nodes and either
   ends (by its time limit) no later than the shadow time, or uses no more than the extra nodes
   (which it then consumes).

``easy_drevt`` reproduces the C++ DR_EVT scheduler: no extra-nodes rule, and the time test is
strict, ``now + time_limit < shadow``.

A job that has outlived its limit (limits not enforced) is expected to free its nodes right
after ``now`` (see ``base``), so the head's shadow time is then "as soon as that job ends" and
only jobs that fit in the extra nodes may pass it; the head can still be delayed in that mode,
because the overdue job may run on for any time.
"""

from __future__ import annotations

from typing import Sequence

from .base import Cluster, PolicyContext, start_in_order
from .registry import register_backfill


@register_backfill("easy_drevt", extra_nodes=False, strict=True)
@register_backfill("easy", extra_nodes=True, strict=False)
class EasyBackfill:
    def __init__(self, ctx: PolicyContext, *, extra_nodes: bool, strict: bool) -> None:
        self.nodes = ctx.nodes
        self.limit = ctx.time_limit
        self.extra_nodes = extra_nodes
        self.strict = strict
        self.hook = ctx.on_reservation

    def select(self, now: float, queue: Sequence[int], cluster: Cluster) -> list[int]:
        nodes = self.nodes
        limit = self.limit
        free = cluster.free
        started, k = start_in_order(queue, nodes, free)
        if k == len(queue):
            return started
        for j in started:
            free -= nodes[j]
        hook = self.hook
        if free == 0 and hook is None:  # nothing can be backfilled: skip the reservation
            return started

        head = queue[k]
        need = nodes[head]
        shadow, extra = cluster.shadow(now, need, free, [(now + limit[j], nodes[j]) for j in started])
        if hook is not None:
            hook(now, head, shadow)
            if free == 0:
                return started

        strict = self.strict
        use_extra = self.extra_nodes
        for i in range(k + 1, len(queue)):
            j = queue[i]
            n = nodes[j]
            if n > free:
                continue
            est_end = now + limit[j]
            if est_end < shadow or (est_end == shadow and not strict):
                pass  # done before the head needs the nodes
            elif use_extra and n <= extra:
                extra -= n
            else:
                continue
            started.append(j)
            free -= n
            if free == 0:
                break
        return started
