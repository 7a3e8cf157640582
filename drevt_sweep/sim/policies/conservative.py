"""Conservative backfilling (Mu'alem & Feitelson 2001), compressed in priority order.

Every waiting job holds a reservation in an availability profile built from the running jobs'
estimated ends (begin + time_limit) and the other waiting jobs' reservations. A job is placed
at the *earliest* start at which it fits for its whole time limit without overlapping anyone's
reservation, so placing a job never delays another.

At every scheduling pass:

1. *Plan.* Go through the waiting jobs in priority order; take each out of the profile (if it
   holds a reservation) and put it back at its earliest fitting start (new arrivals are simply
   placed). Repeat until a round moves nothing (a fixpoint: no job can move earlier on its
   own). With limits enforced a job's old slot is always still free when it is re-placed, so
   reservations only ever move earlier.
2. *Start* every job whose reservation is ``now``, in priority order.

Shortcut (same result): if no job finished before its estimated end since the previous pass,
the previous plan is still a fixpoint (on-time completions and starts at reserved times do not
change the profile from ``now`` on, and adding jobs never lets others move earlier), so only
the new arrivals need placing, in one round. With limits not enforced every pass replans fully.

Consequences: with limits enforced, a job never starts later than the first reservation it was
given, under every priority policy. The priority order decides who gets freed capacity first
(compression) and the order of placing jobs that arrive at the same time; it never lets a new
job take a slot that delays an existing reservation.

With run-time estimates (``sim.estimates``) reservations use the estimates; when a running job
outlives its estimate (it gets its limit, so the profile shrinks) every reservation is dropped
and the queue re-placed in priority order, and reservations may then move later.

A capacity that varies over time is part of the profile (``Cluster.profile``), so reservations
account for announced maintenance. A job that fits nowhere in the profile (its last capacity
window is out of reach) holds the reservation +inf, which occupies nothing; if the engine
withdraws it (``Cluster.withdrawn``) it is forgotten.
"""

from __future__ import annotations

import math
from typing import Sequence

from .base import INF, Cluster, PolicyContext
from .registry import register_backfill


@register_backfill("conservative")
class ConservativeBackfill:
    # Tests set this to True to check that the shortcut above changes nothing.
    ALWAYS_REPLAN = False

    def __init__(self, ctx: PolicyContext) -> None:
        self.nodes = ctx.nodes
        self.limit = ctx.time_limit
        self.hook = ctx.on_reservation
        self.reserved: dict[int, float] = {}  # waiting job -> reserved start
        self.earliest = math.inf  # min(reserved.values())

    def select(self, now: float, queue: Sequence[int], cluster: Cluster) -> list[int]:
        nodes = self.nodes
        limit = self.limit
        reserved = self.reserved
        withdrawn_slot = False
        for j in cluster.withdrawn:
            withdrawn_slot |= reserved.pop(j, INF) != INF
        if cluster.estimates_raised:  # estimated ends moved later: reservations may clash now
            reserved.clear()
        replan = (
            self.ALWAYS_REPLAN
            or cluster.estimates_raised
            or withdrawn_slot
            or cluster.freed_early
            or not cluster.enforce_limits
            or self.earliest < now  # a reservation in the past: impossible with limits enforced
        )
        if not replan and len(reserved) == len(queue):
            # Nothing was freed early and nobody is new: the plan stands.
            return self._start_due(now, queue) if self.earliest == now else []

        for j in [j for j, s in reserved.items() if s < now]:
            del reserved[j]  # re-placed below as if new
        profile = cluster.profile(
            now, reserved=[(s, s + limit[j], nodes[j]) for j, s in reserved.items() if s != INF]
        )
        hook = self.hook
        scan_to = len(queue)
        rounds = 0
        while True:
            rounds += 1
            if rounds > 1000 + 100 * len(queue):  # it always converges; this guards against bugs
                raise RuntimeError(f"conservative plan did not converge at t={now}")
            last_move = -1
            for i in range(len(queue)):
                if i >= scan_to and last_move < 0:
                    break  # nothing before the last mover moved: the rest cannot move either
                j = queue[i]
                old = reserved.get(j)
                if old is not None:
                    if not replan:
                        continue
                    if old != INF:
                        profile.add(old, old + limit[j], nodes[j])
                start = profile.earliest_fit(nodes[j], limit[j])
                if start != INF:
                    profile.add(start, start + limit[j], -nodes[j])
                if start != old:
                    reserved[j] = start
                    last_move = i
                    if hook is not None:
                        hook(now, j, start)
            if last_move < 0 or not replan:
                break
            scan_to = last_move
        return self._start_due(now, queue)

    def _start_due(self, now: float, queue: Sequence[int]) -> list[int]:
        reserved = self.reserved
        started = [j for j in queue if reserved[j] == now]
        for j in started:
            del reserved[j]
        self.earliest = min(reserved.values(), default=math.inf)
        return started
