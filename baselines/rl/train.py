"""RL training: train stable-baselines3 / sb3-contrib models on any env id (``train``), as a backend task
(``TrainTask``), on the id's native batched env or Monitor-wrapped single envs (``make_vec_env``).

Training envs are seeded from ``TRAIN_SEED_BASE`` (``baselines.eval.protocol``) upwards and evaluation seeds must lie
below it, so no evaluation episode replays an exogenous sequence seen in training.

torch, stable-baselines3 and sb3-contrib are imported only when a function here needs them (extra ``rl``).
"""

from __future__ import annotations

import csv
import importlib.util
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.eval.progress import progress_bar
from baselines.eval.protocol import rl_setting, training_seed
from baselines.rl import manifest
from baselines.rl.config import MASKED, RunConfig, algo_class, wrapper_class
from baselines.rl.runs import as_json_value, read_meta, save_run
from cluster_envs import register_envs

VECTORIZATIONS = ("native", "dummy")


def make_vec_env(config: RunConfig, seed: int, vectorization: str = "native") -> tuple[Any, str]:
    """``n_envs`` copies of the env as an SB3 VecEnv with episode statistics, seeded from ``seed`` (copy i
    with ``seed + i``), and the vectorization used. ``"native"``: the id's batched env (``vector_entry_point``)
    through ``cluster_envs.sb3.NativeVecEnv``, which flattens the observation itself; it falls back to
    ``"dummy"`` when the batched env cannot run the config (no vector entry point, env kwargs it refuses, an
    observation wrapper other than FlattenObservation, or an algorithm that needs action masks where the batched
    env does not compute them: ``action_masks()`` for all copies, as ClusterMultiServer-v0's and ClusterGang-v0's
    do). ``"dummy"``: Monitor-wrapped single envs (inside the observation wrapper, as rl-zoo3 stacks them) in a
    DummyVecEnv."""
    if vectorization not in VECTORIZATIONS:
        raise ValueError(f"vectorization={vectorization!r} is not allowed; allowed: {list(VECTORIZATIONS)}")
    register_envs()  # the ids it makes, explicitly rather than by an import's side effect (idempotent)
    vec_env = _native_vec_env(config) if vectorization == "native" else None
    used = "native" if vec_env is not None else "dummy"
    if vec_env is None:
        from stable_baselines3.common.monitor import Monitor
        from stable_baselines3.common.vec_env import DummyVecEnv

        def factory():
            env = Monitor(gym.make(config.env_id, **config.env_kwargs), info_keywords=("episode_summary",))
            return wrapper_class(config.wrapper)(env) if config.wrapper else env

        vec_env = DummyVecEnv([factory] * config.n_envs)
    vec_env.seed(seed)
    return vec_env, used


def _native_vec_env(config: RunConfig):
    """The native VecEnv of ``config``, or None where the batched env cannot run it (see ``make_vec_env``)."""
    from cluster_envs.sb3 import make_native

    try:
        vec_env = make_native(config.env_id, config.n_envs, config.env_kwargs, config.wrapper)
    except ValueError:  # the env kwargs themselves were checked on a single env before, so this is a refusal
        return None
    if config.algo in MASKED and not vec_env.venv.has_batched("action_masks"):
        vec_env.close()
        return None
    return vec_env


@dataclass
class TrainResult:
    path: Path
    total_timesteps: int
    seconds: float
    steps_per_second: float


def train(
    env_id: str,
    algo: str = "ppo",
    *,
    steps: int | None = None,
    seed: int = 0,
    env_overrides: Mapping[str, Any] | None = None,
    out_dir: str | Path = "runs",
    load: bool = False,
    hyperparams: str | Path | None = None,
    progress: bool = True,
    threads: int = 1,
    vectorization: str = "native",
) -> TrainResult:
    """Train ``algo`` on ``env_id`` and save the run in ``out_dir`` (resume the run found there with ``load``).

    ``threads``: torch's intra-op threads. One by default: the networks are too small for intra-op parallelism to
    pay, and torch's default (every core) trains far slower on a busy machine (docs/appendix/performance_log.md).
    ``vectorization``: ``"native"`` (the id's batched env, see ``make_vec_env``) or ``"dummy"``. SB3 logs to
    TensorBoard in ``out_dir/tensorboard`` when the ``tensorboard`` package is installed."""
    cls = algo_class(algo)  # a clear error without the 'rl' extra
    import torch
    from stable_baselines3.common.vec_env import VecNormalize

    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    torch.set_num_threads(threads)
    out = Path(out_dir)
    config = RunConfig.resolve(algo, env_id, env_overrides, hyperparams)
    register_envs()
    gym.make(env_id, **config.env_kwargs).close()  # bad env kwargs fail here, with the env's own message
    steps = config.n_timesteps if steps is None else steps
    if steps < 1:
        raise ValueError(f"steps must be positive, got {steps}")
    previous, previous_seconds = 0, 0.0
    if load:
        meta = read_meta(out)
        if (meta["algo"], meta["env_id"], meta["env_kwargs"]) != (algo, env_id, as_json_value(config.env_kwargs)):
            raise ValueError(f"--load: {out} holds {meta['algo']} on {meta['env_id']} with {meta['env_kwargs']}")
        previous, previous_seconds = meta["total_timesteps"], meta["train_seconds"]
    vec_env, used = make_vec_env(config, training_seed(seed, previous), vectorization)
    if load:
        if config.normalize is not None and (out / "vecnormalize.pkl").is_file():
            vec_env = VecNormalize.load(str(out / "vecnormalize.pkl"), vec_env)
        model = cls.load(out / "model.zip", env=vec_env, device="cpu")
    else:
        model = new_model(config, vec_env, seed)
    model.set_logger(_logger(out))
    # SB3 reseeds its env with `seed` when it builds or loads the model (set_random_seed -> env.seed(seed)), which
    # would reset the training envs with the evaluation seeds seed + i: seed them here, just before learning.
    model.get_env().seed(training_seed(seed, previous))
    curve = _training_curve(rl_setting(env_id).headline, steps, progress)
    start, cpu_start = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=steps, callback=curve, reset_num_timesteps=not load)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    model.logger.close()  # flushes TensorBoard's event file
    rate = (model.num_timesteps - previous) / seconds
    # Per CPU-second too (torch runs one thread): on a shared machine the wall rate measures the load.
    cpu_rate = (model.num_timesteps - previous) / max(cpu_seconds, 1e-9)
    save_run(out, model, config, seed, train_seconds=previous_seconds + seconds, steps_per_second=rate,
             steps_per_cpu_second=cpu_rate, vectorization=used, threads=threads)  # fmt: skip
    vec_env.close()
    curve.write(out, append=load)
    manifest.write(out)  # last: the run is complete
    return TrainResult(out, int(model.num_timesteps), seconds, rate)


def new_model(config: RunConfig, vec_env: Any, seed: int) -> Any:
    """A fresh ``config.algo`` model on ``vec_env`` (inside VecNormalize when the config normalizes)."""
    from stable_baselines3.common.vec_env import VecNormalize

    if config.normalize is not None:
        vec_env = VecNormalize(vec_env, gamma=config.model_kwargs.get("gamma", 0.99), **config.normalize)
    try:
        return algo_class(config.algo)(env=vec_env, seed=seed, device="cpu", verbose=0, **config.model_kwargs)
    except TypeError as err:  # a misspelt hyperparameter
        raise ValueError(f"hyperparameters of {config.algo} for {config.env_id}: {err}") from None


def _logger(out: Path):
    """SB3's logger: TensorBoard in ``out/tensorboard`` when installed, else none (the curve callback records
    training; SB3's default would leave an empty SB3-<date> folder in /tmp per run)."""
    from stable_baselines3.common.logger import Logger, configure

    if importlib.util.find_spec("tensorboard") is None:  # SB3 writes through torch's SummaryWriter, which needs it
        return Logger(folder=None, output_formats=[])
    return configure(str(out / "tensorboard"), ["tensorboard"])


@dataclass(frozen=True)
class TrainTask:
    """One ``train`` call as a task of ``baselines.eval.backends.run_tasks`` (picklable): it trains in a scratch folder
    and returns the run's files as {relative path: bytes}, so a run trained on a remote Ray worker reaches the
    caller's disk (:func:`write_run_files`)."""

    env_id: str
    algo: str
    steps: int | None
    seed: int = 0
    env_overrides: tuple[tuple[str, Any], ...] = ()
    threads: int = 1
    progress: bool = False

    def run(self) -> dict[str, bytes]:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="cluster-envs-train-") as tmp:
            train(self.env_id, self.algo, steps=self.steps, seed=self.seed, env_overrides=dict(self.env_overrides),
                  out_dir=tmp, progress=self.progress, threads=self.threads)  # fmt: skip
            return {str(p.relative_to(tmp)): p.read_bytes() for p in sorted(Path(tmp).rglob("*")) if p.is_file()}


def _training_curve(headline: str, steps: int, progress: bool):
    """An SB3 callback (its class is defined here to keep SB3 an optional import) with a tqdm progress
    bar. Every ~2% of the steps it records the mean raw reward per step, and the mean return and headline
    metric of the episodes that ended (long episodes may not end in every interval)."""
    from stable_baselines3.common.callbacks import BaseCallback

    interval = max(steps // 50, 256)

    class Callback(BaseCallback):
        def __init__(self):
            super().__init__()
            self.rows: list[dict[str, float]] = []
            self.bar = None
            self._rewards: list[float] = []
            self._episodes: list[tuple[float, float]] = []
            self._next = 0

        def _on_training_start(self) -> None:
            self._next = self.num_timesteps + interval
            name = self.model.__class__.__name__
            self.bar = progress_bar(total=steps, desc=f"train {name}", unit="step", enabled=progress)

        def _on_step(self) -> bool:
            self.bar.update(self.training_env.num_envs)
            normalizer = self.model.get_vec_normalize_env()
            raw = normalizer.get_original_reward() if normalizer is not None else self.locals["rewards"]
            self._rewards.extend(np.asarray(raw, dtype=np.float64).ravel().tolist())
            for info in self.locals["infos"]:
                if "episode" in info:
                    summary = info.get("episode_summary") or {}
                    self._episodes.append((float(info["episode"]["r"]), float(summary.get(headline, np.nan))))
            if self.num_timesteps >= self._next:
                self._flush()
            return True

        def _flush(self) -> None:
            if not self._rewards:
                return
            returns, metric = np.array(self._episodes).reshape(-1, 2).T
            self.rows.append(
                {
                    "timesteps": self.num_timesteps,
                    "mean_step_reward": float(np.mean(self._rewards)),
                    "episodes": len(returns),
                    "episode_return": float(returns.mean()) if len(returns) else np.nan,
                    headline: float(metric.mean()) if len(metric) else np.nan,
                }
            )
            self._rewards, self._episodes = [], []
            self._next = self.num_timesteps + interval

        def _on_training_end(self) -> None:
            self._flush()
            self.bar.close()

        def write(self, out: Path, append: bool) -> None:
            write_training_curve(out, self.rows, headline, append)

    return Callback()


def write_training_curve(out: Path, rows: list[dict[str, float]], headline: str, append: bool = False) -> None:
    """Add the rows to ``training.csv`` (after the old ones when resuming) and redraw ``training.png``."""
    path = out / "training.csv"
    fields = ["timesteps", "mean_step_reward", "episodes", "episode_return", headline]
    old = list(csv.DictReader(path.open())) if append and path.is_file() else []
    data = old + rows
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(data)
    if not data:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([float(r["timesteps"]) for r in data])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for ax, key in zip(axes, ("mean_step_reward", headline), strict=True):
        values = np.array([float(r[key]) for r in data])
        ax.plot(steps[np.isfinite(values)], values[np.isfinite(values)], marker=".", lw=1)
        ax.set_xlabel("training steps")
        ax.set_ylabel(key if key == "mean_step_reward" else f"episode {key}")
    fig.suptitle(f"training curve ({out.name})")
    fig.tight_layout()
    fig.savefig(out / "training.png", dpi=100)
    plt.close(fig)
