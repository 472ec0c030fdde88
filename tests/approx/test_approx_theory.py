"""H7-H11: the theory of paper 000 as numerical checks (spec §6.2); the full grids are @slow."""

from __future__ import annotations

import math

import numpy as np
import pytest
from approx_helpers import loglog_slope, run_episode, sqrt_scale

from agents.approx.common import ucb
from agents.approx.primal_dual import OPM, OPS

SINGLE, MULTI = "ClusterApproxSingleJob-v0", "ClusterApprox-v1"


def test_h7_ucb_estimates_are_optimistic():
    """Lemma 6: θ_i ≤ θ̂_i^t for (almost) every machine and slot of an OPS run."""
    below, total = 0, 0

    def count(env, agent, obs):
        nonlocal below, total
        theta_hat = ucb(obs["n_obs"], obs["sum_obs"], agent.conf)
        below += int((theta_hat < env._instance.means).sum())
        total += theta_hat.size

    for seed in range(2):
        run_episode(SINGLE, OPS(eps=0.0), seed, on_step=count, budget_fraction=0.1)
    assert below / total <= 1e-3


def _fractional_fit(seed: int, rho: float, horizon: int) -> float:
    spent = 0.0

    def add(env, agent, obs):
        nonlocal spent
        spent += float(agent.x[0] @ agent.prices)

    env, _ = run_episode(SINGLE, OPS(), seed, on_step=add, preset="soft", budget_fraction=rho, horizon=horizon)
    return spent - env._sim.budget[0]


@pytest.mark.parametrize(("rho", "factor"), [(0.2, 1), (0.2, 2), (0.1, 1)])
def test_h8_lemma3_fractional_fit_is_nonpositive(rho, factor):
    horizon = factor * math.ceil(48 / rho**2)
    for seed in range(2):
        assert _fractional_fit(seed, rho, horizon) <= 0


@pytest.mark.slow
@pytest.mark.parametrize("rho", [0.1, 0.2])
@pytest.mark.parametrize("factor", [1, 2, 8])
def test_h8_lemma3_full_grid(rho, factor):
    horizon = factor * math.ceil(48 / rho**2)
    for seed in range(5):
        assert _fractional_fit(seed, rho, horizon) <= 0


def _ops_regret(horizons, seeds, eps=0.0):
    return np.array(
        [
            np.mean([run_episode(SINGLE, OPS(eps=eps), s, budget_fraction=0.1, horizon=t)[1]["regret"] for s in seeds])
            for t in horizons
        ]
    )


def _check_sublinear(horizons, regret, n_machines):
    assert loglog_slope(horizons, regret) < 0.75
    per_slot = regret / np.asarray(horizons)
    assert (np.diff(per_slot) < 0).all()
    assert (regret / np.array([sqrt_scale(n_machines, t) for t in horizons]) <= 2).all()


def test_h9_ops_regret_is_sublinear():
    horizons = [500, 1000, 2000, 4000]
    _check_sublinear(horizons, _ops_regret(horizons, range(3)), 10)


@pytest.mark.slow
def test_h9_ops_regret_is_sublinear_full_grid():
    horizons = [500, 1000, 2000, 4000, 8000, 16000, 32000]
    _check_sublinear(horizons, _ops_regret(horizons, range(5)), 10)
    assert loglog_slope(horizons, _ops_regret(horizons, range(5), eps="theory")) < 0.75


def test_h10_ops_fit_bounds():
    for seed in range(3):
        agent = OPS()
        env, summary = run_episode(SINGLE, agent, seed, preset="soft")
        gamma, budget = agent.conf, env._sim.budget[0]
        assert summary["fit"] <= gamma * math.sqrt(budget) + gamma**2 + gamma  # Eq. 54
        _, hard = run_episode(SINGLE, OPS(), seed)
        assert hard["fit"] <= 0 and hard["fit_positive"] == 0


def _opm_regret(horizons, seeds):
    regrets, fits = [], []
    for t in horizons:
        runs = [
            run_episode(MULTI, OPM(alpha=None, alpha_semantics="step"), s, preset="common_deadline", horizon=t)[1]
            for s in seeds
        ]
        regrets.append(np.mean([r["regret"] for r in runs]))
        fits.append(max(abs(r["fit"]) for r in runs))
    return np.array(regrets), fits


def test_h11_opm_regret_is_sublinear_with_common_deadlines():
    horizons = [500, 1000, 2000, 4000]
    regret, _ = _opm_regret(horizons, range(2))
    assert loglog_slope(horizons, regret) < 0.75
    assert (np.diff(regret / np.asarray(horizons)) < 0).all()


@pytest.mark.slow
def test_h11_opm_full_grid():
    horizons = [500, 1000, 2000, 4000, 8000, 16000]
    regret, _ = _opm_regret(horizons, range(4))
    assert loglog_slope(horizons, regret) < 0.75
    assert (np.diff(regret / np.asarray(horizons)) < 0).all()


def test_lemma2_dual_variable_stays_within_its_bound():
    """Lemmas 1-2: 0 ≤ ω(t) = λ(t) − μ g(x(t−1)) ≤ 2μM + (Mπ + μM²)/β' + M/(2αβ') + μβ', β' = (1 − ε)B/T."""
    omegas = []

    def record(env, agent, obs):
        omegas.append(agent.lam[0] - agent.dual_step * agent.g2[0])  # g2 holds g(x(t−1)) after the update

    agent = OPS()
    env, _ = run_episode(SINGLE, agent, 0, on_step=record, preset="soft", budget_fraction=0.2, horizon=2000)
    m, horizon = env.config.n_machines, env.config.horizon
    mu, alpha, pi = agent.dual_step, agent.step_size, 1.0  # f = log(1 + y) is 1-Lipschitz
    b_prime = (1 - agent.eps_used) * env._sim.budget[0] / horizon
    bound = 2 * mu * m + (m * pi + mu * m**2) / b_prime + m / (2 * alpha * b_prime) + mu * b_prime
    assert min(omegas) >= -1e-9
    assert max(omegas) <= bound
