"""The table of env ids. ``import cluster_envs`` registers every id (idempotently).

A new setting adds one line to ``ENV_ENTRY_POINTS``; the registry-wide conformance test
(tests/test_conformance.py) then covers it automatically.

Each setting also has an RL-ready id, ``Cluster<Name>RL-vN`` (``RL_IDS``): the setting's env class with the
kwargs of its benchmark row's training run (``baselines/eval/protocol.yml``: the entry's env kwargs, e.g. the
reward, service model, horizon or preset the headline scores, plus the interface its PPO trains on: one ``Box``
observation and a ``Box``, ``Discrete`` or ``MultiDiscrete`` action, chosen by the RL-interface ablations,
docs/appendix/rl_ablations.md) and ``info_level="minimal"`` (info keys of fixed shapes, what replay buffers
store), so that
a client that takes only an id (CleanRL, RLlib, TorchRL, Tianshou, ``PPO("MlpPolicy", gym.make(id))``) trains the
benchmark's task with no user code. Any other kwarg passes as to the base id. ``observation_format="flat"`` is
``gymnasium.spaces.flatten`` of the base id's Dict observation (what ``FlattenObservation`` gives), so the base
id's batched env is the RL-ready id's batched env too; the ClusterApprox RL ids' ``observation_format="scaled"`` is
that flat observation as float32 divided by its public bounds (O(1) entries where the raw ones reach 2·10⁵). The
benchmark's PPO rows train on ``"flat"`` through ``VecNormalize`` (the shipped models), so ``"scaled"`` is the RL
id's only difference from the benchmark's training interface.

A process that has not imported ``cluster_envs`` (a worker of RLlib, a ``SubprocVecEnv`` child, TorchRL, Tianshou)
finds an id by its ``"cluster_envs:"`` prefix, ``gym.make("cluster_envs:ClusterSLARL-v1")``: gymnasium imports the
module before it looks the id up (gymnasium has no entry-point plugin registration; docs/clients.md).
"""

from __future__ import annotations

import gymnasium as gym

ENV_ENTRY_POINTS: dict[str, str] = {
    "ClusterSLA-v1": "cluster_envs.sla.env:ClusterSLAEnv",
    "ClusterApprox-v1": "cluster_envs.approx.env:ClusterApproxEnv",
    "ClusterApproxSingleJob-v0": "cluster_envs.approx.env:ClusterApproxSingleJobEnv",
    "ClusterBilinear-v0": "cluster_envs.bilinear.env:ClusterBilinearEnv",
    "ClusterMultiServer-v0": "cluster_envs.multiserver.env:ClusterMultiServerEnv",
    "ClusterGang-v0": "cluster_envs.multiserver.gang_env:ClusterGangEnv",
}

# Ids with a batched implementation for ``gym.make_vec(id, B, vectorization_mode="vector_entry_point")``.
VECTOR_ENTRY_POINTS: dict[str, str] = {
    "ClusterSLA-v1": "cluster_envs.sla.vector_env:ClusterSLAVectorEnv",
    "ClusterApprox-v1": "cluster_envs.approx.vector_env:ClusterApproxVectorEnv",
    "ClusterApproxSingleJob-v0": "cluster_envs.approx.vector_env:ClusterApproxSingleJobVectorEnv",
    "ClusterBilinear-v0": "cluster_envs.bilinear.vector_env:ClusterBilinearVectorEnv",
    "ClusterMultiServer-v0": "cluster_envs.multiserver.vector_env:ClusterMultiServerVectorEnv",
    "ClusterGang-v0": "cluster_envs.multiserver.vector_env:ClusterGangVectorEnv",
}


MINIMAL_INFO = {"info_level": "minimal"}

# RL-ready id -> (base id, the kwargs it fixes): each the benchmark row's training kwargs (tests/test_rl_ids.py
# checks them against the protocol entry), then the interface.
RL_IDS: dict[str, tuple[str, dict[str, str | int]]] = {
    # the interfaces the RL ablations chose (docs/appendix/rl_ablations.md)
    "ClusterSLARL-v1": ("ClusterSLA-v1", {"action_mode": "normalize", **MINIMAL_INFO}),
    # paced priorities (v2: the base id's prices no longer leak; v3: the float32 observation scaled by its public
    # bounds, CHANGELOG)
    "ClusterApproxRL-v3": (
        "ClusterApprox-v1",
        {"action_mode": "paced_priority", "observation_format": "scaled", **MINIMAL_INFO},
    ),
    # the headline scores Eq. 6 (reward_mode="approx"); paced priority; the scaled float32 observation
    "ClusterApproxSingleJobRL-v2": (
        "ClusterApproxSingleJob-v0",
        {"reward_mode": "approx", "action_mode": "paced_priority", "observation_format": "scaled", **MINIMAL_INFO},
    ),
    # the benchmark's exclusive service at T = 2000; simplex logits; the full observation
    # (queues and the bandit's statistics) is one Box
    "ClusterBilinearRL-v1": (
        "ClusterBilinear-v0",
        {
            "service_model": "exclusive",
            "horizon": 2000,
            "action_mode": "simplex_logits",
            "observation_mode": "full",
            **MINIMAL_INFO,
        },
    ),
    # the benchmark's small preset; scores
    "ClusterMultiServerRL-v1": (
        "ClusterMultiServer-v0",
        {"preset": "small", "action_mode": "scores", "observation_format": "flat", **MINIMAL_INFO},
    ),
    # the benchmark's T = 200; PPO's interface (a Box action cannot carry MaskablePPO's mask: the benchmark's
    # MaskablePPO uses the base id)
    "ClusterGangRL-v1": (
        "ClusterGang-v0",
        {"horizon": 200, "action_mode": "scores", "observation_format": "flat", **MINIMAL_INFO},
    ),
    # instance-independent spaces (issue #32): padded edge rows, one score per padded edge, the same for every
    # instance_seed and preset up to the paper's sizes (cluster_envs.multiserver.entity)
    "ClusterMultiServerEntityRL-v0": (
        "ClusterMultiServer-v0",
        {"action_mode": "scores", "observation_mode": "entity", "observation_format": "flat", **MINIMAL_INFO},
    ),
    "ClusterGangEntityRL-v0": (
        "ClusterGang-v0",
        {"action_mode": "scores", "observation_mode": "entity", "observation_format": "flat", **MINIMAL_INFO},
    ),
}

# RL-ready ids of the instance-independent interface: not (yet) the benchmark's PPO interface, which trains on one
# fixed instance with the flat ids above
ENTITY_RL_IDS = ("ClusterMultiServerEntityRL-v0", "ClusterGangEntityRL-v0")


def register_envs() -> None:
    for env_id, entry_point in ENV_ENTRY_POINTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, vector_entry_point=VECTOR_ENTRY_POINTS.get(env_id))
    for env_id, (base, kwargs) in RL_IDS.items():
        if env_id not in gym.registry:
            vector = VECTOR_ENTRY_POINTS.get(base)
            gym.register(id=env_id, entry_point=ENV_ENTRY_POINTS[base], vector_entry_point=vector, kwargs=dict(kwargs))


def env_ids() -> list[str]:
    """Every setting's id, in table order (the RL-ready ids are ``rl_ids()``)."""
    return list(ENV_ENTRY_POINTS)


def rl_ids() -> list[str]:
    """The RL-ready ids, in table order."""
    return list(RL_IDS)
