"""baselines/tune.py: rl-zoo3's optimizer runs on an id's YAML section, and its best trial is written back into
that section (and only there) in a form the trainer and rl-zoo3 read."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("rl_zoo3")

import yaml  # noqa: E402
from torch import nn  # noqa: E402

from baselines import tune  # noqa: E402
from baselines.rl import HYPERPARAMS_DIR, RunConfig, training_seed  # noqa: E402

CONVERTED = {  # what rl-zoo3's convert_onpolicy_params returns
    "policy_kwargs": {"net_arch": {"pi": [64], "vf": [64]}, "activation_fn": nn.ReLU},
    "learning_rate": 3.4e-05,
    "n_epochs": 5,
    "gamma": 0.9973,
    "batch_size": 64,
    "n_steps": 128,
    "max_grad_norm": 1.25,
}


def test_the_best_trial_replaces_its_keys_in_one_section_only(tmp_path):
    path = tmp_path / "ppo.yml"
    shutil.copy(HYPERPARAMS_DIR / "ppo.yml", path)
    before = yaml.safe_load(path.read_text())
    for _ in range(2):  # a second tuning replaces the first one's comment and values
        tune.write_section(path, "ClusterSLA-v0", tune.yaml_values(CONVERTED), "python -m rl_zoo3.train ...")
    text = path.read_text()
    after = yaml.safe_load(text)
    assert text.count(tune.TUNED_MARK) == 1
    assert {k: v for k, v in after.items() if k != "ClusterSLA-v0"} == {
        k: v for k, v in before.items() if k != "ClusterSLA-v0"
    }
    section = after["ClusterSLA-v0"]
    assert {k: section[k] for k in CONVERTED if k != "policy_kwargs"} == pytest.approx(
        {k: v for k, v in CONVERTED.items() if k != "policy_kwargs"}
    )
    assert {k: v for k, v in section.items() if k not in CONVERTED} == {
        k: v for k, v in before["ClusterSLA-v0"].items() if k not in CONVERTED
    }
    config = RunConfig.resolve("ppo", "ClusterSLA-v0", path=path)
    assert config.model_kwargs["policy_kwargs"] == CONVERTED["policy_kwargs"]
    assert config.model_kwargs["n_steps"] == 128


def test_an_unknown_section_and_bad_budgets_are_refused(tmp_path):
    path = tmp_path / "ppo.yml"
    shutil.copy(HYPERPARAMS_DIR / "ppo.yml", path)
    with pytest.raises(ValueError, match="no section"):
        tune.write_section(path, "CartPole-v1", {"n_steps": 8}, "x")
    with pytest.raises(ValueError, match="trials must be a positive integer"):
        tune.zoo_command("ClusterSLA-v0", "ppo", 0, 1000, tmp_path)


def test_the_command_tunes_on_training_seeds_with_one_thread(tmp_path):
    command = tune.zoo_command("ClusterSLA-v0", "ppo", 3, 1000, tmp_path)
    assert command[command.index("--seed") + 1] == str(training_seed(0))
    assert command[command.index("--num-threads") + 1] == "1"
    assert command[command.index("--n-jobs") + 1] == "1"
    assert "-optimize" in command


@pytest.mark.slow
def test_rl_zoo3_optimizes_and_its_best_trial_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(HYPERPARAMS_DIR.parent.parent)  # the command names the YAML relative to the repository
    out = tmp_path / "tune"
    kwargs = {"action_mode": "normalize", "horizon": 48}  # a short episode: the settings' kwargs and T = 48
    tune.run(tune.zoo_command("ClusterSLA-v0", "ppo", 2, 512, out, evaluations=1, eval_episodes=1,
                              startup_trials=1, env_kwargs=kwargs))  # fmt: skip
    params, value, finished = tune.best_trial(tune.storage_path(out, "ClusterSLA-v0", "ppo"), "ClusterSLA-v0", "ppo")
    assert finished >= 1 and value == value  # a finished trial with a number
    path = tmp_path / "ppo.yml"
    shutil.copy(HYPERPARAMS_DIR / "ppo.yml", path)
    tune.write_section(path, "ClusterSLA-v0", tune.yaml_values(params), "test")
    assert RunConfig.resolve("ppo", "ClusterSLA-v0", path=path).model_kwargs["n_steps"] == params["n_steps"]


def test_the_command_states_the_sections_env_kwargs_so_rl_zoo3_evaluates_the_trained_env(tmp_path):
    # rl-zoo3 2.9 builds its evaluation env from --env-kwargs only: without them it evaluates the default env
    command = tune.zoo_command("ClusterBilinear-v0", "ppo", 3, 1000, tmp_path)
    stated = command[command.index("--env-kwargs") + 1 :]
    expected = RunConfig.resolve("ppo", "ClusterBilinear-v0").env_kwargs
    assert sorted(stated) == sorted(f"{key}:{value!r}" for key, value in expected.items())


def test_the_native_command_imports_the_native_path_and_caps_each_trials_cpu(tmp_path):
    command = tune.zoo_command("ClusterSLA-v0", "ppo", 3, 1000, tmp_path, eval_episodes=3, native=True,
                               trial_cpu_seconds=12.5)  # fmt: skip
    packages = command[command.index("--gym-packages") + 1 : command.index("-conf")]
    assert packages == ["cluster_envs", "baselines.zoo_native"]
    assert command[command.index("--n-eval-envs") + 1] == "3"
    assert "{'seconds': 12.5}" in command[command.index("--hyperparams") + 1]
    with pytest.raises(ValueError, match="trial_cpu_seconds"):
        tune.zoo_command("ClusterSLA-v0", "ppo", 3, 1000, tmp_path, trial_cpu_seconds=0)


def test_the_trials_table_shows_each_trials_evaluations_and_converted_values(tmp_path):
    import optuna

    storage = tune.storage_path(tmp_path, "ClusterSLA-v0", "ppo")
    backend = optuna.storages.journal.JournalFileBackend(str(storage))
    study = optuna.create_study(study_name=tune.study_name("ClusterSLA-v0", "ppo"), direction="maximize",
                                storage=optuna.storages.JournalStorage(backend))  # fmt: skip
    sampled = {"batch_size_pow": 6, "n_steps_pow": 7, "one_minus_gamma": 0.01, "one_minus_gae_lambda": 0.05,
               "learning_rate": 3e-4, "ent_coef": 1e-6, "clip_range": 0.2, "n_epochs": 5, "max_grad_norm": 0.5,
               "net_arch": "tiny", "activation_fn": "relu"}  # fmt: skip
    distributions = {k: optuna.distributions.CategoricalDistribution([v]) for k, v in sampled.items()}
    study.add_trial(optuna.trial.create_trial(params=sampled, distributions=distributions, value=-12.5,
                                              intermediate_values={1: -30.0, 2: -12.5}))  # fmt: skip
    rows = tune.trials_table(storage, "ClusterSLA-v0", "ppo").splitlines()
    assert len(rows) == 3
    assert rows[2].startswith("| 0 | complete | -12.5 | -30, -12.5 |")
    assert "batch_size 64" in rows[2] and "n_steps 128" in rows[2] and "gamma 0.99" in rows[2]
