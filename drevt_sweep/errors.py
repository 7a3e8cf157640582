"""The project's user-facing error types.

Every problem caused by the user's input (a trace, a command line, a config) is raised as a
``DrevtError``; the command lines print its message and exit with code 2, never a traceback.
"""

from __future__ import annotations


class DrevtError(Exception):
    """Base class of all errors caused by input; its message is meant for the user."""

    exit_code = 2


class ConfigError(DrevtError):
    """An invalid option or combination of options."""


class TraceError(DrevtError):
    """A problem in a trace file, located as precisely as is known.

    The message reads ``<path>:<line>: column '<column>': value '<value>': <reason>`` with the
    parts that are unknown left out, so that editors and humans can jump to the spot.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | None = None,
        line: int | None = None,
        column: str | None = None,
        value: object = None,
    ) -> None:
        self.reason = reason
        self.path = path
        self.line = line
        self.column = column
        self.value = value
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.path is not None:
            where = str(self.path)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        parts = []
        if self.column is not None:
            parts.append(f"column '{self.column}'")
        if self.value is not None:
            text = str(self.value)
            if len(text) > 80:
                text = text[:77] + "..."
            parts.append(f"value '{text}'")
        detail = ": ".join(parts)
        return f"{where}{detail + ': ' if detail else ''}{self.reason}"


def describe(exc: BaseException) -> str:
    """An unexpected exception as one line for the user: its type and message, never an empty
    message (``MemoryError()`` has none: it says that memory ran out)."""
    if isinstance(exc, MemoryError):
        detail = str(exc).strip()
        return ("MemoryError: out of memory" + (f" ({detail})" if detail else "")
                + "; a smaller trace or window (max_jobs, window_start/end) or fewer workers needs less")
    text = " ".join(str(exc).split())  # one line
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
