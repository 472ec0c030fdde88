"""The table of env ids. ``import cluster_envs`` registers every id (idempotently).

A new setting adds one line to ``ENV_ENTRY_POINTS``; the registry-wide conformance test
(tests/test_conformance.py) then covers it automatically.
"""

from __future__ import annotations

import gymnasium as gym

ENV_ENTRY_POINTS: dict[str, str] = {
    "ClusterSLA-v0": "cluster_envs.sla.env:ClusterSLAEnv",
    "ClusterApprox-v0": "cluster_envs.approx.env:ClusterApproxEnv",
    "ClusterApproxSingleJob-v0": "cluster_envs.approx.env:ClusterApproxSingleJobEnv",
    "ClusterBilinear-v0": "cluster_envs.bilinear.env:ClusterBilinearEnv",
    "ClusterMultiServer-v0": "cluster_envs.multiserver.env:ClusterMultiServerEnv",
    "ClusterGang-v0": "cluster_envs.multiserver.gang_env:ClusterGangEnv",
}

# Ids with a batched implementation for ``gym.make_vec(id, B, vectorization_mode="vector_entry_point")``.
VECTOR_ENTRY_POINTS: dict[str, str] = {
    "ClusterSLA-v0": "cluster_envs.sla.vector_env:ClusterSLAVectorEnv",
    "ClusterApprox-v0": "cluster_envs.approx.vector_env:ClusterApproxVectorEnv",
    "ClusterApproxSingleJob-v0": "cluster_envs.approx.vector_env:ClusterApproxSingleJobVectorEnv",
    "ClusterBilinear-v0": "cluster_envs.bilinear.vector_env:ClusterBilinearVectorEnv",
    "ClusterMultiServer-v0": "cluster_envs.multiserver.vector_env:ClusterMultiServerVectorEnv",
    "ClusterGang-v0": "cluster_envs.multiserver.vector_env:ClusterGangVectorEnv",
}


def register_envs() -> None:
    for env_id, entry_point in ENV_ENTRY_POINTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, vector_entry_point=VECTOR_ENTRY_POINTS.get(env_id))


def env_ids() -> list[str]:
    """Every id this package registers, in table order."""
    return list(ENV_ENTRY_POINTS)
