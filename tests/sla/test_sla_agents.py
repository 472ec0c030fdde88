"""Reference agents of ClusterSLA-v1: invariants, the paper's lemmas, Example 1.1, Sec. 3.4, hyperparameter checks."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from agents import agent_names, make_agent
from agents.sla.projection import kl_project
from baselines.eval.harness import rollout
from cluster_envs.sla.env import ClusterSLAEnv
from cluster_envs.sla.model import SLAProblem
from cluster_envs.sla.runner import simulate

ENV = "ClusterSLA-v1"


@pytest.mark.parametrize("name", ["mwu", "mwu_extended"])
def test_mwu_invariants_on_every_step(name):
    eps = 0.02
    agent = make_agent(ENV, name, eps=eps)
    env = gym.make(ENV, horizon=6000, action_mode="sub_simplex").unwrapped
    obs, _ = env.reset(seed=11)
    agent.reset(env.problem)
    n = env.problem.n_users
    loads_so_far = np.zeros(n)
    for _ in range(6000):
        h = agent.act(obs)
        assert abs(h.sum() - 1) < 1e-12 and h.min() >= eps / n - 1e-15  # h_t ∈ Δ_ε
        load = env.next_load.copy()
        obs, _, _, _, info = env.step(h)
        loads_so_far += load
        active = info["active"]
        np.testing.assert_allclose(info["work"][active], info["alloc"][active], rtol=0, atol=1e-15)  # (I3)
        np.testing.assert_allclose(info["cum_work"], loads_so_far - info["queue"], atol=1e-9 * env.simulator.t)  # (I1)


def _lemma_cases(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(2, 7))
        eps = float(rng.uniform(0.005, 0.1))
        eta = float(rng.uniform(0.01, 1 / 3))
        beta = rng.dirichlet(np.ones(n))
        h = kl_project(rng.lognormal(0, 1.5, size=n), eps)
        active = rng.random(n) < 0.6
        yield n, eps, eta, beta, h, active


def _step(name: str, eps: float, eta: float, beta: np.ndarray, h: np.ndarray, active: np.ndarray) -> np.ndarray:
    agent = make_agent(ENV, name, eps=eps, eta=eta)
    n = beta.size
    agent.reset(SLAProblem(n, tuple(beta), 10))
    agent.memory[:] = h
    return agent.act(np.concatenate([active, h, beta]).astype(np.float32))


@pytest.mark.filterwarnings("ignore:.*below 2ε/N")
def test_lemmas_1_2_3_hold_on_random_steps():
    violations = {"lemma1a": 0, "lemma1b": 0, "lemma2": 0, "lemma3": 0}
    checked = dict.fromkeys(violations, 0)
    tol = 1e-12
    for n, eps, eta, beta, h, active in _lemma_cases(50_000, seed=0):  # 10⁵ steps over both algorithms
        c = eps * eta / (4 * n)
        lam = eps**2 / (8 * n)
        c_prime = eps * eta * lam / (2 * n)
        for name in ("mwu", "mwu_extended"):
            h_next = _step(name, eps, eta, beta, h, active)
            if name == "mwu":
                below = active & (h < beta)
            else:
                total = beta[active].sum()
                below = active & (h < (1 - eps) * beta / total) if total > 0 else np.zeros(n, bool)
            above = active & ~below
            if h[active].sum() <= 1 - eps:  # Lemma 1 (a), both algorithms [L258, L345]
                checked["lemma1a"] += 1
                violations["lemma1a"] += bool((h_next[active] < h[active] * (1 + c) * (1 - tol)).any())
            checked["lemma1b"] += 1
            violations["lemma1b"] += bool((h_next[below] < h[below] * (1 - tol)).any())
            violations["lemma1b"] += bool((h_next[above] < h[above] * (1 - eps * c) * (1 - tol)).any())
            if name == "mwu" and (beta >= 2 * eps / n).all() and below.any():  # Lemma 2
                checked["lemma2"] += 1
                violations["lemma2"] += bool((h_next[below] < h[below] * (1 + c_prime) * (1 - tol)).any())
            threshold = math.exp(eta * (1 + lam)) * eps / ((1 - eps) * n)
            if name == "mwu_extended" and (beta >= threshold).all() and h[active].sum() > 1 - eps and below.any():
                checked["lemma3"] += 1
                violations["lemma3"] += bool((h_next[below] < h[below] * (1 + c_prime) * (1 - tol)).any())
    assert all(count > 500 for count in checked.values()), checked
    assert violations == dict.fromkeys(violations, 0), (violations, checked)


def test_example_1_1_static_is_five_sixths_and_opt_is_t():
    horizon = 3000
    static = rollout(ENV, "static", 0, env_kwargs={"preset": "example_1_1", "horizon": horizon})
    assert static.metrics["total_work"] == pytest.approx(5 * horizon / 6, abs=1e-6)
    assert static.metrics["opt_total_work"] == pytest.approx(horizon, abs=1e-9)
    pg = rollout(ENV, "pg", 0, env_kwargs={"preset": "example_1_1", "horizon": horizon})
    assert pg.metrics["total_work"] == pytest.approx(horizon, abs=1e-6)
    for name in ("proportional", "owm"):  # [our-sim]: one unit behind OPT (the first step's uniform share)
        episode = rollout(ENV, name, 0, env_kwargs={"preset": "example_1_1", "horizon": horizon})
        assert episode.metrics["total_work"] == pytest.approx(horizon - 1, abs=1e-6)


@pytest.mark.parametrize(
    ("name", "expected", "by"),
    [
        ("mwu", (0.1 / 3, 0.8 - 0.1 / 3, 0.2), 15_001),  # the paper's limit (ε/3, 0.8 - ε/3, 0.2) [L319]
        (
            "mwu_extended",
            (0.1 / 3, 1 - 0.1 / 3 - 0.9 * 0.4, 0.9 * 0.4),
            30_001,
        ),  # h(3) = (1-ε)β(3)/(β(2)+β(3))
    ],
)
def test_sec_3_4_limits(name, expected, by):
    agent = make_agent(ENV, name, eps=0.1)
    env = gym.make(ENV, preset="proportionality_3_4").unwrapped
    obs, _ = env.reset(seed=0)
    agent.reset(env.problem)
    for _ in range(by):
        h = agent.act(obs)
        obs, *_ = env.step(h)
    np.testing.assert_allclose(h, expected, atol=1e-3)


@pytest.mark.parametrize("name", agent_names(ENV))
def test_runner_equals_env_stepping(name):
    kwargs = {"horizon": 10_002}
    agent = make_agent(ENV, name)
    episode = rollout(ENV, agent, seed=2, env_kwargs=kwargs, record=())
    env = ClusterSLAEnv(**kwargs, **agent.env_kwargs)
    env.reset(seed=2)
    agent.reset(env if agent.privileged else env.problem, seed=2)
    trajectory = simulate(agent, env, record_every=5000)
    assert trajectory.summary["total_work"] == pytest.approx(episode.metrics["total_work"], rel=1e-9)
    for key in ("max_sla_deficit", "final_queue_l2", "regret"):
        assert trajectory.summary[key] == pytest.approx(episode.metrics[key], rel=1e-9, abs=1e-9)


class _ActOnly:
    """``agent`` without its compiled kernel, so that :func:`simulate` takes its Python loop."""

    def __init__(self, agent):
        self.agent, self.privileged = agent, agent.privileged

    def act(self, observation):
        return self.agent.act(observation)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("name", agent_names(ENV))
def test_runner_trajectory_equals_the_envs_infos_step_by_step(name, compiled):
    """With ``record_every=1`` every recorded row is the env's info of that step, for the same agent and seed:
    w_t, Q_{t+1}, D_t, W_t, ‖Q_{t+1}‖₂, OPT_1(t), each user's max_t D_t (D_0 = 0) and the episode summary."""
    horizon, seed = 300, 3
    stepped, simulated = make_agent(ENV, name), make_agent(ENV, name)
    env = ClusterSLAEnv(horizon=horizon, **stepped.env_kwargs)
    obs, _ = env.reset(seed=seed)
    stepped.reset(env if stepped.privileged else env.problem, seed=seed)
    infos = []
    for _ in range(horizon):
        obs, _, _, _, info = env.step(stepped.act(obs))
        infos.append(info)
    runner_env = ClusterSLAEnv(horizon=horizon, **simulated.env_kwargs)
    runner_env.reset(seed=seed)
    simulated.reset(runner_env if simulated.privileged else runner_env.problem, seed=seed)
    trajectory = simulate(simulated if compiled else _ActOnly(simulated), runner_env, record_every=1)
    np.testing.assert_array_equal(trajectory.times, np.arange(1, horizon + 1))
    close = {"rtol": 1e-9, "atol": 1e-9}
    for field, key in [("work", "work"), ("queue", "queue"), ("deficit", "sla_deficit"), ("cum_work", "cum_work"),
                       ("queue_l2", "queue_l2"), ("opt_cum_work", "opt_cum_work")]:  # fmt: skip
        np.testing.assert_allclose(getattr(trajectory, field), [i[key] for i in infos], **close, err_msg=field)
    deficits = np.array([i["sla_deficit"] for i in infos])
    np.testing.assert_allclose(trajectory.max_deficit, np.maximum(deficits.max(axis=0), 0.0), **close)
    summary = infos[-1]["episode_summary"]
    assert trajectory.summary.keys() == summary.keys()
    for key, value in summary.items():
        assert trajectory.summary[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key


def test_pg_attains_the_optimum_at_every_step_and_rest_pg_the_restricted_one():
    pg = rollout(ENV, "pg", 4, env_kwargs={"horizon": 600}, record=("regret",))
    assert np.abs(pg.trace["regret"]).max() < 1e-8
    rest = rollout(ENV, "rest_pg", 4, env_kwargs={"horizon": 600, "eps_ref": 0.05}, agent_kwargs={"eps": 0.05})
    assert rest.metrics["total_work"] == pytest.approx(rest.metrics["opt_eps_total_work"], abs=1e-8)


@pytest.mark.parametrize(
    ("name", "kwargs", "argument"),
    [
        ("mwu", {"eps": 0.0}, "eps"),
        ("mwu", {"eps": 0.5}, "eps"),
        ("mwu_extended", {"eta": 0.5}, "eta"),
        ("mwu", {"initial": "random"}, "initial"),
        ("mwu", {"lambda_override": -1.0}, "lambda_override"),
        ("rest_pg", {"eps": 1.5}, "eps"),
        ("owm", {"idle": "sometimes"}, "idle"),
    ],
)
def test_bad_hyperparameters_are_rejected(name, kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        make_agent(ENV, name, **kwargs)


def test_unknown_agent_name_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="mwu_extended"):
        make_agent(ENV, "mwu3")


def test_small_sla_share_warns_about_theorem_1():
    agent = make_agent(ENV, "mwu", eps=0.1)
    with pytest.warns(UserWarning, match="2ε/N"):
        agent.reset(SLAProblem(3, (0.01, 0.49, 0.5), 10))


def test_owm_serves_one_batch_at_a_time():
    agent = make_agent(ENV, "owm")
    agent.reset(SLAProblem(3, (0.2, 0.3, 0.5), 10))
    obs = lambda active: np.array([*active, 0, 0, 0, 0.2, 0.3, 0.5], dtype=np.float32)  # noqa: E731
    np.testing.assert_allclose(agent.act(obs([1, 0, 0])), [1, 0, 0])
    np.testing.assert_allclose(agent.act(obs([1, 1, 0])), [1, 0, 0])  # user 2 waits in B
    np.testing.assert_allclose(agent.act(obs([0, 1, 1])), [0, 0.5, 0.5])  # A emptied: B (2 and 3) admitted
    np.testing.assert_allclose(agent.act(obs([0, 0, 0])), [1 / 3] * 3)


def test_proportional_online_corrected_algorithm_4():
    agent = make_agent(ENV, "proportional")
    agent.reset(SLAProblem(3, (0.2, 0.3, 0.5), 10))
    np.testing.assert_allclose(agent.act(np.array([0, 1, 1, 0, 0, 0, 0, 0, 0], np.float32)), [0, 0.375, 0.625])
    np.testing.assert_allclose(agent.act(np.zeros(9, np.float32)), [0.2, 0.3, 0.5])


def test_proportional_online_stays_in_the_box_when_a_share_exceeds_one():
    """β if none is active, scaled by 1/max β when a share exceeds 1 (the Box(0, 1)): the same direction."""
    agent = make_agent(ENV, "proportional")
    agent.reset(SLAProblem(3, (2.0, 0.5, 0.0), 10))
    np.testing.assert_allclose(agent.act(np.zeros(9, np.float32)), [1.0, 0.25, 0.0])
    np.testing.assert_allclose(agent.act(np.array([1, 1, 0, 0, 0, 0, 0, 0, 0], np.float32)), [0.8, 0.2, 0.0])


# -- simulate() on a gym.make env (audit 12) --------------------------------------------------------


def test_simulate_accepts_a_wrapped_env_as_on_its_env_page():
    """The env page's simulate() lines (short horizon) run on gym.make's wrapped env, as on the unwrapped env."""
    results = []
    for make in (lambda **kw: gym.make(ENV, **kw), ClusterSLAEnv):
        agent = make_agent(ENV, "static")
        env = make(horizon=3000, **agent.env_kwargs)
        env.reset(seed=1)
        agent.reset(env.unwrapped.problem, seed=1)
        results.append(simulate(agent, env).summary)
    assert results[0] == results[1] and results[0]["total_work"] > 0


def test_simulate_refuses_an_env_of_another_id():
    env = gym.make("ClusterBilinear-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="env must be a ClusterSLA-v1 env"):
        simulate(make_agent(ENV, "mwu"), env)
