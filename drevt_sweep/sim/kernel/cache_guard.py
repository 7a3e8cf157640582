"""Machine code from numba's on-disk cache is used only if it was compiled from today's sources.

numba keys a function's cached machine code on the stamp (modification time and size) of the
file that defines it, and on the function's own bytecode -- not on the helpers it inlined from
other files. ``shared.py``, ``_extended.py`` and ``_slurm.py`` inline helpers of ``_kernels.py``
(the event loop's steps written once), ``_slurm.py`` and ``shared.py`` those of ``_extended.py``
(dynamic priorities' keys, ticks and accounting), ``_shared_slurm.py`` those of ``shared.py``,
so after a change to ``_kernels.py`` alone -- an upgrade, a ``git pull``, a fix -- they would go
on loading code compiled from the old helpers, silently. Here a digest of every kernel source
is kept beside the cache; when it differs, the kernels' cached code is dropped and numba
compiles afresh (once; later processes load the new code).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# the files whose @njit code inlines (or links in) each other's: ``_shared_slurm.py`` calls
# ``shared.py``'s helpers and ``_slurm.py``'s
SOURCES = ("_kernels.py", "_extended.py", "shared.py", "_slurm.py", "_shared_slurm.py")
DIGEST_FILE = "drevt_kernel_sources.sha256"


def sources_digest(folder: Path | None = None) -> str:
    """The sha256 of the kernel sources, in :data:`SOURCES` order."""
    folder = Path(folder) if folder is not None else Path(__file__).parent
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    return digest.hexdigest()


def drop_stale_machine_code(cache_dir, folder: Path | None = None) -> int:
    """Delete the kernels' cached machine code in ``cache_dir`` if it was compiled from other
    sources than those in ``folder`` (this package); returns how many files were deleted.

    Never fails the caller: a cache that cannot be read or cleaned is numba's to handle (it then
    compiles, or reports its own error), and another process doing the same at the same time
    only deletes the same files."""
    cache_dir = Path(cache_dir)
    try:
        wanted = sources_digest(folder)
        stamp = cache_dir / DIGEST_FILE
        if stamp.is_file() and stamp.read_text().strip() == wanted:
            return 0
        prefixes = tuple(name[: -len(".py")] + "." for name in SOURCES)
        dropped = 0
        if cache_dir.is_dir():
            for entry in cache_dir.iterdir():
                if entry.name.startswith(prefixes) and entry.suffix in (".nbi", ".nbc"):
                    try:
                        entry.unlink()
                        dropped += 1
                    except FileNotFoundError:
                        pass
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = cache_dir / f"{DIGEST_FILE}.{os.getpid()}"
        partial.write_text(wanted + "\n")
        os.replace(partial, stamp)  # whole or absent, for a process reading it meanwhile
        return dropped
    except OSError:
        return 0
