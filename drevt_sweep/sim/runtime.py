"""Run-time models: how long each job really runs in a simulation.

The scheduler plans with ``time_limit`` only; the run time drawn here decides when a job
actually ends (simulation mode only — a replay keeps the trace's own times). Three modes, as in
the seeds' design (``--run_time_mode``):

``actual``
    The trace's historical run time (``JobTable.actual_run_time``). A trace without one is an
    error — the C++ original silently used the limit instead, which hid the problem.
``limit``
    Every job runs for its full ``time_limit`` (the worst case).
``distribution``
    A random draw per job, with ``L = time_limit``:

    - ``normal``:    N(L·scale, L·stddev)
    - ``lognormal``: LogNormal with median L·scale and shape (sigma) stddev
    - ``uniform``:   U(L·low, L·high) with low = ``scale`` and high = ``stddev`` (the seeds'
      command line reuses the two flags)

    Samples are clipped below at ``min_run_time`` (default 1 s, so that no job has a zero or
    negative run time) and, while limits are enforced, above at L (a drawn job then never
    exceeds its limit, so it is never killed). Where ``min_run_time > L`` the limit wins.

Random numbers (common random numbers)
    Draws come from ``numpy.random.Generator(PCG64)`` seeded by ``stream_rng(seed, "run_time")``,
    i.e. ``SeedSequence(seed, spawn_key=(STREAMS["run_time"],))`` — the same stream as
    ``SeedSequence(seed).spawn(n)[STREAMS["run_time"]]``. They depend only on the job table
    (its order and time limits), the model and the seed — never on the scheduling policy — so
    policies compared at the same seed see exactly the same run times. Other random features
    (input shaking, ...) take their own entry in ``STREAMS`` and get a stream that is
    independent of this one for the same seed. Deterministic models ignore the seed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import ConfigError
from ..jobs import JobTable

RUN_TIME_MODES = ("actual", "limit", "distribution")
DISTRIBUTIONS = ("normal", "lognormal", "uniform")
DEFAULT_MIN_RUN_TIME = 1.0  # seconds

# One independent random stream per feature, all derived from the same user seed. Append new
# features at the end; never renumber (that would change every existing result).
STREAMS: dict[str, int] = {"run_time": 0, "input_shaking": 1}


def stream_rng(seed: int, stream: str) -> np.random.Generator:
    """The random generator of one feature (``STREAMS`` key) for a user seed."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    if stream not in STREAMS:
        raise ConfigError(f"unknown random stream '{stream}'; known: {', '.join(STREAMS)}")
    sequence = np.random.SeedSequence(int(seed), spawn_key=(STREAMS[stream],))
    return np.random.Generator(np.random.PCG64(sequence))


@dataclass(frozen=True)
class RunTimeModel:
    """How long jobs run; field names follow the seeds' ``--run_time_*`` flags.

    For ``distribution="uniform"``, ``scale`` is the low and ``stddev`` the high fraction of the
    time limit. ``validate()`` raises ``ConfigError`` on invalid parameters; ``draw_run_times``
    calls it, so a sweep reports a bad model as a failed run (command lines call it up front).
    """

    mode: str = "actual"
    distribution: str = "normal"
    scale: float = 1.0
    stddev: float = 0.0
    min_run_time: float = DEFAULT_MIN_RUN_TIME

    def validate(self) -> RunTimeModel:
        """Check the parameters (only those the mode uses); returns the model itself."""
        if self.mode not in RUN_TIME_MODES:
            raise ConfigError(
                f"unknown run_time_mode '{self.mode}'; choose one of {', '.join(RUN_TIME_MODES)}"
            )
        if self.distribution not in DISTRIBUTIONS:
            raise ConfigError(
                f"unknown run_time_distribution '{self.distribution}'; "
                f"choose one of {', '.join(DISTRIBUTIONS)}"
            )
        for name in ("scale", "stddev", "min_run_time"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
                raise ConfigError(f"run_time {name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ConfigError(f"run_time {name} must be finite, got {value!r}")
        if self.min_run_time <= 0:
            raise ConfigError(
                f"run_time min_run_time must be > 0 seconds, got {self.min_run_time!r}"
            )
        if self.mode != "distribution":
            return self
        if self.distribution == "uniform":
            if not 0 <= self.scale < self.stddev:
                raise ConfigError(
                    "uniform run times need 0 <= low < high, where low is run_time_scale and "
                    f"high is run_time_stddev (fractions of the time limit); got "
                    f"low={self.scale!r}, high={self.stddev!r}"
                )
            return self
        if self.scale <= 0:
            raise ConfigError(
                f"{self.distribution} run times need run_time_scale > 0, got {self.scale!r}"
            )
        if self.stddev < 0:
            raise ConfigError(
                f"{self.distribution} run times need run_time_stddev >= 0, got {self.stddev!r}"
            )
        return self

    @property
    def name(self) -> str:
        """A short label: ``actual``, ``limit`` or the distribution's name."""
        return self.distribution if self.mode == "distribution" else self.mode

    def as_params(self) -> dict[str, object]:
        """The parameters that matter for this mode (for logging and reports)."""
        params: dict[str, object] = {"mode": self.mode}
        if self.mode == "distribution":
            params.update(asdict(self))
        return params


def is_stochastic(model: RunTimeModel) -> bool:
    """Whether draws depend on the seed (a sweep runs one replicate when they do not)."""
    if model.mode != "distribution":
        return False
    if model.distribution == "uniform":
        return True  # low < high is enforced
    return model.stddev > 0


def draw_run_times(
    jobs: JobTable, model: RunTimeModel, seed: int = 0, enforce_limits: bool = True
) -> np.ndarray:
    """One run time (float64 seconds) per row of ``jobs``; see the module docstring.

    ``actual`` and ``limit`` return the trace's values unchanged (a job whose actual run time
    exceeds its limit is the engine's business: it is killed while limits are enforced).
    """
    model.validate()
    limit = np.asarray(jobs.time_limit, dtype=np.float64)
    if model.mode == "actual":
        actual = np.asarray(jobs.actual_run_time, dtype=np.float64)
        missing = np.isnan(actual)
        if len(jobs) and (not jobs.meta.has_actual_run_time or missing.all()):
            raise ConfigError(
                f"run_time_mode 'actual' needs the jobs' actual run times, but the trace "
                f"'{jobs.meta.path}' has none; use run_time_mode 'limit' or 'distribution' "
                f"(or --force-simulation on a replay trace, to reuse its historical run times)"
            )
        if missing.any():
            first = int(np.flatnonzero(missing)[0])
            raise ConfigError(
                f"run_time_mode 'actual' needs every job's actual run time, but "
                f"{int(missing.sum())} of {len(jobs)} jobs in '{jobs.meta.path}' have none "
                f"(first: line {int(jobs.source_line[first])}); use run_time_mode 'limit' or "
                f"'distribution'"
            )
        return actual.copy()
    if model.mode == "limit":
        return limit.copy()

    rng = stream_rng(seed, "run_time")
    n = limit.shape[0]
    if model.distribution == "normal":
        draws = limit * (model.scale + model.stddev * rng.standard_normal(n))
    elif model.distribution == "lognormal":
        draws = limit * model.scale * np.exp(model.stddev * rng.standard_normal(n))
    else:  # uniform: scale = low, stddev = high
        draws = limit * (model.scale + (model.stddev - model.scale) * rng.random(n))
    np.maximum(draws, model.min_run_time, out=draws)
    if enforce_limits:
        np.minimum(draws, limit, out=draws)
    return draws
