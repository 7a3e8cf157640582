"""A shared MLflow tracking server backed by PostgreSQL, on this machine, for trying it out.

    python -m drevt_sweep.tracking.server run      # foreground (what `make server` runs); Ctrl-C stops it
    python -m drevt_sweep.tracking.server start    # in the background; prints the tracking URI
    python -m drevt_sweep.tracking.server status
    python -m drevt_sweep.tracking.server stop

What it does: finds PostgreSQL's programs (Debian: ``apt-get install postgresql``), creates a
database cluster in ``outputs/pg`` the first time (``initdb``; password authentication, a
random password kept in ``outputs/pgpass``), starts it on 127.0.0.1 only with no Unix socket,
on a free port, creates the ``mlflow`` database, and runs ``mlflow server --host 127.0.0.1``
with that database as its backend store and ``outputs/server-artifacts`` as the place where
it keeps the artifacts that clients upload through it. Sweeps then use
``tracking.uri=http://127.0.0.1:5001``. Data survive a stop; ``make clean`` removes them.

Everything listens on the loopback interface only. For a server that a cluster's nodes
reach, see the README ("Running on a cluster"): the same two programs, run by hand on a
service host with its own PostgreSQL.

PostgreSQL refuses to run as root: when started by root, the database programs run as the
``postgres`` user (created by the Debian package), which then owns ``outputs/pg``.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from .liveness import pid_alive

DB_USER = "mlflow"
DB_NAME = "mlflow"
DEFAULT_PORT = 5001  # `make ui` uses 5000


class ServerError(Exception):
    """Something the user can fix (a missing package, a port in use); printed without traceback."""


# ---------------------------------------------------------------- PostgreSQL
def find_pg_bin() -> Path:
    """The folder of initdb/pg_ctl/postgres: from PATH, else the newest /usr/lib/postgresql/*/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    candidates = []
    for path in Path("/usr/lib/postgresql").glob("*/bin/initdb"):
        version = re.findall(r"\d+", path.parent.parent.name)
        candidates.append((int(version[0]) if version else 0, path.parent))
    if not candidates:
        raise ServerError(
            "PostgreSQL is not installed (no initdb on PATH or under /usr/lib/postgresql); "
            "on Debian/Ubuntu: sudo apt-get install postgresql"
        )
    return max(candidates)[1]


def _db_account() -> str | None:
    """Who runs the database programs: ourselves, or 'postgres' (else 'nobody') when root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise ServerError("running as root and there is no 'postgres' user to run PostgreSQL as")


def _as_db_account(cmd: list[str], cwd: Path, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    account = _db_account()
    if account is not None:
        entry = pwd.getpwnam(account)
        kwargs.update(user=entry.pw_uid, group=entry.pw_gid, extra_groups=[])
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kwargs)
    if check and proc.returncode != 0:
        raise ServerError(f"{Path(cmd[0]).name} failed ({proc.returncode}): "
                          f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
    return proc


def _give_to_db_account(path: Path) -> None:
    account = _db_account()
    if account is not None:
        entry = pwd.getpwnam(account)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _check_reachable_by(account: str | None, path: Path) -> None:
    """The database account must be able to walk down to its data folder."""
    if account is None:
        return
    for parent in reversed(path.resolve().parents):
        mode = parent.stat().st_mode
        if not mode & 0o001:
            raise ServerError(
                f"{parent} is not searchable by the '{account}' user that runs PostgreSQL; "
                "pick a data folder elsewhere with --pgdata (make server: SERVER_ROOT=DIR)"
            )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def init_cluster(pg_bin: Path, pgdata: Path, pgpass: Path) -> None:
    """initdb once: UTF-8, password (scram) authentication, loopback only, no Unix socket."""
    if (pgdata / "PG_VERSION").exists():
        if not pgpass.exists():
            raise ServerError(f"{pgdata} exists but its password file {pgpass} is gone; "
                              f"remove {pgdata} to start afresh")
        return
    account = _db_account()
    _check_reachable_by(account, pgdata.parent)
    pgdata.mkdir(parents=True, exist_ok=True)
    pgdata.chmod(0o700)
    _give_to_db_account(pgdata)
    password = secrets.token_urlsafe(24)
    fd, name = tempfile.mkstemp(prefix=".initdb-", dir=pgdata.parent)  # mode 0600
    pwfile = Path(name)
    with os.fdopen(fd, "w") as handle:
        handle.write(password + "\n")
    _give_to_db_account(pwfile)
    try:
        _as_db_account(
            [str(pg_bin / "initdb"), "-D", str(pgdata), "-U", DB_USER, f"--pwfile={pwfile}",
             "--auth-host=scram-sha-256", "--auth-local=scram-sha-256", "--encoding=UTF8",
             "--no-locale"],
            cwd=pgdata,
        )
    finally:
        pwfile.unlink(missing_ok=True)
    with open(pgdata / "postgresql.conf", "a") as conf:
        conf.write("\n# drevt_sweep.server: loopback only, TCP only\n"
                   "listen_addresses = '127.0.0.1'\nunix_socket_directories = ''\n")
    # libpq reads the password from here (never on a command line); it must be private.
    pgpass.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(pgpass, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"127.0.0.1:*:*:{DB_USER}:{password}\n")


def postgres_port(pgdata: Path) -> int | None:
    """The port of the postmaster running on ``pgdata``, if one is."""
    pid_file = pgdata / "postmaster.pid"
    try:
        lines = pid_file.read_text().splitlines()
        pid, port = int(lines[0]), int(lines[3])
    except (OSError, IndexError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return port


def start_postgres(pg_bin: Path, pgdata: Path, port: int | None = None) -> int:
    """Start the cluster (if not running) on 127.0.0.1:``port`` (a free one by default)."""
    running = postgres_port(pgdata)
    if running is not None:
        return running
    port = port or free_port()
    _as_db_account(
        [str(pg_bin / "pg_ctl"), "-D", str(pgdata), "-l", str(pgdata / "postgres.log"),
         "-o", f"-p {port} -c listen_addresses=127.0.0.1", "-w", "-t", "60", "start"],
        cwd=pgdata,
    )
    return port


def stop_postgres(pg_bin: Path, pgdata: Path) -> None:
    if postgres_port(pgdata) is None:
        return
    _as_db_account([str(pg_bin / "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "-t", "60",
                    "stop"], cwd=pgdata, check=False)


def create_database(pg_bin: Path, port: int, pgpass: Path) -> None:
    env = {**os.environ, "PGPASSFILE": str(pgpass)}
    common = ["-h", "127.0.0.1", "-p", str(port), "-U", DB_USER]
    found = subprocess.run(
        [str(pg_bin / "psql"), *common, "-d", "postgres", "-tAc",
         f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}'"],
        capture_output=True, text=True, env=env,
    )
    if found.returncode != 0:
        raise ServerError(f"cannot reach PostgreSQL on 127.0.0.1:{port}: {found.stderr.strip()}")
    if found.stdout.strip() != "1":
        made = subprocess.run([str(pg_bin / "createdb"), *common, DB_NAME],
                              capture_output=True, text=True, env=env)
        if made.returncode != 0:
            raise ServerError(f"createdb failed: {made.stderr.strip()}")


def backend_store_uri(port: int) -> str:
    """No password in it: libpq (psycopg2) takes it from PGPASSFILE. The driver is named:
    SQLAlchemy 2.1 reads a bare ``postgresql://`` as psycopg 3, which we do not install."""
    return f"postgresql+psycopg2://{DB_USER}@127.0.0.1:{port}/{DB_NAME}"


# ---------------------------------------------------------------- MLflow
def _mlflow_command() -> list[str]:
    script = Path(sys.executable).parent / "mlflow"
    return [str(script)] if script.exists() else [sys.executable, "-m", "mlflow"]


def wait_healthy(url: str, proc: subprocess.Popen | None = None, timeout: float = 180.0,
                 log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-3000:] if log and log.exists() else ""
            raise ServerError(f"mlflow server exited with code {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise ServerError(f"mlflow server at {url} did not answer within {timeout:.0f} s")


# ---------------------------------------------------------------- the pair
@dataclass
class ServerState:
    root: str
    pgdata: str
    pg_bin: str
    pg_port: int
    port: int
    mlflow_pid: int
    artifacts: str
    log: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _paths(root: Path, pgdata: Path | None):
    root = root.resolve()
    return (root, (pgdata or root / "pg").resolve(), root / "pgpass", root / "server.json",
            root / "server-artifacts", root / "mlflow-server.log")


def read_state(root: Path) -> ServerState | None:
    try:
        return ServerState(**json.loads((root.resolve() / "server.json").read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _is_our_server(state: ServerState) -> bool:
    """The recorded pid is still our MLflow server (not a pid reused by something else)."""
    if not pid_alive(state.mlflow_pid):
        return False
    try:
        cmdline = Path(f"/proc/{state.mlflow_pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: trust the state file
    args = [a.decode(errors="replace") for a in cmdline]
    return "server" in args and str(state.port) in args and any("mlflow" in a for a in args)


def start(root: Path, port: int = DEFAULT_PORT, pgdata: Path | None = None,
          pg_port: int | None = None, workers: int = 1) -> ServerState:
    """Start PostgreSQL and an MLflow server on it, both on 127.0.0.1; returns at once when
    they already run. The MLflow server runs in its own process group (``stop`` ends it)."""
    root, pgdata, pgpass, state_file, artifacts, log = _paths(root, pgdata)
    state = read_state(root)
    if state is not None:
        if _is_our_server(state) and postgres_port(Path(state.pgdata)):
            return state
        stop(root)  # a half-dead pair from before: clear it
    root.mkdir(parents=True, exist_ok=True)
    pg_bin = find_pg_bin()
    init_cluster(pg_bin, pgdata, pgpass)
    pg_port = start_postgres(pg_bin, pgdata, pg_port)
    try:
        create_database(pg_bin, pg_port, pgpass)
        artifacts.mkdir(parents=True, exist_ok=True)
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                raise ServerError(f"port {port} on 127.0.0.1 is in use; pick another with --port") from None
        env = {**without_job_runners(os.environ), "PGPASSFILE": str(pgpass)}
        with open(log, "ab") as handle:
            proc = subprocess.Popen(
                [*_mlflow_command(), "server", "--host", "127.0.0.1", "--port", str(port),
                 "--backend-store-uri", backend_store_uri(pg_port),
                 "--artifacts-destination", str(artifacts), "--workers", str(workers)],
                stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT, env=env,
                cwd=root, start_new_session=True,
            )
        state = ServerState(str(root), str(pgdata), str(pg_bin), pg_port, port, proc.pid,
                            str(artifacts), str(log))
        state_file.write_text(json.dumps(asdict(state), indent=2))
        wait_healthy(state.url, proc, log=log)
    except BaseException:
        stop(root)
        stop_postgres(pg_bin, pgdata)
        raise
    return state


def without_job_runners(environ) -> dict:
    """``environ`` for an ``mlflow server``/``mlflow ui`` that starts no job runners: MLflow 3
    starts four Huey consumer processes for its GenAI jobs (evaluations, prompt optimisation),
    which we never submit -- 1.3 GB of memory and ten processes against 0.3 GB and two,
    measured with ``mlflow ui`` on a sweep's store. MLflow's telemetry is off too
    (``tracking.without_telemetry``). A value the user set is kept."""
    from . import without_telemetry

    return without_telemetry({"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **environ})


def stop(root: Path) -> bool:
    """Stop the MLflow server (its whole process group), then PostgreSQL."""
    state = read_state(root)
    if state is None:
        return False
    if _is_our_server(state):
        try:
            os.killpg(state.mlflow_pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 30
        while _reap(state.mlflow_pid) and pid_alive(state.mlflow_pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _reap(state.mlflow_pid) and pid_alive(state.mlflow_pid):
            try:
                os.killpg(state.mlflow_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _reap(state.mlflow_pid)
    stop_postgres(Path(state.pg_bin), Path(state.pgdata))
    (Path(state.root) / "server.json").unlink(missing_ok=True)
    return True


def _reap(pid: int) -> bool:
    """Collect our own child's exit status (a zombie still answers kill 0); always True."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return True


def _announce(state: ServerState) -> None:
    print(f"MLflow tracking server (PostgreSQL on 127.0.0.1:{state.pg_port}) at {state.url}")
    print(f"  sweep against it:  drevt-sweep -m policy=fcfs,easy tracking.uri={state.url}")
    print(f"  open the UI:       {state.url}")
    print(f"  logs: {state.log}, {Path(state.pgdata) / 'postgres.log'}", flush=True)


PROG = "python -m drevt_sweep.tracking.server"


def _default_root() -> Path:
    return Path(os.environ.get("DREVT_ROOT", ".")) / "outputs"


def stop_hint(root: Path) -> str:
    """The command that stops a server started with ``--root root`` (the root only when it is
    not the default, which ``stop`` would otherwise look in)."""
    same = Path(root).resolve() == _default_root().resolve()
    return f"{PROG} stop" + ("" if same else f" --root {root}")


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="A local MLflow tracking server on PostgreSQL, on 127.0.0.1 only.",
    )
    parser.add_argument("command", choices=("run", "start", "stop", "status"))
    parser.add_argument("--root", type=Path, default=_default_root(),
                        help="where the database, artifacts, logs and state go (default: ./outputs)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="MLflow's port (default 5001)")
    parser.add_argument("--pg-port", type=int, default=None, help="PostgreSQL's port (default: a free one)")
    parser.add_argument("--pgdata", type=Path, default=None, help="the database folder (default ROOT/pg)")
    parser.add_argument("--workers", type=int, default=1, help="MLflow server worker processes")
    args = parser.parse_args(argv)
    try:
        if args.command == "status":
            state = read_state(args.root)
            if state is None or not _is_our_server(state):
                print("not running")
                return 1
            _announce(state)
            return 0
        if args.command == "stop":
            print("stopped" if stop(args.root) else "not running")
            return 0
        if args.command == "run":  # Ctrl-C, kill or a closed terminal all stop both servers
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(signum, _interrupt)
        state = start(args.root, args.port, args.pgdata, args.pg_port, args.workers)
        _announce(state)
        if args.command == "start":
            print(f"  stop it:           {stop_hint(args.root)}")
            return 0
        print("  Ctrl-C stops it (the data stay in the database folder)", flush=True)
        try:
            while _reap(state.mlflow_pid) and pid_alive(state.mlflow_pid):
                time.sleep(1)
            print("mlflow server exited; stopping PostgreSQL", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("stopping", flush=True)
            return 0
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the stop short
            stop(args.root)
    except KeyboardInterrupt:
        stop(args.root)
        return 130
    except ServerError as exc:
        print(f"drevt-sweep server: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
