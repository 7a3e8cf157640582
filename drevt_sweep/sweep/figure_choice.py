"""Which configurations draw their own figures (``figures=``): a module of its own so that the
Hydra job path (``app``) and the task-list engine (``batch``) both ask it without importing
each other."""

from __future__ import annotations

# figures=auto draws each configuration's figures (and writes its schedule file) up to this
# many configurations: 2-4 s each on 2 cores (issue 23), more than most simulations cost.
FIGURES_AUTO_MAX = 8
FIGURE_CHOICES = ("auto", "per_configuration", "none")


def figures_wanted(choice: str, configurations: int) -> bool:
    """Whether each configuration draws its figures (``figures=``, see ``FIGURES_AUTO_MAX``)."""
    if choice == "auto":
        return configurations <= FIGURES_AUTO_MAX
    return choice == "per_configuration"
