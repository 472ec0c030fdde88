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
from baselines.eval.backends import run_tasks
from baselines.eval.compare import Comparison, compare
from baselines.eval.harness import Episode, Task, rollout
from baselines.eval.report import markdown, to_json, write_report
from baselines.eval.stats import aggregate_iqm, improvement_indicator, iqm, mean_interval, normalized, normalized_score

ENV = "ClusterSLA-v1"
SMALL = {"horizon": 240}


pytestmark = pytest.mark.xdist_group(__name__)  # its module fixture is built once, on one worker


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
    np.testing.assert_allclose(two_seeds.normalized_scores("static"), 0.0, atol=1e-12)  # on every seed: paired
    np.testing.assert_allclose(two_seeds.normalized_scores("pg"), 1.0)
    assert normalized(np.array([5.0, 3.0]), naive=5.0, top=1.0).tolist() == [0.0, 0.5]  # lower is better
    with pytest.raises(ValueError, match="anchors coincide"):
        normalized(np.array([1.0]), naive=2.0, top=2.0)


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
        low, high = mean_interval(x)
        assert low <= x.mean() <= high
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    assert widths[0] / widths[2] == pytest.approx(4, rel=0.5)  # ~1/sqrt(n)


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
    np.testing.assert_allclose(
        by_value.normalized_scores("owm"), (regret["owm"] - regret["static"]) / (0.0 - regret["static"])
    )
    assert by_value.normalized("owm")["mean"] == pytest.approx((regret["owm"].mean() - naive) / (0.0 - naive))
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
    """opm_gc needs ClusterApprox-v1's Sec. V-C capacities, i.e. another problem: `all` leaves it out with a
    note (so no paired difference and no best-heuristic candidacy), and naming it is an error."""
    approx = "ClusterApprox-v1"
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


def synthetic(values: dict[str, list[float]], seeds: list[int] | None = None) -> Comparison:
    """A ClusterSLA-v1 comparison (regret, lower is better; naive `static`, clairvoyant `pg`) of given regrets."""
    setting = settings.SETTINGS[ENV]
    seeds = seeds or list(range(len(next(iter(values.values())))))
    episodes = [
        Episode(ENV, agent, seed, {m: float(v) if m == "regret" else 0.0 for m in setting.metrics}, {})
        for agent, per_seed in values.items()
        for seed, v in zip(seeds, per_seed, strict=True)
    ]
    return Comparison(ENV, seeds, list(values), episodes, setting, privileged={"pg"})


def test_each_seed_is_normalized_by_its_own_anchors_so_the_interval_measures_the_agent():
    """Instances of very different scale (the anchors' span goes from 10 to 1000) and an agent that closes 90% of
    the gap on every one of them, ±1%: its per-seed runs are all near 0.9 and its paired interval is narrow, where
    normalizing every seed by the anchors' means over seeds (the former rule) spreads the runs from about 0 to 2."""
    span = np.array([10.0, 1000.0, 50.0, 500.0, 100.0, 20.0, 800.0, 300.0])
    naive, top = 2 * span, span  # regret: pg's is lower
    agent = naive - (0.9 + 0.01 * np.array([1, -1, 0, 1, -1, 0, 1, -1])) * span
    c = synthetic({"mwu_extended": agent, "static": naive, "pg": top})
    runs = c.normalized_scores("mwu_extended")
    np.testing.assert_allclose(runs, (agent - naive) / (top - naive))
    assert np.ptp(runs) < 0.03
    row = c.normalized("mwu_extended")
    assert row["mean"] == pytest.approx((agent.mean() - naive.mean()) / (top.mean() - naive.mean()))
    assert 0.88 < row["ci_low"] <= row["mean"] <= row["ci_high"] < 0.92
    assert row["interval"] == "95% paired bootstrap over 8 evaluation seeds"
    unpaired = (agent - naive.mean()) / (top.mean() - naive.mean())
    assert np.ptp(unpaired) > 1.5  # what the former rule fed to the IQM
    # the anchors themselves score exactly 0 and 1, with no spread
    assert c.normalized("pg")["ci_low"] == pytest.approx(1.0) and c.normalized("static")["ci_high"] == 0.0


def test_a_degenerate_instance_is_dropped_by_the_protocols_rule_and_the_report_names_it():
    """On seed 2 the anchors coincide (e.g. a held-out instance where random = oracle = 0): no score can be placed
    there, so it leaves every normalized score, and the headline says which seed and why."""
    from baselines.eval.report import headline

    naive, top = [100.0, 80.0, 0.0, 90.0], [10.0, 8.0, 0.0, 9.0]
    c = synthetic({"mwu_extended": [55.0, 44.0, 0.0, 49.5], "static": naive, "pg": top}, seeds=[0, 1, 2, 3])
    assert c.degenerate_seeds() == [2] and c.scored_seeds() == [0, 1, 3]
    np.testing.assert_allclose(c.normalized_scores("mwu_extended"), 0.5)
    assert c.normalized("mwu_extended")["interval"] == "95% paired bootstrap over 3 evaluation seeds"
    assert "Dropped from every normalized score (the protocol's degenerate-instance rule): evaluation seed(s) 2" in (
        headline(c)
    )
    assert c.instance_record()["degenerate_seeds"] == [2]
    float_noise = synthetic({"mwu_extended": [1.0, 2.0], "static": [1e-13, 5.0], "pg": [0.0, 0.0]})
    assert float_noise.degenerate_seeds() == [0]


def test_bad_input_to_a_statistic_is_an_error_or_a_dash_with_its_reason_never_nan():
    """Fewer than 2 evaluation seeds: no interval (an error from the statistics, a "—" with the reason in the
    report); anchors equal on every seed: an error from the statistics, the reason in the report's cell."""
    with pytest.raises(ValueError, match="at least 2 evaluation seeds, got 1"):
        mean_interval(np.array([3.0]))
    with pytest.raises(ValueError, match="anchors coincide on every evaluation seed"):
        normalized_score(np.array([1.0, 2.0]), np.array([5.0, 5.0]), np.array([5.0, 5.0]))
    with pytest.raises(ValueError, match="anchors coincide on 1 of the 2"):
        normalized_score(np.array([1.0, 2.0]), np.array([5.0, 6.0]), np.array([5.0, 0.0]))
    one = synthetic({"mwu_extended": [40.0], "static": [100.0], "pg": [0.0]})
    row = one.normalized("mwu_extended")
    assert row["mean"] == pytest.approx(0.6) and row["ci_low"] is None and row["no_interval"] == "one evaluation seed"
    summary = one.summary()
    assert all(r["ci_low"] is None and r.get("diff_low") is None for r in summary)
    text = markdown(one, summary, {m: Path(f"/r/{m}.png") for m in one.metrics}, {}, Path("/r"))
    assert "nan" not in text.lower() and "0.6 (no interval: one evaluation seed)" in text
    assert "no interval (1 evaluation seed)" in text
    flat = synthetic({"mwu_extended": [40.0, 30.0], "static": [7.0, 7.0], "pg": [7.0, 7.0]})
    row = flat.normalized("mwu_extended")
    assert row["mean"] is None and "every evaluation seed is degenerate" in row["no_interval"]
    assert "— (every evaluation seed is degenerate" in markdown(
        flat, flat.summary(), {m: Path(f"/r/{m}.png") for m in flat.metrics}, {}, Path("/r")
    )


def test_an_rl_rows_interval_resamples_training_seeds_and_evaluation_seeds():
    """Two-level: runs that differ widen the interval beyond the one over evaluation seeds alone."""
    evals = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    same = np.tile(evals, (5, 1))
    spread = same + np.array([[-3.0], [-1.5], [0.0], [1.5], [3.0]])
    one_level, narrow, wide = mean_interval(evals), mean_interval(same), mean_interval(spread)
    assert narrow[1] - narrow[0] == pytest.approx(one_level[1] - one_level[0], rel=0.25)
    assert wide[1] - wide[0] > 1.5 * (narrow[1] - narrow[0])
    assert mean_interval(spread) == wide  # seeded: reproducible


def test_the_paper_column_says_per_row_whose_algorithm_it_is():
    """Each entry states its paper's-algorithm reading; a reading outside the three forms is refused."""
    labels = {env_id: s.paper_label for env_id, s in settings.SETTINGS.items()}
    assert labels["ClusterGang-v0"] == "ours, after the paper" and settings.SETTINGS["ClusterGang-v0"].paper_is_ours
    assert labels["ClusterSLA-v1"] == "paper (as printed)"
    assert labels["ClusterMultiServer-v0"].startswith("paper (our reading: P3 solved over Ω(t)")
    assert all(label == "ours, after the paper" or label.startswith("paper (") for label in labels.values())
    assert "reading not stated" not in "".join(labels.values())
    for bad in ("printed", "our reading: ", "ours"):
        with pytest.raises(ValueError, match="paper_reading"):
            dataclasses.replace(settings.SETTINGS[ENV], paper_reading=bad)
