"""The harness core: rollout and evaluate are deterministic, agree with each other, and reject bad input; its layers
(start, play with its hook, simulate) are the one episode loop, and every caller follows its env-kwargs rule."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents import make_agent
from baselines.eval import harness
from baselines.eval.harness import evaluate, rollout
from baselines.perf import steps as bench
from baselines.reproduce import approx, bilinear, multiserver, sla

ENV = "ClusterSLA-v1"
SMALL = {"preset": "example_1_1", "horizon": 300}


def test_rollout_is_deterministic_for_a_seed():
    a = rollout(ENV, "mwu_extended", seed=3, env_kwargs={"horizon": 600})
    b = rollout(ENV, make_agent(ENV, "mwu_extended"), seed=3, env_kwargs={"horizon": 600})
    assert a.metrics == b.metrics
    for key in a.trace:
        np.testing.assert_array_equal(a.trace[key], b.trace[key])


def test_rollout_metrics_and_trace_agree():
    episode = rollout(ENV, "owm", seed=0, env_kwargs={"horizon": 600})
    assert episode.metrics["steps"] == 600
    assert len(episode.trace["regret"]) == 600
    assert episode.trace["regret"][-1] == pytest.approx(episode.metrics["regret"])
    assert episode.trace["total_work"].sum() == pytest.approx(episode.metrics["total_work"])
    for key in (
        "total_work",
        "opt_total_work",
        "regret",
        "max_sla_deficit",
        "final_queue_l2",
        "mean_queue_l2",
    ):
        assert np.isfinite(episode.metrics[key])


def test_evaluate_aggregates_the_rollouts():
    table = evaluate(ENV, ["mwu_extended", "static"], seeds=[0, 1, 2], env_kwargs={"horizon": 600})
    direct = [rollout(ENV, "static", s, env_kwargs={"horizon": 600}).metrics["regret"] for s in (0, 1, 2)]
    row = next(r for r in table.rows(["regret"]) if r["agent"] == "static")
    assert row["n"] == 3
    assert row["mean"] == pytest.approx(np.mean(direct))
    assert row["std"] == pytest.approx(np.std(direct, ddof=1))
    assert row["min"] == pytest.approx(min(direct)) and row["max"] == pytest.approx(max(direct))
    markdown = table.to_markdown(["regret"])
    assert "| static | regret | 3 |" in markdown
    assert json.loads(table.to_json())["env_id"] == ENV


def test_agent_env_requirements_are_merged_and_conflicts_rejected():
    episode = rollout(ENV, "rest_pg", seed=0, env_kwargs=SMALL)  # needs action_mode="sub_simplex"
    assert episode.metrics["total_work"] <= episode.metrics["opt_eps_total_work"] + 1e-9
    with pytest.raises(ValueError, match="action_mode"):
        rollout(ENV, "rest_pg", seed=0, env_kwargs={**SMALL, "action_mode": "normalize"})


def test_bad_names_fail_before_any_episode():
    with pytest.raises(ValueError, match="not an agent"):
        evaluate(ENV, ["mwu", "nope"], seeds=[0])
    with pytest.raises(ValueError, match="env_id"):
        evaluate("ClusterNope-v0", ["mwu"], seeds=[0])
    with pytest.raises(ValueError, match="agent_kwargs"):
        evaluate(ENV, ["mwu"], seeds=[0], agent_kwargs={"owm": {}})


class _Recorder:
    """Passes an agent through, keeping what its reset got and every observation it acted on."""

    def __init__(self, agent):
        self.agent, self.name, self.privileged = agent, agent.name, agent.privileged
        self.env_kwargs, self.observations = agent.env_kwargs, []

    def reset(self, problem, seed=None):
        self.seen_at_reset = problem
        self.agent.reset(problem, seed)

    def act(self, observation):
        self.observations.append(observation)
        return self.agent.act(observation)


@pytest.mark.parametrize("name", ["owm", "pg"])  # online, then an offline oracle (privileged)
def test_start_shows_an_agent_only_what_it_may_see(name):
    agent = _Recorder(make_agent(ENV, name))
    env, started, _ = harness.start(ENV, agent, 0, env_kwargs=SMALL)
    assert started is agent
    assert agent.seen_at_reset is (env.unwrapped if agent.privileged else env.unwrapped.problem)


def test_play_calls_the_hook_once_per_step_with_what_the_agent_acted_on():
    agent = _Recorder(make_agent(ENV, "owm"))
    env, agent, observation = harness.start(ENV, agent, 2, env_kwargs=SMALL)
    steps = []
    end = harness.play(env, agent, observation, on_step=steps.append)
    assert [s.t for s in steps] == list(range(end.steps)) and end.steps == SMALL["horizon"]
    assert [s.done for s in steps] == [False] * (end.steps - 1) + [True]
    assert all(s.observation is o for s, o in zip(steps, agent.observations, strict=True))
    assert sum(s.reward for s in steps) == pytest.approx(end.total_reward)
    assert end.info is steps[-1].info and "episode_summary" in end.info
    assert all(s.act_seconds >= 0 for s in steps) and end.seconds >= sum(s.act_seconds for s in steps)
    reference = rollout(ENV, "owm", 2, env_kwargs=SMALL)
    assert reference.metrics["return"] == end.total_reward


@pytest.mark.parametrize("name", ["owm", "mwu_extended", "rest_pg"])  # compiled kernels; rest_pg is privileged
def test_simulate_gives_the_episode_summary_of_rollout(name):
    trajectory, seconds = harness.simulate(ENV, name, 1, env_kwargs=SMALL, record_every=1)
    stepped = rollout(ENV, name, 1, env_kwargs=SMALL, record=("regret",))
    assert seconds > 0 and trajectory.times.size == SMALL["horizon"]
    for key, value in trajectory.summary.items():
        assert stepped.metrics[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key
    with pytest.raises(ValueError, match="long-horizon runner"):
        harness.simulate("ClusterBilinear-v0", "sabr", 0)


# Every caller that runs episodes, given an env kwarg that contradicts what its agent needs (the harness rule:
# a ValueError naming the key), and the same call with the agent's own value (accepted).
CALLERS = {
    "harness.rollout": lambda value: rollout(ENV, "rest_pg", 0, env_kwargs={**SMALL, "action_mode": value}),
    "harness.simulate": lambda value: harness.simulate(ENV, "rest_pg", 0, env_kwargs={**SMALL, "action_mode": value}),
    "reproduce.approx": lambda value: approx.run_one(
        (("k",), "ClusterApprox-v1", "opm_gc", {}, {"horizon": 20, "capacity": value}, 0)
    ),
    "reproduce.bilinear": lambda value: bilinear.run_episode("sabr", 0, horizon=20, env_kwargs={"action_mode": value}),
    "reproduce.multiserver": lambda value: multiserver.run_one(
        "hauf", 0, {"preset": "tiny", "horizon": 20, "invalid_action": value}, {}
    ),
    "reproduce.sla": lambda value: sla.run_policy("rest_pg", 0, 0.01, {**SMALL, "action_mode": value}, 10),
}
CONFLICTS = {
    "harness.rollout": ("action_mode", "normalize", "sub_simplex"),
    "harness.simulate": ("action_mode", "normalize", "sub_simplex"),
    "reproduce.approx": ("capacity", 1, 2),
    "reproduce.bilinear": ("action_mode", "server_choice", "allocation"),
    "reproduce.multiserver": ("invalid_action", "repair", "raise"),
    "reproduce.sla": ("action_mode", "normalize", "sub_simplex"),
}


@pytest.mark.parametrize("caller", CALLERS)
def test_every_caller_rejects_env_kwargs_that_contradict_the_agent_and_accepts_equal_ones(caller):
    key, conflicting, needed = CONFLICTS[caller]
    with pytest.raises(ValueError, match=f"env_kwargs\\[{key!r}\\]={conflicting!r} conflicts"):
        CALLERS[caller](conflicting)
    CALLERS[caller](needed)


def test_the_bench_times_the_long_horizon_runner_through_the_harness(monkeypatch):
    calls = []
    monkeypatch.setattr(harness, "simulate", lambda *args, **kwargs: calls.append((args, kwargs)))
    seconds = bench.bench_sla_long_horizon(horizon=100, policies=("owm", "pg"))
    assert list(seconds) == ["owm", "pg"] and [args[1] for args, _ in calls] == ["owm", "pg"]
    assert all(kwargs["env_kwargs"]["horizon"] == 100 for _, kwargs in calls)


def test_a_batch_is_refused_to_an_agent_that_cannot_play_one():
    """``evaluate(..., batched=True)`` plays the native batched env; a reference agent acts on one observation."""
    with pytest.raises(ValueError, match="agent 'mwu' cannot play a batch.*batched=False"):
        evaluate(ENV, ["mwu"], [0, 1], env_kwargs=SMALL, batched=True)
