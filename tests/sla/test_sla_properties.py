"""Property-based checks of ClusterSLA-v1: the model's invariants on every step over random instances."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_envs.sla.env import ClusterSLAEnv


@st.composite
def instances(draw):
    n = draw(st.integers(2, 12))
    horizon = draw(st.integers(1, 40))
    sla = draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n).filter(lambda s: sum(s) > 1e-6))
    scale = draw(st.sampled_from([0.0, 1e-12, 0.3, 1.0, 1e6, 1e12]))
    loads = np.asarray(draw(st.lists(st.floats(0, 1), min_size=n * horizon, max_size=n * horizon))).reshape(n, horizon)
    mode = draw(st.sampled_from(["normalize", "sub_simplex", "softmax"]))
    actions = draw(st.lists(st.lists(st.floats(-10, 10), min_size=n, max_size=n), min_size=horizon, max_size=horizon))
    return n, horizon, tuple(sla), loads * scale, mode, np.array(actions)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(instances())
def test_invariants_hold_on_every_step(instance):
    n, horizon, sla, loads, mode, actions = instance
    env = ClusterSLAEnv(n_users=n, sla=sla, horizon=horizon, scenario="gamma_iid", action_mode=mode)
    obs, _ = env.reset(seed=0, options={"loads": loads})
    arrived = np.zeros(n)
    for t in range(horizon):
        obs, reward, terminated, truncated, info = env.step(actions[t])
        arrived += loads[:, t]
        assert env.observation_space.contains(obs)
        assert np.isfinite(reward) and not terminated and truncated == (t == horizon - 1)
        alloc = info["alloc"]
        assert (alloc >= 0).all() and alloc.sum() <= 1 + 1e-12  # capacity
        assert (info["work"] >= 0).all() and (info["work"] <= alloc + 1e-15).all()
        assert (info["queue"] >= 0).all()
        # work conservation (I1), up to the empty-queue tolerance per step
        np.testing.assert_allclose(info["cum_work"] + info["queue"], arrived, rtol=1e-12, atol=1e-9 * (t + 1))
        assert np.array_equal(info["active"], info["queue"] > 0)
        assert info["opt_cum_work"] >= info["cum_work"].sum() - 1e-9 * max(1.0, arrived.sum())  # OPT is an upper bound
        assert info["opt_cum_work"] <= t + 1 + 1e-9 and info["opt_eps_cum_work"] <= info["opt_cum_work"] + 1e-9
    summary = info["episode_summary"]
    assert all(np.isfinite(v) for v in summary.values())
