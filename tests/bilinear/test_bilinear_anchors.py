"""The benchmark's anchors on ClusterBilinear-v0: the clairvoyant matching serves every waiting job it can,
each on a best server by the true r, and so holds no backlog; the random matching is work-conserving too."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from scipy.optimize import linear_sum_assignment

import cluster_envs  # noqa: F401
from agents.registry import make_agent
from baselines.eval.harness import rollout
from baselines.eval.protocol import require_setting

ENV_ID = "ClusterBilinear-v0"
EXCLUSIVE = {"service_model": "exclusive", "horizon": 120}


def test_clairvoyant_assignment_is_a_maximum_weight_matching_on_the_true_rewards():
    agent = make_agent(ENV_ID, "clairvoyant")
    env = gym.make(ENV_ID, **EXCLUSIVE, **agent.env_kwargs)
    obs, _ = env.reset(seed=4)
    agent.reset(env.unwrapped, seed=4)
    problem, r = env.unwrapped.problem, env.unwrapped.true_mean_rewards
    server_class = np.repeat(np.arange(problem.n_server_classes), problem.servers_per_class)
    idle = problem.n_job_classes
    for _ in range(60):
        queues = problem.split(obs)["queues"].astype(int)
        choice = agent.act(obs)
        served = choice != idle
        assert served.sum() == min(queues.sum(), problem.n_servers)  # work-conserving (r > 0 here)
        assert (np.bincount(choice[served], minlength=idle) <= queues).all()
        jobs = np.repeat(np.arange(idle), np.minimum(queues, problem.n_servers))
        weight = r[jobs][:, server_class].T
        rows, cols = linear_sum_assignment(weight, maximize=True)
        assert np.isclose(r[choice[served], server_class[served]].sum(), weight[rows, cols].sum())
        obs, *_ = env.step(choice)


def test_the_anchors_order_the_regret_as_the_protocol_needs():
    """On the benchmark's headline regret: clairvoyant ≈ 0 (it matches r* up to noise in the arrivals), below SABR
    and the random matching."""
    headline = require_setting(ENV_ID).headline
    regret = {
        name: np.mean(
            [rollout(ENV_ID, name, seed, env_kwargs=EXCLUSIVE, record=()).metrics[headline] for seed in range(3)]
        )  # fmt: skip
        for name in ("clairvoyant", "random", "sabr")
    }
    assert regret["clairvoyant"] < min(regret["random"], regret["sabr"])
    assert abs(regret["clairvoyant"]) < 0.1 * regret["random"]
