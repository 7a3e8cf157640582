"""``drevt-sweep-fetch NAME``: download a public trace of the catalogue into the user data
folder, check its sha256 and size, and say where it is (the configs look there first).

The download goes to a temporary file beside the target and is moved into place only once its
checksum matches, so an interrupted or corrupted download never leaves a trace behind.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Sequence

from ..trace.catalogue import CATALOGUE, data_dir

PROG = "drevt-sweep-fetch"
CHUNK = 1 << 20


class FetchError(Exception):
    """A download that cannot be done or does not check out (a message for the user)."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(name: str, folder: Path | None = None, url: str | None = None,
          timeout: float = 60.0) -> tuple[Path, bool]:
    """Download catalogue trace ``name`` (from ``url`` instead of the catalogue's, e.g. a
    mirror) into ``folder``; return its path and whether it was downloaded now."""
    entry = CATALOGUE.get(name)
    if entry is None:
        raise FetchError(f"unknown trace '{name}'; the catalogue has: {', '.join(CATALOGUE)}")
    source = url or entry.url
    if source is None:
        raise FetchError(f"{name} has no public download: {entry.note}")
    folder = Path(folder) if folder else data_dir()
    target = folder / entry.file
    if target.is_file() and (entry.sha256 is None or sha256_of(target) == entry.sha256):
        return target, False
    folder.mkdir(parents=True, exist_ok=True)
    digest, size = hashlib.sha256(), 0
    handle = tempfile.NamedTemporaryFile(dir=folder, prefix=f".{entry.file}.", delete=False)
    try:
        with handle:
            try:
                with urllib.request.urlopen(source, timeout=timeout) as response:
                    for block in iter(lambda: response.read(CHUNK), b""):
                        handle.write(block)
                        digest.update(block)
                        size += len(block)
            except urllib.error.HTTPError as exc:
                raise FetchError(f"{source}: HTTP {exc.code} {exc.reason}") from None
            except (urllib.error.URLError, OSError) as exc:
                raise FetchError(f"{source}: {getattr(exc, 'reason', exc)}") from None
        if entry.sha256 is not None and digest.hexdigest() != entry.sha256:
            raise FetchError(
                f"{source}: sha256 {digest.hexdigest()} ({size:,} bytes), expected "
                f"{entry.sha256} ({entry.size:,} bytes): not the file the catalogue knows (a "
                "new version on the archive, or a damaged download); nothing was kept")
        os.replace(handle.name, target)
    finally:
        if os.path.exists(handle.name):
            os.unlink(handle.name)
    return target, True


def _list() -> str:
    rows = []
    for entry in CATALOGUE.values():
        size = f"{entry.size / 1e6:.1f} MB" if entry.size else "?"
        where = entry.url or f"no public download: {entry.note}"
        rows.append(f"{entry.name:<11} {entry.file:<32} {size:>8}  {entry.description}\n"
                    f"{'':<11} {where}\n{'':<11} sha256 {entry.sha256 or '?'}\n"
                    f"{'':<11} cite: {entry.citation}")
    return "\n".join(rows)


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
    args = parser.parse_args(argv)
    if args.list or not args.name:
        print(_list())
        return 0 if args.list else 2
    try:
        path, downloaded = fetch(args.name, args.dir, args.url)
    except FetchError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted; nothing was kept", file=sys.stderr)
        return 130
    entry = CATALOGUE[args.name]
    print(f"{'downloaded' if downloaded else 'already there'}: {path} (sha256 verified)")
    print(f"use it: drevt-sweep trace={args.name}")
    print(f"cite: {entry.citation}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
