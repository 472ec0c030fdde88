"""``FractionalActionWrapper``: a Box action for continuous-action agents (spec §3.5).

The agent proposes fractional assignments z (K, M) (single job: (M,)); the wrapper projects every machine's
column onto {z ≥ 0, Σ_k z_k ≤ 1} exactly (P4; the clip of Eq. 19 for one job) and samples one occupant per
machine from (z_1..z_K, 1 − Σz) with the env's ``misc`` stream, so E[x̃] = z (Eqs. 21, 72).

The wrapper records its construction in the env's spec (``gymnasium.utils.RecordConstructorArgs``), so
``gym.make(env.spec)`` rebuilds the wrapped env, as gymnasium's ``check_env`` requires. The action is float32
(what SB3's continuous-action algorithms emit). For an id-only RL client, the RL-ready ids
(``ClusterApproxRL-v3``, ``ClusterApproxSingleJobRL-v2``) give one Box observation and an action SB3 trains on.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from cluster_envs.approx.projection import categorical_round, project_columns


class FractionalActionWrapper(gym.ActionWrapper, gym.utils.RecordConstructorArgs):
    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ActionWrapper.__init__(self, env)
        base = env.unwrapped
        if getattr(base, "_generalized", False):
            raise ValueError("FractionalActionWrapper supports the base model only (capacity=None)")
        m, k = base.config.n_machines, base.config.max_visible_jobs
        self._single = base.single_job
        shape = (m,) if self._single else (k, m)
        self.action_space = spaces.Box(0.0, 1.0, shape=shape, dtype=np.float32)
        self._projected: np.ndarray | None = None

    def action(self, action: Any) -> np.ndarray:
        z = np.asarray(action, dtype=np.float64)
        if z.shape != self.action_space.shape:
            raise ValueError(f"action must have shape {self.action_space.shape}, got {z.shape}")
        if not np.isfinite(z).all():
            raise ValueError("action must be finite")
        z = project_columns(z[None, :] if self._single else z)
        self._projected = z[0] if self._single else z
        occupant = categorical_round(z, self.env.unwrapped.misc_rng)
        return occupant.astype(np.int8) if self._single else occupant

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = super().step(action)
        info["fractional_action"] = self._projected
        return obs, reward, terminated, truncated, info
