"""The paper-000 reproduction module: argument checks, one episode's records, and (slow) the small report."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.reproduce import approx


def test_unknown_scale_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="scale"):
        approx.run(scale="huge", out_dir=tmp_path)


def test_run_one_records_per_job_costs_and_budgets():
    task = (("k",), "ClusterApprox-v1", "fair", {}, {"horizon": 300}, 0)
    run = approx.run_one(task)
    n = int(run.summary["n_jobs"])
    assert run.cost_ratio.shape == run.consumed.shape == (n,)
    assert (run.consumed < 1).all()
    np.testing.assert_allclose((run.consumed < 0.9).mean(), run.summary["frac_consumed_below_0.9"])


def test_an_episode_file_serves_every_task_of_that_episode(tmp_path, monkeypatch):
    """Two parts that label one episode differently, its keywords in another order, share its file: the second
    reads it back under its own key instead of running the episode again."""
    first = (("table1", 0.5), "ClusterApprox-v1", "fair", {}, {"horizon": 200, "beta": 0.5}, 1)
    again = (("fig2", "heavy", 0.5), "ClusterApprox-v1", "fair", {}, {"beta": 0.5, "horizon": 200}, 1)
    other = (("fig2", "heavy", 0.5), "ClusterApprox-v1", "fair", {}, {"beta": 0.5, "horizon": 200}, 2)
    assert approx.episode_name(first) == approx.episode_name(again) != approx.episode_name(other)
    ran = approx.run_tasks([first], workers=1, episode_dir=tmp_path)[first[0]][0]
    monkeypatch.setattr(approx, "run_one", lambda task: pytest.fail(f"{task[0]} ran again"))
    read = approx.run_tasks([again], workers=1, episode_dir=tmp_path)[again[0]][0]
    assert read.key == again[0] and read.summary == ran.summary
    assert len(list(tmp_path.glob("*.pkl"))) == 1


@pytest.mark.slow
def test_small_reproduction_writes_report_and_figures(tmp_path):
    """`cluster-envs reproduce approx --scale small`, as docs/reproductions/approx.md shows it."""
    from baselines.cli import main

    assert main(["reproduce", "approx", "--scale", "small", "--out", str(tmp_path), "--quiet"]) == 0
    text = (tmp_path / "report.md").read_text()
    for section in ("E1: Table I", "E2: Fig. 1", "E3: Fig. 2", "E4: Fig. 3", "E5"):
        assert section in text
    for png in ("fig1_cdfs.png", "fig2_utility_vs_beta.png", "fig3_alpha_sweep.png", "e5_regret.png"):
        assert (tmp_path / png).stat().st_size > 0
