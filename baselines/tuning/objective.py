"""rl-zoo3's trial evaluation scored by the benchmark's headline metric on fixed validation seeds.

rl-zoo3's objective (``ExperimentManager.objective``) scores a trial with its ``TrialEvalCallback``: the mean
return of deterministic episodes of an evaluation env seeded once when the trial starts, so evaluation k plays
other episodes than evaluation k + 1, each with its own instance. Where the instance is drawn per episode that
return ranks episodes, not policies (docs/appendix/rl_curves/tuning.md, "Tuning").
:class:`HeadlineTrialEvalCallback` keeps everything of rl-zoo3's callback (its evaluation frequency, its reports
to Optuna at each evaluation, the pruning, the value the objective returns: ``last_mean_reward``) and replaces
only the evaluation itself: the benchmark's headline metric of the deterministic policy on the same validation
seeds at every evaluation of every trial (``baselines.tuning.ablation.headline_values``, which plays through
``baselines.eval.harness.evaluate``: one batch of the id's native env where it can run the section, else episode
by episode), so trials are compared paired, on the episodes the learning curves' validation uses. Its sign makes
larger better (``-regret``; ``utility`` as is): for fixed seeds it is an increasing affine function of the
benchmark's normalized score, so it ranks trials as that score does.

``cluster-envs zoo --objective-seeds 100-104 ...`` installs it (``baselines.tuning.tune run`` does by
default).

**Several training seeds per trial** (:func:`over_training_seeds`, ``--trial-seeds n``). One training run does
not rank configurations where a run's score depends much on its seed (ClusterBilinear-v0: a policy's regret per
episode is bimodal, docs/rl_curves). The wrapped ``ExperimentManager.objective`` runs rl-zoo3's own objective
``n`` times in a row on the same trial, each time with the same sampled hyperparameters (Optuna returns a
parameter's value again when the trial suggests it again) and another training seed (:func:`model_seed`), and
returns the mean of the ``n`` values. Each model reports to Optuna through :class:`_ModelTrial`: the trial's
evaluations are numbered in order over its models (model j's evaluation k is step ``j * E + k`` with E
evaluations per model), and the value reported there is the mean over models 0..j at their evaluation k, so at
every step all trials are compared on the same quantity, and during the last model on the mean over all ``n``
seeds at that evaluation point. The median pruner then prunes as it does for one model.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from rl_zoo3.callbacks import TrialEvalCallback
from stable_baselines3.common.callbacks import EvalCallback

from baselines.eval.protocol import TRAIN_SEED_BASE, VALIDATION_SEEDS, require_setting
from baselines.perf.steps import has_vector_entry_point
from baselines.tuning.ablation import Variant, headline_values, native, setup


class _HeadlineEvaluation(EvalCallback):
    """The evaluation step ``TrialEvalCallback._on_step`` calls (``super()._on_step()``, which this class
    answers in :class:`HeadlineTrialEvalCallback`'s method resolution order, before ``EvalCallback``)."""

    def _on_step(self) -> bool:
        self.last_values = self.evaluate()
        self.last_mean_reward = self.sign * float(np.mean(self.last_values))
        self.logger.record("eval/headline", float(np.mean(self.last_values)))
        return True


class HeadlineTrialEvalCallback(TrialEvalCallback, _HeadlineEvaluation):
    """rl-zoo3's ``TrialEvalCallback`` whose evaluation is the headline metric of ``env_id`` (``algo``'s section,
    ``env_kwargs`` on top of the settings' training kwargs: those of rl-zoo3's evaluation env) on ``seeds``.
    ``last_values`` holds the last evaluation's headline per seed, ``last_mean_reward`` their signed mean."""

    def __init__(self, eval_env: Any, trial: Any, *args: Any, env_id: str, algo: str,
                 env_kwargs: Mapping[str, Any] | None = None, seeds: Sequence[int] = VALIDATION_SEEDS,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(eval_env, trial, *args, **kwargs)
        if not seeds:
            raise ValueError("seeds must name at least one validation seed")
        self.seeds = tuple(int(seed) for seed in seeds)
        self.setup = setup(env_id, Variant("tuning", algo=algo, env_kwargs=dict(env_kwargs or {})))
        setting = require_setting(env_id)
        self.sign = float(setting.metrics[setting.headline])  # HIGHER = 1, LOWER = -1: larger is better
        self.last_values: list[float] = []

    def evaluate(self) -> list[float]:
        """The deterministic policy's headline on each validation seed (the training env's normalization)."""
        batched = native(self.setup) and has_vector_entry_point(self.setup.env_id)
        return headline_values(self.setup, self.model, self.model.get_vec_normalize_env(), self.seeds, batched)


def model_seed(seed: int, index: int) -> int:
    """The training seed of model ``index`` of a trial run from rl-zoo3's ``--seed`` ``seed``: ``seed`` itself for
    the first (a one-model trial is exactly rl-zoo3's), for the others a seed drawn from ``(seed, index)`` above
    the evaluation seeds (not ``seed + index``: SB3 seeds a VecEnv's copies ``seed``, ``seed + 1``, ...)."""
    if index == 0:
        return int(seed)
    return TRAIN_SEED_BASE + int(np.random.SeedSequence([int(seed), index]).generate_state(1)[0] % 2**30)


class _ModelTrial:
    """The Optuna trial as one model of a multi-seed trial sees it: the trial itself (its sampled parameters,
    ``should_prune``, its number), except that ``report`` records the model's value and reports to the trial the
    mean over the models so far at this evaluation, at the trial's next step. ``evaluations[j]``: model j's
    values, one per evaluation."""

    def __init__(self, trial: Any, index: int, evaluations: list[list[float]]) -> None:
        self._trial = trial
        self._index = index
        self._evaluations = evaluations

    def __getattr__(self, name: str) -> Any:
        return getattr(self._trial, name)

    def report(self, value: float, step: int) -> None:
        own = self._evaluations[self._index]
        own.append(float(value))
        at_k = [values[len(own) - 1] for values in self._evaluations[: self._index + 1] if len(values) >= len(own)]
        step = sum(len(values) for values in self._evaluations)  # models run one after the other
        self._trial.report(float(np.mean(at_k)), step)


def over_training_seeds(objective: Any, n: int) -> Any:
    """rl-zoo3's ``ExperimentManager.objective`` (``objective``) run for ``n`` models per trial, one after the
    other, with training seeds ``model_seed(manager.seed, j)``: returns their values' mean. Model j > 0 also
    reseeds the global generators (``set_random_seed``: its network's initialization), as rl-zoo3 does once
    before the study. The trial's user attributes ``model_seeds`` and ``model_values`` list the models finished
    so far (those of a pruned trial included). ``n = 1`` returns ``objective`` itself."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"trial_seeds must be a positive integer, got {n!r}")
    if n == 1:
        return objective
    from stable_baselines3.common.utils import set_random_seed

    @functools.wraps(objective)
    def objective_over_seeds(manager: Any, trial: Any) -> float:
        base = manager.seed
        evaluations: list[list[float]] = [[] for _ in range(n)]
        seeds: list[int] = []
        values: list[float] = []
        try:
            for index in range(n):
                if index:  # the first model runs as rl-zoo3 runs a trial
                    manager.seed = model_seed(base, index)
                    set_random_seed(manager.seed)
                value = objective(manager, _ModelTrial(trial, index, evaluations))
                seeds.append(int(manager.seed))
                values.append(float(value))
                trial.set_user_attr("model_seeds", seeds)
                trial.set_user_attr("model_values", values)
        finally:
            manager.seed = base  # the next trial's first model: rl-zoo3's seed
        return float(np.mean(values))

    return objective_over_seeds
