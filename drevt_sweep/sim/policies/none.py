"""No backfilling: start jobs in priority order until the first one that does not fit.

With a capacity that varies over time, "fits" means "fits for its whole time limit" in the
capacity-aware free-node profile.
"""

from __future__ import annotations

from typing import Sequence

from .base import Cluster, PolicyContext, start_in_order
from .registry import register_backfill


@register_backfill("none")
class NoBackfill:
    def __init__(self, ctx: PolicyContext) -> None:
        self.nodes = ctx.nodes
        self.limit = ctx.time_limit

    def select(self, now: float, queue: Sequence[int], cluster: Cluster) -> list[int]:
        if not cluster.capacity.times:
            return start_in_order(queue, self.nodes, cluster.free)[0]
        nodes = self.nodes
        limit = self.limit
        profile = cluster.profile(now)
        started = []
        for j in queue:
            if not profile.fits(nodes[j], limit[j]):
                break
            profile.add(now, now + limit[j], -nodes[j])
            started.append(j)
        return started
