"""Search sweeps: ask the simulator a question instead of running a grid.

Two questions (``search=threshold`` / ``search=optimize``, README "Search sweeps"):

* **threshold** — "the smallest ``system.total_nodes`` with ``wait_p95 <= 3600``": bisection of
  one parameter, assuming the metric is monotone in it. Every probe runs the same seeds (common
  random numbers: seed *s* draws the same run times whatever the parameter), so every seed's
  curve is one smooth function of the parameter and the mean over seeds is monotone wherever
  the seeds' curves are — bisection on it is coherent even with few seeds, where independent
  draws at each probe would make the mean curve zig-zag. The answer is the bisection on the
  mean; its interval is given by the two probes nearest to it whose 95% CI lies wholly on the
  failing side and wholly on the passing side of the target (each found by its own bisection).
  A probe whose CI straddles the target gets more seeds (doubled, up to ``max_seeds``).
* **optimize** — Optuna's ask/tell API driven from here: the objective's mean over the same
  seeds for every trial, constraints on other metrics' means, a seeded sampler (same seed ->
  same trials), and paired 95% CIs of each feasible trial against the best.

The algorithms (:func:`threshold_search`, :func:`optimize`) are pure: they call a ``measure``
function and know nothing of traces, Hydra or MLflow. :class:`ProbeRunner` measures a setting
by running its seeds with :func:`~drevt_sweep.sweep.seeds.run_seeds` and logs it as a
configuration run nested under the search's run; with ``resume=true`` it reuses the seeds
already FINISHED in the store, so a stopped search re-runs deterministically to where it
stopped without simulating again.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from ..errors import ConfigError, DrevtError
from ..tracking.helper import TrackingError
from .naming import seed_run_name, source_tags
from .seeds import RunSpec, SeedResult, aggregate, run_seeds, seeds_for, start_workers

log = logging.getLogger("drevt_sweep")

SEARCHABLE_SECTIONS = ("system", "workload", "run_time", "policy")  # the trace is read once
TAG_SEARCH = "drevt_search"  # on probe runs: the search they belong to (its question's hash)


# ---------------------------------------------------------------- what a probe measured
@dataclass
class Measurement:
    """One setting over its seeds: the aggregate (mean, ``_std``, ``_ci95``) and each seed's
    metrics (in seed order, for paired comparisons)."""

    seeds: list[int]
    metrics: dict[str, float]
    per_seed: list[dict[str, float]]
    stochastic: bool = True

    def mean(self, name: str) -> float:
        return self.metrics.get(name, math.nan)

    def half(self, name: str) -> float:
        """The 95% CI half-width; one seed logs none: exactly 0 when deterministic, else unknown."""
        default = math.nan if self.stochastic or len(self.seeds) != 1 else 0.0
        return self.metrics.get(f"{name}_ci95", default)


Measure = Callable[[Mapping[str, object], int], Measurement]  # (setting, seeds) -> measurement


# ---------------------------------------------------------------- threshold: bisection
@dataclass
class ThresholdQuestion:
    param: str
    low: float
    high: float
    metric: str
    target: float
    direction: str = "below"  # the acceptable side: metric <= target ("below") or >= ("above")
    integer: bool = False
    resolution: float | None = None
    seeds: int = 5
    max_seeds: int = 20
    max_probes: int = 30

    def __post_init__(self) -> None:
        if self.direction not in ("below", "above"):
            raise ConfigError(f"search.direction must be below or above, got {self.direction}")
        if not self.low < self.high:
            raise ConfigError(f"search.low ({self.low}) must be below search.high ({self.high})")
        if self.integer:
            if self.low != int(self.low) or self.high != int(self.high):
                raise ConfigError(f"{self.param} is an integer: search.low and search.high must be too")
            self.low, self.high = int(self.low), int(self.high)
        if self.resolution is None:
            self.resolution = 1 if self.integer else (self.high - self.low) / 64
        if self.resolution <= 0 or (self.integer and self.resolution < 1):
            raise ConfigError(f"search.resolution must be positive (at least 1 for {self.param})")
        if self.seeds < 1 or self.max_seeds < self.seeds:
            raise ConfigError("search.seeds must be at least 1 and search.max_seeds at least search.seeds")
        if self.max_probes < 2:
            raise ConfigError("search.max_probes must be at least 2 (the two ends of the range)")

    @property
    def relation(self) -> str:
        return "<=" if self.direction == "below" else ">="


@dataclass
class _Probe:
    value: float
    measurement: Measurement
    mean: float
    half: float  # 95% CI half-width; 0 for a deterministic probe, NaN with one stochastic seed

    def margin(self, q: ThresholdQuestion) -> float:
        """How far the mean is on the acceptable side of the target (negative: failing)."""
        return q.target - self.mean if q.direction == "below" else self.mean - q.target

    def passes(self, q) -> bool:
        return self.margin(q) >= 0

    def surely_passes(self, q) -> bool:
        return not math.isnan(self.half) and self.margin(q) - self.half >= 0

    def surely_fails(self, q) -> bool:
        return not math.isnan(self.half) and self.margin(q) + self.half < 0

    def side(self, q) -> str:
        return "pass" if self.surely_passes(q) else "fail" if self.surely_fails(q) else "undecided"


class _Budget(Exception):
    """No probes left (``max_probes``)."""


class _Bisection:
    """The probes of one threshold search, shared by its three bisections."""

    def __init__(self, measure: Measure, q: ThresholdQuestion) -> None:
        self.measure, self.q = measure, q
        self.probes: dict[float, _Probe] = {}

    def probe(self, value) -> _Probe:
        if value in self.probes:
            return self.probes[value]
        if len(self.probes) >= self.q.max_probes:
            raise _Budget
        n = self.q.seeds
        while True:
            m = self.measure({self.q.param: value}, n)
            p = _Probe(value, m, m.mean(self.q.metric), m.half(self.q.metric))
            if self.q.metric not in m.metrics:
                names = sorted(k for k in m.metrics if not k.endswith(("_std", "_ci95")))
                raise ConfigError(f"search.metric {self.q.metric!r} is not one of the run's metrics "
                                  f"({', '.join(names)})")
            if math.isnan(p.mean):
                raise ConfigError(f"{self.q.metric} is undefined (NaN) at {self.q.param}={value}")
            straddles = p.side(self.q) == "undecided"
            if not straddles or not m.stochastic or n >= self.q.max_seeds:
                break
            n = min(2 * n, self.q.max_seeds)  # the CI straddles the target: more seeds
        self.probes[value] = p
        return p

    def top_up(self, value, n: int) -> None:
        """Re-measure a probe on its first ``n`` seeds (no new probe: the budget is unchanged)."""
        p = self.probes[value]
        if p.measurement.stochastic and len(p.measurement.seeds) < n:
            m = self.measure({self.q.param: value}, n)
            self.probes[value] = _Probe(value, m, m.mean(self.q.metric), m.half(self.q.metric))

    def paired_bracket(self, fail_end, pass_end):
        """Bisection on the mean, its two final probes then compared on the same seeds (common
        random numbers): the one with fewer seeds gets the other's. Should that carry it across
        the target, the bisection goes on from the new bracket."""
        passes = lambda p: p.passes(self.q)  # noqa: E731
        bracket = self.bisect(passes, fail_end, pass_end)
        for _ in range(8):  # each round adds seeds or probes; a non-monotone metric could go on
            n = max(len(self.probes[v].measurement.seeds) for v in bracket)
            for v in bracket:
                self.top_up(v, n)
            fail_at, pass_at = self.nearest_bracket(passes, fail_end, pass_end)
            if (fail_at, pass_at) == tuple(bracket) or fail_at is None:
                break
            bracket = self.bisect(passes, fail_at, pass_at)
        return bracket

    def midpoint(self, a, b):
        """Half-way, as the setting it becomes: an integer, or a float cut to 12 significant
        digits, so that the logged param is the number the run's name shows (no 0.32500000000000007)."""
        return (a + b) // 2 if self.q.integer else float(f"{(a + b) / 2:.12g}")

    def bisect(self, holds: Callable[[_Probe], bool], false_at, true_at):
        """Narrow ``(false_at, true_at)`` to the resolution: the predicate is false at one end
        and true at the other (either order); return the final pair."""
        while abs(true_at - false_at) > self.q.resolution:
            mid = self.midpoint(false_at, true_at)
            if mid in (false_at, true_at):
                break
            if holds(self.probe(mid)):
                true_at = mid
            else:
                false_at = mid
        return false_at, true_at

    def nearest_bracket(self, holds, fail_end, pass_end):
        """From the probes so far: the probe nearest the failing end where ``holds`` is true,
        and the nearest to it on the failing side where it is false (None if there is none)."""
        towards_pass = sorted(self.probes, key=lambda v: (v - fail_end) / (pass_end - fail_end))
        true_at = next((v for v in towards_pass if holds(self.probes[v])), None)
        if true_at is None:
            return None, None
        before = [v for v in towards_pass[:towards_pass.index(true_at)] if not holds(self.probes[v])]
        return (before[-1] if before else None), true_at


def threshold_search(measure: Measure, q: ThresholdQuestion) -> dict:
    """Bisect ``q.param`` for the value where ``q.metric`` crosses ``q.target``.

    Returns a plain dict: ``answer`` (the value nearest the failing side whose mean passes, to
    the resolution), ``bracket`` (the last failing and first passing probe on the mean),
    ``interval`` (the nearest probe whose whole CI fails, the nearest whose whole CI passes;
    ``None`` where no probe in the range is sure), the probes, warnings and one sentence."""
    b = _Bisection(measure, q)
    warnings: list[str] = []
    answer = bracket = None
    sure_fail = sure_pass = None
    exhausted = False
    try:
        low, high = b.probe(q.low), b.probe(q.high)
        if low.passes(q) == high.passes(q):
            everywhere = "passes" if low.passes(q) else "fails"
            warnings.append(f"the mean {everywhere} at both ends of [{q.low}, {q.high}]: no crossing "
                            "in the range (widen it, or the metric is not monotone there)")
        else:
            fail_end, pass_end = (q.low, q.high) if high.passes(q) else (q.high, q.low)
            bracket = b.paired_bracket(fail_end, pass_end)
            answer = bracket[1]
            # The sure-pass edge: between the mean's boundary and the passing end.
            lo, hi = b.nearest_bracket(lambda p: p.surely_passes(q), fail_end, pass_end)
            if hi is not None:
                sure_pass = b.bisect(lambda p: p.surely_passes(q), lo if lo is not None else fail_end, hi)[1]
            # The sure-fail edge: between the failing end and the mean's boundary.
            lo, hi = b.nearest_bracket(lambda p: not p.surely_fails(q), fail_end, pass_end)
            if lo is not None:
                sure_fail = b.bisect(lambda p: not p.surely_fails(q), lo, hi)[0]
    except _Budget:
        exhausted = True
        warnings.append(f"stopped after search.max_probes={q.max_probes} probes: the interval is "
                        "what those probes decided")
    probes = [b.probes[v] for v in sorted(b.probes)]
    stochastic = any(p.measurement.stochastic for p in probes)
    warnings += _monotone_warnings(probes, q)
    if stochastic and any(p.side(q) == "undecided" for p in probes) and q.max_seeds <= 1:
        warnings.append("one seed per probe of a stochastic configuration has no CI")
    result = {
        "kind": "threshold",
        "question": {k: getattr(q, k) for k in ("param", "low", "high", "metric", "target", "direction",
                                                "integer", "resolution", "seeds", "max_seeds", "max_probes")},
        "answer": answer,
        "bracket": list(bracket) if bracket else None,
        "sure_fail": sure_fail,
        "sure_pass": sure_pass,
        "interval": _interval(sure_fail, sure_pass, bracket),
        "answers": _answers(_interval(sure_fail, sure_pass, bracket), bracket, sure_fail, q.integer),
        "deterministic": not stochastic,
        "budget_exhausted": exhausted,
        "runs": sum(len(p.measurement.seeds) for p in probes),
        "probes": [{"value": p.value, "mean": p.mean, "ci95": p.half, "n_seeds": len(p.measurement.seeds),
                    "side": p.side(q), "passes_on_mean": p.passes(q)} for p in probes],
        "warnings": warnings,
    }
    result["sentence"] = threshold_sentence(result)
    return result


def _interval(sure_fail, sure_pass, bracket) -> list | None:
    """[low, high] of the answer's 95% interval along the parameter's axis (None: that side is
    not bounded inside the range)."""
    if bracket is None:
        return None
    if bracket[1] > bracket[0]:  # passing above: the smallest passing value is asked
        return [sure_fail, sure_pass]
    return [sure_pass, sure_fail]


def _answers(interval, bracket, sure_fail, integer: bool) -> list | None:
    """The answers the interval leaves possible, [low, high] on the parameter's axis: the
    sure-failing end is not one of them, so for an integer it moves one step inwards (147
    fails surely: the smallest passing count is at least 148)."""
    if interval is None or not integer or sure_fail is None:
        return interval
    low, high = interval
    return [low + 1, high] if bracket[1] > bracket[0] else [low, high - 1]


def _monotone_warnings(probes: list[_Probe], q: ThresholdQuestion) -> list[str]:
    """Bisection assumes one crossing; say so when the probes show several."""
    flips = sum(1 for a, b in zip(probes, probes[1:]) if a.passes(q) != b.passes(q))
    if flips > 1:
        return [f"the mean of {q.metric} crosses {q.target:g} {flips} times over the probes: it is not "
                f"monotone in {q.param}, and the answer is one of several crossings"]
    return []


def _fmt(value) -> str:
    if value is None:
        return "?"
    if isinstance(value, (int, np.integer)) or float(value).is_integer():
        return str(int(value))
    return f"{value:.12g}"  # the probes' own values (midpoints are cut to 12 digits)


def threshold_sentence(result: dict) -> str:
    """The answer in one sentence, with its interval and how it was obtained."""
    q = result["question"]
    need = f"{q['metric']} {'≤' if q['direction'] == 'below' else '≥'} {q['target']:g}"
    n = sorted({p["n_seeds"] for p in result["probes"]})
    seeds = f"{n[0]}" if len(n) == 1 else f"{n[0]}–{n[-1]}"
    if result["answer"] is None:
        return (f"No crossing of {need} for {q['param']} in [{_fmt(q['low'])}, {_fmt(q['high'])}]: "
                + "; ".join(result["warnings"]) + ".")
    fail_at, pass_at = result["bracket"]
    which = "smallest" if pass_at > fail_at else "largest"
    text = f"The {which} {q['param']} with {need} (mean over seeds) is {_fmt(result['answer'])}"
    sure_fail, sure_pass = result["sure_fail"], result["sure_pass"]
    if result["deterministic"]:
        return (text + f" ({_fmt(fail_at)} fails; deterministic configuration: one run per probe, no "
                "sampling uncertainty, the interval is the bisection's resolution).")
    edges = sorted(v for v in (sure_fail, sure_pass) if v is not None)
    fail_text = (f"at {_fmt(sure_fail)} it fails" if sure_fail is not None
                 else "no probe in the range surely fails")
    pass_text = (f"at {_fmt(sure_pass)} it passes" if sure_pass is not None
                 else "no probe in the range surely passes")
    span = "only half-bounded"
    if len(edges) == 2:  # only possible answers: the end that surely fails is not one
        low, high = result.get("answers") or edges
        if q["integer"]:
            span = f"{_fmt(low)}–{_fmt(high)}" if low != high else f"exactly {_fmt(low)}"
        elif pass_at > fail_at:
            span = f"above {_fmt(low)} up to {_fmt(high)}"
        else:
            span = f"from {_fmt(low)} up to below {_fmt(high)}"
    finer = ""
    if not q["integer"] and sorted(edges) == sorted(result["bracket"]):
        finer = "; the CI is narrower than the bracket, so a smaller search.resolution would narrow it"
    return (text + f"; 95% interval {span}: {fail_text} and {pass_text} with the whole 95% CI "
            f"({seeds} common seeds per probe{finer}).")


# ---------------------------------------------------------------- optimize: Optuna ask/tell
_CONSTRAINT = re.compile(r"^\s*([A-Za-z0-9_./]+)\s*(<=|>=|<|>)\s*([-+0-9.eE]+)\s*$")


def parse_constraint(text: str) -> tuple[str, str, float]:
    """``"bsld_p95 <= 50"`` -> ``("bsld_p95", "<=", 50.0)``."""
    match = _CONSTRAINT.match(str(text))
    if not match:
        raise ConfigError(f"search.constraints: {text!r} is not 'metric <= number' or 'metric >= number'")
    name, op, value = match.groups()
    return name, op[0] + "=", float(value)


@dataclass
class OptimizeQuestion:
    space: dict[str, dict]  # param -> {"low", "high", "integer"} or {"choices": [...]}
    objective: str
    goal: str = "minimize"
    constraints: list[tuple[str, str, float]] = field(default_factory=list)
    trials: int = 30
    seeds: int = 5
    sampler: str = "tpe"
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.space:
            raise ConfigError("search.space is empty: give e.g. {system.total_nodes: [80, 160]}")
        if self.trials < 1 or self.seeds < 1:
            raise ConfigError("search.trials and search.seeds must be at least 1")


def _distributions(space: Mapping[str, dict]):
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out = {}
    for name, dim in space.items():
        if "choices" in dim:
            out[name] = CategoricalDistribution(list(dim["choices"]))
        elif dim["integer"]:
            out[name] = IntDistribution(int(dim["low"]), int(dim["high"]))
        else:
            out[name] = FloatDistribution(float(dim["low"]), float(dim["high"]))
    return out


def _violation(m: Measurement, constraint: tuple[str, str, float]) -> float:
    """Optuna's convention: <= 0 is feasible. On the mean over seeds."""
    name, op, limit = constraint
    value = m.mean(name)
    if math.isnan(value):
        raise ConfigError(f"search.constraints: {name!r} is not one of the run's metrics")
    return value - limit if op == "<=" else limit - value


def optimize(measure: Measure, q: OptimizeQuestion) -> dict:
    """Optuna's ask/tell loop over ``q.space``; every trial runs the same ``q.seeds`` seeds.

    Sequential ask/tell with a seeded sampler and deterministic measurements makes the trials a
    function of the question and the seed alone (asserted by the tests), so a resumed search
    asks exactly the same trials again and finds their seeds in the store."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    distributions = _distributions(q.space)

    if q.sampler == "random":
        sampler = optuna.samplers.RandomSampler(seed=q.seed)
    else:  # TPE reads the constraints each trial sets (Trial.set_constraint, Optuna >= 5)
        sampler = optuna.samplers.TPESampler(seed=q.seed, n_startup_trials=min(10, max(1, q.trials // 3)))
    study = optuna.create_study(direction=q.goal, sampler=sampler)
    trials = []
    for number in range(q.trials):
        trial = study.ask(distributions)
        m = measure(dict(trial.params), q.seeds)
        value = m.mean(q.objective)
        if math.isnan(value):
            raise ConfigError(f"search.objective {q.objective!r} is not one of the run's metrics")
        violations = [_violation(m, c) for c in q.constraints]
        for (name, op, limit), violation in zip(q.constraints, violations):
            trial.set_constraint(f"{name} {op} {limit:g}", violation)
        study.tell(trial, value)
        trials.append({"number": number, "params": dict(trial.params), "value": value,
                       "ci95": m.half(q.objective), "feasible": all(v <= 0 for v in violations),
                       "constraints": {f"{n} {op} {lim:g}": m.mean(n) for n, op, lim in q.constraints},
                       "n_seeds": len(m.seeds), "_per_seed": [s.get(q.objective, math.nan) for s in m.per_seed]})
    feasible = [t for t in trials if t["feasible"]]
    sign = 1 if q.goal == "minimize" else -1
    best = min(feasible, key=lambda t: (sign * t["value"], t["number"])) if feasible else None
    if best is not None:
        for t in feasible:
            t["diff_vs_best"], t["diff_ci95"] = _paired(t["_per_seed"], best["_per_seed"])
    for t in trials:
        t.pop("_per_seed")
    result = {
        "kind": "optimize",
        "question": {"space": q.space, "objective": q.objective, "goal": q.goal,
                     "constraints": [f"{n} {op} {lim:g}" for n, op, lim in q.constraints],
                     "trials": q.trials, "seeds": q.seeds, "sampler": q.sampler, "seed": q.seed},
        "best": best,
        "trials": trials,
        "runs": sum(t["n_seeds"] for t in trials),
        # Other settings (a sampler may ask for the best's again) that the paired CI cannot tell from it.
        "tied_with_best": [t["number"] for t in feasible if best is not None and t["params"] != best["params"]
                           and not math.isnan(t["diff_ci95"]) and abs(t["diff_vs_best"]) <= t["diff_ci95"]],
        "warnings": [] if feasible else ["no trial met every constraint"],
    }
    result["sentence"] = optimize_sentence(result)
    return result


def _paired(values: list[float], best: list[float]) -> tuple[float, float]:
    """Mean and 95% CI half-width of the per-seed difference (same seeds: common random numbers)."""
    from scipy import stats

    diff = np.asarray(values, float) - np.asarray(best, float)
    if diff.size < 2:
        return float(diff.mean()), math.nan
    return float(diff.mean()), float(stats.t.ppf(0.975, diff.size - 1) * diff.std(ddof=1) / math.sqrt(diff.size))


def optimize_sentence(result: dict) -> str:
    q, best = result["question"], result["best"]
    subject = f" subject to {' and '.join(q['constraints'])}" if q["constraints"] else ""
    if best is None:
        return f"No trial of {len(result['trials'])} met {' and '.join(q['constraints'])}."
    setting = ", ".join(f"{k}={_fmt(v) if not isinstance(v, str) else v}" for k, v in best["params"].items())
    ci = "" if math.isnan(best["ci95"]) or best["n_seeds"] < 2 else f" ± {best['ci95']:.4g}"
    ties = result["tied_with_best"]
    tie_text = (f"; {len(ties)} feasible trial(s) of other settings are within the paired 95% CI of it"
                if ties else "; every other feasible setting is worse by more than its paired 95% CI")
    if best["n_seeds"] < 2:  # a deterministic configuration: one run per trial, nothing to pair
        seeds, tie_text = "deterministic: one run per trial, no CI", ""
    else:
        seeds = f"{best['n_seeds']} common seeds"
    return (f"{q['goal'].capitalize()} {q['objective']}{subject}: {setting} gives "
            f"{best['value']:.4g}{ci} (trial {best['number']} of {len(result['trials'])}, "
            f"{seeds}){tie_text}.")


# ---------------------------------------------------------------- measuring a setting
@dataclass(frozen=True)
class AppHooks:
    """What a search borrows from the Hydra app, handed over by the app (which imports this
    module): a probe's RunSpec and result settings exactly as a configuration's, its seed
    parallelism, the tracking store, and failure reporting."""

    run_spec: Callable
    result_config: Callable
    n_jobs: Callable
    backend_options: Callable
    tracker: Callable
    record_failure: Callable


class ProbeRunner:
    """Measures settings of the sweep's config by running their seeds (the trace is read
    once), logging each as a configuration run nested under the search's run."""

    def __init__(self, cfg, jobs, tracker, search_handle: str | None, out_dir: Path,
                 search_hash: str, app: AppHooks | None = None) -> None:
        self.cfg, self.jobs, self.tracker, self.app = cfg, jobs, tracker, app
        self.search_handle, self.out_dir, self.search_hash = search_handle, out_dir, search_hash
        self._results: dict[tuple[str, int], SeedResult] = {}  # (config hash, seed) -> result
        self._probe_runs: dict[str, str] = {}  # config hash -> MLflow handle
        self._probe_state: dict[str, tuple] = {}  # config hash -> (label, measurement) to log
        self.simulated = self.reused = 0
        self.dataset: tuple | None = None  # (name, checksum, path, jobs) of the trace

    def config_for(self, setting: Mapping[str, object]):
        """The sweep's config with ``setting`` applied (checked against the schema)."""
        from omegaconf import OmegaConf

        cfg = self.cfg.copy()
        for key, value in setting.items():
            if isinstance(value, float):  # as the run's name shows it (Optuna's floats too)
                value = float(f"{value:.12g}")
            if key.split(".", 1)[0] not in SEARCHABLE_SECTIONS or OmegaConf.select(cfg, key, default=_MISSING) is _MISSING:
                raise ConfigError(f"search parameter {key!r} is not a setting under "
                                  f"{', '.join(SEARCHABLE_SECTIONS)}")
            try:
                OmegaConf.update(cfg, key, value, merge=False)
            except Exception as exc:  # omegaconf's ValidationError: a wrong type for the key
                raise ConfigError(f"search parameter {key}={value!r}: {exc}") from None
        return cfg

    def spec_for(self, cfg) -> RunSpec:
        from ..sim.workload import apply_workload
        from .slurm_system import check_partitions
        from .workload_config import workload_spec

        wspec = workload_spec(cfg.workload, cfg.system.total_nodes)
        probe, _, _ = apply_workload(self.jobs, wspec, int(cfg.seed))
        spec = self.app.run_spec(cfg, probe.meta.machine_nodes, wspec, probe.queue_names,
                                 (probe.group_names, probe.user_names))
        check_partitions(cfg, probe, spec.machine)
        return spec

    def __call__(self, setting: Mapping[str, object], n_seeds: int) -> Measurement:
        from omegaconf import OmegaConf

        from ..tracking.store import config_hash

        cfg = self.config_for(setting)
        spec = self.spec_for(cfg)
        chash = config_hash({"settings": self.app.result_config(cfg), "checksum": self.jobs.meta.checksum})
        seeds = seeds_for(spec, int(cfg.seed), n_seeds)
        self._reuse_from_store(chash, seeds)
        todo = [s for s in seeds if (chash, s) not in self._results]
        # the name shows each value as its param's text (2.0, 0.33125), so a filter or a
        # copy-paste from the name finds the run
        label = " ".join(f"{k}={_enum(OmegaConf.select(cfg, k))}" for k in setting)
        if todo:
            fresh = run_seeds(self.jobs, spec, todo, n_jobs=self.app.n_jobs(cfg),
                              backend=_enum(cfg.parallel.backend), backend_options=self.app.backend_options(cfg),
                              stop_if=self.tracker.raise_if_failed if self.tracker else None)
            failed = [r for r in fresh if not r.ok]
            if failed:
                raise ConfigError(f"{label}: seed {failed[0].seed} failed: {failed[0].error.splitlines()[0]}")
            self.simulated += len(fresh)
            for r in fresh:
                self._results[(chash, r.seed)] = r
            self._log_seeds(chash, label, spec, cfg, fresh)
        results = [self._results[(chash, s)] for s in seeds]
        m = Measurement(seeds, aggregate(results, stochastic=spec.stochastic),
                        [r.metrics for r in results], spec.stochastic)
        self._probe_state[chash] = (label, m, spec, cfg)
        log.info("probe %s: %d seeds, %d simulated", label, len(seeds), len(todo))
        return m

    def _reuse_from_store(self, chash: str, seeds: list[int]) -> None:
        if not (self.cfg.resume and self.tracker) or all((chash, s) in self._results for s in seeds):
            return
        from ..tracking.store import run_key

        finished = self.tracker.finished_seed_runs(chash)
        for seed in seeds:
            metrics = finished.get(run_key(chash, self.jobs.meta.checksum, seed))
            if metrics is not None and (chash, seed) not in self._results:
                self._results[(chash, seed)] = SeedResult(seed, metrics=metrics)
                self.reused += 1

    def _probe_run(self, chash: str, label: str, cfg) -> str:
        from ..tracking.store import TAG_CONFIG_HASH, TAG_KIND, TAG_SWEEP_DIR, flatten

        if chash not in self._probe_runs:
            handle = self.tracker.start_run(
                label, {TAG_KIND: "configuration", TAG_CONFIG_HASH: chash, TAG_SEARCH: self.search_hash,
                        TAG_SWEEP_DIR: str(self.out_dir), **source_tags()}, parent_id=self.search_handle)
            self.tracker.log(handle, params=flatten(self.app.result_config(cfg)))
            self._log_dataset(handle)
            self._probe_runs[chash] = handle
        return self._probe_runs[chash]

    def _log_seeds(self, chash, label, spec, cfg, fresh: list[SeedResult]) -> None:
        """Each seed as soon as it ran (FINISHED), so a stopped search resumes from it."""
        if not self.tracker:
            return
        from ..tracking.store import TAG_CONFIG_HASH, TAG_KIND, TAG_RUN_KEY, run_key

        parent = self._probe_run(chash, label, cfg)
        for r in fresh:
            child = self.tracker.start_run(
                seed_run_name(r.seed),  # as a grid's seeds: the probe is the parent's name
                {TAG_KIND: "seed", TAG_CONFIG_HASH: chash,
                 TAG_RUN_KEY: run_key(chash, self.jobs.meta.checksum, r.seed), **source_tags()},
                parent_id=parent)
            self.tracker.log(child, metrics=r.metrics, params={"seed": r.seed})
            self._log_dataset(child)
            self.tracker.finish(child, "FINISHED")

    def _log_dataset(self, handle: str) -> None:
        """The trace as the run's dataset input, as on a grid's runs."""
        if self.dataset is not None:
            self.tracker.log_trace_input(handle, *self.dataset)

    def close(self, status: str = "FINISHED") -> None:
        """Every probe's final aggregate on its run, which is then closed (``status``)."""
        if not self.tracker:
            return
        for chash, (label, m, spec, cfg) in self._probe_state.items():
            handle = self._probe_run(chash, label, cfg)
            self.tracker.log(handle, metrics=m.metrics,
                             params={"n_seeds": len(m.seeds), "total_nodes": spec.total_nodes,
                                     "trace_checksum": self.jobs.meta.checksum})
            self.tracker.finish(handle, status)
        self._probe_state.clear()


_MISSING = object()


# ---------------------------------------------------------------- the Hydra job
def is_integer_param(cfg, key: str) -> bool:
    """Whether the schema types ``key`` as an integer (``system.total_nodes``)."""
    from typing import get_args

    from omegaconf import DictConfig, OmegaConf

    parent_key, _, leaf = key.rpartition(".")
    parent = OmegaConf.select(cfg, parent_key) if parent_key else cfg
    node = parent._get_node(leaf) if isinstance(parent, DictConfig) else None
    if node is None:
        return False
    ref = node._metadata.ref_type
    return ref is int or (int in get_args(ref) and float not in get_args(ref))


def threshold_question(cfg) -> ThresholdQuestion:
    from omegaconf import OmegaConf

    s = cfg.search
    missing = [k for k in ("param", "low", "high", "metric", "target")
               if OmegaConf.is_missing(s, k) or s[k] is None]
    if missing:
        raise ConfigError("search=threshold needs " + ", ".join(f"search.{k}" for k in missing))
    integer = s.integer if s.integer is not None else is_integer_param(cfg, s.param)
    return ThresholdQuestion(
        param=str(s.param), low=float(s.low), high=float(s.high), metric=str(s.metric),
        target=float(s.target), direction=_enum(s.direction), integer=bool(integer),
        resolution=None if s.resolution is None else float(s.resolution), seeds=int(s.seeds),
        max_seeds=int(s.max_seeds), max_probes=int(s.max_probes))


def optimize_question(cfg) -> OptimizeQuestion:
    from omegaconf import OmegaConf

    s = cfg.search
    if OmegaConf.is_missing(s, "objective") or s.objective is None:
        raise ConfigError("search=optimize needs search.objective (a metric, e.g. wait_mean)")
    space = {}
    given = OmegaConf.to_container(s.space, resolve=True) if s.space is not None else {}
    if not isinstance(given, Mapping):
        raise ConfigError("search.space must map parameters to [low, high] or to choices")
    for name, values in _leaves(given).items():
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        if len(values) == 2 and numeric:
            integer = is_integer_param(cfg, name)
            space[name] = {"low": values[0], "high": values[1], "integer": integer}
        elif len(values) >= 2:
            space[name] = {"choices": values}
        else:
            raise ConfigError(f"search.space.{name}: give [low, high] or a list of choices")
    return OptimizeQuestion(space=space, objective=str(s.objective), goal=_enum(s.goal),
                            constraints=[parse_constraint(c) for c in s.constraints],
                            trials=int(s.trials), seeds=int(s.seeds), sampler=_enum(s.sampler),
                            seed=int(cfg.seed))


def _leaves(tree: Mapping, prefix: str = "") -> dict:
    """``{system: {total_nodes: [80, 160]}}`` (the command line's nesting) or
    ``{"system.total_nodes": [80, 160]}`` (a YAML key) -> ``{"system.total_nodes": [80, 160]}``."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _enum(value) -> str:
    return str(getattr(value, "value", value))


def run_search(cfg, app: AppHooks) -> dict:
    """The Hydra job of ``search=threshold|optimize``: one search run with its probes nested,
    ``search.json`` and ``search.html`` in the job's folder; returns the result."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from ..tracking.store import TAG_KIND, TAG_SWEEP_DIR, config_hash, flatten
    from ..trace.cache import load_trace
    from ..trace.options import read_options, resolve_trace_path
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    kind = _enum(cfg.search.kind)
    result: dict = {"kind": kind, "status": "FAILED"}
    tracker = handle = runner = None
    started = time.perf_counter()
    # The seeds' worker processes start (and load the kernel) while the store opens.
    backfill = None if cfg.policy.replay else _enum(cfg.policy.backfill)
    warming = start_workers(app.n_jobs(cfg), _enum(cfg.parallel.backend), backfill)
    try:
        question = threshold_question(cfg) if kind == "threshold" else optimize_question(cfg)
        path = resolve_trace_path(str(cfg.trace.path), cfg.paths.root)
        jobs = load_trace(path, read_options(cfg), cache_dir=cfg.paths.cache_dir)
        asked = {"search": OmegaConf.to_container(cfg.search, resolve=True, enum_to_str=True),
                 "settings": app.result_config(cfg), "seed": int(cfg.seed), "checksum": jobs.meta.checksum}
        search_hash = config_hash(asked)
        tracker = app.tracker(cfg)
        if tracker:
            handle = tracker.start_run(f"search {kind}: {_question_label(question)}",
                                       {TAG_KIND: "search", TAG_SEARCH: search_hash,
                                        TAG_SWEEP_DIR: str(out_dir), **source_tags()})
            tracker.log(handle, params={**{f"search.{k}": v for k, v in flatten(asked["search"]).items()},
                                        **flatten(asked["settings"]), "seed": int(cfg.seed),
                                        "trace_checksum": jobs.meta.checksum})
        runner = ProbeRunner(cfg, jobs, tracker, handle, out_dir, search_hash, app)
        trace_name = path.name if cfg.trace.name == "custom" else str(cfg.trace.name)
        runner.dataset = (trace_name, jobs.meta.checksum, str(path), len(jobs))
        if handle:
            runner._log_dataset(handle)
        if warming is not None:
            warming.join()
        answer = (threshold_search if kind == "threshold" else optimize)(runner, question)
        runner.close()
        result.update(answer, status="FINISHED", simulated_runs=runner.simulated,
                      reused_runs=runner.reused, seconds=time.perf_counter() - started,
                      trace_checksum=jobs.meta.checksum, search_hash=search_hash)
        _write_json(out_dir / "search.json", result)
        from ..report.search import write_search_report

        report = write_search_report(result, out_dir)
        if tracker:
            tracker.log(handle, metrics=_search_metrics(result))
            for name in ("search.json", report.name, "search.png"):
                if (out_dir / name).exists():
                    tracker.log_artifact(handle, out_dir / name)
            tracker.finish(handle, "FINISHED")
            tracker.wait()
            result["run_id"] = tracker.run_id(handle)
        print("\n" + result["sentence"])
        for warning in result["warnings"]:
            print(f"warning: {warning}")
        print(f"\nsearch: {out_dir / 'search.json'}\nreport: {report}")
        if tracker:  # the UI link: the probes are the experiment's configuration runs
            from ..tracking.ui import after_sweep

            after_sweep(tracker.uri, str(cfg.tracking.experiment))
    except (DrevtError, TrackingError) as exc:  # bad input, a failing store
        app.record_failure(result, f"search {kind}", str(exc), tracker, handle, out_dir)
    except KeyboardInterrupt:
        result.update(status="KILLED", error="interrupted (Ctrl-C)")
        if tracker and handle:
            try:
                if runner is not None:
                    runner.close("KILLED")
                tracker.finish(handle, "KILLED")
                tracker.wait(timeout=60)
            except Exception as exc:  # noqa: BLE001 - the interrupt is what matters
                log.error("could not mark the search KILLED: %s", exc)
        raise
    except Exception as exc:  # a bug or a dead worker: fail this search, keep the traceback
        app.record_failure(result, f"search {kind}", f"{type(exc).__name__}: {exc}", tracker, handle,
                            out_dir, details=traceback.format_exc())
    finally:
        _write_json(out_dir / "search.json", result)
    return result


def _write_json(path: Path, result: dict) -> None:
    from ..files import write_file  # never onto an input (a trace kept in the job's folder)

    write_file(path, (json.dumps(result, indent=2, default=str) + "\n").encode(), "search result")


def print_search_answers(sweep_dir: Path) -> None:
    """The end of a multirun of searches: every job's answer, in job order."""
    print()
    for path in sorted(Path(sweep_dir).glob("*/search.json"), key=lambda p: (len(p.parent.name), p.parent.name)):
        found = json.loads(path.read_text())
        print(f"{path.parent.name}: {found.get('sentence') or found.get('error', found.get('status'))}")


def _question_label(q) -> str:
    if isinstance(q, ThresholdQuestion):
        return f"{q.param} in [{_fmt(q.low)}, {_fmt(q.high)}], {q.metric} {q.relation} {q.target:g}"
    return f"{q.goal} {q.objective} over {', '.join(q.space)}"


def _search_metrics(result: dict) -> dict[str, float]:
    """The answer and its interval as the search run's metrics (NaN where there is none)."""
    def num(v):
        return math.nan if v is None else float(v)

    metrics = {"runs": result["runs"], "simulated_runs": result["simulated_runs"]}
    if result["kind"] == "threshold":
        low, high = result["interval"] or (None, None)
        metrics.update(answer=num(result["answer"]), interval_low=num(low), interval_high=num(high),
                       probes=len(result["probes"]))
    elif result["best"] is not None:
        best = result["best"]
        metrics.update(best_value=best["value"], best_ci95=best["ci95"], best_trial=best["number"])
        metrics.update({f"best.{k}": v for k, v in best["params"].items() if not isinstance(v, str)})
    return metrics

