"""The sweep report in a real headless Chromium (Debian's ``chromium``; .ci/run installs it):
it loads from disk with no console message, every embedded figure decodes, and every table
fits a 1366-px-wide window."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sweep_helpers import run_sweep

pytestmark = pytest.mark.slow
WIDTH = 1366
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# A page that loads the report in a 1366-px frame and writes what it finds into its own DOM,
# which --dump-dom prints once the frame (and so the page) has loaded.
PROBE = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="report" src="%(url)s" style="width:%(width)dpx;height:900px;border:0"></iframe>
<script>
document.getElementById("report").addEventListener("load", function () {
  var doc = this.contentDocument, view = doc.documentElement.clientWidth;
  var images = Array.from(doc.images);
  var found = {
    images: images.length,
    broken: images.filter(function (i) { return !(i.complete && i.naturalWidth > 0); })
                  .map(function (i) { return i.alt; }),
    tables: doc.querySelectorAll("table").length,
    too_wide: Array.from(doc.querySelectorAll("table, figure, pre"))
                   .filter(function (t) { return t.getBoundingClientRect().right > view + 0.5; })
                   .map(function (t) { return t.tagName + "." + t.className; }),
    page_width: doc.documentElement.scrollWidth, view: view};
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
});
</script></body></html>"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("chromium is not installed (.ci/run installs Debian's chromium package)")


def browse(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    profile.mkdir()  # an empty profile: nothing of the user's browser takes part
    return subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", "--allow-file-access-from-files",
         "--enable-logging=stderr", "--v=0", f"--window-size={WIDTH},900",
         "--virtual-time-budget=10000", *extra, page.as_uri()],
        capture_output=True, text=True, timeout=180)


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_the_probe_sees_console_errors_and_broken_figures(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><script>console.error("boom")</script>'
                   '<img alt="gone" src="data:image/png;base64,AAAA"></body></html>')
    probe = tmp_path / "probe.html"
    probe.write_text(PROBE % {"url": bad.as_uri(), "width": WIDTH})
    proc = browse(probe, tmp_path / "profile", "--dump-dom")
    found = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout).group(1))
    assert found["broken"] == ["gone"]
    assert any('"boom"' in line for line in console_messages(proc.stderr))


def probe_report(report: Path, tmp_path: Path) -> dict:
    """What the probe finds in ``report`` in a 1366-px frame (no console message allowed)."""
    probe = tmp_path / "probe.html"
    probe.write_text(PROBE % {"url": report.as_uri(), "width": WIDTH})
    proc = browse(probe, tmp_path / "profile", "--dump-dom")
    match = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout)
    assert match, proc.stderr[-2000:]
    assert console_messages(proc.stderr) == []
    return json.loads(match.group(1))


def test_the_report_loads_renders_and_fits(tmp_path):
    run_sweep(tmp_path, "policy=fcfs,easy,conservative", "run_time=limit,normal", "replicates=3",
              "figures=auto")
    found = probe_report(tmp_path / "sweep" / "report.html", tmp_path)
    # comparison, CDF, paired, and the per-configuration figures of six configurations
    assert found["images"] >= 3 + 6 * 3 and found["broken"] == []
    assert found["tables"] >= 3 and found["too_wide"] == []
    assert found["page_width"] <= found["view"]  # no horizontal scrolling


def test_the_partition_section_loads_and_fits(tmp_path):
    """A machine with partitions: its tables and figure load and fit the window too."""
    from test_report_partitions import partitioned_sweep

    from drevt_sweep.report import html as report

    found = probe_report(report.build_report(partitioned_sweep(tmp_path)), tmp_path)
    assert found["tables"] >= 2 and found["broken"] == [] and found["too_wide"] == []
    assert found["page_width"] <= found["view"]
