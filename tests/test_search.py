"""Search sweeps: bisection with common random numbers and Optuna's ask/tell loop, on
hand-computable measurements (fast), and end to end on real traces (slow, test_search_e2e)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drevt_sweep.errors import ConfigError
from drevt_sweep.sweep.search import (
    Measurement,
    OptimizeQuestion,
    ThresholdQuestion,
    optimize,
    parse_constraint,
    threshold_search,
)
from drevt_sweep.sweep.seeds import SeedResult, aggregate


def measure_from(curve, noise=None, stochastic=True, calls=None):
    """A measure whose seed s sees ``curve(x) + noise(s, x)``: the same draw for a seed at every
    x (common random numbers), as the simulator's run-time streams are."""

    def measure(setting, n):
        (x,) = setting.values()
        if calls is not None:
            calls.append((x, n))
        seeds = list(range(n if stochastic else 1))
        per_seed = [{"m": curve(x) + (noise(s, x) if noise else 0.0)} for s in seeds]
        metrics = aggregate([SeedResult(s, metrics=m) for s, m in zip(seeds, per_seed)], stochastic)
        return Measurement(seeds, metrics, per_seed, stochastic)

    return measure


def question(**kw):
    base = dict(param="system.total_nodes", low=1, high=1000, metric="m", target=10.0,
                direction="below", integer=True)
    return ThresholdQuestion(**{**base, **kw})


def test_deterministic_bisection_finds_the_exact_integer_boundary():
    # 1000 / x <= 10 first holds at x = 100: the answer, 99 fails; no sampling uncertainty.
    calls = []
    r = threshold_search(measure_from(lambda x: 1000 / x, stochastic=False, calls=calls), question())
    assert r["answer"] == 100 and r["bracket"] == [99, 100]
    assert r["deterministic"] and r["interval"] == [99, 100]
    assert all(n == 5 for _, n in calls) and r["runs"] == len(r["probes"])  # one run per probe
    assert len(r["probes"]) <= 2 + math.ceil(math.log2(1000)) + 1
    assert "smallest system.total_nodes" in r["sentence"] and "is 100" in r["sentence"]
    assert "deterministic" in r["sentence"]


def test_increasing_metric_asks_for_the_largest_passing_value():
    # bsld = x^2 grows with load; bsld <= 10 holds up to sqrt(10) = 3.1623 (real parameter).
    q = question(param="workload.load_factor", low=0.5, high=5.0, integer=False, resolution=0.001)
    r = threshold_search(measure_from(lambda x: x * x, stochastic=False), q)
    assert r["bracket"][1] <= math.sqrt(10) < r["bracket"][0]
    assert r["bracket"][0] - r["bracket"][1] <= 0.001
    assert r["sentence"].startswith("The largest workload.load_factor with m ≤ 10")


def crn_noise(scale):
    """Seed s shifts the whole curve by a fixed draw (identical at every x), plus a little
    x-dependent jitter: a stand-in for run-time draws shared by every probe."""
    shifts = np.random.default_rng(7).normal(0.0, scale, 64)
    return lambda s, x: shifts[s] + 0.05 * scale * math.sin(17.0 * x + s)


def test_stochastic_answer_has_an_interval_of_sure_probes_around_it():
    # The expected metric 300 - x crosses 100 at x = 200 (the shifts average ~0 over seeds).
    q = question(low=100, high=300, target=100.0, seeds=4, max_seeds=16)
    calls = []
    r = threshold_search(measure_from(lambda x: 300.0 - x, crn_noise(20.0), calls=calls), q)
    low, high = r["interval"]
    assert low < r["answer"] <= high
    probes = {p["value"]: p for p in r["probes"]}
    # The interval's ends are probes whose whole CI is on one side; everything strictly
    # between is undecided or on the mean's side of the answer.
    assert probes[low]["side"] == "fail" and probes[high]["side"] == "pass"
    assert probes[low]["mean"] - probes[low]["ci95"] > 100 and probes[high]["mean"] + probes[high]["ci95"] <= 100
    assert all(p["side"] == "undecided" for v, p in probes.items() if low < v < high)
    # Seeds were doubled only where the CI straddled the target, never past max_seeds.
    assert max(n for _, n in calls) == 16 and {n for _, n in calls} <= {4, 8, 16}
    for v, p in probes.items():
        if p["n_seeds"] > 4:
            assert p["side"] == "undecided" or abs(p["mean"] - 100) < 3 * p["ci95"]
    # The bracket's two probes are compared on the same seeds.
    assert probes[r["bracket"][0]]["n_seeds"] == probes[r["bracket"][1]]["n_seeds"]
    # The mean over seeds of a CRN curve is 300 - x + mean(shift): its crossing is the answer.
    assert r["answer"] == probes[r["answer"]]["value"] and probes[r["bracket"][0]]["passes_on_mean"] is False


def test_the_bracket_is_compared_on_the_same_seeds_and_moves_if_they_say_so():
    # Seeds 0-3 scatter around 0, seeds 4-7 sit at +6: on 4 seeds 20 - x crosses 10 at x = 10,
    # on 8 seeds 23 - x crosses it at 13. Worked by hand: 11 straddles and gets 8 seeds (12,
    # fails); 12 passes surely on 4 seeds (8 ± 1.84), so the bracket (11, 12) compares 8 seeds
    # with 4. Topped up to 8, 12 fails (11 ± 2.76), and the bisection goes on to (12, 13).
    shift = lambda s, x: [-1.0, 1.0, -1.0, 1.0, 6.0, 6.0, 6.0, 6.0][s]  # noqa: E731
    q = question(low=1, high=20, target=10.0, seeds=4, max_seeds=8)
    r = threshold_search(measure_from(lambda x: 20.0 - x, shift), q)
    probes = {p["value"]: p for p in r["probes"]}
    assert r["bracket"] == [12, 13] and r["answer"] == 13
    assert probes[12]["n_seeds"] == probes[13]["n_seeds"] == 8
    assert probes[12]["mean"] == pytest.approx(11.0) and probes[13]["mean"] == pytest.approx(10.0)


def test_one_seed_of_a_stochastic_configuration_never_decides():
    q = question(low=100, high=300, target=100.0, seeds=1, max_seeds=1)
    r = threshold_search(measure_from(lambda x: 300.0 - x, crn_noise(20.0)), q)
    assert r["answer"] is not None  # the mean still bisects
    assert r["interval"] == [None, None] and all(p["side"] == "undecided" for p in r["probes"])
    assert "no probe in the range surely fails" in r["sentence"]


def test_no_crossing_in_the_range_is_said_not_guessed():
    r = threshold_search(measure_from(lambda x: 1000 / x, stochastic=False), question(low=200, high=400))
    assert r["answer"] is None and r["interval"] is None
    assert "passes at both ends" in r["warnings"][0] and r["sentence"].startswith("No crossing")


def test_probe_budget_stops_the_search_and_says_so():
    r = threshold_search(measure_from(lambda x: 1000 / x, stochastic=False), question(max_probes=4))
    assert len(r["probes"]) == 4 and r["budget_exhausted"]
    assert any("max_probes=4" in w for w in r["warnings"])


def test_a_non_monotone_metric_is_flagged():
    # Bisection sees one crossing by construction; the probes it made can still show more
    # (here: fails, passes, fails again, passes), and the result must say so.
    from drevt_sweep.sweep.search import _monotone_warnings, _Probe

    q = question()
    m = measure_from(lambda x: 0.0, stochastic=False)({"x": 0}, 1)
    probes = [_Probe(x, m, mean, 0.0) for x, mean in ((1, 50.0), (2, 5.0), (3, 50.0), (4, 5.0))]
    assert "crosses 10 3 times" in _monotone_warnings(probes, q)[0]
    assert _monotone_warnings(probes[1:3], q) == []


@pytest.mark.parametrize("bad", [dict(low=5, high=5), dict(low=1.5), dict(seeds=0),
                                 dict(max_seeds=2, seeds=4), dict(direction="sideways"),
                                 dict(max_probes=1), dict(integer=True, resolution=0.5)])
def test_bad_questions_are_config_errors(bad):
    with pytest.raises(ConfigError):
        question(**bad)


def test_constraints_parse_and_reject_nonsense():
    assert parse_constraint("bsld_p95 <= 50") == ("bsld_p95", "<=", 50.0)
    assert parse_constraint("utilization>0.5") == ("utilization", ">=", 0.5)
    with pytest.raises(ConfigError):
        parse_constraint("bsld_p95 == 50")


def _bowl_measure(calls=None):
    """objective = (x - 30)^2 + seed shift (the same for every trial: CRN); c = x."""
    shifts = np.random.default_rng(3).normal(0, 5, 16)

    def measure(setting, n):
        if calls is not None:
            calls.append(dict(setting))
        x = setting["x"]
        bonus = 0.0 if setting.get("mode", "a") == "a" else 50.0
        per_seed = [{"obj": (x - 30) ** 2 + bonus + shifts[s], "c": float(x)} for s in range(n)]
        metrics = aggregate([SeedResult(s, metrics=m) for s, m in enumerate(per_seed)])
        return Measurement(list(range(n)), metrics, per_seed)

    return measure


def optimize_question(**kw):
    base = dict(space={"x": {"low": 0, "high": 100, "integer": True}, "mode": {"choices": ["a", "b"]}},
                objective="obj", constraints=[("c", "<=", 25.0)], trials=25, seeds=4, seed=11)
    return OptimizeQuestion(**{**base, **kw})


def test_optuna_search_is_reproducible_and_respects_constraints():
    first, second = [], []
    r1 = optimize(_bowl_measure(first), optimize_question())
    r2 = optimize(_bowl_measure(second), optimize_question())
    assert first == second  # same seed -> same trials, in the same order
    best = r1["best"]
    assert best["feasible"] and best["params"]["x"] <= 25 and best["params"]["mode"] == "a"
    feasible = [t for t in r1["trials"] if t["feasible"]]
    assert best["value"] == min(t["value"] for t in feasible)
    # The constrained optimum is x = 25; TPE gets close within 25 trials.
    assert best["params"]["x"] >= 18
    assert all(t["params"]["x"] > 25 for t in r1["trials"] if not t["feasible"])
    # Paired against the best on the same seeds, the seed shifts cancel: the difference of
    # two trials is exactly the difference of their curves, with a zero-width CI.
    other = next(t for t in feasible if t is not best)
    assert other["diff_vs_best"] == pytest.approx(other["value"] - best["value"])
    assert other["diff_ci95"] == pytest.approx(0.0, abs=1e-9)
    assert "subject to c <= 25" in r1["sentence"]
    third = []
    optimize(_bowl_measure(third), optimize_question(seed=12))
    assert third != first


def test_optimize_with_no_feasible_trial_says_so():
    r = optimize(_bowl_measure(), optimize_question(constraints=[("c", "<=", -1.0)], trials=5))
    assert r["best"] is None and r["sentence"].startswith("No trial of 5 met c <= -1")


# ---------------------------------------------------------------- from the composed config
@pytest.fixture(scope="module")
def hydra_compose():
    from hydra import compose, initialize_config_module

    from drevt_sweep.sweep.config import register_configs

    register_configs()
    with initialize_config_module(version_base="1.3", config_module="drevt_sweep.conf"):
        yield lambda *overrides: compose("config", overrides=list(overrides))


def test_the_presets_ask_the_two_kth_questions(hydra_compose):
    from drevt_sweep.sweep.search import threshold_question

    nodes = threshold_question(hydra_compose("experiment=nodes_for_p95_wait"))
    assert (nodes.param, nodes.integer, nodes.low, nodes.high, nodes.resolution) == ("system.total_nodes", True, 50, 200, 1)
    assert (nodes.metric, nodes.target, nodes.direction) == ("wait_p95", 3600.0, "below")
    load = threshold_question(hydra_compose("experiment=load_for_conservative_bsld"))
    assert (load.param, load.integer, load.resolution, load.metric) == ("workload.load_factor", False, 0.01, "bsld_mean")


def test_a_threshold_search_names_what_it_is_missing(hydra_compose):
    from drevt_sweep.sweep.search import threshold_question

    with pytest.raises(ConfigError, match="search.param, search.low, search.high, search.metric, search.target"):
        threshold_question(hydra_compose("search=threshold"))


def test_probe_settings_are_checked_against_the_schema(hydra_compose):
    from drevt_sweep.sweep.search import ProbeRunner

    runner = ProbeRunner(hydra_compose(), jobs=None, tracker=None, search_handle=None, out_dir=None,
                         search_hash="")
    assert runner.config_for({"system.total_nodes": 64}).system.total_nodes == 64
    assert runner.config_for({"policy.backfill": "conservative"}).policy.backfill.value == "conservative"
    for bad, message in (({"system.total_nodez": 64}, "not a setting"), ({"trace.path": "/x"}, "not a setting"),
                         ({"system.total_nodes": 1.5}, "system.total_nodes=1.5"),
                         ({"policy.backfill": "sideways"}, "policy.backfill")):
        with pytest.raises(ConfigError, match=message):
            runner.config_for(bad)


def test_an_optimize_space_is_ranges_and_choices(hydra_compose):
    from drevt_sweep.sweep.search import optimize_question

    q = optimize_question(hydra_compose(
        "search=optimize", "search.objective=wait_mean", 'search.constraints=["bsld_p95 <= 50"]',
        "search.space={system.total_nodes:[80,160],workload.load_factor:[0.8,1.2],policy.backfill:[easy,conservative]}"))
    assert q.space == {"system.total_nodes": {"low": 80, "high": 160, "integer": True},
                       "workload.load_factor": {"low": 0.8, "high": 1.2, "integer": False},
                       "policy.backfill": {"choices": ["easy", "conservative"]}}
    assert q.constraints == [("bsld_p95", "<=", 50.0)] and q.seed == 0
    with pytest.raises(ConfigError, match="search.space is empty"):
        optimize_question(hydra_compose("search=optimize", "search.objective=wait_mean"))


def test_an_unknown_metric_names_the_known_ones():
    with pytest.raises(ConfigError, match=r"'wait_p96' is not one of the run's metrics \(m\)"):
        threshold_search(measure_from(lambda x: 1.0, stochastic=False), question(metric="wait_p96"))


def test_optimize_of_a_deterministic_configuration_claims_no_ci():
    def measure(setting, n):  # one run whatever n: seeds_for gives deterministic models one seed
        per_seed = [{"obj": (setting["x"] - 30) ** 2}]
        return Measurement([0], aggregate([SeedResult(0, metrics=per_seed[0])], stochastic=False), per_seed, False)

    r = optimize(measure, optimize_question(space={"x": {"low": 0, "high": 100, "integer": True}},
                                            constraints=[], trials=12))
    assert "deterministic: one run per trial, no CI" in r["sentence"] and "±" not in r["sentence"]
    assert r["tied_with_best"] == []


def test_the_search_report_states_the_answer_and_draws_the_probes(tmp_path):
    import json

    from drevt_sweep.report.search import main, write_search_report

    q = question(low=100, high=300, target=100.0, seeds=4, max_seeds=16)
    r = threshold_search(measure_from(lambda x: 300.0 - x, crn_noise(20.0)), q)
    r.update(simulated_runs=r["runs"], reused_runs=0, seconds=1.0, trace_checksum="<abc>")
    page = write_search_report(r, tmp_path).read_text()
    assert r["sentence"] in page and "data:image/png;base64," in page
    assert "&lt;abc&gt;" in page and "<abc>" not in page  # autoescaped
    assert page.count("<tr>") == len(r["probes"]) + 1
    (tmp_path / "search.json").write_text(json.dumps(r))
    (tmp_path / "search.html").unlink()
    assert main([str(tmp_path)]) == 0 and (tmp_path / "search.html").is_file()
    assert main([str(tmp_path / "nowhere")]) == 2


# ---------------------------------------------------------------- issue 24 item 5
def test_midpoints_are_the_numbers_the_names_show():
    # (0.3 + 0.35) / 2 = 0.32499999999999996 in floating point; the probe is 0.325, and every
    # later midpoint carries at most 12 significant digits, so str(value) is the name's text.
    q = question(param="workload.load_factor", low=0.3, high=0.35, integer=False, target=10.0,
                 direction="below", resolution=(0.35 - 0.3) / 64)
    r = threshold_search(measure_from(lambda x: 10 + 100 * (x - 0.33), stochastic=False), q)
    values = [p["value"] for p in r["probes"]]
    assert 0.325 in values and (0.3 + 0.35) / 2 not in values
    assert all(float(f"{v:.12g}") == v for v in values)
    # the sentence names the probes as they are, not rounded to 4 digits
    assert f"is {r['answer']!r}" in r["sentence"] or f"is {r['answer']:.12g}" in r["sentence"]


def test_the_interval_names_only_possible_answers():
    # The stochastic case above: the low end of the interval surely fails, so the smallest
    # passing count the data allow is one above it; the sentence names that range.
    q = question(low=100, high=300, target=100.0, seeds=4, max_seeds=16)
    r = threshold_search(measure_from(lambda x: 300.0 - x, crn_noise(20.0)), q)
    sure_fail, sure_pass = r["interval"]
    assert r["answers"] == [sure_fail + 1, sure_pass]
    assert f"95% interval {sure_fail + 1}–{sure_pass}: at {sure_fail} it fails" in r["sentence"]
    # the largest passing value: the sure-failing end is the high one
    q = question(low=100, high=300, target=100.0, seeds=4, max_seeds=16, direction="above")
    r = threshold_search(measure_from(lambda x: 300.0 - x, crn_noise(20.0)), q)
    assert r["bracket"][1] < r["bracket"][0]  # passing below: the largest passing count is asked
    sure_pass, sure_fail = r["interval"]
    assert r["answers"] == [sure_pass, sure_fail - 1] and f"{sure_pass}–{sure_fail - 1}" in r["sentence"]
