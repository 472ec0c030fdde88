"""baselines/tuning/objective.py: rl-zoo3's trial evaluation scored by the headline metric on fixed validation seeds,
so the same policy gets the same value at every evaluation, and `cluster-envs tune run` optimizes it end to end."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rl_zoo3")

import optuna  # noqa: E402
import torch  # noqa: E402
from stable_baselines3.common.logger import configure  # noqa: E402

from baselines.eval.protocol import VALIDATION_SEEDS  # noqa: E402
from baselines.rl.config import RunConfig  # noqa: E402
from baselines.rl.train import make_vec_env, new_model  # noqa: E402
from baselines.tuning import tune, zoo  # noqa: E402
from baselines.tuning.ablation import headline_values  # noqa: E402
from baselines.tuning.objective import HeadlineTrialEvalCallback  # noqa: E402

KWARGS = {"action_mode": "normalize", "horizon": 48}  # ClusterSLA-v1 with the settings' kwargs, T = 48


def _callback(env_id="ClusterSLA-v1", kwargs=KWARGS, seeds=(100, 101, 102)):
    config = RunConfig.resolve("ppo", env_id, kwargs)
    config.n_envs = 2
    env, _ = make_vec_env(config, 10**9)
    model = new_model(config, env, 0)
    model.set_logger(configure(None, []))  # as learn() would
    study = optuna.create_study(direction="maximize")
    callback = HeadlineTrialEvalCallback(model.get_env(), study.ask(), eval_freq=1, env_id=env_id, algo="ppo",
                                         env_kwargs=kwargs, seeds=seeds)  # fmt: skip
    callback.init_callback(model)
    return callback, model


def test_two_evaluations_of_the_same_policy_give_the_same_value_the_headline_on_the_seeds():
    callback, model = _callback()
    callback.on_step()
    first = callback.last_mean_reward
    model.get_env().reset()  # the training env moves on between evaluations; the validation episodes do not
    model.get_env().step(np.stack([model.action_space.sample() for _ in range(2)]))
    callback.on_step()
    assert callback.last_mean_reward == first
    # the value is -regret, averaged over the seeds, computed here episode by episode on single envs
    regret = headline_values(callback.setup, model, model.get_vec_normalize_env(), (100, 101, 102), batched=False)
    assert first == pytest.approx(-np.mean(regret), rel=1e-9)
    assert callback.last_values == pytest.approx(regret, rel=1e-9)
    assert callback.trial.study.trials[0].intermediate_values == {1: first, 2: first}  # what the pruner sees


def test_a_higher_is_better_headline_is_not_negated_and_empty_seeds_are_refused():
    kwargs = {"action_mode": "work_conserving", "observation_format": "flat", "horizon": 20}
    callback, _ = _callback("ClusterApprox-v1", kwargs, seeds=(100,))
    callback.on_step()
    assert callback.last_mean_reward == callback.last_values[0]  # utility: larger is better as it is
    with pytest.raises(ValueError, match="seeds"):
        _callback(seeds=())


def test_the_headline_objective_is_the_default_and_names_its_own_study(tmp_path):
    command = tune.zoo_command("ClusterSLA-v1", "ppo", 2, 1000, tmp_path)
    assert command[2:4] == ["--objective-seeds", ",".join(map(str, VALIDATION_SEEDS))]
    assert command[command.index("--study-name") + 1] == "ClusterSLA-v1-ppo-headline"
    old = tune.zoo_command("ClusterSLA-v1", "ppo", 2, 1000, tmp_path, objective="return")
    assert "--objective-seeds" not in old and old[old.index("--study-name") + 1] == "ClusterSLA-v1-ppo"
    with pytest.raises(ValueError, match="seeds"):  # a training seed is no validation seed
        tune.zoo_command("ClusterSLA-v1", "ppo", 2, 1000, tmp_path, seeds=[10**9])
    second = tune.zoo_command("ClusterSLA-v1", "ppo", 2, 1000, tmp_path, worker=1)  # another process, same study
    assert second[second.index("--seed") + 1] != command[command.index("--seed") + 1]
    assert second[second.index("--storage") + 1] == command[command.index("--storage") + 1]
    target = zoo.zoo_target(command[4:])  # what cluster-envs zoo reads of rl-zoo3's arguments
    assert target == {"env_id": "ClusterSLA-v1", "algo": "ppo", "env_kwargs": {"action_mode": "normalize"}}


def test_two_tiny_trials_are_scored_by_the_headline_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tune.HYPERPARAMS_DIR.parent.parent)  # the command names the YAML relative to the repository
    hold = ["n_steps", "batch_size", "n_epochs"]  # the section's one 2,048-step rollout per trial
    tune.run(tune.zoo_command("ClusterSLA-v1", "ppo", 2, 256, tmp_path, evaluations=2, startup_trials=1,
                              env_kwargs=KWARGS, hold=hold))  # fmt: skip
    storage = tune.storage_path(tmp_path, "ClusterSLA-v1", "ppo")
    trials = tune._load_study(storage).trials
    assert len(trials) == 2
    for trial in trials:  # each evaluation is -mean regret on the 5 validation seeds
        values = list(trial.intermediate_values.values())
        assert values and all(np.isfinite(values))
        if trial.state == optuna.trial.TrialState.COMPLETE:
            assert trial.value == values[-1]
    params, value, finished = tune.best_trial(storage, "ppo", hold)
    assert finished >= 1 and not set(hold) & set(params)
    assert "regret" in tune.objective_text("ClusterSLA-v1", "headline", value, VALIDATION_SEEDS)


class _Manager:
    """What `over_training_seeds` uses of rl-zoo3's ExperimentManager: `seed`, and an objective that samples a
    hyperparameter, reports two evaluations and returns the last (a value that depends on the training seed and
    the global generator, as a training run's does)."""

    seed = 10**9 + 7

    def objective(self, trial):
        rate = trial.suggest_float("learning_rate", 1e-5, 1.0, log=True)
        noise = torch.rand(1).item()  # the network's initialization: torch's global generator
        first, last = -self.seed % 97 - noise, -self.seed % 89 - rate - noise
        trial.report(first, 1)
        trial.report(last, 2)
        if trial.should_prune():
            raise optuna.TrialPruned()
        return last


def _study(objective, pruner=None):
    from stable_baselines3.common.utils import set_random_seed

    set_random_seed(3)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0), pruner=pruner)
    manager = _Manager()
    study.optimize(lambda trial: objective(manager, trial), n_trials=2)
    assert manager.seed == _Manager.seed  # restored for the next trial
    return study


def test_a_trial_over_three_training_seeds_is_the_mean_of_three_models_with_the_same_hyperparameters():
    from baselines.tuning.objective import model_seed, over_training_seeds

    study = _study(over_training_seeds(_Manager.objective, 3))
    for trial in study.trials:
        seeds, values = trial.user_attrs["model_seeds"], trial.user_attrs["model_values"]
        assert seeds[0] == _Manager.seed and len(set(seeds)) == 3 and min(seeds) >= 10**9  # training seeds
        assert seeds == [model_seed(_Manager.seed, j) for j in range(3)]
        assert trial.value == pytest.approx(np.mean(values))
        rate = trial.params["learning_rate"]  # each model trained with the trial's one sample
        assert [-s % 89 - v for s, v in zip(seeds, values, strict=True)] == pytest.approx([rate] * 3, abs=1.01)
        # steps 1..6: model j's evaluation k at 2j + k, the mean over models 0..j at their evaluation k
        steps = trial.intermediate_values
        assert sorted(steps) == [1, 2, 3, 4, 5, 6]
        assert steps[2] == pytest.approx(values[0]) and steps[4] == pytest.approx(np.mean(values[:2]))
        assert steps[6] == pytest.approx(trial.value)
    assert study.trials[0].user_attrs["model_values"] != study.trials[1].user_attrs["model_values"]


def test_one_training_seed_is_rl_zoo3s_objective_and_a_pruned_model_prunes_the_trial():
    from baselines.tuning.objective import over_training_seeds

    assert over_training_seeds(_Manager.objective, 1) is _Manager.objective
    once, plain = _study(over_training_seeds(_Manager.objective, 1)), _study(_Manager.objective)
    assert [t.value for t in once.trials] == [t.value for t in plain.trials]
    assert [t.intermediate_values for t in once.trials] == [t.intermediate_values for t in plain.trials]
    with pytest.raises(ValueError, match="trial_seeds"):
        over_training_seeds(_Manager.objective, 0)
    pruned = _study(over_training_seeds(_Manager.objective, 2), optuna.pruners.ThresholdPruner(upper=0.0))
    for trial in pruned.trials:  # pruned after model 0's evaluations, before any model finished
        assert trial.state == optuna.trial.TrialState.PRUNED
        assert list(trial.intermediate_values) == [1, 2] and "model_values" not in trial.user_attrs


def test_a_tiny_study_over_two_training_seeds_scores_each_model_by_the_headline_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tune.HYPERPARAMS_DIR.parent.parent)
    hold = ["n_steps", "batch_size", "n_epochs"]
    command = tune.zoo_command("ClusterSLA-v1", "ppo", 1, 256, tmp_path, evaluations=2, startup_trials=1,
                               env_kwargs=KWARGS, hold=hold, trial_seeds=2)  # fmt: skip
    assert command[command.index("--trial-seeds") + 1] == "2"
    tune.run(command)
    storage = tune.storage_path(tmp_path, "ClusterSLA-v1", "ppo", trial_seeds=2)
    assert storage.name == "ClusterSLA-v1-ppo-headline-seeds2.log"
    (trial,) = tune._load_study(storage).trials
    values, seeds = trial.user_attrs["model_values"], trial.user_attrs["model_seeds"]
    assert len(values) == 2 and len(set(seeds)) == 2
    steps = [trial.intermediate_values[k] for k in sorted(trial.intermediate_values)]
    assert steps[1] == values[0]  # model 0's last evaluation: -mean regret on the validation seeds
    assert trial.value == pytest.approx(np.mean(values)) == pytest.approx(steps[-1])
    table = tune.trials_table(storage, hold).splitlines()
    assert "per training seed" in table[0] and f"{values[0]:.4g}, {values[1]:.4g}" in table[2]
    assert "mean of 2 training seeds" in tune.objective_text("ClusterSLA-v1", "headline", trial.value, (100,), 2)
