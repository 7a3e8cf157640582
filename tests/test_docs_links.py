"""The README and docs/ link to each other: every relative link names a file that exists and,
with a `#fragment`, a heading in it (GitHub's anchor rule), so moving a section cannot leave a
dead link behind."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a `# comment` in a bash block is no heading)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", _prose(page.read_text()), re.M)}


def test_anchor_follows_githubs_rule():
    assert anchor("Formats (`--trace_format`, Hydra group `format`)") == "formats---trace_format-hydra-group-format"
    assert anchor("Search sweeps: ask the question, not a grid") == "search-sweeps-ask-the-question-not-a-grid"


def test_every_relative_link_resolves():
    dead = []
    for page in PAGES:
        for target in LINK.findall(_prose(page.read_text())):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, fragment = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                dead.append(f"{page.name}: {target} (no file)")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                dead.append(f"{page.name}: {target} (no heading)")
    assert not dead, "\n".join(dead)


def test_the_readme_links_every_internals_page():
    readme = (ROOT / "README.md").read_text()
    unlinked = [p.name for p in PAGES[1:] if f"docs/{p.name}" not in readme]
    assert not unlinked, unlinked
