"""Training on a distribution of instances: a new instance per episode, from seeds disjoint from the held-out ones.

``ResampledInstance`` wraps an id whose spaces do not depend on the instance (the entity ids,
``cluster_envs.multiserver.entity``) and, at each ``reset``, builds the env again on the next training instance
seed. Training seeds are drawn from ``[0, HELD_OUT_INSTANCE_BASE)``: the held-out track evaluates seed ``s`` on
instance ``HELD_OUT_INSTANCE_BASE + s``, so no evaluated instance is ever trained on.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from baselines.eval.protocol import HELD_OUT_INSTANCE_BASE

TRAINING_INSTANCES = HELD_OUT_INSTANCE_BASE  # instance seeds 0 .. HELD_OUT_INSTANCE_BASE − 1


class ResampledInstance(gym.Wrapper):
    """``gym.make(env_id, instance_seed=i, **kwargs)`` with ``i`` drawn afresh per episode from ``seeds`` (default:
    the training range), by a generator seeded with ``sampler_seed``. Refuses an id whose spaces change with the
    instance, and a seed in the held-out range."""

    def __init__(self, env_id: str, seeds: Any = None, sampler_seed: int = 0, **kwargs: Any):
        self.seeds = np.arange(TRAINING_INSTANCES) if seeds is None else np.asarray(seeds, dtype=np.int64)
        if self.seeds.size == 0 or (self.seeds < 0).any() or (self.seeds >= HELD_OUT_INSTANCE_BASE).any():
            raise ValueError(f"seeds must be non-empty training instance seeds in [0, {HELD_OUT_INSTANCE_BASE}) "
                             f"(the held-out track evaluates {HELD_OUT_INSTANCE_BASE} and up)")  # fmt: skip
        if "instance_seed" in kwargs:
            raise ValueError("instance_seed is drawn per episode by ResampledInstance; pass seeds instead")
        self.env_id, self.kwargs = env_id, kwargs
        self._sampler = np.random.default_rng(sampler_seed)
        super().__init__(self._make(int(self.seeds[0])))

    def _make(self, instance_seed: int) -> gym.Env:
        return gym.make(self.env_id, instance_seed=instance_seed, **self.kwargs)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        instance_seed = int(self._sampler.choice(self.seeds))
        env = self._make(instance_seed)
        if env.observation_space != self.observation_space or env.action_space != self.action_space:
            raise ValueError(f"{self.env_id} changes its spaces with the instance (instance_seed={instance_seed}); "
                             "ResampledInstance needs an instance-independent interface (an entity id)")  # fmt: skip
        self.env.close()
        self.env = env
        obs, info = env.reset(seed=seed, options=options)
        return obs, {**info, "instance_seed": instance_seed}
