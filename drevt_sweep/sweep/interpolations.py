"""OmegaConf's interpolations parsed once per distinct string, not once per look-up.

OmegaConf parses an interpolation (``${oc.env:DREVT_ROOT,${drevt_cwd:}}``) with its ANTLR
grammar every time the key is read or resolved (``omegaconf.base``: ``parse(value)`` in
``_maybe_resolve_interpolation`` and ``_resolve_node_interpolation``), and a sweep reads the
same few strings for every configuration: resolving a configuration's ``paths`` section was
2.6 ms of the 3.7 ms its whole config took (measured, issue 23 item 2), reading
``cfg.paths.root`` ~1 ms. ``omegaconf.grammar_parser.parse`` is a pure function of its
arguments: the tree it returns is only read by OmegaConf's visitor, and each tree's tokens keep
their own input stream (OmegaConf already reuses its lexer and parser for the next string while
an earlier tree is still being visited, when one interpolation resolves another). So the tree
of a string can be kept and handed out again: the values resolved are the same, and a string
that does not parse raises the same error every time (an exception is not cached).
"""

from __future__ import annotations

import functools

CACHED_STRINGS = 4096  # distinct interpolation strings kept (a config has a few dozen)


def cache_parses() -> None:
    """Make ``omegaconf.base`` (where interpolations are resolved) reuse parse trees; once per
    process, idempotent. Only where ``omegaconf.base.parse`` is still ``grammar_parser.parse``
    (OmegaConf 2.1-2.4): another OmegaConf, laid out otherwise, is left as it is (slower, same
    values)."""
    import omegaconf.base as base
    from omegaconf import grammar_parser

    current = getattr(base, "parse", None)
    if current is not None and current is getattr(grammar_parser, "parse", None):
        base.parse = functools.lru_cache(maxsize=CACHED_STRINGS)(current)
