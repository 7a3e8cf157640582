"""The report of a search sweep: the probes (metric ± 95% CI against the parameter, the target,
the answer and its interval marked) or the Optuna trials, and the answer in one sentence.

Pure presentation: it reads the plain ``search.json`` dict that :mod:`drevt_sweep.sweep.search`
writes (never imports the sweep), so ``python -m drevt_sweep.report.search DIR`` rebuilds it.
"""

from __future__ import annotations

import base64
import json
import math
import sys
from pathlib import Path

import numpy as np

from .. import units
from ..files import write_file
from .figures import log_scale, plt, save_figure

TEMPLATE = "search.html.j2"


def threshold_figure(result: dict):
    """Mean ± 95% CI of every probe against the parameter, with the target, the answer and its
    interval; beside it the same around the answer (the probes from the nearest outside the
    interval on each side), where the bisection spent its seeds."""
    q = result["question"]
    probes = sorted(result["probes"], key=lambda p: p["value"])
    zoom = _around_answer(result, probes)
    fig, axes = plt.subplots(1, 2 if zoom else 1, figsize=(11 if zoom else 7.5, 4.2), squeeze=False)
    _draw_probes(axes[0][0], result, probes, legend=True)
    if zoom:
        _draw_probes(axes[0][1], result, zoom, legend=False)
        axes[0][1].set_title("around the answer", fontsize=10)
    axes[0][0].set_title(f"{q['metric']} {'≤' if q['direction'] == 'below' else '≥'} "
                         f"{units.quantity(q['metric'], q['target'])}: "
                         f"{len(probes)} probes, {result['runs']} runs", fontsize=10)
    fig.tight_layout()
    return fig


def _around_answer(result: dict, probes: list[dict]) -> list[dict]:
    """The probes from the nearest one below the interval to the nearest above it (none when
    that is every probe anyway)."""
    if result.get("answer") is None:
        return []
    edges = [v for v in (result.get("interval") or []) + result["bracket"] if v is not None]
    lo, hi = min(edges), max(edges)
    below = [i for i, p in enumerate(probes) if p["value"] < lo]
    above = [i for i, p in enumerate(probes) if p["value"] > hi]
    first = below[-1] if below else 0
    last = above[0] if above else len(probes) - 1
    chosen = probes[first:last + 1]
    return chosen if len(chosen) < len(probes) else []


def _draw_probes(ax, result: dict, probes: list[dict], legend: bool) -> None:
    """The probes in the metric's display unit (``units``), as in the table below the figure."""
    q = result["question"]
    scale = units.unit(q["metric"]).scale
    sides = {"pass": ("tab:green", "probe: whole CI passes"), "fail": ("tab:red", "probe: whole CI fails"),
             "undecided": ("tab:orange", "probe: CI straddles the target")}
    for side, (colour, label) in sides.items():
        chosen = [p for p in probes if p["side"] == side]
        if chosen:
            ax.errorbar([p["value"] for p in chosen], [p["mean"] / scale for p in chosen],
                        yerr=[0 if math.isnan(p["ci95"]) else p["ci95"] / scale for p in chosen],
                        fmt="o", color=colour, capsize=3, label=label)
    ax.plot([p["value"] for p in probes], [p["mean"] / scale for p in probes], color="grey", lw=0.8, zorder=0)
    ax.axhline(q["target"] / scale, color="black", ls="--", lw=1,
               label=f"target {units.quantity(q['metric'], q['target'])}")
    interval = result.get("interval") or [None, None]
    if result.get("answer") is not None:
        low = interval[0] if interval[0] is not None else q["low"]
        high = interval[1] if interval[1] is not None else q["high"]
        ax.axvspan(low, high, color="tab:blue", alpha=0.12, label="95% interval")
        ax.axvline(result["answer"], color="tab:blue", lw=1.5, label=f"answer {plain(result['answer'])}")
        ax.set_xlim(min(p["value"] for p in probes) - _pad(probes), max(p["value"] for p in probes) + _pad(probes))
    means = [p["mean"] for p in probes] + [q["target"]]
    if min(means) > 0 and max(means) / min(means) > 30:  # e.g. waits from minutes to days
        log_scale(ax, "y")
    ax.set_xlabel(q["param"])
    ax.set_ylabel(units.header(q["metric"], q["metric"]))
    if legend:
        ax.legend(fontsize=8)


def _pad(probes: list[dict]) -> float:
    values = [p["value"] for p in probes]
    return 0.05 * (max(values) - min(values)) or 0.5


def optimize_figure(result: dict):
    """The objective of every trial in order (± 95% CI), feasible ones filled, the best marked."""
    q = result["question"]
    trials = result["trials"]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    scale = units.unit(q["objective"]).scale
    for feasible, style in ((True, dict(fmt="o", color="tab:green", label="feasible")),
                            (False, dict(fmt="x", color="tab:red", label="violates a constraint"))):
        chosen = [t for t in trials if t["feasible"] == feasible]
        if chosen:
            ax.errorbar([t["number"] for t in chosen], [t["value"] / scale for t in chosen],
                        yerr=[0 if math.isnan(t["ci95"]) else t["ci95"] / scale for t in chosen], capsize=3,
                        **style)
    if result.get("best"):
        ax.axhline(result["best"]["value"] / scale, color="tab:blue", lw=1, ls="--",
                   label=f"best (trial {result['best']['number']})")
    ax.set_xlabel("trial")
    ax.set_ylabel(units.header(q["objective"], q["objective"]))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plain(value) -> str:
    """A parameter value in plain decimal notation (``0.000125``, ``1500000``), never ``1.5e+06``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "–"
    return np.format_float_positional(float(value), precision=12, trim="-")


def _rows(result: dict) -> tuple[list[str], list[list[str]]]:
    """The probes' or trials' table: each metric in its unit (``units``, named in the header),
    plain decimals everywhere."""
    def ci(metric, value, places):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        return "± " + units.number(metric, value, places)

    if result["kind"] == "threshold":
        metric = result["question"]["metric"]
        probes = sorted(result["probes"], key=lambda p: p["value"])
        places = units.decimals(metric, [p["mean"] for p in probes] + [result["question"]["target"]])
        head = [result["question"]["param"], units.header(metric, metric), "95% CI", "seeds",
                "CI against the target"]
        rows = [[plain(p["value"]), units.number(metric, p["mean"], places), ci(metric, p["ci95"], places),
                 str(p["n_seeds"]), p["side"]] for p in probes]
        return head, rows
    names = list(result["question"]["space"])
    metric = result["question"]["objective"]
    places = units.decimals(metric, [t["value"] for t in result["trials"]])
    head = ["trial", *names, units.header(metric, metric), "95% CI", "feasible",
            units.header(metric, "vs best (paired)", difference=True)]
    rows = []
    for t in result["trials"]:
        diff = t.get("diff_vs_best")
        rows.append([str(t["number"]), *[plain(t["params"][n]) for n in names],
                     units.number(metric, t["value"], places), ci(metric, t["ci95"], places),
                     "yes" if t["feasible"] else "no",
                     "" if diff is None else f"{units.number(metric, diff, places, signed=True)} "
                                             f"{ci(metric, t.get('diff_ci95'), places)}".strip()])
    return head, rows


def write_search_report(result: dict, out_dir: Path) -> Path:
    """``search.png`` and a self-contained ``search.html`` in ``out_dir``; returns the page."""
    from jinja2 import Environment, PackageLoader

    out_dir = Path(out_dir)
    figure = threshold_figure(result) if result["kind"] == "threshold" else optimize_figure(result)
    png = out_dir / "search.png"
    save_figure(figure, png)
    env = Environment(loader=PackageLoader("drevt_sweep.report", "templates"),
                      autoescape=True)  # every value the page shows is escaped
    head, rows = _rows(result)
    page = env.get_template(TEMPLATE).render(
        result=result, head=head, rows=rows,
        question=json.dumps(result["question"], indent=2, default=str),
        image=base64.b64encode(png.read_bytes()).decode("ascii"))
    path = out_dir / "search.html"
    write_file(path, page.encode(), "search report")
    return path


def main(argv: list[str] | None = None) -> int:
    """Rebuild ``search.html`` from a search's folder (its ``search.json``)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not (Path(args[0]) / "search.json").is_file():
        print("usage: python -m drevt_sweep.report.search DIR   (DIR holds search.json)", file=sys.stderr)
        return 2
    result = json.loads((Path(args[0]) / "search.json").read_text())
    print(write_search_report(result, Path(args[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
