"""The training section of `cluster-envs bench` (baselines/bench_training.py), at a tiny size: which paths it times,
that the null env has the spaces PPO sees on the native path, and what it reports."""

import pytest

pytest.importorskip("stable_baselines3")

from baselines import bench_training  # noqa: E402
from baselines.rl import RunConfig, make_vec_env  # noqa: E402

ENV = "ClusterGang-v0"  # the shortest shipped rollout (4 x 256)


def test_training_section_times_every_path_and_reports_the_targets(monkeypatch):
    monkeypatch.setattr(bench_training, "FAST_UPDATE", {"rollout": 256, "batch_size": 128, "n_epochs": 1})
    section = bench_training.run([ENV, "ClusterNotInSettings-v0"], copies=8, iterations=1, repeats=1)
    assert list(section["ids"]) == [ENV]
    rows = section["ids"][ENV]["rows"]
    assert [(r["variant"], r["vectorization"], r["n_envs"]) for r in rows] == [
        ("dummy x4", "dummy", 4),
        ("native x4", "native", 4),
        ("native x8", "native", 8),
        ("null x8", "null", 8),
        ("native x8, fast update", "native", 8),
        ("null x8, fast update", "null", 8),
    ]
    shipped = RunConfig.resolve("ppo", ENV)
    rollout = shipped.n_envs * shipped.model_kwargs["n_steps"]
    assert rows[2]["n_steps"] * 8 == rollout and rows[2]["batch_size"] == shipped.model_kwargs["batch_size"]
    assert rows[4]["n_steps"] * 8 == 256 and rows[4]["n_epochs"] == 1
    for r in rows:
        assert r["rates"] == [r["rate"]] and r["rate"] > 0 and 0 < r["update_share"] < 1
    ratios = section["ids"][ENV]["ratios"]["native x8"]
    by_name = {r["variant"]: r["rates"] for r in rows}
    assert ratios["over_dummy"] == pytest.approx(by_name["native x8"][0] / by_name["dummy x4"][0])
    assert ratios["over_null"] == pytest.approx(by_name["native x8"][0] / by_name["null x8"][0])
    targets = bench_training.targets(section)
    goals = [bench_training.NATIVE_OVER_DUMMY_TARGET, bench_training.NATIVE_OVER_NULL_TARGET] * 2
    assert [t["met"] for t in targets] == [t["measured"] >= goal for t, goal in zip(targets, goals, strict=True)]
    markdown = "\n".join(bench_training.to_markdown(section))
    assert f"| {ENV} | null x8 | null | 8 |" in markdown


@pytest.mark.parametrize("env_id", ["ClusterGang-v0", "ClusterSLA-v0"])
def test_the_null_env_has_the_spaces_ppo_sees_on_the_native_path(env_id):
    config = RunConfig.resolve("ppo", env_id)
    config.n_envs = 2
    native, used = make_vec_env(config, 0)
    observation_space, action_space = bench_training.rl_spaces(config)
    assert used == "native"
    assert observation_space == native.observation_space and action_space == native.action_space
    obs = bench_training.null_vec_env(observation_space, action_space, 2).reset()
    assert obs.shape == native.reset().shape and obs.dtype == native.observation_space.dtype
