"""Regression tests for the bugs the robustness tests found (one test per bug, independent of the generic tests)."""

from __future__ import annotations

import copy
import warnings

import gymnasium as gym
import numpy as np
import pytest

from cluster_envs.bilinear.simulator import logits_to_allocation, simplex_cap
from cluster_envs.sla.config import ACTION_MODES
from cluster_envs.sla.kernel import to_allocation


def test_sla_normalize_is_scale_invariant_up_to_the_float_max():
    """a⁺/Σa⁺ of huge entries: Σa overflowed to inf and the allocation silently became 0 (reward −0.3)."""
    normalize = ACTION_MODES.index("normalize")
    for scale in (1.0, 1e300, 8e307, np.finfo(np.float64).max / 2):  # largest entry stays finite
        np.testing.assert_allclose(to_allocation(np.array([1.0, 1.0, 2.0]) * scale, normalize), [0.25, 0.25, 0.5])
    env = gym.make("ClusterSLA-v1").unwrapped
    env.reset(seed=0)
    twin = copy.deepcopy(env)
    np.testing.assert_array_equal(env.step(np.full(3, 1e308))[0], twin.step(np.ones(3))[0])


@pytest.mark.parametrize("env_id", ["ClusterSLA-v1", "ClusterBilinear-v0", "ClusterMultiServer-v0", "ClusterGang-v0"])
@pytest.mark.parametrize("kind", ["complex", "dict", "strings"])
def test_non_real_actions_raise_a_value_error_naming_the_action(env_id, kind):
    """Complex actions lost their imaginary part with only a warning (SLA, Bilinear, MultiServer, Gang); dicts
    raised TypeError (SLA)."""
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    shape = env.action_space.shape
    action = {"complex": np.ones(shape) + 1j, "dict": {"a": 1}, "strings": np.full(shape, "x")}[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="action"):
            env.step(action)


@pytest.mark.parametrize("env_id", ["ClusterApprox-v1", "ClusterApproxSingleJob-v0"])
def test_approx_float_action_beyond_int64_is_rejected_before_the_cast(env_id):
    """1e308 was cast to int64 first: a RuntimeWarning and a message quoting -9223372036854775808."""
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    action = np.zeros(env.action_space.shape)
    action.flat[0] = 1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"action values must lie in .* max 1e\+308"):
            env.step(action)


@pytest.mark.parametrize(
    ("env_id", "name"),
    [(e, n) for e in ("ClusterMultiServer-v0", "ClusterGang-v0") for n in ("arrival_prob", "req_high", "c_high")]
    + [("ClusterGang-v0", "tasks_high")],
)
def test_multiserver_string_for_a_number_names_the_kwarg(env_id, name):
    """A string reached float() (an unnamed ValueError) or a comparison with an int (TypeError)."""
    with pytest.raises(ValueError, match=f"^{name} must be"):
        gym.make(env_id, **{name: "2"})


def test_multiserver_arrival_prob_entries_are_checked_one_by_one():
    with pytest.raises(ValueError, match=r"arrival_prob\[1\] must be a finite number"):
        gym.make("ClusterMultiServer-v0", preset="tiny", arrival_prob=[0.5, "0.5"])


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"rate_process": "iid_beta", "iid_mean_range": (1.0, 1.0), "prices": "uniform"}, "inside \\(0, 1\\)"),
        ({"rate_process": "iid_beta", "iid_mean_range": (0.0, 0.5), "prices": "uniform"}, "inside \\(0, 1\\)"),
        ({"rate_process": "iid_bernoulli", "iid_mean_range": (0.0, 0.0), "prices": "proportional"}, "positive"),
    ],
)
@pytest.mark.parametrize("env_id", ["ClusterApprox-v1", "ClusterApproxSingleJob-v0"])
def test_approx_degenerate_mean_rates_are_rejected_at_construction(env_id, kwargs, reason):
    """A Beta rate with mean 1 raised numpy's "b <= 0" at the first step; mean-0 machines with proportional
    prices cost 0 and made the benchmark divide 0 by 0."""
    with pytest.raises(ValueError, match=f"iid_mean_range=.* must .*{reason}"):
        gym.make(env_id, **kwargs)


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


def test_multiserver_static_observation_of_an_unusable_channel_is_inside_its_space():
    """With allow_unusable_channels, a request above c made the ``static`` row A_k/c_k exceed its Box(0, 1)."""
    env = gym.make(
        "ClusterMultiServer-v0", preset="tiny", obs_static=True, allow_unusable_channels=True, capacity=(1,)
    ).unwrapped
    env.reset(seed=0)
    too_big = env.instance.A[0] > 1
    assert too_big.any(), "the tiny preset has an edge requesting 2 units (the case under test)"
    obs, *_ = env.step(np.zeros(env.action_space.shape, dtype=np.int8))
    assert env.observation_space.contains(obs)
    np.testing.assert_allclose(obs["static"][0], env.instance.A[0] / 1.0)
