"""ClusterGang-v0: repair yields (G1)–(G4), raise names the constraint, MILP oracle, ESDP-gang exact."""

from __future__ import annotations

import itertools
import math

import gymnasium as gym
import numpy as np
import pytest

import agents
import cluster_envs  # noqa: F401
from cluster_envs.multiserver.gang import gang_violation

ENV_ID = "ClusterGang-v0"


def _feasible_sets(inst, arrivals):
    sets = np.array(list(itertools.product([0, 1], repeat=inst.n_edges)), dtype=np.int8)
    return sets[[gang_violation(x, inst, arrivals) is None for x in sets]]


@pytest.mark.parametrize("action_mode", ["binary", "scores"])
def test_repair_always_yields_a_feasible_placement(action_mode):
    env = gym.make(ENV_ID, action_mode=action_mode).unwrapped
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(300):
        arrivals = env.simulator.arrivals.copy()
        *_, info = env.step(env.action_space.sample())
        assert gang_violation(info["x"], env.instance, arrivals) is None
        assert info["slot_regret"] >= -1e-9


def test_all_or_nothing_rolls_back_a_partial_job():
    env = gym.make(ENV_ID, preset="tiny").unwrapped  # every server fits exactly one task (req 2, cap 2)
    inst = env.instance
    obs, _ = env.reset(seed=0)
    while not obs["arrivals"].all():
        obs, *_ = env.step(np.zeros(inst.n_edges, np.int8))
    # both jobs want servers 0 and 1 only: the first port is placed, the second cannot place 2 tasks
    want = np.isin(inst.arms[:, 2], [0, 1]).astype(np.int8)
    *_, info = env.step(want)
    placed = np.bincount(inst.arms[info["x"] == 1, 0], minlength=2)
    assert placed.tolist() == [2, 0]


def test_raise_mode_names_each_gang_constraint():
    env = gym.make(ENV_ID, preset="tiny", invalid_action="raise").unwrapped
    inst = env.instance
    obs, _ = env.reset(seed=0)
    while not obs["arrivals"].all():
        obs, *_ = env.step(np.zeros(inst.n_edges, np.int8))
    cases = {
        "single placement": [0, 1],  # task 0 on servers 0 and 1
        "all-or-nothing": [0],  # one of the two tasks of port 0
        "per-server capacity": [0, 3],  # tasks 0 and 1 both on server 0
    }
    for match, arms in cases.items():
        with pytest.raises(ValueError, match=match):
            env.step(np.isin(np.arange(inst.n_edges), arms).astype(np.int8))


def test_gang_oracle_is_optimal_by_enumeration():
    env = gym.make(ENV_ID, preset="tiny").unwrapped
    inst = env.instance
    for arrivals in itertools.product([0, 1], repeat=inst.n_ports):
        arrivals = np.array(arrivals)
        x, value = env.oracle(arrivals)
        assert gang_violation(x, inst, arrivals) is None
        assert value == pytest.approx((_feasible_sets(inst, arrivals) @ inst.v_tilde).max())


def test_esdp_gang_budget_skipping_equals_the_full_budget_sweep():
    env = gym.make(ENV_ID, preset="tiny").unwrapped
    obs, _ = env.reset(seed=1)
    problem = env.problem
    obs["arrivals"][:] = 1
    obs["edge_mask"][:] = 1
    sets = _feasible_sets(env.instance, np.ones(problem.n_ports))
    rng = np.random.default_rng(0)
    for _ in range(4):
        agent = agents.make_agent(ENV_ID, "esdp_gang")
        agent.reset(problem)
        agent.n = rng.integers(0, 30, size=problem.n_edges)
        agent.sums = rng.random(problem.n_edges) * agent.n
        x = agent.act(obs)  # the agent's t becomes 1 and last_action is zero, so n and sums stay
        xi, g = agent.schedule(agent.t)
        upsilon, sigma2, _ = agent.integer_weights(xi, g)
        best = (-math.inf, None)
        for s in range(xi * agent.m + 1):
            ok = sets @ upsilon >= s
            if not ok.any():
                break
            score = s + math.sqrt((sets[ok] @ sigma2).max())
            if score >= best[0]:
                best = (score, s)
        s_star = best[1]
        assert x @ upsilon >= s_star
        assert x @ sigma2 == (sets[sets @ upsilon >= s_star] @ sigma2).max()


def test_gang_agents_are_feasible_in_raise_mode():
    for name in agents.agent_names(ENV_ID):
        env = gym.make(ENV_ID, preset="tiny", horizon=25, invalid_action="raise")
        agent = agents.make_agent(ENV_ID, name)
        obs, _ = env.reset(seed=2)
        agent.reset(env.unwrapped if agent.privileged else env.unwrapped.problem, seed=2)
        for _ in range(25):
            obs, _, _, truncated, info = env.step(agent.act(obs))
        assert truncated and "episode_summary" in info


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"tasks_low": 3, "tasks_high": 2}, "tasks_low"),
        ({"min_tasks": "most"}, "min_tasks"),
        ({"edge_prob": 0}, "edge_prob"),
    ],
)
def test_bad_gang_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make(ENV_ID, **kwargs)


def test_esdp_gang_estimates_converge_to_the_true_means():
    """ESDP-gang learns from the semi-bandit feedback (``last_utility`` per arm): after 100 slots its v̂ is within
    5 standard errors of ṽ on every arm it played at least 20 times (a feedback-blind learner's is not)."""
    env = gym.make(ENV_ID, preset="tiny", instance_seed=2, arrival_prob=1.0, horizon=100, info_level="minimal")
    inst = env.unwrapped.instance
    agent = agents.make_agent(ENV_ID, "esdp_gang")
    obs, _ = env.reset(seed=0)
    agent.reset(env.unwrapped.problem, seed=0)
    for _ in range(100):
        obs, *_ = env.step(agent.act(obs))
    agent.observe(obs)
    often = agent.n >= 20
    assert often.sum() >= 3
    sd = inst.utility.sigma / inst.utility.width  # Z̃'s sd is at most σ/w (clipping only shrinks it)
    err = np.abs(agent.v_hat - inst.v_tilde)[often]
    assert (err <= 5 * sd[often] / np.sqrt(agent.n[often])).all(), err
