"""The "training" section of ``cluster-envs bench``: SB3 PPO env-steps/s per id, measured in one process.

Per id, PPO with the shipped hyperparameters (the id's section of ``baselines/rl/hyperparams/ppo.yml`` with the RL env
kwargs of ``baselines/eval/protocol.yml``, read by ``RunConfig.resolve`` when the section runs) runs through

- ``dummy x4``: the path before issue 15 (Monitor-wrapped single envs in a ``DummyVecEnv``, 4 copies, ``n_steps``
  = the YAML's rollout (n_envs · n_steps) / 4);
- ``native x4``: the id's batched env through ``cluster_envs.sb3.NativeVecEnv`` with the same copies;
- ``native xS``: the shipped configuration itself (the YAML's ``n_envs`` and ``n_steps``), where S is neither 4
  nor N;
- ``native xN``: N copies with ``n_steps`` = the YAML's rollout (n_envs · n_steps) / N, so every PPO update is the
  shipped one (same rollout size, minibatch size and epochs): only the env side changes;
- ``null xN``: the same PPO on :class:`NullVecEnv`, an env with identical spaces whose step costs nothing (the
  learner's own ceiling), inside the same VecMonitor and VecNormalize;
- ``native xN, fast update`` and ``null xN, fast update``: the update of the issue's probe (rollout 8,192,
  minibatch 2,048, 4 epochs), a hyperparameter change, measured so that its cost is known (left out where it is
  the shipped update).

``algo="ppo_mask"`` (``--training-algo ppo_mask``) times MaskablePPO on the ids with a section in ``ppo_mask.yml``
instead (the null env allows every action).

Each configuration builds its model once, learns one warm-up rollout (compilation, first reset), then is timed over
``iterations`` rollouts ``repeats`` times, the configurations interleaved so that a load spike hits all of them;
a ratio is the median of the paired per-repeat ratios. ``update_share`` is the fraction of the timed wall time
spent in PPO's update (``model.train``), ``env_share`` the fraction in the env side (the VecEnv's ``step_wait``
under VecNormalize), the rest being PPO's own collection work (policy forward passes, VecNormalize, the buffer).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from statistics import median
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.eval.protocol import env_setting
from baselines.rl.config import RunConfig, has_section, wrapper_class
from baselines.rl.train import make_vec_env, new_model

COPIES = 128
FEW = 4  # the copies of `cluster-envs train` before issue 15 (DummyVecEnv)
ITERATIONS = 2
REPEATS = 3
FAST_UPDATE = {"rollout": 8192, "batch_size": 2048, "n_epochs": 4}  # the probe
NATIVE_OVER_DUMMY_TARGET = 8.0
NATIVE_OVER_NULL_TARGET = 0.7
UPDATE_KEYS = ("n_steps", "batch_size", "n_epochs")  # with n_envs, what sets PPO's update


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
    cpu_rate: float  # median env-steps per CPU-second of this process (one thread: other processes' load on a
    cpu_rates: list[float]  # shared machine moves it less than the wall-clock rate)
    update_share: float  # of the timed wall time, in PPO's update (model.train)
    env_share: float  # in the env side (see _build); the rest is collection: policy forward passes, VecNormalize


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

        def action_masks(self):
            """MaskablePPO's masks: every action allowed."""
            return np.ones((num_envs, mask_size(action_space)), dtype=bool)

        def env_method(self, method_name, *args, indices=None, **kwargs):
            if method_name == "action_masks":
                rows = self.action_masks()
                return [rows[i] for i in self._get_indices(indices)]
            raise AttributeError(f"the null env has no method {method_name!r}")

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * len(list(self._get_indices(indices)))

    return NullVecEnv()


def mask_size(action_space: gym.Space) -> int:
    """The length of MaskablePPO's flat action mask for ``action_space`` (sb3_contrib's layout)."""
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return int(action_space.nvec.sum())
    if isinstance(action_space, gym.spaces.MultiBinary):
        return 2 * int(np.prod(action_space.shape))
    raise ValueError(f"action_space={action_space} has no action mask; MaskablePPO needs a discrete space")


def rl_spaces(config) -> tuple[gym.Space, gym.Space]:
    """The observation and action spaces PPO sees: the single env's, through the config's observation wrapper."""
    env = gym.make(config.env_id, **config.env_kwargs)
    env = wrapper_class(config.wrapper)(env) if config.wrapper else env
    spaces = env.observation_space, env.action_space
    env.close()
    return spaces


def variants(config, copies: int = COPIES) -> list[Variant]:
    """The configurations timed for one id (``config``: the shipped PPO ``RunConfig``, read from the YAML when the
    section runs). The shipped copies get their own row when they are neither ``FEW`` nor ``copies``; the fast
    update's rows are left out when the shipped update is that update (the same model twice)."""
    if copies == FEW:
        raise ValueError(f"copies={copies} must differ from {FEW}, the copies of the dummy and native x{FEW} rows")
    n_steps = int(config.model_kwargs.get("n_steps", 2048))
    rollout = config.n_envs * n_steps
    wide = {"n_steps": max(1, rollout // copies)}
    fast = {"n_steps": max(1, FAST_UPDATE["rollout"] // copies), "batch_size": FAST_UPDATE["batch_size"],
            "n_epochs": FAST_UPDATE["n_epochs"]}  # fmt: skip
    # The path before issue 15 had 4 copies; a YAML with more (ClusterBilinear-v0's fast update) keeps its
    # rollout over 4 copies there, so every row runs the shipped update.
    few = {"n_steps": max(1, rollout // FEW)}
    out = [Variant(f"dummy x{FEW}", "dummy", FEW, few), Variant(f"native x{FEW}", "native", FEW, few)]
    if config.n_envs not in (FEW, copies):
        out.append(Variant(f"native x{config.n_envs}", "native", config.n_envs, {"n_steps": n_steps}))
    out += [Variant(f"native x{copies}", "native", copies, wide), Variant(f"null x{copies}", "null", copies, wide)]
    shipped_update = {"n_steps": wide["n_steps"], "batch_size": config.model_kwargs.get("batch_size", 64),
                      "n_epochs": config.model_kwargs.get("n_epochs", 10)}  # fmt: skip
    if fast != shipped_update:
        out += [Variant(f"native x{copies}, fast update", "native", copies, fast),
                Variant(f"null x{copies}, fast update", "null", copies, fast)]  # fmt: skip
    return out


class _Clock:
    """Seconds spent in the wrapped methods since ``seconds`` was last set to 0."""

    def __init__(self):
        self.seconds = 0.0

    def wrap(self, obj, name: str) -> None:
        method = getattr(obj, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        setattr(obj, name, timed)


def _build(env_id: str, variant: Variant, seed: int = 0, algo: str = "ppo"):
    """The variant's model (warmed up by one rollout), the vectorization it runs on, and the clocks of its update
    (``model.train``) and of its env side (the VecEnv's ``step_wait`` under VecNormalize: the envs with their
    Monitor and wrappers and the adapter or DummyVecEnv loop)."""
    from stable_baselines3.common.logger import Logger

    config = RunConfig.resolve(algo, env_id)
    config.n_envs = variant.n_envs
    config.model_kwargs.update(variant.model_overrides)
    if variant.source == "null":
        from stable_baselines3.common.vec_env import VecMonitor

        vec_env, used = VecMonitor(null_vec_env(*rl_spaces(config), variant.n_envs)), "null"
    else:
        vec_env, used = make_vec_env(config, seed, variant.source)
    clocks = {"update": _Clock(), "env": _Clock()}
    clocks["env"].wrap(vec_env, "step_wait")
    model = new_model(config, vec_env, seed)
    model.set_logger(Logger(folder=None, output_formats=[]))
    clocks["update"].wrap(model, "train")
    model.learn(total_timesteps=model.n_steps * model.n_envs)  # warm-up: first reset, compilation
    return model, used, clocks


def bench_training(env_id: str, copies: int = COPIES, iterations: int = ITERATIONS, repeats: int = REPEATS,
                   progress=None, algo: str = "ppo") -> list[TrainingRate]:  # fmt: skip
    """Every variant's env-steps/s on ``env_id`` with ``algo``'s section, interleaved over ``repeats``."""
    say = progress or (lambda message: None)
    built = []
    for variant in variants(RunConfig.resolve(algo, env_id), copies):
        say(f"{env_id} training ({algo}): build {variant.name}")
        built.append((variant, *_build(env_id, variant, algo=algo)))
    rates: dict[str, list[float]] = {v.name: [] for v, *_ in built}
    cpu_rates: dict[str, list[float]] = {v.name: [] for v, *_ in built}
    shares: dict[str, dict[str, list[float]]] = {v.name: {"update": [], "env": []} for v, *_ in built}
    for _ in range(repeats):
        for variant, model, _, clocks in built:
            steps = iterations * model.n_steps * model.n_envs
            for clock in clocks.values():
                clock.seconds = 0.0
            start, cpu = time.perf_counter(), time.process_time()
            model.learn(total_timesteps=steps, reset_num_timesteps=False)
            seconds = time.perf_counter() - start
            rates[variant.name].append(steps / seconds)
            cpu_rates[variant.name].append(steps / (time.process_time() - cpu))
            for name, clock in clocks.items():
                shares[variant.name][name].append(clock.seconds / seconds)
    out = []
    for variant, model, used, _ in built:
        share = {name: median(values) for name, values in shares[variant.name].items()}
        out.append(TrainingRate(env_id, variant.name, used, model.n_envs, model.n_steps, model.batch_size,
                                model.n_epochs, median(rates[variant.name]), rates[variant.name],
                                median(cpu_rates[variant.name]), cpu_rates[variant.name], share["update"],
                                share["env"]))  # fmt: skip
        model.get_env().close()
    return out


def paired_ratio(rows: list[TrainingRate], top: str, bottom: str, clock: str = "rates") -> float:
    """Median over repeats of rate(top) / rate(bottom) (repeat i of each was timed in the same round), by the wall
    clock (``clock="rates"``) or this process's CPU time (``"cpu_rates"``)."""
    by_name = {r.variant: r for r in rows}
    pairs = zip(getattr(by_name[top], clock), getattr(by_name[bottom], clock), strict=True)
    return median(a / b for a, b in pairs)


def run(env_ids: list[str], copies: int = COPIES, iterations: int = ITERATIONS, repeats: int = REPEATS,
        progress=None, algo: str = "ppo") -> dict[str, Any]:  # fmt: skip
    """The section as a JSON-ready dict: per id the rates and the ratios the targets are about, with the null env's
    over ``dummy x4`` (the most any env could give at that update: where it is below the target, the learner
    bounds it), each by the wall clock and by CPU time (``*_cpu``). ``algo`` (default PPO, the issue's) names the
    YAML file of ``baselines/rl/hyperparams``; ids without a section there are left out (e.g. ``"ppo_mask"``: the
    ids whose benchmark row is MaskablePPO)."""
    import torch

    torch.set_num_threads(1)  # as `cluster-envs train` runs

    section: dict[str, Any] = {"algo": algo, "copies": copies, "iterations": iterations, "repeats": repeats, "ids": {}}
    for env_id in env_ids:
        if env_setting(env_id) is None or not has_section(algo, env_id):
            continue
        config = RunConfig.resolve(algo, env_id)
        rows = bench_training(env_id, copies, iterations, repeats, progress, algo)
        names = {r.variant for r in rows}
        dummy, shipped = rows[0].variant, f"native x{config.n_envs}"
        ratios = {}
        for native in (f"native x{copies}", f"native x{copies}, fast update"):
            if native in names:
                null = native.replace("native", "null", 1)
                ratios[native] = {f"{name}{suffix}": paired_ratio(rows, top, bottom, clock)
                                  for suffix, clock in (("", "rates"), ("_cpu", "cpu_rates"))
                                  for name, top, bottom in (("over_dummy", native, dummy), ("over_null", native, null),
                                                            ("null_over_dummy", null, dummy))}  # fmt: skip
        section["ids"][env_id] = {
            "hyperparameters": {"n_envs": config.n_envs, **{k: config.model_kwargs.get(k) for k in UPDATE_KEYS}},
            "env_kwargs": dict(config.env_kwargs),
            "shipped": {
                "variant": shipped,
                "over_dummy": paired_ratio(rows, shipped, dummy),
                "over_dummy_cpu": paired_ratio(rows, shipped, dummy, "cpu_rates"),
            },
            "rows": [asdict(r) for r in rows],
            "ratios": ratios,
        }
    return section


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's two throughput targets per id and native configuration, and the first for the shipped copies
    where they are not the wide configuration (``section["copies"]``)."""
    rows = []

    def add(target: str, measured: float, goal: float) -> None:
        rows.append({"target": target, "measured": measured, "met": measured >= goal})

    dummy, algo = f"dummy x{FEW}", section.get("algo", "ppo")
    label = "PPO" if algo == "ppo" else algo
    for env_id, entry in section["ids"].items():
        shipped = entry["shipped"]
        if shipped["variant"] not in entry["ratios"]:
            add(f"{env_id} {label} {shipped['variant']} (shipped) ≥ {NATIVE_OVER_DUMMY_TARGET:g}x {dummy}",
                shipped["over_dummy"], NATIVE_OVER_DUMMY_TARGET)  # fmt: skip
        for native, ratio in entry["ratios"].items():
            add(f"{env_id} {label} {native} ≥ {NATIVE_OVER_DUMMY_TARGET:g}x {dummy} (shipped)",
                ratio["over_dummy"], NATIVE_OVER_DUMMY_TARGET)  # fmt: skip
            add(f"{env_id} {label} {native} ≥ {NATIVE_OVER_NULL_TARGET:g}x the null env", ratio["over_null"],
                NATIVE_OVER_NULL_TARGET)  # fmt: skip
    return rows


def to_markdown(section: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"{section.get('algo', 'ppo')} training throughput (torch 1 thread; median of {section['repeats']} interleaved "
        f"repeats of {section['iterations']} rollouts each, after a warm-up rollout):",
        "",
        "| env | variant | path | n_envs | n_steps | batch | epochs | env-steps/s | per CPU-s | update share "
        "| env share |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for env_id, entry in section["ids"].items():
        for r in entry["rows"]:
            name = r["variant"] + (" (shipped)" if r["variant"] == entry["shipped"]["variant"] else "")
            cells = [env_id, name, r["vectorization"], r["n_envs"], r["n_steps"], r["batch_size"], r["n_epochs"],
                     f"{r['rate']:,.0f}", f"{r['cpu_rate']:,.0f}", f"{r['update_share']:.2f}",
                     f"{r['env_share']:.2f}"]  # fmt: skip
            lines.append("| " + " | ".join(map(str, cells)) + " |")
    return lines
