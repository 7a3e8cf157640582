"""Conservative backfilling (Mu'alem & Feitelson 2001), compressed in priority order.

Every waiting job holds a reservation in an availability profile built from the running jobs'
estimated ends (begin + time_limit) and the other waiting jobs' reservations. A job is placed
at the *earliest* start at which it fits for its whole time limit without overlapping anyone's
reservation, so placing a job never delays another.

*Compression*: when a job ends before its estimated end, waiting jobs are taken out of the
profile and put back at their earliest fit, in priority order (with limits enforced a job's old
slot is always still free when it is re-placed, so reservations only ever move earlier).
*Placement*: a job that has no reservation yet (a new arrival) is put at its earliest fit.
At every scheduling pass the policy plans, then starts every job whose reservation is ``now``,
in priority order. The compression order (``compression``, conf ``policy.compression``,
``drevt-sim --compression``) says how the two mix when both happen at one instant:

* ``compress_first`` (default), the engine's own event order: completions, then the *existing*
  reservations are compressed in priority order, repeatedly until a round moves nothing (a
  fixpoint: no reservation can move earlier on its own), then the arrivals are placed in
  priority order. Freed capacity goes to the jobs that were already waiting.
* ``interleaved`` (the behaviour before issue 16): one priority-ordered sweep over the whole
  queue, new arrivals placed where their priority puts them, repeated to a fixpoint. A job
  arriving at the instant of an early completion can take freed capacity before an older
  reservation has been compressed into it.
* ``one_pass``: as in batsched's ``conservative_bf`` and pyss' ``ConservativeScheduler`` (on a
  job's termination, early or on time, every waiting job is re-placed once, in queue order):
  one compression round, no repetition to a fixpoint, then the arrivals. Simultaneous
  completions share one round here (pyss handles them one event at a time). Its plan is not a fixpoint, so a
  reservation may begin at an instant where nothing ends or arrives: the policy asks the
  engine for an event there (``wake_at``; as pyss schedules a start event). The fixpoint
  orders need none: their earliest reservation always begins at a completion.

Shortcut (same result): if no job finished before its estimated end since the previous pass,
the previous plan is still a fixpoint (on-time completions and starts at reserved times do not
change the profile from ``now`` on, and adding jobs never lets others move earlier), so only
the new arrivals need placing, in one round. ``one_pass`` re-places the queue at every
completion, on time or early (its plan is not a fixpoint, so an on-time end can let a job move),
and only places the arrivals otherwise. With limits not enforced every pass replans fully
(a job whose reservation has passed -- it waited behind an overdue job -- is placed afresh).

Consequences: with limits enforced, a job never starts later than the first reservation it was
given, under every priority policy and compression order. The priority order decides who gets
freed capacity first and the order of placing jobs that arrive at the same time; it never lets
a new job take a slot that delays an existing reservation.

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

from ...errors import ConfigError
from .base import INF, Cluster, PolicyContext
from .registry import register_backfill

COMPRESSION_ORDERS = ("compress_first", "interleaved", "one_pass")


def check_compression(order: str) -> str:
    if order not in COMPRESSION_ORDERS:
        raise ConfigError(f"unknown compression order {order!r}; choose one of: {', '.join(COMPRESSION_ORDERS)}")
    return order


@register_backfill("conservative")
class ConservativeBackfill:
    # Tests set this to True to check that the shortcut above changes nothing.
    ALWAYS_REPLAN = False

    def __init__(self, ctx: PolicyContext) -> None:
        self.nodes = ctx.nodes
        self.limit = ctx.time_limit
        self.hook = ctx.on_reservation
        self.order = check_compression(ctx.compression)
        self.reserved: dict[int, float] = {}  # waiting job -> reserved start
        self.placed: set[int] = set()  # waiting jobs placed at an earlier pass
        self.earliest = math.inf  # min(reserved.values())
        self.enforce = ctx.enforce_limits
        self.last_pass = -math.inf

    def wake_at(self) -> float:
        """The engine's next event for this policy (one_pass: its earliest reservation, +inf
        otherwise). Not for a reservation "right after now" (limits not enforced: it waits
        for an overdue job, whose end is an event anyway)."""
        e = self.earliest
        if self.order != "one_pass" or (not self.enforce and e <= math.nextafter(self.last_pass, INF)):
            return INF
        return e

    def select(self, now: float, queue: Sequence[int], cluster: Cluster) -> list[int]:
        self.last_pass = now
        nodes = self.nodes
        limit = self.limit
        reserved = self.reserved
        withdrawn_slot = False
        for j in cluster.withdrawn:
            withdrawn_slot |= reserved.pop(j, INF) != INF
            self.placed.discard(j)
        if cluster.estimates_raised:  # estimated ends moved later: reservations may clash now
            reserved.clear()
        replan = (
            self.ALWAYS_REPLAN
            or cluster.estimates_raised
            or withdrawn_slot
            or cluster.freed_early
            or (self.order == "one_pass" and cluster.completed)
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

        def place(j: int) -> bool:
            """Put ``j`` at its earliest fit (taking its own reservation out first); moved?"""
            old = reserved.get(j)
            if old is not None and old != INF:
                profile.add(old, old + limit[j], nodes[j])
            start = profile.earliest_fit(nodes[j], limit[j])
            if start != INF:
                profile.add(start, start + limit[j], -nodes[j])
            if start == old:
                return False
            reserved[j] = start
            if hook is not None:
                hook(now, j, start)
            return True

        if self.order == "interleaved":
            if replan:
                self._compress(queue, place)
            else:
                for j in queue:
                    if j not in reserved:
                        place(j)
        else:
            placed = self.placed
            if replan:
                waiting = [j for j in queue if j in placed]
                self._compress(waiting, place, rounds=1 if self.order == "one_pass" else None)
            for j in queue:
                if j not in placed:
                    place(j)
        self.placed.update(queue)
        return self._start_due(now, queue)

    def _compress(self, jobs: Sequence[int], place, rounds: int | None = None) -> None:
        """Re-place ``jobs`` in order until a round moves nothing (or for ``rounds`` rounds).
        A round after the first stops after the last job that moved in the previous one unless
        something moves: the jobs after it saw the same profile and could not move then."""
        scan_to = len(jobs)
        done = 0
        while True:
            done += 1
            if done > 1000 + 100 * len(jobs):  # it always converges; this guards against bugs
                raise RuntimeError("conservative plan did not converge")
            last_move = -1
            for i, j in enumerate(jobs):
                if i >= scan_to and last_move < 0:
                    break  # nothing before the last mover moved: the rest cannot move either
                if place(j):
                    last_move = i
            if last_move < 0 or done == rounds:
                return
            scan_to = last_move

    def _start_due(self, now: float, queue: Sequence[int]) -> list[int]:
        reserved = self.reserved
        started = [j for j in queue if reserved[j] == now]
        for j in started:
            del reserved[j]
            self.placed.discard(j)
        self.earliest = min(reserved.values(), default=math.inf)
        return started
