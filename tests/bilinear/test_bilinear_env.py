"""ClusterBilinear-v0: spec §3.9 conformance in every mode, model checks (§6-T5), oracle LP and bad input; the
observation (every mode), the step reward (every reward mode), the episode summary and the simplex_logits mapping
rebuilt from the info, the public problem and the documented formulas."""

from __future__ import annotations

import copy
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cluster_envs.bilinear.config import ACTION_MODES, OBSERVATION_MODES
from cluster_envs.bilinear.model import mean_rewards, oracle_lp, pair_features, sample_instance
from cluster_envs.bilinear.simulator import (
    BilinearSimulator,
    departure_mean,
    project_allocation,
)

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


@pytest.mark.parametrize("preset", ["default", "paper_holding", "rl"])
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


def _fixed_queue_sim(queue: np.ndarray, mu: np.ndarray, caps: np.ndarray, seed: int, model: str = "paper",
                     r: np.ndarray | None = None):  # fmt: skip
    r = np.zeros((len(queue), len(caps))) if r is None else r
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


def test_served_allocation_leaves_out_the_collided_servers():
    """Eq. 1's served allocation E[N | Q, y]: four servers on one job, each first in the random order w.p. 1/4, so
    under "exclusive" each server class serves it half a time in expectation; under "paper" all four are paid."""
    queue, caps, mu, r = np.array([1, 1]), np.array([2, 2]), np.ones(2), np.array([[0.3, 0.8], [0.5, 0.1]])
    y = np.array([[2.0, 2.0], [0.0, 0.0]])
    for model, served in (("paper", y), ("exclusive", y / 4)):
        sim, cls = _fixed_queue_sim(queue, mu, caps, 1, model, r)
        _reload(sim, cls)
        assert np.isclose(sim.step_classes(y).reward_served, (r * served).sum())


@pytest.mark.parametrize("model", ["paper", "exclusive"])
def test_served_reward_is_the_mean_reward_of_the_selections_paid(model):
    """``reward_served`` = Σ r_ij E[N_ij | Q, decision]: the Monte Carlo mean of Σ r_ij N_ij over slots from one
    queue and decision, for each selection law (class allocation, per-job allocation, servers' class choices)."""
    queue, caps, mu = np.array([3, 1, 2]), np.array([2, 3]), np.full(3, 0.6)
    r = np.random.default_rng(7).uniform(0, 1, (3, 2))
    y = np.array([[1.2, 0.5], [0.3, 1.0], [0.4, 1.4]])
    x = np.random.default_rng(8).uniform(0, 0.3, (6, 2))  # the six waiting jobs in FIFO (class) order
    choices = np.array([0, 0, 1, 1, 1])  # three class-j=1 servers on the one class-1 job
    sim, cls = _fixed_queue_sim(queue, mu, caps, 3, model, r)
    reps = 20_000
    for step in (lambda: sim.step_classes(y), lambda: sim.step_jobs(x), lambda: sim.step_servers(choices)):
        paid, served = np.zeros(reps), np.zeros(reps)
        for k in range(reps):
            _reload(sim, cls)
            res = step()
            paid[k], served[k] = (r * res.counts).sum(), res.reward_served
        assert np.ptp(served) < 1e-12  # a function of the queue and the decision only
        assert abs(paid.mean() - served[0]) < 3.5 * paid.std() / np.sqrt(reps) + 1e-12


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
    from cluster_envs.bilinear.model import _assignment_optimum, _highs_optimum

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
    env = gym.make(ENV_ID, action_mode="job_allocation", max_visible_jobs=2)
    env.reset(seed=0)
    infos = [env.step(np.zeros(4))[4] for _ in range(10)]
    assert [i["hidden_jobs"] for i in infos] == [max(0, int(i["Q"].sum()) - 2) for i in infos]
    assert infos[-1]["hidden_jobs"] > 0


def test_server_schedule_caps_each_slot():
    sched = np.tile([[1, 0], [2, 2]], (25, 1))
    env = gym.make(ENV_ID, horizon=50, server_schedule=sched, allow_unstable=True)  # n_min = 1 = ρ
    env.reset(seed=1)
    r_stars = set()
    for t in range(50):
        info = env.step(np.ones(20))[4]
        assert (info["N"].sum(axis=0) <= sched[t]).all() and (info["y"].sum(axis=0) <= sched[t] + 1e-9).all()
        r_stars.add(round(info["r_star"], 12))
    assert len(r_stars) == 2


@pytest.mark.parametrize(("action_mode", "observation_mode"), [("allocation", "queues"), ("job_allocation", "full")])
def test_include_server_counts_appends_the_slots_schedule_row(action_mode, observation_mode):
    """App. D.2: ``include_server_counts`` appends n_j(t) of the slot the next action decides (reset: slot 1), after
    the default observation, which it leaves unchanged (same values, same space bounds)."""
    sched = np.tile([[2, 2], [2, 0], [0, 2], [1, 2]], (10, 1))
    kwargs = dict(horizon=40, server_schedule=sched, action_mode=action_mode, observation_mode=observation_mode)
    plain, counted = gym.make(ENV_ID, **kwargs), gym.make(ENV_ID, include_server_counts=True, **kwargs)
    n_j = 2
    np.testing.assert_array_equal(counted.observation_space.low[:-n_j], plain.observation_space.low)
    np.testing.assert_array_equal(counted.observation_space.high[:-n_j], plain.observation_space.high)
    np.testing.assert_array_equal(counted.observation_space.high[-n_j:], [2, 2])
    check_env(counted.unwrapped, skip_render_check=True)
    obs_p, obs_c = plain.reset(seed=3)[0], counted.reset(seed=3)[0]
    problem = counted.unwrapped.problem
    for t in range(40):
        np.testing.assert_array_equal(obs_c[:-n_j], obs_p)
        np.testing.assert_array_equal(problem.split(obs_c)["server_counts"], sched[t])
        assert counted.observation_space.contains(obs_c)
        action = plain.action_space.sample()
        obs_p, obs_c = plain.step(action)[0], counted.step(action)[0]


def test_include_server_counts_without_a_schedule_shows_the_fixed_counts():
    env = gym.make(ENV_ID, servers_per_class=(3, 1), include_server_counts=True)
    obs = env.reset(seed=0)[0]
    for _ in range(3):
        np.testing.assert_array_equal(env.unwrapped.problem.split(obs)["server_counts"], [3, 1])
        obs = env.step(env.action_space.sample())[0]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"include_server_counts": 1.5}, "include_server_counts"),
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


def test_traffic_beyond_the_servers_is_refused_even_when_unstable_is_allowed():
    """ρ > n leaves the oracle LP (eq. 1) infeasible: a clear error at construction, not at the first reset."""
    with pytest.raises(ValueError, match="traffic_intensity.*no feasible allocation"):
        gym.make(ENV_ID, traffic_intensity=4.5, service_rate=0.2, allow_unstable=True)


SHRINKING = dict(num_job_classes=4, servers_per_class=(2, 3), service_rate=0.25, horizon=60)


@pytest.mark.parametrize("as_callable", [False, True], ids=["array", "callable"])
def test_a_schedule_is_checked_at_its_smallest_capacity(as_callable):
    """App. D.2: stability at n_min = min_t n(t) (refused unless ``allow_unstable``) and a feasible oracle LP in every
    slot (always refused otherwise), at reset, before the episode changes; stable schedules run to the end."""
    rows = np.tile([[2, 3], [1, 3], [2, 1]], (20, 1))  # n(t) ∈ {5, 4, 3}

    def make(traffic, allow_unstable=False):
        schedule = (lambda t: rows[t - 1]) if as_callable else rows
        return gym.make(ENV_ID, traffic_intensity=traffic, server_schedule=schedule, allow_unstable=allow_unstable,
                        **SHRINKING)  # fmt: skip

    with pytest.raises(ValueError, match="server_schedule.*no feasible allocation"):
        make(3.5, allow_unstable=True).reset(seed=0)  # ρ = 3.5 > n(t) = 3 in every third slot
    with pytest.raises(ValueError, match="server_schedule.*unstable"):
        make(3.0).reset(seed=0)  # ρ = n_min
    for env in (make(2.5), make(3.0, allow_unstable=True)):
        env.reset(seed=0)
        for _ in range(60):
            terminated, truncated = env.step(env.action_space.sample())[2:4]
        assert truncated and not terminated


# -- the observation, the step reward and the episode summary rebuilt from the info and the public data --------


def _assignment_rows(info) -> list[tuple[int, int, int, int, float]]:
    return [tuple(row) for row in info["assignments"]]


def _expected_observation(problem, t: int, queue, rows_of_slot, history, jobs) -> np.ndarray:
    """The documented observation after slot ``t``: Q(t+1), this slot's N and Σξ rebuilt from its assignments,
    t/T, log1p of the cumulative counts and the empirical means (0 if unobserved) from every assignment so far
    (``history``), u and v, and the per-job block of the waiting ``jobs`` [(id, class)] in FIFO order."""
    n_i, n_j = problem.n_job_classes, problem.n_server_classes
    counts, sums = np.zeros((n_i, n_j)), np.zeros((n_i, n_j))
    for _, cls, server_class, _, xi in rows_of_slot:
        counts[cls, server_class] += 1
        sums[cls, server_class] += xi
    parts = [queue, counts, sums]
    if problem.observation_mode in ("queues_stats", "full"):
        total_counts, total_sums = np.zeros((n_i, n_j)), np.zeros((n_i, n_j))
        for _, cls, server_class, _, xi in history:
            total_counts[cls, server_class] += 1
            total_sums[cls, server_class] += xi
        means = np.zeros((n_i, n_j))
        seen = total_counts > 0
        means[seen] = total_sums[seen] / total_counts[seen]
        parts += [[t / problem.horizon], np.log1p(total_counts), means]
    if problem.observation_mode == "full":
        parts += [problem.job_features, problem.server_features]
    if problem.action_mode == "job_allocation":
        k = problem.max_visible_jobs
        cls, job_counts, job_sums = np.zeros(k), np.zeros((k, n_j)), np.zeros((k, n_j))
        for slot, (job_id, job_class) in enumerate(jobs[:k]):
            cls[slot] = job_class + 1
            for row in history:
                if row[0] == job_id:
                    job_counts[slot, row[2]] += 1
                    job_sums[slot, row[2]] += row[4]
        parts += [cls, job_counts, job_sums]
    return np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in parts])


@pytest.mark.parametrize(("action_mode", "observation_mode"), MODES)
def test_observation_is_rebuilt_from_info_and_public_data(action_mode, observation_mode):
    """Every part of every observation mode follows from the reset info, each step's info (Q_next, assignments,
    jobs) and the public problem: a hidden quantity (true means, θ, arrival rates) leaking into it fails."""
    kwargs = {"action_mode": action_mode, "observation_mode": observation_mode, "horizon": 30, "noise_std": 0.3,
              "max_visible_jobs": 3, "service_model": "exclusive" if action_mode == "server_choice" else "paper",
              "traffic_intensity": 2.5, "service_rate": 0.35}  # fmt: skip
    env = gym.make(ENV_ID, **kwargs)
    obs, info = env.reset(seed=7)
    problem = env.unwrapped.problem
    assert info["queue_total"] <= 1  # Q(1) = A(1): at most one job, id 0
    first_jobs = [(0, int(np.argmax(info["Q"])))] if info["queue_total"] else []
    expected = _expected_observation(problem, 0, info["Q"], [], [], first_jobs)
    np.testing.assert_allclose(obs, expected, rtol=1e-6, atol=1e-6)
    env.action_space.seed(7)
    history, hidden, reselected = [], 0, 0
    for _ in range(30):
        obs, _, terminated, truncated, info = env.step(env.action_space.sample())
        rows = _assignment_rows(info)
        waiting = {job_id for job_id, _ in info["jobs"][: problem.max_visible_jobs]}
        reselected += len(waiting & {row[0] for row in history + rows})  # shown jobs with selections to show
        hidden += len(info["jobs"]) > problem.max_visible_jobs
        history += rows
        assert np.isclose(sum(row[4] for row in rows), info["reward_noisy"])
        expected = _expected_observation(problem, info["t"], info["Q_next"], rows, history, info["jobs"])
        np.testing.assert_allclose(obs, expected, rtol=1e-6, atol=1e-6)
        if terminated or truncated:
            break
    assert truncated and len(history) > 20  # many selections, so the empirical means are far from the true ones
    assert len({(row[1], row[2]) for row in history}) > 2
    if action_mode == "job_allocation":  # the per-job block is cut at max_visible_jobs and shows earlier selections
        assert hidden >= 3 and reselected >= 3


REWARD_KWARGS = {"horizon": 40, "holding_costs": tuple(np.linspace(0.3, 2.5, 10)), "holding_cost_weight": 0.05,
                 "gamma_env": 0.7, "noise_std": 0.2, "traffic_intensity": 2.0, "service_rate": 0.4}  # fmt: skip


@pytest.mark.parametrize("reward_mode", ["noisy", "mean", "expected", "cost_adjusted"])
def test_step_reward_is_the_documented_formula_of_the_step_info(reward_mode):
    """noisy Σξ, mean Σ r_ij N_ij, expected Σ r_ij y_ij, cost_adjusted Σ(ξ − gamma_env) over the paid selections;
    minus holding_cost_weight · Σ c_i Q_i(t) with the pre-decision Q, non-uniform c."""
    env = gym.make(ENV_ID, reward_mode=reward_mode, **REWARD_KWARGS)
    env.reset(seed=3)
    r = env.unwrapped.true_mean_rewards
    costs = np.asarray(REWARD_KWARGS["holding_costs"])
    kappa, gamma = REWARD_KWARGS["holding_cost_weight"], REWARD_KWARGS["gamma_env"]
    rng = np.random.default_rng(1)
    many_paid = held = 0
    for _ in range(40):
        _, reward, terminated, truncated, info = env.step(rng.uniform(0, 1, 20))
        rows = _assignment_rows(info)
        base = {
            "noisy": sum(row[4] for row in rows),
            "mean": sum(r[row[1], row[2]] for row in rows),
            "expected": float((r * info["y"]).sum()),
            "cost_adjusted": sum(row[4] - gamma for row in rows),
        }[reward_mode]
        holding = float(costs @ info["Q"])
        assert np.isclose(reward, base - kappa * holding, rtol=1e-10, atol=1e-12)
        many_paid += len(rows) >= 2
        held += holding > 0
        if terminated or truncated:
            break
    assert truncated and many_paid >= 5 and held >= 5


SUMMARY_CASES = [
    ({"service_model": "paper"}, 1.0),
    ({"service_model": "exclusive"}, 1.0),
    ({"service_model": "paper", "action_mode": "server_choice"}, None),
    ({"service_model": "exclusive", "action_mode": "server_choice"}, None),
    ({"action_mode": "job_allocation", "max_visible_jobs": 2}, 0.3),
    ({"queue_cap": 6, "traffic_intensity": 3.0, "service_rate": 0.3, "horizon": 200}, 0.05),  # terminates early
]


@pytest.mark.parametrize(
    ("kwargs", "scale"),
    SUMMARY_CASES,
    ids=["paper", "exclusive", "server_choice-paper", "server_choice-exclusive", "job_allocation", "queue_cap"],
)
def test_episode_summary_is_recomputed_from_the_step_infos(kwargs, scale):
    """Every key of ``episode_summary`` from one episode's per-step infos (r from the privileged accessor): the
    realized regret uses N, the means divide by the slots run; duplicates/collisions from the selections."""
    kwargs = {"horizon": 40, "holding_costs": tuple(np.linspace(0.2, 3.0, 10)), "traffic_intensity": 2.0,
              "service_rate": 0.5, "service_model": "paper", **kwargs}  # fmt: skip
    env = gym.make(ENV_ID, **kwargs)
    _, reset_info = env.reset(seed=5)
    env.action_space.seed(5)
    r, n_servers = env.unwrapped.true_mean_rewards, sum(env.unwrapped.problem.servers_per_class)
    costs, max_visible_jobs = np.asarray(kwargs["holding_costs"]), kwargs.get("max_visible_jobs")
    server_choice = kwargs.get("action_mode") == "server_choice"
    rng = np.random.default_rng(2)
    totals = dict.fromkeys(("regret", "regret_realized", "regret_served", "reward_noisy", "reward_mean",
                            "reward_expected", "reward_served", "holding", "queue", "utilization", "duplicates",
                            "collisions"), 0.0)  # fmt: skip
    steps, max_hidden = 0, 0
    for _ in range(kwargs["horizon"]):
        action = env.action_space.sample() if server_choice else rng.uniform(0, scale, env.action_space.shape)
        _, _, terminated, truncated, info = env.step(action)
        steps += 1
        rows = _assignment_rows(info)
        y, counts = info["y"], np.zeros_like(r)
        for row in rows:
            counts[row[1], row[2]] += 1
        totals["regret"] += reset_info["r_star"] - (r * y).sum()
        totals["regret_realized"] += reset_info["r_star"] - (r * counts).sum()
        totals["reward_noisy"] += sum(row[4] for row in rows)
        totals["reward_mean"] += (r * counts).sum()
        totals["reward_expected"] += (r * y).sum()
        totals["reward_served"] += info["reward_served"]
        totals["regret_served"] += reset_info["r_star"] - info["reward_served"]
        totals["holding"] += costs @ info["Q"]
        totals["queue"] += info["Q"].sum()
        totals["utilization"] += y.sum() / n_servers
        extra = len(rows) - len({row[0] for row in rows})  # paid selections of an already selected job
        if server_choice:  # servers choosing a non-empty class beyond its jobs duplicate ("paper") or collide
            chosen = np.bincount(action[action < 10], minlength=10)
            beyond = int(np.maximum(chosen - info["Q"], 0)[info["Q"] > 0].sum())
            assert extra == (beyond if kwargs["service_model"] == "paper" else 0)
            totals["collisions"] += beyond if kwargs["service_model"] == "exclusive" else 0
        else:
            totals["collisions"] += info["n_collisions"]
        assert info["n_duplicates"] == extra
        totals["duplicates"] += extra
        if max_visible_jobs is not None:
            max_hidden = max(max_hidden, int(info["Q"].sum()) - max_visible_jobs)
        if terminated or truncated:
            break
    assert terminated or truncated
    if "queue_cap" in kwargs:
        assert terminated and steps < kwargs["horizon"]
    if kwargs["service_model"] == "exclusive" and not server_choice:
        assert totals["collisions"] > 0
    summary = info["episode_summary"]
    expected = {
        "regret": totals["regret"],
        "regret_realized": totals["regret_realized"],
        "reward_noisy": totals["reward_noisy"],
        "reward_mean": totals["reward_mean"],
        "reward_expected": totals["reward_expected"],
        "reward_served": totals["reward_served"],
        "regret_served": totals["regret_served"],
        "r_star": reset_info["r_star"],
        "mean_holding_cost": totals["holding"] / steps,
        "mean_queue_total": totals["queue"] / steps,
        "final_queue_total": float(info["Q_next"].sum()),
        "utilization": totals["utilization"] / steps,
        "duplicates": totals["duplicates"],
        "collisions": totals["collisions"],
        "max_hidden_jobs": float(max(max_hidden, 0)),
    }
    assert set(summary) == set(expected)
    assert len(info["jobs"]) == summary["final_queue_total"]
    for key, value in expected.items():
        assert np.isclose(summary[key], value, rtol=1e-9, atol=1e-9), (key, summary[key], value)
    if not server_choice:  # (under server_choice y is the integer N of the chosen servers)
        assert not np.isclose(summary["regret"], summary["regret_realized"])
    if kwargs["service_model"] == "paper":  # every selection is paid: E[N | y] = y
        assert np.isclose(summary["regret_served"], summary["regret"], rtol=1e-9, atol=1e-9)
    else:  # collided servers serve nothing
        assert summary["regret_served"] > summary["regret"]


def _softmax_allocation(logits: np.ndarray, active: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """y_ij = n_j π_ij, π_·j the softmax of 10 × logits over the non-empty classes and idle (the last logit)."""
    out = np.zeros((active.size, caps.size))
    for j, row in enumerate(np.asarray(logits, dtype=np.float64).reshape(caps.size, -1)):
        keep = np.append(active, True)
        weights = np.where(keep, np.exp(10.0 * (row - row[keep].max())), 0.0)
        out[:, j] = caps[j] * weights[:-1] / weights.sum()
    return out


def test_simplex_logits_map_to_a_masked_softmax_allocation():
    """``simplex_logits``: logits × 10, per server class a softmax over the non-empty classes and idle, y = n_j π;
    hand-made actions, including a large logit on an empty class (masked) and small gaps (the scale matters)."""
    n_i = 4
    sched = np.tile([[2, 3], [1, 3], [2, 1]], (20, 1))  # n_j(t) ≥ ρ, so the oracle LP stays feasible
    env = gym.make(ENV_ID, action_mode="simplex_logits", num_job_classes=n_i, servers_per_class=(2, 3),
                   traffic_intensity=1.5, service_rate=0.5, horizon=60, server_schedule=sched)  # fmt: skip
    obs, _ = env.reset(seed=0)
    hand = [
        np.zeros((2, n_i + 1)),  # uniform over the non-empty classes and idle
        np.array([[0.1, 0.0, -0.1, 0.05, 0.0], [0.0, 0.0, 0.0, 0.0, 0.2]]),  # gaps of 0.1: e^1 after the scale
        np.array([[1.0, -1.0, -1.0, -1.0, -1.0], [-1.0, -1.0, -1.0, -1.0, 1.0]]),  # all on class 0 / all idle
        np.array([[-0.3, 0.4, 0.2, -0.05, -0.5], [0.25, -0.25, 0.5, 0.45, -1.0]]),
    ]
    partial = 0
    for t in range(60):
        logits = hand[t % len(hand)].astype(np.float32)
        active = obs[:n_i] > 0  # Q(t), the queues the action faces
        if 0 < active.sum() < n_i:
            logits[0, np.flatnonzero(~active)[0]] = 1.0  # an empty class's large logit must take no mass
            partial += 1
        obs, _, _, truncated, info = env.step(logits.ravel())
        np.testing.assert_array_equal(info["Q"] > 0, active)
        expected = _softmax_allocation(logits, active, sched[t].astype(np.float64))
        np.testing.assert_allclose(info["y"], expected, rtol=1e-12, atol=1e-15)
        if t % len(hand) == 0:  # equal logits: each non-empty class gets n_j(t) / (|non-empty| + 1)
            np.testing.assert_allclose(info["y"][active], np.tile(sched[t] / (active.sum() + 1), (active.sum(), 1)))
    assert truncated and partial >= 5
