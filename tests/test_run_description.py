"""The run description (``mlflow.note.content``) keeps every override inside its code block
(issue 29 item 2): a value holding a newline and a closing fence used to end the block, putting
an ``<img onerror=…>``, a ``javascript:`` link and an external image into the rendered markdown."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from drevt_sweep.sweep.naming import description, longest_backtick_run

PAYLOAD = ("x\n```\n<img src=x onerror=alert(1)>\n[click](javascript:alert(1))\n"
           "![](https://evil.example/p.png)\n```")
DANGER = ("<img", "javascript:", "evil.example")


def fenced_blocks(markdown: str) -> tuple[list[str], str]:
    """CommonMark's fenced code blocks (backtick fences; spec 0.31 section 4.5): a block opens
    at a line of 3+ backticks (up to 3 spaces of indent) and closes at the first line of at
    least as many backticks and nothing else. Returns the blocks' contents and the rest."""
    lines, blocks, outside, i = markdown.split("\n"), [], [], 0
    while i < len(lines):
        opening = re.match(r"^ {0,3}(`{3,})[^`]*$", lines[i])
        if not opening:
            outside.append(lines[i])
            i += 1
            continue
        closing = re.compile(r"^ {0,3}`{%d,}\s*$" % len(opening.group(1)))
        body, i = [], i + 1
        while i < len(lines) and not closing.match(lines[i]):
            body.append(lines[i])
            i += 1
        blocks.append("\n".join(body))
        i += 1
    return blocks, "\n".join(outside)


@pytest.mark.parametrize("command", [
    "drevt-sweep trace.name=plain",
    f"drevt-sweep 'trace.name={PAYLOAD}'",
    "drevt-sweep 'a=````\n`````x\n``````'",  # longer and longer fences
    "drevt-sweep 'a=\n   ```\n```   '",  # indented and trailing-space closers
])
def test_the_command_is_the_one_code_block_whatever_its_backticks(command):
    blocks, outside = fenced_blocks(description(command, "a note"))
    assert blocks == [command]
    assert "a note" in outside and not any(d in outside for d in DANGER)


def test_the_fence_is_longer_than_the_longest_backtick_run():
    assert longest_backtick_run("a ``` b ````` c `") == 5
    assert description("a ````` b").splitlines()[2] == "``````"
    assert description("plain").splitlines()[2] == "```"


@pytest.mark.slow
def test_a_hostile_override_stays_inside_the_block_in_the_stored_description(tmp_path):
    """The probe's value through a real run, read back from the real sqlite store."""
    from mlflow.tracking import MlflowClient

    from sweep_helpers import TINY

    proc = subprocess.run([
        sys.executable, "-m", "drevt_sweep", "trace=custom", f"trace.path={TINY}",
        "format=simple", "format.queues=[all]", "system=custom", "system.total_nodes=10",
        "run_time=actual", "progress=false", f"paths.output_root={tmp_path / 'out'}",
        f"hydra.run.dir={tmp_path / 'run'}", f"trace.name='{PAYLOAD}'",
    ], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    found = client.search_runs([client.get_experiment_by_name("drevt-sweep").experiment_id])
    assert len(found) == 2  # the configuration and its one seed
    for run in found:
        blocks, outside = fenced_blocks(run.data.tags["mlflow.note.content"])
        assert len(blocks) == 1 and PAYLOAD.splitlines()[2] in blocks[0]
        assert not any(d in outside for d in DANGER), outside
