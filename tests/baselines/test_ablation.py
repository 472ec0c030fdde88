"""baselines/ablation.py: every study's variants build their envs, and a table averages evaluation seeds within a
training seed before it summarizes over training seeds."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from baselines.ablation import STUDIES, References, make_env, setup, summarize  # noqa: E402
from baselines.settings import require_setting  # noqa: E402
from baselines.stats import normalized  # noqa: E402


@pytest.mark.parametrize("study", sorted(STUDIES))
def test_every_variant_builds_its_env_with_the_settings_kwargs_under_its_own(study):
    env_id, variants = STUDIES[study]
    for variant in variants:
        s = setup(env_id, variant)
        assert s.env_kwargs == {**require_setting(env_id).training_kwargs(variant.algo), **variant.env_kwargs}
        env = make_env(s)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs), (study, variant.name)
        env.close()


def test_sb3_defaults_keep_only_the_policy():
    env_id, variants = STUDIES["sla_action_mode"]
    (defaults,) = [v for v in variants if v.sb3_defaults and v.env_kwargs["action_mode"] == "normalize"]
    s = setup(env_id, defaults)
    assert s.config.model_kwargs == {"policy": "MlpPolicy"} and s.config.normalize is None


def test_the_table_averages_evaluation_seeds_within_a_training_seed():
    refs = References("regret", {"a": 100.0, "b": 0.0}, naive=100.0, top=0.0, roles={"naive": "a"})
    rows = [
        {"variant": "v", "train_seed": str(seed), "timesteps": "2048", "eval_seed": str(e), "value": str(value)}
        for seed, values in ((0, (10.0, 30.0)), (1, (50.0, 70.0)))
        for e, value in enumerate(values)
    ]
    (row,) = summarize(rows, refs)
    assert row["seeds"] == 2 and row["per_seed"] == [20.0, 60.0]
    assert row["value"] == pytest.approx(40.0)
    assert row["score"] == pytest.approx(float(np.mean(normalized(np.array([20.0, 60.0]), 100.0, 0.0))))
