"""drevt-sweep-fetch against a loopback HTTP server (127.0.0.1 only, no internet), and the
configs finding what it fetched: the user data folder first, then $DREVT_TRACE_DIR."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from drevt_sweep.trace.catalogue import CATALOGUE, data_dir, locate
from drevt_sweep.cli.fetch import main as fetch_main

LANL = CATALOGUE["lanl_cm5"]
KTH = CATALOGUE["kth_sp2"]
BUNDLED_KTH = Path(__file__).resolve().parents[1] / "drevt_sweep" / "data" / "traces" / KTH.file


@pytest.fixture
def server(tmp_path):
    """Serves ``tmp_path/www`` on 127.0.0.1; yields (folder, base URL)."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def user_data(tmp_path, monkeypatch):
    """A user data folder of the test's own (platformdirs follows XDG_DATA_HOME on Linux)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DREVT_TRACE_DIR", raising=False)
    if sys.platform != "linux":
        pytest.skip("XDG_DATA_HOME moves the user data folder on Linux only")
    return data_dir()


def test_the_catalogue_matches_the_traces_we_have(shared_traces):
    sums = dict(reversed(line.split()) for line in (shared_traces / "SHA256SUMS").read_text().splitlines())
    for entry in CATALOGUE.values():
        assert entry.sha256 == sums[entry.file], entry.name
        assert entry.size == (shared_traces / entry.file).stat().st_size
        assert entry.citation and entry.description
        assert entry.url or entry.note  # where it comes from, or why it cannot be fetched


def test_fetch_downloads_verifies_and_says_where(server, user_data, shared_traces, capsys):
    root, base = server
    shutil.copy(shared_traces / LANL.file, root / LANL.file)
    assert fetch_main(["lanl_cm5", "--url", f"{base}/{LANL.file}"]) == 0
    target = user_data / LANL.file
    assert hashlib.sha256(target.read_bytes()).hexdigest() == LANL.sha256
    out = capsys.readouterr().out
    assert f"downloaded: {target}" in out and "trace=lanl_cm5" in out
    assert locate("lanl_cm5") == str(target)
    (root / LANL.file).unlink()  # a second fetch does not download again
    assert fetch_main(["lanl_cm5", "--url", f"{base}/{LANL.file}"]) == 0
    assert "already there" in capsys.readouterr().out


def test_a_wrong_file_is_refused_and_nothing_is_kept(server, user_data, capsys):
    root, base = server
    (root / LANL.file).write_bytes(b"; not the LANL log\n")
    assert fetch_main(["lanl_cm5", "--url", f"{base}/{LANL.file}"]) == 2
    err = capsys.readouterr().err
    assert "sha256" in err and LANL.sha256 in err and "nothing was kept" in err
    assert not user_data.exists() or list(user_data.iterdir()) == []
    assert fetch_main(["lanl_cm5", "--url", f"{base}/missing.swf.gz"]) == 2
    assert "HTTP 404" in capsys.readouterr().err
    assert fetch_main(["no_such_trace"]) == 2
    assert fetch_main(["kabre"]) == 2  # not public
    assert "no public download" in capsys.readouterr().err


def test_the_data_folder_comes_before_drevt_trace_dir(tmp_path, user_data, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / LANL.file).write_bytes(b"x")
    assert locate("lanl_cm5") == str(user_data / LANL.file)  # nowhere yet: where fetch puts it
    monkeypatch.setenv("DREVT_TRACE_DIR", str(elsewhere))
    assert locate("lanl_cm5") == str(elsewhere / LANL.file)
    user_data.mkdir(parents=True)
    (user_data / LANL.file).write_bytes(b"y")
    assert locate("lanl_cm5") == str(user_data / LANL.file)


def test_no_config_refers_to_the_development_folders():
    conf = Path(__file__).resolve().parents[1] / "conf"
    package = Path(__file__).resolve().parents[1] / "drevt_sweep"
    for path in list(conf.rglob("*.yaml")) + list(package.rglob("*.py")):
        assert "shared/traces" not in path.read_text(), path


@pytest.mark.slow
def test_trace_lanl_cm5_works_after_one_fetch(server, tmp_path, shared_traces):
    root, base = server
    shutil.copy(shared_traces / LANL.file, root / LANL.file)
    env = {k: v for k, v in os.environ.items() if k != "DREVT_TRACE_DIR"}
    env.update(XDG_DATA_HOME=str(tmp_path / "xdg"), PYTHONWARNINGS="ignore")
    sweep = [sys.executable, "-m", "drevt_sweep", "trace=lanl_cm5", "policy=fcfs",
             "workload.max_jobs=3000", "tracking.enabled=false", "progress=false",
             f"paths.output_root={tmp_path / 'out'}"]
    before = subprocess.run(sweep, capture_output=True, text=True, env=env, timeout=300)
    assert before.returncode == 2 and "drevt-sweep-fetch lanl_cm5" in before.stderr
    fetched = subprocess.run([sys.executable, "-m", "drevt_sweep.cli.fetch", "lanl_cm5",
                              "--url", f"{base}/{LANL.file}"], capture_output=True, text=True,
                             env=env, timeout=300)
    assert fetched.returncode == 0, fetched.stderr
    after = subprocess.run(sweep, capture_output=True, text=True, env=env, timeout=600)
    assert after.returncode == 0, after.stderr[-2000:]
    assert "FINISHED" in after.stdout


# ----------------------------------------------------------------- issue 28 item 4, issue 29 item 11

class _SlowHandler(http.server.BaseHTTPRequestHandler):
    """Serves ``size`` bytes in pieces of ``piece`` bytes, ``pause`` seconds apart (``length``:
    announce the size in Content-Length)."""

    size = LANL.size
    pause = 0.5
    length = True
    piece = 1 << 16

    def do_GET(self):
        self.send_response(200)
        if self.length:
            self.send_header("Content-Length", str(self.size))
        self.end_headers()
        sent = 0
        try:
            while sent < self.size:
                piece = min(self.piece, self.size - sent)
                self.wfile.write(b"\0" * piece)
                self.wfile.flush()
                sent += piece
                time.sleep(self.pause)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def slow_server():
    """A server on 127.0.0.1 that serves slowly; yields a function(size, pause, length, piece)
    -> URL."""
    servers = []

    def start(size=LANL.size, pause=0.5, length=True, piece=1 << 16):
        handler = type("Handler", (_SlowHandler,), {"size": size, "pause": pause, "length": length, "piece": piece})
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/{LANL.file}"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def _fetch_process(tmp_path, url):
    env = {k: v for k, v in os.environ.items() if k != "DREVT_TRACE_DIR"}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    return subprocess.Popen([sys.executable, "-m", "drevt_sweep.cli.fetch", "lanl_cm5", "--url", url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_mid_download_leaves_no_partial_file(tmp_path, user_data, slow_server, signum):
    # (pieces of the fetch's read size: its first block is on disk after one piece, not 16 x 0.5 s)
    process = _fetch_process(tmp_path, slow_server(piece=1 << 20))
    deadline = time.monotonic() + 60
    partials = []
    while time.monotonic() < deadline and not partials:  # wait until the download is under way
        partials = [p for p in user_data.glob(f".{LANL.file}.*") if p.stat().st_size > 0] \
            if user_data.exists() else []
        time.sleep(0.05)
    assert partials, "the download never started"
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, err
    assert "nothing was kept" in err and "Traceback" not in err
    assert list(user_data.iterdir()) == []


def test_a_partial_file_of_a_dead_fetch_is_removed_by_the_next_one(tmp_path, user_data, server):
    root, base = server
    shutil.copy(BUNDLED_KTH, root / LANL.file)
    user_data.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    killed = user_data / f".{KTH.file}.{dead}.abc123.part"  # a fetch that got SIGKILL
    killed.write_bytes(b"x" * 1000)
    old_style = user_data / f".{KTH.file}.k2j4h5"  # the partial names before this change
    old_style.write_bytes(b"y")
    os.utime(old_style, (time.time() - 3600,) * 2)
    running = user_data / f".{KTH.file}.{os.getpid()}.zzz.part"  # a fetch still running: kept
    running.write_bytes(b"z")
    assert fetch_main(["kth_sp2", "--url", f"{base}/{LANL.file}"]) == 0
    assert sorted(p.name for p in user_data.iterdir()) == sorted([KTH.file, running.name])


@pytest.mark.parametrize("announced", [True, False], ids=["content-length", "streamed"])
def test_a_download_larger_than_the_catalogue_says_is_stopped(tmp_path, user_data, slow_server, capsys,
                                                             announced):
    url = slow_server(size=LANL.size + (1 << 20), pause=0.0, length=announced)
    assert fetch_main(["lanl_cm5", "--url", url]) == 2
    err = capsys.readouterr().err
    assert f"larger than the cap of {LANL.size:,} bytes" in err and "--max_bytes" in err
    assert list(user_data.iterdir()) == []


def test_the_fetched_file_has_the_normal_mode_of_a_new_file(server, user_data):
    root, base = server
    shutil.copy(BUNDLED_KTH, root / KTH.file)
    assert fetch_main(["kth_sp2", "--url", f"{base}/{KTH.file}"]) == 0
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE((user_data / KTH.file).stat().st_mode) == 0o666 & ~umask
