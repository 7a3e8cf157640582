"""Run-time estimates the scheduler plans with (Tsafrir, Etsion & Feitelson, "Backfilling using
system-generated predictions rather than user runtime estimates", IEEE TPDS 18(6), 2007).

They are separate from the run-time models (``runtime.py``), which decide how long jobs *really*
run; the scheduler never sees the real run time, only its estimate:

* ``user``: the job's time limit (the user's estimate; what every policy planned with before).
* ``actual``: the real run time (perfect estimates: an upper bound on what prediction can give).
* ``user_history``: the mean of the real run times of the same user's last two jobs that had
  completed when the job was submitted, capped by the job's limit; the limit while the user has
  fewer than two completed jobs (and for jobs of unknown users). Completions at one instant count
  in the order the engine processes them (by table row).

When a prediction is made (``estimate_refresh``, conf ``policy.estimate_refresh``, ``drevt-sim
--estimate_refresh``; it matters for ``user_history`` only, the other estimates never change):

* ``submit`` (default): once, when the job is submitted; only the correction changes it later.
  A job submitted before its user has two completed jobs keeps its limit while it waits. This is
  our reading of Tsafrir et al.: a job is predicted when it arrives, from the last two jobs of
  its user that have terminated, and later changed only by the correction.
* ``every_pass``: before every scheduling pass, every *waiting* job is predicted again from its
  user's last two completed jobs at that instant (running jobs keep theirs), as pyss'
  ``EasyPlusPlusScheduler`` does (its ``_schedule_jobs``). pyss averages integer seconds with
  integer division; here the mean is exact. Conservative backfilling re-places every
  reservation when a waiting job's prediction changes, as after a correction.

A job is never planned shorter than ``MIN_PLAN`` (1 s) unless its limit is shorter: a
zero-length plan would occupy no time in conservative backfilling's profile.

Correction (the paper's): a running job that reaches its estimated end without finishing gets
its limit as the new estimate at that instant, an event of its own, after which the policy plans
again (conservative backfilling re-places every reservation). Jobs are still killed at their
real limit when limits are enforced.

``backfill_order``: the order in which EASY tries backfill candidates: ``fcfs`` (the queue's
priority order) or ``sjbf`` (shortest estimate first; ties in the static priority order, FCFS
for a dynamic priority; the queue's head keeps its priority order). EASY++ = EASY +
``user_history`` + ``sjbf``.
"""

from __future__ import annotations

from ..errors import ConfigError

ESTIMATES = ("user", "actual", "user_history")
# No job is planned shorter than this (or than its limit, if shorter): a zero-length plan
# would hold its nodes for no time at all in an availability profile.
MIN_PLAN = 1.0
BACKFILL_ORDERS = ("fcfs", "sjbf")
ESTIMATE_REFRESHES = ("submit", "every_pass")


def history_prediction(last_two: list[float] | None, limit: float) -> float | None:
    """``user_history``'s prediction from the real run times of the user's last two completed
    jobs (None while there are fewer than two), at least ``MIN_PLAN`` and at most ``limit``."""
    if last_two is None or len(last_two) != 2:
        return None
    p = (last_two[0] + last_two[1]) / 2.0
    p = p if p > MIN_PLAN else MIN_PLAN
    return p if p < limit else limit


def check_estimate(estimate: str, backfill_order: str, backfill: str, estimate_refresh: str = "submit") -> None:
    if estimate_refresh not in ESTIMATE_REFRESHES:
        raise ConfigError(f"unknown estimate_refresh {estimate_refresh!r}; choose one of: "
                          f"{', '.join(ESTIMATE_REFRESHES)}")
    if estimate not in ESTIMATES:
        raise ConfigError(f"unknown estimate {estimate!r}; choose one of: {', '.join(ESTIMATES)}")
    if backfill_order not in BACKFILL_ORDERS:
        raise ConfigError(f"unknown backfill_order {backfill_order!r}; choose one of: {', '.join(BACKFILL_ORDERS)}")
    if backfill_order == "sjbf" and backfill not in ("easy", "easy_drevt"):
        raise ConfigError(
            f"backfill_order sjbf orders EASY's backfill candidates; backfill {backfill!r} has none "
            f"(conservative places every job in priority order)"
        )
