"""The ``search`` config group's schema (``conf/search/*.yaml``, wired into ``SweepConfig.search``).

``kind: none`` (the default) is an ordinary sweep. ``threshold`` bisects one parameter for the
value at which a metric crosses a target; ``optimize`` drives Optuna over several parameters.
The algorithms are in :mod:`drevt_sweep.sweep.search`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, List, Optional


class SearchKind(Enum):
    none = "none"
    threshold = "threshold"
    optimize = "optimize"


class Direction(Enum):
    below = "below"  # the metric must be at most the target
    above = "above"  # the metric must be at least the target


class Goal(Enum):
    minimize = "minimize"
    maximize = "maximize"


class Sampler(Enum):
    tpe = "tpe"
    random = "random"


@dataclass
class SearchConf:
    """A question asked of the simulator instead of a grid.

    threshold: ``param`` in [``low``, ``high``], the value where ``metric`` crosses ``target``
    (``direction``: the side that is acceptable), bisected down to ``resolution`` (integer
    parameters: 1). Each probe starts with ``seeds`` seeds; while its 95% CI straddles the target
    seeds are doubled up to ``max_seeds``. At most ``max_probes`` probes.

    optimize: ``space`` maps parameters to ``[low, high]`` (integers stay integers) or to a
    list of choices; ``objective`` is minimised or maximised (``goal``) over ``trials`` Optuna
    trials subject to ``constraints`` such as ``"bsld_p95 <= 50"``; every trial runs the same
    ``seeds`` seeds. The sampler is seeded with the sweep's ``seed``.
    """

    kind: SearchKind = SearchKind.none
    # threshold
    param: Optional[str] = None
    low: Optional[float] = None
    high: Optional[float] = None
    metric: Optional[str] = None
    target: Optional[float] = None
    direction: Direction = Direction.below
    resolution: Optional[float] = None  # null: 1 for an integer parameter, (high-low)/64 else
    integer: Optional[bool] = None  # null: as the parameter's schema type says
    max_seeds: int = 20
    max_probes: int = 30
    # optimize
    space: Any = None  # a mapping; Any so that the command line can set it whole
    objective: Optional[str] = None
    goal: Goal = Goal.minimize
    constraints: List[str] = field(default_factory=list)
    trials: int = 30
    sampler: Sampler = Sampler.tpe
    # both
    seeds: int = 5
