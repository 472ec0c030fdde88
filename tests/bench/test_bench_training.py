"""The training section of `cluster-envs bench` (baselines/perf/training.py), at a tiny size: which paths it times,
that the null env has the spaces PPO sees on the native path, and what it reports."""

import dataclasses

import pytest

pytest.importorskip("stable_baselines3")

import yaml  # noqa: E402  (the rl extra, as SB3)

from baselines.eval import protocol as settings  # noqa: E402
from baselines.perf import training as bench_training  # noqa: E402
from baselines.rl import config as rl_config  # noqa: E402
from baselines.rl.config import RunConfig  # noqa: E402
from baselines.rl.train import make_vec_env  # noqa: E402

ENV = "ClusterGang-v0"


@pytest.fixture
def edited_section(monkeypatch, tmp_path):
    """ClusterGang-v0's PPO section and settings entry edited (2 copies x 32 steps, minibatch 32, 1 epoch, horizon
    50), the way a later tuning would edit them: the training section must time these, not the values it was
    written with."""
    sections = yaml.safe_load((rl_config.HYPERPARAMS_DIR / "ppo.yml").read_text())
    section = sections[ENV]
    section.update(n_envs=2, n_steps=32, batch_size=32, n_epochs=1)
    section["env_kwargs"] = {**section["env_kwargs"], "horizon": 50}
    (tmp_path / "ppo.yml").write_text(yaml.safe_dump(sections))
    monkeypatch.setattr(rl_config, "HYPERPARAMS_DIR", tmp_path)
    monkeypatch.setitem(settings.SETTINGS, ENV, dataclasses.replace(settings.SETTINGS[ENV], env_kwargs={"horizon": 50}))
    monkeypatch.setattr(bench_training, "FAST_UPDATE", {"rollout": 32, "batch_size": 16, "n_epochs": 1})
    return section


def test_training_section_times_the_current_section_on_every_path_and_reports_the_targets(edited_section):
    section = bench_training.run([ENV, "ClusterNotInSettings-v0"], copies=8, iterations=1, repeats=1)
    assert list(section["ids"]) == [ENV]
    entry = section["ids"][ENV]
    rows = entry["rows"]
    rollout = edited_section["n_envs"] * edited_section["n_steps"]
    # (variant, path, copies, n_steps, minibatch, epochs): the shipped copies (2) get their own row
    assert [(r["variant"], r["vectorization"], r["n_envs"], r["n_steps"], r["batch_size"], r["n_epochs"])
            for r in rows] == [
        ("dummy x4", "dummy", 4, rollout // 4, 32, 1),
        ("native x4", "native", 4, rollout // 4, 32, 1),
        ("native x2", "native", 2, 32, 32, 1),
        ("native x8", "native", 8, rollout // 8, 32, 1),
        ("null x8", "null", 8, rollout // 8, 32, 1),
        ("native x8, fast update", "native", 8, 32 // 8, 16, 1),
        ("null x8, fast update", "null", 8, 32 // 8, 16, 1),
    ]  # fmt: skip
    assert entry["hyperparameters"] == {"n_envs": 2, "n_steps": 32, "batch_size": 32, "n_epochs": 1}
    assert entry["env_kwargs"] == {"horizon": 50, "action_mode": "scores"}
    for r in rows:
        assert r["rates"] == [r["rate"]] and r["rate"] > 0 and r["cpu_rates"] == [r["cpu_rate"]] and r["cpu_rate"] > 0
        assert 0 < r["update_share"] < 1 and 0 <= r["env_share"] < 1 - r["update_share"]
    by_name = {r["variant"]: r for r in rows}
    assert by_name["null x8"]["env_share"] < by_name["native x8"]["env_share"]  # the null env's step costs nothing
    ratios = entry["ratios"]["native x8"]
    rates = {name: r["rates"][0] for name, r in by_name.items()}
    assert ratios["over_dummy"] == pytest.approx(rates["native x8"] / rates["dummy x4"])
    assert ratios["over_null"] == pytest.approx(rates["native x8"] / rates["null x8"])
    assert ratios["null_over_dummy"] == pytest.approx(rates["null x8"] / rates["dummy x4"])
    cpu = {name: r["cpu_rates"][0] for name, r in by_name.items()}
    assert ratios["over_null_cpu"] == pytest.approx(cpu["native x8"] / cpu["null x8"])
    assert entry["shipped"] == {
        "variant": "native x2",
        "over_dummy": pytest.approx(rates["native x2"] / rates["dummy x4"]),
        "over_dummy_cpu": pytest.approx(cpu["native x2"] / cpu["dummy x4"]),
    }
    targets = bench_training.targets(section)
    assert [t["target"].split(" ≥ ")[0] for t in targets] == [f"{ENV} PPO native x2 (shipped)"] + [
        f"{ENV} PPO native x8{suffix}" for suffix in ("", "", ", fast update", ", fast update")
    ]
    goals = [bench_training.NATIVE_OVER_DUMMY_TARGET] + [
        bench_training.NATIVE_OVER_DUMMY_TARGET, bench_training.NATIVE_OVER_NULL_TARGET] * 2  # fmt: skip
    assert [t["met"] for t in targets] == [t["measured"] >= goal for t, goal in zip(targets, goals, strict=True)]
    markdown = "\n".join(bench_training.to_markdown(section))
    assert f"| {ENV} | null x8 | null | 8 |" in markdown and f"| {ENV} | native x2 (shipped) | native | 2 |" in markdown


def test_the_fast_update_is_timed_once_where_it_is_the_shipped_update():
    config = RunConfig.resolve("ppo", ENV)
    fast = bench_training.FAST_UPDATE
    config.n_envs, config.model_kwargs["n_steps"] = 16, fast["rollout"] // 16
    config.model_kwargs.update(batch_size=fast["batch_size"], n_epochs=fast["n_epochs"])
    names = [v.name for v in bench_training.variants(config, copies=128)]
    assert names == ["dummy x4", "native x4", "native x16", "native x128", "null x128"]
    with pytest.raises(ValueError, match="copies=4 must differ from 4"):
        bench_training.variants(config, copies=4)


@pytest.mark.parametrize("env_id", ["ClusterGang-v0", "ClusterSLA-v1"])
def test_the_null_env_has_the_spaces_ppo_sees_on_the_native_path(env_id):
    config = RunConfig.resolve("ppo", env_id)
    config.n_envs = 2
    native, used = make_vec_env(config, 0)
    observation_space, action_space = bench_training.rl_spaces(config)
    assert used == "native"
    assert observation_space == native.observation_space and action_space == native.action_space
    obs = bench_training.null_vec_env(observation_space, action_space, 2).reset()
    assert obs.shape == native.reset().shape and obs.dtype == native.observation_space.dtype


def test_training_only_runs_the_training_section_alone(monkeypatch, tmp_path, capsys):
    import baselines.perf.steps
    from baselines.cli import main

    calls = []

    def fake_run_bench(env_ids, **kwargs):
        calls.append(kwargs)
        return {"machine": {"python": "3", "gymnasium": "1", "numpy": "2", "load_average": None},
                "settings": {"repeats": 1}, "single": [], "batched": [], "missing_vector_entry_point": [],
                "targets": []}  # fmt: skip

    monkeypatch.setattr(baselines.perf.steps, "run_bench", fake_run_bench)
    args = ["bench", "--ids", ENV, "--training-only", "--training-iterations", "3", "--out", str(tmp_path / "b")]
    assert main(args) == 0
    (kwargs,) = calls
    assert kwargs["training"] == {"copies": 128, "repeats": 3, "iterations": 3, "algo": "ppo"}
    assert not kwargs["step_rates"] and not kwargs["esdp_dp"] and not kwargs["approx_slots"]
    assert kwargs["long_horizon"] is None and not kwargs["paper_episodes"]
    assert "| env | variant | steps/s |" not in capsys.readouterr().out  # no empty step-rate table
    assert main([*args, "--no-training", "--force"]) == 2
    assert "--training-only and --no-training exclude each other" in capsys.readouterr().err
    assert main([*args, "--training-algo", "dqn", "--force"]) == 2
    assert "--training-algo 'dqn' is not allowed" in capsys.readouterr().err


def test_maskable_ppo_is_timed_on_the_ids_of_its_file_with_the_batched_masks(monkeypatch, tmp_path):
    sections = yaml.safe_load((rl_config.HYPERPARAMS_DIR / "ppo_mask.yml").read_text())
    sections[ENV].update(n_envs=2, n_steps=16, batch_size=16, n_epochs=1)
    (tmp_path / "ppo_mask.yml").write_text(yaml.safe_dump(sections))
    monkeypatch.setattr(rl_config, "HYPERPARAMS_DIR", tmp_path)
    monkeypatch.setattr(bench_training, "FAST_UPDATE", {"rollout": 16, "batch_size": 16, "n_epochs": 1})
    section = bench_training.run(["ClusterSLA-v1", ENV], copies=8, iterations=1, repeats=1, algo="ppo_mask")
    assert section["algo"] == "ppo_mask" and list(section["ids"]) == [ENV]  # ClusterSLA-v1 has no MaskablePPO section
    rows = section["ids"][ENV]["rows"]
    assert [(r["variant"], r["vectorization"]) for r in rows][:3] == [
        ("dummy x4", "dummy"), ("native x4", "native"), ("native x2", "native")]  # fmt: skip
    assert section["ids"][ENV]["env_kwargs"]["action_mode"] == "binary"
    assert bench_training.targets(section)[0]["target"].startswith(f"{ENV} ppo_mask native x2 (shipped)")


def test_the_null_env_allows_every_action_in_maskable_ppos_layout():
    config = RunConfig.resolve("ppo_mask", ENV)
    native, _ = make_vec_env(config, 0)
    null = bench_training.null_vec_env(*bench_training.rl_spaces(config), config.n_envs)
    (mask, *_), (native_mask, *_) = null.env_method("action_masks"), native.env_method("action_masks")
    assert mask.shape == native_mask.shape and mask.all()
