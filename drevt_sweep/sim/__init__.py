"""The simulator core: a job table in, a schedule and its metrics out.

No files, no Hydra, no MLflow: everything here can be called from a notebook, a test or a
worker process. ``engine`` drives the events; ``policies`` decide the order and the
backfilling; ``kernel`` is the compiled event loop that mirrors the engine bit for bit;
``runtime`` draws how long jobs really run; ``workload`` and ``capacity`` transform the
trace and the machine; ``metrics`` turns a schedule into numbers.
"""
