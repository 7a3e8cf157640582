"""No backfilling: start jobs in priority order until the first one that does not fit."""

from __future__ import annotations

from typing import Sequence

from .base import Cluster, PolicyContext, start_in_order
from .registry import register_backfill


@register_backfill("none")
class NoBackfill:
    def __init__(self, ctx: PolicyContext) -> None:
        self.nodes = ctx.nodes

    def select(self, now: float, queue: Sequence[int], cluster: Cluster) -> list[int]:
        return start_in_order(queue, self.nodes, cluster.free)[0]
