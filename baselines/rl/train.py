"""RL baselines: train stable-baselines3 / sb3-contrib models on any env id, and run them as ``Agent``s.

Hyperparameters are read from rl-zoo3 YAML files (``baselines/rl/hyperparams/<algo>.yml``, the env id's
section), so ``python -m rl_zoo3.train --algo ppo --env ClusterSLA-v0 --gym-packages cluster_envs
-conf baselines/rl/hyperparams/ppo.yml`` trains the same model. The env kwargs that make learning
sensible come from ``baselines/eval/protocol.yml``, with the observation wrapper RL sees the env through
(rl-zoo3's ``env_wrapper``; the same one in training and in the adapter). A trained run is a folder:
``model.zip``, ``vecnormalize.pkl`` (the VecNormalize statistics, when normalization is on), ``config.yml`` (the
hyperparameters used), ``meta.json`` and the training curve (``training.csv``, ``training.png``).

Training envs are seeded from ``TRAIN_SEED_BASE`` (``baselines.eval.protocol``) upwards and evaluation seeds must lie
below it, so no evaluation episode replays an exogenous sequence seen in training.

torch, stable-baselines3 and sb3-contrib are imported only when a function here needs them (extra ``rl``).
"""

from __future__ import annotations

import ast
import csv
import functools
import importlib
import io
import json
import pickle
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import cluster_envs  # noqa: F401  (registers the ids)
from agents.base import BaseAgent
from baselines.eval.progress import progress_bar
from baselines.eval.protocol import rl_base, rl_setting, training_seed
from baselines.rl import manifest
from baselines.rl.manifest import DamagedRunError

HYPERPARAMS_DIR = Path(__file__).parent / "hyperparams"
# Trained runs shipped with the package: models/<env_id>/<algo>/seed<k>/ holds the run of training seed k as `train`
# saves it (see baselines.rl.store and baselines.rl.ship).
SHIPPED_MODELS_DIR = Path(__file__).parent / "models"

# name -> (module, class). rl-zoo3 calls RecurrentPPO "ppo_lstm"; we keep its names. It has no MaskablePPO
# (2.9.2), so "ppo_mask" is ours.
ALGOS: dict[str, tuple[str, str]] = {
    "ppo": ("stable_baselines3", "PPO"),
    "a2c": ("stable_baselines3", "A2C"),
    "sac": ("stable_baselines3", "SAC"),
    "td3": ("stable_baselines3", "TD3"),
    "ppo_lstm": ("sb3_contrib", "RecurrentPPO"),
    "ppo_mask": ("sb3_contrib", "MaskablePPO"),  # envs with action_masks() (and its public action_mask_from)
}
MASKED = {"ppo_mask"}
# The install command of the 'rl' extra from a clone (the package is not on PyPI); torch first keeps the CPU build.
INSTALL_RL = 'pip install torch==2.13.0 && pip install -e ".[rl]"'
# rl-zoo3 keys this trainer does not implement (the others are n_envs, n_timesteps, normalize, env_kwargs,
# env_wrapper, policy, policy_kwargs and the algorithm's own keyword arguments).
ZOO_UNSUPPORTED = {"vec_env_wrapper", "frame_stack", "callback", "monitor_kwargs"}


def algo_class(algo: str) -> type:
    if algo not in ALGOS:
        raise ValueError(f"algo={algo!r} is not supported; allowed: {list(ALGOS)}")
    module, name = ALGOS[algo]
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as err:
        raise RuntimeError(f"algo={algo!r} needs the 'rl' extra: {INSTALL_RL} ({err})") from None


# -- hyperparameters ---------------------------------------------------------------------------------


def has_section(algo: str, env_id: str) -> bool:
    """Whether ``baselines/rl/hyperparams/<algo>.yml`` has a section for ``env_id`` (an RL-ready id: its base id's)."""
    import yaml

    path = HYPERPARAMS_DIR / f"{algo}.yml"
    return path.is_file() and rl_base(env_id)[0] in (yaml.safe_load(path.read_text()) or {})


def load_hyperparams(algo: str, env_id: str, path: str | Path | None = None) -> dict[str, Any]:
    """The section of ``env_id`` in the rl-zoo3 YAML file of ``algo`` (a copy, raw as in the file); an RL-ready id
    reads its base id's section."""
    try:
        import yaml
    except ImportError:
        raise RuntimeError(f"RL baselines need the 'rl' extra: {INSTALL_RL}") from None

    path = Path(path) if path is not None else HYPERPARAMS_DIR / f"{algo}.yml"
    if not path.is_file():
        raise FileNotFoundError(f"no hyperparameter file {path} for algo={algo!r}")
    sections = yaml.safe_load(path.read_text()) or {}
    base_id, _ = rl_base(env_id)
    if base_id not in sections:
        raise ValueError(f"{path} has no section for env_id={base_id!r}; it has {sorted(sections)}")
    section = dict(sections[base_id])
    unsupported = sorted(set(section) & ZOO_UNSUPPORTED)
    if unsupported:
        raise ValueError(f"{path} [{base_id}] uses {unsupported}, which `cluster-envs train` does not support")
    return section


@dataclass
class RunConfig:
    """Hyperparameters split into what builds the envs and what goes to the algorithm's constructor."""

    algo: str
    env_id: str
    env_kwargs: dict[str, Any]
    n_envs: int
    n_timesteps: int
    normalize: dict[str, Any] | None
    wrapper: str | None = None  # an observation wrapper, "module.Class" as in rl-zoo3's env_wrapper
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    section: dict[str, Any] = field(default_factory=dict)  # the YAML section as written

    @classmethod
    def resolve(
        cls, algo: str, env_id: str, overrides: Mapping[str, Any] | None = None, path: str | Path | None = None
    ) -> RunConfig:
        """The YAML section with the settings table's RL env kwargs and the user's ``overrides`` on top (for an
        RL-ready id, the kwargs it fixes; see ``baselines.eval.protocol.rl_setting``)."""
        raw = load_hyperparams(algo, env_id, path)
        section = dict(raw)
        setting = rl_setting(env_id)
        table_kwargs = setting.training_kwargs(algo)
        yaml_kwargs = dict(raw.pop("env_kwargs", None) or {})
        base, fixed = rl_base(env_id)
        where = f"{env_id}, which fixes it (train {base} with this algorithm)" if fixed else "settings"
        for key, value in yaml_kwargs.items():
            if key in table_kwargs and table_kwargs[key] != value:
                raise ValueError(f"env_kwargs[{key!r}] is {value!r} in the YAML but {table_kwargs[key]!r} in {where}")
        wrapper = raw.pop("env_wrapper", None)
        if wrapper != setting.rl_wrapper:
            raise ValueError(f"env_wrapper is {wrapper!r} in the YAML but {setting.rl_wrapper!r} in settings")
        normalize = raw.pop("normalize", False)
        if isinstance(normalize, str):  # rl-zoo3 also accepts a Python dict literal
            normalize = ast.literal_eval(normalize)
        normalize = {} if normalize is True else (dict(normalize) if normalize else None)
        policy_kwargs = raw.pop("policy_kwargs", None)
        if isinstance(policy_kwargs, str):  # rl-zoo3 writes them as "dict(net_arch=[64, 64])"
            policy_kwargs = _eval_policy_kwargs(policy_kwargs)
        model_kwargs = {"policy": raw.pop("policy", "MlpPolicy"), **raw}
        if policy_kwargs:
            model_kwargs["policy_kwargs"] = policy_kwargs
        return cls(
            algo=algo,
            env_id=env_id,
            env_kwargs={**yaml_kwargs, **table_kwargs, **dict(overrides or {})},
            n_envs=int(model_kwargs.pop("n_envs", 1)),
            n_timesteps=int(float(model_kwargs.pop("n_timesteps", 100_000))),
            normalize=normalize,
            wrapper=wrapper,
            model_kwargs=model_kwargs,
            section=section,
        )

    def as_yaml_dict(self) -> dict[str, Any]:
        """The section with the env kwargs actually used, in rl-zoo3's format (saved as ``config.yml``)."""
        return {self.env_id: {**self.section, "env_kwargs": self.env_kwargs}}


def _eval_policy_kwargs(text: str) -> dict[str, Any]:
    import torch

    namespace = {"dict": dict, "nn": torch.nn, "th": torch, "torch": torch, "__builtins__": {}}
    value = eval(text, namespace)  # noqa: S307  (rl-zoo3's own format; the file is part of the package)
    if not isinstance(value, dict):
        raise ValueError(f"policy_kwargs must evaluate to a dict, got {text!r}")
    return value


# -- training ----------------------------------------------------------------------------------------


def wrapper_class(name: str) -> type[gym.ObservationWrapper]:
    """The observation wrapper ``"module.Class"`` (rl-zoo3's ``env_wrapper`` format, without kwargs)."""
    module, _, cls_name = str(name).rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), cls_name)
    except (ImportError, AttributeError, ValueError):
        raise ValueError(f"env_wrapper={name!r} is not an importable 'module.Class'") from None
    if not (isinstance(cls, type) and issubclass(cls, gym.ObservationWrapper)):
        # The adapter applies the wrapper to observations alone, outside any env.
        raise ValueError(f"env_wrapper={name!r} must be a gymnasium.ObservationWrapper")
    return cls


class _SpacesOnly(gym.Env):
    """An env that only declares spaces: what an observation wrapper needs to map observations."""

    def __init__(self, observation_space: gym.Space):
        self.observation_space = observation_space
        self.action_space = gym.spaces.Discrete(1)


def observation_mapper(wrapper: str, observation_space: gym.Space):
    """The wrapper's ``observation`` function for observations of ``observation_space`` (the raw env's)."""
    return wrapper_class(wrapper)(_SpacesOnly(observation_space)).observation


VECTORIZATIONS = ("native", "dummy")


def make_vec_env(config: RunConfig, seed: int, vectorization: str = "native") -> tuple[Any, str]:
    """``n_envs`` copies of the env as an SB3 VecEnv with episode statistics, seeded from ``seed`` (copy i
    with ``seed + i``), and the vectorization used. ``"native"``: the id's batched env (``vector_entry_point``)
    through ``baselines.rl.vec_env.NativeVecEnv``, which flattens the observation itself; it falls back to
    ``"dummy"`` when the batched env cannot run the config (no vector entry point, env kwargs it refuses, an
    observation wrapper other than FlattenObservation, or an algorithm that needs action masks where the batched
    env does not compute them: ``action_masks()`` for all copies, as ClusterMultiServer-v0's and ClusterGang-v0's
    do). ``"dummy"``: Monitor-wrapped single envs (inside the observation wrapper, as rl-zoo3 stacks them) in a
    DummyVecEnv."""
    if vectorization not in VECTORIZATIONS:
        raise ValueError(f"vectorization={vectorization!r} is not allowed; allowed: {list(VECTORIZATIONS)}")
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
    from baselines.rl.vec_env import make_native

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

    ``threads``: torch's intra-op threads. One by default: the networks are small, and torch's default (every
    core) ran rl-zoo3 at 115–213 steps/s against ≈ 5,000 with one thread on a busy 2-core machine (issue 15).
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
    gym.make(env_id, **config.env_kwargs).close()  # bad env kwargs fail here, with the env's own message
    steps = config.n_timesteps if steps is None else steps
    if steps < 1:
        raise ValueError(f"steps must be positive, got {steps}")
    previous, previous_seconds = 0, 0.0
    if load:
        meta = _read_meta(out)
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

    try:
        import tensorboard  # noqa: F401  (SB3 writes through torch's SummaryWriter, which needs it)
    except ImportError:
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


def write_run_files(files: Mapping[str, bytes], out: str | Path) -> Path:
    """Write a run returned by ``TrainTask.run`` into ``out``, replacing the run there (a cache folder): into a
    sibling folder first, renamed into place when complete, so a killed write leaves no half run at ``out``."""
    import shutil
    import tempfile

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    for name, data in files.items():
        path = partial / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if out.exists():
        shutil.rmtree(out)
    partial.rename(out)
    return out


def shipped_run(env_id: str, algo: str, seed: int) -> Path | None:
    """The folder of the run shipped with the package for ``env_id``, ``algo`` and training seed ``seed``, if any."""
    path = SHIPPED_MODELS_DIR / env_id.split(":")[-1] / algo / f"seed{seed}"
    return path if (path / "meta.json").is_file() else None


def shipped_seeds(env_id: str, algo: str) -> list[int]:
    """The training seeds of the runs shipped for ``env_id`` and ``algo``, ascending."""
    folder = SHIPPED_MODELS_DIR / env_id.split(":")[-1] / algo
    names = [p.name.removeprefix("seed") for p in folder.glob("seed*") if (p / "meta.json").is_file()]
    return sorted(int(n) for n in names if n.isdigit())


def ship_run(run: str | Path, root: str | Path | None = None) -> Path:
    """Copy the run saved by ``train`` in ``run`` to ``root/<env_id>/<algo>/seed<k>`` (``k``: its training seed;
    default root: the package's shipped models) as a small archive: the files ``baselines.rl.store`` matches and
    loads, with ``model.zip`` slimmed (:func:`slim_model_zip`). TensorBoard logs and the curve's figure stay behind.
    ``baselines.rl.ship`` checks a run against the settings before it calls this."""
    import shutil

    run = Path(run)
    meta = _read_meta(run)
    out = Path(root or SHIPPED_MODELS_DIR) / meta["env_id"].split(":")[-1] / meta["algo"] / f"seed{meta['seed']}"
    if out.exists() and out.resolve() == run.resolve():
        raise ValueError(f"run={str(run)!r} is the shipped folder itself; it is shipped already")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in manifest.RUN_FILES:
        if (run / name).is_file():
            shutil.copyfile(run / name, out / name)
    slim_model_zip(out / "model.zip")
    manifest.write(out)
    return out


def slim_model_zip(path: Path) -> None:
    """Rewrite an SB3 ``model.zip`` with the optimizer's running moments zeroed and every member deflated: SB3
    stores them uncompressed, and Adam's two moments per weight are two thirds of the archive. The policy's
    weights are unchanged, so the agent acts exactly as before; training resumed from it (``--load``) restarts
    Adam's moments from zero."""
    import io
    import zipfile

    import torch

    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    name = "policy.optimizer.pth"
    if name in members:
        state = torch.load(io.BytesIO(members[name]), map_location="cpu", weights_only=False)
        for moments in state.get("state", {}).values():
            for key, value in moments.items():
                if torch.is_tensor(value) and key != "step":
                    value.zero_()
        buffer = io.BytesIO()
        torch.save(state, buffer)
        members[name] = buffer.getvalue()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)


def save_run(out: str | Path, model: Any, config: RunConfig, seed: int, **facts: Any) -> None:
    """Save a model, its VecNormalize statistics (if any), the hyperparameters and ``meta.json`` in ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.zip")
    normalizer = model.get_vec_normalize_env()
    if normalizer is not None:
        normalizer.save(str(out / "vecnormalize.pkl"))
    _write_config(out / "config.yml", config)
    meta = {
        "env_id": config.env_id,
        "algo": config.algo,
        "seed": seed,
        "env_kwargs": config.env_kwargs,
        "env_wrapper": config.wrapper,
        "total_timesteps": int(model.num_timesteps),
        **facts,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2, default=repr))
    manifest.write(out)


def as_json_value(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists), so saved and live kwargs compare equal."""
    return json.loads(json.dumps(value, default=repr))


def as_yaml_value(value: Any) -> Any:
    """``value`` as it reads back from ``config.yml``, so saved and live hyperparameters compare equal."""
    import yaml

    return yaml.safe_load(yaml.safe_dump(value, sort_keys=False))


def saved_config(out: Path) -> Any:
    """The hyperparameters a run in ``out`` was trained with (its ``config.yml``), or None without one."""
    import yaml

    path = out / "config.yml"
    return yaml.safe_load(path.read_text()) if path.is_file() else None


def _write_config(path: Path, config: RunConfig) -> None:
    import yaml

    path.write_text(yaml.safe_dump(config.as_yaml_dict(), sort_keys=False))


def _read_meta(out: Path) -> dict[str, Any]:
    path = out / "meta.json"
    if not path.is_file():
        raise FileNotFoundError(f"{out} holds no trained run (no meta.json)")
    return json.loads(path.read_text())


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


# -- the adapter -------------------------------------------------------------------------------------


class SB3Agent(BaseAgent):
    """A trained SB3 model as an ``Agent``: it sees the observation only, normalized with the training
    run's VecNormalize statistics (after the run's observation wrapper, if any), and acts
    deterministically. Recurrent policies keep their state within an episode; MaskablePPO gets the
    env's action mask computed from the static problem and the observation. ``observation_space`` is the
    raw space the model's observations come from (before ``observation_wrapper``; default the model's own)
    and ``trained_with`` the training env's kwargs: ``check_spaces`` names them when an env does not fit."""

    def __init__(
        self,
        model: Any,
        obs_normalizer: Any = None,
        name: str = "rl",
        env_kwargs=None,
        observation_wrapper=None,
        action_mask=None,
        observation_space: gym.Space | None = None,
        trained_with: Mapping[str, Any] | None = None,
    ):
        self.model = model
        self.obs_normalizer = obs_normalizer
        self.observation_wrapper = observation_wrapper
        self.observation_space = model.observation_space if observation_space is None else observation_space
        self.trained_with = trained_with
        self.action_mask = action_mask  # (problem, raw observation) -> mask, for MaskablePPO
        self._problem = None
        self.name = name
        self.env_kwargs = dict(env_kwargs or {})
        self._state = None
        self._episode_start = np.ones(1, dtype=bool)

    def reset(self, problem: Any, seed: int | None = None) -> None:
        self._problem = problem
        self._state = None
        self._episode_start = np.ones(1, dtype=bool)

    def check_spaces(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Refuse an env whose spaces differ from the training env's (the harness calls this before ``reset``):
        SB3 would fail later with only a shape, e.g. "Unexpected observation shape (108,) ... use (35,)"."""
        differences = _space_differences("observation", observation_space, self.observation_space)
        differences += _space_differences("action", action_space, self.model.action_space)
        if differences:
            trained = "" if self.trained_with is None else f" trained with env_kwargs {dict(self.trained_with)}"
            raise ValueError(
                f"agent {self.name!r}{trained} does not fit this env: {'; '.join(differences)}. "
                "Make the env with the training kwargs that set these sizes (rollout(..., env_kwargs=...))"
            )

    def act(self, observation: Any) -> np.ndarray:
        masks = {}
        if self.action_mask is not None:
            masks["action_masks"] = self.action_mask(self._problem, observation)
        if self.observation_wrapper is not None:
            observation = self.observation_wrapper(observation)
        if self.obs_normalizer is not None:
            observation = self.obs_normalizer.normalize_obs(observation)
        action, self._state = self.model.predict(
            observation, state=self._state, episode_start=self._episode_start, deterministic=True, **masks
        )
        self._episode_start = np.zeros(1, dtype=bool)
        return action


@dataclass(frozen=True)
class SavedPolicy:
    """A trained run as bytes: picklable and self-contained, so a task can ship it to any worker."""

    name: str
    algo: str
    env_id: str
    env_kwargs: tuple[tuple[str, Any], ...]  # what the agent needs from the env (the settings' RL kwargs)
    model: bytes = field(repr=False)
    vecnormalize: bytes | None = field(default=None, repr=False)
    wrapper: str | None = None  # the run's observation wrapper ...
    observation_space: bytes | None = field(default=None, repr=False)  # ... and the raw space it maps from
    trained_with: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)  # training env kwargs

    @classmethod
    def from_dir(cls, path: str | Path, name: str | None = None) -> SavedPolicy:
        """A run saved by ``train`` (``meta.json``) or by ``python -m rl_zoo3.train`` (``<env_id>/args.yml``)."""
        path = Path(path)
        if not (path / "meta.json").is_file() and list(path.glob("*/args.yml")):
            return cls._from_zoo(path, name)
        meta = _read_meta(path)
        if problems := manifest.problems(path):
            raise DamagedRunError(f"the run in {path} is refused: {'; '.join(problems)}")
        needs = rl_setting(meta["env_id"]).rl_needs(meta["algo"])
        vecnorm = path / "vecnormalize.pkl"
        return cls(
            name=name or meta["algo"],
            algo=meta["algo"],
            env_id=meta["env_id"],
            env_kwargs=tuple(sorted((k, meta["env_kwargs"][k]) for k in needs)),
            model=(path / "model.zip").read_bytes(),
            vecnormalize=vecnorm.read_bytes() if vecnorm.is_file() else None,
            trained_with=meta["env_kwargs"],
            **_wrapping(meta["env_id"], meta["env_kwargs"], meta.get("env_wrapper")),
        )

    @classmethod
    def _from_zoo(cls, path: Path, name: str | None) -> SavedPolicy:
        args_file = next(path.glob("*/args.yml"))
        args, config = (_read_zoo_yaml(args_file.parent / f) for f in ("args.yml", "config.yml"))
        env_id = args["env"]
        env_kwargs = {**(config.get("env_kwargs") or {}), **(args.get("env_kwargs") or {})}
        needs = rl_setting(env_id).rl_needs(args["algo"])
        model = next((p for p in (path / f"{env_id}.zip", path / "best_model.zip") if p.is_file()), None)
        if model is None:
            raise FileNotFoundError(f"{path} holds no {env_id}.zip or best_model.zip")
        vecnorm = args_file.parent / "vecnormalize.pkl"
        return cls(
            name=name or args["algo"],
            algo=args["algo"],
            env_id=env_id,
            env_kwargs=tuple(sorted((k, v) for k, v in env_kwargs.items() if k in needs)),
            model=model.read_bytes(),
            vecnormalize=vecnorm.read_bytes() if vecnorm.is_file() else None,
            trained_with=env_kwargs,
            **_wrapping(env_id, env_kwargs, config.get("env_wrapper")),
        )

    def build(self) -> SB3Agent:
        model, normalizer = _load_model(self)
        mapper = raw_space = None
        if self.wrapper is not None:
            raw_space = pickle.loads(self.observation_space)
            mapper = observation_mapper(self.wrapper, raw_space)
        return SB3Agent(
            model,
            normalizer,
            name=self.name,
            env_kwargs=dict(self.env_kwargs),
            observation_wrapper=mapper,
            action_mask=action_mask_function(self.env_id) if self.algo in MASKED else None,
            observation_space=raw_space,
            trained_with=self.trained_with,
        )


def _space_size(space: gym.Space) -> str:
    """What a policy network's input or output layer depends on: the kind of space and its sizes (not a Box's
    bounds, which may legitimately change with e.g. the horizon)."""
    if isinstance(space, gym.spaces.Discrete):
        return f"Discrete({space.n})"
    if isinstance(space, gym.spaces.MultiDiscrete):
        return f"MultiDiscrete({space.nvec.tolist()})"
    return f"{type(space).__name__}{space.shape}"


def _space_differences(where: str, env_space: gym.Space, model_space: gym.Space) -> list[str]:
    """Each place where the env's space and the model's differ in size, as "<where> is X here but Y in training"."""
    if isinstance(env_space, gym.spaces.Dict) and isinstance(model_space, gym.spaces.Dict):
        if list(env_space.spaces) != list(model_space.spaces):
            return [f"{where} keys are {list(env_space.spaces)} here but {list(model_space.spaces)} in training"]
        return [
            difference
            for key in env_space.spaces
            for difference in _space_differences(f"{where}[{key!r}]", env_space[key], model_space[key])
        ]
    here, there = _space_size(env_space), _space_size(model_space)
    return [] if here == there else [f"{where} is {here} here but {there} in training"]


def action_mask_function(env_id: str):
    """The env class's ``action_mask_from(problem, observation)``: its ``action_masks()`` computed from public
    data, which is all an agent may use (the information rule)."""
    env_class = gym.spec(env_id).entry_point
    if isinstance(env_class, str):
        module, _, name = env_class.partition(":")
        env_class = getattr(importlib.import_module(module), name)
    if not hasattr(env_class, "action_mask_from"):
        raise ValueError(f"{env_id} has no action_mask_from(problem, observation), so MaskablePPO cannot act in it")
    return env_class.action_mask_from


def _wrapping(env_id: str, env_kwargs: Mapping[str, Any], wrapper: str | None) -> dict[str, Any]:
    """The run's observation wrapper and the raw observation space of its training env (what the model's
    observations were mapped from; a model fits only envs with that space)."""
    if wrapper is None:
        return {}
    env = gym.make(env_id, **env_kwargs)
    space = env.observation_space
    env.close()
    return {"wrapper": wrapper, "observation_space": pickle.dumps(space)}


@functools.lru_cache(maxsize=8)
def _load_model(policy: SavedPolicy) -> tuple[Any, Any]:
    """One model per process and policy (loading costs ~50 ms; the episodes of a worker share it)."""
    model = algo_class(policy.algo).load(io.BytesIO(policy.model), device="cpu")
    normalizer = pickle.loads(policy.vecnormalize) if policy.vecnormalize is not None else None
    return model, normalizer


def _read_zoo_yaml(path: Path) -> dict[str, Any]:
    """rl-zoo3 dumps an OrderedDict; read it with the safe loader taught only that one tag."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def ordered_dict(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> dict[str, Any]:
        (pairs,) = loader.construct_sequence(node, deep=True)
        return dict(pairs)

    Loader.add_constructor("tag:yaml.org,2002:python/object/apply:collections.OrderedDict", ordered_dict)
    return yaml.load(path.read_text(), Loader=Loader)  # noqa: S506 (a SafeLoader subclass)


def load_agent(path: str | Path, name: str | None = None) -> SB3Agent:
    """The run saved in ``path`` (by ``train`` or rl-zoo3) as an ``Agent``, with its VecNormalize statistics."""
    return SavedPolicy.from_dir(path, name).build()
