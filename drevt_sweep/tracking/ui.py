"""What the MLflow UI opens on: a link per experiment that shows a sweep's configurations with
their headline metrics, without picking columns out of ~150 by hand.

MLflow 3.17's UI opens an experiment on its GenAI view and its runs table shows no metric or
param columns until chosen. Two things it offers fix that, both stored on the experiment:

- the tag ``mlflow.experimentKind = custom_model_development``: the experiment is a model-training
  one, so the UI shows its runs table (the "Model training" view) rather than traces;
- a *shared view state*: the tag ``mlflow.sharedViewState.<key>`` holds the JSON of a runs-table
  view (filter, sort, selected columns), and ``#/experiments/<id>/runs?viewStateShareKey=<key>``
  opens it, as the UI's own "Share" button does. Ours filters the configuration runs
  (``tags.drevt_kind = 'configuration'``), sorts them by mean wait and shows the headline metrics
  and the policy and run-time columns.

Metric values are in the metric's own unit (seconds for times, a fraction for utilization): the
README's Metrics table names them.
"""

from __future__ import annotations

import json
import sys

EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
SHARE_TAG = "mlflow.sharedViewState."
VIEW_KEY = "drevt-configurations"
HEADLINE_METRICS = ("wait_mean", "wait_p95", "bsld_mean", "utilization", "makespan")
HEADLINE_PARAMS = ("policy.name", "run_time.name", "system.total_nodes")
FILTER = "tags.drevt_kind = 'configuration'"
DEFAULT_UI = "http://127.0.0.1:5000"


# Settings of one policy only: logged as params only where that policy runs (the runs table and
# compare view then show a configuration's own knobs, not multifactor's 20 for FCFS).
MULTIFACTOR_KEYS = ("policy.weights.", "policy.max_age", "policy.favor_small", "policy.decay_half_life",
                    "policy.calc_period", "policy.fairshare_by", "policy.account_shares",
                    "policy.user_shares", "policy.partition_priority")


def own_params(params: dict) -> dict:
    """``params`` without the settings the configuration's policy ignores: multifactor's
    weights and parameters under another priority, the compression order without conservative
    backfilling. The config hash and ``config.yaml`` keep every setting."""
    drop = []
    if params.get("policy.priority") != "multifactor":
        drop += MULTIFACTOR_KEYS
    if params.get("policy.backfill") != "conservative":
        drop.append("policy.compression")
    return {k: v for k, v in params.items() if not k.startswith(tuple(drop))}


def view_state() -> dict:
    """The runs-table view the link opens (the UI's search facets and UI-state fields)."""
    columns = [f"metrics.`{m}`" for m in HEADLINE_METRICS] + [f"params.`{p}`" for p in HEADLINE_PARAMS]
    return {"searchFilter": FILTER, "orderByKey": "metrics.`wait_mean`", "orderByAsc": True,
            "lifecycleFilter": "Active", "startTime": "ALL", "datasetsFilter": [],
            "selectedColumns": columns, "runsExpanded": {},
            "runsPinned": [], "runsHidden": [], "groupBy": None}


def link(experiment_id: str, ui: str = DEFAULT_UI) -> str:
    """The deep link that opens ``experiment_id``'s configurations with their headline columns."""
    return f"{ui.rstrip('/')}/#/experiments/{experiment_id}/runs?viewStateShareKey={VIEW_KEY}"


def ui_tags() -> dict[str, str]:
    """The experiment's tags that make :func:`link` open the view."""
    return dict([EXPERIMENT_KIND, (SHARE_TAG + VIEW_KEY, json.dumps(view_state()))])


def prepare(client, experiment_id: str) -> None:
    """Tag the experiment so that :func:`link` opens the view (idempotent)."""
    for key, value in ui_tags().items():
        client.set_experiment_tag(experiment_id, key, value)


def announce(uri: str, experiments: list[str] | None = None, ui: str | None = None, stream=None) -> list[str]:
    """Prepare the experiments in the store at ``uri`` (the named ones, else every one with
    drevt-sweep runs) and print one link per experiment; returns the links. A tracking server
    is its own UI; the embedded store's is ``make ui``'s address."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    ui = ui or (uri if uri.startswith(("http://", "https://")) else DEFAULT_UI)
    if experiments:
        found = [client.get_experiment_by_name(name) for name in experiments]
    else:
        found = [e for e in client.search_experiments() if client.search_runs(
            [e.experiment_id], "tags.drevt_kind = 'configuration'", max_results=1)]
    links = []
    for experiment in (e for e in found if e is not None):
        prepare(client, experiment.experiment_id)
        links.append(link(experiment.experiment_id, ui))
        print(f"open: {links[-1]}   ({experiment.name}: configurations, headline metrics)",
              file=stream or sys.stdout)
    return links


def after_sweep(uri: str, experiment: str, service=None) -> None:
    """The sweep's last lines: how to open its results in the UI. Never fails the sweep.
    ``service``: the sweep's :class:`~.helper.TrackingService`, which tags the experiment in
    the tracking helper (MLflow imported, the store open) instead of importing MLflow and
    opening the store again here (5-9 s of a 200-configuration sweep on a loaded machine)."""
    if not uri.startswith(("http://", "https://")):
        print(f"look: `make ui` (or `mlflow ui --host 127.0.0.1 --backend-store-uri {uri}`), then open")
    try:
        if service is not None:
            ui = uri if uri.startswith(("http://", "https://")) else DEFAULT_UI
            print(f"open: {link(service.prepare_ui(), ui)}   ({experiment}: configurations, "
                  "headline metrics)")
            return
        announce(uri, [experiment])
    except Exception as exc:  # noqa: BLE001 - the runs are safe; only the link is missing
        print(f"look: {DEFAULT_UI} (the UI link could not be prepared: {exc})")


def main(argv: list[str] | None = None) -> None:
    """``python -m drevt_sweep.tracking.ui --uri URI [--ui URL]``: the links ``make ui`` prints."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m drevt_sweep.tracking.ui", description=main.__doc__)
    parser.add_argument("--uri", required=True, help="the tracking store (sqlite:///... or http://...)")
    parser.add_argument("--ui", default=None, help=f"the UI's address (default {DEFAULT_UI})")
    args = parser.parse_args(argv)
    if args.uri.startswith("sqlite:///"):
        from pathlib import Path

        if not Path(args.uri[len("sqlite:///"):]).is_file():
            print(f"no runs yet: {args.uri[len('sqlite:///'):]} does not exist (make run first)")
            return
    if not announce(args.uri, ui=args.ui):
        print("no drevt-sweep configurations in the store yet")


if __name__ == "__main__":
    main()
