"""Where each record (row) of a trace's text starts, and how many fields it has.

pandas parses the values; this module only finds record boundaries, with vectorised numpy
scans over the raw bytes. That gives every job the 1-based physical line it starts on (also
after quoted fields that contain newlines), catches rows with the wrong number of fields (pandas
silently pads short rows and truncates long ones), and lets an error message quote the exact
text of any field.

The fast scan assumes regular CSV quoting: a quote opens a field only right after a delimiter
or a line start and closes it only right before one. Files that break that rule (a stray quote
inside an unquoted field, a space before an opening quote) are re-scanned with Python's csv
module, which treats such quotes the way pandas does.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import TraceError

NEWLINE = 10
SPACE = 32
TAB = 9
# Bytes scanned at a time: bounds the temporary arrays for files of hundreds of megabytes.
_CHUNK = 1 << 26
# Leading whitespace longer than this is checked per record in Python (rare, pathological).
_MAX_VECTOR_WHITESPACE = 64


@dataclass(frozen=True, eq=False)
class Records:
    """Non-blank records of one text, in file order."""

    data: bytes
    starts: np.ndarray  # int64 byte offset of each record's first byte
    ends: np.ndarray  # int64 byte offset just past its last byte (its newline or EOF)
    lines: np.ndarray  # int64 1-based physical line of each record's first byte
    field_counts: np.ndarray  # int64 number of fields
    split: Callable[[str], list[str]]

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def text(self, i: int) -> str:
        return self.data[self.starts[i] : self.ends[i]].decode("utf-8", errors="replace")

    def fields(self, i: int) -> list[str]:
        return self.split(self.text(i))

    def field(self, i: int, k: int) -> str | None:
        fields = self.fields(i)
        return fields[k] if 0 <= k < len(fields) else None

    def tail(self, first: int) -> Records:
        """The records from index ``first`` on (e.g. without the header)."""
        return Records(
            self.data,
            self.starts[first:],
            self.ends[first:],
            self.lines[first:],
            self.field_counts[first:],
            self.split,
        )


def csv_splitter(delimiter: str, quotechar: str | None) -> Callable[[str], list[str]]:
    def split(text: str) -> list[str]:
        if quotechar is None:
            return text.split(delimiter)
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quotechar=quotechar)
        limit = csv.field_size_limit(max(len(text), 1 << 17))  # a huge field is quoted, not refused
        try:
            return next(reader, [])
        except csv.Error as exc:
            raise TraceError(f"malformed CSV record: {exc}") from None
        finally:
            csv.field_size_limit(limit)

    return split


def scan_delimited(data: bytes, delimiter: str, quotechar: str | None = '"') -> Records:
    """Records of a delimited text (CSV, sacct -P), blank lines skipped as pandas does."""
    arr = np.frombuffer(data, dtype=np.uint8)
    newlines = _positions(arr, NEWLINE)
    delim = ord(delimiter)
    quotes = None
    if quotechar is not None and data.find(quotechar.encode()) >= 0:
        quotes = _positions(arr, ord(quotechar))
        if not _regular_quoting(arr, quotes, delim):
            return _scan_with_csv_module(data, newlines, delimiter, quotechar)
        if quotes.size % 2:
            raise TraceError(
                "unterminated quoted field: a '\"' opens a value that never closes",
                line=int(np.searchsorted(newlines, quotes[-1]) + 1),
            )
        inside = np.searchsorted(quotes, newlines) & 1
        terminators = newlines[inside == 0]
    else:
        terminators = newlines
    starts = np.concatenate((np.zeros(1, dtype=np.int64), terminators + 1))
    ends = np.concatenate((terminators, np.full(1, arr.size, dtype=np.int64)))
    keep = ~_blank(arr, starts, ends)
    if quotes is None:  # every newline ends a record: record i starts on line i + 1
        lines = np.arange(1, starts.size + 1, dtype=np.int64)[keep]
    starts, ends = starts[keep], ends[keep]
    if quotes is not None:
        lines = np.searchsorted(newlines, starts).astype(np.int64) + 1
    # Only blank lines lie between one record's end and the next one's start: no delimiters
    # there, so counting up to each record start (and the end of the text) counts them all.
    before = _count_before(arr, delim, np.append(starts, arr.size), quotes)
    counts = np.diff(before) + 1
    return Records(
        data, starts, ends, lines, counts.astype(np.int64), csv_splitter(delimiter, quotechar)
    )


def scan_whitespace(data: bytes, comment: str = ";") -> Records:
    """Records of a whitespace-separated text (SWF): one per line, blank and comment lines
    skipped, anything after the comment character ignored (as pandas' ``comment=`` does)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(arr == NEWLINE)
    starts = np.concatenate(([0], newlines + 1)).astype(np.int64)
    ends = np.concatenate((newlines, [arr.size])).astype(np.int64)
    first = _first_non_blank(arr, starts, ends)
    blank = first >= ends
    is_comment = np.zeros(starts.shape, dtype=bool)
    is_comment[~blank] = arr[first[~blank]] == ord(comment)
    keep = ~blank & ~is_comment
    lines = np.arange(1, starts.size + 1, dtype=np.int64)[keep]
    starts, ends = starts[keep], ends[keep]
    # Fields are counted up to an inline comment.
    semis = np.flatnonzero(arr == ord(comment))
    if semis.size:
        nxt = np.searchsorted(semis, starts)
        has = nxt < semis.size
        cut = np.where(has, semis[np.minimum(nxt, semis.size - 1)], ends)
        ends_for_count = np.minimum(ends, cut)
    else:
        ends_for_count = ends
    whitespace = (arr == SPACE) | (arr == TAB) | (arr == NEWLINE)
    token_start = ~whitespace
    token_start[1:] &= whitespace[:-1]
    tokens = np.flatnonzero(token_start)
    counts = np.searchsorted(tokens, ends_for_count) - np.searchsorted(tokens, starts)

    def split(text: str) -> list[str]:
        return text.split(comment, 1)[0].split()

    return Records(data, starts, ends, lines, counts.astype(np.int64), split)


def _positions(arr: np.ndarray, byte: int) -> np.ndarray:
    """Offsets of ``byte`` in ``arr``, scanned in chunks to bound the temporary memory."""
    found = [
        np.flatnonzero(arr[lo : lo + _CHUNK] == byte) + lo for lo in range(0, arr.size, _CHUNK)
    ]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _count_before(
    arr: np.ndarray, byte: int, bounds: np.ndarray, quotes: np.ndarray | None
) -> np.ndarray:
    """For each sorted offset in ``bounds``, how many ``byte``s lie before it (outside quotes
    when ``quotes`` are given), without holding every position in memory at once."""
    total = np.zeros(bounds.shape, dtype=np.int64)
    for lo in range(0, arr.size, _CHUNK):
        found = np.flatnonzero(arr[lo : lo + _CHUNK] == byte) + lo
        if quotes is not None:
            found = found[(np.searchsorted(quotes, found) & 1) == 0]
        total += np.searchsorted(found, bounds)
    return total


def _regular_quoting(arr: np.ndarray, quotes: np.ndarray, delim: int) -> bool:
    """True when every quote opens right after a delimiter/line start (or is the second half
    of an escaped ``""``) and closes right before a delimiter/line end (or an escape)."""
    quote = arr[quotes[0]]
    openers = quotes[0::2]
    closers = quotes[1::2]
    prev = np.where(openers > 0, arr[np.maximum(openers - 1, 0)], NEWLINE)
    ok_open = (prev == delim) | (prev == NEWLINE) | (prev == quote)
    nxt_pos = closers + 1
    nxt = np.where(nxt_pos < arr.size, arr[np.minimum(nxt_pos, arr.size - 1)], NEWLINE)
    ok_close = (nxt == delim) | (nxt == NEWLINE) | (nxt == quote)
    return bool(ok_open.all() and ok_close.all())


def _first_non_blank(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Offset of each record's first byte that is not a space or tab (== end when blank)."""
    pos = starts.copy()
    pending = pos < ends
    for _ in range(_MAX_VECTOR_WHITESPACE):
        idx = np.flatnonzero(pending)
        if idx.size == 0:
            return pos
        byte = arr[pos[idx]]
        space = (byte == SPACE) | (byte == TAB)
        pending[idx[~space]] = False
        moved = idx[space]
        pos[moved] += 1
        pending[moved] = pos[moved] < ends[moved]
    for i in np.flatnonzero(pending):  # very long leading whitespace: finish in Python
        text = arr[pos[i] : ends[i]].tobytes()
        pos[i] += len(text) - len(text.lstrip(b" \t"))
    return pos


def _blank(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    return _first_non_blank(arr, starts, ends) >= ends


def _scan_with_csv_module(
    data: bytes, newlines: np.ndarray, delimiter: str, quotechar: str
) -> Records:
    """Exact record boundaries for irregularly quoted files (slow path, Python csv module)."""
    text = data.decode("utf-8")
    line_starts = np.concatenate(([0], newlines + 1))
    reader = csv.reader(
        io.StringIO(text, newline=""), delimiter=delimiter, quotechar=quotechar, strict=False
    )
    starts, ends, lines, counts = [], [], [], []
    last_line = 0
    try:
        for fields in reader:
            first_line, last_line_of_record = last_line + 1, reader.line_num
            last_line = last_line_of_record
            if not fields or (len(fields) == 1 and not fields[0].strip(" \t")):
                continue
            starts.append(line_starts[first_line - 1])
            end_index = last_line_of_record  # the newline that ends the record's last line
            ends.append(newlines[end_index - 1] if end_index - 1 < newlines.size else len(data))
            lines.append(first_line)
            counts.append(len(fields))
    except csv.Error as exc:
        raise TraceError(f"malformed CSV: {exc}", line=last_line + 1) from None
    return Records(
        data,
        np.asarray(starts, dtype=np.int64),
        np.asarray(ends, dtype=np.int64),
        np.asarray(lines, dtype=np.int64),
        np.asarray(counts, dtype=np.int64),
        csv_splitter(delimiter, quotechar),
    )
