"""Slurm hostlist expressions: ``n[001-128]``, ``gpu[1-4,7]``, ``rack[1-2]n[01-08]``, ``a,b[1-2]``.

A small expander of our own (the maintained ``python-hostlist`` package does the same; it is not
a dependency): comma-separated items at the top level, each a name with bracketed ranges whose
expansions multiply (left to right, as Slurm prints them); a range keeps the zero padding of its
lower bound. Malformed input is a ``ValueError`` saying what is wrong.
"""

from __future__ import annotations

import re

MAX_HOSTS = 1_000_000  # a typo such as n[1-999999999] must not exhaust memory

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def expand(expression: str) -> list[str]:
    """Every host name of ``expression``, in order (repeats kept, as Slurm keeps them)."""
    hosts: list[str] = []
    for item in _top_level_items(expression.strip()):
        hosts.extend(_expand_item(item))
        if len(hosts) > MAX_HOSTS:
            raise ValueError(f"more than {MAX_HOSTS:,} hosts in {expression!r}")
    return hosts


def _top_level_items(text: str) -> list[str]:
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise ValueError(f"nested '[' in {text!r}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"']' without '[' in {text!r}")
        elif char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"'[' without ']' in {text!r}")
    items.append(text[start:])
    if any(not item for item in items):
        raise ValueError(f"an empty host name in {text!r}")
    return items


def _expand_item(item: str) -> list[str]:
    pieces = re.split(r"\[([^\]]*)\]", item)  # literal, ranges, literal, ranges, ..., literal
    names = [pieces[0]]
    for ranges, literal in zip(pieces[1::2], pieces[2::2]):
        names = [n + value + literal for n in names for value in _expand_ranges(ranges, item)]
    return names


def _expand_ranges(ranges: str, item: str) -> list[str]:
    values: list[str] = []
    for part in ranges.split(","):
        match = _RANGE.match(part.strip())
        if not match:
            raise ValueError(f"'{part}' in {item!r} is not a number or a range such as 001-128")
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low):
            raise ValueError(f"the range '{part}' in {item!r} goes down")
        if int(high) - int(low) >= MAX_HOSTS:
            raise ValueError(f"more than {MAX_HOSTS:,} hosts in {item!r}")
        width = len(low) if low.startswith("0") else 0
        values.extend(str(v).zfill(width) for v in range(int(low), int(high) + 1))
    return values
