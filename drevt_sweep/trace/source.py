"""Opening a trace file: the one place that touches the file system.

Every reader starts from ``read_source``, which turns whatever is on disk into clean UTF-8 text
(as bytes, so that numpy can scan it) or raises one ``TraceError`` that says what is wrong:
a missing path, a directory, a FIFO or device, a symbolic-link loop, a folder that cannot be
entered, an unreadable file (``files.check_input``), a truncated or corrupt gzip stream, bytes that
are not UTF-8, binary data, or an empty file. Gzip is recognised by its magic bytes, not by the
file name. A UTF-8 byte-order mark is dropped and CRLF / CR line ends become LF, so that line
numbers mean the same thing on every platform.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from dataclasses import dataclass

from ..errors import TraceError
from ..files import read_input

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, eq=False)
class SourceText:
    """A trace file's text, ready to scan."""

    path: str
    data: bytes  # UTF-8, decompressed, without BOM, lines ending in b"\n"
    checksum: str  # sha256 of the file's bytes as stored (compressed if gzip)


def read_bytes(path: str) -> bytes:
    """The file's bytes as stored, or a ``TraceError`` naming the problem with the path (a
    regular file only: see ``files.read_input``); the file is protected from every output."""
    return read_input(path)


def checksum_of(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def read_source(path: str) -> SourceText:
    """Read, decompress and normalise one trace file."""
    raw = read_bytes(path)
    checksum = checksum_of(raw)
    data = _gunzip(raw, path) if raw[:2] == GZIP_MAGIC else raw
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    _check_text(data, path)
    return SourceText(path=path, data=data, checksum=checksum)


def _gunzip(raw: bytes, path: str) -> bytes:
    try:
        return gzip.decompress(raw)
    except EOFError:
        raise TraceError(
            "truncated gzip file: the compressed stream ends before its end marker", path=path
        ) from None
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        raise TraceError(f"corrupt gzip file: {exc}", path=path) from None


def _check_text(data: bytes, path: str) -> None:
    """Reject what cannot be a text trace, naming the line of the first offending byte."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise TraceError(
            "binary data (a NUL byte): this is not a text trace file",
            path=path,
            line=data.count(b"\n", 0, nul) + 1,
        )
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceError(
                f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} "
                "(re-save the file as UTF-8)",
                path=path,
                line=data.count(b"\n", 0, exc.start) + 1,
            ) from None
    if not data or data.isspace():
        raise TraceError("empty file: no header and no jobs", path=path)


class located:
    """Context manager: a ``TraceError`` raised without a path gets this file's path."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> located:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if isinstance(exc, TraceError) and exc.path is None:
            raise TraceError(
                exc.reason, path=self.path, line=exc.line, column=exc.column, value=exc.value
            ) from None
        return False
