"""ClusterApprox-v1 / ClusterApproxSingleJob-v0: dynamics, feedback, budgets, rewards, info, bad input."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

import agents
from cluster_envs.approx.model import perspective, utility

from .approx_helpers import run_episode

MULTI, SINGLE = "ClusterApprox-v1", "ClusterApproxSingleJob-v0"
SMALL_LIST = ((0, 40, 30.0, 2.0), (5, 25, 15.0, 1.0), (10, 60, 80.0, 3.0))


def _random_rollout(env_id: str, seed: int, **kwargs):
    env = gym.make(env_id, **kwargs).unwrapped
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    steps = []
    while True:
        action = env.action_space.sample()
        obs, reward, terminated, truncated, info = env.step(action)
        steps.append((action, obs, reward, info))
        if terminated or truncated:
            return env, steps


# ---------------------------------------------------------------- H1, H2: budget and capacity
@pytest.mark.parametrize("env_id", [MULTI, SINGLE])
def test_h1_hard_budget_never_reached_under_any_policy(env_id):
    for name in agents.agent_names(env_id):
        for seed in range(2):
            agent = agents.make_agent(env_id, name)
            env, summary = run_episode(env_id, agent, seed, horizon=800, **agent.env_kwargs)
            sim = env._sim
            assert (sim.spent < sim.budget).all(), f"{name}: a job reached its budget"
            assert summary["fit_positive"] == 0.0


def test_h1_random_actions_never_exceed_budget_and_blocked_jobs_leave():
    env = gym.make(MULTI, horizon=300, q_range=(2.0, 5.0)).unwrapped
    env.reset(seed=3)
    env.action_space.seed(3)
    blocked = 0
    for _ in range(300):
        *_, info = env.step(env.action_space.sample())
        sim = env._sim
        assert (sim.spent < sim.budget).all()
        blocked += info["n_budget_blocked"]
        # an exhausted job leaves its slot at once
        assert not sim.exhausted[sim.slot_job[sim.slot_job >= 0]].any()
    assert blocked > 0 and env._sim.exhausted.any()


def test_h2_one_job_per_machine_and_generalized_constraints_after_repair():
    env, steps = _random_rollout(MULTI, 0, horizon=200)
    for *_, info in steps:
        assert info["executed"].shape == (env.config.n_machines,)
        assert set(np.unique(info["executed"])) <= set(range(env.config.max_visible_jobs + 1))
    capacity = tuple([1, 2, 3] * 6 + [1, 2])
    env, steps = _random_rollout(MULTI, 1, horizon=200, capacity=capacity, demand=1.5, parallelism=3)
    for *_, info in steps:
        executed = info["executed"].astype(bool)
        assert (executed.sum(axis=0) * 1.5 <= np.asarray(capacity) + 1e-12).all()
        assert (executed.sum(axis=1) <= 3).all()
    assert env._sim.total_repaired > 0


# ---------------------------------------------------------------- H3: telescoping returns
@pytest.mark.parametrize("mode", ["true", "approx", "sparse"])
def test_h3_episode_return_equals_closed_form_objective(mode):
    env = gym.make(MULTI, job_source="list", jobs=SMALL_LIST, horizon=60, reward_mode=mode).unwrapped
    env.reset(seed=4)
    env.action_space.seed(4)
    total = 0.0
    while True:
        _, reward, terminated, _, _ = env.step(env.action_space.sample())
        total += reward
        if terminated:
            break
    sim = env._sim
    if mode == "approx":
        expected = perspective("power", sim.value, 0.5, sim.work, sim.lifetime).sum()
    else:
        expected = utility("power", sim.value, 0.5, sim.work).sum()
    assert sim.work.sum() > 0
    np.testing.assert_allclose(total, expected, rtol=1e-10)


def test_regret_at_termination_is_eq6_regret():
    env, summary = run_episode(MULTI, agents.make_agent(MULTI, "fair"), 0, preset="common_deadline", horizon=300)
    sim = env._sim
    eq6 = sim.opt_per_job.sum() - perspective("log", sim.value, sim.beta, sim.work, sim.lifetime).sum()
    np.testing.assert_allclose(summary["regret"], eq6, rtol=1e-10)
    assert summary["regret"] > 0


# ---------------------------------------------------------------- feedback and information
def test_semi_bandit_feedback_only_on_executed_machines():
    env = gym.make(SINGLE).unwrapped
    obs, _ = env.reset(seed=0)
    action = np.zeros(10, dtype=np.int8)
    action[[1, 4]] = 1
    obs, _, _, _, info = env.step(action)
    assert obs["last_mask"].tolist() == action.tolist()
    assert (obs["n_obs"] == action).all()
    assert (obs["last_rate"][action == 0] == 0).all()
    assert (info["observed_rates"][action == 0] == -1).all()
    np.testing.assert_array_equal(obs["sum_obs"][action == 1], info["observed_rates"][action == 1])


def test_observation_reveals_no_hidden_rates_or_future_jobs():
    env = gym.make(MULTI).unwrapped
    obs, _ = env.reset(seed=2)
    hidden = env._instance
    present = obs["jobs"][:, 0] > 0
    assert present.sum() == (hidden.jobs.arrival == 0).sum()
    for key, value in obs.items():
        assert not np.isin(hidden.means, np.asarray(value, dtype=np.float64)).any(), key


def test_common_random_numbers_across_policies():
    rates = {}
    for name in ("random", "fair"):
        env = gym.make(MULTI, expose_oracle=True).unwrapped
        obs, _ = env.reset(seed=11)
        agent = agents.make_agent(MULTI, name)
        agent.reset(env.problem, seed=0)
        seen = []
        for _ in range(50):
            obs, *_, info = env.step(agent.act(obs))
            seen.append(info["oracle"]["rates"])
        rates[name] = np.array(seen)
    np.testing.assert_array_equal(rates["random"], rates["fair"])


def test_light_load_keeps_a_subset_of_the_heavy_jobs():
    heavy = gym.make(MULTI).unwrapped
    light = gym.make(MULTI, job_keep_fraction=0.5).unwrapped
    heavy.reset(seed=5)
    light.reset(seed=5)
    h, lt = heavy._instance.jobs, light._instance.jobs
    assert 0 < lt.count < h.count
    pairs = set(zip(h.arrival.tolist(), h.budget.tolist(), strict=True))
    assert set(zip(lt.arrival.tolist(), lt.budget.tolist(), strict=True)) <= pairs


def test_soft_mode_measures_fit_and_can_overrun():
    env, steps = _random_rollout(SINGLE, 0, preset="soft")
    summary = steps[-1][3]["episode_summary"]
    sim = env._sim
    np.testing.assert_allclose(summary["fit"], sim.spent[0] - sim.budget[0])
    assert summary["fit"] > 0  # random play overspends a budget of ρ = 0.2
    assert summary["fit_positive"] == summary["fit"]


def test_info_keys_and_episode_summary():
    env, steps = _random_rollout(SINGLE, 1)
    info = steps[-1][3]
    for key in (
        "t",
        "work",
        "cost",
        "executed",
        "observed_rates",
        "n_invalid",
        "n_budget_blocked",
        "exhausted",
    ):
        assert key in info
    for key in (
        "migrations",
        "utility_true",
        "utility_approx",
        "fit",
        "fit_positive",
        "regret",
        "oracle_total",
    ):
        assert np.isscalar(info[key])
    assert info["benchmark_total"] == info["oracle_total"]  # the deprecated alias, until 0.3
    summary = info["episode_summary"]
    for key in ("utility", "regret", "fit", "fit_positive", "mean_migrations", "frac_consumed_below_0.9"):
        assert np.isfinite(summary[key])
    assert info["t"] == env.config.horizon


def _summary_from_infos(reset_info: dict, infos: list[dict]) -> dict[str, float]:
    """The episode summary's keys that the per-step infos determine (spec §5.3, docs/envs/ClusterApprox-v1.md)."""
    last = infos[-1]
    expected = {
        "utility": last["utility_true"],
        "utility_approx": last["utility_approx"],
        "total_work": sum(float(np.sum(i["work"])) for i in infos),
        "total_cost": sum(float(np.sum(i["cost"])) for i in infos),
        "fit": last["fit"],
        "fit_positive": last["fit_positive"],
        "mean_migrations": sum(i["migrations"] for i in infos if i["t"] >= 2) / (len(infos) - 1),  # over t ≥ 2
        "n_jobs": reset_info["n_jobs"],
        "n_invalid": sum(i["n_invalid"] for i in infos),
        "n_budget_blocked": sum(i["n_budget_blocked"] for i in infos),
        "n_repaired": sum(i["n_repaired"] for i in infos),
    }
    if "regret" in last:
        expected.update(regret=last["regret"], oracle_total=reset_info["oracle_total"])
        expected.update(benchmark_total=reset_info["benchmark_total"])  # the deprecated alias, until 0.3
    return expected


@pytest.mark.parametrize(
    ("policy", "kwargs"),
    [
        ("random actions", {"horizon": 200, "q_range": (2.0, 5.0)}),
        ("opm", {"preset": "common_deadline", "horizon": 200, "compute_regret": True}),
    ],
)
def test_episode_summary_agrees_with_the_per_step_infos(policy, kwargs):
    """Each summary key that the per-step infos determine, recomputed from them (sums, last values, means)."""
    env = gym.make(MULTI, **kwargs).unwrapped
    obs, reset_info = env.reset(seed=2)
    env.action_space.seed(2)
    agent = None if policy == "random actions" else agents.make_agent(MULTI, policy)
    if agent is not None:
        agent.reset(env.problem, seed=2)
    infos = []
    while True:
        action = env.action_space.sample() if agent is None else agent.act(obs)
        obs, _, terminated, truncated, info = env.step(action)
        infos.append(info)
        if terminated or truncated:
            break
    assert [i["t"] for i in infos] == list(range(1, len(infos) + 1))
    assert infos[0]["migrations"] == 0 and sum(i["migrations"] for i in infos) > 0  # not vacuous
    summary = info["episode_summary"]
    for key, value in _summary_from_infos(reset_info, infos).items():
        np.testing.assert_allclose(summary[key], value, rtol=1e-12, atol=1e-9, err_msg=key)


def test_fractional_action_wrapper_keeps_capacity_and_is_unbiased_on_average():
    from cluster_envs.approx.wrappers import FractionalActionWrapper

    env = FractionalActionWrapper(gym.make(MULTI))
    obs, _ = env.reset(seed=0)
    k, m = env.unwrapped.config.max_visible_jobs, env.unwrapped.config.n_machines
    assert env.action_space.shape == (k, m)
    z = np.full((k, m), 0.3)
    _, _, _, _, info = env.step(z)
    projected = info["fractional_action"]
    assert (projected.sum(axis=0) <= 1 + 1e-12).all()
    single = FractionalActionWrapper(gym.make(SINGLE, preset="soft"))
    single.reset(seed=0)
    counts = np.zeros(10)
    for _ in range(400):
        *_, info = single.step(np.full(10, 0.25))
        counts += info["executed"]
    assert abs(counts.mean() / 400 - 0.25) < 0.05  # 4000 Bernoulli(0.25) draws: sd 0.007


@pytest.mark.parametrize("env_id", [MULTI, SINGLE])
def test_fractional_action_wrapper_passes_gymnasiums_env_checker(env_id):
    """It is recorded in the spec (gym.make(env.spec) rebuilds it); the one warning left is gymnasium's advice to
    check the unwrapped env, which every wrapper gets."""
    import warnings

    from gymnasium.utils.env_checker import check_env

    from cluster_envs.approx.wrappers import FractionalActionWrapper

    env = FractionalActionWrapper(gym.make(env_id, horizon=30))
    assert type(gym.make(env.spec)) is FractionalActionWrapper
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    assert [str(w.message) for w in caught if "unwrapped version" not in str(w.message)] == []
    assert env.action_space.dtype == np.float32


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"beta": 0.0}, "beta"),
        ({"beta": 1.5}, "beta"),
        ({"beta": float("nan")}, "beta"),
        ({"job_source": "list", "jobs": ()}, "jobs"),
        ({"job_source": "list", "jobs": ((10, 5, 3.0, 1.0),)}, "deadline"),
        ({"job_source": "list", "jobs": ((0, 5000, 3.0, 1.0),)}, "deadline"),
        ({"n_machines": 0}, "n_machines"),
        ({"rate_process": "nope"}, "rate_process"),
        ({"reward_mode": "nope"}, "reward_mode"),
        ({"prices": (1.0, 2.0)}, "prices"),
        ({"demand": 2.0}, "capacity"),
        ({"q_range": (5.0, 1.0)}, "q_range"),
    ],
)
def test_bad_configuration_is_a_clear_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make(MULTI, **kwargs)


@pytest.mark.parametrize(
    "action",
    [np.full(20, 9), np.full(20, -1), np.full(20, 0.5), np.zeros(19), np.zeros((2, 20)), "idle", None],
)
def test_malformed_multi_job_action_is_rejected_and_env_unchanged(action):
    env = gym.make(MULTI).unwrapped
    env.reset(seed=0)
    twin = copy.deepcopy(env)
    with pytest.raises(ValueError, match="action"):
        env.step(action)
    good = np.ones(20, dtype=np.int64)
    a, b = env.step(good), twin.step(good)
    assert a[1] == b[1]
    np.testing.assert_array_equal(a[0]["jobs"], b[0]["jobs"])


def test_malformed_single_job_action_is_rejected():
    env = gym.make(SINGLE).unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(np.full(10, 2))
    with pytest.raises(RuntimeError, match="reset"):
        gym.make(SINGLE).unwrapped.step(np.zeros(10))


def test_single_job_env_rejects_multi_job_options():
    with pytest.raises(ValueError, match="job_source"):
        gym.make(SINGLE, job_source="synthetic")
    with pytest.raises(ValueError, match="capacity"):
        gym.make(SINGLE, capacity=2)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["paper", "paper_light", "paper_hidden_speed", "paper_budget_bound_hidden_speed"])
def test_paper_presets_run_within_budgets_and_spaces(preset):
    env = gym.make(MULTI, preset=preset).unwrapped
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    for name in ("opm", "fair"):
        agent = agents.make_agent(MULTI, name)
        agent.reset(env.problem, seed=0)
        for _ in range(1500):
            obs, reward, *_ = env.step(agent.act(obs))
            assert np.isfinite(reward)
        assert env.observation_space.contains(obs)
        assert (env._sim.spent < env._sim.budget).all()
        assert env._sim.n_waited == 0  # K = 256 holds every concurrent job of the instance


def test_job_trace_csv_gives_the_trace_arrivals_and_deadlines(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,a,d\n7,0,50\n8,10,10\n9,30,5000\n10,2500,2600\n")
    env = gym.make(MULTI, job_source="trace", trace_path=str(path)).unwrapped
    env.reset(seed=0)
    jobs = env._instance.jobs
    assert jobs.arrival.tolist() == [0, 10, 30] and jobs.deadline.tolist() == [50, 11, 2000]
    np.testing.assert_array_less(2 * (jobs.deadline - jobs.arrival) - 1e-9, jobs.budget)


@pytest.mark.parametrize(
    ("text", "match"),
    [("1,5,3\n", "deadline precedes"), ("1,2\n", "job_id,a,d"), ("x,y,z\nfoo,bar,baz\n", "readable CSV")],
)
def test_bad_job_trace_is_a_clear_error(tmp_path, text, match):
    path = tmp_path / "jobs.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        gym.make(MULTI, job_source="trace", trace_path=str(path))


def test_trace_source_needs_an_existing_file():
    with pytest.raises(ValueError, match="trace_path"):
        gym.make(MULTI, job_source="trace")
    with pytest.raises(ValueError, match="trace_path"):
        gym.make(MULTI, job_source="trace", trace_path="/no/such/file.csv")


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        (MULTI, {"horizon": 1}),
        (MULTI, {"n_machines": 1}),
        (MULTI, {"max_visible_jobs": 1, "load": 10.0, "horizon": 300}),
        (MULTI, {"budget_mode": "soft", "horizon": 300}),
        (MULTI, {"capacity": 1, "demand": 2.0, "horizon": 200}),
        (MULTI, {"rate_process": "iid_beta", "prices": "uniform", "utility": "linear", "horizon": 300}),
        (MULTI, {"reward_mode": "approx", "speed_heterogeneity": 0.9, "lifetime_sigma": 0.0, "horizon": 300}),
        (SINGLE, {"horizon": 1}),
        (SINGLE, {"n_machines": 1, "budget_fraction": 5.0, "horizon": 300}),
    ],
)
def test_extreme_configurations_keep_observations_in_space(env_id, kwargs):
    env = gym.make(env_id, **kwargs)
    obs, _ = env.reset(seed=2)
    env.action_space.seed(2)
    for _ in range(250):
        obs, reward, terminated, _, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and np.isfinite(reward)
        if terminated:
            assert all(np.isfinite(v) for v in info["episode_summary"].values())
            obs, _ = env.reset()


# ---------------------------------------------------------------- info_level
@pytest.mark.parametrize(("env_id", "kwargs"), [(MULTI, {"horizon": 120}), (SINGLE, {"horizon": 120})])
def test_minimal_info_keeps_the_trajectory_and_the_scalar_totals(env_id, kwargs):
    full, minimal = gym.make(env_id, **kwargs), gym.make(env_id, info_level="minimal", **kwargs)
    obs_f, _ = full.reset(seed=7)
    obs_m, _ = minimal.reset(seed=7)
    full.action_space.seed(7)
    while True:
        action = full.action_space.sample()
        obs_f, reward_f, term_f, _, info_f = full.step(action)
        obs_m, reward_m, term_m, _, info_m = minimal.step(action)
        for key in obs_f:
            np.testing.assert_array_equal(obs_m[key], obs_f[key])
        assert (reward_m, term_m) == (reward_f, term_f)
        expected = {"t", "utility_true", "utility_approx"} | ({"regret"} if "regret" in info_f else set())
        assert set(info_m) - {"episode_summary"} == expected
        assert all(info_m[key] == info_f[key] for key in expected)
        if term_f:
            assert info_m["episode_summary"] == info_f["episode_summary"]
            break


def test_info_level_is_validated():
    with pytest.raises(ValueError, match="info_level"):
        gym.make(MULTI, info_level="none")


def _per_job_and_queue_summary_from_infos(env, first_slot_jobs: np.ndarray, infos: list[dict]) -> dict[str, float]:
    """The per-job summary keys (spec §5.3) and the queue counters, recomputed from the per-step infos and the
    instance's job data: the job in slot k during slot t is ``slot_job_ids[k]`` of step t − 1's info (the first
    slot's from ``first_slot_jobs``); it spends ``cost[k]``, gains ``work[k]``, is exhausted if ``exhausted[k]``,
    and is scheduled if a machine executed slot k. After slot t (0: the reset) a job waits for slot t + 1 if
    a_j ≤ t < d_j and it has never been visible; the concurrency is then the visible plus the waiting jobs."""
    jobs = env._instance.jobs
    n = jobs.count
    spent, work = np.zeros(n), np.zeros(n)
    exhausted, scheduled, seen = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
    slot_jobs = first_slot_jobs
    seen[slot_jobs[slot_jobs >= 0]] = True

    def queue(t: int, visible: np.ndarray) -> tuple[int, int]:
        waiting = (jobs.arrival <= t) & (t < jobs.deadline) & ~seen
        return int(waiting.sum()), int(waiting.sum()) + int((visible >= 0).sum())

    n_waited, max_concurrency = queue(0, slot_jobs)
    for info in infos:
        executed = np.asarray(info["executed"])
        for k, j in enumerate(slot_jobs):
            if j < 0:
                continue
            spent[j] += info["cost"][k]
            work[j] += info["work"][k]
            exhausted[j] |= bool(info["exhausted"][k])
            scheduled[j] |= bool(executed[k].any()) if executed.ndim == 2 else bool((executed == k + 1).any())
        slot_jobs = info["slot_job_ids"]
        seen[slot_jobs[slot_jobs >= 0]] = True
        waited, concurrency = queue(info["t"], slot_jobs)
        n_waited += waited
        max_concurrency = max(max_concurrency, concurrency)
    f = utility(env.config.utility, jobs.value, env.config.beta, work)
    ratio = np.full(n, np.inf)
    ratio[f > 0] = spent[f > 0] / f[f > 0]
    consumed = spent / jobs.budget
    return {
        "n_exhausted": exhausted.sum(),
        "n_never_scheduled": (~scheduled).sum(),
        "mean_consumed_budget": consumed.mean(),
        "frac_consumed_below_0.9": (consumed < 0.9).mean(),
        "frac_cost_utility_below_50": (ratio < 50).mean(),
        "max_concurrency": max_concurrency,
        "n_waited_slots": n_waited,
    }


@pytest.mark.parametrize(
    "kwargs",
    [
        {"horizon": 200, "q_range": (2.0, 5.0), "max_visible_jobs": 3},
        {"horizon": 200, "q_range": (2.0, 5.0), "max_visible_jobs": 3, "capacity": 1, "parallelism": 4},
    ],
)
def test_per_job_and_queue_summary_keys_agree_with_the_per_step_infos(kwargs):
    """n_exhausted, n_never_scheduled, the consumed-budget and cost/utility shares, max_concurrency and
    n_waited_slots, recomputed job by job from the per-step infos of a random-action episode (few slots: jobs
    queue; tight budgets: jobs exhaust), in both action encodings."""
    env = gym.make(MULTI, **kwargs).unwrapped
    env.reset(seed=5)
    env.action_space.seed(5)
    first_slot_jobs = env._sim.slot_job.copy()
    infos = []
    while True:
        *_, terminated, truncated, info = env.step(env.action_space.sample())
        infos.append(info)
        if terminated or truncated:
            break
    summary = info["episode_summary"]
    expected = _per_job_and_queue_summary_from_infos(env, first_slot_jobs, infos)
    # not vacuous: every count and share strictly between its extremes
    assert 0 < expected["n_exhausted"] < summary["n_jobs"]
    assert 0 < expected["n_never_scheduled"] < summary["n_jobs"]
    assert expected["n_waited_slots"] > 0 and expected["max_concurrency"] > kwargs["max_visible_jobs"]
    for key in ("frac_consumed_below_0.9", "frac_cost_utility_below_50"):
        assert 0 < expected[key] < 1, key
    for key, value in expected.items():
        np.testing.assert_allclose(summary[key], value, rtol=1e-12, atol=1e-12, err_msg=key)


def test_episode_summary_of_a_hand_built_episode():
    """Every per-job and queue summary key on a 5-job, 2-machine, 2-slot episode with θ ≡ 1 and linear utility,
    derived by hand from the jobs and the actions (each step's info confirms the plan as it unfolds).

    Jobs (a, d, B, v), ids in arrival order: 0 (0, 6, 2, 1), 1 (0, 4, 10, 0.01), 2 (0, 6, 2.75, 2),
    3 (1, 2, 5, 1), 4 (3, 5, 0.5, 1); prices p = (1, 0.5); capacity 1 per machine (Sec. V-C actions).
    At t = 0 jobs 0, 1 take slots 1, 2 and job 2 queues. Slot 1: job 0 runs both machines (spends 1.5);
    job 3 arrives and queues (4 jobs present: the maximum). Slot 2: job 0 asks machine 0 again, 1.5 + 1 ≥ 2:
    blocked and exhausted; job 1 runs machine 1; job 3 reaches its deadline in the queue; job 2 takes slot 1.
    Slot 3: both slots ask machine 0, the repair drops slot 2's task; job 2 runs both machines; job 4 arrives
    and queues. Slot 4: job 1 runs both machines and departs; job 4 takes slot 2. Slot 5: job 2 runs machine 0
    (2.5 < 2.75); job 4 asks machine 1, 0 + 0.5 ≥ 0.5: exhausted without ever running. Slot 6: a proposal to
    the empty slot 2 only.
    """
    p0, p1 = 1.0, 0.5
    jobs = ((0, 6, 2.0, 1.0), (0, 4, 10.0, 0.01), (0, 6, 2.75, 2.0), (1, 2, 5.0, 1.0), (3, 5, 0.5, 1.0))
    env = gym.make(
        MULTI,
        job_source="list",
        jobs=jobs,
        horizon=6,
        n_machines=2,
        max_visible_jobs=2,
        rate_process="iid_bernoulli",
        iid_mean_range=(1.0, 1.0),  # θ_i^t = 1: work = machines run
        prices=(p0, p1),
        utility="linear",
        capacity=(1, 1),
    ).unwrapped
    env.reset(seed=0)
    plan = [  # (action, n_budget_blocked, n_repaired, n_invalid, slot_job_ids after the step)
        ([[1, 1], [0, 0]], 0, 0, 0, [0, 1]),
        ([[1, 0], [0, 1]], 1, 0, 0, [2, 1]),
        ([[1, 1], [1, 0]], 0, 1, 0, [2, 1]),
        ([[0, 0], [1, 1]], 0, 0, 0, [2, 4]),
        ([[1, 0], [0, 1]], 1, 0, 0, [2, -1]),
        ([[0, 0], [0, 1]], 0, 0, 1, [-1, -1]),
    ]
    for action, blocked, repaired, invalid, slot_jobs in plan:
        *_, info = env.step(np.array(action))
        assert (info["n_budget_blocked"], info["n_repaired"], info["n_invalid"]) == (blocked, repaired, invalid)
        assert info["slot_job_ids"].tolist() == slot_jobs, info["t"]
    summary = info["episode_summary"]
    # per job: spend and work (θ = 1) of the slots above
    spent = np.array([p0 + p1, p1 + (p0 + p1), (p0 + p1) + p0, 0.0, 0.0])
    work = np.array([2.0, 1.0 + 2.0, 2.0 + 1.0, 0.0, 0.0])
    budget, value = np.array([j[2] for j in jobs]), np.array([j[3] for j in jobs])
    consumed = spent / budget  # 0.75, 0.2, 0.909, 0, 0
    cost_per_utility = [spent[j] / (value[j] * work[j]) for j in range(3)] + [np.inf, np.inf]  # 0.75, 66.7, 0.42
    expected = {
        "n_exhausted": 2,  # job 0 (slot 2), job 4 (slot 5)
        "n_never_scheduled": 2,  # job 3 (never visible), job 4 (blocked on its only proposal)
        "mean_consumed_budget": consumed.sum() / 5,
        "frac_consumed_below_0.9": 4 / 5,  # all but job 2
        "frac_cost_utility_below_50": 2 / 5,  # jobs 0 and 2 (job 1 pays 66.7 per unit of utility)
        "n_budget_blocked": 2,
        "n_repaired": 1,
        "n_invalid": 1,
        "max_concurrency": 4,  # after slot 1: jobs 0, 1 visible, 2, 3 queued
        "n_waited_slots": 4,  # job 2 for slots 1, 2; job 3 for slot 2; job 4 for slot 4
        "utility": float((value * work).sum()),
        "total_cost": float(spent.sum()),
        "total_work": float(work.sum()),
        "fit": float((spent - budget).sum()),
    }
    assert [c < 0.9 for c in consumed] == [True, True, False, True, True]
    assert [r < 50 for r in cost_per_utility] == [True, False, True, False, False]
    for key, want in expected.items():
        np.testing.assert_allclose(summary[key], want, rtol=1e-12, err_msg=key)
