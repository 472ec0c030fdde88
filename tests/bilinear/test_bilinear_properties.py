"""Property-based: ClusterBilinear-v0 invariants on every step over random configurations and actions."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_envs.bilinear.config import ACTION_MODES, OBSERVATION_MODES, SERVICE_MODELS


@st.composite
def configs(draw):
    n_i = draw(st.integers(1, 5))
    n_j = draw(st.integers(1, 3))
    servers = tuple(draw(st.lists(st.integers(1, 3), min_size=n_j, max_size=n_j)))
    mu = draw(st.floats(0.2, 1.0))
    return {
        "num_job_classes": n_i,
        "num_server_classes": n_j,
        "servers_per_class": servers,
        "feature_dim": draw(st.integers(1, 3)),
        "service_rate": mu,
        "traffic_intensity": draw(st.floats(0.05, 0.95)) * min(sum(servers), 1 / mu),  # λ = ρμ < 1, ρ < n
        "noise_std": draw(st.sampled_from([0.0, 0.1, 1.0])),
        "service_model": draw(st.sampled_from(SERVICE_MODELS)),
        "action_mode": draw(st.sampled_from(ACTION_MODES)),
        "observation_mode": draw(st.sampled_from(OBSERVATION_MODES)),
        "max_visible_jobs": draw(st.integers(1, 6)),
        "horizon": 40,
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs(), st.integers(0, 2**31 - 1))
def test_invariants_hold_on_every_step(kwargs, seed):
    env = gym.make("ClusterBilinear-v0", **kwargs)
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    caps = np.asarray(kwargs["servers_per_class"])
    exclusive = kwargs["service_model"] == "exclusive"
    for _ in range(40):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and np.isfinite(reward)
        np.testing.assert_array_equal(info["Q_next"], info["Q"] + info["A"] - info["D"])
        assert (info["D"] <= info["Q"]).all() and info["A"].sum() <= 1
        assert (info["y"] >= 0).all() and (info["y"].sum(axis=0) <= caps + 1e-9).all()
        assert (info["y"][info["Q"] == 0] == 0).all() and (info["N"][info["Q"] == 0] == 0).all()
        assert (info["N"].sum(axis=0) <= caps).all()
        if exclusive:  # one server per job: served jobs ≤ queue, and no duplicate is ever paid
            assert (info["N"].sum(axis=1) <= info["Q"]).all() and info["n_duplicates"] == 0
        else:
            assert info["n_collisions"] == 0
        assert np.isclose(info["reward_mean"], (env.unwrapped.true_mean_rewards * info["N"]).sum())
        if terminated or truncated:
            break
    assert truncated
