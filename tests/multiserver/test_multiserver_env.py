"""ClusterMultiServer-v0: instance draw order, utilities, repair/raise, masks, oracle, regret, bad input."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp

import agents
import cluster_envs  # noqa: F401
from cluster_envs.multiserver.config import MultiServerConfig
from cluster_envs.multiserver.model import MultiServerInstance, UtilityModel, generate_instance

ENV_ID = "ClusterMultiServer-v0"


def test_instance_follows_the_normative_draw_order():
    """Redraw spec §3.3 steps 1–6 by hand from the same SeedSequence and compare."""
    cfg = MultiServerConfig(n_ports=5, n_servers=7, edge_prob=0.2, instance_seed=11)
    inst = generate_instance(cfg.generator_params(), np.random.default_rng(np.random.SeedSequence(11)))
    rng = np.random.default_rng(np.random.SeedSequence(11))
    adj = rng.random((5, 7)) < 0.2
    for port in range(5):
        if not adj[port].any():
            adj[port, rng.integers(7)] = True
    edges = np.argwhere(adj)
    A = rng.integers(1, 3, size=(3, len(edges)))
    c = np.maximum(A.max(axis=1), np.floor(0.5 * A.sum(axis=1)))
    mu = rng.uniform(0.1, 1.0, len(edges))
    F = rng.normal(0.5, 0.1, size=(3, len(edges)))
    np.testing.assert_array_equal(inst.edges, edges)
    np.testing.assert_array_equal(inst.A, A)
    np.testing.assert_array_equal(inst.c, c)
    np.testing.assert_allclose(inst.utility.mu, mu)
    np.testing.assert_allclose(inst.utility.sigma, mu / 2)
    np.testing.assert_allclose(inst.utility.cost, F.sum(axis=0))
    assert (np.bincount(inst.port_of_edge, minlength=5) > 0).all()


def test_pinned_tiny_instance_of_the_spec():
    """Spec §6 T4: tiny preset, instance_seed 5, c = 3: A = [2,1,1,1], ṽ ≈ [.301,.212,.200,.500]."""
    inst = gym.make(ENV_ID, preset="tiny", instance_seed=5, capacity=(3,)).unwrapped.instance
    np.testing.assert_array_equal(inst.A, [[2, 1, 1, 1]])
    np.testing.assert_allclose(inst.v_tilde, [0.301, 0.212, 0.200, 0.500], atol=1e-3)


@pytest.mark.parametrize("normalization", ["affine_clip", "clip", "none"])
def test_exact_means_match_monte_carlo(normalization):
    rng = np.random.default_rng(0)
    mu = rng.uniform(0.1, 1.0, 6)
    model = UtilityModel.build(mu, mu / 2, rng.normal(0.5, 0.1, 6) * (normalization != "clip"), normalization)
    draws = model.normalize(mu + (mu / 2) * rng.standard_normal((200_000, 6)))
    se = draws.std(axis=0) / np.sqrt(len(draws))
    assert (np.abs(draws.mean(axis=0) - model.v_tilde) < 3 * se + 1e-12).all()
    if normalization == "affine_clip":
        assert ((model.v_tilde > 0) & (model.v_tilde < 1)).all()


def _run(agent_name, seed=3, horizon=150, **env_kwargs):
    env = gym.make(ENV_ID, preset="small", horizon=horizon, invalid_action="raise", **env_kwargs)
    agent = agents.make_agent(ENV_ID, agent_name)
    obs, _ = env.reset(seed=seed)
    agent.reset(env.unwrapped if agent.privileged else env.unwrapped.problem, seed=seed)
    rows = []
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        rows.append((info, obs))
        if terminated or truncated:
            return rows


def test_common_random_numbers_across_policies():
    a, b = _run("hauf"), _run("random")
    for (info_a, obs_a), (info_b, obs_b) in zip(a, b, strict=True):
        np.testing.assert_array_equal(info_a["arrivals"], info_b["arrivals"])
        both = (obs_a["last_action"] == 1) & (obs_b["last_action"] == 1)
        np.testing.assert_array_equal(obs_a["last_utility"][both], obs_b["last_utility"][both])
    assert sum(((oa["last_action"] & ob["last_action"]).sum() for (_, oa), (_, ob) in zip(a, b, strict=True))) > 0


def test_feedback_observation_is_the_executed_action_and_its_utilities():
    env = gym.make(ENV_ID, preset="small")
    obs, _ = env.reset(seed=0)
    assert not obs["last_action"].any() and not obs["last_utility"].any()
    action = np.ones(env.action_space.n, dtype=np.int8)
    obs, reward, *_, info = env.step(action)
    np.testing.assert_array_equal(obs["last_action"], info["x"])
    assert np.isclose(obs["last_utility"].sum(), reward, atol=1e-5)
    assert (obs["last_utility"][info["x"] == 0] == 0).all()


def test_repair_gates_by_arrivals_then_first_fits_in_index_order():
    env = gym.make(ENV_ID, preset="small").unwrapped
    obs, _ = env.reset(seed=1)
    inst = env.instance
    for _ in range(30):
        mask = obs["edge_mask"].astype(bool)
        expected, used = np.zeros(inst.n_edges, np.int8), np.zeros_like(inst.c)
        for e in np.flatnonzero(mask):
            if (used + inst.A[:, e] <= inst.c).all():
                expected[e], used = 1, used + inst.A[:, e]
        obs, *_, info = env.step(np.ones(inst.n_edges, np.int8))
        np.testing.assert_array_equal(info["x"], expected)
        assert info["n_dropped_arrival"] == (~mask).sum()
        assert info["n_dropped_capacity"] == mask.sum() - expected.sum()


def test_scores_mode_fills_by_descending_score():
    env = gym.make(ENV_ID, preset="small", action_mode="scores").unwrapped
    obs, _ = env.reset(seed=2)
    inst = env.instance
    scores = np.linspace(0.51, 1.0, inst.n_edges, dtype=np.float32)  # the last edge has top priority
    _, _, _, _, info = env.step(scores)
    expected, used = np.zeros(inst.n_edges, np.int8), np.zeros_like(inst.c)
    for e in np.flatnonzero(obs["edge_mask"])[::-1]:
        if (used + inst.A[:, e] <= inst.c).all():
            expected[e], used = 1, used + inst.A[:, e]
    np.testing.assert_array_equal(info["x"], expected)


def test_raise_mode_names_the_violated_constraint_and_leaves_env_unchanged():
    env = gym.make(ENV_ID, preset="small", invalid_action="raise").unwrapped
    obs, _ = env.reset(seed=4)
    while obs["arrivals"].all():
        obs, *_ = env.step(np.zeros(env.instance.n_edges, np.int8))
    idle_edge = int(np.flatnonzero(obs["edge_mask"] == 0)[0])
    with pytest.raises(ValueError, match="arrival gating"):
        env.step(np.eye(env.instance.n_edges, dtype=np.int8)[idle_edge])
    while not obs["arrivals"].all():
        obs, *_ = env.step(np.zeros(env.instance.n_edges, np.int8))
    t_before = env.simulator.t
    with pytest.raises(ValueError, match=r"capacity \(2\) of device type k=\d"):
        env.step(np.ones(env.instance.n_edges, np.int8))
    assert env.simulator.t == t_before


def test_action_masks_pairs_per_edge():
    env = gym.make(ENV_ID, preset="small").unwrapped
    obs, _ = env.reset(seed=0)
    mask = env.action_masks().reshape(-1, 2)
    assert mask.shape == (env.instance.n_edges, 2) and mask[:, 0].all()
    np.testing.assert_array_equal(mask[:, 1], obs["edge_mask"].astype(bool))


def _milp_optimum(inst: MultiServerInstance, arrivals: np.ndarray) -> float:
    usable = inst.edge_mask(arrivals)
    res = milp(
        -inst.v_tilde,
        constraints=LinearConstraint(inst.A, -np.inf, inst.c),
        integrality=np.ones(inst.n_edges),
        bounds=Bounds(0, usable.astype(float)),
    )
    return -res.fun


@pytest.mark.parametrize("instance_seed", [0, 1, 2])
def test_knapsack_oracle_matches_scipy_milp(instance_seed):
    env = gym.make(ENV_ID, instance_seed=instance_seed).unwrapped  # paper preset
    inst = env.instance
    rng = np.random.default_rng(instance_seed)
    for arrivals in [np.ones(inst.n_ports, np.int8), *rng.integers(0, 2, size=(6, inst.n_ports))]:
        x, value = env.oracle(arrivals)
        assert (inst.A @ x <= inst.c).all() and not (x.astype(bool) & ~inst.edge_mask(arrivals)).any()
        assert value == pytest.approx(_milp_optimum(inst, arrivals), abs=1e-7)


def test_oracle_is_optimal_by_enumeration_and_regret_is_nonnegative():
    env = gym.make(ENV_ID, preset="tiny", instance_seed=3, capacity=(3,)).unwrapped
    inst = env.instance
    for arrivals in itertools.product([0, 1], repeat=inst.n_ports):
        x_star, value = env.oracle(np.array(arrivals))
        best = max(
            inst.v_tilde @ np.array(x)
            for x in itertools.product([0, 1], repeat=inst.n_edges)
            if (inst.A @ np.array(x) <= inst.c).all() and not (np.array(x, bool) & ~inst.edge_mask(arrivals)).any()
        )
        assert value == pytest.approx(best)
    rows = _run("random", horizon=300)
    regrets = np.array([info["slot_regret"] for info, _ in rows])
    assert regrets.min() >= -1e-9
    assert rows[-1][0]["regret"] == pytest.approx(regrets.sum())
    assert _run("oracle", horizon=100)[-1][0]["regret"] == pytest.approx(0.0, abs=1e-9)


def test_every_reference_agent_plays_feasible_actions_in_raise_mode():
    for name in agents.agent_names(ENV_ID):
        rows = _run(name, horizon=40)
        assert len(rows) == 40
        assert "episode_summary" in rows[-1][0]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"edge_prob": 0.0}, "edge_prob"),
        ({"edge_prob": 1.5}, "edge_prob"),
        ({"req_low": 3, "req_high": 2}, "req_low"),
        ({"normalization": "minmax"}, "normalization"),
        ({"action_mode": "discrete"}, "action_mode"),
        ({"capacity_mode": "huge"}, "capacity_mode"),
        ({"arrival_prob": 1.2}, "arrival_prob"),
        ({"arrival_prob": (0.5, 0.5)}, "arrival_prob"),
        ({"capacity": (1, 1, 1)}, "capacity"),
        ({"mu_low": 0.0}, "mu_low"),
        ({"sigma_ratio": -1.0}, "sigma_ratio"),
    ],
)
def test_bad_config_is_a_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make(ENV_ID, preset="small", **kwargs)


@pytest.mark.parametrize("action", [0.5, "abc", [[0, 1]]], ids=["fractional", "string", "nested"])
def test_malformed_action_is_a_clear_error(action):
    env = gym.make(ENV_ID, preset="small").unwrapped
    env.reset(seed=0)
    bad = np.full(env.instance.n_edges, action, dtype=object) if action == 0.5 else action
    with pytest.raises(ValueError, match="action"):
        env.step(bad)


def test_explicit_instance_bypasses_generation():
    inst = MultiServerInstance.from_arrays(
        n_ports=2, n_servers=2, edges=[(0, 0), (0, 1), (1, 1)], A=[[2, 1, 1]], c=[2],
        mu=[0.9, 0.5, 0.4], sigma=[0.1, 0.1, 0.1], cost=[0.0, 0.0, 0.0], rho=1.0,
    )  # fmt: skip
    env = gym.make(ENV_ID, instance=inst, invalid_action="raise").unwrapped
    assert env.problem.n_edges == 3 and env.instance is inst
    x, value = env.oracle(np.array([1, 1]))
    best = max(inst.v_tilde[0], inst.v_tilde[1] + inst.v_tilde[2])
    assert value == pytest.approx(best)
    with pytest.raises(ValueError, match="lexicographic"):
        MultiServerInstance.from_arrays(2, 2, [(1, 1), (0, 0)], [[1, 1]], [2], [0.5] * 2, [0.1] * 2, [0.0] * 2, 1.0)
    with pytest.raises(ValueError, match="instance"):
        gym.make(ENV_ID, instance="not an instance")


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [(ENV_ID, {}), (ENV_ID, {"binary_repair_order": "random"}), ("ClusterGang-v0", {})],
)
def test_minimal_info_keeps_the_trajectory_and_the_scalar_keys(env_id, kwargs):
    """``info_level="minimal"`` gives the same observations, rewards and flags as ``"full"`` over 300 random
    (repaired) actions; its info is the full info's scalar keys with the same values, and the same summary."""
    full = gym.make(env_id, horizon=300, **kwargs)
    minimal = gym.make(env_id, horizon=300, info_level="minimal", **kwargs)
    obs_f, _ = full.reset(seed=7)
    obs_m, _ = minimal.reset(seed=7)
    full.action_space.seed(7)
    dropped = 0
    for t in range(300):
        action = full.action_space.sample()
        obs_f, reward_f, term_f, trunc_f, info_f = full.step(action)
        obs_m, reward_m, term_m, trunc_m, info_m = minimal.step(action)
        for key in obs_f:
            np.testing.assert_array_equal(obs_m[key], obs_f[key], err_msg=f"{key} at step {t}")
        assert (reward_m, term_m, trunc_m) == (reward_f, term_f, trunc_f), t
        scalars = {k for k, v in info_f.items() if np.isscalar(v)}
        assert {"x", "arrivals", "capacity_used", "oracle_x"} <= set(info_f) - scalars  # full adds the arrays
        assert set(info_m) - {"episode_summary"} == scalars, t
        assert all(info_m[k] == info_f[k] for k in scalars), t
        dropped += info_f["n_dropped_arrival"] + info_f["n_dropped_capacity"]
    assert trunc_f and info_m["episode_summary"] == info_f["episode_summary"]
    assert dropped > 0  # the repair ran
