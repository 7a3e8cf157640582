"""MLflow's usage telemetry is off in drevt-sweep's commands unless the user chose."""

from __future__ import annotations

import pytest

from drevt_sweep.tracking import without_telemetry
from drevt_sweep.tracking.server import without_job_runners


@pytest.mark.parametrize("environ, expected", [
    ({}, "true"),
    ({"MLFLOW_DISABLE_TELEMETRY": "false"}, "false"),  # the user's choice is kept
    ({"DO_NOT_TRACK": "false"}, None),  # ... whichever variable says it
])
def test_telemetry_is_off_unless_the_user_chose(environ, expected):
    assert without_telemetry(environ).get("MLFLOW_DISABLE_TELEMETRY") == expected
    assert without_job_runners(environ).get("MLFLOW_DISABLE_TELEMETRY") == expected


def test_the_environment_given_is_not_changed():
    environ = {"PATH": "/bin"}
    assert without_telemetry(environ) == {"PATH": "/bin", "MLFLOW_DISABLE_TELEMETRY": "true"}
    assert environ == {"PATH": "/bin"}


@pytest.mark.slow
def test_mlflow_reads_the_switch():
    """The variable is the one MLflow itself reads (its name could change between versions):
    asked in a clean environment, as MLflow also turns itself off in CI and under pytest."""
    import os
    import subprocess
    import sys

    ask = "from mlflow.telemetry.utils import is_telemetry_disabled as d; print(d())"
    answers = []
    for value in ("false", "true"):
        env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"),
               "MLFLOW_DISABLE_TELEMETRY": value}
        answers.append(subprocess.run([sys.executable, "-c", ask], env=env, capture_output=True,
                                      text=True, check=True).stdout.strip())
    assert answers == ["False", "True"]
