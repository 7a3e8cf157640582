"""The report of a 1,000-configuration sweep (issue 23's target: <= 5 MB, renders in headless
Chromium <= 3 s): build CPU time, size, and Chromium's time from navigation to a laid-out page.

    python benchmarks/bench_report.py [SWEEP_DIR]   # default: generate one (gen_sweep_folder.py)

The sweep folder is real simulations of KTH-SP2's first 30 days (FCFS/EASY x 100 machine sizes
x 5 run-time models); generating it is not timed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

PROBE = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="report" style="width:1366px;height:900px;border:0"></iframe>
<script>
var frame = document.getElementById("report"), started = performance.now();
frame.addEventListener("load", function () {
  frame.contentDocument.documentElement.getBoundingClientRect();
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({loaded_ms: performance.now() - started});
  document.body.appendChild(out);
});
frame.src = "%s";
</script></body></html>"""


def render_ms(report: Path) -> float:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        return float("nan")
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(PROBE % report.as_uri())
        proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               f"--user-data-dir={tmp}/profile", "--allow-file-access-from-files",
                               "--window-size=1366,900", "--dump-dom", probe.as_uri()],
                              capture_output=True, text=True, timeout=180)
    return json.loads(re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout).group(1))["loaded_ms"]


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    from drevt_sweep.report.html import build_report

    if args:
        sweep = Path(args[0])
    else:
        from gen_sweep_folder import write_sweep_folder

        sweep = write_sweep_folder(Path(tempfile.mkdtemp(prefix="drevt-bench-report-")) / "sweep")
    cpu, wall = time.process_time(), time.perf_counter()
    path = build_report(sweep)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    configurations = len(list(sweep.glob("*/result.json")))
    row = {"benchmark": "report", "configurations": configurations, "build_cpu_s": round(cpu, 2),
           "build_wall_s": round(wall, 2), "mb": round(path.stat().st_size / 1e6, 2),
           "render_ms": round(render_ms(path)), "target": "<= 5 MB, render <= 3000 ms"}
    row["met"] = row["mb"] <= 5 and row["render_ms"] <= 3000
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
