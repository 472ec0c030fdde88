"""How an RL row is scored (rliable's convention): a run is a training seed, scored by its mean over the evaluation
seeds every agent plays; the RL row's statistics run over its runs, the reference agents' over evaluation seeds; the
aggregate over envs and the sanity flags read the same units. Built from synthetic episodes: no training."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from baselines import benchmark as bench
from baselines.eval import sanity
from baselines.eval.compare import Comparison
from baselines.eval.harness import Episode
from baselines.eval.protocol import SETTINGS
from baselines.eval.stats import improvement_indicator, interval_over, mean_interval, normalized_score

ENV = "ClusterMultiServer-v0"  # regret, lower is better; paper esdp_aa, naive random, clairvoyant oracle
SEEDS = [0, 1, 2, 3]
REFERENCE = {"esdp_aa": [40.0, 45.0, 35.0, 42.0], "random": [100.0, 104.0, 96.0, 102.0], "oracle": [0.0, 1, 0, 1]}


def comparison(env_id: str, rl: dict[str, np.ndarray], reference=REFERENCE) -> Comparison:
    """Reference agents with one regret per evaluation seed, RL agents with a (training seeds, evaluation seeds)
    array of regrets (training seeds 0, 1, ...)."""
    setting = SETTINGS[env_id]

    def episode(agent, seed, value, training_seed=None):
        return Episode(env_id, agent, seed, {m: value if m == "regret" else 0.0 for m in setting.metrics}, {},
                       training_seed)  # fmt: skip

    episodes = [episode(a, s, v) for a, values in reference.items() for s, v in zip(SEEDS, values, strict=True)]
    episodes += [
        episode(a, s, v, t) for a, x in rl.items() for t, row in enumerate(x) for s, v in zip(SEEDS, row, strict=True)
    ]
    runs = {a: {"requested": len(x), "runs": [{"training_seed": t} for t in range(len(x))]} for a, x in rl.items()}
    return Comparison(env_id, SEEDS, [*reference, *rl], episodes, setting, privileged={"oracle"}, rl_runs=runs)


PPO = np.array([[30.0, 38.0, 33.0, 36.0], [60.0, 62.0, 55.0, 58.0], [20.0, 25.0, 21.0, 24.0]])  # 3 training seeds


def test_an_rl_rows_statistics_run_over_its_training_seeds():
    c = comparison(ENV, {"ppo": PPO})
    np.testing.assert_array_equal(c.matrix("ppo", "regret"), PPO)
    runs = PPO.mean(axis=1)  # a run's score: its mean over the evaluation seeds
    row = next(r for r in c.summary() if r["agent"] == "ppo" and r["metric"] == "regret")
    assert row["runs"] == 3 and row["n"] == len(SEEDS) and row["mean"] == pytest.approx(PPO.mean())
    assert (row["ci_low"], row["ci_high"]) == mean_interval(PPO)  # two-level: training seeds × evaluation seeds
    paper = np.array(REFERENCE["esdp_aa"])
    assert (row["diff_low"], row["diff_high"]) == mean_interval(PPO - paper)  # paired within each run
    assert row["p_improve"] == pytest.approx(improvement_indicator(PPO - paper, -1).mean())
    naive, top = np.array(REFERENCE["random"]), np.array(REFERENCE["oracle"])
    np.testing.assert_allclose(c.normalized_scores("ppo"), (runs - naive.mean()) / (top.mean() - naive.mean()))
    score = c.normalized("ppo")
    assert score["mean"] == pytest.approx((PPO.mean() - naive.mean()) / (top.mean() - naive.mean()))
    assert (score["ci_low"], score["ci_high"]) == (normalized_score(PPO, naive, top)["ci_low"],
                                                   normalized_score(PPO, naive, top)["ci_high"])  # fmt: skip
    assert (
        score["interval"]
        == interval_over(len(SEEDS), 3)
        == ("95% two-level bootstrap over 3 training seeds × 4 evaluation seeds")
    )
    reference = next(r for r in c.summary() if r["agent"] == "random" and r["metric"] == "regret")
    assert reference["n"] == len(SEEDS) and reference["runs"] == 1  # the reference agents' over evaluation seeds


def test_identical_results_are_flagged_per_training_seed_and_evaluation_seed():
    twin = {"ppo": PPO, "a2c": PPO.copy()}
    assert "identical:ppo=a2c" in [f.key for f in sanity.flags(comparison(ENV, twin))]
    # one run equal to a reference agent's seeds is that agent's result; a second, different run is not
    one = np.array([REFERENCE["esdp_aa"]])
    assert "identical:esdp_aa=ppo" in [f.key for f in sanity.flags(comparison(ENV, {"ppo": one}))]
    two = np.vstack([one, one + 1])
    assert not [f for f in sanity.flags(comparison(ENV, {"ppo": two})) if f.key.startswith("identical")]


HEURISTIC = {"lcf": [70.0, 75.0, 60.0, 80.0]}


def two_envs(tmp_path, gang_reading: str = "as printed") -> dict[str, bench.EnvResult]:
    """MultiServer's PPO has 3 runs and Gang's MaskablePPO 1 (e.g. --quick with one shipped seed)."""
    gang = {"esdp_gang": REFERENCE["esdp_aa"], "random": REFERENCE["random"], "oracle": REFERENCE["oracle"]}
    gang_comparison = comparison("ClusterGang-v0", {"ppo_mask": PPO[1:2]}, {**gang, **HEURISTIC})
    gang_comparison.setting = dataclasses.replace(gang_comparison.setting, paper_reading=gang_reading)
    return {
        ENV: bench.EnvResult(comparison(ENV, {"ppo": PPO}, {**REFERENCE, **HEURISTIC}), tmp_path / "a.md", 1.0),
        "ClusterGang-v0": bench.EnvResult(gang_comparison, tmp_path, 1.0),
    }


def test_the_aggregate_takes_as_many_runs_from_every_env(tmp_path):
    """The PPO role's (runs, envs) matrix has 1 row, each env's first run; the reference roles keep every
    evaluation seed, each scored against its own seed's anchors (paired)."""
    results = two_envs(tmp_path)
    envs = [ENV, "ClusterGang-v0"]
    scores = bench.role_scores(results, envs)
    assert scores["ppo"].shape == (1, 2)
    first = [results[e].comparison.normalized_scores(a)[0] for e, a in zip(envs, ("ppo", "ppo_mask"), strict=True)]
    np.testing.assert_allclose(scores["ppo"][0], first)
    assert scores["paper"].shape == (len(SEEDS), 2)
    naive, top = np.array(REFERENCE["random"]), np.array(REFERENCE["oracle"])
    np.testing.assert_allclose(scores["paper"][:, 0], (np.array(REFERENCE["esdp_aa"]) - naive) / (top - naive))
    aggregate = bench.aggregate_roles(results)
    assert aggregate["envs"] == envs and aggregate["left_out"] == {}
    assert aggregate["roles"]["ppo"]["runs"] == 1 and aggregate["roles"]["paper"]["runs"] == len(SEEDS)
    assert {(p["x"], p["y"]) for p in aggregate["improvement"]} == set(bench.IMPROVEMENT_PAIRS)
    for p in aggregate["improvement"]:
        assert 0 <= p["ci_low"] <= p["p"] <= p["ci_high"] <= 1


def test_every_role_is_aggregated_over_the_same_envs_and_an_ours_row_leaves_its_env_out(tmp_path):
    """Gang's paper's-algorithm row is ours, after the paper: it may not enter the paper's aggregate, and since
    every role runs over the same envs, Gang leaves every role's aggregate, with the reason in the table."""
    results = two_envs(tmp_path, gang_reading="ours, after the paper")
    aggregate = bench.aggregate_roles(results)
    assert aggregate["envs"] == [ENV]
    assert aggregate["left_out"] == {"ClusterGang-v0": "its paper's-algorithm row `esdp_gang` is ours, after the paper"}
    assert {tuple(a["envs"]) for a in aggregate["roles"].values()} == {(ENV,)}
    text = "\n".join(bench.aggregate_markdown(aggregate))
    assert "Left out: ClusterGang-v0: its paper's-algorithm row `esdp_gang` is ours, after the paper." in text
    assert f"| PPO | {ENV} (`ppo`) |" in text
    del results[ENV].comparison.rl_runs["ppo"]  # no PPO row: no env has every role, so no aggregate at all
    results[ENV].comparison.agents.remove("ppo")
    assert bench.aggregate_envs(results)[1][ENV].startswith("no PPO row on held-out instances")
    assert bench.aggregate_roles(results)["roles"] == {}


def test_rl_seeds_is_a_positive_integer():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="rl_seeds must be a positive integer"):
            dataclasses.replace(SETTINGS[ENV], rl_seeds=bad)
