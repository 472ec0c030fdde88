"""benchmark: one report over every env with an entry, PPO trained once and then loaded, ids without an
entry skipped. The default run shrinks seeds and PPO steps; the real --quick run is marked slow."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from baselines import benchmark as bench
from baselines import settings
from baselines.compare import compare

ENV = "ClusterSLA-v0"


@pytest.fixture
def tiny(monkeypatch):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("yaml")
    monkeypatch.setitem(bench.SEEDS, "quick", range(2))
    monkeypatch.setitem(settings.SETTINGS, ENV, dataclasses.replace(settings.SETTINGS[ENV], rl_steps_quick=512))


def test_benchmark_report(tiny, tmp_path):
    ids = [ENV, "ClusterNotInSettings-v0"]
    report = bench.benchmark(tmp_path, quick=True, progress=False, env_ids=ids, models_dir=tmp_path / "models")
    text = report.read_text()
    assert "| [ClusterSLA-v0](ClusterSLA-v0/report.md) | defaults | `regret` | `mwu_extended`" in text
    assert "Skipped (no entry in `baselines/settings.py`): ClusterNotInSettings-v0." in text
    headline = json.loads((tmp_path / "headline.json").read_text())["envs"][ENV]["scores"]
    assert set(headline) == {"paper", "ppo", "best heuristic", "oracle"}
    episodes = json.loads((tmp_path / ENV / "results.json").read_text())["episodes"]
    mean = {
        a: np.mean([e["metrics"]["regret"] for e in episodes if e["agent"] == a])
        for a in {e["agent"] for e in episodes}
    }
    score = {a: (mean[a] - mean["static"]) / (mean["pg"] - mean["static"]) for a in mean}
    heuristics = ["mwu", "proportional", "owm"]  # online, not the paper's algorithm, the naive baseline or RL
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
    report = bench.benchmark(tmp_path, quick=True, progress=False, env_ids=ids, models_dir=tmp_path / "models")
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
    assert "| [ClusterApprox-v0](ClusterApprox-v0/report.md) | `{'horizon': 60}` | `utility` | `opm` 1 " in text
    assert "| [ClusterApproxSingleJob-v0](ClusterApproxSingleJob-v0/report.md) | `{'reward_mode': 'approx', " in text
    assert "`env benchmark` 1 — |" in text


def test_a_matching_trained_model_is_loaded_not_retrained(tmp_path, monkeypatch):
    pytest.importorskip("stable_baselines3")
    yaml = pytest.importorskip("yaml")
    from baselines import rl
    from baselines.compare import obtain_policy

    small = {"horizon": 120}
    first, facts = obtain_policy(ENV, "ppo", small, 256, tmp_path, progress=False)
    assert not facts["reused"]
    assert facts["steps_per_cpu_second"] > 0 and facts["steps_per_second"] > 0
    again, facts = obtain_policy(ENV, "ppo", small, 256, tmp_path, progress=False)
    assert facts["reused"] and again.model == first.model
    longer, facts = obtain_policy(ENV, "ppo", small, 3000, tmp_path, progress=False)
    assert not facts["reused"] and facts["total_timesteps"] >= 3000
    # The same env kwargs and steps but other hyperparameters (an edited ppo.yml): retrained with them.
    edited = tmp_path / "hyperparams"
    edited.mkdir()
    text = (rl.HYPERPARAMS_DIR / "ppo.yml").read_text()
    (edited / "ppo.yml").write_text(text.replace("n_epochs: 10", "n_epochs: 3", 1))
    monkeypatch.setattr(rl, "HYPERPARAMS_DIR", edited)
    _, facts = obtain_policy(ENV, "ppo", small, 256, tmp_path, progress=False)
    assert not facts["reused"]
    assert yaml.safe_load((tmp_path / f"ppo-{ENV}" / "config.yml").read_text())[ENV]["n_epochs"] == 3
    _, facts = obtain_policy(ENV, "ppo", small, 256, tmp_path, progress=False)
    assert facts["reused"]


def test_benchmark_without_any_entry_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(settings, "SETTINGS", {})
    with pytest.raises(ValueError, match="skipped"):
        bench.benchmark(tmp_path, quick=True, progress=False)


@pytest.mark.slow
def test_quick_benchmark_from_the_command_line(tmp_path):
    pytest.importorskip("stable_baselines3")
    from baselines.cli import main

    assert main(["benchmark", "--quick", "--out", str(tmp_path), "--models", str(tmp_path / "models"), "--quiet"]) == 0
    assert (tmp_path / "report.md").is_file() and (tmp_path / "headline.png").is_file()


def test_headline_shows_the_env_kwargs_and_no_naive_best_heuristic(tmp_path):
    """An env whose only online agents are the paper's and the naive baseline (ClusterGang-v0's case) has no best
    heuristic: "—", not the naive baseline's 0. The env kwargs every agent ran with are in the row."""
    comparison = compare(ENV, [], seeds=[0, 1], env_kwargs={"horizon": 60}, progress=False)
    result = bench.EnvResult(comparison, tmp_path / ENV / "report.md", 1.0)
    assert result.best_heuristic() is None and "best heuristic" not in result.headline()
    text = bench.markdown({ENV: result}, [], True, (1.0, 1.0), Path("headline.png"), tmp_path)
    row = next(line for line in text.splitlines() if line.startswith(f"| [{ENV}]"))
    assert row.startswith(f"| [{ENV}]({ENV}/report.md) | `{{'horizon': 60}}` | `regret` | `mwu_extended` ")
    assert row.split(" | ")[-2] == "—" and "`static`" not in row
