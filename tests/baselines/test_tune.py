"""baselines/tuning/tune.py: rl-zoo3's optimizer runs on an id's YAML section, and its best trial is written back into
that section (and only there) in a form the trainer and rl-zoo3 read."""

from __future__ import annotations

import shutil
from unittest import mock

import pytest

pytest.importorskip("rl_zoo3")

import yaml  # noqa: E402
from torch import nn  # noqa: E402

from baselines.eval.protocol import training_seed  # noqa: E402
from baselines.rl.config import HYPERPARAMS_DIR, RunConfig  # noqa: E402
from baselines.tuning import tune  # noqa: E402

CONVERTED = {  # what rl-zoo3's convert_onpolicy_params returns
    "policy_kwargs": {"net_arch": {"pi": [64], "vf": [64]}, "activation_fn": nn.ReLU},
    "learning_rate": 3.4e-05,
    "n_epochs": 5,
    "gamma": 0.9973,
    "batch_size": 64,
    "n_steps": 128,
    "max_grad_norm": 1.25,
}


def _section(text: str) -> str:
    return text.split("ClusterSLA-v1: &ClusterSLA-v1\n", 1)[1].split("\n\n", 1)[0]


def test_the_best_trial_replaces_its_keys_in_one_section_only(tmp_path):
    path = tmp_path / "ppo.yml"
    shutil.copy(HYPERPARAMS_DIR / "ppo.yml", path)
    original = path.read_text()
    before = yaml.safe_load(original)
    for _ in range(2):  # a second tuning replaces the first one's comment and values
        tune.write_section(path, "ClusterSLA-v1", tune.yaml_values(CONVERTED), "python -m rl_zoo3.train ...")
    text = path.read_text()
    after = yaml.safe_load(text)
    # one comment in the section; the other sections keep theirs (ClusterApproxSingleJob-v0's tuning)
    assert _section(text).count(tune.TUNED_MARK) == 1
    assert text.count(tune.TUNED_MARK) - 1 == original.count(tune.TUNED_MARK) - _section(original).count(
        tune.TUNED_MARK
    )
    tuned = ("ClusterSLA-v1", "ClusterSLARL-v1")  # the RL-ready id's section merges the base id's (a YAML alias)
    assert {k: v for k, v in after.items() if k not in tuned} == {k: v for k, v in before.items() if k not in tuned}
    assert after["ClusterSLARL-v1"] == {**after["ClusterSLA-v1"], "env_kwargs": before["ClusterSLARL-v1"]["env_kwargs"]}
    section = after["ClusterSLA-v1"]
    assert {k: section[k] for k in CONVERTED if k != "policy_kwargs"} == pytest.approx(
        {k: v for k, v in CONVERTED.items() if k != "policy_kwargs"}
    )
    assert {k: v for k, v in section.items() if k not in CONVERTED} == {
        k: v for k, v in before["ClusterSLA-v1"].items() if k not in CONVERTED
    }
    config = RunConfig.resolve("ppo", "ClusterSLA-v1", path=path)
    assert config.model_kwargs["policy_kwargs"] == CONVERTED["policy_kwargs"]
    assert config.model_kwargs["n_steps"] == 128


def test_an_unknown_section_and_bad_budgets_are_refused(tmp_path):
    path = tmp_path / "ppo.yml"
    shutil.copy(HYPERPARAMS_DIR / "ppo.yml", path)
    with pytest.raises(ValueError, match="no section"):
        tune.write_section(path, "CartPole-v1", {"n_steps": 8}, "x")
    with pytest.raises(ValueError, match="trials must be a positive integer"):
        tune.zoo_command("ClusterSLA-v1", "ppo", 0, 1000, tmp_path)


def test_the_command_tunes_on_training_seeds_with_one_thread(tmp_path):
    command = tune.zoo_command("ClusterSLA-v1", "ppo", 3, 1000, tmp_path)
    assert command[command.index("--seed") + 1] == str(training_seed(0))
    assert command[command.index("--num-threads") + 1] == "1"
    assert command[command.index("--n-jobs") + 1] == "1"
    assert "-optimize" in command


@pytest.mark.slow
def test_rl_zoo3_optimizes_and_its_best_trial_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(HYPERPARAMS_DIR.parent.parent)  # the command names the YAML relative to the repository
    out = tmp_path / "tune"
    kwargs = {"action_mode": "normalize", "horizon": 48}  # a short episode: the settings' kwargs and T = 48
    tune.run(tune.zoo_command("ClusterSLA-v1", "ppo", 2, 512, out, evaluations=1, eval_episodes=1,
                              startup_trials=1, env_kwargs=kwargs))  # fmt: skip
    params, value, finished = tune.best_trial(tune.storage_path(out, "ClusterSLA-v1", "ppo"), "ppo")
    assert finished >= 1 and value == value  # a finished trial with a number
    path = tmp_path / "ppo.yml"
    shutil.copy(HYPERPARAMS_DIR / "ppo.yml", path)
    tune.write_section(path, "ClusterSLA-v1", tune.yaml_values(params), "test")
    assert RunConfig.resolve("ppo", "ClusterSLA-v1", path=path).model_kwargs["n_steps"] == params["n_steps"]


def test_the_zoo_entry_adds_maskable_ppo_and_holds_keys_for_the_run_only():
    """`cluster-envs zoo`: rl-zoo3 knows `ppo_mask` (sampled as PPO), held keys leave the sample, and the
    evaluation callbacks rl-zoo3 builds for a MaskablePPO model evaluate it with its masks, SB3 left unpatched;
    once the run is over (or failed), rl-zoo3's tables are as they were."""
    import optuna
    import stable_baselines3.common.callbacks as sb3_callbacks
    from rl_zoo3 import exp_manager, hyperparams_opt
    from rl_zoo3.utils import ALGOS
    from sb3_contrib import MaskablePPO

    from baselines.rl.config import RunConfig
    from baselines.rl.train import make_vec_env, new_model
    from baselines.tuning import zoo

    before = (dict(ALGOS), dict(hyperparams_opt.HYPERPARAMS_SAMPLER), dict(hyperparams_opt.HYPERPARAMS_CONVERTER),
              exp_manager.TrialEvalCallback, exp_manager.EvalCallback)  # fmt: skip
    unmasked = sb3_callbacks.evaluate_policy
    with pytest.raises(RuntimeError, match="the run failed"), zoo.extended(["gamma", "gae_lambda"], algo="ppo_mask"):
        assert ALGOS["ppo_mask"] is MaskablePPO
        assert sb3_callbacks.evaluate_policy is unmasked
        trial = optuna.trial.FixedTrial({"batch_size_pow": 5, "n_steps_pow": 6, "one_minus_gamma": 0.01,
                                         "one_minus_gae_lambda": 0.05, "learning_rate": 1e-3, "ent_coef": 1e-4,
                                         "clip_range": 0.2, "n_epochs": 5, "max_grad_norm": 0.5, "net_arch": "small",
                                         "activation_fn": "relu"})  # fmt: skip
        sample = hyperparams_opt.HYPERPARAMS_SAMPLER["ppo_mask"](trial, 1, 4, {})
        assert "gamma" not in sample and "gae_lambda" not in sample
        assert sample["n_steps"] == 64 and sample["learning_rate"] == 1e-3
        config = RunConfig.resolve("ppo_mask", "ClusterGang-v0", {"horizon": 5})
        config.n_envs = 1
        config.model_kwargs.update(n_steps=8, batch_size=8)
        env, _ = make_vec_env(config, 3)
        model = new_model(config, env, 0)
        masks = []  # what the evaluation's predict is given (training samples through the policy, not predict)
        predict = model.predict
        model.predict = lambda *a, action_masks=None, **k: (
            masks.append(action_masks) or predict(*a, action_masks=action_masks, **k)
        )
        callback = exp_manager.TrialEvalCallback(model.get_env(), trial, n_eval_episodes=1, eval_freq=8)
        model.learn(8, callback=callback)  # one rollout of 8 steps: one evaluation
        assert callback.eval_idx == 1 and masks and all(mask is not None for mask in masks)
        raise RuntimeError("the run failed")
    after = (dict(ALGOS), dict(hyperparams_opt.HYPERPARAMS_SAMPLER), dict(hyperparams_opt.HYPERPARAMS_CONVERTER),
             exp_manager.TrialEvalCallback, exp_manager.EvalCallback)  # fmt: skip
    assert after == before and "ppo_mask" not in ALGOS


def test_the_zoo_manager_evaluates_a_masked_algorithm_with_its_masks_during_training():
    """rl-zoo3's training-time ``EvalCallback`` becomes sb3-contrib's masked one, with the same settings."""
    import gymnasium as gym
    from rl_zoo3.exp_manager import ExperimentManager
    from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
    from stable_baselines3.common.callbacks import EvalCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    from baselines.tuning import zoo

    manager = object.__new__(zoo.experiment_manager())
    manager.algo, manager.callbacks = "ppo_mask", []
    env = DummyVecEnv([lambda: gym.make("CartPole-v1")])

    def create_callbacks(self):  # what rl-zoo3's builds, without its envs
        self.callbacks.append(EvalCallback(env, n_eval_episodes=3, eval_freq=7, log_path="logs", deterministic=True))

    with mock.patch.object(ExperimentManager, "create_callbacks", create_callbacks):
        manager.create_callbacks()
    (callback,) = manager.callbacks
    assert type(callback) is MaskableEvalCallback and callback.eval_env is env
    assert (callback.n_eval_episodes, callback.eval_freq, callback.log_path) == (3, 7, "logs/evaluations")


def test_the_evaluation_env_gets_the_sections_env_kwargs(tmp_path):
    """rl-zoo3 would otherwise evaluate trials on the id's default kwargs (another instance here)."""
    command = tune.zoo_command("ClusterMultiServer-v0", "ppo", 2, 1000, tmp_path, hold=["gamma"])
    assert command[:4] == ["cluster-envs", "zoo", "--hold", "gamma"]
    at = command.index("--eval-env-kwargs")
    assert command[at + 1 :] == ["preset:'small'", "action_mode:'scores'"]


def test_a_held_tuning_of_the_fast_update_evaluates_on_the_sections_interface(tmp_path):
    """ClusterApproxSingleJob-v0's section (paced_priority Box actions, flat observation) is tuned with the fast
    update's shape held: the command goes through `cluster-envs zoo`, and rl-zoo3's evaluation env gets the section's
    env kwargs (at the id's defaults its spaces are a Dict observation and a MultiBinary action)."""
    hold = ["n_steps", "batch_size", "n_epochs", "gamma", "policy_kwargs"]
    command = tune.zoo_command("ClusterApproxSingleJob-v0", "ppo", 3, 1000, tmp_path, hold=hold)
    assert command[:4] == ["cluster-envs", "zoo", "--hold", ",".join(hold)]
    at = command.index("--eval-env-kwargs")
    assert command[at + 1 :] == ["reward_mode:'approx'", "action_mode:'paced_priority'", "observation_format:'flat'"]


def test_the_native_command_asks_for_the_native_path_and_caps_each_trials_cpu(tmp_path):
    command = tune.zoo_command("ClusterSLA-v1", "ppo", 3, 1000, tmp_path, eval_episodes=3, native=True,
                               trial_cpu_seconds=12.5)  # fmt: skip
    assert command[:2] == ["cluster-envs", "zoo"] and "--native" in command[2 : command.index("--algo")]
    packages = command[command.index("--gym-packages") + 1 : command.index("-conf")]
    assert packages == ["cluster_envs"]  # no module is imported for a side effect
    assert command[command.index("--n-eval-envs") + 1] == "3"
    assert "{'seconds': 12.5}" in command[command.index("--hyperparams") + 1]
    with pytest.raises(ValueError, match="trial_cpu_seconds"):
        tune.zoo_command("ClusterSLA-v1", "ppo", 3, 1000, tmp_path, trial_cpu_seconds=0)


def _one_trial_study(tmp_path, **trial):
    """The journal of ClusterSLA-v1's PPO study holding one finished trial (``trial``: its value and evaluations)."""
    import optuna

    storage = tune.storage_path(tmp_path, "ClusterSLA-v1", "ppo")
    backend = optuna.storages.journal.JournalFileBackend(str(storage))
    study = optuna.create_study(study_name=tune.study_name("ClusterSLA-v1", "ppo"), direction="maximize",
                                storage=optuna.storages.JournalStorage(backend))  # fmt: skip
    sampled = {"batch_size_pow": 6, "n_steps_pow": 7, "one_minus_gamma": 0.01, "one_minus_gae_lambda": 0.05,
               "learning_rate": 3e-4, "ent_coef": 1e-6, "clip_range": 0.2, "n_epochs": 5, "max_grad_norm": 0.5,
               "net_arch": "tiny", "activation_fn": "relu"}  # fmt: skip
    distributions = {k: optuna.distributions.CategoricalDistribution([v]) for k, v in sampled.items()}
    study.add_trial(optuna.trial.create_trial(params=sampled, distributions=distributions, **trial))
    return storage


def test_the_trials_table_shows_each_trials_evaluations_and_converted_values(tmp_path):
    storage = _one_trial_study(tmp_path, value=-12.5, intermediate_values={1: -30.0, 2: -12.5})
    rows = tune.trials_table(storage).splitlines()
    assert len(rows) == 3
    assert rows[2].startswith("| 0 | complete | -12.5 | -30, -12.5 |")
    assert "batch_size 64" in rows[2] and "n_steps 128" in rows[2] and "gamma 0.99" in rows[2]
    held = tune.trials_table(storage, hold=["n_steps", "gamma"]).splitlines()[2]  # trained with the section's
    assert "batch_size 64" in held and "n_steps" not in held and "gamma" not in held


def test_each_trial_normalizes_rewards_with_the_gamma_its_model_trains_with(monkeypatch):
    """rl-zoo3 fixes VecNormalize's gamma from the section before the sampler draws the trial's gamma."""
    import optuna
    from rl_zoo3 import hyperparams_opt

    from baselines.tuning import zoo

    sampled = {"batch_size_pow": 5, "n_steps_pow": 6, "one_minus_gamma": 0.02, "one_minus_gae_lambda": 0.05,
               "learning_rate": 1e-3, "ent_coef": 1e-4, "clip_range": 0.2, "n_epochs": 5, "max_grad_norm": 0.5,
               "net_arch": "small", "activation_fn": "relu"}  # fmt: skip

    class Manager:  # what the wrapper reads of rl-zoo3's ExperimentManager
        algo, n_actions, n_envs = "ppo", 1, 4
        normalize_kwargs = {"norm_reward": True, "gamma": 0.99}

        def objective(self, trial):  # rl-zoo3's: sample, then build the envs with normalize_kwargs, then train
            model_gamma = hyperparams_opt.HYPERPARAMS_SAMPLER["ppo"](trial, 1, 4, {}).get("gamma", 0.99)
            return self.normalize_kwargs["gamma"], model_gamma

    objective = zoo.normalizing_with_trial_gamma(Manager.objective)
    manager = Manager()
    normalized, model = objective(manager, optuna.trial.FixedTrial(sampled))
    assert normalized == model == pytest.approx(0.98) and manager.normalize_kwargs["gamma"] == 0.99  # restored
    assert Manager.objective(manager, optuna.trial.FixedTrial(sampled))[0] == 0.99  # rl-zoo3's own: the section's
    held = zoo._holding(hyperparams_opt.sample_ppo_params, frozenset({"gamma", "gae_lambda"}))
    monkeypatch.setitem(hyperparams_opt.HYPERPARAMS_SAMPLER, "ppo", held)
    assert objective(manager, optuna.trial.FixedTrial(sampled)) == (0.99, 0.99)  # held: the section's gamma


def test_write_puts_the_command_in_the_yaml_and_prints_the_best_value(tmp_path, capsys):
    """A measured value lives in the study (``tune trials``), not in the hyperparameter file."""
    from baselines.cli import main

    _one_trial_study(tmp_path, value=-12.5)
    to = tmp_path / "ppo.yml"
    assert main(["tune", "write", "ClusterSLA-v1", "--out", str(tmp_path), "--trials", "1", "--to", str(to)]) == 0
    assert "regret 12.5 on validation seeds 100-104" in capsys.readouterr().out
    (tuned,) = [line for line in _section(to.read_text()).splitlines() if tune.TUNED_MARK in line]
    assert tuned.endswith("(budget 1 trials x 50000 steps; best of 1)") and "12.5" not in tuned
