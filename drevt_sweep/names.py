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


def excluded_key(reason: str) -> str:
    """An ``excluded`` reason as a param key part: the queue name of ``queue:<name>`` becomes
    its ``queue_key``; every other reason is made by the readers and is already valid."""
    if reason.startswith("queue:"):
        return "queue:" + queue_key(reason[len("queue:"):])
    return reason


def display_name(name: str, limit: int = DISPLAY_LIMIT) -> str:
    """The name itself, or, if longer than ``limit``, its start, ``...`` and its length."""
    name = str(name)
    if len(name) <= limit:
        return name
    tail = f"... ({len(name)} characters, key {queue_key(name)})"
    return name[: max(limit - len(tail), 8)] + tail


def queue_key_map(names) -> dict[str, str]:
    """``{key: display_name(name)}`` for every name that is not its own key (the record of how
    the keys in metrics and params map back to the trace's queue names)."""
    return {queue_key(name): display_name(name) for name in names if queue_key(name) != name}
