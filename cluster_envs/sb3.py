"""An SB3 ``VecEnv`` over a Gymnasium 1.x ``VectorEnv``: SB3 trains on an id's native batched env.

Needs stable-baselines3 (``pip install "cluster-envs[rl]"``); the rest of ``cluster_envs`` does not import it::

    import gymnasium as gym
    from stable_baselines3 import PPO
    from cluster_envs.sb3 import NativeVecEnv

    env = gym.make_vec("cluster_envs:ClusterSLARL-v1", num_envs=64, vectorization_mode="vector_entry_point")
    PPO("MlpPolicy", NativeVecEnv(env)).learn(10_000)

Gymnasium 1.x vector envs (ours: ``metadata["autoreset_mode"]`` is ``NEXT_STEP``) report an episode's end on one
step and reset the copy on the *next* step, which ignores the copy's action and returns reward 0. SB3's
convention (``DummyVecEnv``) resets on the *same* step: the step that ends an episode returns the first
observation of the next one, with the last one in ``info["terminal_observation"]`` and
``info["TimeLimit.truncated"]`` set on a truncation (PPO bootstraps the value there). :class:`NativeVecEnv`
converts: the copies that ended are reset at once, and only they, through the vector env's
``reset(options={"reset_mask": mask})`` (Gymnasium's partial reset, as ``SyncVectorEnv`` offers it), so the copy
never sees the ignored autoreset step. With each copy seeded as ``DummyVecEnv`` seeds its envs (copy i with
``seed + i`` at the first reset, unseeded afterwards), the two give the same observations, rewards, dones and
terminal observations step for step (``tests/baselines/test_vec_env.py``).

Episode statistics (``info["episode"]``, so SB3 logs ``ep_rew_mean``) come from SB3's ``VecMonitor`` around this
adapter (:func:`monitored`); ``VecNormalize`` goes around that, so the statistics stay in raw rewards.
The Dict observations of the envs RL sees through ``FlattenObservation`` are flattened here, on the whole batch,
exactly as the single-env wrapper flattens each copy (:func:`cluster_envs.common.flat.flatten_batch`); the envs' own
``observation_format="flat"`` does the same inside the batched env.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import DictInfoToList

try:
    from stable_baselines3.common.vec_env import VecEnv, VecMonitor
except ImportError as err:  # the core package needs no SB3; this adapter does
    raise ImportError(
        'cluster_envs.sb3 needs stable-baselines3: pip install "cluster-envs[rl]" (or stable-baselines3)'
    ) from err

from cluster_envs.common.flat import flatten_batch

FLATTEN = "gymnasium.wrappers.FlattenObservation"
# Methods SB3 calls per copy (``env_method``) that a batched env answers for all copies at once, from the batch's
# state: its copies (``env.envs``) hold the configuration but are not stepped, so theirs would be stale.
# MaskablePPO's ``action_masks`` is one (sb3_contrib's ``get_action_masks``).
BATCHED_METHODS = frozenset({"action_masks"})


class NativeVecEnv(VecEnv):
    """SB3's ``VecEnv`` interface over ``env``, a Gymnasium ``VectorEnv`` with NEXT_STEP autoreset and
    ``reset(options={"reset_mask": ...})``; ``wrapper`` is ``None`` or ``FLATTEN`` (the Dict observation
    flattened as ``gymnasium.wrappers.FlattenObservation`` does). Rewards are float32 and infos a list of
    per-copy dicts, as in ``DummyVecEnv``."""

    def __init__(self, env: gym.vector.VectorEnv, wrapper: str | None = None):
        mode = env.metadata.get("autoreset_mode")
        if mode != AutoresetMode.NEXT_STEP:
            raise ValueError(f"env must autoreset in NEXT_STEP mode (Gymnasium's default), got {mode!r}")
        if wrapper not in (None, FLATTEN):
            raise ValueError(f"wrapper={wrapper!r} is not supported on the native path; allowed: None, {FLATTEN!r}")
        self.env = DictInfoToList(env)
        self._raw_space = env.single_observation_space
        self._observe: Callable[[Any], Any] = (
            (lambda batch: flatten_batch(self._raw_space, batch)) if wrapper == FLATTEN else (lambda batch: batch)
        )
        space = gym.spaces.flatten_space(self._raw_space) if wrapper == FLATTEN else self._raw_space
        self.render_mode = None
        super().__init__(env.num_envs, space, env.single_action_space)
        self._actions: np.ndarray | None = None

    def reset(self) -> Any:
        seeds = None if all(s is None for s in self._seeds) else self._seeds
        options = self._options[0] or None
        if any(o != self._options[0] for o in self._options):
            raise ValueError("NativeVecEnv resets every copy with the same options; got different ones per copy")
        obs, self.reset_infos = self.env.reset(seed=seeds, options=options)
        self._reset_seeds()
        self._reset_options()
        return self._observe(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, terminated, truncated, infos = self.env.step(self._actions)
        obs = self._observe(obs)
        dones = np.logical_or(terminated, truncated)
        for i in np.flatnonzero(dones):
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            infos[i]["terminal_observation"] = _row(obs, i)
        if dones.any():
            fresh, reset_infos = self.env.reset(options={"reset_mask": dones.copy()})
            _put_rows(obs, self._observe(fresh), dones)
            for i in np.flatnonzero(dones):
                self.reset_infos[i] = reset_infos[i]
        return obs, np.asarray(rewards, dtype=np.float32), dones, infos

    def close(self) -> None:
        self.env.close()

    # SB3 reaches the envs through these; the native env's copies (``env.envs``) hold its configuration.
    def _targets(self, indices) -> list[Any]:
        copies = getattr(self.env.unwrapped, "envs", None)
        return [copies[i] if copies is not None else self.env.unwrapped for i in self._get_indices(indices)]

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        if attr_name == "render_mode":
            return [None] * len(list(self._get_indices(indices)))
        return [getattr(target, attr_name) for target in self._targets(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        for target in self._targets(indices):
            setattr(target, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        if method_name in BATCHED_METHODS and self.has_batched(method_name):
            rows = getattr(self.env.unwrapped, method_name)(*method_args, **method_kwargs)
            return [rows[i] for i in self._get_indices(indices)]
        return [getattr(t, method_name)(*method_args, **method_kwargs) for t in self._targets(indices)]

    def has_batched(self, method_name: str) -> bool:
        """Whether the batched env computes ``method_name`` for every copy itself (see ``BATCHED_METHODS``)."""
        return callable(getattr(self.env.unwrapped, method_name, None))

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices=None) -> list[bool]:
        return [False] * len(list(self._get_indices(indices)))


def _row(batch: Any, i: int) -> Any:
    """Row ``i`` of a batched observation (an array or a dict of arrays), copied."""
    if isinstance(batch, dict):
        return {key: _row(value, i) for key, value in batch.items()}
    return batch[i].copy()


def _put_rows(batch: Any, source: Any, mask: np.ndarray) -> None:
    """Write the ``mask`` rows of ``source`` into ``batch`` (arrays or dicts of arrays alike)."""
    if isinstance(batch, dict):
        for key in batch:
            _put_rows(batch[key], source[key], mask)
    else:
        batch[mask] = source[mask]


def monitored(env: gym.vector.VectorEnv, wrapper: str | None = None) -> VecMonitor:
    """``env`` as an SB3 VecEnv with episode statistics (``info["episode"]``, SB3's ``VecMonitor``)."""
    return VecMonitor(NativeVecEnv(env, wrapper))


def make_native(env_id: str, num_envs: int, env_kwargs: dict[str, Any], wrapper: str | None = None) -> VecMonitor:
    """``num_envs`` copies of ``env_id`` through its ``vector_entry_point``, as a monitored SB3 VecEnv; a
    ``ValueError`` when the id has no batched env or the batched env refuses ``env_kwargs``."""
    if gym.spec(env_id).vector_entry_point is None:
        raise ValueError(f"{env_id} has no vector_entry_point (no native batched env)")
    env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **env_kwargs)
    return monitored(env, wrapper)
