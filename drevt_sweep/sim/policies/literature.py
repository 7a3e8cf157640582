"""Priority functions from the scheduling literature.

Notation: w = the job's wait so far (now - submit), r = its requested time (the time limit, the
user's estimate), n = its requested nodes (processors in the SWF traces), s = its submit time.

* ``wfp3`` (Tang, Lan, Desai, Buettner & Yu, "Fault-aware, utility-based job scheduling on Blue
  Gene/P systems", IEEE CLUSTER 2009): score (w / r)^3 * n, highest first; recomputed before
  every pass (it grows while a job waits).
* ``unicef`` (same paper, "UNICEP"): score w / (log2(n) * r), highest first, recomputed before
  every pass. log2(1) = 0 would divide by zero for one-node jobs, so n is taken as at least 2
  there (the one-node and two-node jobs of equal r and w then tie).
* ``f1`` .. ``f4`` (Carastan-Santos & de Camargo, "Obtaining dynamic scheduling policies with
  simulation and machine learning", SC 2017, the four functions learned there), lowest first:
  F1 = log10(r) * n + 870 * log10(s); F2 = sqrt(r) * n + 25600 * log10(s);
  F3 = r * n + 6860000 * log10(s); F4 = r * sqrt(n) + 530000 * log10(s).
  They use only submission-time values, so they are static ranks. s is measured, as in the
  paper's simulations, in seconds from the first submission of the trace (at least 1 s, so that
  log10(s) is finite).

Ties always fall back to FCFS (submit time, then table row).
"""

from __future__ import annotations

import numpy as np

from .dynamic import EveryPass, PriorityInputs, lazy_list, take_params
from .registry import register_dynamic_priority, register_priority


def _since_start(submit: np.ndarray) -> np.ndarray:
    if submit.size == 0:
        return submit
    return np.maximum(submit - submit.min(), 1.0)


@register_priority("f1")
def f1(submit, time_limit, num_nodes):
    """Carastan-Santos & de Camargo (2017) F1: log10(r) n + 870 log10(s), lowest first."""
    return (np.log10(time_limit) * num_nodes + 870.0 * np.log10(_since_start(submit)),)


@register_priority("f2")
def f2(submit, time_limit, num_nodes):
    """F2: sqrt(r) n + 25600 log10(s), lowest first."""
    return (np.sqrt(time_limit) * num_nodes + 25600.0 * np.log10(_since_start(submit)),)


@register_priority("f3")
def f3(submit, time_limit, num_nodes):
    """F3: r n + 6860000 log10(s), lowest first."""
    return (time_limit * num_nodes + 6860000.0 * np.log10(_since_start(submit)),)


@register_priority("f4")
def f4(submit, time_limit, num_nodes):
    """F4: r sqrt(n) + 530000 log10(s), lowest first."""
    return (time_limit * np.sqrt(num_nodes) + 530000.0 * np.log10(_since_start(submit)),)


@register_dynamic_priority("wfp3")
class WFP3(EveryPass):
    """Tang et al. (2009) WFP3: (w / r)^3 * n, highest first."""

    @staticmethod
    def check_params(params: dict) -> dict:
        return take_params("wfp3", params, {})

    def __init__(self, inputs: PriorityInputs, **params) -> None:
        self.check_params(params)
        self._submit = inputs.submit
        self._limit = np.asarray(inputs.time_limit, dtype=np.float64)
        self._nodes = inputs.num_nodes.astype(np.float64)

    submit = lazy_list("_submit")  # the reference's per-job lists
    limit = lazy_list("_limit")
    nodes = lazy_list("_nodes")

    def key(self, now: float, j: int) -> float:
        x = (now - self.submit[j]) / self.limit[j]
        return -(x * x * x * self.nodes[j])

    def kernel_args(self) -> tuple:
        return (self._limit, self._nodes)


@register_dynamic_priority("unicef")
class Unicef(EveryPass):
    """Tang et al. (2009) UNICEF/UNICEP: w / (log2(max(n, 2)) * r), highest first."""

    @staticmethod
    def check_params(params: dict) -> dict:
        return take_params("unicef", params, {})

    def __init__(self, inputs: PriorityInputs, **params) -> None:
        self.check_params(params)
        self._submit = inputs.submit
        self.den = np.log2(np.maximum(inputs.num_nodes, 2).astype(np.float64)) * inputs.time_limit

    submit = lazy_list("_submit")  # the reference's per-job lists
    den_l = lazy_list("den")

    def key(self, now: float, j: int) -> float:
        return -((now - self.submit[j]) / self.den_l[j])

    def kernel_args(self) -> tuple:
        return (self.den, self.den)
