"""The ``drevt-sweep`` Hydra app: configuration groups composed, seeds fanned out, results gathered.

``config`` is the structured schema, ``app`` the Hydra entry point (one Hydra job = one
configuration), ``seeds`` the seeded fan-out over joblib, ``backends`` the cluster back-ends.
"""
