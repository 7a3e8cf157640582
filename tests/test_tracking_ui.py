"""The UI-facing side of tracking (drevt_sweep/tracking/ui.py): the runs carry only their own
policy's settings, and the experiment is tagged so that the printed link opens on the results
(the browser check is in tests/test_mlflow_ui.py)."""

from __future__ import annotations

import json

from hydra import compose, initialize_config_module

from drevt_sweep.sweep.app import _setting_params, result_config
from drevt_sweep.sweep.config import register_configs
from drevt_sweep.tracking import ui


def _params(policy: str) -> dict:
    register_configs()
    with initialize_config_module("drevt_sweep.conf", version_base="1.3"):
        return _setting_params(result_config(compose("config", overrides=[f"policy={policy}"])))


def test_runs_log_only_their_own_policys_settings():
    fcfs, multifactor, conservative = _params("fcfs"), _params("multifactor_easy"), _params("conservative")
    assert not [k for k in fcfs if k.startswith(ui.MULTIFACTOR_KEYS) or k == "policy.compression"]
    assert {"policy.weights.age", "policy.weights.fairshare", "policy.max_age"} <= set(multifactor)
    assert conservative["policy.compression"] == "compress_first"
    assert len(multifactor) - len(fcfs) >= 10


def test_the_experiment_carries_the_view_the_link_opens(tmp_path):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    eid = client.create_experiment("drevt-sweep", artifact_location=str(tmp_path / "art"))
    ui.prepare(client, eid)
    ui.prepare(client, eid)  # idempotent
    tags = client.get_experiment(eid).tags
    assert tags["mlflow.experimentKind"] == "custom_model_development"
    view = json.loads(tags[ui.SHARE_TAG + ui.VIEW_KEY])
    assert view["searchFilter"] == "tags.drevt_kind = 'configuration'"
    assert "metrics.`wait_mean`" in view["selectedColumns"] and "params.`policy.name`" in view["selectedColumns"]
    assert ui.link(eid) == f"http://127.0.0.1:5000/#/experiments/{eid}/runs?viewStateShareKey={ui.VIEW_KEY}"
