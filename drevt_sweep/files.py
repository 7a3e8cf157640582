"""Where inputs come from and outputs go: the file-system rules every reader and writer follows.

Inputs (``read_input``): a trace must be a regular file. Every other case gets its own message
(a missing file, a broken symbolic link, a symbolic-link loop, a folder on the path that cannot
be entered, a directory, a FIFO, a device such as ``/dev/zero``, an unreadable file), so that
nothing hangs (a FIFO with no writer), reads for ever (``/dev/zero``) or is misreported as
"no such file". Every input read is remembered by its device and inode.

Outputs (``write_file``): an output never replaces an input of this process -- a file read
(``read_input``) or named as an input (``protect_input``, ``check_outputs``): the trace, a
``--system`` YAML, any file a run reads -- compared by device and inode, so also through
symbolic links and hard links; a ``ConfigError``, exit code 2. A regular file (or a new path) is written atomically: a temporary file in the
target's folder renamed onto it, through a symbolic link to its target (the link stays). A
special file -- anything under ``/proc``, a name in ``/dev`` or ``/dev/fd`` (``/dev/stdout``,
``/dev/fd/N``: links that may lead to the file a shell redirected to), or an existing path that
is not a regular file (``/dev/null``, a FIFO, a terminal) -- is opened and written directly,
appending, so it is never replaced by a regular file; a FIFO that no process reads is an error,
not a hang. Files in folders below ``/dev`` (``/dev/shm/...``, a RAM-backed scratch) are
ordinary files. A name ending in ``.gz`` is gzip-compressed.

``csv_cell`` escapes spreadsheet formulas in CSV cells (OWASP's CSV-injection rule).
"""

from __future__ import annotations

import errno
import gzip
import os
import re
import stat
import tempfile
from pathlib import Path

from .errors import ConfigError, TraceError

_INPUTS: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) -> "the input trace 'x.csv'", of every input
_SPECIAL_FOLDERS = ("/dev", "/dev/fd")  # names in them are devices or descriptor links


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # once, at import: os.umask is process-wide and not thread-safe


def new_file_mode() -> int:
    """The mode a new file gets by default (0666 minus the umask): what our outputs and
    downloads get instead of ``tempfile``'s 0600."""
    return 0o666 & ~_UMASK


# --------------------------------------------------------------------------- inputs


def _kind(mode: int, noun: str = "trace file") -> str | None:
    """Why a file of this mode cannot be a ``noun`` (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return f"is a directory, not a {noun}"
    if stat.S_ISFIFO(mode):
        if noun == "trace file":
            return ("is a named pipe (FIFO), not a regular file: a trace is read more than once "
                    "(its checksum, then its rows); save the data to a file first")
        return "is a named pipe (FIFO), not a regular file; save the data to a file first"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return f"is a device (like /dev/zero), not a {noun}"
    if stat.S_ISSOCK(mode):
        return f"is a socket, not a {noun}"
    return "is not a regular file"


def _blocked_folder(path: str) -> str | None:
    """The first folder on the path that this process may not enter, if any."""
    parent = os.path.dirname(os.path.abspath(path))
    chain = []
    while True:
        chain.append(parent)
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    for folder in reversed(chain):
        if os.path.isdir(folder) and not os.access(folder, os.X_OK):
            return folder
    return None


def _stat_error(path: str, exc: OSError) -> TraceError:
    if exc.errno == errno.ELOOP:
        return TraceError("symbolic link loop: the path never resolves to a file", path=path)
    if exc.errno == errno.EACCES:
        folder = _blocked_folder(path)
        if folder:
            return TraceError(f"permission denied: the folder '{folder}' cannot be entered",
                              path=path)
        return TraceError("permission denied", path=path)
    if exc.errno == errno.ENOTDIR:
        return TraceError("a part of the path is a file, not a folder", path=path)
    if exc.errno == errno.ENOENT:
        if os.path.islink(path):
            return TraceError(
                f"broken symbolic link: it points to '{os.readlink(path)}', which does not exist",
                path=path,
            )
        return TraceError("no such file", path=path)
    if exc.errno == errno.ENAMETOOLONG:
        return TraceError("the file name is too long", path=path)
    return TraceError(f"cannot read the file: {exc.strerror or exc}", path=path)


def check_input(path: str, noun: str = "trace file") -> os.stat_result:
    """The ``stat`` of an input file (a trace, a machine description), or a ``TraceError``
    saying exactly why it cannot be one. The one check of ``drevt-sim`` and of the sweep's
    up-front configuration check."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise _stat_error(path, exc) from None
    reason = _kind(info.st_mode, noun)
    if reason:
        raise TraceError(reason, path=path)
    if not os.access(path, os.R_OK):
        raise TraceError("permission denied: the file is not readable", path=path)
    return info


def _described(what: str, path) -> str:
    return f"{what} '{path}'"


def read_input(path: str, what: str = "the input trace", noun: str = "trace file") -> bytes:
    """An input file's bytes as stored (``check_input``'s rules); the file is remembered as an
    input, ``what`` naming it in a refusal, so that no output replaces it."""
    check_input(path, noun)
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if _kind(info.st_mode, noun):  # replaced between the check and the open
                raise TraceError(_kind(info.st_mode, noun), path=path)
            data = handle.read()
    except OSError as exc:
        raise _stat_error(path, exc) from None
    _INPUTS.setdefault((info.st_dev, info.st_ino), _described(what, path))
    return data


def protect_input(path, what: str = "an input file") -> None:
    """Remember ``path`` as an input without reading it (a file that outputs must not replace);
    ``what`` names it in the refusal ("the --system file")."""
    try:
        info = os.stat(path)
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        _INPUTS.setdefault((info.st_dev, info.st_ino), _described(what, path))


# --------------------------------------------------------------------------- outputs


def _existing(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def input_behind(path) -> str | None:
    """The input that writing ``path`` would replace, if any."""
    info = _existing(Path(path))
    if info is None:
        return None
    return _INPUTS.get((info.st_dev, info.st_ino))


def check_outputs(outputs: dict[str, str | None], inputs=None) -> None:
    """Refuse an output option that names an input file or the same file as another output.

    ``outputs`` maps an option (``--stats``) to its path (None: not given); ``inputs`` maps how
    an input is named ("the input trace", "the --system file") to its path, every input of the
    run: they are protected first, so the check can run before anything is read.
    """
    pairs = [("the input trace", path) for path in inputs] if isinstance(inputs, (tuple, list)) \
        else list((inputs or {}).items())  # a sequence: bare trace paths (the older call)
    for what, path in pairs:
        if path:
            protect_input(path, what)
    seen: dict[tuple[int, int] | str, str] = {}
    for option, path in outputs.items():
        if not path:
            continue
        source = input_behind(path)
        if source is not None:
            raise ConfigError(
                f"{option} '{path}' is {source} (the same file): an output never replaces an "
                "input; choose another path"
            )
        info = _existing(Path(path))
        special = _is_special(Path(path), info)
        if special:
            continue  # /dev/null twice is fine
        identity = (info.st_dev, info.st_ino) if info else os.path.realpath(path)
        if identity in seen:
            raise ConfigError(f"{option} and {seen[identity]} name the same file '{path}': "
                              "one would overwrite the other")
        seen[identity] = option


def _is_special(path: Path, info: os.stat_result | None) -> bool:
    absolute = path.absolute()
    if str(absolute).startswith("/proc/") or str(absolute.parent) in _SPECIAL_FOLDERS:
        return True
    return info is not None and not stat.S_ISREG(info.st_mode)


def _encode(path: Path, data: bytes) -> bytes:
    if path.name.endswith(".gz"):
        return gzip.compress(data, compresslevel=6, mtime=0)
    return data


def write_file(path, data: bytes, what: str = "output file") -> Path:
    """Write ``data`` to ``path`` by the rules in the module docstring; returns the path."""
    path = Path(path)
    source = input_behind(path)
    if source is not None:
        raise ConfigError(f"{what} '{path}' is {source}: an output never replaces an input; "
                          "choose another path")
    info = _existing(path)
    try:
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if _is_special(path, info):
            _write_direct(path, _encode(path, data), info)
        else:
            _write_atomic(Path(os.path.realpath(path)), _encode(path, data))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENXIO:
            reason = "it is a named pipe (FIFO) that no process is reading"
        raise ConfigError(f"cannot write {what} '{path}': {reason}") from None
    return path


def _write_direct(path: Path, data: bytes, info: os.stat_result | None) -> None:
    flags = os.O_WRONLY | os.O_APPEND
    fifo = info is not None and stat.S_ISFIFO(info.st_mode)
    if fifo:
        flags |= os.O_NONBLOCK  # no reader: ENXIO at once instead of blocking for ever
    fd = os.open(path, flags)
    try:
        if fifo:
            os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# --------------------------------------------------------------------------- a sweep's folders


def sweep_output_clash(trace: str, folders, files=()) -> str | None:
    """Why the sweep's own files could replace the input ``trace`` (None: they cannot).

    A run's or sweep's folder is the sweep's and Hydra's to write (``summary.csv``,
    ``report.html``, ``multirun.yaml``, ``result.json``, ``.hydra/``, the job log, and every
    name a future version adds), so a trace inside one of ``folders`` is refused outright; a
    file already under one of them, or one of ``files`` (log files named elsewhere), that is
    the trace through a hard or symbolic link is refused too. Checked before Hydra opens any of
    them, since Hydra and logging do not write through :func:`write_file`."""
    try:
        info = os.stat(trace)
    except OSError:
        return None  # no such trace: the trace check says so
    real = os.path.realpath(trace)
    for folder in folders:
        root = os.path.realpath(folder)
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return (f"is inside the output folder '{folder}', where drevt-sweep and Hydra write "
                    "their files (summary.csv, result.json, .hydra/, logs): an output never "
                    "replaces an input; keep the trace outside it")
    same = (info.st_dev, info.st_ino)
    for path in [*files, *(p for folder in folders for p in _files_under(folder))]:
        other = _existing(Path(path))
        if other is not None and (other.st_dev, other.st_ino) == same:
            return (f"is the same file as '{path}' (a link), which drevt-sweep or Hydra writes: "
                    "an output never replaces an input; remove the link or choose another "
                    "output folder")
    return None


def _files_under(folder) -> list[str]:
    """Every file under ``folder``, symbolic links to files included."""
    return [os.path.join(top, name) for top, _, names in os.walk(folder) for name in names]


# --------------------------------------------------------------------------- CSV cells

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _formula_like(text: str) -> bool:
    rest = text.lstrip("'")
    return rest.startswith(_FORMULA_START) and not _NUMBER.fullmatch(rest)


def csv_cell(text: str) -> str:
    """A text cell safe to open in a spreadsheet (OWASP CSV injection): a cell that starts with
    ``= + - @``, a tab or a carriage return (after any leading ``'``) gets one ``'`` in front,
    so it is shown as text, never run as a formula. Plain numbers (``-60``, ``+1.5e3``) are
    left alone. ``csv_uncell`` undoes it exactly."""
    return "'" + text if _formula_like(text) else text


def csv_uncell(text: str) -> str:
    """The inverse of ``csv_cell``."""
    return text[1:] if text.startswith("'") and _formula_like(text) else text


def load_yaml(text: str):
    """``yaml.safe_load`` through libyaml when PyYAML has it (~10x faster: a 1,000-configuration
    sweep's configs took 23 s to parse in pure Python; a sweep's ``multirun.yaml`` 22 ms through
    ``OmegaConf.load``, 1.4 ms so)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
