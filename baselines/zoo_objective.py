"""rl-zoo3's trial evaluation scored by the benchmark's headline metric on fixed validation seeds.

rl-zoo3's objective (``ExperimentManager.objective``) scores a trial with its ``TrialEvalCallback``: the mean
return of deterministic episodes of an evaluation env seeded once when the trial starts, so evaluation k plays
other episodes than evaluation k + 1, each with its own instance. Where the instance is drawn per episode that
return ranks episodes, not policies (docs/rl_curves/tuning.md, "Tuning": on ClusterBilinear-v0 a policy that never
updated scored 1,379-1,701 from one evaluation to the next). :class:`HeadlineTrialEvalCallback` keeps
everything of rl-zoo3's callback (its evaluation frequency, its reports to Optuna at each evaluation, the
pruning, the value the objective returns: ``last_mean_reward``) and replaces only the evaluation itself: the
benchmark's headline metric of the deterministic policy on the same validation seeds at every evaluation of
every trial (``baselines.ablation.evaluate_policy``: one batch of the id's native env where it can run the
section, else episode by episode), so trials are compared paired, on the episodes the learning curves'
validation uses. Its sign makes larger better (``-regret``; ``utility`` as is): for fixed seeds it is an
increasing affine function of the benchmark's normalized score, so it ranks trials as that score does.

``python -m baselines.zoo --objective-seeds 100-104 ...`` installs it (``baselines.tune run`` does by default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from rl_zoo3.callbacks import TrialEvalCallback
from stable_baselines3.common.callbacks import EvalCallback

from baselines.rl import VALIDATION_SEEDS


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
        from baselines.ablation import Variant, setup
        from baselines.rl import MASKED
        from baselines.settings import require_setting

        super().__init__(eval_env, trial, *args, **kwargs)
        if not seeds:
            raise ValueError("seeds must name at least one validation seed")
        self.seeds = tuple(int(seed) for seed in seeds)
        self.setup = setup(env_id, Variant("tuning", algo=algo, env_kwargs=dict(env_kwargs or {})))
        self.masked = algo in MASKED
        setting = require_setting(env_id)
        self.sign = float(setting.metrics[setting.headline])  # HIGHER = 1, LOWER = -1: larger is better
        self.last_values: list[float] = []

    def evaluate(self) -> list[float]:
        """The deterministic policy's headline on each validation seed (the training env's normalization)."""
        from baselines.ablation import evaluate_policy, native
        from baselines.bench import has_vector_entry_point

        batched = native(self.setup) and has_vector_entry_point(self.setup.env_id)
        normalizer = self.model.get_vec_normalize_env()
        return evaluate_policy(self.setup, self.model, normalizer, self.seeds, self.masked, batched)
