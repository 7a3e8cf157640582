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

With ``backfill_order: sjbf`` (``sim.estimates``) the later jobs are tried shortest planned
duration first (ties in the static priority order; FCFS for a dynamic priority) instead of in
priority order; the head is unchanged.

``easy_drevt`` reproduces the C++ DR_EVT scheduler: no extra-nodes rule, and the time test is
strict, ``now + time_limit < shadow``.

A job that has outlived its limit (limits not enforced) is expected to free its nodes right
after ``now`` (see ``base``), so the head's shadow time is then "as soon as that job ends" and
only jobs that fit in the extra nodes may pass it; the head can still be delayed in that mode,
because the overdue job may run on for any time.

With a capacity that changes over time (``Capacity.variable``) the same rules are applied in
the capacity-aware free-node profile (``_select_in_profile``): a job starts only if it fits for
its whole time limit; the head is reserved at its earliest fit (+inf if it fits nowhere: then
it holds no reservation); a later job may start if it fits for its whole limit in the profile
with the head's reservation taken out (``easy``: this is "ends by the shadow time or uses only
extra nodes", extended to a varying capacity), or, for ``easy_drevt``, if it fits and
``now + time_limit < shadow``.
"""

from __future__ import annotations

from typing import Sequence

from .base import INF, Cluster, PolicyContext, start_in_order
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
        self.sjbf = ctx.backfill_order == "sjbf"
        self.fcfs_rank = ctx.fcfs_rank

    def candidates(self, queue: Sequence[int], k: int) -> Sequence[int]:
        """The jobs after the head, in the order backfilling tries them."""
        if not self.sjbf:
            return queue[k + 1:]
        limit = self.limit
        fcfs = self.fcfs_rank
        return sorted(queue[k + 1:], key=lambda j: (limit[j], fcfs[j]))

    def select(self, now: float, queue: Sequence[int], cluster: Cluster) -> list[int]:
        if cluster.capacity.times:
            return self._select_in_profile(now, queue, cluster)
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
        for j in self.candidates(queue, k):
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

    def _select_in_profile(self, now: float, queue: Sequence[int], cluster: Cluster) -> list[int]:
        """EASY for a capacity that varies over time (see the module docstring)."""
        nodes = self.nodes
        limit = self.limit
        profile = cluster.profile(now)
        started = []
        k = 0
        for j in queue:
            if not profile.fits(nodes[j], limit[j]):
                break
            profile.add(now, now + limit[j], -nodes[j])
            started.append(j)
            k += 1
        if k == len(queue):
            return started
        head = queue[k]
        shadow = profile.earliest_fit(nodes[head], limit[head])
        if self.hook is not None:
            self.hook(now, head, shadow)
        if shadow != INF:
            profile.add(shadow, shadow + limit[head], -nodes[head])
        strict = self.strict
        use_extra = self.extra_nodes
        for j in self.candidates(queue, k):
            est_end = now + limit[j]
            if not use_extra and not (est_end < shadow or (est_end == shadow and not strict)):
                continue
            if not profile.fits(nodes[j], limit[j]):
                continue
            profile.add(now, est_end, -nodes[j])
            started.append(j)
        return started
