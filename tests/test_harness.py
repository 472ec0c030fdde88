"""The harness core: rollout and evaluate are deterministic, agree with each other, and reject bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents import make_agent
from baselines.harness import evaluate, rollout

ENV = "ClusterSLA-v0"
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
