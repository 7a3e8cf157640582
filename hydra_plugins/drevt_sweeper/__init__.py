"""drevt-sweep's Hydra sweeper (``hydra/sweeper=drevt``, the default of ``drevt-sweep``).

A Hydra plugin lives in the ``hydra_plugins`` namespace package; this one is a thin shell:
the grid is Hydra's own (its override grammar, ``hydra.sweeper.params``, the same jobs in the
same order), and ``drevt_sweep.sweep.batch`` runs it -- composing once per distinct choice of
config groups and running every configuration's seeds as one task list when Hydra's basic
launcher is configured, handing the jobs to any other launcher as Hydra's basic sweeper does.
``hydra/sweeper=basic`` is Hydra's own sweeper (one composed Hydra job per configuration).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from hydra.plugins.sweeper import Sweeper


class DrevtSweeper(Sweeper):
    def __init__(self, max_batch_size: Optional[int] = None,
                 params: Optional[Dict[str, str]] = None) -> None:
        super().__init__()
        self.max_batch_size = max_batch_size
        self.params = dict(params or {})
        self.hydra_context = self.config = self.launcher = self.task_function = None

    def setup(self, *, hydra_context, task_function, config) -> None:
        from hydra.core.plugins import Plugins

        self.hydra_context, self.task_function, self.config = hydra_context, task_function, config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: List[str]) -> Any:
        from drevt_sweep.sweep.batch import sweep

        return sweep(self, arguments)
