"""Shared helpers of the robustness tests: env discovery, gymnasium-independent action sampling, flattening.

Actions are drawn from our own ``np.random.Generator`` (not ``space.sample()``) so that golden trajectories
depend on the env alone, not on how a gymnasium release samples its spaces.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import cluster_envs

IDS = cluster_envs.env_ids()
REGISTERED = IDS + cluster_envs.rl_ids()  # with the RL-ready ids: the golden files cover every registered id


def presets(env_id: str) -> list[str]:
    """The preset names of ``env_id`` (its env class's ``presets`` table), less those that read user data
    (``TRACE_PRESETS`` of the config module: tested with the data in the env's tests) and the production-scale
    ones (``PRODUCTION_PRESETS``: tests/test_production_presets.py)."""
    env = gym.make(env_id).unwrapped
    module = importlib.import_module(type(env.config).__module__)
    skipped = (*getattr(module, "TRACE_PRESETS", ()), *getattr(module, "PRODUCTION_PRESETS", ()))
    return [name for name in type(env).presets if name not in skipped]


def action_modes(env_id: str) -> list[str]:
    """The ``ACTION_MODES`` listed next to the env class or its config class ([] for a single action form)."""
    module_name = gym.spec(env_id).entry_point.partition(":")[0]
    config_module = type(gym.make(env_id).unwrapped.config).__module__
    for name in (module_name, config_module):
        modes = getattr(importlib.import_module(name), "ACTION_MODES", None)
        if modes is not None:
            return list(modes)
    return []


def config_fields(env: gym.Env) -> list[dataclasses.Field]:
    return list(dataclasses.fields(env.unwrapped.config))


def sample_action(space: spaces.Space, rng: np.random.Generator) -> Any:
    """A valid action of ``space`` drawn from ``rng`` (Box, Discrete, MultiDiscrete, MultiBinary, Dict, Tuple)."""
    if isinstance(space, spaces.Box):
        low = np.where(np.isfinite(space.low), space.low, -1.0)
        high = np.where(np.isfinite(space.high), space.high, 1.0)
        if space.dtype.kind in "iu":
            return rng.integers(low, high, endpoint=True).astype(space.dtype)
        return rng.uniform(low, high).astype(space.dtype)
    if isinstance(space, spaces.Discrete):
        return np.int64(space.start + rng.integers(space.n))
    if isinstance(space, spaces.MultiDiscrete):
        return (space.start + rng.integers(space.nvec)).astype(space.dtype)
    if isinstance(space, spaces.MultiBinary):
        return rng.integers(2, size=space.shape).astype(space.dtype)
    if isinstance(space, spaces.Dict):
        return {key: sample_action(sub, rng) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(sample_action(sub, rng) for sub in space.spaces)
    raise NotImplementedError(f"no sampler for action space {space}; extend robust_common.sample_action")


def flatten(value: Any) -> np.ndarray:
    """Any observation (array, Dict, Tuple) as one float64 vector, in a fixed key order."""
    if isinstance(value, dict):
        return np.concatenate([flatten(v) for _, v in sorted(value.items())] or [np.zeros(0)])
    if isinstance(value, tuple):
        return np.concatenate([flatten(v) for v in value] or [np.zeros(0)])
    return np.asarray(value, dtype=np.float64).ravel()


def scalar_info(info: dict) -> dict[str, float]:
    """The scalar numeric entries of ``info`` (what the harness traces), plus the episode summary's."""
    out = {k: float(v) for k, v in info.items() if isinstance(v, (int, float, np.number, np.bool_))}
    for k, v in info.get("episode_summary", {}).items():
        if isinstance(v, (int, float, np.number, np.bool_)):
            out[f"episode_summary.{k}"] = float(v)
    return out


def step_record(result: tuple) -> tuple:
    """A step's result in a comparable form: (obs vector, reward, terminated, truncated, scalar info)."""
    obs, reward, terminated, truncated, info = result
    return flatten(obs), float(reward), bool(terminated), bool(truncated), scalar_info(info)


def assert_same_steps(first: list[tuple], second: list[tuple], label: str) -> None:
    assert len(first) == len(second), f"{label}: {len(first)} vs {len(second)} steps"
    for t, (a, b) in enumerate(zip(first, second, strict=True)):
        np.testing.assert_array_equal(a[0], b[0], err_msg=f"{label}: observation differs at step {t}")
        assert a[1:4] == b[1:4], f"{label}: reward/flags differ at step {t}: {a[1:4]} vs {b[1:4]}"
        assert a[4] == b[4], f"{label}: scalar info differs at step {t}"


def run_actions(env: gym.Env, actions: list, reset_seed: int | None = None) -> list[tuple]:
    """Step ``actions`` (resetting without a seed at an episode end); optionally reset with a seed first."""
    out = []
    if reset_seed is not None:
        obs, _ = env.reset(seed=reset_seed)
        out.append((flatten(obs), 0.0, False, False, {}))
    for action in actions:
        record = step_record(env.step(copy.deepcopy(action)))
        out.append(record)
        if record[2] or record[3]:
            obs, _ = env.reset()
            out.append((flatten(obs), 0.0, False, False, {}))
    return out
