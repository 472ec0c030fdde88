"""compare: the report's numbers are the rollouts' numbers; the statistics behave as statistics should."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from baselines.eval import protocol as settings
from baselines.eval.backends import Task, run_tasks
from baselines.eval.compare import compare
from baselines.eval.harness import rollout
from baselines.eval.report import markdown, to_json, write_report
from baselines.eval.stats import aggregate_iqm, bootstrap_ci, improvement_indicator, iqm, normalized

ENV = "ClusterSLA-v0"
SMALL = {"horizon": 240}


@pytest.fixture(scope="module")
def two_seeds():
    return compare(ENV, "owm", seeds=[3, 7], env_kwargs=SMALL, progress=False)


def test_compare_runs_the_reference_points_and_the_chosen_agents(two_seeds):
    setting = settings.SETTINGS[ENV]
    assert two_seeds.agents == [setting.paper_agent, setting.naive_agent, setting.oracle_agent, "owm"]
    assert two_seeds.privileged == {"pg"}


def test_report_numbers_equal_direct_rollouts(two_seeds, tmp_path):
    report = write_report(two_seeds, tmp_path)
    direct = {
        (agent, seed): rollout(ENV, agent, seed, env_kwargs=SMALL, record=()).metrics
        for agent in two_seeds.agents
        for seed in (3, 7)
    }
    with (tmp_path / "results.csv").open() as handle:
        for row in csv.DictReader(handle):
            metrics = direct[(row["agent"], int(row["seed"]))]
            for key, value in metrics.items():
                assert float(row[key]) == pytest.approx(value, rel=1e-12, abs=1e-12)
    result = json.loads((tmp_path / "results.json").read_text())
    paper = "mwu_extended"
    for row in result["summary"]:
        values = [direct[(row["agent"], s)][row["metric"]] for s in (3, 7)]
        assert row["mean"] == pytest.approx(np.mean(values))
        if row["agent"] != paper:
            diffs = [direct[(row["agent"], s)][row["metric"]] - direct[(paper, s)][row["metric"]] for s in (3, 7)]
            assert row["diff"] == pytest.approx(np.mean(diffs))
    owm_regret = np.mean([direct[("owm", s)]["regret"] for s in (3, 7)])
    text = report.read_text()
    assert f"| owm | {owm_regret:.4g} |" in text
    for metric in settings.SETTINGS[ENV].metrics:
        assert (tmp_path / "figures" / f"{metric}.png").is_file()
    assert (tmp_path / "figures" / "curve_regret.png").is_file()


def test_normalized_scores_put_naive_at_zero_and_oracle_at_one(two_seeds):
    assert np.mean(two_seeds.normalized_scores("static")) == pytest.approx(0.0, abs=1e-12)
    assert np.mean(two_seeds.normalized_scores("pg")) == pytest.approx(1.0)
    assert normalized(np.array([5.0, 3.0]), naive=5.0, oracle=1.0).tolist() == [0.0, 0.5]  # lower is better
    assert np.isnan(normalized(np.array([1.0]), naive=2.0, oracle=2.0)).all()


def test_probability_of_improvement_counts_seeds_in_the_metric_direction():
    diff = np.array([-2.0, 0.0, 1.0, -1.0])
    assert improvement_indicator(diff, direction=-1).tolist() == [1.0, 0.5, 0.0, 1.0]
    assert improvement_indicator(diff, direction=1).mean() == pytest.approx(1.5 / 4)


def test_bootstrap_intervals_contain_the_mean_and_shrink_with_more_seeds():
    """Seeds whose values are the n quantiles of one normal law: the spread is the same for every n, so the
    interval must narrow like 1/sqrt(n)."""
    widths = []
    for n in (5, 20, 80):
        x = stats.norm.ppf((np.arange(n) + 0.5) / n, loc=10.0, scale=2.0)
        low, high = bootstrap_ci(x)
        assert low <= x.mean() <= high
        widths.append(high - low)
        iqm_low, iqm_high = bootstrap_ci(x, iqm)
        assert iqm_low <= iqm(x) <= iqm_high
    assert widths[0] > widths[1] > widths[2]
    assert widths[0] / widths[2] == pytest.approx(4, rel=0.5)  # ~1/sqrt(n)


def test_stratified_bootstrap_resamples_each_stratum_on_its_own():
    """Two strata far apart: a stratified interval of the pooled mean is much narrower than a pooled one,
    because every resample keeps half of its values from each stratum."""
    a, b = np.linspace(0, 1, 10), np.linspace(100, 101, 10)
    strat_low, strat_high = bootstrap_ci([a, b])
    pooled_low, pooled_high = bootstrap_ci(np.concatenate([a, b]))
    assert strat_low <= np.concatenate([a, b]).mean() <= strat_high
    assert strat_high - strat_low < (pooled_high - pooled_low) / 10
    assert bootstrap_ci(np.ones(5)) == (1.0, 1.0)
    assert np.isnan(bootstrap_ci(np.array([1.0]))).all()


def test_local_workers_give_the_same_episodes_as_one_process():
    tasks = [Task(ENV, agent, seed, env_kwargs=SMALL, record=("regret",)) for agent in ("owm", "pg") for seed in (0, 1)]
    serial = run_tasks(tasks)
    parallel = run_tasks(tasks, workers=2)
    assert [(e.agent, e.seed) for e in parallel] == [(t.agent, t.seed) for t in tasks]
    for a, b in zip(serial, parallel, strict=True):
        assert a.metrics == b.metrics
        np.testing.assert_array_equal(a.trace["regret"], b.trace["regret"])


def test_an_env_without_a_settings_entry_still_compares(monkeypatch):
    monkeypatch.delitem(settings.SETTINGS, ENV)
    comparison = compare(ENV, "owm,static", seeds=[0, 1], env_kwargs=SMALL, progress=False)
    assert comparison.agents == ["owm", "static"]
    rows = comparison.summary()
    assert rows and all("diff" not in r for r in rows)
    assert comparison.normalized_scores("owm") is None
    with pytest.raises(ValueError, match="has no entry in baselines/eval/protocol.yml"):
        compare(ENV, "owm", rl=["ppo"], seeds=[0], env_kwargs=SMALL, progress=False)


def test_bad_arguments_fail_before_any_episode():
    with pytest.raises(ValueError, match="not an agent"):
        compare(ENV, "owm,nope", seeds=[0])
    with pytest.raises(ValueError, match="colour"):
        compare(ENV, "owm", seeds=[0], env_kwargs={"colour": 3})
    with pytest.raises(ValueError, match="below"):
        compare(ENV, "owm", seeds=[10**9])
    with pytest.raises(ValueError, match="distinct"):
        compare(ENV, "owm", seeds=[1, 1])
    with pytest.raises(ValueError, match="backend"):
        run_tasks([], backend="dask")


def test_the_settings_env_kwargs_apply_to_every_agent_under_the_callers(monkeypatch):
    entry = dataclasses.replace(settings.SETTINGS[ENV], env_kwargs={"horizon": 120, "sla_tol": 2.0})
    monkeypatch.setitem(settings.SETTINGS, ENV, entry)
    comparison = compare(ENV, "owm", seeds=[0], env_kwargs={"sla_tol": 3.0}, progress=False)
    assert comparison.env_kwargs == {"horizon": 120, "sla_tol": 3.0}
    assert {e.metrics["steps"] for e in comparison.episodes} == {120.0}
    assert entry.rl_training_kwargs == {"horizon": 120, "sla_tol": 2.0, **entry.rl_env_kwargs}


def test_the_normalized_score_with_a_closed_form_optimum(two_seeds):
    """Score 1 is the closed-form optimum's headline value when the entry gives one instead of a clairvoyant agent;
    an entry must give exactly one of the two."""
    setting = settings.SETTINGS[ENV]
    regret = {a: two_seeds.values(a, "regret") for a in ("owm", "static")}
    naive = regret["static"].mean()
    by_value = dataclasses.replace(
        two_seeds, setting=dataclasses.replace(setting, oracle_agent=None, oracle_value=0.0, oracle_value_name="T0")
    )
    np.testing.assert_allclose(by_value.normalized_scores("owm"), (regret["owm"] - naive) / (0.0 - naive))
    assert by_value.setting.oracle_text == "T0 (`regret` = 0)"
    for wrong in ({"oracle_value": 0.0}, {"oracle_agent": None}):
        with pytest.raises(ValueError, match="exactly one of oracle_agent and oracle_value"):
            dataclasses.replace(setting, **wrong)


def test_each_agent_env_kwargs_are_stored_and_shown(two_seeds):
    """The format kwargs an agent adds (static's idling action mode) are recorded per agent, in results.json and
    in the report, next to the kwargs every agent shares."""
    assert two_seeds.env_kwargs == SMALL
    assert two_seeds.agent_env_kwargs["static"] == {**SMALL, "action_mode": "sub_simplex"}
    assert two_seeds.agent_env_kwargs["mwu_extended"] == SMALL
    summary = two_seeds.summary()
    stored = to_json(two_seeds, summary)
    assert stored["agent_env_kwargs"] == two_seeds.agent_env_kwargs and stored["excluded"] == {}
    text = markdown(two_seeds, summary, {m: Path(f"/r/{m}.png") for m in two_seeds.metrics}, {}, Path("/r"))
    assert f"| static | `{two_seeds.agent_env_kwargs['static']}` |" in text


def test_an_agent_that_changes_the_dynamics_is_not_compared_head_to_head():
    """opm_gc needs ClusterApprox-v0's Sec. V-C capacities, i.e. another problem: `all` leaves it out with a
    note (so no paired difference and no best-heuristic candidacy), and naming it is an error."""
    approx = "ClusterApprox-v0"
    comparison = compare(approx, "all", seeds=[0], env_kwargs={"horizon": 5}, progress=False)
    assert "opm_gc" not in comparison.agents and "opm_gc" not in comparison.heuristics()
    assert comparison.excluded == {"opm_gc": {"capacity": 2, "parallelism": 4}}
    assert comparison.agent_env_kwargs == {agent: {"horizon": 5} for agent in comparison.agents}
    text = markdown(comparison, comparison.summary(), {m: Path(f"/r/{m}.png") for m in comparison.metrics}, {},
                    Path("/r"))  # fmt: skip
    assert "Not compared" in text and "`opm_gc` needs `{'capacity': 2, 'parallelism': 4}`" in text
    with pytest.raises(ValueError, match="'opm_gc' needs env kwargs .* change the dynamics"):
        compare(approx, "opm,opm_gc", seeds=[0], env_kwargs={"horizon": 5}, progress=False)


def test_heuristics_exclude_the_reference_points(two_seeds):
    """Neither the paper's algorithm, the naive baseline (score 0 by definition) nor the oracle is a heuristic."""
    assert two_seeds.heuristics() == ["owm"]
    only_references = dataclasses.replace(two_seeds, agents=["mwu_extended", "static", "pg"])
    assert only_references.heuristics() == []


def test_the_aggregate_is_rliables_iqm_with_a_reproducible_stratified_interval():
    """The point is the IQM of every run of every task pooled; the interval resamples runs within each task
    (a task whose runs are all equal adds no spread) and is the same on every call."""
    rng = np.random.default_rng(5)
    scores = {"a": rng.normal(size=(6, 3)), "flat": np.tile([0.2, 0.5, 0.9], (6, 1))}
    first = aggregate_iqm(scores)
    assert first == aggregate_iqm(scores)
    assert first["a"][0] == pytest.approx(float(iqm(scores["a"].ravel())))
    assert first["a"][1] < first["a"][0] < first["a"][2]
    assert first["flat"][1] == pytest.approx(first["flat"][2])


def test_the_report_says_why_the_benchmarks_env_kwargs_and_when_the_caller_changed_them():
    """The reason of an entry's env kwarg (MultiServer's `preset`) is printed with the value the comparison ran."""
    from baselines.eval.report import headline

    def text(**env_kwargs):
        return headline(compare("ClusterMultiServer-v0", [], seeds=[0], env_kwargs={"horizon": 5, **env_kwargs},
                                progress=False))  # fmt: skip

    assert "`preset='small'` for every agent: ESDP's dynamic program" in text()
    changed = text(preset="tiny")
    assert "`preset='tiny'` for every agent, set by the caller (the benchmark's `preset='small'`" in changed
    assert "`preset='small'` for every agent:" not in changed
