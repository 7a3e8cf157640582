"""The public traces that ``conf/trace/`` names: where they come from, their checksums, and
where this machine keeps them.

A trace that is not bundled is looked for in the user data folder (``drevt-sweep-fetch NAME``
downloads it there: ``~/.local/share/drevt-sweep/traces`` on Linux, per ``platformdirs``), then
in ``$DREVT_TRACE_DIR``. The configs resolve ``${drevt_trace:NAME}`` through :func:`locate`.
The checksums are of the files as the Parallel Workloads Archive serves them, verified on the
copies this project is developed with.

A file found under a catalogue trace's name is verified against its sha256 before a sweep
runs (``verify``): a wrong file (another trace copied under that name, a truncated download)
is refused with what to do, unless ``$DREVT_TRACE_VERIFY=0``. The result is remembered in
``verified.json`` of the trace cache folder, keyed by the file's device, inode, size and
modification time (as the trace cache trusts a file it has read), so an unchanged file is
hashed once, not once per run.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

TRACE_DIR_ENV = "DREVT_TRACE_DIR"
VERIFY_ENV = "DREVT_TRACE_VERIFY"  # 0: use a catalogue trace whose checksum differs
VERIFIED_FILE = "verified.json"
PWA = "https://www.cs.huji.ac.il/labs/parallel/workload"
PWA_CITATION = ("D. G. Feitelson, D. Tsafrir and D. Krakov, \"Experience with using the Parallel "
                "Workloads Archive\", J. Parallel Distrib. Comput. 74(10), 2967-2982, 2014")


@dataclass(frozen=True)
class CatalogueTrace:
    name: str  # the conf/trace option
    file: str  # the file name in the data folder / $DREVT_TRACE_DIR
    sha256: str | None
    size: int | None  # bytes
    url: str | None  # None: no public download (see ``note``)
    citation: str
    description: str
    note: str = ""


CATALOGUE: dict[str, CatalogueTrace] = {t.name: t for t in (
    CatalogueTrace(
        "kth_sp2", "KTH-SP2-1996-2.1-cln.swf.gz",
        "3e152f201fd2e96808a735bced6ea6eb0bb07fdc447689cafb0750d87b264c0b", 411455,
        f"{PWA}/l_kth_sp2/KTH-SP2-1996-2.1-cln.swf.gz",
        f"KTH SP2 log, acknowledge Lars Malinowsky (KTH, PDC); {PWA_CITATION}",
        "IBM SP2 at KTH, 100 nodes, 1996-97, 28,476 jobs (cleaned); bundled with drevt-sweep"),
    CatalogueTrace(
        "lanl_cm5", "LANL-CM5-1994-4.1-cln.swf.gz",
        "71ff3dfa301b3ee1bd30ebc63c5363b5e8ec488e75f1f9398aa46d485ef23c3c", 2138864,
        f"{PWA}/l_lanl_cm5/LANL-CM5-1994-4.1-cln.swf.gz",
        f"LANL CM-5 log, acknowledge Curt Canada (LANL); {PWA_CITATION}",
        "Thinking Machines CM-5 at LANL, 1,024 processors, 1994-96, 122,060 jobs (cleaned)"),
    CatalogueTrace(
        "nasa_ipsc", "NASA-iPSC-1993-3.1-cln.swf.gz",
        "5589ae9b2fb78e3bf92de097497cf33a91607de1ad54563e43533f7827597f29", 207976,
        f"{PWA}/l_nasa_ipsc/NASA-iPSC-1993-3.1-cln.swf.gz",
        f"NASA Ames iPSC/860 log, acknowledge Bill Nitzberg (NASA Ames); {PWA_CITATION}",
        "Intel iPSC/860 at NASA Ames, 128 nodes, 1993, 18,239 jobs (cleaned); no requested "
        "times, no waits"),
    CatalogueTrace(
        "lublin_256", "lublin_256.swf.gz",
        "da7efffd8ac17c8bc7b84c4ac40b3d8b33ed1ddb87196bde4efe16e7c637e1a2", 102353, None,
        "U. Lublin and D. G. Feitelson, \"The workload on parallel supercomputers: modeling the "
        "characteristics of rigid jobs\", J. Parallel Distrib. Comput. 63(11), 1105-1122, 2003",
        "synthetic, Lublin-Feitelson model, 256 nodes, 10,000 jobs; no requested times",
        note="generated with the model (the PWA serves the model's program, not this file); "
        "the checksum is of the gzipped copy this project uses. Put it in $DREVT_TRACE_DIR."),
    CatalogueTrace(
        "kabre", "kabre_sacct.csv.gz",
        "4f36539b32c8cef71fea8a29a43acedc8899df0e3e3a3732fc128628adf0e77d", 326933, None,
        "Kabré cluster, Costa Rica National High Technology Center (CeNAT)",
        "Slurm sacct export of the Kabré cluster, 2024, 30,376 jobs",
        note="an export of a private cluster: ask its owners, then put it in $DREVT_TRACE_DIR."),
)}


def data_dir() -> Path:
    """Where ``drevt-sweep-fetch`` puts traces (the user's data folder, per platformdirs)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("drevt-sweep", appauthor=False)) / "traces"


def search_dirs() -> list[Path]:
    """The folders a non-bundled trace is looked for in, in order."""
    dirs = [data_dir()]
    configured = os.environ.get(TRACE_DIR_ENV)
    if configured:
        dirs.append(Path(configured).expanduser())
    return dirs


def locate(name: str) -> str:
    """The path of a catalogue trace: the first folder that has it, else where
    ``drevt-sweep-fetch`` would put it (a path that does not exist yet: the sweep then says
    how to get it before running anything)."""
    entry = CATALOGUE.get(name)
    if entry is None:
        raise KeyError(f"unknown trace '{name}'; the catalogue has {', '.join(CATALOGUE)}")
    for folder in search_dirs():
        if (folder / entry.file).is_file():
            return str(folder / entry.file)
    return str(data_dir() / entry.file)


def missing_hint(name: str) -> str:
    """What to do about a catalogue trace that is in none of the folders."""
    entry = CATALOGUE[name]
    looked = ", ".join(str(d) for d in search_dirs())
    env = "" if os.environ.get(TRACE_DIR_ENV) else f" (${TRACE_DIR_ENV} is not set)"
    how = (f"fetch it once with `drevt-sweep-fetch {name}`" if entry.url
           else f"it has no public download ({entry.note})")
    return f"{entry.file} is not in {looked}{env}; {how}"


def _identity(info: os.stat_result) -> str:
    return f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"


def file_sha256(path, cache_dir=None) -> str:
    """The sha256 of a file's bytes, remembered in ``cache_dir/verified.json`` by the file's
    identity (device, inode, size, mtime): an unchanged file is hashed once."""
    from .cache import default_cache_dir

    path = Path(path)
    identity = _identity(os.stat(path))
    store = Path(cache_dir) if cache_dir else default_cache_dir()
    known = _read_verified(store)
    key = os.path.realpath(path)
    if known.get(key, {}).get("identity") == identity:
        return known[key]["sha256"]
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    known[key] = {"identity": identity, "sha256": digest.hexdigest()}
    _write_verified(store, known)
    return digest.hexdigest()


def _read_verified(store: Path) -> dict:
    try:
        data = json.loads((store / VERIFIED_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_verified(store: Path, known: dict) -> None:
    """Best effort (a read-only cache only costs a hash next time), atomic (concurrent runs)."""
    try:
        store.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=store, prefix=f".{VERIFIED_FILE}.", suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            json.dump(known, handle, indent=0, sort_keys=True)
        os.replace(tmp, store / VERIFIED_FILE)
    except OSError:
        try:
            os.unlink(tmp)
        except (OSError, UnboundLocalError):
            pass


def verify(name: str, path, cache_dir=None) -> str | None:
    """None when ``path`` is catalogue trace ``name``'s file (or is not under its file name, or
    ``$DREVT_TRACE_VERIFY=0``), else what is wrong and what to do."""
    entry = CATALOGUE.get(name)
    if entry is None or entry.sha256 is None or Path(path).name != entry.file:
        return None
    if os.environ.get(VERIFY_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return None
    try:
        found = file_sha256(path, cache_dir)
        size = os.stat(path).st_size
    except OSError:
        return None  # the file check reports what is wrong with the path itself
    if found == entry.sha256:
        return None
    how = (f"`drevt-sweep-fetch {name}` replaces it with the catalogue's file"
           if entry.url else f"put the catalogue's file there ({entry.note})")
    return (f"{path} is not the catalogue's {entry.file}: sha256 {found[:16]}... ({size:,} bytes), "
            f"expected {entry.sha256[:16]}... ({entry.size:,} bytes); {how}, or set "
            f"{VERIFY_ENV}=0 to use this file anyway")
