"""benchmark: one report over every env with an entry, PPO trained once and then loaded, ids without an
entry skipped; the protocol's anchors and tracks (no headline agent trained on an evaluation instance). The
default run shrinks seeds and PPO steps; the real --quick run is marked slow."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from agents import agent_names
from agents.registry import agent_class
from baselines import benchmark as bench
from baselines.eval import protocol as settings
from baselines.eval.compare import compare
from baselines.eval.protocol import HELD_OUT_INSTANCE_BASE, TRAIN_SEED_BASE, training_seed
from baselines.eval.stats import iqm
from baselines.rl import config as rl_config
from baselines.rl import runs as rl_runs

ENV = "ClusterSLA-v1"


@pytest.fixture
def tiny(monkeypatch):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("yaml")
    monkeypatch.setitem(settings.EVALUATION_SEEDS, "quick", range(2))
    short = dataclasses.replace(settings.SETTINGS[ENV], rl_steps_quick=512, rl_seeds=2)
    monkeypatch.setitem(settings.SETTINGS, ENV, short)
    # no shipped model: these tests train (ClusterSLA-v1's shipped run would serve 512 steps)
    monkeypatch.setattr(rl_runs, "SHIPPED_MODELS_DIR", Path("/nonexistent/shipped-models"))


def _means(folder: Path, metric: str) -> dict[str, float]:
    episodes = json.loads((folder / "results.json").read_text())["episodes"]
    agents = {e["agent"] for e in episodes}
    return {a: float(np.mean([e["metrics"][metric] for e in episodes if e["agent"] == a])) for a in agents}


def per_seed_of(agent: str, out: Path) -> list[dict]:
    return [e for e in json.loads((out / ENV / "results.json").read_text())["episodes"] if e["agent"] == agent]


def test_benchmark_report(tiny, monkeypatch, tmp_path):
    ids = [ENV, "ClusterNotInSettings-v0"]
    report = bench.benchmark(tmp_path, quick=True, progress=False, env_ids=ids, models_dir=tmp_path / "models")
    text = report.read_text()
    assert "| [ClusterSLA-v1](ClusterSLA-v1/report.md) | defaults | `regret` | `static` | `mwu_extended`" in text
    assert "Skipped (no entry in `baselines/eval/protocol.yml`): ClusterNotInSettings-v0." in text
    assert text.startswith((tmp_path / "headline.md").read_text())  # what the CLI prints when the run ends
    stored = json.loads((tmp_path / "headline.json").read_text())
    entry = stored["tracks"]["held-out instances"][ENV]
    assert stored["tracks"]["fixed instance"] == {}  # the SLA instance is drawn from the reset seed
    assert (entry["naive_anchor"], entry["clairvoyant_anchor"]) == ("static", "pg")
    steps = json.loads((tmp_path / "models" / f"ppo-{ENV}" / "seed1" / "meta.json").read_text())["total_timesteps"]
    budget = f"{steps:,} steps × 2 training seeds"  # --quick found none, so it trained the entry's rl_seeds
    assert entry["rl_budget"] == budget and f"| {budget} |" in text
    headline = entry["scores"]
    assert set(headline) == {"paper", "ppo", "best heuristic", "oracle"}
    mean = _means(tmp_path / ENV, "regret")
    score = {a: (mean[a] - mean["static"]) / (mean["pg"] - mean["static"]) for a in mean}
    heuristics = ["mwu", "proportional", "owm"]  # online, not the paper's algorithm, the naive baseline or RL
    assert headline["best heuristic"]["agent"] == max(heuristics, key=score.get)
    for role, agent in (("paper", "mwu_extended"), ("ppo", "ppo"), ("oracle", "pg")):
        assert headline[role]["agent"] == agent
        assert headline[role]["mean"] == pytest.approx(score[agent])
    # PPO's runs are its training seeds: the aggregate IQM over its 2 runs, each its mean over the 2 evaluation seeds
    runs = [[e["metrics"]["regret"] for e in per_seed_of("ppo", tmp_path) if e["training_seed"] == t] for t in (0, 1)]
    run_scores = (np.mean(runs, axis=1) - mean["static"]) / (mean["pg"] - mean["static"])
    roles = stored["aggregate"]["roles"]
    assert roles["ppo"]["runs"] == 2 and roles["paper"]["runs"] == 2
    assert roles["ppo"]["iqm"] == pytest.approx(float(iqm(run_scores)))
    # one env: the aggregate IQM of a role is the IQM of its per-seed scores, each against its own seed's anchors
    per_seed = json.loads((tmp_path / ENV / "results.json").read_text())["episodes"]
    regret = {(e["agent"], e["seed"]): e["metrics"]["regret"] for e in per_seed if e["training_seed"] is None}
    paper = [
        (regret["mwu_extended", s] - regret["static", s]) / (regret["pg", s] - regret["static", s]) for s in (0, 1)
    ]
    assert roles["paper"]["iqm"] == pytest.approx(float(iqm(np.array(paper))))
    assert roles["paper"]["envs"] == [ENV] and stored["aggregate"]["envs"] == [ENV]
    # every header names what its intervals run over
    assert "| paper's algorithm [95% paired bootstrap over 2 evaluation seeds] | its label " in text
    assert "| PPO [95% two-level bootstrap over 2 training seeds × 2 evaluation seeds] |" in text
    assert "| mwu_extended (paper, as printed) |" in (tmp_path / ENV / "report.md").read_text()
    assert (tmp_path / "models" / f"ppo-{ENV}" / "seed0" / "model.zip").is_file()
    assert (tmp_path / "profiles.png").is_file()
    # the entry's text edited after the run: render rewrites the reports from the saved results, same numbers
    edited = dataclasses.replace(settings.SETTINGS[ENV], notes="Rendered again.")
    monkeypatch.setitem(settings.SETTINGS, ENV, edited)
    assert bench.render(tmp_path) == report
    again = json.loads((tmp_path / "headline.json").read_text())
    assert again["tracks"] == stored["tracks"] and again["aggregate"] == stored["aggregate"]
    assert "Rendered again." in (tmp_path / ENV / "report.md").read_text()
    assert (tmp_path / ENV / "figures" / "curve_regret.png").is_file()  # the run's figures are kept
    # published: a generated page with the command, the commit and the date, and a before/after table per env
    before = {"source": "a test run", "tracks": {"held-out instances": {ENV: {"scores": {
        "paper": {"agent": "mwu_extended", "mean": 2.0, "ci_low": 1.0, "ci_high": 3.0},
        "oracle": {"agent": "pg", "mean": 1.0, "ci_low": None, "ci_high": None}}}}}}  # fmt: skip
    (tmp_path / "before.json").write_text(json.dumps(before))
    bench.render(tmp_path, publish=tmp_path / "docs", before=tmp_path / "before.json", command="cluster-envs x")
    page = (tmp_path / "docs" / "benchmark-quick.md").read_text()
    assert page.startswith("# Benchmark results (quick)\n\nGenerated by `cluster-envs benchmark --publish` on commit")
    assert "cluster-envs x" in page and " UTC" in page and "[ClusterSLA-v1](" not in page  # no links out of docs
    assert "| PPO [95% two-level bootstrap over 2 training seeds × 2 evaluation seeds] |" in page
    assert (tmp_path / "docs" / "figures" / "benchmark-quick" / "headline.png").is_file()
    paper_row = next(line for line in page.splitlines() if line.startswith("| paper's algorithm | `mwu_extended` 2 "))
    assert paper_row.endswith("| 1 → 3 | **ranking changed** |")  # was above the 1-anchor, now below it and PPO
    with pytest.raises(ValueError, match="before=.*'tracks'"):
        (tmp_path / "bad.json").write_text("{}")
        bench.render(tmp_path, before=tmp_path / "bad.json")


def test_no_headline_agent_trained_on_an_evaluation_instance(tiny, monkeypatch, tmp_path):
    """SLA draws the instance from the reset seed: PPO's training envs are seeded above every evaluation seed.
    MultiServer fixes it by `instance_seed`: the headline track evaluates seed s on instance 1000 + s without RL,
    and PPO appears only in the fixed-instance track, on the instance it trained on."""
    multi = "ClusterMultiServer-v0"
    entry = settings.SETTINGS[multi]
    short = dataclasses.replace(entry, env_kwargs={**entry.env_kwargs, "horizon": 30}, rl_steps_quick=256, rl_seeds=1)
    monkeypatch.setitem(settings.SETTINGS, multi, short)
    bench.benchmark(tmp_path, quick=True, progress=False, env_ids=[ENV, multi], models_dir=tmp_path / "models")
    tracks = json.loads((tmp_path / "headline.json").read_text())["tracks"]
    headline, fixed = tracks["held-out instances"], tracks["fixed instance"]
    assert set(headline) == {ENV, multi} and set(fixed) == {multi}
    sla = headline[ENV]
    assert set(sla["evaluation_instances"].values()) == {"reset seed"}
    (ppo,) = sla["training_instances"].values()
    assert sorted(ppo) == ["0", "1"]  # every training seed's run records its instances
    for run in ppo.values():
        train_seeds = set(range(run["first_env_seed"], run["first_env_seed"] + run["n_envs"]))
        assert min(train_seeds) >= TRAIN_SEED_BASE > max(sla["evaluation_seeds"])
        assert not train_seeds & set(sla["evaluation_seeds"])
    held = headline[multi]
    assert held["training_instances"] == {} and held["scores"].keys() == {"paper", "best heuristic", "oracle"}
    assert held["evaluation_instances"] == {str(s): HELD_OUT_INSTANCE_BASE + s for s in held["evaluation_seeds"]}
    (runs,) = fixed[multi]["training_instances"].values()
    assert list(runs) == ["0"]  # the entry's rl_seeds (1 here, to keep this test cheap)
    for trained_on in runs.values():
        assert set(fixed[multi]["evaluation_instances"].values()) == {trained_on["instance_seed"]}
        assert trained_on["instance_seed"] not in held["evaluation_instances"].values()
    for track, folder in (
        ("held-out instances", tmp_path / multi),
        ("fixed instance", tmp_path / "fixed-instance" / multi),
    ):
        stored = json.loads((folder / "results.json").read_text())
        assert stored["track"] == track and stored["training_instances"] == tracks[track][multi]["training_instances"]


def test_the_reset_seed_alone_draws_the_instance_of_the_per_episode_envs():
    """The premise of the held-out split where RL trains on other reset seeds: Bilinear's hidden Θ is a function of
    the reset seed (same seed, same instance; another seed, another instance)."""
    env = gym.make("ClusterBilinear-v0")

    def theta(seed):
        env.reset(seed=seed)
        return env.unwrapped.theta.copy()

    np.testing.assert_array_equal(theta(3), theta(3))
    assert not np.array_equal(theta(3), theta(training_seed(0)))


def test_every_entry_has_a_named_naive_anchor_and_a_clairvoyant_one():
    """The 1-anchor is a privileged agent (it reads the hidden parameters) or a closed-form optimum's value; the
    0-anchor and the paper's algorithm are online; every agent an entry names is registered."""
    for env_id, setting in settings.SETTINGS.items():
        assert (setting.oracle_agent is None) != (setting.oracle_value is None)
        if setting.oracle_agent is not None:
            assert agent_class(env_id, setting.oracle_agent).privileged, env_id
        for online in (setting.naive_agent, setting.paper_agent, *setting.ablations):
            assert not agent_class(env_id, online).privileged, (env_id, online)
        named = [name for key in setting.explanations for name in key.rsplit(":", 1)[1].split("=")]
        assert set(named) <= set(agent_names(env_id)) | {"ppo"}, env_id


def test_rl_is_refused_on_the_held_out_instances_of_an_instance_fixed_env():
    with pytest.raises(ValueError, match="cannot be evaluated on held-out instances"):
        compare("ClusterMultiServer-v0", "random", rl=["ppo"], seeds=[0], held_out=True, progress=False)
    with pytest.raises(ValueError, match="instance_seed"):
        compare("ClusterGang-v0", "random", seeds=[0], env_kwargs={"instance_seed": 3}, held_out=True, progress=False)


def test_a_matching_trained_model_is_loaded_not_retrained(tmp_path, monkeypatch):
    pytest.importorskip("stable_baselines3")
    yaml = pytest.importorskip("yaml")
    from baselines.rl.store import obtain_policies

    small = {"horizon": 120}

    def obtain_policy(env_id, algo, env_kwargs, steps, models_dir, progress):
        ((policy, facts),) = obtain_policies(env_id, algo, env_kwargs, steps, [0], models_dir=models_dir,
                                             progress=progress)  # fmt: skip
        return policy, facts

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
    text = (rl_config.HYPERPARAMS_DIR / "ppo.yml").read_text()
    (edited / "ppo.yml").write_text(text.replace("n_epochs: 10", "n_epochs: 3", 1))
    monkeypatch.setattr(rl_config, "HYPERPARAMS_DIR", edited)
    _, facts = obtain_policy(ENV, "ppo", small, 256, tmp_path, progress=False)
    assert not facts["reused"]
    assert yaml.safe_load((tmp_path / f"ppo-{ENV}" / "seed0" / "config.yml").read_text())[ENV]["n_epochs"] == 3
    _, facts = obtain_policy(ENV, "ppo", small, 256, tmp_path, progress=False)
    assert facts["reused"]


def test_benchmark_without_any_entry_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(settings, "SETTINGS", {})
    with pytest.raises(ValueError, match="skipped"):
        bench.benchmark(tmp_path, quick=True, progress=False)


@pytest.mark.slow
def test_quick_benchmark_from_the_command_line(tmp_path, capsys):
    pytest.importorskip("stable_baselines3")
    from baselines.cli import main

    assert main(["benchmark", "--quick", "--out", str(tmp_path), "--models", str(tmp_path / "models"), "--quiet"]) == 0
    assert (tmp_path / "report.md").is_file() and (tmp_path / "headline.png").is_file()
    assert (tmp_path / "headline.md").read_text() in capsys.readouterr().out


def test_headline_shows_the_env_kwargs_and_no_naive_best_heuristic(tmp_path):
    """An env whose only online agents are the paper's and the naive baseline (ClusterGang-v0's case) has no best
    heuristic: "—", not the naive baseline's 0. The env kwargs every agent ran with are in the row."""
    comparison = compare(ENV, [], seeds=[0, 1], env_kwargs={"horizon": 60}, progress=False)
    result = bench.EnvResult(comparison, tmp_path / ENV / "report.md", 1.0)
    assert result.best_heuristic() is None and "best heuristic" not in result.headline()
    row = next(line for line in bench.track_table({ENV: result}, tmp_path) if line.startswith(f"| [{ENV}]"))
    assert row.startswith(f"| [{ENV}]({ENV}/report.md) | `{{'horizon': 60}}` | `regret` | `static` | `mwu_extended` ")
    assert row.split(" | ")[-2] == "—" and row.count("`static`") == 1  # the 0-anchor's own column only
