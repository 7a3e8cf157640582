"""Names taken from a trace (queue names) turned into keys that every consumer accepts.

Queue names are data: a trace may call a queue ``gpu+debug``, ``..``, ``a/b`` or 10 MB of
text. They become parts of metric keys (``queue/<key>/wait_mean``), of MLflow params
(``excluded.queue:<key>``) and of the statistics JSON, so each name gets one **key** that is

* valid: only ``[A-Za-z0-9_.-]``, not ``.`` or ``..`` (MLflow rejects other characters on some
  platforms and names that resolve to another path), at most ``KEY_LIMIT`` characters;
* stable: a function of the name alone, the same in every run and whatever other queues exist;
* unique: a name that is already a valid key is kept as is; any other name becomes its
  sanitised, shortened text plus ``_x`` and 8 hex digits of its sha256, and a valid name that
  happens to end like that is hashed too, so a kept name never equals a hashed one.

8 hex digits are 32 bits: among ~80,000 names two that sanitise alike share a key about half
the time (the birthday bound). So the keys of one run come from one registry, ``QueueKeys``,
built from all of the run's names (``run_queue_keys``: the table's queues and the excluded
ones): names whose keys would collide get 16 hex digits instead (and, should those collide
too, a numbered suffix), every other name keeps its ``queue_key``. ``QueueKeys.key_map`` is
what ``queue_keys.json`` and the statistics JSON record.

``display_name`` shortens a name for printed tables and JSON (``DISPLAY_LIMIT`` characters).
Both are pure functions of the name; no I/O.
"""

from __future__ import annotations

import hashlib
import re

KEY_LIMIT = 64  # characters of a queue key (MLflow allows 250 for the whole metric key)
DISPLAY_LIMIT = 200  # characters of a queue name in printed tables and the statistics JSON
_SAFE = re.compile(r"[A-Za-z0-9_.\-]+")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
_HASHED = re.compile(r"_x[0-9a-f]{8}$")
_KEEP = KEY_LIMIT - 10  # room for the "_x" + 8 hex digits suffix


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def queue_key(name: str) -> str:
    """The metric/param key part of a queue name (see the module docstring)."""
    name = str(name)
    if (
        _SAFE.fullmatch(name)
        and len(name) <= KEY_LIMIT
        and name.strip(".")
        and not _HASHED.search(name)
    ):
        return name
    text = _UNSAFE.sub("_", name[:_KEEP])
    if not text.strip("."):
        text = text.replace(".", "_") or "_"
    return f"{text}_x{_digest(name)}"


def _long_key(name: str, digits: int = 16) -> str:
    """A hashed key with ``digits`` hex digits (for names whose 8-digit keys collide)."""
    name = str(name)
    text = _UNSAFE.sub("_", name[: KEY_LIMIT - digits - 2])
    if not text.strip("."):
        text = text.replace(".", "_") or "_"
    return f"{text}_x{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:digits]}"


class QueueKeys:
    """The keys of one run's names: ``queue_key(name)``, except for names whose keys collide
    within the run (see the module docstring). Call it like ``queue_key``."""

    def __init__(self, names) -> None:
        names = sorted({str(name) for name in names})
        keys = {name: queue_key(name) for name in names}
        for attempt in range(3):
            owners: dict[str, list[str]] = {}
            for name in names:
                owners.setdefault(keys[name], []).append(name)
            shared = [group for group in owners.values() if len(group) > 1]
            if not shared:
                break
            for group in shared:
                for number, name in enumerate(group, 1):
                    keys[name] = _long_key(name) if attempt == 0 else f"{_long_key(name, 40)}_{number}"
        self.collisions = sum(1 for name in names if keys[name] != queue_key(name))
        self._keys = keys

    def __call__(self, name: str) -> str:
        name = str(name)
        key = self._keys.get(name)
        return key if key is not None else queue_key(name)

    def key_map(self) -> dict[str, str]:
        """``{key: display_name(name)}`` for every name that is not its own key."""
        return {key: display_name(name, key=key) for name, key in self._keys.items() if key != name}


def run_queue_keys(jobs) -> QueueKeys:
    """The registry of a job table's run: its queues and the queues its reader excluded."""
    excluded = [reason[len("queue:"):] for reason in jobs.meta.excluded if reason.startswith("queue:")]
    return QueueKeys([*jobs.queue_names, *excluded])


def excluded_key(reason: str, keys=queue_key) -> str:
    """An ``excluded`` reason as a param key part: the queue name of ``queue:<name>`` becomes
    its key (``keys``: the run's ``QueueKeys``); every other reason is made by the readers and
    is already valid."""
    if reason.startswith("queue:"):
        return "queue:" + keys(reason[len("queue:"):])
    return reason


def display_name(name: str, limit: int = DISPLAY_LIMIT, key: str | None = None) -> str:
    """The name itself, or, if longer than ``limit``, its start, ``...``, its length and its
    key (``key``, else ``queue_key(name)``)."""
    name = str(name)
    if len(name) <= limit:
        return name
    tail = f"... ({len(name)} characters, key {key or queue_key(name)})"
    return name[: max(limit - len(tail), 8)] + tail


def queue_key_map(names) -> dict[str, str]:
    """``{key: display_name(name)}`` for every name that is not its own key (the record of how
    the keys in metrics and params map back to the trace's queue names), by one registry of
    all of ``names``."""
    return QueueKeys(names).key_map()
