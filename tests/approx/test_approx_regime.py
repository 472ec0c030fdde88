"""The readings of Sec. VI as named presets (issue 17): one flat price that hides the machines' speeds, and a
budget-bound workload; plus the sensitivity study's argument checks and task list."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from baselines.eval import harness
from baselines.reproduce import approx
from cluster_envs.approx.config import MULTI_PRESETS
from cluster_envs.approx.model import ONOFF_MEAN_RATE

MULTI = "ClusterApprox-v1"
SMALL = {"n_machines": 40, "horizon": 600, "max_visible_jobs": 64, "lifetime_median": 60.0, "lifetime_sigma": 1.0,
         "q_range": (0.2, 10.0)}  # fmt: skip


def test_flat_prices_are_one_price_that_the_hidden_speeds_do_not_move():
    env = gym.make(MULTI, preset="paper_hidden_speed", **SMALL).unwrapped
    env.reset(seed=0)
    prices, means = env._instance.prices, env._instance.means
    np.testing.assert_allclose(prices, 2.0 * env.problem.rate_prior_mean)  # the population mean, public
    assert means.std() > 0.05  # speeds U[0.5, 1] spread the true means, the prices do not follow
    proportional = gym.make(MULTI, preset="paper", **SMALL).unwrapped
    proportional.reset(seed=0)
    # proportional: 2 x speed x the model's stationary mean rate, public; never the realised means (v0's leak)
    instance = proportional._instance
    np.testing.assert_allclose(instance.prices, 2.0 * instance.rates.speed * ONOFF_MEAN_RATE)
    assert not np.allclose(instance.prices, 2.0 * instance.means)


@pytest.mark.parametrize("name", ["paper_hidden_speed", "paper_budget_bound", "paper_budget_bound_hidden_speed"])
def test_new_presets_are_the_paper_preset_plus_their_reading(name):
    changed = {k for k, v in MULTI_PRESETS[name].items() if MULTI_PRESETS["paper"].get(k) != v}
    expected = {"paper_hidden_speed": {"prices", "speed_heterogeneity"}, "paper_budget_bound": {"load"}}
    expected["paper_budget_bound_hidden_speed"] = expected["paper_hidden_speed"] | expected["paper_budget_bound"]
    assert changed == expected[name]


def test_budget_bound_workload_lets_fair_spend_its_budgets():
    """Fig. 1b's regime: at load 1 Fair ends few jobs under 90% of their budget, at the paper preset's load 3 most."""
    share = {}
    for preset in ("paper", "paper_budget_bound"):
        episode = harness.rollout(MULTI, "fair", 0, env_kwargs={"preset": preset, **SMALL})
        share[preset] = episode.metrics["frac_consumed_below_0.9"]
    assert share["paper_budget_bound"] < 0.3 < 0.6 < share["paper"]


def test_flat_prices_need_a_positive_population_mean():
    with pytest.raises(ValueError, match="iid_mean_range"):
        gym.make(MULTI, prices="flat", rate_process="iid_uniform", iid_mean_range=(0.0, 0.0))


def test_sensitivity_checks_its_seeds(tmp_path):
    with pytest.raises(ValueError, match="seeds"):
        approx.sensitivity(tmp_path, seeds=1)


def test_study_runs_every_agent_reading_on_every_full_env_reading():
    tasks = approx.study_tasks([0, 1])
    keys = {t[0] for t in tasks}
    for env_label, (_, _, every_agent) in approx.STUDY_ENVS.items():
        readings = approx.STUDY_AGENTS if every_agent else [approx.DEFAULT_READING]
        for load, beta in approx.STUDY_CONFIGS:
            assert ("study", env_label, load, beta, None, "fair") in keys
            for label in readings:
                assert {("study", env_label, load, beta, label, s) for s in ("opm", "opm_no_estimation")} <= keys
    assert len(tasks) == 2 * len(keys)  # every configuration on both seeds


def test_table_one_checks_its_scale(tmp_path):
    with pytest.raises(ValueError, match="scale"):
        approx.table_one_and_fig_two("huge", tmp_path)


TINY = {"env": {"preset": "medium", "n_machines": 12, "horizon": 150, "max_visible_jobs": 16, "lifetime_median": 20.0,
                "q_range": (0.2, 10.0)}, "seeds": 2}  # fmt: skip


def test_table_one_and_fig_two_write_their_sections_on_a_named_preset(tmp_path, monkeypatch):
    monkeypatch.setitem(approx.SCALES, "tiny", TINY)
    report = approx.table_one_and_fig_two("tiny", tmp_path, preset="paper_budget_bound", workers=1, progress=False)
    text = report.read_text()
    assert "paper_budget_bound" in text
    for section in ("E1: Table I", "E2: Fig. 1", "E3: Fig. 2"):
        assert section in text
    assert (tmp_path / "fig2_utility_vs_beta.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("kwargs", "argument"), [({"figures": ("fig1",)}, "figures"), ({"figures": ()}, "figures"),
                             ({"fig2_betas": (0.9, 1.2)}, "fig2_betas"), ({"fig2_betas": ()}, "fig2_betas")]
)  # fmt: skip
def test_table_one_rejects_unknown_parts_and_betas(tmp_path, kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        approx.table_one_and_fig_two("paper", tmp_path, **kwargs)


def test_table_one_and_fig_two_run_apart_and_reuse_the_episodes_of_their_folder(tmp_path, monkeypatch):
    monkeypatch.setitem(approx.SCALES, "tiny", TINY)
    played, run_one = [], approx.run_one

    def record(task):
        played.append((task[0], task[-1]))
        return run_one(task)

    monkeypatch.setattr(approx, "run_one", record)  # workers=1: the episodes play in this process

    def parts(figures, folder, betas=approx.FIG2_BETAS):
        played.clear()
        report = approx.table_one_and_fig_two("tiny", tmp_path / folder, figures=figures, fig2_betas=betas,
                                              workers=1, progress=False)  # fmt: skip
        return report.read_text(), set(played), len(played)

    seeds = range(TINY["seeds"])
    heavy = {(("fig2", "heavy", b, s), seed) for b in approx.TABLE_BETAS for s in approx.SCHEMES for seed in seeds}
    beta9 = {(("fig2", load, 0.9, s), seed) for load in approx.KEEP for s in approx.SCHEMES for seed in seeds}
    light5 = {(("fig2", "light", 0.5, s), seed) for s in approx.SCHEMES for seed in seeds}
    table, table_played, n = parts(("table1",), "t")
    assert table_played == heavy and n == len(heavy)
    assert "E1: Table I" in table and "E3: Fig. 2" not in table
    fig2, fig2_played, n = parts(("fig2",), "f", (0.9,))
    assert fig2_played == beta9 and n == len(beta9)
    assert "E3: Fig. 2" in fig2 and "E1: Table I" not in fig2
    # both parts in the Table I folder: its heavy episodes are read back, heavy β = 0.5 is needed twice, played never
    both, both_played, n = parts(("table1", "fig2"), "t", (0.5, 0.9))
    assert both_played == beta9 | light5 and n == len(beta9 | light5)
    assert both.split("## E1")[1].split("## E3")[0] == table.split("## E1")[1]
    for folder, png in (("t", "fig1_cdfs.png"), ("f", "fig2_utility_vs_beta.png")):
        assert (tmp_path / folder / png).stat().st_size > 0


def test_sensitivity_writes_one_row_per_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(approx, "STUDY_SCALE", {k: v for k, v in TINY["env"].items() if k != "preset"})
    monkeypatch.setattr(approx, "STUDY_ENVS", {"paper_hidden_speed": ("paper_hidden_speed", {}, True)})
    monkeypatch.setattr(approx, "STUDY_AGENTS", {"step, μ×0.1": ("step", 0.1)})
    monkeypatch.setattr(approx, "DEFAULT_READING", "step, μ×0.1")
    text = approx.sensitivity(tmp_path, seeds=2, workers=1, progress=False).read_text()
    rows = [line for line in text.splitlines() if line.startswith("| paper_hidden_speed | step, μ×0.1 |")]
    assert len(rows) == 1 and "nan" not in rows[0]
    assert (tmp_path / "study_runs.pkl").stat().st_size > 0


def test_the_timing_line_sums_the_episodes_wall_times_and_says_that_they_overlap():
    runs = {"a": [approx.Run("a", 0, {}, np.ones(1), np.ones(1), 3.0)],
            "b": [approx.Run("b", 0, {}, np.ones(1), np.ones(1), 4.0)]}  # fmt: skip
    line = approx.timing(runs, elapsed=4.2, workers=2)
    assert line.startswith("4 s wall with 2 worker(s)") and "wall times sum to 7 s (overlapping" in line
