"""Every folder that ships is declared in pyproject.toml: setuptools prints a multi-line
"Package '…' is absent from the packages configuration" warning for each one that is not (14 of
them, ~600 lines in a fresh `make run`'s install log), which reads like a failure."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _shipped_folders() -> set[str]:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = set()
    for package, source in setuptools["package-dir"].items():
        base = ROOT / source
        for folder in [base, *base.rglob("*")]:
            if folder.is_dir() and any(f.name != "__pycache__" for f in folder.iterdir()):
                rel = folder.relative_to(base).parts
                if not any(part == "__pycache__" for part in rel):
                    folders.add(".".join((package, *rel)))
    # Hydra plugins ship from the top-level namespace package (found by Hydra's plugin scan).
    for init in (ROOT / "hydra_plugins").glob("*/__init__.py"):
        folders.add(f"hydra_plugins.{init.parent.name}")
    return folders


def test_every_shipped_folder_is_a_declared_package():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = set(setuptools["packages"])
    shipped = _shipped_folders()
    assert shipped - declared == set(), "undeclared: " + ", ".join(sorted(shipped - declared))
    assert declared - shipped == set(), "declared but absent: " + ", ".join(sorted(declared - shipped))
