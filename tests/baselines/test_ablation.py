"""baselines/tuning/ablation.py: every study's variants build their envs, and a table averages evaluation seeds within a
training seed before it summarizes over training seeds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("stable_baselines3")

from baselines.eval.protocol import require_setting  # noqa: E402
from baselines.eval.stats import normalized  # noqa: E402
from baselines.tuning.ablation import STUDIES, References, make_env, run, setup, summarize  # noqa: E402


@pytest.mark.parametrize("study", sorted(STUDIES))
def test_every_variant_builds_its_env_with_the_settings_kwargs_under_its_own(study):
    env_id, variants = STUDIES[study]
    for variant in variants:
        if variant.hyperparams_file is not None and not Path(variant.hyperparams_file).is_file():
            continue  # a tuning run's candidate (results/tune/): `cluster-envs tune write --to`
        s = setup(env_id, variant)
        assert s.env_kwargs == {**require_setting(env_id).training_kwargs(variant.algo), **variant.env_kwargs}
        env = make_env(s)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs), (study, variant.name)
        env.close()


@pytest.mark.parametrize("study", ["sla_curve", "bilinear_curve"])
def test_a_missing_tuning_result_stops_the_study_before_any_training_and_says_how_to_make_it(study, tmp_path,
                                                                                             monkeypatch):  # fmt: skip
    monkeypatch.chdir(tmp_path)  # a clean clone: no results/tune/
    env_id, _ = STUDIES[study]
    with pytest.raises(FileNotFoundError, match=rf"results/tune/{env_id}-ppo.yml.*cluster-envs tune write {env_id}"):
        run(study, seeds=[0], checkpoints=[8], eval_seeds=[100], out=tmp_path / "out")
    assert not (tmp_path / "out" / f"{study}.csv").exists()


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


@pytest.mark.parametrize(
    ("env_id", "env_kwargs", "algo"),
    [
        ("ClusterSLA-v1", {"horizon": 48}, "ppo"),
        ("ClusterSLA-v1", {"horizon": 48}, "ppo_lstm"),  # the recurrent state over the batch
        ("ClusterBilinear-v0", {"horizon": 40}, "ppo"),
        ("ClusterApproxSingleJob-v0", {"horizon": 30}, "ppo"),  # a flattened Dict observation
        ("ClusterApprox-v1", {"horizon": 30, "action_mode": "paced_priority"}, "ppo"),  # a Box read on the observation
        ("ClusterGang-v0", {"horizon": 30}, "ppo_mask"),  # the batched env's action masks
    ],
)
def test_batched_evaluation_equals_one_episode_at_a_time(env_id, env_kwargs, algo):
    """Copy i of the batched env plays evaluation seed i as the single env reset with seed i does, with the
    normalizer and a recurrent policy's state, so a curve's values do not depend on the evaluation path."""
    from baselines.rl.train import make_vec_env
    from baselines.tuning.ablation import Variant, headline_values, native, new_model

    s = setup(
        env_id,
        Variant("v", algo=algo, env_kwargs=env_kwargs, hyperparams={"n_envs": 2, "n_steps": 16, "batch_size": 32}),
    )
    assert native(s)
    vec_env, used = make_vec_env(s.config, seed=7)
    assert used == "native"
    model = new_model(s.config, vec_env, seed=0)
    model.learn(total_timesteps=64)  # moves the normalizer's statistics off their start, if there is one
    normalizer = model.get_vec_normalize_env()
    seeds = [0, 3, 5]
    batched = headline_values(s, model, normalizer, seeds, batched=True)
    # equal up to float32 rounding: the network runs on a batch of rows instead of one row
    assert batched == pytest.approx(headline_values(s, model, normalizer, seeds, batched=False), rel=1e-5)
    assert len(set(batched)) > 1  # the seeds are different episodes
    vec_env.close()


def test_the_policy_agent_plays_mask_and_observation_wrappers_and_refuses_others():
    from stable_baselines3 import PPO

    from baselines.tuning.ablation import Variant, policy_agent

    env_id, variants = STUDIES["approx_action"]
    (masked,) = [v for v in variants if v.algo == "ppo_mask"]
    s = setup(env_id, masked)
    model = PPO("MlpPolicy", make_env(s), n_steps=16, batch_size=16, device="cpu")
    agent = policy_agent(s, model, None)
    assert agent.wrappers == ("gymnasium.wrappers.FlattenObservation",) and agent.action_mask is not None
    other = setup(env_id, Variant("v", wrappers=("gymnasium.wrappers.ClipReward",)))
    with pytest.raises(ValueError, match="mask wrappers .* followed by observation wrappers only"):
        policy_agent(other, model, None)


def test_plateau_is_the_first_checkpoint_inside_the_best_interval():
    from baselines.tuning.ablation import plateaus

    refs = References("regret", {"a": 100.0}, naive=100.0, top=0.0, roles={"naive": "a"})
    curve = {1000: (90.0, 80.0, 85.0), 2000: (30.0, 50.0, 40.0), 3000: (35.0, 45.0, 38.0), 4000: (33.0, 47.0, 41.0)}
    rows = [
        {"variant": "v", "train_seed": str(seed), "timesteps": str(steps), "eval_seed": "0", "value": str(value)}
        for steps, values in curve.items()
        for seed, value in enumerate(values)
    ]
    table = summarize(rows, refs)
    best = max(table, key=lambda r: r["score"])
    assert best["steps"] == 3000
    first = min(r["steps"] for r in table if r["score"] >= best["score_ci"][0])
    assert plateaus(table)["v"]["steps"] == first == 2000


def test_the_study_file_loads_and_a_bad_one_names_the_file_and_the_key(tmp_path):
    from baselines.tuning.ablation import FAST, STUDIES_FILE, StudyError, load_studies

    studies = load_studies(STUDIES_FILE)
    assert studies and set(studies) == set(STUDIES)
    _, variants = studies["approx_single_learning"]
    fast = next(v for v in variants if v.name == "fast update, gamma 0.9")
    assert {**FAST, "gamma": 0.9}.items() <= dict(fast.hyperparams).items()  # fast_update: FAST under its own
    good = {"env_id": "ClusterSLA-v1", "variants": [{"name": "shipped"}]}
    for study, message in [
        ({**good, "variants": [{"name": "a", "hyperparam": {}}]}, "s.variants[0]: unknown key 'hyperparam'"),
        ({**good, "variants": [{"name": "a", "wrappers": "x.Y"}]}, "s.variants[0].wrappers: must be a list"),
        ({**good, "variants": [{"algo": "ppo"}]}, "s.variants[0]: missing required key 'name'"),
        ({**good, "env_id": "ClusterNone-v0"}, "s.env_id: 'ClusterNone-v0' has no protocol entry"),
        ({**good, "variants": [{"name": "a"}, {"name": "a"}]}, "s.variants: names must be distinct"),
        ({"env_id": "ClusterSLA-v1"}, "s: a study must be a mapping with exactly the keys"),
    ]:
        path = tmp_path / "studies.yml"
        path.write_text(yaml.safe_dump({"s": study}))
        with pytest.raises(StudyError) as error:
            load_studies(path)
        assert str(error.value).startswith(f"{path}: ") and message in str(error.value)
