"""The "training" section of ``cluster-envs bench``: SB3 PPO env-steps/s per id, measured in one process.

Per id, PPO with the shipped hyperparameters (``baselines/hyperparams/ppo.yml``) runs through

- ``dummy x4``: the path before issue 15 (Monitor-wrapped single envs in a ``DummyVecEnv``, 4 copies, ``n_steps``
  = the YAML's rollout (n_envs · n_steps) / 4);
- ``native x4``: the id's batched env through ``baselines.vec_env.NativeVecEnv`` with the same copies;
- ``native xN``: N copies with ``n_steps`` = the YAML's rollout (n_envs · n_steps) / N, so every PPO update is the
  shipped one (same rollout size, minibatch size and epochs): only the env side changes;
- ``null xN``: the same PPO on :class:`NullVecEnv`, an env with identical spaces whose step costs nothing (the
  learner's own ceiling), inside the same VecMonitor and VecNormalize;
- ``native xN, fast update`` and ``null xN, fast update``: the update of the issue's probe (rollout 8,192,
  minibatch 2,048, 4 epochs), a hyperparameter change, measured so that its cost is known.

Each configuration builds its model once, learns one warm-up rollout (compilation, first reset), then is timed over
``iterations`` rollouts ``repeats`` times, the configurations interleaved so that a load spike hits all of them;
a ratio is the median of the paired per-repeat ratios. ``update_share`` is the fraction of the timed wall time
spent in PPO's update (``model.train``), the rest being collection (policy forward passes and env steps).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from statistics import median
from typing import Any

import gymnasium as gym
import numpy as np

COPIES = 128
FEW = 4  # the copies of `cluster-envs train` before issue 15 (DummyVecEnv)
ITERATIONS = 2
REPEATS = 3
FAST_UPDATE = {"rollout": 8192, "batch_size": 2048, "n_epochs": 4}  # the probe
NATIVE_OVER_DUMMY_TARGET = 8.0
NATIVE_OVER_NULL_TARGET = 0.7


@dataclass
class Variant:
    """One PPO configuration: where its steps come from, how many copies, and the hyperparameters it changes."""

    name: str
    source: str  # "dummy", "native" or "null"
    n_envs: int
    model_overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrainingRate:
    env_id: str
    variant: str
    vectorization: str  # the path actually used ("dummy" where the batched env refuses the config)
    n_envs: int
    n_steps: int
    batch_size: int
    n_epochs: int
    rate: float  # median env-steps/s
    rates: list[float]
    update_share: float


def null_vec_env(observation_space: gym.Space, action_space: gym.Space, num_envs: int, episode_length: int = 1000):
    """An SB3 VecEnv with these spaces whose step only returns pre-drawn observations (zero reward, every copy
    truncated each ``episode_length`` steps with a terminal observation): what PPO costs without an env."""
    from stable_baselines3.common.vec_env import VecEnv

    class NullVecEnv(VecEnv):
        def __init__(self):
            self.render_mode = None
            super().__init__(num_envs, observation_space, action_space)
            observation_space.seed(0)
            self._obs = np.stack([observation_space.sample() for _ in range(num_envs)])
            self._rewards = np.zeros(num_envs, dtype=np.float32)
            self._t = 0

        def reset(self):
            self._t = 0
            return self._obs.copy()

        def step_async(self, actions):
            pass

        def step_wait(self):
            self._t += 1
            done = self._t % episode_length == 0
            infos = (
                [{"TimeLimit.truncated": True, "terminal_observation": o} for o in self._obs]
                if done
                else [{} for _ in range(num_envs)]
            )
            return self._obs.copy(), self._rewards.copy(), np.full(num_envs, done), infos

        def close(self):
            pass

        def get_attr(self, attr_name, indices=None):
            return [getattr(self, attr_name)] * len(list(self._get_indices(indices)))

        def set_attr(self, attr_name, value, indices=None):
            setattr(self, attr_name, value)

        def env_method(self, method_name, *args, indices=None, **kwargs):
            raise AttributeError(f"the null env has no method {method_name!r}")

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * len(list(self._get_indices(indices)))

    return NullVecEnv()


def rl_spaces(config) -> tuple[gym.Space, gym.Space]:
    """The observation and action spaces PPO sees: the single env's, through the config's observation wrapper."""
    from baselines.rl import wrapper_class

    env = gym.make(config.env_id, **config.env_kwargs)
    env = wrapper_class(config.wrapper)(env) if config.wrapper else env
    spaces = env.observation_space, env.action_space
    env.close()
    return spaces


def variants(config, copies: int = COPIES) -> list[Variant]:
    """The configurations timed for one id (``config``: the shipped PPO ``RunConfig``)."""
    rollout = config.n_envs * int(config.model_kwargs.get("n_steps", 2048))
    wide = {"n_steps": max(1, rollout // copies)}
    fast = {"n_steps": max(1, FAST_UPDATE["rollout"] // copies), "batch_size": FAST_UPDATE["batch_size"],
            "n_epochs": FAST_UPDATE["n_epochs"]}  # fmt: skip
    # The path before issue 15 had 4 copies; a YAML with more (ClusterBilinear-v0's fast update) keeps its
    # rollout over 4 copies there, so every row runs the shipped update.
    few = {"n_steps": max(1, rollout // FEW)}
    return [
        Variant(f"dummy x{FEW}", "dummy", FEW, few),
        Variant(f"native x{FEW}", "native", FEW, few),
        Variant(f"native x{copies}", "native", copies, wide),
        Variant(f"null x{copies}", "null", copies, wide),
        Variant(f"native x{copies}, fast update", "native", copies, fast),
        Variant(f"null x{copies}, fast update", "null", copies, fast),
    ]


def _build(env_id: str, variant: Variant, seed: int = 0):
    """The variant's model (warmed up by one rollout) and the vectorization it runs on."""
    from stable_baselines3.common.logger import Logger

    from baselines.rl import RunConfig, make_vec_env, new_model

    config = RunConfig.resolve("ppo", env_id)
    config.n_envs = variant.n_envs
    config.model_kwargs.update(variant.model_overrides)
    if variant.source == "null":
        from stable_baselines3.common.vec_env import VecMonitor

        vec_env, used = VecMonitor(null_vec_env(*rl_spaces(config), variant.n_envs)), "null"
    else:
        vec_env, used = make_vec_env(config, seed, variant.source)
    model = new_model(config, vec_env, seed)
    model.set_logger(Logger(folder=None, output_formats=[]))
    model.update_seconds = 0.0
    train = model.train

    def timed_train() -> None:
        start = time.perf_counter()
        train()
        model.update_seconds += time.perf_counter() - start

    model.train = timed_train
    model.learn(total_timesteps=model.n_steps * model.n_envs)  # warm-up: first reset, compilation
    return model, used


def bench_training(env_id: str, copies: int = COPIES, iterations: int = ITERATIONS, repeats: int = REPEATS,
                   progress=None) -> list[TrainingRate]:  # fmt: skip
    """Every variant's PPO env-steps/s on ``env_id``, interleaved over ``repeats``."""
    from baselines.rl import RunConfig

    say = progress or (lambda message: None)
    built = []
    for variant in variants(RunConfig.resolve("ppo", env_id), copies):
        say(f"{env_id} training: build {variant.name}")
        built.append((variant, *_build(env_id, variant)))
    rates: dict[str, list[float]] = {v.name: [] for v, _, _ in built}
    shares: dict[str, list[float]] = {v.name: [] for v, _, _ in built}
    for _ in range(repeats):
        for variant, model, _ in built:
            steps = iterations * model.n_steps * model.n_envs
            model.update_seconds = 0.0
            start = time.perf_counter()
            model.learn(total_timesteps=steps, reset_num_timesteps=False)
            seconds = time.perf_counter() - start
            rates[variant.name].append(steps / seconds)
            shares[variant.name].append(model.update_seconds / seconds)
    out = []
    for variant, model, used in built:
        out.append(TrainingRate(env_id, variant.name, used, model.n_envs, model.n_steps, model.batch_size,
                                model.n_epochs, median(rates[variant.name]), rates[variant.name],
                                median(shares[variant.name])))  # fmt: skip
        model.get_env().close()
    return out


def paired_ratio(rows: list[TrainingRate], top: str, bottom: str) -> float:
    """Median over repeats of rate(top) / rate(bottom) (repeat i of each was timed in the same round)."""
    by_name = {r.variant: r for r in rows}
    pairs = zip(by_name[top].rates, by_name[bottom].rates, strict=True)
    return median(a / b for a, b in pairs)


def run(env_ids: list[str], copies: int = COPIES, iterations: int = ITERATIONS, repeats: int = REPEATS,
        progress=None) -> dict[str, Any]:  # fmt: skip
    """The section as a JSON-ready dict: per id the rates and the ratios the targets are about."""
    import torch

    torch.set_num_threads(1)  # as `cluster-envs train` runs
    from baselines.settings import env_setting

    section: dict[str, Any] = {"copies": copies, "iterations": iterations, "repeats": repeats, "ids": {}}
    for env_id in env_ids:
        if env_setting(env_id) is None:
            continue
        rows = bench_training(env_id, copies, iterations, repeats, progress)
        shipped = rows[0].variant
        ratios = {}
        for suffix in ("", ", fast update"):
            native, null = f"native x{copies}{suffix}", f"null x{copies}{suffix}"
            ratios[native] = {"over_dummy": paired_ratio(rows, native, shipped),
                              "over_null": paired_ratio(rows, native, null)}  # fmt: skip
        section["ids"][env_id] = {"rows": [asdict(r) for r in rows], "ratios": ratios}
    return section


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's two throughput targets per id and native configuration."""
    rows = []
    for env_id, entry in section["ids"].items():
        for native, ratio in entry["ratios"].items():
            rows.append(
                {
                    "target": f"{env_id} PPO {native} ≥ {NATIVE_OVER_DUMMY_TARGET:g}x dummy x4 (shipped)",
                    "measured": ratio["over_dummy"],
                    "met": ratio["over_dummy"] >= NATIVE_OVER_DUMMY_TARGET,
                }
            )
            rows.append(
                {
                    "target": f"{env_id} PPO {native} ≥ {NATIVE_OVER_NULL_TARGET:g}x the null env",
                    "measured": ratio["over_null"],
                    "met": ratio["over_null"] >= NATIVE_OVER_NULL_TARGET,
                }
            )
    return rows  # fmt: skip


def to_markdown(section: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"PPO training throughput (torch 1 thread; median of {section['repeats']} interleaved repeats of "
        f"{section['iterations']} rollouts each, after a warm-up rollout):",
        "",
        "| env | variant | path | n_envs | n_steps | batch | epochs | env-steps/s | update share |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for env_id, entry in section["ids"].items():
        for r in entry["rows"]:
            cells = [env_id, r["variant"], r["vectorization"], r["n_envs"], r["n_steps"], r["batch_size"],
                     r["n_epochs"], f"{r['rate']:,.0f}", f"{r['update_share']:.2f}"]  # fmt: skip
            lines.append("| " + " | ".join(map(str, cells)) + " |")
    return lines
