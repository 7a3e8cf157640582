"""Priority policies: the order of the waiting queue.

The order defines the head of the queue and the order in which backfill candidates are tried.
Every key is static (known at submission), so the engine turns it into one integer rank per job.
Ties are broken by FCFS order (submit time, then table/file order).
"""

from __future__ import annotations

from .registry import register_priority


@register_priority("fcfs")
def fcfs(submit, time_limit, num_nodes):
    """First come, first served: submit time, then file order."""
    return ()


@register_priority("sjf")
def sjf(submit, time_limit, num_nodes):
    """Shortest job first: smallest time_limit first."""
    return (time_limit,)


@register_priority("ljf")
def ljf(submit, time_limit, num_nodes):
    """Longest job first: largest time_limit first."""
    return (-time_limit,)


@register_priority("smallest")
def smallest(submit, time_limit, num_nodes):
    """Fewest requested nodes first."""
    return (num_nodes,)


@register_priority("largest")
def largest(submit, time_limit, num_nodes):
    """Most requested nodes first."""
    return (-num_nodes,)
