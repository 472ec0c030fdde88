"""rl-zoo3 on the ids' native batched envs: rl-zoo3 trains and evaluates on each id's ``vector_entry_point`` env
instead of a ``DummyVecEnv`` of single envs.

    cluster-envs zoo --native --algo ppo --env ClusterSLA-v1 --gym-packages cluster_envs ...

:func:`native_vec_env` is rl-zoo3's own hook for the vectorization, ``ExperimentManager.default_vec_env_cls`` (its
``--vec-env`` choice yields to it), in the subclass ``baselines.tuning.zoo.experiment_manager(native=True)``
makes. rl-zoo3 still builds its env factories (env kwargs, ``env_wrapper``, Monitor) and seeds the VecEnv;
:func:`native_vec_env` reads the id and kwargs from one env of them and builds the same copies as one batched env
(``cluster_envs.sb3``: step for step the envs a ``DummyVecEnv`` would give), so everything around it
(``VecNormalize``, the sampler, the pruner, ``TrialEvalCallback``) is rl-zoo3's. ``cluster-envs tune
run --native`` uses it, with :class:`TrialCPUBudget` as the trials' callback.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
from stable_baselines3.common.callbacks import BaseCallback

from cluster_envs.sb3 import FLATTEN, make_native


def native_vec_env(env_fns: Sequence[Callable[[], gym.Env]], **_: Any):
    """The copies ``env_fns`` would make, as the id's native batched env (a monitored SB3 VecEnv). The only
    observation wrapper allowed around the env is ``FlattenObservation`` (the native adapter flattens itself)."""
    probe = env_fns[0]()
    try:
        spec = probe.unwrapped.spec
        wrappers = []
        env = probe
        while isinstance(env, gym.Wrapper):
            if isinstance(env, gym.ObservationWrapper):
                wrappers.append(env)
            env = env.env
    finally:
        probe.close()
    if any(not isinstance(w, gym.wrappers.FlattenObservation) for w in wrappers):
        raise ValueError(f"env_wrapper {wrappers}: the native path supports only {FLATTEN}")
    return make_native(spec.id, len(env_fns), dict(spec.kwargs), FLATTEN if wrappers else None)


class TrialCPUBudget(BaseCallback):
    """Prune an Optuna trial once its process has spent ``seconds`` of CPU time since training started (its
    evaluations included): a sampled update far costlier than the budget's (minibatch 8, 20 epochs) would
    otherwise take the whole tuning budget for one trial. The limit is a CPU-time timer (``ITIMER_PROF``,
    ``SIGPROF``), so it also interrupts PPO's update, where no callback runs; it is disarmed when training ends."""

    def __init__(self, seconds: float):
        super().__init__()
        if not seconds > 0:
            raise ValueError(f"seconds must be positive, got {seconds!r}")
        self.seconds = float(seconds)

    def _on_training_start(self) -> None:
        signal.signal(signal.SIGPROF, self._over_budget)
        signal.setitimer(signal.ITIMER_PROF, self.seconds)

    def _on_training_end(self) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)

    def _on_step(self) -> bool:
        return True

    def _over_budget(self, signum: int, frame: Any) -> None:
        import optuna

        raise optuna.TrialPruned(f"the trial used {self.seconds:g} CPU-seconds, its budget")
