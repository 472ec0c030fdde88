"""rl-zoo3's ``train`` entry (training and ``-optimize``) with what this package adds to it, one job:

    cluster-envs zoo [--hold gamma,gae_lambda] [--objective-seeds 100-104] [--trial-seeds 3] \
        [--native] <rl_zoo3.train arguments>

Nothing changes on import. :func:`run_from_args` runs ``train`` inside :func:`extended`, which adds to rl-zoo3's
algorithm, sampler and trial-callback tables (which its ``train`` and ``ExperimentManager`` read by name; rl-zoo3
has no other way in) and hands ``train`` the :func:`experiment_manager` subclass for the run only: rl-zoo3's
tables are as they were once it returns or fails, and SB3 and rl-zoo3's classes are left as they are.

- **MaskablePPO as ``ppo_mask``.** rl-zoo3 2.9.2's ``ALGOS`` has no MaskablePPO (sb3-contrib's), so this
  registers it under the name ``baselines.rl.train`` uses, with rl-zoo3's own PPO sampler and converter
  (``sample_ppo_params``, ``convert_onpolicy_params``: MaskablePPO has PPO's hyperparameters). Its training
  collects the envs' ``action_masks()`` itself. rl-zoo3's evaluation callbacks (``EvalCallback`` in training,
  ``-optimize``'s ``TrialEvalCallback``) call SB3's ``evaluate_policy``, which passes no mask, so for ``ppo_mask``
  the callbacks are sb3-contrib's masked ones (``MaskableEvalCallback``, from :func:`experiment_manager`'s
  ``create_callbacks``, and :class:`MaskableTrialEvalCallback` for the return objective; the headline
  objective's callback passes the masks itself): the policy is scored as it acts. SB3 itself is left as it is.
- **Held hyperparameters** (``--hold``): keys of the YAML section that the optimizer must not change. rl-zoo3's
  PPO sampler always samples γ (0.97-0.9999) and λ, but a contextual bandit's γ is 0 by its definition
  (spec §3.11: an action does not change later observations; ClusterMultiServer-v0, ClusterGang-v0), not a
  tunable, and λ has no effect at γ = 0. The sampler's output is passed on without those keys, so the trial
  trains with the section's values (TPE still draws them; they are inert).
- **The headline objective** (``--objective-seeds``): trials are scored by the benchmark's headline metric of
  the deterministic policy on those fixed validation seeds, the same episodes at every evaluation of every trial
  (``baselines.tuning.objective.HeadlineTrialEvalCallback`` in place of rl-zoo3's ``TrialEvalCallback``, which
  scores the return of whichever episodes its evaluation env yields next). The id, the algorithm and the
  evaluation env's kwargs are read from rl-zoo3's own arguments (``--env``, ``--algo``, ``--eval-env-kwargs``).
- **Reward normalization with the trial's γ.** rl-zoo3 sets ``VecNormalize``'s γ to the section's γ once, before
  the study ("use the same discount factor as for the algorithm"), and its sampler then draws another γ per trial,
  so a trial that samples γ trains with a reward scale that the written section would not have: the benchmark
  (``baselines.rl.train``), like rl-zoo3's own training, normalizes with the section's γ. A trial's values
  then need not hold once trained as written (docs/appendix/rl_curves/bilinear.md).
  :func:`normalizing_with_trial_gamma` gives each trial's envs the γ its model uses
  (the section's where γ is held).
- **Several training seeds per trial** (``--trial-seeds n``): each trial trains ``n`` models with the same sampled
  hyperparameters and other training seeds, one after the other, and its value is the mean of theirs
  (``baselines.tuning.objective.over_training_seeds`` as :func:`experiment_manager`'s ``objective``; the pruner sees the
  mean over the models so far at each evaluation).

- **Native batched envs** (``--native``): :func:`experiment_manager`'s ``default_vec_env_cls`` is
  ``baselines.tuning.zoo_native.native_vec_env``.

Everything else (the TPE sampler, the median pruner, the journal storage) is rl-zoo3's.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from unittest import mock

import rl_zoo3.train
from rl_zoo3 import exp_manager, hyperparams_opt
from rl_zoo3.callbacks import TrialEvalCallback
from rl_zoo3.exp_manager import ExperimentManager
from rl_zoo3.hyperparams_opt import HYPERPARAMS_CONVERTER, HYPERPARAMS_SAMPLER
from rl_zoo3.utils import ALGOS, StoreDict
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
from stable_baselines3.common.callbacks import EvalCallback

from baselines.eval.protocol import parse_seeds
from baselines.rl.config import MASKED
from baselines.tuning import zoo_native
from baselines.tuning.objective import HeadlineTrialEvalCallback, over_training_seeds

ALGO = "ppo_mask"


class MaskableTrialEvalCallback(TrialEvalCallback, MaskableEvalCallback):
    """rl-zoo3's ``TrialEvalCallback`` whose evaluation (``super()._on_step()``) is sb3-contrib's masked one."""


@contextlib.contextmanager
def extended(hold: Sequence[str] = (), objective: Mapping[str, Any] | None = None, algo: str | None = None,
             manager: type[ExperimentManager] | None = None) -> Iterator[None]:  # fmt: skip
    """rl-zoo3 with this package's additions for the duration of the block, and exactly as it was after it (even
    when the block fails): ``ppo_mask`` in its algorithm, sampler and converter tables, ``hold``'s keys held at the
    YAML's values during optimization, with ``objective`` (``HeadlineTrialEvalCallback``'s keyword arguments:
    ``env_id``, ``algo``, ``env_kwargs``, ``seeds``) trials scored by the headline on fixed validation seeds, and
    ``manager`` (an :func:`experiment_manager` class) as the manager ``rl_zoo3.train.train`` builds. ``algo``
    (default ``objective``'s): the algorithm rl-zoo3 runs; a masked one's trials are evaluated with its masks.

    rl-zoo3 2.9.2 has no registration function or argument for any of these: ``train()`` and
    ``ExperimentManager`` read its module-level tables and names at the point of use (``ALGOS[self.algo]``,
    ``HYPERPARAMS_SAMPLER[self.algo]``, ``TrialEvalCallback(...)`` inside ``objective``, ``ExperimentManager(...)``
    inside ``train``), so the only alternative to entries added for the block is a copy of those functions."""
    samplers = {**HYPERPARAMS_SAMPLER, ALGO: hyperparams_opt.sample_ppo_params}
    if hold:
        samplers = {name: _holding(sampler, frozenset(hold)) for name, sampler in samplers.items()}
    algo = objective["algo"] if algo is None and objective is not None else algo
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.dict(ALGOS, {ALGO: MaskablePPO}))
        stack.enter_context(mock.patch.dict(HYPERPARAMS_CONVERTER, {ALGO: hyperparams_opt.convert_onpolicy_params}))
        stack.enter_context(mock.patch.dict(HYPERPARAMS_SAMPLER, samplers))
        if objective is not None:
            trial_callback = functools.partial(HeadlineTrialEvalCallback, **objective)
            stack.enter_context(mock.patch.object(exp_manager, "TrialEvalCallback", trial_callback))
        elif algo in MASKED:
            stack.enter_context(mock.patch.object(exp_manager, "TrialEvalCallback", MaskableTrialEvalCallback))
        if manager is not None:
            stack.enter_context(mock.patch.object(rl_zoo3.train, "ExperimentManager", manager))
        yield


def experiment_manager(trial_seeds: int = 1, native: bool = False) -> type[ExperimentManager]:
    """rl-zoo3's ``ExperimentManager`` with this package's objective (each trial normalizes with its own γ and
    is the mean over ``trial_seeds`` models), a masked algorithm's training-time evaluation with its masks
    (``create_callbacks``: sb3-contrib's ``MaskableEvalCallback`` in place of SB3's ``EvalCallback``, same
    settings) and, with ``native``, the native batched envs (its ``default_vec_env_cls`` hook): a subclass, so
    rl-zoo3's class is left as it is."""
    attributes: dict[str, Any] = {
        "objective": over_training_seeds(normalizing_with_trial_gamma(ExperimentManager.objective), trial_seeds),
        "create_callbacks": _create_callbacks,
    }
    if native:
        attributes["default_vec_env_cls"] = staticmethod(zoo_native.native_vec_env)
    return type("ClusterExperimentManager", (ExperimentManager,), attributes)


def _create_callbacks(manager: ExperimentManager) -> None:
    """``ExperimentManager.create_callbacks``, whose ``EvalCallback`` becomes sb3-contrib's masked one (the same
    environment, frequency, episodes, paths and best-model callback) for a masked algorithm."""
    ExperimentManager.create_callbacks(manager)
    if manager.algo in MASKED:
        manager.callbacks = [_masked(callback) if type(callback) is EvalCallback else callback
                             for callback in manager.callbacks]  # fmt: skip


def _masked(callback: EvalCallback) -> MaskableEvalCallback:
    return MaskableEvalCallback(
        callback.eval_env,
        callback_on_new_best=callback.callback_on_new_best,
        n_eval_episodes=callback.n_eval_episodes,
        eval_freq=callback.eval_freq,
        log_path=None if callback.log_path is None else os.path.dirname(callback.log_path),  # it appends the file
        best_model_save_path=callback.best_model_save_path,
        deterministic=callback.deterministic,
        render=callback.render,
        verbose=callback.verbose,
        warn=callback.warn,
    )


def normalizing_with_trial_gamma(objective: Any) -> Any:
    """rl-zoo3's ``ExperimentManager.objective`` whose envs normalize rewards with the γ the trial's model trains
    with: the trial's sample is drawn first (the same sampler, so held keys stay held; Optuna returns the same
    values when the objective draws them again) and its γ, where it has one, replaces ``normalize_kwargs``'s for
    the trial (restored after it)."""

    @functools.wraps(objective)
    def objective_normalizing_with_trial_gamma(manager: Any, trial: Any) -> float:
        sample = HYPERPARAMS_SAMPLER[manager.algo](trial, manager.n_actions, manager.n_envs, {})
        if "gamma" not in sample or "gamma" not in manager.normalize_kwargs:
            return objective(manager, trial)
        section = manager.normalize_kwargs["gamma"]
        manager.normalize_kwargs["gamma"] = sample["gamma"]
        try:
            return objective(manager, trial)
        finally:
            manager.normalize_kwargs["gamma"] = section

    return objective_normalizing_with_trial_gamma


def _holding(sampler: Any, hold: frozenset[str]) -> Any:
    def sample(trial: Any, n_actions: int, n_envs: int, additional_args: dict) -> dict[str, Any]:
        return {key: value for key, value in sampler(trial, n_actions, n_envs, additional_args).items()
                if key not in hold}  # fmt: skip

    return sample


def zoo_target(argv: Sequence[str]) -> dict[str, Any]:
    """The id, algorithm and evaluation env kwargs that rl-zoo3's arguments ``argv`` name (left in ``argv``)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--env", default="CartPole-v1")  # rl_zoo3.train's defaults
    parser.add_argument("--algo", default="ppo")
    parser.add_argument("--eval-env-kwargs", nargs="+", action=StoreDict, default={})
    known, _ = parser.parse_known_args(argv)
    return {"env_id": known.env, "algo": known.algo, "env_kwargs": dict(known.eval_env_kwargs)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``cluster-envs zoo``; every other argument goes to rl-zoo3's ``train``."""
    parser.add_argument("--hold", default="", help="comma-separated hyperparameters the optimizer keeps")
    parser.add_argument("--objective-seeds", default=None,
                        help="score trials by the headline on these validation seeds (e.g. 100-104)")  # fmt: skip
    parser.add_argument("--trial-seeds", type=int, default=1,
                        help="training seeds per trial: its value is the mean over them")  # fmt: skip
    parser.add_argument("--native", action="store_true", help="train and evaluate on the native batched envs")
    parser.set_defaults(forward_extra=True)  # the rest is rl-zoo3's (args.extra)


def run_from_args(args: argparse.Namespace) -> None:
    """``cluster-envs zoo``: install this package's additions, then run rl-zoo3's ``train`` on ``args.extra``."""
    rest = list(args.extra)
    target = zoo_target(rest)
    objective = None
    if args.objective_seeds is not None:
        objective = {**target, "seeds": parse_seeds(args.objective_seeds)}
    hold = [key for key in args.hold.split(",") if key]
    manager = experiment_manager(args.trial_seeds, args.native)
    with extended(hold, objective, target["algo"], manager), mock.patch.object(sys, "argv", ["rl_zoo3.train", *rest]):
        rl_zoo3.train.train()  # it parses sys.argv
