"""Regression tests for the bugs the robustness tests found (one test per bug, independent of the generic tests)."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

from cluster_envs.bilinear.dynamics import logits_to_allocation, simplex_cap
from cluster_envs.sla.dynamics import ACTION_MODES, to_allocation


def test_sla_normalize_is_scale_invariant_up_to_the_float_max():
    """a⁺/Σa⁺ of huge entries: Σa overflowed to inf and the allocation silently became 0 (reward −0.3)."""
    normalize = ACTION_MODES.index("normalize")
    for scale in (1.0, 1e300, 8e307, np.finfo(np.float64).max / 2):  # largest entry stays finite
        np.testing.assert_allclose(to_allocation(np.array([1.0, 1.0, 2.0]) * scale, normalize), [0.25, 0.25, 0.5])
    env = gym.make("ClusterSLA-v0").unwrapped
    env.reset(seed=0)
    twin = copy.deepcopy(env)
    np.testing.assert_array_equal(env.step(np.full(3, 1e308))[0], twin.step(np.ones(3))[0])


@pytest.mark.parametrize("env_id", ["ClusterSLA-v0", "ClusterBilinear-v0"])
@pytest.mark.parametrize("action", [np.ones(3) + 1j, {"a": 1}, ["x", "y"]], ids=["complex", "dict", "strings"])
def test_non_real_actions_raise_a_value_error_naming_the_action(env_id, action):
    """Complex actions lost their imaginary part with only a warning; dicts raised TypeError (SLA)."""
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(action)


def test_bilinear_capped_projection_handles_huge_entries():
    """Equal huge entries cancelled to an empty support (IndexError) or overflowed to NaN."""
    np.testing.assert_allclose(simplex_cap(np.full(4, float(np.finfo(np.float32).max) * 2.0), 2.0), [0.5] * 4)
    with np.errstate(over="raise"):
        np.testing.assert_allclose(simplex_cap(np.array([1e308, 1e308, 0.0]), 1.0), [0.5, 0.5, 0.0])
    rng = np.random.default_rng(0)
    for _ in range(50):  # the projection commutes with scaling: P_{sC}(s x) = s P_C(x)
        x, scale = rng.uniform(0, 1, 6), 10.0 ** rng.uniform(-5, 300)
        np.testing.assert_allclose(simplex_cap(x * scale, 1.5 * scale), scale * simplex_cap(x, 1.5), rtol=1e-9)


def test_bilinear_softmax_of_huge_finite_logits_is_one_hot_not_nan():
    logits = np.array([[1e308, -1e308, 0.0]])
    y = logits_to_allocation(logits, np.array([True, True]), np.array([2.0]), scale=10.0)
    np.testing.assert_array_equal(y, [[2.0], [0.0]])


def test_bilinear_huge_allocation_fractions_are_projected_without_overflow():
    env = gym.make("ClusterBilinear-v0").unwrapped
    env.reset(seed=0)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        obs, reward, *_, info = env.step(np.full(env.action_space.shape, 1e308))
    assert env.observation_space.contains(obs) and np.isfinite(reward)
    caps = np.asarray(env.config.servers_per_class, dtype=float)
    assert (info["y"].sum(axis=0) <= caps + 1e-9).all()
