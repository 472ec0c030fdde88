"""benchmark: one report over every env with an entry, PPO trained once and then loaded, ids without an
entry skipped. The default run shrinks seeds and PPO steps; the real --quick run is marked slow."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from baselines import benchmark as bench
from baselines import settings

ENV = "ClusterSLA-v0"


@pytest.fixture
def tiny(monkeypatch):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("yaml")
    monkeypatch.setitem(bench.SEEDS, "quick", range(2))
    monkeypatch.setitem(settings.SETTINGS, ENV, dataclasses.replace(settings.SETTINGS[ENV], rl_steps_quick=512))


def test_benchmark_report(tiny, tmp_path):
    report = bench.benchmark(tmp_path, quick=True, progress=False, env_ids=[ENV, "ClusterNotInSettings-v0"])
    text = report.read_text()
    assert "| [ClusterSLA-v0](ClusterSLA-v0/report.md) | `regret` | `mwu_extended`" in text
    assert "Skipped (no entry in `baselines/settings.py`): ClusterNotInSettings-v0." in text
    headline = json.loads((tmp_path / "headline.json").read_text())["envs"][ENV]["scores"]
    assert set(headline) == {"paper", "ppo", "best heuristic", "oracle"}
    episodes = json.loads((tmp_path / ENV / "results.json").read_text())["episodes"]
    mean = {
        a: np.mean([e["metrics"]["regret"] for e in episodes if e["agent"] == a])
        for a in {e["agent"] for e in episodes}
    }
    score = {a: (mean[a] - mean["static"]) / (mean["pg"] - mean["static"]) for a in mean}
    heuristics = ["mwu", "static", "proportional", "owm"]  # online, neither the paper's algorithm nor RL
    assert headline["best heuristic"]["agent"] == max(heuristics, key=score.get)
    for role, agent in (("paper", "mwu_extended"), ("ppo", "ppo"), ("oracle", "pg")):
        assert headline[role]["agent"] == agent
        assert headline[role]["mean"] == pytest.approx(score[agent])
    assert (tmp_path / "models" / f"ppo-{ENV}" / "model.zip").is_file()


def test_benchmark_scores_envs_without_an_oracle_agent(tiny, monkeypatch, tmp_path):
    """ClusterApproxSingleJob-v0: score 1 is the env benchmark's regret 0; ClusterApprox-v0: the paper's OPM
    (no oracle cell). Short horizons and a tiny PPO keep it cheap; the scores are recomputed from the raw results."""
    ids = ["ClusterApprox-v0", "ClusterApproxSingleJob-v0"]
    for env_id in ids:
        entry = settings.SETTINGS[env_id]
        short = dataclasses.replace(entry, env_kwargs={**entry.env_kwargs, "horizon": 60}, rl_steps_quick=256)
        monkeypatch.setitem(settings.SETTINGS, env_id, short)
    report = bench.benchmark(tmp_path, quick=True, progress=False, env_ids=ids)
    headline = json.loads((tmp_path / "headline.json").read_text())["envs"]
    for env_id, top in (("ClusterApprox-v0", "opm"), ("ClusterApproxSingleJob-v0", None)):
        setting = settings.SETTINGS[env_id]
        episodes = json.loads((tmp_path / env_id / "results.json").read_text())["episodes"]
        mean = {
            a: np.mean([e["metrics"][setting.headline] for e in episodes if e["agent"] == a])
            for a in {e["agent"] for e in episodes}
        }
        one = mean[top] if top else 0.0
        scores = headline[env_id]["scores"]
        for role in ("paper", "ppo"):
            agent = scores[role]["agent"]
            assert scores[role]["mean"] == pytest.approx((mean[agent] - mean["random"]) / (one - mean["random"]))
        if top:
            assert "oracle" not in scores and scores["paper"]["mean"] == pytest.approx(1.0)
        else:
            assert scores["oracle"]["agent"] == bench.BENCHMARK_ORACLE and scores["oracle"]["mean"] == 1.0
    text = report.read_text()
    assert "| [ClusterApprox-v0](ClusterApprox-v0/report.md) | `utility` | `opm` 1 " in text
    assert "`env benchmark` 1 — |" in text


def test_a_matching_trained_model_is_loaded_not_retrained(tmp_path):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("yaml")
    from baselines.compare import obtain_policy

    small = {"horizon": 120}
    first, facts = obtain_policy(ENV, "ppo", small, 256, tmp_path, progress=False)
    assert not facts["reused"]
    assert facts["steps_per_cpu_second"] > 0 and facts["steps_per_second"] > 0
    again, facts = obtain_policy(ENV, "ppo", small, 256, tmp_path, progress=False)
    assert facts["reused"] and again.model == first.model
    longer, facts = obtain_policy(ENV, "ppo", small, 3000, tmp_path, progress=False)
    assert not facts["reused"] and facts["total_timesteps"] >= 3000


def test_benchmark_without_any_entry_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(settings, "SETTINGS", {})
    with pytest.raises(ValueError, match="skipped"):
        bench.benchmark(tmp_path, quick=True, progress=False)


@pytest.mark.slow
def test_quick_benchmark_from_the_command_line(tmp_path):
    pytest.importorskip("stable_baselines3")
    from baselines.cli import main

    assert main(["benchmark", "--quick", "--out", str(tmp_path), "--quiet"]) == 0
    assert (tmp_path / "report.md").is_file() and (tmp_path / "headline.png").is_file()
