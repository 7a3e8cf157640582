"""Opening a trace file: the one place that touches the file system.

Every reader starts from ``read_source``, which turns whatever is on disk into clean UTF-8 text
(as bytes, so that numpy can scan it) or raises one ``TraceError`` that says what is wrong:
a missing path, a directory, a FIFO or device, a symbolic-link loop, a folder that cannot be
entered, an unreadable file (``files.check_input``), a truncated or corrupt gzip stream, bytes that
are not UTF-8 (named by line and column), binary data, or an empty file. With
``on_bad_row=skip`` bytes that are not UTF-8 do not refuse the file: each becomes U+FFFD and the
lines that had one are remembered (``SourceText.replaced_lines``), so that the table builder
skips a row whose used text is damaged and counts the others (``table.build_table``). Gzip is recognised by its magic bytes, not by the
file name. A UTF-8 byte-order mark is dropped and CRLF / CR line ends become LF, so that line
numbers mean the same thing on every platform.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from dataclasses import dataclass, field

import numpy as np

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
    # 1-based lines where bytes that are not UTF-8 were replaced by U+FFFD (skip mode only)
    replaced_lines: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def read_bytes(path: str) -> bytes:
    """The file's bytes as stored, or a ``TraceError`` naming the problem with the path (a
    regular file only: see ``files.read_input``); the file is protected from every output."""
    return read_input(path)


def checksum_of(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def read_source(path: str, on_bad_row: str = "error") -> SourceText:
    """Read, decompress and normalise one trace file (``on_bad_row``: see the module docstring)."""
    raw = read_bytes(path)
    checksum = checksum_of(raw)
    data = _gunzip(raw, path) if raw[:2] == GZIP_MAGIC else raw
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    data, replaced = _check_text(data, path, lenient=on_bad_row == "skip")
    return SourceText(path=path, data=data, checksum=checksum, replaced_lines=replaced)


def _gunzip(raw: bytes, path: str) -> bytes:
    try:
        return gzip.decompress(raw)
    except EOFError:
        raise TraceError(
            "truncated gzip file: the compressed stream ends before its end marker", path=path
        ) from None
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        raise TraceError(f"corrupt gzip file: {exc}", path=path) from None


def _check_text(data: bytes, path: str, lenient: bool = False) -> tuple[bytes, np.ndarray]:
    """Reject what cannot be a text trace, naming the line of the first offending byte; with
    ``lenient``, bytes that are not UTF-8 become U+FFFD instead (returned: the new data and
    the lines where that happened)."""
    replaced = np.zeros(0, dtype=np.int64)
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
            if not lenient:
                line_start = data.rfind(b"\n", 0, exc.start) + 1
                column = len(data[line_start:exc.start].decode("utf-8", errors="replace")) + 1
                raise TraceError(
                    f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column} of the "
                    f"line (offset {exc.start}); re-save the file as UTF-8, or read it with "
                    "on_bad_row=skip to skip the rows it damages",
                    path=path,
                    line=data.count(b"\n", 0, exc.start) + 1,
                ) from None
            # One code point per array entry: a byte that is not UTF-8 is a lone surrogate
            # (surrogateescape), found and replaced vectorised, and its line counted.
            text = data.decode("utf-8", errors="surrogateescape")
            points = np.frombuffer(text.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32).copy()
            bad = np.flatnonzero((points >= 0xDC80) & (points <= 0xDCFF))
            newlines = np.flatnonzero(points == 10)
            replaced = np.unique(np.searchsorted(newlines, bad) + 1).astype(np.int64)
            points[bad] = 0xFFFD
            data = points.tobytes().decode("utf-32-le").encode("utf-8")
    if not data or data.isspace():
        raise TraceError("empty file: no header and no jobs", path=path)
    return data, replaced


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
