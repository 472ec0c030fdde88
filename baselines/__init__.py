"""RL baselines, the evaluation harness, reports, paper reproductions and the ``cluster-envs`` CLI."""

import cluster_envs  # noqa: F401  (first: the package-wide numba cache stamp, cluster_envs.common.numba_cache)
