"""App. D.2 (a time-varying set of server classes) in the reproduction's E6: the benchmarks it reports and its
settings. The env's ``include_server_counts`` and SABR's use of it are tested in test_bilinear_env.py and
test_bilinear_agents.py."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from baselines.reproduce.bilinear import D2, EXTENSIONS, e6_extensions, run_episode, server_cycle
from cluster_envs.bilinear.model import oracle_lp


@pytest.mark.parametrize("seed", range(3))
def test_the_lp_at_the_mean_counts_bounds_the_mean_per_slot_lp(seed):
    """E6's R̄ uses the fluid LP at n̄ = mean_t n(t): its value is concave in the capacities, so it is at least the
    mean of (45)'s per-slot r*(t), and R̄ ≥ R; at ρ = 1 ≤ n̄_j = 4/3 (``server_cycle``) it equals the nominal r*."""
    rng = np.random.default_rng(seed)
    r, rho = rng.uniform(-1, 1, (6, 3)), rng.dirichlet(np.ones(6)) * 2.5
    schedule = rng.integers(0, 3, (40, 3))
    schedule = schedule[schedule.sum(axis=1) >= 3]  # ρ = 2.5 must fit every slot
    per_slot = np.mean([oracle_lp(r, rho, row.astype(float))[0] for row in schedule])
    assert oracle_lp(r, rho, schedule.mean(axis=0))[0] >= per_slot - 1e-9
    cycle = server_cycle(300).mean(axis=0)
    r2, rho2 = r[:, :2], np.full(6, 1 / 6)
    assert oracle_lp(r2, rho2, cycle)[0] == pytest.approx(oracle_lp(r2, rho2, np.array([2.0, 2.0]))[0])


def test_run_episode_reports_the_lp_at_the_mean_counts():
    fixed = run_episode("oracle_sabr", 0, horizon=30)
    assert fixed.extra["r_star_mean_caps"] == pytest.approx(fixed.summary["r_star"])
    env = gym.make("ClusterBilinear-v0", instance_seed=1000)
    env.reset(seed=0)
    r, rho = env.unwrapped.true_mean_rewards, env.unwrapped.rho
    schedule = np.tile([[2, 0], [2, 0], [2, 0], [0, 2]], (8, 1))  # n̄ = (1.5, 0.5): binds on this instance
    kwargs = {**EXTENSIONS[f"{D2}, n(t) observed"], "server_schedule": schedule}
    varying = run_episode("oracle_sabr", 0, horizon=32, env_kwargs=kwargs)
    r_bar = oracle_lp(r, rho, np.array([1.5, 0.5]))[0]
    assert varying.extra["r_star_mean_caps"] == pytest.approx(r_bar) and r_bar < fixed.summary["r_star"] - 0.01


def test_unknown_e6_settings_are_a_clear_error():
    with pytest.raises(ValueError, match="settings"):
        e6_extensions(1, (10,), False, settings=("D.3",))
