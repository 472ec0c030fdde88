"""Hypothesis over every id: seeded episodes under actions mixing the space's corners (bounds, zeros, midpoints)
with random values. Every step: observation inside its space, a finite float reward, bool flags and finite
scalar info. Corner actions (all zeros, all at the bound) are where normalisations divide by zero."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .robust_common import IDS, sample_action, scalar_info

STEPS = 40
CORNERS = ("low", "high", "zero", "mid", "random")


def corner_action(space: spaces.Space, rng: np.random.Generator, kinds: list[str]):
    """A valid action whose entries are taken, cyclically by ``kinds``, from the bounds, 0, the midpoint or random
    (MultiBinary: ``low``/``zero`` give 0, ``high`` 1, ``mid`` random; so ``["high"]`` is all ones)."""
    action = sample_action(space, rng)
    if isinstance(space, spaces.Box):
        low = np.where(np.isfinite(space.low), space.low, -1.0).ravel()
        high = np.where(np.isfinite(space.high), space.high, 1.0).ravel()
        picks = {"low": low, "high": high, "zero": np.clip(0, low, high), "mid": (low + high) / 2}
        flat = action.ravel().copy()
        for k in range(flat.size):
            kind = kinds[k % len(kinds)]
            if kind != "random":
                flat[k] = picks[kind][k]
        return flat.reshape(space.shape).astype(space.dtype)
    if isinstance(space, spaces.MultiDiscrete):
        flat = action.ravel().copy()
        top = (space.start + space.nvec - 1).ravel()
        for k in range(flat.size):
            kind = kinds[k % len(kinds)]
            flat[k] = {"low": space.start.ravel()[k], "high": top[k]}.get(kind, flat[k])
        return flat.reshape(space.shape).astype(space.dtype)
    if isinstance(space, spaces.MultiBinary):  # low and zero are 0, high is 1; a 0/1 space has no midpoint
        flat = action.ravel().copy()
        for k in range(flat.size):
            flat[k] = {"low": 0, "zero": 0, "high": 1}.get(kinds[k % len(kinds)], flat[k])
        return flat.reshape(space.shape).astype(space.dtype)
    return action  # other spaces: random valid actions only


@pytest.mark.parametrize("env_id", IDS)
def test_corner_actions_keep_every_step_well_formed(env_id):
    env = gym.make(env_id)

    @settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=st.integers(0, 2**31 - 1), kinds=st.lists(st.sampled_from(CORNERS), min_size=1, max_size=4))
    def run(seed, kinds):
        rng = np.random.default_rng(seed)
        obs, _ = env.reset(seed=seed)
        assert env.observation_space.contains(obs)
        for t in range(STEPS):
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # overflow / division warnings are findings
                obs, reward, terminated, truncated, info = env.step(corner_action(env.action_space, rng, kinds))
            where = f"{env_id} seed {seed} corners {kinds} step {t}"
            assert env.observation_space.contains(obs), f"{where}: observation outside its space"
            assert type(reward) is float and math.isfinite(reward), f"{where}: reward {reward!r}"
            assert type(terminated) is bool and type(truncated) is bool, where
            bad = {k: v for k, v in scalar_info(info).items() if not math.isfinite(v)}
            assert not bad, f"{where}: non-finite info {bad}"
            if terminated or truncated:
                obs, _ = env.reset()

    run()
