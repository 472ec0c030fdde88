"""ClusterBilinear-v0: spec §3.9 conformance in every mode, model checks (§6-T5), oracle LP and bad input."""

from __future__ import annotations

import copy
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cluster_envs.bilinear.dynamics import (
    ACTION_MODES,
    OBSERVATION_MODES,
    BilinearSimulator,
    departure_mean,
    project_allocation,
)
from cluster_envs.bilinear.instance import mean_rewards, oracle_lp, pair_features, sample_instance

ENV_ID = "ClusterBilinear-v0"
MODES = [(a, o) for a in ACTION_MODES for o in OBSERVATION_MODES]


def _flat(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).ravel()


def _run(env: gym.Env, actions: list, seed: int) -> list[np.ndarray]:
    obs, _ = env.reset(seed=seed)
    out = [_flat(obs)]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        out.append(np.concatenate([_flat(obs), [reward], _flat(info["A"]), _flat(info["N"])]))
        if terminated or truncated:
            out.append(_flat(env.reset()[0]))
    return out


@pytest.mark.parametrize(("action_mode", "observation_mode"), MODES)
def test_conformance_in_every_mode(action_mode, observation_mode):
    kwargs = {"action_mode": action_mode, "observation_mode": observation_mode, "horizon": 60}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(ENV_ID, **kwargs).unwrapped, skip_render_check=False)
    env = gym.make(ENV_ID, **kwargs)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(150)]
    first, second = _run(env, actions, 11), _run(gym.make(ENV_ID, **kwargs), actions, 11)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    obs, _ = env.reset(seed=3)
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        assert env.observation_space.contains(obs) and np.isfinite(reward)
        if terminated or truncated:
            obs, _ = env.reset()
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(ENV_ID, **kwargs) for _ in range(2)])
    envs.reset(seed=[0, 1])
    envs.action_space.seed(0)
    for _ in range(70):  # crosses the horizon, so autoreset and the episode summary are stacked too
        assert np.isfinite(envs.step(envs.action_space.sample())[1]).all()
    # clones continue identically; a rejected action leaves the env unchanged
    raw = gym.make(ENV_ID, **kwargs).unwrapped
    raw.reset(seed=5)
    for action in actions[:20]:
        raw.step(action)
    twins = [pickle.loads(pickle.dumps(raw)), copy.deepcopy(raw)]
    bad = np.asarray(actions[20], dtype=np.float64).copy()
    bad.flat[0] = np.nan
    with pytest.raises(ValueError, match="action"):
        raw.step(bad)
    with pytest.raises(ValueError, match="action"):
        raw.step(np.zeros(bad.size + 1))
    for action in actions[20:40]:
        steps = [e.step(action) for e in (raw, *twins)]
        for other in steps[1:]:
            np.testing.assert_array_equal(steps[0][0], other[0])
            assert steps[0][1:4] == other[1:4]


@pytest.mark.parametrize("preset", ["paper", "paper_holding", "rl"])
def test_presets_pass_the_checker(preset):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(ENV_ID, preset=preset).unwrapped, skip_render_check=False)


def test_server_choice_rejects_non_integers_and_out_of_range():
    env = gym.make(ENV_ID, action_mode="server_choice").unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(np.full(4, 0.5))
    with pytest.raises(ValueError, match="action"):
        env.step(np.full(4, 11))


def test_arrivals_do_not_depend_on_actions():
    streams = []
    for fill in (0.0, 1.0):
        env = gym.make(ENV_ID, horizon=200)
        env.reset(seed=4)
        streams.append([env.step(np.full(20, fill))[4]["A"] for _ in range(200)])
    np.testing.assert_array_equal(np.array(streams[0]), np.array(streams[1]))


def test_projection_keeps_feasible_inputs_and_caps_others():
    rng = np.random.default_rng(0)
    caps = np.array([2.0, 3.0])
    for _ in range(200):
        active = rng.random(6) < 0.7
        y = rng.uniform(-1, 3, (6, 2))
        out = project_allocation(y, active, caps)
        assert (out >= 0).all() and (out[~active] == 0).all()
        assert (out.sum(axis=0) <= caps + 1e-9).all()
        feasible = out * rng.uniform(0.2, 1.0)
        np.testing.assert_allclose(project_allocation(feasible, active, caps), feasible, atol=1e-12)
        # a projection is idempotent and no farther than any feasible point (here: the scaled one)
        np.testing.assert_allclose(project_allocation(out, active, caps), out, atol=1e-9)
        masked = np.where(active[:, None], y, 0.0)
        assert np.linalg.norm(out - masked) <= np.linalg.norm(feasible - masked) + 1e-9


def test_allocation_action_passes_through_unchanged():
    env = gym.make(ENV_ID).unwrapped
    obs, _ = env.reset(seed=1)
    q = obs[:10]
    frac = np.where(q[:, None] > 0, 0.3 / max(q.sum(), 1), 0.0) * np.ones((10, 2))
    info = env.step(frac.ravel())[4]
    assert info["action_projection_dist"] < 1e-9
    np.testing.assert_allclose(info["y"], frac * 2.0)


def test_row_major_vec_and_unit_norms():
    rng = np.random.default_rng(3)
    u, v, theta = sample_instance(rng, 7, 3, 3)
    z = pair_features(u, v)
    big_theta = theta.reshape(3, 3)
    expected = np.array([[u[i] @ big_theta @ v[j] for j in range(3)] for i in range(7)])
    np.testing.assert_allclose(z @ theta, expected)
    np.testing.assert_allclose(mean_rewards(u, v, theta), expected)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1)
    assert np.isclose(np.linalg.norm(theta), 1)


def _fixed_queue_sim(queue: np.ndarray, mu: np.ndarray, caps: np.ndarray, seed: int, model: str = "paper"):
    r = np.zeros((len(queue), len(caps)))
    streams = {k: np.random.default_rng([seed, i]) for i, k in enumerate(("assign", "service", "noise", "choice"))}
    sim = BilinearSimulator(r, mu, caps, 0.0, model, np.full(10**6, -1), streams)
    cls = np.repeat(np.arange(len(queue)), queue)
    return sim, cls


def _reload(sim: BilinearSimulator, cls: np.ndarray) -> None:
    sim.set_jobs(cls)


def test_departure_law_and_selection_means():
    """§6-T5: E[D_i] = Q_i(1 − Π_j(1 − μ y_ij/(n_j Q_i))^{n_j}) ≤ μ Σ_j y_ij; E[N_ij] = y_ij (paper mode)."""
    queue, caps, mu = np.array([3, 1, 2]), np.array([2, 3]), np.array([0.6, 0.6, 0.6])
    y = np.array([[1.2, 0.5], [0.3, 1.0], [0.4, 1.4]])
    sim, cls = _fixed_queue_sim(queue, mu, caps, 0)
    reps = 20_000
    d, n, d_sq = np.zeros((reps, 3)), np.zeros((reps, 3, 2)), np.zeros(reps)
    for k in range(reps):
        _reload(sim, cls)
        res = sim.step_classes(y)
        d[k], n[k], d_sq[k] = res.departures, res.counts, (res.departures**2).sum()
    expected = departure_mean(queue, y, caps.astype(float), mu)
    se = d.std(axis=0) / np.sqrt(reps)
    assert (np.abs(d.mean(axis=0) - expected) < 3.5 * se).all()
    assert (expected <= mu * y.sum(axis=1) + 1e-12).all()
    assert (np.abs(n.mean(axis=0) - y) < 3.5 * n.std(axis=0) / np.sqrt(reps) + 1e-12).all()
    assert d_sq.mean() <= caps.sum() ** 2 * mu[0]  # Lemma A.2


def test_exclusive_mode_has_no_duplicates_and_counts_collisions():
    queue, caps, mu = np.array([1, 1]), np.array([2, 2]), np.ones(2)
    y = np.array([[2.0, 2.0], [0.0, 0.0]])  # four servers on one job
    for model, dup_key in (("paper", "n_duplicates"), ("exclusive", "n_collisions")):
        sim, cls = _fixed_queue_sim(queue, mu, caps, 1, model)
        _reload(sim, cls)
        res = sim.step_classes(y)
        assert res.counts.sum() == (4 if model == "paper" else 1)
        assert {"n_duplicates": res.n_duplicates, "n_collisions": res.n_collisions}[dup_key] == 3


def test_server_choice_gives_distinct_jobs():
    queue, caps, mu = np.array([3, 0]), np.array([2, 2]), np.zeros(2) + 1e-9
    sim, cls = _fixed_queue_sim(queue, mu, caps, 2)
    _reload(sim, cls)
    res = sim.step_servers(np.array([0, 0, 0, 2]))
    jobs = [row[0] for row in res.assignments.tolist()]
    assert len(jobs) == 3 and len(set(jobs)) == 3
    np.testing.assert_array_equal(res.y, [[2, 1], [0, 0]])


def test_oracle_lp_closed_form_when_slack_and_binding_case():
    rng = np.random.default_rng(5)
    for _ in range(20):
        r = rng.uniform(0, 1, (10, 2))
        rho = np.full(10, 0.1)
        r_star, alloc = oracle_lp(r, rho, np.array([2.0, 2.0]))
        assert np.isclose(r_star, (rho * r.max(axis=1)).sum())
        np.testing.assert_allclose(alloc.sum(axis=1), rho, atol=1e-9)
    # everyone prefers server class 0, whose capacity binds: the LP routes the overflow to class 1
    r = np.array([[1.0, 0.0], [0.9, 0.5]])
    r_star, alloc = oracle_lp(r, np.array([1.0, 1.0]), np.array([1.0, 5.0]))
    assert np.isclose(r_star, 1.0 + 0.5)
    assert np.isclose(alloc[:, 0].sum(), 1.0)


@pytest.mark.parametrize(("n_job", "dim"), [(10, 2), (3, 2), (30, 4)])
def test_oracle_closed_form_is_highs_bit_for_bit(n_job, dim):
    """Where the assignment to each class's best server class is the optimum, oracle_lp skips HiGHS: it must give
    HiGHS's r* and allocation exactly (the former implementation; regret sums them every slot)."""
    from cluster_envs.bilinear.instance import _assignment_optimum, _highs_optimum

    rng = np.random.default_rng(n_job)
    used = 0
    for trial in range(150):
        rho = np.full(n_job, 1.0 / n_job) if trial % 2 else rng.uniform(0.2, 1.5, n_job) * rng.uniform(0.1, 1.2) / n_job
        caps = np.array([2.0, 2.0]) if trial % 2 else rng.integers(1, 4, 2).astype(float)
        r = mean_rewards(*sample_instance(rng, n_job, 2, dim))
        fast = _assignment_optimum(r, rho, caps)
        if fast is not None:
            used += 1
            r_star, alloc = _highs_optimum(r, rho, caps)
            assert fast[0] == r_star
            np.testing.assert_array_equal(fast[1], alloc)
    assert used > 100


def test_info_keys_and_episode_summary_add_up():
    env = gym.make(ENV_ID, horizon=50, holding_costs=tuple(np.linspace(0.5, 2, 10)))
    env.reset(seed=2)
    rng = np.random.default_rng(0)
    regret = holding = reward = 0.0
    for _ in range(50):
        obs, rew, terminated, truncated, info = env.step(rng.uniform(0, 0.2, 20))
        regret += info["r_star"] - info["reward_expected"]
        holding += info["holding_cost"]
        reward += rew
        assert np.isclose(info["regret"], regret) and info["N"].sum() == len(info["assignments"])
        np.testing.assert_array_equal(info["Q_next"], info["Q"] + info["A"] - info["D"])
    assert truncated and not terminated
    summary = info["episode_summary"]
    assert np.isclose(summary["regret"], regret)
    assert np.isclose(summary["mean_holding_cost"], holding / 50)
    assert np.isclose(summary["reward_noisy"], reward)


def test_queue_cap_terminates_with_overflow():
    env = gym.make(ENV_ID, queue_cap=3)
    env.reset(seed=0)
    for _ in range(10):
        _, _, terminated, truncated, info = env.step(np.zeros(20))
        if terminated:
            break
    assert terminated and info["overflow"] and "episode_summary" in info


def test_hidden_jobs_are_reported_under_job_allocation():
    env = gym.make(ENV_ID, action_mode="job_allocation", max_jobs=2)
    env.reset(seed=0)
    infos = [env.step(np.zeros(4))[4] for _ in range(10)]
    assert [i["hidden_jobs"] for i in infos] == [max(0, int(i["Q"].sum()) - 2) for i in infos]
    assert infos[-1]["hidden_jobs"] > 0


def test_server_schedule_caps_each_slot():
    sched = np.tile([[1, 0], [2, 2]], (25, 1))
    env = gym.make(ENV_ID, horizon=50, server_schedule=sched)
    env.reset(seed=1)
    r_stars = set()
    for t in range(50):
        info = env.step(np.ones(20))[4]
        assert (info["N"].sum(axis=0) <= sched[t]).all() and (info["y"].sum(axis=0) <= sched[t] + 1e-9).all()
        r_stars.add(round(info["r_star"], 12))
    assert len(r_stars) == 2


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"traffic_intensity": 4.0, "service_rate": 0.25}, "traffic_intensity"),
        ({"traffic_intensity": 1.5}, "traffic_intensity"),
        ({"job_features": np.full((10, 2), np.nan)}, "job_features"),
        ({"theta": np.ones(4)}, "theta"),
        ({"server_features": np.ones((3, 2)) * 0.5}, "server_features"),
        ({"servers_per_class": (2, 2, 2)}, "servers_per_class"),
        ({"action_mode": "bogus"}, "action_mode"),
        ({"observation_mode": "bogus"}, "observation_mode"),
        ({"noise_std": -1.0}, "noise_std"),
        ({"server_schedule": np.ones((3, 2))}, "server_schedule"),
    ],
)
def test_bad_config_is_a_clear_error(kwargs, name):
    with pytest.raises(ValueError, match=name):
        gym.make(ENV_ID, **kwargs)


def test_unstable_traffic_allowed_on_request():
    env = gym.make(ENV_ID, traffic_intensity=4.0, service_rate=0.25, allow_unstable=True)
    env.reset(seed=0)
