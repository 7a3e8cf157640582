"""MLflow glue: the store and its runs (``store``), the helper process that writes them while
the sweep works (``helper``), and the shared PostgreSQL tracking server (``server``)."""
