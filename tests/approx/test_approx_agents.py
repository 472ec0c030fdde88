"""Agents of ClusterApprox: hyperparameter validation, reproducibility, OPM-GC's projection and rounding."""

from __future__ import annotations

import numpy as np
import pytest
from approx_helpers import run_episode
from scipy.optimize import minimize

import agents
from agents.approx.generalized import dependent_rounding, project_p5

MULTI, SINGLE = "ClusterApprox-v1", "ClusterApproxSingleJob-v0"


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        ("opm", {"alpha": -1.0}, "alpha"),
        ("opm", {"alpha_semantics": "both"}, "alpha_semantics"),
        ("opm", {"grad_estimate": "future"}, "grad_estimate"),
        ("opm", {"delta": 0.0}, "delta"),
        ("opm_no_estimation", {"rate_constant": 2.0}, "rate_constant"),
        ("greedy_ucb", {"y_floor": 0.0}, "y_floor"),
    ],
)
def test_bad_hyperparameters_are_clear_value_errors(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        agents.make_agent(MULTI, name, **kwargs)


@pytest.mark.parametrize("name", ["opm", "fair", "greedy_ucb", "random", "random_paced"])
def test_agents_are_reproducible_for_a_seed(name):
    first = run_episode(MULTI, agents.make_agent(MULTI, name), 3, horizon=400)[1]
    second = run_episode(MULTI, agents.make_agent(MULTI, name), 3, horizon=400)[1]
    assert first == second


def test_deadline_aware_front_loads_and_fair_shares():
    """DA gives every free machine to the earliest deadline; Fair splits machines evenly between two jobs."""
    jobs = ((0, 50, 1e6, 1.0), (0, 30, 1e6, 1.0))
    env_kwargs = {"job_source": "list", "jobs": jobs, "horizon": 50}
    for name, expected in (("deadline_aware", {1: 0, 2: 20}), ("fair", {1: 10, 2: 10})):
        env = __import__("gymnasium").make(MULTI, **env_kwargs).unwrapped
        obs, _ = env.reset(seed=0)
        agent = agents.make_agent(MULTI, name)
        agent.reset(env.problem, seed=0)
        action = agent.act(obs)
        assert {k: int((action == k).sum()) for k in (1, 2)} == expected


def _p5_reference(y, demand, parallelism, capacity):
    k, m = y.shape
    cons = [{"type": "ineq", "fun": lambda z, i=i: capacity[i] - demand @ z.reshape(k, m)[:, i]} for i in range(m)]
    cons += [{"type": "ineq", "fun": lambda z, j=j: parallelism[j] - z.reshape(k, m)[j].sum()} for j in range(k)]
    res = minimize(
        lambda z: ((z - y.ravel()) ** 2).sum(),
        np.zeros(k * m),
        jac=lambda z: 2 * (z - y.ravel()),
        bounds=[(0, 1)] * (k * m),
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    return res.x.reshape(k, m)


def test_p5_projection_matches_a_generic_qp_solver():
    rng = np.random.default_rng(0)
    for _ in range(10):
        y = rng.normal(0.5, 0.6, size=(3, 5))
        demand, parallelism = rng.uniform(0.5, 1.5, 3), rng.integers(1, 4, 3).astype(float)
        capacity = rng.integers(1, 3, 5).astype(float)
        np.testing.assert_allclose(
            project_p5(y, demand, parallelism, capacity, tol=1e-10, max_iter=5000),
            _p5_reference(y, demand, parallelism, capacity),
            atol=1e-5,
        )


def test_dependent_rounding_keeps_marginals_and_degrees():
    rng = np.random.default_rng(1)
    x = project_p5(rng.uniform(0, 1, (4, 6)), np.ones(4), np.full(4, 2.0), np.full(6, 2.0), tol=1e-10)
    draws, total = 1500, np.zeros_like(x)
    for _ in range(draws):
        a = dependent_rounding(x, rng)
        assert (a.sum(axis=0) <= np.ceil(x.sum(axis=0) - 1e-9)).all()
        assert (a.sum(axis=1) <= np.ceil(x.sum(axis=1) - 1e-9)).all()
        total += a
    sigma = np.sqrt(x * (1 - x) / draws)
    assert (np.abs(total / draws - x) <= 4 * sigma + 1e-9).all()


def test_opm_gc_runs_within_capacity_parallelism_and_budget():
    agent = agents.make_agent(MULTI, "opm_gc")
    env, summary = run_episode(MULTI, agent, 0, horizon=300, **agent.env_kwargs)
    assert summary["n_repaired"] == 0 and summary["n_invalid"] == 0
    assert (env._sim.spent < env._sim.budget).all()
    assert summary["utility"] > 0


@pytest.mark.parametrize(
    "name", ["opm", "opm_no_estimation", "fair", "deadline_aware", "greedy_ucb", "random", "random_paced"]
)
def test_agent_pickle_round_trip_mid_run_reproduces_decisions(name):
    import copy
    import pickle

    import gymnasium as gym

    env = gym.make(MULTI).unwrapped
    obs, _ = env.reset(seed=4)
    agent = agents.make_agent(MULTI, name)
    agent.reset(env.problem, seed=4)
    for _ in range(100):
        obs, *_ = env.step(agent.act(obs))
    twin_env, twin = copy.deepcopy(env), pickle.loads(pickle.dumps(agent))
    twin_obs = copy.deepcopy(obs)
    for _ in range(100):
        a, b = agent.act(obs), twin.act(twin_obs)
        np.testing.assert_array_equal(a, b)
        obs, *_ = env.step(a)
        twin_obs, *_ = twin_env.step(b)
