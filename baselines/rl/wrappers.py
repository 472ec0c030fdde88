"""RL-side wrappers: how an RL policy reads the ClusterApprox ids, without changing their dynamics or rewards.

- ``BanditStatsObservation``: the flattened Dict observation plus, per machine, the empirical mean rate
  ``sum_obs / n_obs`` (0 before the first observation) and the width ``1 / sqrt(1 + n_obs)``: the bandit's
  sufficient statistics in the form an index policy uses them (an MLP on ``n_obs`` and ``sum_obs`` alone must
  learn a division). Everything is computed from the observation, so the information rule holds.
- ``SlotMaskAction`` (ClusterApprox-v1): ``action_masks()`` for sb3-contrib's MaskablePPO, allowing per machine
  idle and the occupied slots only.

The action wrapper reads the raw Dict observation, so it goes inside any observation wrapper. (The work-conserving
reading of ClusterApprox-v1's action, once a wrapper here, is the env's ``action_mode="work_conserving"``.)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

PRESENT = 0  # column of a job row that is 1 when the slot holds a job


class BanditStatsObservation(gym.ObservationWrapper):
    """One Box: ``flatten(observation)`` followed by the per-machine empirical mean rate and confidence width."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        raw = env.observation_space
        if not isinstance(raw, spaces.Dict) or not {"n_obs", "sum_obs"} <= set(raw.spaces):
            raise ValueError(f"BanditStatsObservation needs a Dict observation with n_obs and sum_obs, got {raw}")
        self._raw = raw
        flat = spaces.flatten_space(raw)
        m = raw["n_obs"].shape[0]
        low = np.concatenate([flat.low, np.zeros(2 * m)])
        high = np.concatenate([flat.high, np.ones(2 * m)])
        self.observation_space = spaces.Box(low, high, dtype=np.float64)

    def observation(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        n = np.asarray(observation["n_obs"], dtype=np.float64)
        mean = np.asarray(observation["sum_obs"], dtype=np.float64) / np.maximum(n, 1.0)
        width = 1.0 / np.sqrt(1.0 + n)
        return np.concatenate([spaces.flatten(self._raw, observation), mean, width])


class SlotMaskAction(gym.Wrapper):
    """MaskablePPO's ``action_masks()`` on ClusterApprox-v1's Dict observation: per machine, idle and the slots the
    last observation showed occupied (flat, K + 1 per machine)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        if "jobs" not in getattr(env.observation_space, "spaces", {}) or not isinstance(
            env.action_space, spaces.MultiDiscrete
        ):
            raise ValueError(f"{type(self).__name__} needs ClusterApprox-v1's base model (jobs, MultiDiscrete action)")
        self.present = np.zeros(env.observation_space["jobs"].shape[0], dtype=bool)

    def _remember(self, observation: dict[str, np.ndarray]) -> None:
        self.present = observation["jobs"][:, PRESENT] > 0

    def reset(self, **kwargs: Any):
        observation, info = self.env.reset(**kwargs)
        self._remember(observation)
        return observation, info

    def step(self, action: Any):
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._remember(observation)
        return observation, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        return _slot_mask(self.present, self.action_space.shape[0])

    @staticmethod
    def action_mask_from(problem: Any, observation: dict[str, np.ndarray]) -> np.ndarray:
        """``action_masks()`` from public data alone (the problem's machines and the raw observation's job rows),
        so that a trained MaskablePPO policy runs as an agent outside the wrapper."""
        return _slot_mask(observation["jobs"][:, PRESENT] > 0, problem.n_machines)


def _slot_mask(present: np.ndarray, machines: int) -> np.ndarray:
    """Per machine, idle and the occupied slots (flat, K + 1 per machine)."""
    return np.tile(np.concatenate([[True], present]), machines)
