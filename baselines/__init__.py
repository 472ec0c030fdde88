"""RL baselines, the evaluation harness, reports, paper reproductions and the ``cluster-envs`` CLI."""

from cluster_envs.common.numba_cache import register_package

register_package(__file__)  # first: our compiled functions' cache stamp covers cluster_envs and this package
