"""MLflow glue: the store and its runs (``store``), the helper process that writes them while
the sweep works (``helper``), and the shared PostgreSQL tracking server (``server``)."""

import os

# MLflow 3 sends usage telemetry over HTTP from every process that opens a client (a thread
# fetching its configuration at the first client: seen in the tracking helper's profile).
# drevt-sweep's commands turn it off unless the user chose (MLFLOW_DISABLE_TELEMETRY or
# DO_NOT_TRACK set): they run as batch jobs on compute nodes, often without internet, and
# running a simulator is not a decision to report to a third party. The Python API leaves
# MLflow's own default alone (a notebook's MLflow is the user's).
TELEMETRY_OFF = {"MLFLOW_DISABLE_TELEMETRY": "true"}


def without_telemetry(environ=None) -> dict:
    """``environ`` (default: this process's, changed in place) with MLflow's telemetry off
    unless the user set ``MLFLOW_DISABLE_TELEMETRY`` or ``DO_NOT_TRACK``."""
    target = os.environ if environ is None else dict(environ)
    if "MLFLOW_DISABLE_TELEMETRY" not in target and "DO_NOT_TRACK" not in target:
        target.update(TELEMETRY_OFF)
    return target
