"""ClusterBilinear-v0 agents and solvers: §4.1 solver checks, Sec. IV (T10), T6, T7, bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from agents.bilinear.distributed import iterate, solve_distributed, solve_penalized, stability_bound
from agents.bilinear.estimator import RidgeUCB
from agents.bilinear.sabr import SABR
from agents.bilinear.solver import _solve_binding, fast_path, kkt_residual, solve_allocation
from agents.registry import agent_class, agent_names, make_agent

ENV_ID = "ClusterBilinear-v0"
GAMMA = 1.2


def _random_problem(rng, binding: bool):
    k, n_j = int(rng.integers(2, 12)), int(rng.integers(1, 4))
    rt = rng.uniform(-1, 1, (k, n_j))
    a = rng.uniform(0.5, 5.0, k) if binding else rng.uniform(0.001, 0.05, k)
    caps = rng.integers(1, 4, n_j).astype(float)
    return rt, a, caps


def test_solver_kkt_residuals_when_capacity_binds():
    rng = np.random.default_rng(0)
    binding = 0
    for _ in range(40):
        rt, a, caps = _random_problem(rng, binding=True)
        binding += bool((fast_path(rt, a, GAMMA).sum(axis=0) > caps).any())
        y = solve_allocation(rt, a, caps, GAMMA)
        assert kkt_residual(y, rt, a, caps, GAMMA) <= 1e-5
    assert binding >= 30  # the convex branch was exercised


def test_fast_path_equals_convex_solver_on_untied_inputs():
    rng = np.random.default_rng(1)
    for _ in range(30):
        rt, a, caps = _random_problem(rng, binding=False)
        fast = fast_path(rt, a, GAMMA)
        assert (fast.sum(axis=0) < caps).all()
        convex = _solve_binding(rt, a, caps, GAMMA, fast)
        np.testing.assert_allclose(convex.sum(axis=1), fast.sum(axis=1), rtol=1e-4)
        np.testing.assert_allclose(convex, fast, atol=1e-4 * fast.max())
        assert kkt_residual(fast, rt, a, caps, GAMMA) <= 1e-12


def test_fast_path_splits_ties_evenly_and_empty_rows_get_nothing():
    rt = np.array([[1.0, 1.0], [0.2, 0.5], [0.3, 0.1]])
    y = solve_allocation(rt, np.array([0.02, 0.01, 0.0]), np.array([2.0, 2.0]), GAMMA)
    assert np.isclose(y[0, 0], y[0, 1]) and y[0].sum() == pytest.approx(0.02 / 0.2)
    assert y[1, 0] == 0 and (y[2] == 0).all()


def test_lemma_a9_columns_fill_when_holding_cost_is_large_and_bound_29():
    """Lemma A.9: Σ c_i Q_i ≥ τ₁ = (γ+1)Vn/min(w/c) ⇒ Σ_i y_ij = n_j; (29): s_i ≤ c_γ n w_i Q_i / Σ w Q."""
    rng = np.random.default_rng(2)
    v, caps, c_gamma = 70.71, np.array([2.0, 2.0]), (GAMMA + 1) / (GAMMA - 1)
    tau1 = (GAMMA + 1) * v * caps.sum()
    for _ in range(20):
        rt = rng.uniform(-1, 1, (6, 2))
        w = rng.uniform(0.25, 1.75, 6)
        q = rng.integers(0, 4, 6).astype(float)
        q[0] += 1
        for s in (1.0, tau1 / (w @ q) * 1.01):  # a small, then a large holding cost (c = w)
            queues = np.ceil(q * s)
            y = solve_allocation(rt, w * queues / v, caps, GAMMA)
            rows = y.sum(axis=1)
            assert (rows <= c_gamma * caps.sum() * w * queues / (w @ queues) + 1e-9).all()
        np.testing.assert_allclose(y.sum(axis=0), caps, rtol=1e-6)  # the large one fills every column


def test_distributed_fixed_point_and_convergence_under_condition_13():
    """T10: zero delays reach the optimum of (8); with delays and α at 0.5 × bound (13) they converge too."""
    rng = np.random.default_rng(3)
    rt, a, caps = rng.uniform(0, 1, (4, 2)), rng.uniform(0.5, 3, 4), np.array([2.0, 2.0])
    target = solve_penalized(rt, a, caps, GAMMA, 8.0)
    for node in ("job", "server"):
        hist = iterate(rt, a, caps, GAMMA, node=node, iterations=3000)
        np.testing.assert_allclose(hist[-1], target, atol=1e-6)
        delays = (rng.integers(1, 4, (4, 2)), rng.integers(1, 4, (4, 2)))
        alpha = 0.5 * stability_bound(8.0) / (delays[0] + delays[1])
        hist = iterate(rt, a, caps, GAMMA, node=node, alpha=alpha, delays=delays, iterations=6000)
        err = np.abs(hist.sum(axis=2) - target.sum(axis=1)).max(axis=1)
        assert err[-1] < 1e-4 and err[4000] < err[2000] < err[1000]  # geometric decay


def test_distributed_with_stiff_penalty_approaches_problem_3():
    rng = np.random.default_rng(4)
    rt, a, caps = rng.uniform(0, 1, (4, 2)), rng.uniform(1.0, 3.0, 4), np.array([2.0, 2.0])
    exact = solve_allocation(rt, a, caps, GAMMA)
    stiff = solve_penalized(rt, a, caps, GAMMA, 50.0)
    np.testing.assert_allclose(stiff.sum(axis=1), exact.sum(axis=1), rtol=0.05)
    y = solve_distributed(rt, a, caps, GAMMA, iterations=200)
    assert (y.sum(axis=0) <= caps + 1e-9).all()


@pytest.mark.parametrize("noise_std", [1.0, 0.1])
@pytest.mark.parametrize("runs", [60, pytest.param(200, marks=pytest.mark.slow)])
def test_elliptical_potential_and_confidence_set(runs, noise_std):
    """T7: Σ_t Σ_sel ‖z‖²_{Λ(t)⁻¹} ≤ 2d² ln(n + nT/d²); T6: ‖θ̂(t) − θ‖_{Λ(t)} ≤ β(t), ≤ 3 misses, with β(t)
    calibrated to the noise σ (σ = 1: as printed; σ = 0.1, the env's default: the width SABR now uses)."""
    violations = 0
    for rep in range(runs):
        env = gym.make(ENV_ID, horizon=200, noise_std=noise_std, instance_seed=rep)
        agent = SABR()
        obs, _ = env.reset(seed=rep)
        agent.reset(env.unwrapped.problem)
        theta = env.unwrapped.theta
        potential = 0.0
        for _ in range(200):
            action = agent.act(obs)
            est: RidgeUCB = agent.estimator
            inv = np.linalg.inv(est.gram)
            err = est.theta_hat() - theta
            violations += bool(np.sqrt(err @ est.gram @ err) > est.beta(agent.t) / est.beta_scale)
            obs, _, _, _, info = env.step(action)
            z = est.z.reshape(*est.shape, -1)
            potential += np.einsum("ija,ab,ijb,ij->", z, inv, z, info["N"])
        assert potential <= 2 * 4 * np.log(4 + 4 * 200 / 4)
    assert violations <= 3


def test_sabr_s_width_follows_the_env_s_noise_and_sabr_printed_keeps_the_printed_one():
    env = gym.make(ENV_ID)
    env.reset(seed=0)
    problem = env.unwrapped.problem
    assert problem.noise_std == env.unwrapped.config.noise_std == 0.1
    calibrated, printed = make_agent(ENV_ID, "sabr"), make_agent(ENV_ID, "sabr_printed")
    for agent in (calibrated, printed):
        agent.reset(problem)
    t, horizon, d2, n = 100, problem.horizon, problem.pair_features.shape[-1], problem.n_servers
    log_term = np.sqrt(d2 * np.log(t * horizon))
    assert printed.estimator.beta(t) == pytest.approx(log_term + np.sqrt(n))  # L208 as printed
    assert calibrated.estimator.beta(t) == pytest.approx(0.1 * log_term + np.sqrt(n))


def test_every_agent_runs_through_the_registry():
    for name in agent_names(ENV_ID):
        env = gym.make(ENV_ID, horizon=30, **agent_class(ENV_ID, name).env_kwargs)
        agent = make_agent(ENV_ID, name)
        obs, _ = env.reset(seed=0)
        agent.reset(env.unwrapped if agent.privileged else env.unwrapped.problem, seed=0)
        for _ in range(30):
            action = agent.act(obs)
            assert env.action_space.contains(np.asarray(action, dtype=env.action_space.dtype))
            obs, _, _, truncated, info = env.step(action)
            if name not in ("uniform",):
                assert info["action_projection_dist"] < 1e-6
        assert truncated


@pytest.mark.parametrize("name", ["sabr", "oracle_sabr", "oful_rs"])
def test_sabr_solves_over_the_observed_servers(name):
    """App. D.2's (46): given n_j(t) (``include_server_counts``), SABR's allocation fits the slot's servers, so the
    env never projects it (without n(t) it allocates to absent servers and the env must)."""
    sched = np.tile([[2, 2]] * 5 + [[2, 0]] * 5 + [[0, 2]] * 5 + [[1, 1]] * 5, (3, 1))
    dists = {}
    for counted in (False, True):
        env = gym.make(ENV_ID, horizon=60, instance_seed=3, server_schedule=sched, include_server_counts=counted)
        agent = make_agent(ENV_ID, name)
        obs, _ = env.reset(seed=0)
        agent.reset(env.unwrapped if agent.privileged else env.unwrapped.problem, seed=0)
        dists[counted] = []
        for t in range(60):
            obs, _, _, _, info = env.step(agent.act(obs))
            assert (info["y"].sum(axis=0) <= sched[t] + 1e-9).all()
            dists[counted].append(info["action_projection_dist"])
    assert max(dists[True]) < 1e-9 < max(dists[False])


def test_allocate_over_present_columns_is_problem_3_on_them():
    """n_j(t) = 0 drops column j: the rest is problem (3) over the present columns with their counts."""
    rng = np.random.default_rng(0)
    rt, queues = rng.uniform(-1, 1, (6, 3)), rng.integers(0, 30, 6).astype(float)
    agent = SABR(V=5.0)
    env = gym.make(ENV_ID, num_job_classes=6, num_server_classes=3, servers_per_class=(2, 3, 2))
    env.reset(seed=0)
    agent.reset(env.unwrapped.problem)
    y = agent.allocate(rt, queues, np.array([0.0, 1.0, 2.0]))
    np.testing.assert_array_equal(y[:, 0], 0.0)
    np.testing.assert_allclose(y[:, 1:], solve_allocation(rt[:, 1:], queues / 5.0, np.array([1.0, 2.0]), 1.2))
    np.testing.assert_array_equal(agent.allocate(rt, queues), agent.allocate(rt, queues, np.array([2.0, 3.0, 2.0])))


def test_sabr_distributed_solver_option_matches_centralized_when_slack():
    env = gym.make(ENV_ID, horizon=5)
    obs, _ = env.reset(seed=1)
    central, distributed = (
        SABR(),
        SABR(solver="distributed_job", solver_kwargs={"beta": 8.0, "iterations": 3000}),
    )
    for agent in (central, distributed):
        agent.reset(env.unwrapped.problem)
    y_c, y_d = central.act(obs), distributed.act(obs)
    np.testing.assert_allclose(y_d.reshape(10, 2).sum(axis=1), y_c.reshape(10, 2).sum(axis=1), rtol=1e-3)


@pytest.mark.parametrize(
    ("name", "kwargs", "arg"),
    [
        ("sabr", {"gamma_cost": 1.0}, "gamma_cost"),
        ("sabr", {"gamma_cost": 0.5}, "gamma_cost"),
        ("w_sabr", {"V": 0.0}, "V"),
        ("sabr", {"beta_scale": -1.0}, "beta_scale"),
        ("sabr", {"solver": "cvx"}, "solver"),
        ("sabr", {"weights": [1.0, -1.0]}, "weights"),
        ("oful_rs", {"C": 0.0}, "C"),
        ("ugda_ol", {"gamma_cost": 1.0}, "gamma_cost"),
        ("greedy", {"beta_scale": float("nan")}, "beta_scale"),
    ],
)
def test_bad_hyperparameters_are_clear_errors(name, kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        make_agent(ENV_ID, name, **kwargs)


def _problem(**kwargs):
    env = gym.make(ENV_ID, **kwargs).unwrapped
    env.reset(seed=0)
    return env.problem


def test_agent_rejects_a_mismatched_env():
    with pytest.raises(ValueError, match="action_mode"):
        make_agent(ENV_ID, "sabr").reset(_problem(action_mode="simplex_logits"))
    with pytest.raises(ValueError, match="action_mode"):
        make_agent(ENV_ID, "ugda_ol").reset(_problem())
    with pytest.raises(ValueError, match="weights"):
        make_agent(ENV_ID, "sabr", weights=[1.0, 2.0]).reset(_problem())
