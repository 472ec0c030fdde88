"""The table of env ids. ``import cluster_envs`` registers every id (idempotently).

A new setting adds one line to ``ENV_ENTRY_POINTS``; the registry-wide conformance test
(tests/test_conformance.py) then covers it automatically.

``RL_IDS`` are the RL-ready ids, ``Cluster<Name>RL-v0``: a base id made with the env kwargs of its RL interface
(``docs/rl_ablations.md`` chose them by measurement), so that its observation is one Box and its action a Box,
Discrete or MultiDiscrete space and a client that takes only an id (SB3's ``PPO("MlpPolicy", id)``, CleanRL,
RLlib) trains on it with no user code. The kwargs change only how an action is read and how the observation is
laid out (``observation_mode="flat"`` is ``gymnasium.spaces.flatten`` of the base id's Dict), never the dynamics,
the reward or the metrics: an RL-ready id plays the base id's episodes, and the base id's batched env is its
batched env. Every other kwarg (preset, horizon, reward mode) is the base id's default and can be overridden.
"""

from __future__ import annotations

from typing import Any

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


# RL-ready id -> (base id, the env kwargs of its RL interface).
RL_IDS: dict[str, tuple[str, dict[str, Any]]] = {
    "ClusterApproxRL-v0": ("ClusterApprox-v0", {"action_mode": "work_conserving", "observation_mode": "flat"}),
    "ClusterApproxSingleJobRL-v0": (
        "ClusterApproxSingleJob-v0",
        {"action_mode": "paced_priority", "observation_mode": "flat"},
    ),
    "ClusterMultiServerRL-v0": ("ClusterMultiServer-v0", {"action_mode": "scores", "observation_mode": "flat"}),
    "ClusterGangRL-v0": ("ClusterGang-v0", {"action_mode": "scores", "observation_mode": "flat"}),
}


def register_envs() -> None:
    for env_id, entry_point in ENV_ENTRY_POINTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, vector_entry_point=VECTOR_ENTRY_POINTS.get(env_id))
    for env_id, (base, kwargs) in RL_IDS.items():
        if env_id not in gym.registry:
            vector = VECTOR_ENTRY_POINTS.get(base)
            gym.register(id=env_id, entry_point=ENV_ENTRY_POINTS[base], vector_entry_point=vector, kwargs=dict(kwargs))


def env_ids(rl_ready: bool = True) -> list[str]:
    """Every id this package registers, in table order (the RL-ready ids last, unless ``rl_ready`` is False)."""
    return list(ENV_ENTRY_POINTS) + (list(RL_IDS) if rl_ready else [])


def rl_base(env_id: str) -> str | None:
    """The base id of an RL-ready id (``"cluster_envs:"`` prefix allowed), or None for any other id."""
    entry = RL_IDS.get(env_id.split(":")[-1])
    return None if entry is None else entry[0]
