"""``drevt-sweep-fetch NAME``: download a public trace of the catalogue into the user data
folder, check its sha256 and size, and say where it is (the configs look there first).

The download goes to a temporary file beside the target (``.<file>.<pid>.<random>.part``) and
is moved into place only once its checksum matches, so an interrupted or corrupted download
never leaves a trace behind: on an error, Ctrl-C, SIGTERM or SIGHUP the temporary file is
removed (exit 130, 143, 129), and a partial file left by a process that died without cleaning
up (SIGKILL, a power cut) is removed by the next fetch into that folder. A download stops as
soon as it is larger than the cap: the catalogue's size of the file (``--max_bytes`` for
another), so a wrong URL cannot fill the disk. The fetched file gets the normal mode of a new
file (0666 minus the umask), as any file the user creates.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Sequence

from ..files import new_file_mode
from ..trace.catalogue import CATALOGUE, data_dir

PROG = "drevt-sweep-fetch"
CHUNK = 1 << 20
PARTIAL_SUFFIX = ".part"
STALE_SECONDS = 600  # a partial file without a process id is stale once untouched this long
SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name))


class FetchError(Exception):
    """A download that cannot be done or does not check out (a message for the user)."""


class Interrupted(BaseException):
    """A signal arrived during the download; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process
        return True
    return True


def remove_stale_partials(folder: Path, file: str) -> list[Path]:
    """Remove the partial downloads of ``file`` in ``folder`` whose process is gone (or, for a
    name without a process id, untouched for ``STALE_SECONDS``); return them."""
    removed = []
    try:
        candidates = list(folder.glob(f".{file}.*"))
    except OSError:
        return removed
    for path in candidates:
        parts = path.name[len(file) + 2:].split(".")
        pid = int(parts[0]) if parts and parts[0].isdigit() else None
        try:
            stale = (not _alive(pid)) if pid is not None and pid != os.getpid() else (
                pid is None and time.time() - path.stat().st_mtime > STALE_SECONDS)
            if stale and path.is_file():
                path.unlink()
                removed.append(path)
        except OSError:
            pass
    return removed


class _SignalsRaise:
    """While active, SIGTERM, SIGHUP and SIGINT raise ``Interrupted`` in the main thread, so
    that the download's ``finally`` removes its temporary file (the default action of SIGTERM
    and SIGHUP would end the process at once and leave it behind)."""

    def __enter__(self):
        self.previous = {}
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                self.previous[signum] = signal.signal(signum, self._raise)
        return self

    @staticmethod
    def _raise(signum, frame):
        raise Interrupted(signum)

    def __exit__(self, *exc) -> bool:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        return False


def fetch(name: str, folder: Path | None = None, url: str | None = None,
          timeout: float = 60.0, max_bytes: int | None = None) -> tuple[Path, bool]:
    """Download catalogue trace ``name`` (from ``url`` instead of the catalogue's, e.g. a
    mirror) into ``folder``; return its path and whether it was downloaded now. A download
    larger than ``max_bytes`` (default: the catalogue's size of the file) is stopped and
    refused."""
    entry = CATALOGUE.get(name)
    if entry is None:
        raise FetchError(f"unknown trace '{name}'; the catalogue has: {', '.join(CATALOGUE)}")
    source = url or entry.url
    if source is None:
        raise FetchError(f"{name} has no public download: {entry.note}")
    limit = max_bytes or entry.size
    if not limit:
        raise FetchError(f"{name}: the catalogue gives no size for it; give --max_bytes")
    folder = Path(folder) if folder else data_dir()
    target = folder / entry.file
    if target.is_file() and (entry.sha256 is None or sha256_of(target) == entry.sha256):
        return target, False
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(folder, entry.file)
    digest, size = hashlib.sha256(), 0
    with _SignalsRaise():
        fd, partial = tempfile.mkstemp(dir=folder, prefix=f".{entry.file}.{os.getpid()}.",
                                       suffix=PARTIAL_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as handle:
                try:
                    with urllib.request.urlopen(source, timeout=timeout) as response:
                        announced = response.headers.get("Content-Length", "")
                        if announced.isdigit() and int(announced) > limit:
                            raise FetchError(_too_large(source, f"{int(announced):,} bytes", limit))
                        for block in iter(lambda: response.read(CHUNK), b""):
                            size += len(block)
                            if size > limit:
                                raise FetchError(_too_large(source, f"more than {limit:,} bytes", limit))
                            handle.write(block)
                            digest.update(block)
                except urllib.error.HTTPError as exc:
                    raise FetchError(f"{source}: HTTP {exc.code} {exc.reason}") from None
                except (urllib.error.URLError, OSError) as exc:
                    reason = getattr(exc, "reason", exc)
                    raise FetchError(f"{source}: {getattr(reason, 'strerror', None) or reason}") from None
                except ValueError as exc:  # not a URL at all ("/path", "http://[::1")
                    raise FetchError(f"{source}: not a URL that can be downloaded ({exc})") from None
            if entry.sha256 is not None and digest.hexdigest() != entry.sha256:
                raise FetchError(
                    f"{source}: sha256 {digest.hexdigest()} ({size:,} bytes), expected "
                    f"{entry.sha256} ({entry.size:,} bytes): not the file the catalogue knows (a "
                    "new version on the archive, or a damaged download); nothing was kept")
            os.chmod(partial, new_file_mode())
            os.replace(partial, target)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
    return target, True


def _too_large(source: str, what: str, limit: int) -> str:
    return (f"{source}: the download is {what}, larger than the cap of {limit:,} bytes (the "
            "catalogue's size of this file; --max_bytes sets another); nothing was kept")


def _list() -> str:
    rows = []
    for entry in CATALOGUE.values():
        size = f"{entry.size / 1e6:.1f} MB" if entry.size else "?"
        where = entry.url or f"no public download: {entry.note}"
        rows.append(f"{entry.name:<11} {entry.file:<32} {size:>8}  {entry.description}\n"
                    f"{'':<11} {where}\n{'':<11} sha256 {entry.sha256 or '?'}\n"
                    f"{'':<11} cite: {entry.citation}")
    return "\n".join(rows)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of bytes, got '{text}'")
    return int(text)


def main(argv: Sequence[str] | None = None) -> int:
    """0: the trace is there; 2: an unknown name, a failed download or a wrong checksum."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Download a public workload trace that conf/trace/ names, check "
        "its sha256, and keep it where drevt-sweep looks (trace=NAME then works).")
    parser.add_argument("name", nargs="?", metavar="NAME", help=f"one of {', '.join(CATALOGUE)}")
    parser.add_argument("--list", action="store_true", help="list the catalogue and exit")
    parser.add_argument("--dir", type=Path, default=None,
                        help=f"where to put it (default: {data_dir()})")
    parser.add_argument("--url", default=None, help="download from here instead (a mirror)")
    parser.add_argument("--max_bytes", type=_positive, default=None, metavar="N",
                        help="stop and refuse a download larger than N bytes (default: the "
                        "catalogue's size of the file)")
    args = parser.parse_args(argv)
    if args.list or not args.name:
        print(_list())
        return 0 if args.list else 2
    try:
        path, downloaded = fetch(args.name, args.dir, args.url, max_bytes=args.max_bytes)
    except FetchError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted; nothing was kept", file=sys.stderr)
        return 130
    except Interrupted as exc:
        print(f"\n{PROG}: {exc} received; nothing was kept", file=sys.stderr)
        return 128 + exc.signum
    entry = CATALOGUE[args.name]
    print(f"{'downloaded' if downloaded else 'already there'}: {path} (sha256 verified)")
    print(f"use it: drevt-sweep trace={args.name}")
    print(f"cite: {entry.citation}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
